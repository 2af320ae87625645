//! `--trace-out`: Chrome traces that Perfetto and chrome://tracing accept.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{fixture, io_summary, run, stderr};

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
    for args in [
        vec!["stats".to_string(), fixture("gnupg-deleted.kbx").to_str().unwrap().to_string()],
        vec![
            "list".into(),
            "--with-validation".into(),
            "--trustlist".into(),
            fixture("gnupg-mixed.trustlist.txt").to_str().unwrap().into(),
            fixture("gnupg-mixed.kbx").to_str().unwrap().into(),
        ],
    ] {
        let mut full = vec![
            "--trace-out".to_string(),
            trace.to_str().unwrap().into(),
            "--trace-level".into(),
            "event".into(),
            "--io-summary=json".into(),
            "--kbx-buffer-size=8k".into(),
        ];
        full.extend(args);
        let o = run(&full);
        assert!(o.status.success(), "{}", stderr(&o));
        let events = check_trace(&trace);
        let total = io_summary(&o)["events"]["total"].as_u64().unwrap() as usize;
        assert_eq!(count(&events, "B", "kbx::event"), total, "{full:?}");
        assert_eq!(count(&events, "B", "kbx::command"), 1);
        let read = events.iter().find(|e| e["ph"] == "B" && e["name"] == "read").unwrap();
        assert_eq!(read["args"]["op"], "read");
        assert_eq!(read["args"]["buffer_size"], "8192");
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
    // 45 blobs, and the read that finds the end of the file
    assert_eq!(count(&default, "B", "kbx::blob"), 46);
    assert_eq!(count(&default, "B", "kbx::event"), 0, "default level is blob");
    let lookup = trace_with(&["--trace-level", "lookup"]);
    assert_eq!(count(&lookup, "B", "kbx::blob"), 0);
    assert_eq!(count(&lookup, "B", "kbx::lookup"), 1);
    let cut = trace_with(&["--trace-level", "event", "--trace-max-events", "10"]);
    assert_eq!(count(&cut, "B", "kbx::blob") + count(&cut, "B", "kbx::event"), 10);
    let note = cut.iter().find(|e| e["ph"] == "i").expect("the cut is noted");
    assert!(note["args"]["message"].as_str().unwrap().contains("trace cut: --trace-max-events 10 reached"), "{note}");
    assert_eq!(note["args"]["spans_dropped"], "50");
}

fn a_failing_command_still_leaves_a_valid_trace() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("gnupg-mixed.kbx")).unwrap();
    let cut = dir.path().join("cut.kbx");
    std::fs::write(&cut, &bytes[..5000]).unwrap();
    let trace = dir.path().join("t.json");
    let o = run(["--trace-out", trace.to_str().unwrap(), "stats", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    check_trace(&trace);
    let nowhere = dir.path().join("no/dir/t.json");
    let o = run(["--trace-out", nowhere.to_str().unwrap(), "stats", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
}

crate::tests![event_spans_equal_the_io_summary, trace_levels_and_the_cap, a_failing_command_still_leaves_a_valid_trace];
