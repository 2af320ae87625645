//! `sweep`: one row per size, counts equal to single runs, exports.

use crate::common::{gen_tiny as tiny, io_summary, run, stderr, stdout};

#[test]
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
    assert!(table.lines().nth(1).unwrap().trim_start().starts_with("N(k)  file events  time("), "{table}");
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
        assert_eq!(row["events"], s["events"], "size {size}");
        assert_eq!(row["bytes_read"], s["bytes_read"]);
        assert_eq!(row["logical_reads"], s["logical_reads"]);
    }
}

#[test]
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
    assert!(std::fs::read_to_string(&md).unwrap().contains("| 64 | "));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg") && drawn.trim_end().ends_with("</svg>"), "{drawn:.200}");
    assert!(drawn.contains("tiny.kbx — stats") && drawn.contains("file events"));
    assert_eq!(drawn.matches("<circle").count(), 4, "2 sizes × 2 panels");
    // a bad export path fails before any run: no table printed
    let bad = dir.path().join("no/such/dir/s.json");
    for flag in ["--export-json", "--plot"] {
        let o = run(["sweep", kbx.to_str().unwrap(), "--runs", "50", flag, bad.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("cannot write"), "{flag}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{flag}: a table was printed: {}", stdout(&o));
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

#[test]
fn with_gpgsm_puts_gnupg_beside_us() {
    let name = "with_gpgsm_puts_gnupg_beside_us";
    let (Some(_), Some(_)) = (crate::common::tool("gpgsm", name), crate::common::tool("strace", name)) else { return };
    let (_dir, kbx) = tiny();
    let o = run(["sweep", kbx.to_str().unwrap(), "--sizes", "0,4096B", "--runs", "1", "--warmup", "0", "--with-gpgsm"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(table.contains("gpgsm events"), "{table}");
    let row: Vec<&str> = table.lines().find(|l| l.trim_start().starts_with("0 ")).unwrap().split_whitespace().collect();
    let (ours, theirs): (f64, f64) = (row[1].parse().unwrap(), row[row.len() - 2].parse().unwrap());
    assert!((ours / theirs - 1.0).abs() < 0.05, "kbxscope {ours} vs gpgsm {theirs} file events at 8 KiB");
    let other: Vec<&str> =
        table.lines().find(|l| l.trim_start().starts_with("4096B ")).unwrap().split_whitespace().collect();
    assert_eq!(other[other.len() - 1], "-", "gpgsm cannot express 4096 bytes");
}

/// Another process replaces the keybox by rename (as GnuPG does) and
/// appends to it while a sweep runs: no crash, every run completes on one
/// consistent file per handle, and the report says the file changed.
#[test]
fn a_keybox_changed_during_a_sweep_is_reported() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let (dir, kbx) = tiny();
    let original = std::fs::read(&kbx).unwrap();
    let blobs = crate::common::split_blobs(&original);
    let extra = blobs.last().unwrap().clone();
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
                    std::fs::rename(&tmp, &kbx).unwrap();
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
#[test]
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
