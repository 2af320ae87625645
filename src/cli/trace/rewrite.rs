//! The trace as viewers want it, made on its way to the file.
//!
//! tracing-chrome writes one event per line (`[`, `{…},`, …, `{…}`, `]`)
//! and every argument as a string. [`Rewriter`] sits between it and the
//! file and, line by line:
//! * turns the arguments that are numbers ([`NUMERIC_ARGS`]) into JSON
//!   numbers;
//! * gives a system call's begin event what its end recorded (`bytes`,
//!   `error`): event spans are leaves, so each `kbx::event` B is held back
//!   until its E arrives and the E is written without arguments (viewers
//!   such as speedscope expect a span's arguments at its begin);
//! * names the process (`process_name` metadata) at the start;
//! * turns each `recorded` event (a call `record` saw in another process,
//!   an instant event with `start_ns`/`duration_ns` on `CLOCK_MONOTONIC`)
//!   into a complete span (`"ph":"X"`) at its own time, on its process's
//!   (`pid`, named by `process_name` metadata when first seen) and
//!   thread's (`tid`) track, named by `thread_name` metadata;
//! * marks where the span cap cut the trace, on a track of its own
//!   ("kbxscope notes"): a span from the cut to the end of the trace named
//!   for what happened, with the number of spans left out;
//! * when a signal ended the command, closes every span still open, at the
//!   last timestamp, and marks the interruption on the notes track.
//!
//! A line that is not an event object passes through unchanged.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use kbxscope::io::monotonic_ns;
use serde_json::{json, Map, Value};

/// Arguments whose values are numbers (tracing-chrome records them as
/// strings). Text arguments (`name`, `kid`, `subject`, …) stay strings.
pub const NUMERIC_ARGS: &[&str] =
    &["buffer_size", "offset", "bytes", "length", "start", "blob", "run", "of", "spans_dropped", "max_spans"];

/// The notes track's thread id: far above tracing-chrome's (which count
/// from 0 per thread seen).
const NOTES_TID: u64 = 1 << 20;

/// What the trace's owner tells the rewriter: where the cap cut the trace
/// and whether a signal ended the command.
#[derive(Debug)]
pub struct Notes {
    /// When tracing-chrome's clock started: taken again just after the
    /// layer is built ([`Notes::clock_started`]), since tracing-chrome
    /// starts its clock only after spawning its writer thread, which can
    /// take a millisecond on a busy machine.
    pub start: Mutex<Instant>,
    /// The process's name in the trace.
    pub process: String,
    /// The span cap.
    pub max_spans: u64,
    /// When the first span over the cap was refused.
    pub cut_at: Mutex<Option<Instant>>,
    /// Spans refused, known at the end.
    pub dropped: Mutex<u64>,
    /// The signal that ended the command, if one did.
    pub interrupted: Mutex<Option<&'static str>>,
    /// `CLOCK_MONOTONIC` in ns at [`Notes::start`]: where recorded events
    /// (stamped on that clock) fall on the trace's time line.
    pub mono_start_ns: Mutex<u64>,
}

impl Notes {
    /// Notes for a trace whose clock starts now.
    pub fn new(process: String, max_spans: u64) -> Self {
        Self {
            start: Mutex::new(Instant::now()),
            process,
            max_spans,
            cut_at: Mutex::new(None),
            dropped: Mutex::new(0),
            interrupted: Mutex::new(None),
            mono_start_ns: Mutex::new(monotonic_ns()),
        }
    }

    /// Tracing-chrome's clock has just started: take its start as ours.
    pub fn clock_started(&self) {
        *self.start.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        *self.mono_start_ns.lock().unwrap_or_else(PoisonError::into_inner) = monotonic_ns();
    }

    fn cut_ts(&self) -> Option<f64> {
        let cut = *self.cut_at.lock().unwrap_or_else(PoisonError::into_inner);
        let start = *self.start.lock().unwrap_or_else(PoisonError::into_inner);
        cut.map(|at| at.saturating_duration_since(start).as_nanos() as f64 / 1000.0)
    }
}

/// A `Write` that rewrites tracing-chrome's output on its way to `out`.
pub struct Rewriter<W: Write> {
    out: W,
    notes: Arc<Notes>,
    line: Vec<u8>,
    wrote_event: bool,
    /// Open spans per thread id: names, innermost last.
    open: HashMap<u64, Vec<String>>,
    last_ts: f64,
    /// The latest begin written.
    last_begin: f64,
    /// Per thread, a `kbx::event` begin waiting for its end.
    held: HashMap<u64, Value>,
    /// Recorded processes already named.
    named: std::collections::HashSet<u64>,
    /// Recorded threads (pid, tid) already named.
    named_threads: std::collections::HashSet<(u64, u64)>,
}

impl<W: Write> Rewriter<W> {
    /// Rewrite into `out`, told by `notes`.
    pub fn new(out: W, notes: Arc<Notes>) -> Self {
        Self {
            out,
            notes,
            line: Vec::new(),
            wrote_event: false,
            open: HashMap::new(),
            last_ts: 0.0,
            last_begin: 0.0,
            held: HashMap::new(),
            named: std::collections::HashSet::new(),
            named_threads: std::collections::HashSet::new(),
        }
    }

    /// A `recorded` event as a complete span on its process's track.
    fn recorded(&mut self, event: &Value) -> io::Result<()> {
        // tracing-chrome writes text fields Debug-formatted ("\"read\""): unquote.
        let mut args = event["args"].clone();
        if let Some(map) = args.as_object_mut() {
            for v in map.values_mut() {
                if let Some(unquoted) = v.as_str().and_then(|t| serde_json::from_str::<String>(t).ok()) {
                    *v = unquoted.into();
                }
            }
        }
        let args = &args;
        let num = |k: &str| args[k].as_u64().or_else(|| args[k].as_str().and_then(|v| v.parse().ok()));
        let (Some(pid), Some(tid), Some(start), Some(dur)) =
            (num("pid"), num("tid"), num("start_ns"), num("duration_ns"))
        else {
            return self.emit(event);
        };
        if self.named.insert(pid) {
            let program = args["program"].as_str().unwrap_or("?").to_string();
            let name = format!("{program} (pid {pid}, recorded)");
            self.emit(&json!({"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": name}}))?;
        }
        if self.named_threads.insert((pid, tid)) {
            let program = args["program"].as_str().unwrap_or("?");
            let name = if tid == pid { format!("{program} main thread") } else { format!("{program} thread {tid}") };
            self.emit(&json!({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}}))?;
        }
        let mono0 = *self.notes.mono_start_ns.lock().unwrap_or_else(PoisonError::into_inner);
        let ts = (start as f64 - mono0 as f64) / 1000.0;
        let mut out = Map::new();
        for key in ["file", "offset", "bytes", "errno", "program"] {
            if let Some(v) = args.get(key) {
                out.insert(key.to_string(), v.clone());
            }
        }
        numbers(&mut out);
        let name = args["op"].as_str().unwrap_or("call").to_string();
        self.emit(&json!({"ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur as f64 / 1000.0,
                          "name": name, "cat": "kbx::event", "args": out}))
    }

    fn emit(&mut self, event: &Value) -> io::Result<()> {
        self.out.write_all(if self.wrote_event { b",\n" } else { b"\n" })?;
        serde_json::to_writer(&mut self.out, event)?;
        self.wrote_event = true;
        Ok(())
    }

    fn note(&mut self, ph: &str, ts: f64, name: &str, args: Value) -> io::Result<()> {
        self.emit(
            &json!({"ph": ph, "pid": 1, "tid": NOTES_TID, "ts": ts, "name": name, "cat": "kbx::trace", "args": args}),
        )
    }

    fn start(&mut self) -> io::Result<()> {
        self.out.write_all(b"[")?;
        let process = self.notes.process.clone();
        self.emit(&json!({"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": process}}))?;
        self.emit(
            &json!({"ph": "M", "pid": 1, "tid": NOTES_TID, "name": "thread_name", "args": {"name": "kbxscope notes"}}),
        )
    }

    fn mark_cut(&mut self, ts: f64) -> io::Result<()> {
        let name = format!("trace cut here: --trace-max-events {} reached", self.notes.max_spans);
        self.note("B", ts, &name, json!({"max_spans": self.notes.max_spans}))
    }

    fn end(&mut self) -> io::Result<()> {
        let mut held: Vec<(u64, Value)> = self.held.drain().collect();
        held.sort_by_key(|(tid, _)| *tid);
        for (_, begin) in held {
            self.emit(&begin)?;
        }
        // The cut is marked here, at the end, not in the stream: the cut's
        // instant is on our clock, a little behind tracing-chrome's, so
        // events admitted just before it can carry later timestamps. It is
        // never before the last span begun and never at the very end (a
        // zero-length span, which speedscope refuses).
        let cut = self.notes.cut_ts();
        if let Some(ts) = cut {
            let at = if ts > self.last_begin && ts < self.last_ts { ts } else { self.last_begin };
            self.mark_cut(at)?;
        }
        let end = self.last_ts;
        let interrupted = *self.notes.interrupted.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(signal) = interrupted {
            // Close what the signal left open, innermost first.
            let mut tids: Vec<u64> = self.open.keys().copied().collect();
            tids.sort_unstable();
            for tid in tids {
                while let Some(name) = self.open.get_mut(&tid).and_then(Vec::pop) {
                    self.emit(&json!({"ph": "E", "pid": 1, "tid": tid, "ts": end, "name": name, "args": {"interrupted": signal}}))?;
                }
            }
            let name = format!("interrupted by {signal}");
            self.note("B", end, &name, json!({}))?;
            self.note("E", end, &name, json!({}))?;
        }
        if cut.is_some() {
            let dropped = *self.notes.dropped.lock().unwrap_or_else(PoisonError::into_inner);
            let name = format!("trace cut here: --trace-max-events {} reached", self.notes.max_spans);
            self.note("E", end, &name, json!({"spans_dropped": dropped}))?;
        }
        self.out.write_all(b"\n]\n")
    }

    fn event(&mut self, mut event: Value) -> io::Result<()> {
        let ph = event["ph"].as_str().unwrap_or_default().to_string();
        if ph == "i" && event["cat"] == "kbx::event" && event["args"]["message"] == "recorded" {
            return self.recorded(&event);
        }
        if let Some(args) = event.get_mut("args").and_then(Value::as_object_mut) {
            numbers(args);
        }
        if let (Some(ts), Some(tid)) = (event["ts"].as_f64(), event["tid"].as_u64()) {
            self.last_ts = self.last_ts.max(ts);
            // A held begin: merged with its end, or written as it is if
            // anything else comes first on its thread.
            if let Some(mut begin) = self.held.remove(&tid) {
                if ph == "E" && begin["name"] == event["name"] {
                    if let (Some(to), Some(from)) = (
                        begin.get_mut("args").and_then(Value::as_object_mut),
                        event.get_mut("args").and_then(Value::as_object_mut),
                    ) {
                        to.append(from);
                    }
                    if let Some(e) = event.as_object_mut() {
                        e.remove("args");
                    }
                }
                self.emit(&begin)?;
            }
            if ph == "B" {
                self.last_begin = self.last_begin.max(ts);
            }
            if ph == "B" && event["cat"] == "kbx::event" {
                self.open.entry(tid).or_default().push(event["name"].as_str().unwrap_or_default().to_string());
                self.held.insert(tid, event);
                return Ok(());
            }
            let name = event["name"].as_str().unwrap_or_default().to_string();
            match ph.as_str() {
                "B" => self.open.entry(tid).or_default().push(name),
                "E" => {
                    self.open.get_mut(&tid).and_then(Vec::pop);
                }
                _ => {}
            }
        }
        self.emit(&event)
    }

    fn line(&mut self, line: &[u8]) -> io::Result<()> {
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        match text {
            "" => Ok(()),
            "[" => self.start(),
            "]" => self.end(),
            _ => match serde_json::from_str::<Value>(text.trim_end_matches(',')) {
                Ok(event @ Value::Object(_)) => self.event(event),
                _ => {
                    self.out.write_all(if self.wrote_event { b",\n" } else { b"\n" })?;
                    self.wrote_event = true;
                    self.out.write_all(text.trim_end_matches(',').as_bytes())
                }
            },
        }
    }
}

/// Numeric arguments as JSON numbers.
fn numbers(args: &mut Map<String, Value>) {
    for key in NUMERIC_ARGS {
        if let Some(v) = args.get_mut(*key) {
            if let Some(n) = v.as_str().and_then(|s| s.parse::<u64>().ok()) {
                *v = n.into();
            }
        }
    }
}

impl<W: Write> Write for Rewriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for chunk in buf.split_inclusive(|b| *b == b'\n') {
            self.line.extend_from_slice(chunk);
            // The closing bracket is the last thing written, without a newline.
            if chunk.ends_with(b"\n") || self.line == b"]" {
                let line = std::mem::take(&mut self.line);
                self.line(&line)?;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(input: &str, notes: Notes) -> Vec<Value> {
        let mut out = Vec::new();
        let mut w = Rewriter::new(&mut out, Arc::new(notes));
        // In odd pieces, as a BufWriter may hand them over.
        for piece in input.as_bytes().chunks(7) {
            w.write_all(piece).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        serde_json::from_slice(&out).expect("valid JSON")
    }

    const INPUT: &str = "[\n{\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":1.0,\"name\":\"command\",\"args\":{\"name\":\"stats\",\"buffer_size\":\"8192\"}},\n{\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":2.0,\"name\":\"read\",\"cat\":\"kbx::event\",\"args\":{\"offset\":\"0\",\"kid\":\"1234\"}},\n{\"ph\":\"E\",\"pid\":1,\"tid\":0,\"ts\":3.0,\"name\":\"read\",\"cat\":\"kbx::event\",\"args\":{\"offset\":\"0\",\"bytes\":\"8192\",\"kid\":\"1234\"}},\n{\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":4.0,\"name\":\"blob\"}\n]";

    #[test]
    fn numbers_become_numbers_and_text_stays_text() {
        let notes = Notes::new("kbxscope stats".into(), 10);
        *notes.interrupted.lock().unwrap() = Some("SIGINT");
        let events = rewrite(INPUT, notes);
        assert_eq!(events[0]["name"], "process_name");
        assert_eq!(events[0]["args"]["name"], "kbxscope stats");
        let read = events.iter().find(|e| e["name"] == "read").unwrap();
        assert_eq!(read["ph"], "B");
        assert_eq!(read["args"]["offset"], 0);
        assert_eq!(read["args"]["bytes"], 8192, "the end's bytes on the begin");
        assert_eq!(read["args"]["kid"], "1234", "text stays text");
        let end = events.iter().find(|e| e["name"] == "read" && e["ph"] == "E").unwrap();
        assert!(end.get("args").is_none(), "{end}");
        let command = events.iter().find(|e| e["name"] == "command").unwrap();
        assert_eq!(command["args"]["buffer_size"], 8192);
        // Interrupted: the blob and the command are closed, innermost first.
        let closes: Vec<&Value> = events.iter().filter(|e| e["args"]["interrupted"] == "SIGINT").collect();
        assert_eq!(closes.len(), 2);
        assert_eq!((closes[0]["name"].as_str(), closes[1]["name"].as_str()), (Some("blob"), Some("command")));
        assert!(events.iter().any(|e| e["name"] == "interrupted by SIGINT" && e["tid"] == NOTES_TID));
    }

    #[test]
    fn recorded_events_become_complete_spans_on_their_process() {
        let notes = Notes::new("kbxscope record".into(), 10);
        *notes.mono_start_ns.lock().unwrap() = 1_000_000;
        let input = "[\n{\"ph\":\"i\",\"pid\":1,\"tid\":0,\"ts\":9.0,\"name\":\"event x\",\"cat\":\"kbx::event\",\"s\":\"t\",\"args\":{\"message\":\"recorded\",\"op\":\"\\\"read\\\"\",\"file\":\"\\\"pubring.kbx\\\"\",\"bytes\":\"8192\",\"start_ns\":\"1002000\",\"duration_ns\":\"1500\",\"pid\":\"4242\",\"tid\":\"4243\",\"program\":\"gpg\"}}\n]";
        let events = rewrite(input, notes);
        let meta = events.iter().find(|e| e["pid"] == 4242 && e["name"] == "process_name").expect("named");
        assert_eq!(meta["args"]["name"], "gpg (pid 4242, recorded)");
        let thread = events.iter().find(|e| e["tid"] == 4243 && e["name"] == "thread_name").expect("thread named");
        assert_eq!(thread["args"]["name"], "gpg thread 4243");
        let x = events.iter().find(|e| e["ph"] == "X").expect("a complete span");
        assert_eq!((x["pid"].as_u64(), x["tid"].as_u64()), (Some(4242), Some(4243)));
        assert_eq!((x["ts"].as_f64(), x["dur"].as_f64()), (Some(2.0), Some(1.5)));
        assert_eq!(x["name"], "read");
        assert_eq!(x["args"]["bytes"], 8192);
        assert_eq!(x["args"]["file"], "pubring.kbx", "text fields unquoted");
    }

    #[test]
    fn the_cut_is_marked_where_it_happened() {
        let cut_at = |notes: &Notes, ns| {
            *notes.cut_at.lock().unwrap() = Some(*notes.start.lock().unwrap() + std::time::Duration::from_nanos(ns));
        };
        // The cut between the last span begun (2.0) and the trace's end.
        let notes = Notes::new("kbxscope".into(), 1);
        cut_at(&notes, 2500);
        *notes.dropped.lock().unwrap() = 7;
        let before_blob = INPUT.rsplit_once(",\n").unwrap().0.to_string() + "\n]";
        let events = rewrite(&before_blob, notes);
        let at = events.iter().position(|e| e["tid"] == NOTES_TID && e["ph"] == "B").expect("marked");
        assert_eq!(events[at]["ts"], 2.5);
        let end = events.iter().find(|e| e["tid"] == NOTES_TID && e["ph"] == "E").unwrap();
        assert_eq!(end["ts"], 3.0);
        assert_eq!(end["args"]["spans_dropped"], 7);
        assert!(end["name"].as_str().unwrap().contains("--trace-max-events 1 reached"));
        // A span admitted just before the cut whose timestamp (tracing-chrome's
        // clock) is later than the cut's (ours): the mark is not before it.
        let notes = Notes::new("kbxscope".into(), 1);
        cut_at(&notes, 2500);
        let events = rewrite(INPUT, notes);
        let mark = events.iter().find(|e| e["tid"] == NOTES_TID && e["ph"] == "B").expect("marked");
        assert_eq!(mark["ts"], 4.0, "at the last span begun");
    }
}
