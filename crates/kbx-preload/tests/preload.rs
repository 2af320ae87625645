//! Integration tests: run real programs with the preloaded library and
//! compare the decoded records with what `strace -f` sees on the watched
//! file, per process and per operation, and the host's output with and
//! without the library.
//!
//! The library and the `kbxtest` workload are built by a nested
//! `cargo build --lib --examples` (once), so one `cargo test` is enough.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

#[path = "common/strace_log.rs"]
mod strace_log;
use strace_log::Counts;

const SYSCALL_OPS: &[&str] = &[
    "open",
    "close",
    "read",
    "pread",
    "readv",
    "preadv",
    "write",
    "pwrite",
    "writev",
    "lseek",
    "fstat",
    "stat",
    "statx",
    "mmap",
    "dup",
    "fcntl_dup",
    "ftruncate",
    "fsync",
    "fdatasync",
    "access",
];

fn target_dir() -> PathBuf {
    // target/<profile>/deps/preload-<hash>
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// (library, kbxtest) — built once.
fn artifacts() -> &'static (PathBuf, PathBuf) {
    static A: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    A.get_or_init(|| {
        let dir = target_dir();
        let release = dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--lib", "--examples", "--manifest-path"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", dir.parent().unwrap());
        if release {
            cmd.arg("--release");
        }
        let st = cmd.status().expect("run cargo build");
        assert!(st.success(), "cargo build --lib --examples failed");
        let lib = dir.join("libkbx_preload.so");
        let bin = dir.join("examples/kbxtest");
        assert!(lib.exists() && bin.exists(), "missing {lib:?} or {bin:?}");
        (lib, bin)
    })
}

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// Returns false (after printing SKIPPED) if a tool is missing; panics under CI=true.
fn require(tools: &[&str]) -> bool {
    for t in tools {
        if !have(t) {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{t} is required under CI=true");
            }
            eprintln!("SKIPPED: {t} not installed");
            return false;
        }
    }
    true
}

fn tmpdir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "kbx-preload-{}-{}-{}",
        tag,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fixture_copy(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gnupg-mixed.kbx");
    let dst = dir.join("pubring.kbx");
    std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy {src:?}: {e}"));
    dst
}

fn run(prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(prog);
    c.args(args).env_remove("LD_PRELOAD").env_remove("KBXSCOPE_RECORD").env_remove("KBXSCOPE_WATCH");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap_or_else(|e| panic!("run {prog:?}: {e}"))
}

fn run_preloaded(prog: &Path, args: &[&str], rec: &Path, extra: &[(&str, &str)]) -> Output {
    let lib = artifacts().0.to_str().unwrap().to_string();
    let mut env = vec![("LD_PRELOAD", lib.as_str()), ("KBXSCOPE_RECORD", rec.to_str().unwrap())];
    env.extend_from_slice(extra);
    run(prog, args, &env)
}

fn decode_dir(rec: &Path) -> Vec<kbx_record::Record> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(rec).unwrap().flatten() {
        let b = std::fs::read(e.path()).unwrap();
        v.push(kbx_record::decode(&b).unwrap_or_else(|err| panic!("{:?}: {err}", e.path())));
    }
    v
}

/// Per-pid syscall counts on files whose path ends with `name`.
fn record_counts(recs: &[kbx_record::Record], name: &str) -> Vec<Counts> {
    let mut by_pid: BTreeMap<u32, Counts> = BTreeMap::new();
    for r in recs {
        let c = by_pid.entry(r.pid).or_default();
        for f in r.files.iter().filter(|f| f.path.ends_with(name.as_bytes())) {
            for (op, s) in &f.ops {
                if SYSCALL_OPS.contains(&op.name()) {
                    *c.entry(op.name().to_string()).or_default() += s.count;
                }
            }
        }
    }
    let mut v: Vec<Counts> = by_pid.into_values().filter(|c| !c.is_empty()).collect();
    v.sort();
    v
}

/// Map an strace syscall line to our operation name.
fn strace_op(name: &str, args: &str) -> Option<&'static str> {
    Some(match name {
        "open" | "openat" | "creat" => "open",
        "close" => "close",
        "read" => "read",
        "pread64" => "pread",
        "readv" => "readv",
        "preadv" | "preadv2" => "preadv",
        "write" => "write",
        "pwrite64" => "pwrite",
        "writev" => "writev",
        "lseek" => "lseek",
        "newfstatat" | "fstat" | "stat" | "lstat" => {
            let fd_form = args.starts_with(|c: char| c.is_ascii_digit()) && args.contains("\"\"");
            if name == "fstat" || fd_form {
                "fstat"
            } else {
                "stat"
            }
        }
        "statx" => "statx",
        "access" | "faccessat" | "faccessat2" => "access",
        "mmap" => "mmap",
        "dup" | "dup2" | "dup3" => "dup",
        "fcntl" if args.contains("F_DUPFD") => "fcntl_dup",
        "ftruncate" => "ftruncate",
        "fsync" => "fsync",
        "fdatasync" => "fdatasync",
        _ => return None,
    })
}

/// Run under `strace -f` (no preload) and count per process.
fn strace_counts(prog: &Path, args: &[&str], name: &str) -> (Vec<Counts>, Output) {
    let dir = tmpdir("strace");
    let log = dir.join("log");
    let mut full = vec!["-f", "-y", "-qq", "-e", "trace=%file,%desc,%process", "-o", log.to_str().unwrap()];
    full.push(prog.to_str().unwrap());
    full.extend_from_slice(args);
    let out = run(Path::new("strace"), &full, &[]);
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (parse_strace(&text, name), out)
}

fn parse_strace(text: &str, name: &str) -> Vec<Counts> {
    strace_log::count(text, name, strace_op)
}

/// Run `prog args` plain, preloaded and under strace; the preloaded run must
/// print and exit exactly like the plain one, and its records must count
/// what strace counts on `name`. Returns the record counts.
fn compare(prog: &Path, args: &[&str], name: &str) -> Vec<Counts> {
    let plain = run(prog, args, &[]);
    let rec = tmpdir("rec");
    let pre = run_preloaded(prog, args, &rec, &[]);
    assert_eq!(plain.status.code(), pre.status.code(), "exit status differs");
    assert_eq!(String::from_utf8_lossy(&plain.stdout), String::from_utf8_lossy(&pre.stdout), "stdout differs");
    assert_eq!(String::from_utf8_lossy(&plain.stderr), String::from_utf8_lossy(&pre.stderr), "stderr differs");
    let ours = record_counts(&decode_dir(&rec), name);
    let (theirs, _) = strace_counts(prog, args, name);
    eprintln!("records: {ours:?}\nstrace:  {theirs:?}");
    assert_eq!(ours, theirs, "record counts differ from strace");
    assert!(!ours.is_empty(), "nothing was recorded");
    let _ = std::fs::remove_dir_all(&rec);
    ours
}

fn kbxtest(mode: &str) -> Vec<Counts> {
    if !require(&["strace"]) {
        return Vec::new();
    }
    let (_, bin) = artifacts();
    let d = tmpdir(mode);
    let f = fixture_copy(&d);
    let r = compare(bin, &[mode, f.to_str().unwrap()], "pubring.kbx");
    let _ = std::fs::remove_dir_all(&d);
    r
}

#[test]
fn basic_calls_match_strace() {
    let c = kbxtest("basic");
    if let Some(p) = c.first() {
        for op in [
            "open",
            "read",
            "pread",
            "readv",
            "preadv",
            "lseek",
            "fstat",
            "stat",
            "statx",
            "mmap",
            "dup",
            "fcntl_dup",
            "access",
        ] {
            assert!(p.get(op).copied().unwrap_or(0) > 0, "{op} not seen: {p:?}");
        }
    }
}

#[test]
fn stdio_calls_match_strace() {
    let c = kbxtest("stdio");
    if let Some(p) = c.first() {
        assert!(p["read"] > 100 && p["lseek"] >= 5 && p["fstat"] >= 2, "{p:?}");
    }
}

#[test]
fn fork_without_exec_match_strace() {
    let c = kbxtest("fork");
    if !c.is_empty() {
        assert_eq!(c.len(), 2, "parent and child each have their own record: {c:?}");
    }
}

#[test]
fn exec_self_match_strace() {
    kbxtest("exec");
}

#[test]
fn threads_match_strace() {
    let c = kbxtest("threads");
    if let Some(p) = c.first() {
        assert_eq!(p["pread"], 2000);
    }
}

#[test]
fn close_range_match_strace() {
    kbxtest("close_range");
}

#[test]
fn daemon_closing_all_fds_is_recorded() {
    if !require(&["strace"]) {
        return;
    }
    let (_, bin) = artifacts();
    let d = tmpdir("daemon");
    let f = fixture_copy(&d);
    let wait_done = |done: &Path| {
        for _ in 0..200 {
            if std::fs::read_to_string(done).is_ok_and(|s| s.ends_with('\n')) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("daemon did not finish");
    };
    let rec = tmpdir("rec");
    let done1 = d.join("done1");
    run_preloaded(bin, &["daemon", f.to_str().unwrap(), done1.to_str().unwrap()], &rec, &[]);
    wait_done(&done1);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let ours = record_counts(&decode_dir(&rec), "pubring.kbx");
    let done2 = d.join("done2");
    let (theirs, _) = strace_counts(bin, &["daemon", f.to_str().unwrap(), done2.to_str().unwrap()], "pubring.kbx");
    eprintln!("records: {ours:?}\nstrace:  {theirs:?}");
    assert_eq!(ours, theirs);
    assert_eq!(ours.len(), 1);
}

#[test]
fn errno_is_preserved() {
    if !require(&["strace"]) {
        return;
    }
    let (_, bin) = artifacts();
    let d = tmpdir("errno");
    let f = fixture_copy(&d);
    let missing = d.join("sub/pubring.kbx");
    let c = compare(bin, &["errno", missing.to_str().unwrap(), f.to_str().unwrap()], "pubring.kbx");
    assert!(!c.is_empty());
    let rec = tmpdir("rec");
    let out = run_preloaded(bin, &["errno", missing.to_str().unwrap(), f.to_str().unwrap()], &rec, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("errno ok"));
    // the failed open and fopen of the missing watched path are counted as failed opens
    let recs = decode_dir(&rec);
    let miss =
        recs.iter().flat_map(|r| &r.files).find(|f| f.path.ends_with(b"sub/pubring.kbx")).expect("missing path slot");
    assert!(miss.op(kbx_record::Op::Open).is_some_and(|s| s.errors == 2), "open + fopen: {miss:?}");
}

#[test]
fn cat_matches_strace() {
    if !require(&["strace", "cat"]) {
        return;
    }
    let d = tmpdir("cat");
    let f = fixture_copy(&d);
    compare(Path::new("/bin/cat"), &[f.to_str().unwrap()], "pubring.kbx");
}

#[test]
fn unwatched_process_creates_no_record_and_disabled_is_passthrough() {
    let (lib, bin) = artifacts();
    let d = tmpdir("unwatched");
    let f = fixture_copy(&d);
    let rec = tmpdir("rec");
    let plain = run(bin, &["basic", f.to_str().unwrap()], &[]);
    let out = run_preloaded(bin, &["basic", f.to_str().unwrap()], &rec, &[("KBXSCOPE_WATCH", "nothing-matches")]);
    assert_eq!(plain.stdout, out.stdout);
    assert_eq!(std::fs::read_dir(&rec).unwrap().count(), 0, "a record was created");
    // No KBXSCOPE_RECORD at all: pure pass-through.
    let out = run(bin, &["basic", f.to_str().unwrap()], &[("LD_PRELOAD", lib.to_str().unwrap())]);
    assert_eq!(plain.stdout, out.stdout);
    assert!(out.status.success());
}

#[test]
fn unusable_record_dir_leaves_host_unchanged() {
    let (_, bin) = artifacts();
    let d = tmpdir("unusable");
    let f = fixture_copy(&d);
    let file_as_dir = d.join("plainfile");
    std::fs::write(&file_as_dir, b"x").unwrap();
    let plain = run(bin, &["stdio", f.to_str().unwrap()], &[]);
    for dir in [d.join("does/not/exist"), file_as_dir, PathBuf::from("/proc/self")] {
        let out = run_preloaded(bin, &["stdio", f.to_str().unwrap()], &dir, &[]);
        assert_eq!(plain.stdout, out.stdout, "{dir:?}");
        assert_eq!(plain.stderr, out.stderr, "{dir:?}");
        assert_eq!(plain.status.code(), out.status.code(), "{dir:?}");
    }
}

#[test]
fn static_binary_records_nothing() {
    if !require(&["cc"]) {
        return;
    }
    let d = tmpdir("static");
    let f = fixture_copy(&d);
    let src = d.join("s.c");
    std::fs::write(
        &src,
        "#include <fcntl.h>\n#include <unistd.h>\n#include <stdio.h>\nint main(int c,char**v){char b[100];int fd=open(v[1],O_RDONLY);long n=read(fd,b,100);close(fd);printf(\"%ld\\n\",n);return 0;}\n",
    )
    .unwrap();
    let exe = d.join("s");
    let st = Command::new("cc").args(["-static", "-O", "-o"]).arg(&exe).arg(&src).status().unwrap();
    if !st.success() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("cannot build a static binary");
        }
        eprintln!("SKIPPED: cc -static failed (no static libc?)");
        return;
    }
    let rec = tmpdir("rec");
    let out = run_preloaded(&exe, &[f.to_str().unwrap()], &rec, &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "100\n");
    assert_eq!(std::fs::read_dir(&rec).unwrap().count(), 0, "a static binary cannot be interposed");
}

/// A fresh GnuPG home holding the fixture as pubring.kbx, with a trustdb.
struct GnupgHome(PathBuf);

impl GnupgHome {
    fn new() -> GnupgHome {
        let d = tmpdir("gnupg");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        fixture_copy(&d);
        let h = GnupgHome(d);
        run(Path::new("gpg"), &["--homedir", h.path(), "--batch", "-k"], &[]);
        h
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for GnupgHome {
    fn drop(&mut self) {
        let _ = Command::new("gpgconf").args(["--homedir", self.path(), "--kill", "all"]).output();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn gnupg(prog: &str, args: &[&str]) {
    if !require(&["strace", prog, "gpgconf"]) {
        return;
    }
    let h = GnupgHome::new();
    let mut full = vec!["--homedir", h.path(), "--batch"];
    full.extend_from_slice(args);
    let c = compare(Path::new(&format!("/usr/bin/{prog}")), &full, "pubring.kbx");
    assert!(c.iter().any(|p| p.get("read").copied().unwrap_or(0) > 10), "{c:?}");
}

#[test]
fn gpg_list_keys_matches_strace() {
    gnupg("gpg", &["-k"]);
}

#[test]
fn gpg_check_sigs_matches_strace() {
    gnupg("gpg", &["--check-sigs"]);
}

#[test]
fn gpgsm_list_keys_matches_strace() {
    gnupg("gpgsm", &["-k"]);
}
