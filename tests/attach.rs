//! `record`'s kernel event source (eBPF) against `strace`: a process that
//! opened the keybox before the attach (`record --pid`, stopped with
//! Ctrl-C and with SIGKILL, every program and link gone after), a
//! statically linked program, gpg-agent already running (GnuPG 2.2), and
//! keyboxd already running (GnuPG 2.4.7 in the Debian 13 chroot, where
//! present); an unprivileged run gets one line and the preload path. Each
//! comparison is against `strace -f -y -p` (or `-f`) on an identical second
//! run. Synchronised by the processes' own output, never by time.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use crate::common::{bin, fixture, stderr, stdout, tool, under_ci, Killed};

use crate::record::strace_log::{self, Counts};
use crate::record::{counts, summary_in as summary};

/// Whether this machine lets kbxscope load BPF programs; if not, the test
/// says SKIPPED (and fails under CI).
fn bpf_allowed(test: &str) -> bool {
    let o = bin().args(["record", "--pid", &std::process::id().to_string(), "--for", "0s"]).output().unwrap();
    if o.status.success() {
        return true;
    }
    let why = stderr(&o);
    assert!(!under_ci(), "{test}: eBPF is required under CI=true: {why}");
    eprintln!("SKIPPED {test}: {}", why.trim());
    false
}

/// strace's system call as record's operation name, with the calls the
/// kernel source counts beside the interposer's: fcntl's locks, renames,
/// unlinks, links and pwritev.
fn strace_op(sys: &str, args: &str) -> Option<&'static str> {
    Some(match sys {
        "fcntl" if args.contains("LK") && !args.contains("F_DUPFD") => "lock",
        "pwritev" => "write",
        "rename" | "renameat" | "renameat2" => "rename",
        "unlink" | "unlinkat" => "unlink",
        "link" | "linkat" => "link",
        // One call, named by its first descriptor (-y): a close when that
        // is the one watched descriptor in the range.
        "close_range" => "close",
        "openat2" => "open",
        _ => return crate::record::strace_op(sys, args),
    })
}

/// Per process of the summary (by pid), the counts on files ending with `name`.
fn per_process(v: &serde_json::Value, name: &str) -> BTreeMap<u64, Counts> {
    let mut out = BTreeMap::new();
    for p in v["processes"].as_array().unwrap() {
        let mut c = Counts::new();
        for f in p["files"].as_array().unwrap().iter().filter(|f| f["path"].as_str().unwrap().ends_with(name)) {
            for (k, n) in counts(f) {
                *c.entry(k).or_default() += n;
            }
        }
        if !c.is_empty() {
            out.insert(p["pid"].as_u64().unwrap(), c);
        }
    }
    out
}

/// A C program that opens the keybox, says `ready`, then for each line on
/// stdin reads it the ways GnuPG does (and dup, stat, access, a second
/// open) and says `done`.
const WORKER: &str = r#"#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char b[8192], line[64]; struct stat st; long r;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) return 1;
    printf("ready\n"); fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        lseek(fd, 0, SEEK_SET);
        while ((r = read(fd, b, sizeof b)) > 0) {}
        fstat(fd, &st);
        r = pread(fd, b, 100, 4096);
        int d = dup(fd); close(d);
        int g = open(argv[1], O_RDONLY); r = read(g, b, 512); close(g);
        stat(argv[1], &st); access(argv[1], R_OK);
        printf("done\n"); fflush(stdout);
    }
    return 0;
}
"#;

/// Compile `source` (with `flags`) into `dir`; `None` (said) if cc cannot.
fn compile(dir: &Path, source: &str, flags: &[&str], test: &str) -> Option<PathBuf> {
    let src = dir.join("p.c");
    std::fs::write(&src, source).unwrap();
    let exe = dir.join("p");
    let o = Command::new("cc").args(flags).args(["-O", "-o"]).arg(&exe).arg(&src).output().unwrap();
    if !o.status.success() {
        assert!(!under_ci(), "{test}: cc {flags:?} failed: {}", stderr(&o));
        crate::common::skip_part(test, &format!("cc {flags:?} failed"));
        return None;
    }
    Some(exe)
}

/// A running worker: its stdin and stdout.
struct Worker {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Worker {
    fn start(exe: &Path, kbx: &Path) -> Worker {
        let mut child =
            Command::new(exe).arg(kbx).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("run worker");
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut w = Worker { child, out };
        w.expect("ready");
        w
    }

    fn expect(&mut self, what: &str) {
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), what);
    }

    /// One round of the workload.
    fn round(&mut self) {
        self.child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
        self.expect("done");
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Start `cmd` with stderr piped and read its stderr until a line
/// containing `ready`; the child (killed if the test fails) and the lines
/// read.
fn start_until(mut cmd: Command, ready: &str) -> (Killed, BufReader<std::process::ChildStderr>, String) {
    let mut child = Killed(cmd.stderr(Stdio::piped()).spawn().expect("start"));
    let mut err = BufReader::new(child.0.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            panic!("ended before '{ready}': {seen}");
        }
        seen.push_str(&line);
        if line.contains(ready) {
            return (child, err, seen);
        }
    }
}

/// The BPF programs and links process `pid` holds, from its descriptors'
/// fdinfo (`prog_id`, `link_id`).
fn bpf_objects_of(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fdinfo")).unwrap().flatten() {
        let info = std::fs::read_to_string(fd.path()).unwrap_or_default();
        for (key, kind) in [("prog_id:", "prog"), ("link_id:", "link")] {
            if let Some(id) = info.lines().find_map(|l| l.strip_prefix(key)) {
                out.push(format!("{kind} {}", id.trim()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether BPF object `what` ("prog ID" or "link ID") still exists.
fn bpf_object_exists(what: &str) -> bool {
    let (kind, id) = what.split_once(' ').unwrap();
    Command::new("bpftool").args([kind, "show", "id", id]).output().unwrap().status.success()
}

/// Whether every object of `held` is gone. The kernel frees a program or
/// link after an RCU grace period once its last descriptor is closed, and
/// says so by no event: asked again every 20 ms, for at most 10 s.
fn all_gone(held: &[String]) -> bool {
    for _ in 0..500 {
        if held.iter().all(|h| !bpf_object_exists(h)) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// `strace -f -y -p PID` around `during`; the log's counts on `name`.
fn strace_attached(pid: u32, name: &str, during: impl FnOnce()) -> Vec<Counts> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-y", "-o", log.to_str().unwrap(), "-p", &pid.to_string()]);
    // Its stderr stays open: it says "attached" again for every new thread.
    let (mut strace, _stderr, _) = start_until(cmd, "attached");
    during();
    Command::new("kill").args(["-INT", &strace.0.id().to_string()]).status().unwrap();
    strace.0.wait().unwrap();
    strace_log::count(&std::fs::read_to_string(&log).unwrap(), name, strace_op)
}

/// `source` compiled in a new directory and started as a [`Worker`] on a
/// copy of the mixed fixture there (`None`, said, if cc fails).
fn worker_beside_a_keybox(source: &str, test: &str) -> Option<(tempfile::TempDir, Worker)> {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), source, &[], test)?;
    let kbx = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
    let w = Worker::start(&exe, &kbx);
    Some((dir, w))
}

/// One round of `w` under `record --io-summary=json --pid`, stopped with
/// Ctrl-C once it is made: record's stderr after its "attached" line, and
/// the BPF programs and links it held meanwhile.
fn recorded_round(w: &mut Worker) -> (String, Vec<String>) {
    let mut cmd = bin();
    cmd.args(["--io-summary=json", "record", "--pid", &w.child.id().to_string()]);
    let (mut rec, mut err, _) = start_until(cmd, "attached to 1 process");
    let held = bpf_objects_of(rec.0.id());
    w.round();
    Command::new("kill").args(["-INT", &rec.0.id().to_string()]).status().unwrap();
    let status = rec.0.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(status.success(), "{rest}");
    (rest, held)
}

/// `record --pid` on a process that opened the keybox before the attach:
/// per operation the counts of one round equal `strace -p`'s on the next;
/// stopped with Ctrl-C (a report) and with SIGKILL, the programs and links
/// it held are gone.
fn record_pid_equals_strace_and_detaches() {
    if !bpf_allowed("attach::record_pid_equals_strace_and_detaches") {
        return;
    }
    let Some((_dir, mut w)) = worker_beside_a_keybox(WORKER, "attach::record_pid_equals_strace_and_detaches") else {
        return;
    };
    let pid = w.child.id();
    let (rest, held) = recorded_round(&mut w);
    assert!(held.len() >= 8, "four programs and four links: {held:?}");
    assert!(rest.contains("SIGINT: stopped; every probe detached"), "{rest}");
    let ours = per_process(&summary(&rest), "pubring.kbx");
    assert!(all_gone(&held), "detached after Ctrl-C: {held:?}");

    let theirs = strace_attached(pid, "pubring.kbx", || w.round());
    eprintln!("record --pid: {ours:?}\nstrace -p: {theirs:?}");
    assert_eq!(ours.keys().copied().collect::<Vec<_>>(), [pid as u64]);
    assert_eq!(ours.into_values().collect::<Vec<_>>(), theirs, "record --pid and strace -p differ");

    // SIGKILL: the kernel drops the programs and links with the process.
    let mut cmd = bin();
    cmd.args(["record", "--pid", &pid.to_string()]);
    let (mut rec, _stderr, _) = start_until(cmd, "attached to 1 process");
    let held = bpf_objects_of(rec.0.id());
    assert!(!held.is_empty());
    rec.0.kill().unwrap();
    rec.0.wait().unwrap();
    assert!(all_gone(&held), "detached after SIGKILL: {held:?}");
    w.round();
}

/// [`WORKER`] making each round in a child it forks, through the
/// descriptors the child inherits; the parent waits for it.
fn forking_worker() -> String {
    let forked = WORKER
        .replace("#include <unistd.h>", "#include <unistd.h>\n#include <sys/wait.h>")
        .replace(
            "        lseek(fd, 0, SEEK_SET);",
            "        pid_t c = fork();\n        if (c > 0) { waitpid(c, 0, 0); printf(\"done\\n\"); fflush(stdout); continue; }\n        lseek(fd, 0, SEEK_SET);",
        )
        .replace("        printf(\"done\\n\"); fflush(stdout);\n    }", "        _exit(0);\n    }");
    assert!(forked.contains("_exit(0)") && forked.contains("waitpid"), "{forked}");
    forked
}

/// `record --pid` follows the children the process forks after the attach,
/// with the descriptors they inherit: a round made by a child equals
/// `strace -f -p`'s on the next round (the parent makes no call on the
/// keybox).
fn record_pid_follows_children() {
    if !bpf_allowed("attach::record_pid_follows_children") {
        return;
    }
    let Some((_dir, mut w)) = worker_beside_a_keybox(&forking_worker(), "attach::record_pid_follows_children") else {
        return;
    };
    let pid = w.child.id();
    let (rest, _) = recorded_round(&mut w);
    let ours = per_process(&summary(&rest), "pubring.kbx");
    let theirs = strace_attached(pid, "pubring.kbx", || w.round());
    eprintln!("record --pid: {ours:?}\nstrace -f -p: {theirs:?}");
    assert!(!ours.contains_key(&u64::from(pid)) && ours.len() == 1, "the child's calls, not the parent's: {ours:?}");
    assert_eq!(ours.into_values().collect::<Vec<_>>(), theirs, "record --pid and strace -f -p differ");
}

/// `source` built statically in a new directory beside a copy of the mixed
/// fixture named `pubring.kbx`: the directory, the program and the keybox
/// (`None`, said, if cc cannot link statically).
fn static_beside_a_keybox(source: &str, test: &str) -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), source, &["-static"], test)?;
    let kbx = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
    Some((dir, exe, kbx))
}

/// `strace -f`'s counts on `pubring.kbx` of `exe` run on `kbx`, per process.
fn straced(dir: &Path, exe: &str, kbx: &str) -> Vec<Counts> {
    let log = dir.join("log");
    let s = Command::new("strace").args(["-f", "-y", "-qq", "-o", log.to_str().unwrap(), exe, kbx]).output().unwrap();
    assert!(s.status.success(), "{}", stderr(&s));
    strace_log::count(&std::fs::read_to_string(&log).unwrap(), "pubring.kbx", strace_op)
}

/// A statically linked program (which the interposer cannot reach) is
/// recorded from the kernel: per operation equal to `strace -f`, and with
/// `--trace-level event` one span per call (the ring buffer's events).
fn static_program_equals_strace() {
    if !bpf_allowed("attach::static_program_equals_strace") {
        return;
    }
    let one_round = WORKER.replace("while (fgets(line, sizeof line, stdin))", "for (int once = 0; once < 1; once++)");
    let Some((dir, exe, kbx)) = static_beside_a_keybox(&one_round, "attach::static_program_equals_strace") else {
        return;
    };
    let (e, k) = (exe.to_str().unwrap(), kbx.to_str().unwrap());
    let trace = dir.path().join("t.json");
    let t = trace.to_str().unwrap();
    let o = bin()
        .args(["--io-summary=json", "--trace-out", t, "--trace-level", "event", "record", "--", e, k])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "ready\ndone\n", "the program's output passes through");
    let err = stderr(&o);
    assert!(err.contains("is statically linked: recorded from the kernel (eBPF)"), "{err}");
    let v = summary(&err);
    assert_eq!(v["processes"][0]["program"], "p", "named from its exec");
    let ours: Vec<Counts> = per_process(&v, "pubring.kbx").into_values().collect();
    // The trace has every call, from the kernel's ring buffer.
    let events: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let calls = events.iter().filter(|e| e["ph"] == "X" && e["cat"] == "kbx::event").count();
    assert_eq!(calls as u64, v["events"]["total"].as_u64().unwrap(), "one span per call");

    let theirs = straced(dir.path(), e, k);
    eprintln!("record: {ours:?}\nstrace: {theirs:?}");
    assert_eq!(ours, theirs, "record of a static program and strace -f differ");
}

/// A program that reads its keybox one byte at a time, 50,000 times.
const ONE_BYTE_READS: &str = r#"#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char b; int fd = open(argv[1], O_RDONLY);
    if (fd < 0) return 1;
    for (long i = 0; i < 50000; i++) {
        if ((i & 4095) == 0) lseek(fd, 0, SEEK_SET);
        if (read(fd, &b, 1) != 1) return 1;
    }
    return close(fd);
}
"#;

/// A ring buffer too small for a trace's per-call events (one page, 50,000
/// reads as fast as a program can make them, the reader of the ring on the
/// same CPU): what it had no room for is
/// counted, and with the spans it had room for makes every call; the
/// counts are complete all the same (equal to strace's), and one line
/// says so.
fn a_full_ring_buffer_is_counted() {
    if !bpf_allowed("attach::a_full_ring_buffer_is_counted") {
        return;
    }
    let Some((dir, exe, kbx)) = static_beside_a_keybox(ONE_BYTE_READS, "attach::a_full_ring_buffer_is_counted") else {
        return;
    };
    let (e, k) = (exe.to_str().unwrap(), kbx.to_str().unwrap());
    let trace = dir.path().join("t.json");
    let t = trace.to_str().unwrap();
    // On one CPU, so that the reader of the ring and the program take turns.
    let o = Command::new("taskset")
        .args(["-c", "0"])
        .arg(env!("CARGO_BIN_EXE_kbxscope"))
        .env("KBXSCOPE_ATTACH_RING_KIB", "4")
        .args(["--io-summary=json", "--trace-out", t, "--trace-level", "event", "--trace-max-events", "1000000"])
        .args(["record", "--", e, k])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let v = summary(&err);
    let total = v["events"]["total"].as_u64().unwrap();
    assert_eq!(v["events"]["read"], 50_000, "{v}");
    let events: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let spans = events.iter().filter(|e| e["ph"] == "X" && e["cat"] == "kbx::event").count() as u64;
    let lost = v["lost"]["ring"].as_u64().unwrap_or(0);
    eprintln!("{total} calls: {spans} spans, {lost} events the ring had no room for");
    assert_eq!(spans + lost, total, "every call is a span or counted as lost: {v}");
    assert!(lost > 0, "one page cannot hold 50,000 events read as they come: {v}");
    assert!(err.contains(&format!("lost: {lost} per-call events the kernel's ring buffer had no room for")), "{err}");

    let theirs = straced(dir.path(), e, k);
    let ours: Vec<Counts> = per_process(&v, "pubring.kbx").into_values().collect();
    assert_eq!(ours, theirs, "the counts do not depend on the ring");
}

/// A program that opens its keybox and forks: the child reads through the
/// descriptor it inherited, closes it with close_range, reads the closed
/// number (EBADF) and opens another file under it; the parent reads once
/// more after the child, closes, and opens the keybox again with openat2
/// (which glibc has no wrapper for, so only the kernel sees it).
const FORKS: &str = r#"#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char b[512]; int st;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) return 1;
    pid_t child = fork();
    if (child == 0) {
        read(fd, b, sizeof b); lseek(fd, 0, SEEK_SET); read(fd, b, sizeof b);
        if (close_range(fd, ~0U, 0)) _exit(2);
        if (read(fd, b, 1) != -1) _exit(3);
        int other = open("/dev/null", O_RDONLY);
        if (other != fd) _exit(4);
        read(other, b, 1); close(other);
        _exit(0);
    }
    waitpid(child, &st, 0);
    read(fd, b, sizeof b);
    close(fd);
    struct open_how how = { .flags = O_RDONLY };
    int again = syscall(SYS_openat2, AT_FDCWD, argv[1], &how, sizeof how);
    if (again < 0) return 5;
    read(again, b, sizeof b); close(again);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
"#;

/// A fork's child holds its parent's descriptors: from the kernel, the
/// child's calls on the inherited keybox descriptor are counted, its
/// close_range closes it, and the number reused for another file is not
/// the keybox's; openat2 opens it; per process equal to `strace -f`.
fn a_fork_inherits_descriptors() {
    if !bpf_allowed("attach::a_fork_inherits_descriptors") {
        return;
    }
    let Some((dir, exe, kbx)) = static_beside_a_keybox(FORKS, "attach::a_fork_inherits_descriptors") else {
        return;
    };
    let (e, k) = (exe.to_str().unwrap(), kbx.to_str().unwrap());
    let o = bin().args(["--io-summary=json", "record", "--", e, k]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v = summary(&stderr(&o));
    let mut ours: Vec<Counts> = per_process(&v, "pubring.kbx").into_values().collect();
    ours.sort();
    let mut theirs = straced(dir.path(), e, k);
    // strace 6.1 does not name close_range's descriptors (-y): its line is
    // the child's close of the keybox descriptor the parent opened.
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    let opened = log.lines().find(|l| l.contains("pubring.kbx\", O_RDONLY)")).and_then(|l| l.rsplit("= ").next());
    let fd = opened.and_then(|r| r.split('<').next()).expect("strace names the open");
    let closed = format!("close_range({fd}, 4294967295, 0)");
    assert!(log.lines().any(|l| l.contains(&closed) && l.ends_with("= 0")), "{log}");
    assert_eq!(theirs.len(), 2, "strace sees both processes on the keybox");
    for child in theirs.iter_mut().filter(|c| !c.contains_key("open")) {
        *child.entry("close".to_string()).or_default() += 1;
    }
    theirs.sort();
    eprintln!("record: {ours:?}\nstrace: {theirs:?}");
    assert_eq!(ours, theirs, "per process, record from the kernel and strace -f differ");
}

/// Without CAP_BPF and CAP_PERFMON (setpriv drops every capability):
/// `record --pid` fails in one line; `record -- PROGRAM` says in one line
/// what is missing and records through the interposer as before.
fn unprivileged_gets_one_line_and_the_preload_path() {
    let Some(setpriv) = tool("setpriv", "attach::unprivileged_gets_one_line_and_the_preload_path") else { return };
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
    let drop_all = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"];
    let me = env!("CARGO_BIN_EXE_kbxscope");
    let o = Command::new(&setpriv)
        .args(drop_all)
        .args([me, "record", "--pid", &std::process::id().to_string(), "--for", "0s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("kbxscope: record: eBPF is not available: ") && err.contains("CAP_BPF"), "{err}");

    let o = Command::new(&setpriv)
        .args(drop_all)
        .args([me, "--io-summary=json", "record", "--name", "no-such-program", "--", "cat", kbx.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("eBPF is not available")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(notes[0].ends_with("recording without it"), "{err}");
    assert_eq!(summary(&err)["processes"][0]["program"], "cat", "the interposer recorded cat");
}

/// The threads of process `pid` now.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count()).unwrap_or(0)
}

/// A shell loop that returns once daemon `pid` is back to `idle` threads:
/// its thread for the last connection has done all it does (keyboxd
/// releases its database lock after the client has gone). Asked every
/// 10 ms: the kernel says it by no event.
fn until_idle(pid: u32, idle: usize) -> String {
    format!("while [ $(ls /proc/{pid}/task | wc -l) -gt {idle} ]; do sleep 0.01; done")
}

/// A GnuPG daemon's counts per operation on `name`: in `record`'s summary
/// of `gnupg` (run by `record -- sh -c 'GNUPG; wait until the daemon is
/// idle'`, the daemon's home in `GNUPGHOME`), and in `strace -f -y -p`'s
/// log of an identical second run.
fn daemon_against_strace(
    in_root: &dyn Fn(&[&str]) -> std::process::Output,
    me: &str,
    gnupg: &str,
    daemon: u32,
    name: &str,
) -> (Counts, Vec<Counts>, String) {
    let idle = threads(daemon);
    let script = format!("{gnupg} >/dev/null 2>&1; {}", until_idle(daemon, idle));
    let o = in_root(&[me, "--io-summary=json", "record", "--", "sh", "-c", &script]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let mut ours = per_process(&summary(&err), name);
    let ours = ours.remove(&(daemon as u64)).unwrap_or_default();
    let theirs = strace_attached(daemon, name, || {
        let o = in_root(&["sh", "-c", &script]);
        assert!(o.status.success(), "{}", stderr(&o));
    });
    (ours, theirs, err)
}

/// gpg-agent (GnuPG 2.2) started before `record -- gpg -K`: its calls on
/// the secret key files (`--watch '*.key'`) are recorded from the kernel
/// and equal `strace -p`'s on a second `gpg -K`.
fn running_gpg_agent_equals_strace() {
    if !bpf_allowed("attach::running_gpg_agent_equals_strace") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap();
    let gpg = |args: &[&str]| Command::new("gpg").args(["--homedir", h, "--batch"]).args(args).output().unwrap();
    let o = gpg(&["--passphrase", "", "--quick-gen-key", "attach@example.org", "ed25519", "sign"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Command::new("gpg-connect-agent").args(["--homedir", h, "/bye"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let agent = crate::common::daemon_pid(home.path(), "gpg-agent");
    gpg(&["-K"]);
    let run = |args: &[&str]| {
        let (program, rest) = args.split_first().unwrap();
        let mut c = Command::new(program);
        if *program == env!("CARGO_BIN_EXE_kbxscope") {
            // The key files, not the keybox.
            c.args(&rest[..2]).args(["--watch", "*.key"]).args(&rest[2..]);
        } else {
            c.args(rest);
        }
        c.env("GNUPGHOME", h).output().unwrap()
    };
    let (ours, theirs, err) =
        daemon_against_strace(&run, env!("CARGO_BIN_EXE_kbxscope"), "gpg --batch -K", agent, ".key");
    crate::common::stop_gnupg_daemons(home.path());
    assert!(err.contains(&format!("gpg-agent (pid {agent}) was already running")), "{err}");
    eprintln!("record: {ours:?}\nstrace -p: {theirs:?}");
    assert!(ours.get("read").copied().unwrap_or(0) > 0, "{ours:?}");
    assert_eq!(vec![ours], theirs, "gpg-agent: record and strace -p differ");
}

/// keyboxd (GnuPG 2.4.7, the Debian 13 chroot `KBXSCOPE_GNUPG24_CHROOT`,
/// optional) started before `record -- gpg --check-sigs` on a keyboxd
/// home, as systemd starts it: kbxscope run inside the chroot finds it
/// through its socket and records its reads of pubring.db, equal to
/// `strace -p` on an identical second run (both after a first that warmed
/// keyboxd's page cache).
fn running_keyboxd_equals_strace() {
    let Some(chroot) = std::env::var_os("KBXSCOPE_GNUPG24_CHROOT").map(PathBuf::from) else {
        eprintln!("SKIPPED running_keyboxd_equals_strace: KBXSCOPE_GNUPG24_CHROOT is not set (optional)");
        return;
    };
    if !bpf_allowed("attach::running_keyboxd_equals_strace") {
        return;
    }
    assert!(chroot.join("proc/self/stat").exists(), "{}/proc is not mounted", chroot.display());
    // The loader relocates against the kernel's BTF: /sys inside the chroot.
    if !chroot.join("sys/kernel/btf/vmlinux").exists() {
        let o = Command::new("mount").args(["-t", "sysfs", "sysfs"]).arg(chroot.join("sys")).output().unwrap();
        assert!(o.status.success(), "mount sysfs in the chroot: {}", stderr(&o));
    }
    let inner = format!("/tmp/kbxscope-attach-{}", std::process::id());
    let outer = chroot.join(inner.trim_start_matches('/'));
    let home = outer.join("home");
    std::fs::create_dir_all(home.join("public-keys.d")).unwrap();
    std::fs::copy(fixture("keyboxd/gnupg-mixed.db"), home.join("public-keys.d/pubring.db")).unwrap();
    std::fs::write(home.join("common.conf"), "use-keyboxd\n").unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_kbxscope"), outer.join("kbxscope")).unwrap();
    let h = format!("{inner}/home");
    let in_chroot =
        |args: &[&str]| Command::new("chroot").arg(&chroot).args(args).env("GNUPGHOME", &h).output().unwrap();
    let check_sigs = "gpg --batch --check-sigs";
    assert!(in_chroot(&["sh", "-c", check_sigs]).status.success(), "the first run starts keyboxd");
    let keyboxd = crate::common::daemon_pid(&home, "keyboxd");
    let me = format!("{inner}/kbxscope");
    let (ours, theirs, err) = daemon_against_strace(&in_chroot, &me, check_sigs, keyboxd, "pubring.db");
    in_chroot(&["gpgconf", "--kill", "all"]);
    std::fs::remove_dir_all(&outer).unwrap();
    assert!(err.contains(&format!("keyboxd (pid {keyboxd}) was already running")), "{err}");
    eprintln!("record: {ours:?}\nstrace -p: {theirs:?}");
    assert!(ours.get("read").copied().unwrap_or(0) > 100, "{ours:?}");
    assert_eq!(vec![ours], theirs, "keyboxd: record and strace -p differ");
}

crate::tests![
    record_pid_equals_strace_and_detaches needs ["cc", "strace", "bpftool", "kill"],
    static_program_equals_strace needs ["cc", "strace"],
    a_full_ring_buffer_is_counted needs ["cc", "strace", "taskset"],
    a_fork_inherits_descriptors needs ["cc", "strace"],
    record_pid_follows_children needs ["cc", "strace", "kill"],
    unprivileged_gets_one_line_and_the_preload_path needs ["cat"],
    running_gpg_agent_equals_strace needs ["gpg", "gpg-connect-agent", "gpgconf", "strace", "kill"],
    running_keyboxd_equals_strace needs ["chroot", "strace", "kill"],
];
