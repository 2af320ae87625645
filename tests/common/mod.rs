//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `kbxscope` binary built for these tests. Its cache directory is a
/// test-only one, so a test can never fill the user's cache.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kbxscope"));
    c.env("KBXSCOPE_CACHE_DIR", std::env::temp_dir().join("kbxscope-test-cache"));
    c
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

/// Whether we run under CI, where a missing external tool is a failure.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Find an external tool on PATH. When it is missing: under CI the test
/// fails; elsewhere it prints that it skipped and returns `None`.
pub fn tool(name: &str, test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.is_file()));
    if found.is_none() {
        assert!(!under_ci(), "{test}: required tool '{name}' is missing (CI=true)");
        eprintln!("SKIPPED {test}: '{name}' is not installed");
    }
    found
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
    let err = stderr(o);
    let line = err
        .lines()
        .rev()
        .find(|l| l.starts_with("{\"buffer_size\""))
        .unwrap_or_else(|| panic!("no io summary in: {err}"));
    serde_json::from_str(line).expect("io summary is JSON")
}

/// Run `kbxscope` and fail the test if it takes longer than `secs` (a hang).
pub fn run_bounded(args: &[&str], secs: u64) -> Output {
    use std::time::{Duration, Instant};
    let mut child = bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn kbxscope");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("kbxscope {args:?} still running after {secs} s: a hang");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect output")
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

/// A `tiny` keybox made by `gen` (and its trustlist) in a fresh directory.
pub fn gen_tiny() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let kbx = dir.path().join("tiny.kbx");
    let o = run(["gen", kbx.to_str().unwrap(), "--preset", "tiny"]);
    assert!(o.status.success(), "{}", stderr(&o));
    (dir, kbx)
}
