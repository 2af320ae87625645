//! `sweep`: one row per size, counts equal to single runs, exports.

use predicates::prelude::*;

use crate::common::{cmd, fixture, gen_tiny as tiny, io_summary, run, stderr, stdout};

fn rows_match_single_runs_and_fall_with_the_buffer() {
    let (dir, kbx) = tiny();
    let json = dir.path().join("sweep.json");
    let sizes = "unbuffered,0,16,64,4096B";
    let o = run([
        "sweep",
        kbx.to_str().unwrap(),
        "--sizes",
        sizes,
        "--runs",
        "2",
        "--warmup",
        "0",
        "--export-json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    let heading: Vec<&str> = table.lines().nth(3).unwrap().split_whitespace().collect();
    assert_eq!(heading[..3], ["buffer", "events", "mean"], "{table}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0]["wall_s"]["runs"].as_array().unwrap().len(), 2);
    let events: Vec<u64> = rows.iter().map(|r| r["events"]["total"].as_u64().unwrap()).collect();
    // unbuffered > 4 KiB > 8 KiB > 16 KiB > 64 KiB
    let by_size = [events[0], events[4], events[1], events[2], events[3]];
    assert!(by_size.windows(2).all(|w| w[0] > w[1]), "{by_size:?}");
    for (row, size) in rows.iter().zip(sizes.split(',')) {
        let single = run([
            "--io-summary=json",
            &format!("--kbx-buffer-size={size}"),
            "list",
            "--with-validation",
            kbx.to_str().unwrap(),
        ]);
        let s = io_summary(&single);
        // The sweep's five operations, and the others (gpgsm's start beside
        // the keybox: access, writes, links, unlinks) reported apart.
        for op in ["open", "read", "seek", "close", "stat"] {
            assert_eq!(row["events"][op], s["events"][op], "size {size}: {op}");
        }
        let all = row["events"]["total"].as_u64().unwrap() + row["other_events"].as_u64().unwrap_or(0);
        assert_eq!(Some(all), s["events"]["total"].as_u64(), "size {size}: total");
        assert_eq!(row["bytes_read"], s["bytes_read"], "size {size}: bytes read");
        assert_eq!(row["logical_reads"], s["logical_reads"]);
    }
}

fn exports_and_bad_paths() {
    let (dir, kbx) = tiny();
    let csv = dir.path().join("s.csv");
    let md = dir.path().join("s.md");
    let svg = dir.path().join("s.svg");
    let o = run([
        "sweep",
        kbx.to_str().unwrap(),
        "--workload",
        "stats",
        "--sizes",
        "0,64",
        "--runs",
        "1",
        "--export-csv",
        csv.to_str().unwrap(),
        "--export-markdown",
        md.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(text.lines().nth(1).unwrap().starts_with("0,8192,"));
    assert!(std::fs::read_to_string(&md).unwrap().contains("| 64 KiB | "));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg") && drawn.trim_end().ends_with("</svg>"), "{drawn:.200}");
    assert!(drawn.contains("tiny.kbx: stats") && drawn.contains("file events"));
    assert_eq!(drawn.matches("<circle").count(), 4, "2 sizes × 2 panels");
    // A bad export path fails before the keybox is even opened (the keybox
    // named here does not exist), with the system's reason said once.
    let bad = dir.path().join("no").join("such").join("dir").join("s.json");
    let missing = crate::common::no_such_directory();
    for flag in ["--export-json", "--plot"] {
        cmd()
            .args(["sweep", "/nonexistent/x.kbx", flag, bad.to_str().unwrap()])
            .assert()
            .code(1)
            .stdout("")
            .stderr(predicate::str::contains("cannot write").and(predicate::str::contains(".s.json.").not()))
            .stderr(predicate::function(|e: &str| e.matches(missing.as_str()).count() == 1));
    }
    for (args, want) in [
        (vec!["sweep", "x.kbx", "--sizes", "0,huge"], "--sizes"),
        (vec!["sweep", "x.kbx", "--workload", "dance"], "--workload"),
        (vec!["sweep", "x.kbx", "--runs", "0"], "--runs"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}

fn with_gpgsm_puts_gnupg_beside_us() {
    let (_dir, kbx) = tiny();
    let o = run([
        "sweep",
        kbx.to_str().unwrap(),
        "--sizes",
        "0,4096B",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--with-gpgsm",
        "--export-json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("gpgsm"), "the table, on stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["results"].as_array().unwrap();
    let (ours, theirs) = (rows[0]["events"]["total"].as_f64().unwrap(), rows[0]["gnupg"]["events"].as_f64().unwrap());
    assert!((ours / theirs - 1.0).abs() < 0.05, "kbxscope {ours} vs gpgsm {theirs} file events at 8 KiB");
    assert!(rows[1]["gnupg"].is_null(), "gpgsm cannot express 4096 bytes");
}

/// With an export on stdout, stdout holds that export and nothing else
/// (the table goes to stderr): jq and a CSV parser read it as it is.
fn exports_to_stdout_hold_only_the_export() {
    let (_dir, kbx) = tiny();
    let base =
        ["sweep", kbx.to_str().unwrap(), "--workload", "stats", "--sizes", "0,64", "--runs", "2", "--warmup", "0"];
    let with = |extra: &[&str]| cmd().args(base).args(extra).assert().success();
    // JSON: jq reads it when installed; serde in any case.
    let out = with(&["--export-json", "-"]).stderr(predicate::str::contains("events")).get_output().stdout.clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("stdout is one JSON document");
    assert_eq!(v["results"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["workload"], "stats");
    if let Some(jq) = crate::common::tool("jq", "exports_to_stdout_hold_only_the_export") {
        assert_cmd::Command::new(jq)
            .args(["-e", ".results[1].buffer_size == 65536"])
            .write_stdin(out)
            .assert()
            .success();
    }
    // CSV: a header and one record per size, every record as long as the header.
    let out = with(&["--export-csv", "-"]).get_output().stdout.clone();
    let records = csv_records(&out);
    assert_eq!(records.len(), 3, "{records:?}");
    assert_eq!(records[0][0], "n_k");
    assert!(records.iter().all(|r| r.len() == records[0].len()), "{records:?}");
    assert_eq!(records[2][1], "65536");
    // Markdown and SVG start with their own first line.
    with(&["--export-markdown", "-"]).stdout(predicate::str::starts_with("| buffer |"));
    with(&["--plot", "-"]).stdout(predicate::str::starts_with("<svg").and(predicate::str::ends_with("</svg>\n")));
    // Two exports cannot share stdout: a usage error.
    cmd()
        .args(base)
        .args(["--export-json", "-", "--export-csv", "-"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("only one of"));
}

/// Every record of a CSV text, read with csv-core (rust-csv's parser).
fn csv_records(mut input: &[u8]) -> Vec<Vec<String>> {
    use csv_core::ReadRecordResult::*;
    let mut reader = csv_core::Reader::new();
    let (mut out, mut ends) = (vec![0u8; 1 << 16], vec![0usize; 1024]);
    let mut records = Vec::new();
    loop {
        // Whole records fit the buffers: each call reads one record.
        let (result, read, _, fields) = reader.read_record(input, &mut out, &mut ends);
        input = &input[read..];
        match result {
            InputEmpty => {}
            OutputFull | OutputEndsFull => panic!("a CSV record larger than the test's buffers"),
            Record => {
                let mut start = 0;
                let record = ends[..fields]
                    .iter()
                    .map(|&end| {
                        let field = String::from_utf8(out[start..end].to_vec()).expect("UTF-8 field");
                        start = end;
                        field
                    })
                    .collect();
                records.push(record);
            }
            End => return records,
        }
    }
}

/// The fixture's trustlist sits next to it as `STEM.trustlist.txt`; a
/// missing keybox is reported before anything about trustlists.
fn trustlists_next_to_a_keybox_and_a_missing_keybox_first() {
    let kbx = fixture("gnupg-mixed.kbx");
    cmd()
        .args(["sweep", kbx.to_str().unwrap(), "--sizes", "64", "--runs", "1", "--warmup", "0"])
        .assert()
        .success()
        .stderr(predicate::str::contains("trustlist").not());
    cmd()
        .args(["sweep", "/nonexistent/pubring.kbx"])
        .env("HOME", "/nonexistent")
        .env_remove("GNUPGHOME")
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with("kbxscope: cannot open '/nonexistent/pubring.kbx'"))
        .stderr(predicate::str::contains("trustlist").not());
}

/// Sizes take kb, KB and KiB alike; the table shows them as sizes, fits 80
/// columns and explains the time unit.
fn sizes_in_any_spelling_and_a_narrow_table() {
    let (_dir, kbx) = tiny();
    let o = cmd()
        .args(["sweep", kbx.to_str().unwrap(), "--workload", "stats", "--sizes", "64kb,64KB,64KiB,12k,0,unbuffered"])
        .args(["--runs", "2", "--warmup", "1"])
        .assert()
        .success()
        .get_output()
        .clone();
    let table = stdout(&o);
    let rows: Vec<&str> = table.lines().skip(4).collect();
    assert_eq!(rows.len(), 6, "{table}");
    for (row, size) in rows.iter().zip(["64 KiB", "64 KiB", "64 KiB", "12 KiB", "8 KiB", "unbuffered"]) {
        assert!(row.trim_start().starts_with(size), "{row}");
    }
    assert_eq!(table.lines().nth(1), Some("stats, 2 timed runs per size after 1 warm-up"), "{table}");
    assert!(table.lines().nth(2).unwrap().contains("time (ms)"), "{table}");
    for line in table.lines().skip(1) {
        assert!(line.chars().count() <= 80, "{line}");
    }
}

/// Another process replaces the keybox by rename (as GnuPG does) and
/// appends to it while a sweep runs: no crash, every run completes on one
/// consistent file per handle, and the report says the file changed.
fn a_keybox_changed_during_a_sweep_is_reported() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let (dir, kbx) = tiny();
    let original = std::fs::read(&kbx).unwrap();
    // The blob appended is a deleted one that fills the rest of the
    // file's last page: a write that crosses a page boundary grows the
    // file one page at a time, so a reader could see half a blob (a
    // truncated file, rightly an error); one that stays in its page
    // grows it at once.
    let room = 4096 - original.len() % 4096;
    assert!(room >= 5, "no room for a blob in the last page");
    let extra = crate::common::raw_blob(room as u32, 0);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, kbx, tmp) = (stop.clone(), kbx.clone(), dir.path().join(".tiny.kbx.tmp"));
        std::thread::spawn(move || {
            let mut changes = 0u32;
            while !stop.load(Ordering::Relaxed) {
                if changes.is_multiple_of(2) {
                    // append one whole blob
                    let mut f = std::fs::OpenOptions::new().append(true).open(&kbx).unwrap();
                    std::io::Write::write_all(&mut f, &extra).unwrap();
                } else {
                    // a fresh copy renamed into place
                    std::fs::write(&tmp, &original).unwrap();
                    // Windows does not replace a file another process
                    // holds open (GnuPG retries there): the appends go on.
                    let renamed = std::fs::rename(&tmp, &kbx);
                    if !cfg!(windows) {
                        renamed.unwrap();
                    }
                }
                changes += 1;
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            changes
        })
    };
    let json = dir.path().join("sweep.json");
    let o = run([
        "sweep",
        kbx.to_str().unwrap(),
        "--sizes",
        "0,16,64",
        "--runs",
        "3",
        "--warmup",
        "1",
        "--export-json",
        json.to_str().unwrap(),
    ]);
    stop.store(true, Ordering::Relaxed);
    let changes = writer.join().unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(changes > 3, "the writer changed the file {changes} times");
    let table = stdout(&o);
    assert!(table.contains("note: at size "), "{table}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let noted: Vec<&serde_json::Value> =
        rows.iter().flat_map(|r| r["keybox_changed"].as_array().into_iter().flatten()).collect();
    assert!(!noted.is_empty(), "{table}");
    for note in noted {
        let fields: Vec<&str> = note.as_object().unwrap().keys().map(String::as_str).collect();
        match note["kind"].as_str().unwrap() {
            "replaced" | "resized" => assert_eq!(fields, ["kind", "new_len", "old_len"], "{note}"),
            "grew" => assert!(note["unused_bytes"].as_u64().unwrap() > 0, "{note}"),
            "modified_in_place" => assert_eq!(fields, ["kind"], "{note}"),
            other => panic!("unknown kind {other}: {note}"),
        }
    }
}

/// The telemetry flags during a sweep: every size's counters under its own
/// `buffer_size` label, equal to the sweep's rows, the duration histograms'
/// counts equal to the events; and a trace that parses.
fn metrics_and_trace_during_a_sweep() {
    let (dir, kbx) = tiny();
    let (prom, json, trace) = (dir.path().join("s.prom"), dir.path().join("s.json"), dir.path().join("t.json"));
    let (warmup, runs) = (1u64, 2u64);
    let o = run([
        "--metrics-out",
        prom.to_str().unwrap(),
        "--trace-out",
        trace.to_str().unwrap(),
        "--trace-level",
        "lookup",
        "sweep",
        kbx.to_str().unwrap(),
        "--sizes",
        "0,64",
        "--warmup",
        &warmup.to_string(),
        "--runs",
        &runs.to_string(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&prom).unwrap();
    let value = |series: &str| -> u64 {
        let line = text.lines().find(|l| l.starts_with(series)).unwrap_or_else(|| panic!("no {series} in\n{text}"));
        line.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64
    };
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for row in v["results"].as_array().unwrap() {
        let size = row["buffer_size"].as_u64().unwrap();
        for op in ["open", "read", "seek", "close", "stat"] {
            let want = row["events"][op].as_u64().unwrap() * (warmup + runs);
            let labels = format!("{{op=\"{op}\",buffer_size=\"{size}\"}}");
            if want > 0 {
                assert_eq!(value(&format!("kbx_file_events_total{labels}")), want, "{op} at {size}");
                assert_eq!(value(&format!("kbx_file_event_duration_seconds_count{labels}")), want, "{op} at {size}");
            }
        }
        let bytes = row["bytes_read"].as_u64().unwrap() * (warmup + runs);
        assert_eq!(value(&format!("kbx_file_read_bytes_total{{buffer_size=\"{size}\"}}")), bytes);
    }
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert!(t.as_array().is_some_and(|events| !events.is_empty()));
}

/// A GnuPG home holding gnupg-mixed.kbx (and, for gpgsm, its trustlist),
/// the program's command run once in it (gpg's trustdb, gpgsm's agent);
/// its daemons stopped on drop.
struct Home(tempfile::TempDir);

impl Home {
    fn new(tool: &str, args: &[&str]) -> Home {
        let d = tempfile::tempdir().unwrap();
        if tool == "gpgsm" {
            std::fs::copy(fixture("gnupg-mixed.trustlist.txt"), d.path().join("trustlist.txt")).unwrap();
        }
        let h = Home(d);
        h.fresh();
        std::process::Command::new(tool).args(h.argv(args)).output().unwrap();
        h
    }

    /// A fresh copy of the keybox, as the sweep gives every run.
    fn fresh(&self) {
        std::fs::copy(fixture("gnupg-mixed.kbx"), self.0.path().join("pubring.kbx")).unwrap();
    }

    fn argv<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["--homedir", self.0.path().to_str().unwrap(), "--batch"];
        v.extend_from_slice(args);
        v
    }

    /// `kbxscope record -- TOOL ARGS`: open, read, seek, close and access
    /// on the keybox.
    fn recorded(&self, tool: &str, args: &[&str]) -> u64 {
        self.fresh();
        let o = crate::common::bin()
            // The keybox alone, as strace and the sweep count it (not the
            // maintenance pass's temporary copy and lock file).
            .args(["--io-summary=json", "record", "--watch", "pubring.kbx", "--", tool])
            .args(self.argv(args))
            .output()
            .unwrap();
        let err = stderr(&o);
        let line = err.lines().find(|l| l.contains("\"processes\"")).unwrap_or_else(|| panic!("{err}"));
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        ["open", "read", "seek", "close", "access"].iter().map(|op| v["events"][op].as_u64().unwrap_or(0)).sum()
    }

    /// strace's count of the same calls, an independent source.
    fn straced(&self, tool: &str, args: &[&str]) -> u64 {
        self.fresh();
        let log = self.0.path().join("strace.log");
        let o = std::process::Command::new("strace")
            .args(["-f", "-y", "-qq", "-s", "0", "-e", "trace=openat,read,lseek,close,access", "-o"])
            .arg(&log)
            .arg(tool)
            .args(self.argv(args))
            .output()
            .unwrap();
        let text = std::fs::read_to_string(&log).unwrap_or_else(|_| panic!("strace: {}", stderr(&o)));
        let keybox = self.0.path().join("pubring.kbx").to_string_lossy().into_owned();
        text.lines().filter(|l| l.contains(&format!("{keybox}>")) || l.contains(&format!("\"{keybox}\""))).count()
            as u64
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        crate::common::stop_gnupg_daemons(self.0.path());
    }
}

/// Whether TOOL takes --kbx-buffer-size (GnuPG 2.4.2 / 2.2.42 and later).
fn has_buffer_option(tool: &str) -> bool {
    std::process::Command::new(tool).args(["--kbx-buffer-size", "8", "--version"]).output().unwrap().status.success()
}

/// `sweep --program TOOL` at 0 (8 KiB) and 64: the program's 8 KiB events
/// equal `record`'s and strace's on the same home, the model column equals
/// kbxscope's own summary, and 64 KiB runs only if TOOL can read with it.
fn program_beside_its_model(tool: &str, workload: &str, args: &[&str], ours: &[&str]) {
    let kbx = fixture("gnupg-mixed.kbx");
    let trust = fixture("gnupg-mixed.trustlist.txt");
    let mut sweep = vec!["sweep", kbx.to_str().unwrap(), "--program", tool, "--workload", workload];
    sweep.extend(["--trustlist", trust.to_str().unwrap(), "--sizes", "0,64", "--runs", "1", "--warmup", "0"]);
    sweep.extend(["--export-json", "-"]);
    let o = run(&sweep);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stderr(&o);
    eprintln!("{table}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["program"].as_str().unwrap().starts_with(&format!("{tool} {}", args.join(" "))), "{v}");
    let rows = v["results"].as_array().unwrap();
    let program = rows[0]["program"]["events"].as_u64().unwrap();
    let home = Home::new(tool, args);
    let (recorded, straced) = (home.recorded(tool, args), home.straced(tool, args));
    // Beside a program the model is that program's GnuPG version, less
    // the lock gpgsm 2.2 takes around its lookups, whose files the
    // program's count leaves out: each such cycle is a `link`, an open,
    // read, close and unlink of the lock file and a `stat` of the lock's
    // own file (the start's cycle stays).
    let version = std::process::Command::new(tool).arg("--version").output().unwrap();
    let v22 = String::from_utf8_lossy(&version.stdout).lines().next().is_some_and(|l| l.contains(" 2.2."));
    let mut single =
        vec!["--io-summary=json", "--kbx-buffer-size=0", "--gnupg-version", if v22 { "2.2" } else { "2.4" }];
    single.extend_from_slice(ours);
    single.extend(["--trustlist", trust.to_str().unwrap(), kbx.to_str().unwrap()]);
    let summary = io_summary(&run(&single));
    let lock_cycles = summary["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(".kbx.lock"))
        .map_or(0, |f| f["events"]["unlink"].as_u64().unwrap_or(0));
    let lookups_lock = if tool == "gpgsm" && v22 { lock_cycles.saturating_sub(1) * 6 } else { 0 };
    let model = summary["events"]["total"].as_u64().unwrap() - lookups_lock;
    eprintln!("{tool} at 8 KiB: program {program}, record {recorded}, strace {straced}, model {model}");
    assert_eq!(program, recorded, "the sweep's row and kbxscope record");
    assert_eq!(program, straced, "the sweep's row and strace");
    let all = rows[0]["events"]["total"].as_u64().unwrap() + rows[0]["other_events"].as_u64().unwrap_or(0);
    assert_eq!(all, model, "the model column and kbxscope's own summary, less the lookups' lock");
    let ratio = format!("{:.3}", program as f64 / model as f64);
    let row = table.lines().find(|l| l.trim_start().starts_with("8 KiB")).unwrap();
    assert!(row.contains(&ratio), "{row}: ratio {ratio}");
    if has_buffer_option(tool) {
        assert!(rows[1]["program"]["events"].as_u64().unwrap() < program, "{v}");
    } else {
        assert!(rows[1]["program"]["not_run"].as_str().unwrap().contains("no --kbx-buffer-size"), "{v}");
        let row = table.lines().find(|l| l.trim_start().starts_with("64 KiB")).unwrap();
        assert!(row.contains("not run"), "{table}");
        assert!(table.contains("not run: ") && table.contains("has no --kbx-buffer-size"), "{table}");
    }
}

fn program_gpgsm_recorded_beside_its_model() {
    let args = ["-k", "--with-validation", "--disable-dirmngr"];
    program_beside_its_model("gpgsm", "validate", &args, &["list", "--with-validation"]);
}

fn program_gpg_check_sigs_recorded_beside_its_model() {
    program_beside_its_model("gpg", "check-sigs", &["--check-sigs"], &["list", "--check-sigs"]);
}

/// `--with-gpgsm` counts from inside by default; `--count-with strace`
/// gives the same number.
fn with_gpgsm_record_and_strace_count_alike() {
    let kbx = fixture("gnupg-mixed.kbx");
    let count = |extra: &[&str]| {
        let mut args = vec!["sweep", kbx.to_str().unwrap(), "--sizes", "0", "--runs", "1", "--warmup", "0"];
        args.extend(["--with-gpgsm", "--export-json", "-"]);
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (v["results"][0]["gnupg"]["events"].as_u64().unwrap(), stderr(&o))
    };
    let ((inside, table), (outside, straced)) = (count(&[]), count(&["--count-with", "strace"]));
    assert_eq!(inside, outside, "record and strace");
    assert!(table.contains("recorded from inside"), "{table}");
    assert!(straced.contains("counted by strace"), "{straced}");
}

crate::tests![
    rows_match_single_runs_and_fall_with_the_buffer,
    exports_and_bad_paths,
    with_gpgsm_puts_gnupg_beside_us needs ["gpgsm"],
    exports_to_stdout_hold_only_the_export,
    trustlists_next_to_a_keybox_and_a_missing_keybox_first,
    sizes_in_any_spelling_and_a_narrow_table,
    a_keybox_changed_during_a_sweep_is_reported,
    metrics_and_trace_during_a_sweep,
    program_gpgsm_recorded_beside_its_model needs ["gpgsm", "gpgconf", "strace"],
    program_gpg_check_sigs_recorded_beside_its_model needs ["gpg", "gpgconf", "strace"],
    with_gpgsm_record_and_strace_count_alike needs ["gpgsm", "gpgconf", "strace"],
];
