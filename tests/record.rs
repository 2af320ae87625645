//! `kbxscope record`: its counts against `strace -f` on GnuPG's own
//! commands, per process and operation; PROGRAM's output and status passed
//! through unchanged; a recording of kbxscope equal to its own summary; the
//! one-line notes for what cannot be seen; the json summary's form; the
//! trace's complete events on the recorded process's track.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{bin, fixture, stderr, stdout, stop_gnupg_daemons};

#[path = "../crates/kbx-preload/tests/common/strace_log.rs"]
pub mod strace_log;
use strace_log::Counts;

/// A fresh GNUPGHOME holding gnupg-mixed.kbx as pubring.kbx (gpg has made
/// its trustdb and settled the keybox); its daemons are stopped on drop.
struct Home(tempfile::TempDir);

impl Home {
    fn new() -> Home {
        let d = tempfile::tempdir().expect("temp dir");
        std::fs::copy(fixture("gnupg-mixed.kbx"), d.path().join("pubring.kbx")).unwrap();
        let h = Home(d);
        for _ in 0..2 {
            Command::new("gpg").args(["--homedir", h.path(), "--batch", "-k"]).output().expect("run gpg");
        }
        h
    }

    fn path(&self) -> &str {
        self.0.path().to_str().unwrap()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        stop_gnupg_daemons(self.0.path());
    }
}

/// `kbxscope [global…] record -- PROGRAM ARGS…`.
fn record(global: &[&str], program: &str, args: &[&str]) -> Output {
    bin().args(global).args(["record", "--", program]).args(args).output().expect("run kbxscope record")
}

/// `record --watch pubring.kbx`: the keybox alone, as the strace
/// comparisons count it (not the maintenance pass's temporary copy and
/// lock file, which record watches by default).
fn record_keybox(global: &[&str], program: &str, args: &[&str]) -> Output {
    bin()
        .args(global)
        .args(["record", "--watch", "pubring.kbx", "--", program])
        .args(args)
        .output()
        .expect("run kbxscope record")
}

/// The record summary: the one JSON line on stderr with `processes`.
fn summary(o: &Output) -> serde_json::Value {
    summary_in(&stderr(o))
}

/// The record summary in `err`: its one JSON line with `processes`.
pub fn summary_in(err: &str) -> serde_json::Value {
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(lines.len(), 1, "one JSON line: {err}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON");
    assert!(v["events"].is_object() && v["processes"].is_array(), "{v}");
    v
}

/// The non-zero events of one summary object (`total` left out).
pub fn counts(v: &serde_json::Value) -> Counts {
    v["events"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, n)| *k != "total" && n.as_u64() != Some(0))
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
        .collect()
}

/// Per process (sorted, pids dropped), the non-zero events of the summary.
fn recorded_counts(v: &serde_json::Value) -> Vec<Counts> {
    let mut out: Vec<Counts> =
        v["processes"].as_array().unwrap().iter().map(counts).filter(|c| !c.is_empty()).collect();
    out.sort();
    out
}

/// strace's system call as record's operation name.
pub fn strace_op(sys: &str, args: &str) -> Option<&'static str> {
    Some(match sys {
        "open" | "openat" | "creat" => "open",
        "close" => "close",
        "read" | "pread64" | "readv" | "preadv" | "preadv2" => "read",
        "write" | "pwrite64" | "writev" => "write",
        "lseek" => "seek",
        "newfstatat" | "fstat" | "stat" | "lstat" | "statx" => "stat",
        "access" | "faccessat" | "faccessat2" => "access",
        "mmap" => "mmap",
        "dup" | "dup2" | "dup3" => "dup",
        "fcntl" if args.contains("F_DUPFD") => "dup",
        "ftruncate" => "truncate",
        "fsync" | "fdatasync" => "sync",
        _ => return None,
    })
}

/// `strace -f` of PROGRAM ARGS: per process (sorted), the calls on pubring.kbx.
fn strace_counts(program: &str, args: &[&str]) -> Vec<Counts> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let o = Command::new("strace")
        .args(["-f", "-y", "-qq", "-e", "trace=%file,%desc,%process", "-o", log.to_str().unwrap(), program])
        .args(args)
        .output()
        .expect("run strace");
    assert!(log.exists(), "strace: {}", stderr(&o));
    let text = std::fs::read_to_string(&log).unwrap();
    strace_log::count(&text, "pubring.kbx", strace_op)
}

fn compare_with_strace(program: &str, args: &[&str], start_agent: bool) {
    let home = Home::new();
    let mut full = vec!["--homedir", home.path(), "--batch"];
    full.extend_from_slice(args);
    if start_agent {
        // strace -f would wait for the agent gpgsm starts: start it first
        // (it does not touch the keybox), which record then notes.
        let o = Command::new("gpg-connect-agent").args(["--homedir", home.path(), "/bye"]).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = record_keybox(&["--io-summary=json"], program, &full);
    let ours = recorded_counts(&summary(&o));
    if start_agent {
        let err = stderr(&o);
        let said = |l: &&str| l.contains("gpg-agent") && l.contains("was already running");
        assert_eq!(err.lines().filter(said).count(), 1, "{err}");
    }
    let theirs = strace_counts(program, &full);
    eprintln!("record: {ours:?}\nstrace: {theirs:?}");
    assert!(!ours.is_empty() && ours.iter().any(|c| c.get("read").copied().unwrap_or(0) > 10), "{ours:?}");
    assert_eq!(ours, theirs, "{program} {args:?}: record and strace -f differ");
}

fn gpg_k_equals_strace() {
    compare_with_strace("gpg", &["-k"], false);
}

fn gpg_list_sigs_equals_strace() {
    compare_with_strace("gpg", &["--list-sigs"], false);
}

fn gpg_check_sigs_equals_strace() {
    compare_with_strace("gpg", &["--check-sigs"], false);
}

fn gpgsm_with_validation_equals_strace() {
    compare_with_strace("gpgsm", &["-k", "--with-validation", "--disable-dirmngr"], true);
}

/// stdout, stderr and the status with and without record, for a command
/// that succeeds, one that fails (exit 2) and one a signal ends.
fn output_and_status_pass_through() {
    let home = Home::new();
    let h = home.path();
    let cases: [(&str, Vec<&str>); 3] = [
        ("gpg", vec!["--homedir", h, "--batch", "--check-sigs"]),
        ("gpg", vec!["--homedir", h, "--batch", "--list-keys", "nobody@nowhere.invalid"]),
        ("sh", vec!["-c", "echo out; echo err >&2; kill -TERM $$"]),
    ];
    for (program, args) in cases {
        let plain = Command::new(program).args(&args).output().unwrap();
        let rec = record(&[], program, &args);
        assert_eq!(stdout(&plain), stdout(&rec), "{program} {args:?}: stdout");
        assert_eq!(stderr(&plain), stderr(&rec), "{program} {args:?}: stderr");
        use std::os::unix::process::ExitStatusExt;
        let want = plain.status.code().unwrap_or_else(|| 128 + plain.status.signal().unwrap());
        assert_eq!(rec.status.code(), Some(want), "{program} {args:?}: status");
    }
    let failed =
        Command::new("gpg").args(["--homedir", h, "--batch", "--list-keys", "nobody@nowhere.invalid"]).status();
    assert_eq!(failed.unwrap().code(), Some(2), "gpg's status for a missing key");
}

/// A recording of `kbxscope --io-summary=json list --check-sigs` counts
/// what kbxscope's own summary counts on the keybox (its stat is statx on
/// the open fd); the files gpg's start writes beside it are kbxscope's
/// private copies, apart.
fn record_of_kbxscope_equals_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
    let me = env!("CARGO_BIN_EXE_kbxscope");
    let o = record_keybox(
        &["--io-summary=json"],
        me,
        &["--io-summary=json", "list", "--check-sigs", kbx.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let inner: serde_json::Value =
        serde_json::from_str(err.lines().find(|l| l.starts_with("{\"buffer_size\":65536")).expect("inner summary"))
            .unwrap();
    let outer: serde_json::Value =
        serde_json::from_str(err.lines().find(|l| l.contains("\"processes\"")).expect("record summary")).unwrap();
    let procs = outer["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 1, "{outer}");
    assert_eq!(procs[0]["program"], "kbxscope");
    let keybox = crate::common::file_events(&inner, &kbx);
    assert_eq!(procs[0]["events"], keybox, "per operation");
    assert_eq!(outer["events"], keybox, "the total");
    let row = inner["files"].as_array().unwrap().iter().find(|r| r["path"] == kbx.to_str().unwrap()).unwrap();
    assert_eq!(procs[0]["bytes_read"], row["bytes_read"]);
    assert_eq!(procs[0]["calls"]["statx"], keybox["stat"], "std's fstat is statx");
}

/// Where eBPF is not allowed (setpriv drops every capability), a
/// statically linked program runs, and record says in one line that it saw
/// nothing instead of printing zeros (`tests/attach.rs` records one from
/// the kernel).
fn static_program_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.c");
    std::fs::write(&src, "#include <stdio.h>\nint main(void){puts(\"static\");return 3;}\n").unwrap();
    let exe = dir.path().join("s");
    let st = Command::new("cc").args(["-static", "-O", "-o"]).arg(&exe).arg(&src).status().unwrap();
    if !st.success() {
        crate::common::skip_part("record::static_program_is_named", "cc -static failed (no static libc)");
        return;
    }
    let Some(setpriv) = crate::common::tool("setpriv", "record::static_program_is_named") else { return };
    let o = Command::new(setpriv)
        .args(["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", env!("CARGO_BIN_EXE_kbxscope")])
        .args(["--io-summary=json", "record", "--", exe.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "static\n");
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    assert_eq!(err.lines().filter(|l| l.contains("is statically linked: nothing can be recorded")).count(), 1, "{err}");
    assert!(!err.contains('{'), "no summary of zeros: {err}");
}

/// The text summary has a table per process and a total; the json one is
/// one line (checked by [`summary`]).
fn summaries_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
    let o = record(&["--io-summary"], "cat", &[kbx.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(o.stdout, std::fs::read(&kbx).unwrap(), "cat's output passes through");
    let err = stderr(&o);
    assert!(err.contains("record: cat (pid "), "{err}");
    assert!(err.contains("record: total over 1 process"), "{err}");
    let o = record(&["--io-summary=json"], "cat", &[kbx.to_str().unwrap()]);
    let v = summary(&o);
    assert_eq!(v["processes"][0]["program"], "cat");
    assert_eq!(v["events"]["open"], 1);
    assert_eq!(v["bytes_read"], std::fs::metadata(&kbx).unwrap().len());
}

/// `--trace-out T --trace-level event`: the recorded calls are complete
/// events on the recorded process's track, which is named.
fn trace_has_the_recorded_calls() {
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
    let trace: PathBuf = dir.path().join("t.json");
    let me = env!("CARGO_BIN_EXE_kbxscope");
    let o = record(
        &["--io-summary=json", "--trace-out", trace.to_str().unwrap(), "--trace-level", "event"],
        me,
        &["stats", kbx.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v = summary(&o);
    let pid = v["processes"][0]["pid"].as_u64().unwrap();
    let events: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(Path::new(&trace)).unwrap()).unwrap();
    let x: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X" && e["pid"] == pid).collect();
    assert_eq!(x.len() as u64, v["events"]["total"].as_u64().unwrap(), "one complete event per call");
    assert!(x.iter().all(|e| e["dur"].as_f64().is_some() && e["ts"].as_f64().is_some_and(|t| t >= 0.0)));
    assert!(x.iter().any(|e| e["name"] == "read" && e["args"]["bytes"].as_u64().is_some()));
    assert!(events.iter().any(|e| e["pid"] == pid && e["name"] == "process_name"), "the track is named");
}

/// record killed while PROGRAM runs (SIGTERM, then SIGKILL): PROGRAM is
/// not signalled and finishes normally with all its output, its watched
/// calls still going through the hooks. After SIGTERM record says in one
/// line what it had counted and leaves nothing in `$TMPDIR`; SIGKILL can
/// only leave the record directory. Synchronised by PROGRAM's output and
/// its stdin, not by time.
fn collector_killed_mid_run() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
    let size = std::fs::metadata(&kbx).unwrap().len();
    // Reads the keybox, says so, waits for a line, reads it again, exits 3.
    let script = r#"cat "$0" | wc -c; read line; cat "$0" | wc -c; echo "got $line"; exit 3"#;
    for signal in ["TERM", "KILL"] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = bin()
            .args(["--io-summary=json", "record", "--", "sh", "-c", script])
            .arg(&kbx)
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kbxscope record");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        assert_eq!(first.trim(), size.to_string(), "the first read");
        let mut stdin = child.stdin.take().unwrap();
        Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        // PROGRAM goes on: it still reads stdin and the keybox (and holds
        // record's stderr until it exits).
        stdin.write_all(b"more\n").unwrap();
        drop(stdin);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(rest, format!("{size}\ngot more\n"), "{signal}: PROGRAM finished normally");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        if signal == "TERM" {
            assert_eq!(status.code(), Some(143), "{err}");
            let line: Vec<&str> =
                err.lines().filter(|l| l.starts_with("kbxscope: record: SIGTERM: PROGRAM (pid ")).collect();
            assert_eq!(line.len(), 1, "one line: {err}");
            let calls: u64 = line[0].split("; ").nth(1).and_then(|c| c.split(' ').next()).unwrap().parse().unwrap();
            assert!(calls >= 3, "cat's open, reads and close were counted: {err}");
            assert!(!err.contains('{'), "no summary: {err}");
            assert!(left.is_empty(), "nothing left behind: {left:?}");
        } else {
            assert_eq!(status.signal(), Some(9));
            assert!(left.len() <= 1, "at most the record directory: {left:?}");
        }
    }
}

/// `record --stacks` on a program with a symbol table: each operation's
/// stacks run from `main` through the function that made the call, and
/// their weights are the calls the summary counts (every call sampled), or
/// about that with `--stack-every`.
fn stacks_name_the_callers() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("p.c");
    std::fs::write(
        &src,
        r#"#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
__attribute__((noinline)) long read_keybox_in_chunks(const char *p) {
    char b[512]; long n = 0, r; int fd = open(p, O_RDONLY);
    while ((r = read(fd, b, sizeof b)) > 0) n += r;
    close(fd); return n;
}
__attribute__((noinline)) long look_at_keybox(const char *p) {
    struct stat st; return stat(p, &st) == 0 ? (long)st.st_size : -1;
}
int main(int argc, char **argv) {
    long a = read_keybox_in_chunks(argv[1]); long b = look_at_keybox(argv[1]);
    printf("%ld %ld\n", a, b); return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.path().join("p");
    assert!(Command::new("cc").args(["-O1", "-o"]).arg(&exe).arg(&src).status().unwrap().success());
    let kbx = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
    let size = std::fs::metadata(&kbx).unwrap().len();
    let out = dir.path().join("stacks.json");
    let (e, k, o) = (exe.to_str().unwrap(), kbx.to_str().unwrap(), out.to_str().unwrap());
    let r = bin().args(["--io-summary=json", "record", "--stacks", o, "--", e, k]).output().unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(stdout(&r), format!("{size} {size}\n"), "the program's output passes through");
    let reads = summary(&r)["events"]["read"].as_u64().unwrap();
    assert_eq!(reads, size.div_ceil(512) + 1, "the summary counts every read");
    let note = stderr(&r);
    assert!(note.lines().any(|l| l.starts_with("kbxscope: record: stacks: ") && l.contains(o)), "{note}");

    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(doc["$schema"], "https://www.speedscope.app/file-format-schema.json");
    let frames: Vec<&str> =
        doc["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    let events = &doc["profiles"][0];
    assert!(events["name"].as_str().unwrap().starts_with("p (pid "), "{}", events["name"]);
    let mut by_leaf: HashMap<&str, (u64, Vec<Vec<&str>>)> = HashMap::new();
    for (s, w) in events["samples"].as_array().unwrap().iter().zip(events["weights"].as_array().unwrap()) {
        let names: Vec<&str> = s.as_array().unwrap().iter().map(|i| frames[i.as_u64().unwrap() as usize]).collect();
        let e = by_leaf.entry(names[names.len() - 1]).or_default();
        e.0 += w.as_u64().unwrap();
        e.1.push(names);
    }
    let tail = |leaf: &str| -> Vec<Vec<&str>> {
        by_leaf[leaf].1.iter().map(|s| s[s.len().saturating_sub(3)..].to_vec()).collect()
    };
    assert_eq!(by_leaf["read"].0, reads, "one sample per read");
    assert_eq!(by_leaf["open"].0, 1);
    assert_eq!(by_leaf["stat"].0, 1);
    assert_eq!(tail("read"), [["main", "read_keybox_in_chunks", "read"]], "{by_leaf:?}");
    assert_eq!(tail("open"), [["main", "read_keybox_in_chunks", "open"]]);
    assert_eq!(tail("stat"), [["main", "look_at_keybox", "stat"]]);
    let bytes: u64 = doc["profiles"][1]["weights"].as_array().unwrap().iter().map(|w| w.as_u64().unwrap()).sum();
    assert_eq!(bytes, size, "the bytes profile");

    // One call in 4: about a quarter of the samples, weights ×4.
    let r =
        bin().args(["--io-summary=json", "record", "--stacks", o, "--stack-every", "4", "--", e, k]).output().unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let total: u64 = doc["profiles"][0]["weights"].as_array().unwrap().iter().map(|w| w.as_u64().unwrap()).sum();
    let calls: u64 =
        summary(&r)["processes"][0]["calls"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(total, calls.div_ceil(4) * 4, "samples ×4");
}

crate::tests![
    gpg_k_equals_strace needs ["gpg", "strace"],
    gpg_list_sigs_equals_strace needs ["gpg", "strace"],
    gpg_check_sigs_equals_strace needs ["gpg", "strace"],
    gpgsm_with_validation_equals_strace needs ["gpg", "gpgsm", "gpg-connect-agent", "gpgconf", "strace"],
    output_and_status_pass_through needs ["gpg", "gpgconf"],
    record_of_kbxscope_equals_its_summary,
    static_program_is_named needs ["cc"],
    summaries_text_and_json needs ["cat"],
    collector_killed_mid_run needs ["sh", "cat", "wc", "kill"],
    stacks_name_the_callers needs ["cc"],
    trace_has_the_recorded_calls,
];
