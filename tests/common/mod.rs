//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use libtest_mimic::Trial;

/// Make the tests' environment the same on every machine, so that no
/// outcome depends on the user's GnuPG state or settings: `HOME` and
/// `GNUPGHOME` point into a fresh empty directory (so no gpg, gpgsm or
/// `record` the tests start finds the user's keybox, configuration files
/// or running gpg-agent, keyboxd or dirmngr; a test that wants a home
/// makes its own), GnuPG's messages are the C locale's (tests read them),
/// times are UTC, and no cache, socket or agent variable of the user's is
/// passed on. The directory lives as long as the returned handle.
///
/// Called first thing in `main`, before the harness starts its threads:
/// changing the environment is sound only while one thread runs.
pub fn hermetic() -> tempfile::TempDir {
    let home = tempfile::Builder::new().prefix("kbxscope-tests-home-").tempdir().expect("a temporary home");
    std::env::set_var("HOME", home.path());
    std::env::set_var("GNUPGHOME", home.path().join(".gnupg"));
    std::env::set_var("LC_ALL", "C");
    std::env::set_var("TZ", "UTC");
    for var in [
        "LANG",
        "LANGUAGE",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "GPG_AGENT_INFO",
        "GPG_TTY",
        "KBXSCOPE_ATTACH_RING_KIB",
        "KBXSCOPE_ATTACH_PROBES",
    ] {
        std::env::remove_var(var);
    }
    home
}

/// The `kbxscope` binary built for these tests. Its cache directory is a
/// test-only one, so a test can never fill the user's cache.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kbxscope"));
    c.env("KBXSCOPE_CACHE_DIR", std::env::temp_dir().join("kbxscope-test-cache"));
    c
}

/// [`bin`] for assert_cmd's assertions.
pub fn cmd() -> assert_cmd::Command {
    assert_cmd::Command::from_std(bin())
}

/// A command whose output nobody reads: stdout and stderr to /dev/null, so
/// that a spawned child does not print among the test results.
pub fn quiet(c: &mut Command) -> &mut Command {
    c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null())
}

/// Run `kbxscope` with `args`.
pub fn run<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    bin().args(args).output().expect("run kbxscope")
}

/// A file in `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// The GnuPG-made keyboxes in `tests/fixtures/`.
pub const KEYBOXES: [&str; 2] = ["gnupg-mixed", "gnupg-deleted"];

/// A temporary directory holding a copy of a fixture keybox; returns the copy's path.
pub fn temp_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(format!("{name}.kbx"));
    std::fs::copy(fixture(&format!("{name}.kbx")), &path).expect("copy fixture");
    (dir, path)
}

/// The system's words for a missing file (Linux: "No such file or
/// directory"; Windows: "The system cannot find the file specified."),
/// as kbxscope passes them on.
pub fn no_such_file() -> String {
    os_words(2)
}

/// The system's words for a path whose directory is missing (ENOENT on
/// Unix; ERROR_PATH_NOT_FOUND on Windows).
pub fn no_such_directory() -> String {
    os_words(if cfg!(windows) { 3 } else { 2 })
}

/// The message of the system's error `code`, without Rust's ` (os error N)`.
fn os_words(code: i32) -> String {
    let text = std::io::Error::from_raw_os_error(code).to_string();
    text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_string()
}

/// Whether we run under CI, where a missing external tool is a failure.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// An external tool on PATH, if installed.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.is_file()))
}

/// Checks that a test could only do in part, for want of a tool; printed
/// after the summary.
static PARTLY_SKIPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Find an external tool a test uses for part of its checks (a test that
/// cannot run at all without a tool declares it in [`tests!`] instead).
/// When it is missing: under CI the test fails; elsewhere the missing part is
/// listed after the summary and `None` returned.
pub fn tool(name: &str, test: &str) -> Option<PathBuf> {
    let found = find_tool(name);
    if found.is_none() {
        skip_part(test, &format!("'{name}' is not installed"));
    }
    found
}

/// Note that `test` could not do part of its checks, and why: under CI a
/// failure; elsewhere listed after the summary.
pub fn skip_part(test: &str, why: &str) {
    assert!(!under_ci(), "{test}: {why} (CI=true)");
    PARTLY_SKIPPED.lock().unwrap().push(format!("{test}: {why}"));
}

/// One integration test: its name, the external tools it cannot run
/// without, and its body (which fails by panicking).
pub struct Test {
    /// `module::function`, as libtest names tests.
    pub name: &'static str,
    /// Tools that must be on PATH; a need with a `/` in it is instead a path
    /// under the crate's root that must exist (e.g. node modules that
    /// `npm ci` installs), and `unix` a Unix system, see [`need_met`].
    pub needs: &'static [&'static str],
    /// The test.
    pub run: fn(),
}

/// Whether a test's need is met: a tool found on PATH, or, for a need with
/// a `/` in it, a file or directory at that path under the crate's root,
/// or for `unix` a Unix system (a test of what Windows does not have:
/// special files, permission bits, signals; under Wine it shows as
/// ignored, its Unix-only body compiled out).
pub fn need_met(need: &str) -> bool {
    if need == "unix" {
        cfg!(unix)
    } else if need.contains('/') {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(need).exists()
    } else {
        find_tool(need).is_some()
    }
}

impl Test {
    /// The libtest-mimic trial. A test whose needs are missing is ignored,
    /// its kind naming them (`test [needs gpgsm] …  ... ignored`), so the
    /// summary counts it as not run; under `CI=true`, or when run anyway
    /// with `--include-ignored`, it fails.
    pub fn trial(&self) -> Trial {
        let missing: Vec<&str> = self.needs.iter().copied().filter(|t| !need_met(t)).collect();
        let name = self.name.strip_prefix("integration::").unwrap_or(self.name);
        let run = self.run;
        let why = format!("needs {}", missing.join(", "));
        let ignore = !missing.is_empty() && !under_ci();
        let trial = Trial::test(name, move || {
            if !missing.is_empty() {
                return Err(format!("required tool missing: {}", missing.join(", ")).into());
            }
            let started = std::time::Instant::now();
            run();
            DURATIONS.lock().unwrap().push((started.elapsed().as_secs_f64(), name));
            Ok(())
        });
        if ignore {
            trial.with_ignored_flag(true).with_kind(why)
        } else {
            trial
        }
    }
}

/// Register a module's tests: `tests![a, b needs ["gpgsm", "strace"]]`
/// defines `TESTS` for the harness in `tests.rs` (a need with a `/` is a
/// path under the crate's root, see [`need_met`]). A test function left out
/// is dead code, which clippy (`-D warnings`) refuses.
#[macro_export]
macro_rules! tests {
    ($($f:ident $(needs [$($tool:literal),* $(,)?])?),* $(,)?) => {
        /// This module's tests, for the harness.
        pub const TESTS: &[$crate::common::Test] = &[$(
            $crate::common::Test {
                name: concat!(module_path!(), "::", stringify!($f)),
                needs: &[$($($tool),*)?],
                run: $f,
            }
        ),*];
    };
}

/// How long each passed test took (wall time, while others ran beside it).
static DURATIONS: Mutex<Vec<(f64, &'static str)>> = Mutex::new(Vec::new());

/// Print the slowest tests after libtest's summary when a whole run (more
/// than a handful of tests) passed through: where `cargo test --release`
/// spends its minutes, for docs/building.md. Information only, never a
/// pass or fail.
pub fn print_slowest() {
    let mut durations = DURATIONS.lock().unwrap();
    if durations.len() < 20 {
        return;
    }
    durations.sort_by(|a, b| b.0.total_cmp(&a.0));
    let total: f64 = durations.iter().map(|d| d.0).sum();
    eprintln!("slowest tests (of {} passed, {total:.0} test-seconds in all):", durations.len());
    for (secs, name) in durations.iter().take(10) {
        eprintln!("  {secs:6.1} s  {name}");
    }
}

/// Print the checks that were skipped in part (after libtest's summary).
pub fn print_partly_skipped() {
    let skipped = PARTLY_SKIPPED.lock().unwrap();
    if !skipped.is_empty() {
        eprintln!("partly skipped ({}):", skipped.len());
        for s in skipped.iter() {
            eprintln!("  {s}");
        }
    }
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `--io-summary=json` object printed on stderr.
pub fn io_summary(o: &Output) -> serde_json::Value {
    io_summary_in(&stderr(o))
}

/// The `--io-summary=json` line of stderr text `err`.
pub fn io_summary_in(err: &str) -> serde_json::Value {
    let line = err
        .lines()
        .rev()
        .find(|l| l.starts_with("{\"buffer_size\""))
        .unwrap_or_else(|| panic!("no io summary in: {err}"));
    serde_json::from_str(line).expect("io summary is JSON")
}

/// The events of the file at `path` in an io summary: its row of `files`
/// when there are several files (a GnuPG start writes beside the keybox),
/// else the summary's events.
pub fn file_events(summary: &serde_json::Value, path: &std::path::Path) -> serde_json::Value {
    let name = path.display().to_string();
    summary["files"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["path"] == name.as_str()))
        .map_or_else(|| summary["events"].clone(), |r| r["events"].clone())
}

/// Run `kbxscope` and fail the test if it takes longer than `secs` (a hang).
/// The output is drained while it runs (a full pipe would stall it) and
/// the wait ends the moment it exits: no polling.
pub fn run_bounded(args: &[&str], secs: u64) -> Output {
    use std::io::Read;
    use wait_timeout::ChildExt;
    let mut child = bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn kbxscope");
    fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).expect("read a pipe");
            bytes
        })
    }
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let Some(status) = child.wait_timeout(std::time::Duration::from_secs(secs)).expect("wait") else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("kbxscope {args:?} still running after {secs} s: a hang");
    };
    Output { status, stdout: stdout.join().expect("stdout"), stderr: stderr.join().expect("stderr") }
}

/// The blobs of a keybox file, split by their length fields.
pub fn split_blobs(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut blobs = Vec::new();
    let mut at = 0;
    while at + 4 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        blobs.push(bytes[at..at + len].to_vec());
        at += len;
    }
    blobs
}

/// A blob of `len` bytes with type byte `ty`, filled with zeros.
pub fn raw_blob(len: u32, ty: u8) -> Vec<u8> {
    let mut b = vec![0u8; len as usize];
    b[..4].copy_from_slice(&len.to_be_bytes());
    b[4] = ty;
    b
}

/// (fingerprint, verdict) pairs from gpgsm's text listing with validation.
pub fn gpgsm_text_verdicts(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut fpr = None;
    for line in text.lines() {
        if let Some(f) = line.trim().strip_prefix("fingerprint: ") {
            fpr = Some(f.replace(':', ""));
        }
        if let Some(v) = line.trim().strip_prefix("[certificate is ") {
            out.push((fpr.take().expect("fingerprint before verdict"), v.trim_end_matches(']').to_string()));
        }
    }
    out
}

/// Every bracketed line gpgsm printed for each certificate (its notes, then
/// the verdict), by fingerprint.
pub fn gpgsm_text_notes(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(f) = line.strip_prefix("fingerprint: ") {
            out.push((f.replace(':', ""), Vec::new()));
        } else if let (Some(note), Some(last)) =
            (line.strip_prefix('[').and_then(|l| l.strip_suffix(']')), out.last_mut())
        {
            last.1.push(note.to_string());
        }
    }
    out.sort();
    out
}

/// The validation time of the fixtures' recorded gpgsm listings
/// (`--at`): their verdicts hold then, whatever has expired since.
pub const AT: &str = "2026-12-01";

/// `list --with-validation OPTIONS --trustlist TRUSTLIST KEYBOX`: kbxscope's
/// validation of `keybox`, e.g. `validation_args(&["--at", AT], &kbx, &trust)`.
/// Global options go before it.
pub fn validation_args<'a>(options: &[&'a str], keybox: &'a Path, trustlist: &'a Path) -> Vec<&'a str> {
    let mut args = vec!["list", "--with-validation"];
    args.extend_from_slice(options);
    args.extend(["--trustlist", trustlist.to_str().unwrap(), keybox.to_str().unwrap()]);
    args
}

/// gpgsm's arguments for listing the keybox of GNUPGHOME `home` with its
/// verdicts, offline: `--homedir HOME --batch -k --with-validation
/// --disable-dirmngr`.
pub fn gpgsm_validation_args(home: &Path) -> [&str; 6] {
    ["--homedir", home.to_str().unwrap(), "--batch", "-k", "--with-validation", "--disable-dirmngr"]
}

/// What the live `gpgsm -k --with-validation` prints for the keybox of
/// GNUPGHOME `home` (see [`gpgsm_validation_args`]); the daemons it started
/// are stopped after.
pub fn gpgsm_listing(home: &Path) -> String {
    let o = Command::new("gpgsm").args(gpgsm_validation_args(home)).output().unwrap();
    stop_gnupg_daemons(home);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// gpg's arguments for running unattended in GNUPGHOME `home` with keys
/// without a passphrase: `--homedir HOME --batch --pinentry-mode loopback
/// --passphrase ""`.
pub fn gpg_batch_args(home: &Path) -> [&str; 7] {
    ["--homedir", home.to_str().unwrap(), "--batch", "--pinentry-mode", "loopback", "--passphrase", ""]
}

/// Stop the GnuPG daemons (gpg-agent, keyboxd, …) of GNUPGHOME `home`:
/// `gpgconf --homedir HOME --kill all`, its outcome ignored.
pub fn stop_gnupg_daemons(home: &Path) {
    let _ = Command::new("gpgconf").args(["--homedir", home.to_str().unwrap(), "--kill", "all"]).output();
}

/// A `tiny` keybox made by `gen` (and its trustlist) in a fresh directory.
pub fn gen_tiny() -> (tempfile::TempDir, PathBuf) {
    gen_into("tiny.kbx", &["--preset", "tiny"])
}

/// A keybox of three OpenPGP keys that certify each other and five
/// certificates (a chain to validate), made by `gen`, with its trustlist
/// beside it: for the runs that make a system call every few bytes
/// (unbuffered, GnuPG's lookups), which take minutes under strace on a
/// larger keybox.
pub fn gen_few() -> (tempfile::TempDir, PathBuf) {
    gen_into("few.kbx", &["--preset", "tiny", "--openpgp", "3", "--x509", "5"])
}

/// `gen NAME ARGS…` in a fresh directory.
fn gen_into(name: &str, args: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let kbx = dir.path().join(name);
    let o = run([&["gen", kbx.to_str().unwrap()], args].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    (dir, kbx)
}

/// A fresh directory inside the GnuPG 2.4.7 chroot that
/// `KBXSCOPE_GNUPG24_CHROOT` names, for an optional test: `(chroot, the
/// directory as seen inside it, as seen from here)`. `None`, with a
/// SKIPPED line naming `test`, when the variable is not set.
pub fn gnupg24_dir(test: &str, stem: &str) -> Option<(PathBuf, String, PathBuf)> {
    let Some(chroot) = std::env::var_os("KBXSCOPE_GNUPG24_CHROOT").map(PathBuf::from) else {
        eprintln!("SKIPPED {test}: KBXSCOPE_GNUPG24_CHROOT is not set (optional)");
        return None;
    };
    let inner = format!("/tmp/kbxscope-{stem}-{}", std::process::id());
    let outer = chroot.join(inner.trim_start_matches('/'));
    let _ = std::fs::remove_dir_all(&outer);
    std::fs::create_dir_all(&outer).unwrap();
    Some((chroot, inner, outer))
}

/// A free TCP port on loopback (for servers a test starts).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Every sample of a Prometheus text exposition, keyed by `name{labels}`
/// as written.
pub fn samples(text: &str) -> std::collections::BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("bad line {l:?}"));
            (series.to_string(), value.parse().unwrap_or_else(|_| panic!("bad value in {l:?}")))
        })
        .collect()
}

/// A child process killed when the test ends, however it ends (tests must
/// not leave servers behind).
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The pid of GnuPG daemon `program` (`gpg-agent`, `keyboxd`) running for
/// `home`: the one whose command line names the home (or its path inside
/// a chroot).
#[cfg(unix)]
pub fn daemon_pid(home: &Path, program: &str) -> u32 {
    let home = home.to_string_lossy();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let runs = args.first().is_some_and(|a| a.rsplit('/').next() == Some(program));
        if runs && args.iter().any(|a| a.len() > 1 && a.starts_with('/') && home.ends_with(a.as_str())) {
            found.push(pid);
        }
    }
    assert_eq!(found.len(), 1, "one {program} for {home}: {found:?}");
    found[0]
}
