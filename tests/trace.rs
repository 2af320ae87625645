//! `--trace-out`: Chrome traces that Perfetto and chrome://tracing accept.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{fixture, io_summary, run, stderr, validation_args};

/// Parse a trace and check its structure: phases, and per thread B/E
/// pairs nested LIFO with non-decreasing timestamps. Returns the events.
fn check_trace(path: &Path) -> Vec<Value> {
    let events: Vec<Value> = serde_json::from_slice(&std::fs::read(path).unwrap()).expect("the trace is complete JSON");
    let mut stacks: HashMap<u64, Vec<(String, f64)>> = HashMap::new();
    let mut last_ts: HashMap<u64, f64> = HashMap::new();
    for e in &events {
        let ph = e["ph"].as_str().unwrap();
        assert!(matches!(ph, "M" | "B" | "E" | "i"), "unexpected phase {ph}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64());
        if ph == "M" {
            continue;
        }
        let tid = e["tid"].as_u64().unwrap();
        let ts = e["ts"].as_f64().unwrap();
        assert!(ts >= *last_ts.get(&tid).unwrap_or(&0.0), "timestamps go back on thread {tid}");
        last_ts.insert(tid, ts);
        let name = e["name"].as_str().unwrap().to_string();
        match ph {
            "B" => stacks.entry(tid).or_default().push((name, ts)),
            "E" => {
                let (open, _) = stacks.get_mut(&tid).and_then(Vec::pop).expect("E without B");
                assert_eq!(open, name, "spans nest");
            }
            _ => {}
        }
    }
    assert!(stacks.values().all(Vec::is_empty), "every B has its E");
    events
}

fn count(events: &[Value], phase: &str, cat: &str) -> usize {
    events.iter().filter(|e| e["ph"] == phase && e["cat"] == cat).count()
}

fn event_spans_equal_the_io_summary() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let (deleted, mixed, trust) =
        (fixture("gnupg-deleted.kbx"), fixture("gnupg-mixed.kbx"), fixture("gnupg-mixed.trustlist.txt"));
    for args in [vec!["stats", deleted.to_str().unwrap()], validation_args(&[], &mixed, &trust)] {
        let mut full = vec![
            "--trace-out",
            trace.to_str().unwrap(),
            "--trace-level",
            "event",
            "--io-summary=json",
            "--kbx-buffer-size=8k",
        ];
        full.extend(args);
        let o = run(&full);
        assert!(o.status.success(), "{}", stderr(&o));
        let events = check_trace(&trace);
        let total = io_summary(&o)["events"]["total"].as_u64().unwrap() as usize;
        assert_eq!(count(&events, "B", "kbx::event"), total, "{full:?}");
        assert_eq!(count(&events, "B", "kbx::command"), 1);
        let reads: Vec<&Value> = events.iter().filter(|e| e["ph"] == "B" && e["name"] == "read").collect();
        assert_eq!(reads[0]["args"]["op"], "read");
        assert_eq!(reads[0]["args"]["buffer_size"], 8192, "numbers are numbers");
        assert!(reads.iter().all(|r| r["args"]["offset"].is_u64()), "every read has its offset");
        // The bytes each read returned (recorded at its end, written on its
        // begin), summed.
        let returned: u64 = events
            .iter()
            .filter(|e| e["ph"] == "B" && e["name"] == "read")
            .map(|e| e["args"]["bytes"].as_u64().expect("bytes on every read"))
            .sum();
        assert_eq!(returned, io_summary(&o)["bytes_read"].as_u64().unwrap());
        let command = events.iter().find(|e| e["ph"] == "B" && e["cat"] == "kbx::command").unwrap();
        assert!(matches!(command["args"]["name"].as_str(), Some("stats" | "validate")), "{command}");
        let process = events.iter().find(|e| e["ph"] == "M" && e["name"] == "process_name").expect("process named");
        assert!(process["args"]["name"].as_str().unwrap().starts_with("kbxscope "));
        assert!(events.iter().any(|e| e["name"] == "thread_name" && e["args"]["name"] == "main"));
    }
}

fn trace_levels_and_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let kbx = fixture("gnupg-mixed.kbx");
    let trace_with = |extra: &[&str]| {
        let mut args = vec!["--trace-out", trace.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["stats", kbx.to_str().unwrap()]);
        assert!(run(&args).status.success());
        check_trace(&trace)
    };
    let default = trace_with(&[]);
    // 45 blobs; the read that finds the end of the file is the pass's
    assert_eq!(count(&default, "B", "kbx::blob"), 45);
    assert_eq!(count(&default, "B", "kbx::event"), 0, "default level is blob");
    let lookup = trace_with(&["--trace-level", "lookup"]);
    assert_eq!(count(&lookup, "B", "kbx::blob"), 0);
    assert_eq!(count(&lookup, "B", "kbx::lookup"), 1);
    let capped = |events: &[Value]| {
        ["kbx::lookup", "kbx::blob", "kbx::event"].iter().map(|c| count(events, "B", c)).sum::<usize>()
    };
    let whole = capped(&trace_with(&["--trace-level", "event"]));
    let cut = trace_with(&["--trace-level", "event", "--trace-max-events", "10"]);
    assert_eq!(capped(&cut), 10);
    // The cut is a span on the notes track, from where the spans stop to
    // the end, saying what happened and how much was left out.
    let notes: Vec<&Value> = cut.iter().filter(|e| e["cat"] == "kbx::trace").collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0]["name"].as_str().unwrap().contains("trace cut here: --trace-max-events 10 reached"),
        "{}",
        notes[0]
    );
    assert_eq!(notes[1]["args"]["spans_dropped"], (whole - 10) as u64);
    let last_kept = cut
        .iter()
        .filter(|e| e["ph"] == "B" && e["cat"] != "kbx::command" && e["cat"] != "kbx::trace")
        .map(|e| e["ts"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let end = cut.iter().filter(|e| e["cat"] == "kbx::command").map(|e| e["ts"].as_f64().unwrap()).fold(0.0, f64::max);
    let at = notes[0]["ts"].as_f64().unwrap();
    assert!(last_kept <= at && at < end, "the cut is where spans stop: {last_kept} <= {at} < {end}");
    let tracks: Vec<&Value> = cut.iter().filter(|e| e["name"] == "thread_name").collect();
    assert!(tracks.iter().any(|t| t["tid"] == notes[0]["tid"] && t["args"]["name"] == "kbxscope notes"));
}

fn a_failing_command_still_leaves_a_valid_trace() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("gnupg-mixed.kbx")).unwrap();
    let cut = dir.path().join("cut.kbx");
    std::fs::write(&cut, &bytes[..5000]).unwrap();
    let trace = dir.path().join("t.json");
    let o = run(["--trace-out", trace.to_str().unwrap(), "stats", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let events = check_trace(&trace);
    let failed = events.iter().find(|e| e["ph"] == "B" && e["name"] == "failed").expect("a failure marker");
    assert!(failed["args"]["error"].as_str().unwrap().contains("cut.kbx"), "{failed}");
    // A failed open says why.
    let missing = dir.path().join("missing.kbx");
    let o = run(["--trace-out", trace.to_str().unwrap(), "--trace-level", "event", "stats", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let events = check_trace(&trace);
    let open = events.iter().find(|e| e["ph"] == "B" && e["name"] == "open").expect("the open is traced");
    assert!(open["args"]["error"].as_str().unwrap().contains(&crate::common::no_such_file()), "{open}");
    assert!(events.iter().any(|e| e["name"] == "failed"));
    let nowhere = dir.path().join("no").join("dir").join("t.json");
    let o = run(["--trace-out", nowhere.to_str().unwrap(), "stats", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));
    let missing = crate::common::no_such_directory();
    assert_eq!(stderr(&o).matches(missing.as_str()).count(), 1, "the reason once: {}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
}

/// A traced sweep of `kbx`'s stats at 8 and 16 KiB: 1 warm-up and 2 runs
/// each.
fn sweep_args(trace: &Path, kbx: &Path) -> Vec<String> {
    let (trace, kbx) = (trace.to_str().unwrap(), kbx.to_str().unwrap());
    let args =
        ["--trace-out", trace, "--trace-level", "command", "sweep", kbx, "--workload", "stats", "--sizes", "8,16"];
    args.into_iter().chain(["--runs", "2", "--warmup", "1"]).map(String::from).collect()
}

/// A sweep: one span per buffer size and per run (warm-up runs named as
/// such), inside a command span labelled as a sweep.
fn sweeps_have_a_span_per_size_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let kbx = fixture("gnupg-mixed.kbx");
    let o = run(sweep_args(&trace, &kbx));
    assert!(o.status.success(), "{}", stderr(&o));
    let events = check_trace(&trace);
    let begun = |name: &str| -> Vec<&Value> { events.iter().filter(|e| e["ph"] == "B" && e["name"] == name).collect() };
    assert_eq!(begun("command")[0]["args"]["buffer_size"], "sweep");
    let sizes: Vec<u64> = begun("size").iter().map(|e| e["args"]["buffer_size"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [8192, 16384]);
    let runs: Vec<(u64, u64)> =
        begun("run").iter().map(|e| (e["args"]["run"].as_u64().unwrap(), e["args"]["of"].as_u64().unwrap())).collect();
    assert_eq!(runs, [(1, 2), (2, 2), (1, 2), (2, 2)]);
    assert_eq!(begun("warmup").len(), 2);
    let o = run(["--io-summary=json", "sweep", kbx.to_str().unwrap(), "--sizes", "8"]);
    assert_eq!(o.status.code(), Some(2), "JSON is --export-json's: {}", stderr(&o));
}

/// The `--lookup index` validation's signature checks run on named worker
/// threads, each its own track.
fn worker_threads_are_named_tracks() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let (kbx, trust) = (fixture("gnupg-mixed.kbx"), fixture("gnupg-mixed.trustlist.txt"));
    let mut args = vec!["--trace-out", trace.to_str().unwrap(), "--trace-level", "lookup"];
    args.extend(validation_args(&["--lookup", "index"], &kbx, &trust));
    let o = run(args);
    assert!(o.status.success(), "{}", stderr(&o));
    let events = check_trace(&trace);
    let checks = events.iter().filter(|e| e["ph"] == "B" && e["name"] == "check_signature").count();
    assert!(checks > 0, "signature checks are traced");
    // Every track is named: the main thread, the workers, the notes. (How
    // many checks a worker gets depends on the machine: the main thread
    // works the queue too when it is done reading.)
    let names: HashMap<u64, &str> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (e["tid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap()))
        .collect();
    let mut on_workers = 0;
    for e in events.iter().filter(|e| e["ph"] == "B") {
        let name = names.get(&e["tid"].as_u64().unwrap()).copied().unwrap_or_else(|| panic!("unnamed track: {e}"));
        assert!(name == "main" || name.starts_with("sigcheck-"), "{name}");
        if name.starts_with("sigcheck-") {
            assert_eq!(e["name"], "check_signature");
            on_workers += 1;
        }
    }
    eprintln!("{checks} signature checks, {on_workers} on worker threads");
}

/// Ctrl-C during the first-use generation of the built-in keybox: the
/// trace is finished (the generation span closed where the signal came,
/// the interruption marked), nothing else is left behind, exit 130. SIGTERM
/// while `gen` writes its output: its temporary file is removed, exit 143.
fn signals_finish_the_trace_and_leave_nothing_behind() {
    #[cfg(unix)]
    signals::run();
}

/// Open `trace` in speedscope (headless Chromium, `tests/viewer/`) with
/// `--strict` (B/E nesting checked by the viewer's importer); every name in
/// `expect` must be a frame. Returns what the viewer reported.
fn speedscope(trace: &Path, expect: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/viewer/speedscope-check.mjs");
    let mut args = vec![script.to_str().unwrap(), "--strict", trace.to_str().unwrap()];
    args.extend_from_slice(expect);
    let o = std::process::Command::new("node").args(&args).output().expect("node runs");
    assert!(o.status.success(), "speedscope refused {}: {}", trace.display(), String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("the check's JSON line")
}

/// The traces open in a real viewer: speedscope 1.25 (npm, pinned in
/// `tests/viewer/package-lock.json`, installed by `npm ci --prefix
/// tests/viewer`) in Debian's headless Chromium, offline. Event level with
/// worker threads, a cut trace (its note is a visible span on a track of its
/// own), a sweep's spans, `record --stacks`' profile. Without the node modules the test is ignored
/// (under `CI=true` it fails): it needs `tests/viewer/node_modules/speedscope`.
fn speedscope_opens_our_traces() {
    let dir = tempfile::tempdir().unwrap();
    let kbx = fixture("gnupg-mixed.kbx");
    let trace = |name: &str, args: &[&str]| {
        let path = dir.path().join(name);
        let mut all = vec!["--trace-out", path.to_str().unwrap()];
        all.extend_from_slice(args);
        let o = run(&all);
        assert!(o.status.success(), "{}", stderr(&o));
        path
    };
    let trust = fixture("gnupg-mixed.trustlist.txt");
    let deep = trace(
        "deep.json",
        &[&["--trace-level", "event"][..], &validation_args(&["--lookup", "index"], &kbx, &trust)].concat(),
    );
    let seen = speedscope(&deep, &["command", "pass", "blob", "read", "check_signature"]);
    let profiles: Vec<&str> = seen["profile_selector"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(profiles.iter().any(|p| p.starts_with("kbxscope validate") && p.contains("main")), "{profiles:?}");

    let cut =
        trace("cut.json", &["--trace-level", "event", "--trace-max-events", "10", "stats", kbx.to_str().unwrap()]);
    let seen = speedscope(&cut, &["trace cut here: --trace-max-events 10 reached", "blob"]);
    let profiles: Vec<&str> = seen["profile_selector"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(profiles.iter().any(|p| p.contains("kbxscope notes")), "the note has its own track: {profiles:?}");

    let sweep = dir.path().join("sweep.json");
    let o = run(sweep_args(&sweep, &kbx));
    assert!(o.status.success(), "{}", stderr(&o));
    speedscope(&sweep, &["command", "size", "warmup", "run"]);

    // record --stacks' profile (speedscope's own format): cat's reads under
    // libc's start, one profile per weight.
    let stacks = dir.path().join("stacks.json");
    let o =
        run(["record", "--watch", "*.kbx", "--stacks", stacks.to_str().unwrap(), "--", "cat", kbx.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let seen = speedscope(&stacks, &["read", "__libc_start_main"]);
    let profiles: Vec<&str> = seen["profile_selector"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(profiles.len(), 3, "{profiles:?}");
    assert!(profiles[0].starts_with("cat (pid ") && profiles[0].ends_with(": file events"), "{profiles:?}");
}

/// Signals, sent with kill(2): Unix's.
#[cfg(unix)]
mod signals {
    use std::io::{BufRead, BufReader};
    use std::path::Path;
    use std::process::Stdio;

    use super::check_trace;
    use crate::common::bin;

    /// Wait until the child prints a line containing `text` on stderr.
    fn wait_for_line(child: &mut std::process::Child, text: &str) -> BufReader<std::process::ChildStderr> {
        let mut lines = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        while lines.read_line(&mut line).unwrap() > 0 {
            if line.contains(text) {
                return lines;
            }
            line.clear();
        }
        panic!("kbxscope ended without printing {text:?}");
    }

    pub(super) fn run() {
        let cache = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.json");
        let mut child = bin()
            .env("KBXSCOPE_CACHE_DIR", cache.path())
            .args(["--trace-out", trace.to_str().unwrap(), "stats"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _rest = wait_for_line(&mut child, "generating the built-in default keybox");
        assert_eq!(unsafe_kill(child.id(), libc::SIGINT), 0);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{status:?}");
        let events = check_trace(&trace);
        let generate = events.iter().find(|e| e["ph"] == "E" && e["name"] == "generate").expect("the generation span");
        assert_eq!(generate["args"]["interrupted"], "SIGINT");
        assert!(events.iter().any(|e| e["name"] == "interrupted by SIGINT"));
        let left = |d: &Path| -> Vec<String> {
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
        };
        assert_eq!(left(dir.path()), ["t.json"]);
        assert!(left(cache.path()).iter().all(|n| !n.contains(".tmp")), "{:?}", left(cache.path()));

        // SIGTERM while gen's temporary file exists (a few tries: gen may
        // finish between the check and the signal).
        let mut landed = 0;
        for round in 0..5 {
            let out = dir.path().join(format!("g{round}.kbx"));
            let mut child = bin()
                .args(["gen", out.to_str().unwrap(), "--preset", "small"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let prefix = format!(".g{round}.kbx.");
            while child.try_wait().unwrap().is_none() {
                if left(dir.path()).iter().any(|n| n.starts_with(&prefix)) {
                    assert_eq!(unsafe_kill(child.id(), libc::SIGTERM), 0);
                    break;
                }
                std::thread::yield_now();
            }
            let status = child.wait().unwrap();
            landed += usize::from(status.code() == Some(143));
            assert!(left(dir.path()).iter().all(|n| !n.ends_with(".tmp")), "left behind: {:?}", left(dir.path()));
            if landed > 0 {
                break;
            }
        }
        assert!(landed > 0, "no SIGTERM landed while gen wrote");
    }

    fn unsafe_kill(pid: u32, signal: i32) -> i32 {
        // SAFETY: kill(2) with a child's pid and a signal number: no memory is
        // shared, the worst case is an error code.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(pid as i32, signal)
        }
    }
}

crate::tests![
    event_spans_equal_the_io_summary,
    trace_levels_and_the_cap,
    a_failing_command_still_leaves_a_valid_trace,
    sweeps_have_a_span_per_size_and_run,
    worker_threads_are_named_tracks,
    signals_finish_the_trace_and_leave_nothing_behind needs ["unix"],
    speedscope_opens_our_traces needs ["chromium", "node", "tests/viewer/node_modules/speedscope"],
];
