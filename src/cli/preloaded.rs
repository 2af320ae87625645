//! Running a command under the interposer: `LD_PRELOAD`, a private record
//! directory removed afterwards (also on Ctrl-C/SIGTERM), the records
//! decoded. `record` and `sweep --program`/`--with-*` both run through here.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::interrupt;
use super::output::{ensure_dir, write_file, WriteError};
use super::procfs::alive;
use kbxscope::record::{preload, Recorded};

/// What a command run under the interposer did.
pub struct Preloaded {
    /// How it ended.
    pub status: ExitStatus,
    /// The calls it and its descendants made on the watched files.
    pub recorded: Recorded,
    /// Record files still being created when they were read (left out).
    pub incomplete: usize,
}

/// Run `cmd` with the interposer preloaded (`LD_PRELOAD`, ours first),
/// recording the calls on the files `watch` names (`KBXSCOPE_WATCH`), with
/// at most `events` per-call events and, with `stack_every`, the stacks of
/// one call in N; wait at most `wait_daemons` for the
/// recorded processes to exit; decode the records. The record directory is
/// private, temporary and removed afterwards (also on Ctrl-C/SIGTERM).
/// `record` and `sweep --program`/`--with-*` both run through here.
///
/// # Errors
/// The interposer cannot be installed or the record directory made (outer);
/// the command cannot be started (inner, as the system said).
pub fn run_preloaded(
    cmd: &mut Command,
    watch: &str,
    events: Option<u64>,
    stack_every: Option<u64>,
    wait_daemons: Option<Duration>,
) -> Result<io::Result<Preloaded>> {
    let library = install_library()?;
    let dir =
        tempfile::Builder::new().prefix("kbxscope-record-").tempdir().context("cannot make a record directory")?;
    let dir_path = dir.path().to_path_buf();
    let child = Arc::new(AtomicU32::new(0));
    let pid = Arc::clone(&child);
    interrupt::on_interrupt(Box::new(move |signal| {
        // PROGRAM goes on (record never signals it); say what is lost.
        let (recorded, _) = read_records(&dir_path);
        let calls = recorded.total().total_events();
        let _ = std::fs::remove_dir_all(&dir_path);
        let pid = pid.load(Ordering::Relaxed);
        let running = if pid != 0 && alive(pid) { format!("PROGRAM (pid {pid}) goes on") } else { "PROGRAM".into() };
        eprintln!(
            "kbxscope: record: {signal}: {running} unrecorded from now on; {calls} calls were counted until then, not reported"
        );
    }));
    let mut preload = library.into_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    cmd.env("LD_PRELOAD", preload).env("KBXSCOPE_RECORD", dir.path()).env("KBXSCOPE_WATCH", watch);
    match events {
        Some(n) => cmd.env("KBXSCOPE_RECORD_EVENTS", n.to_string()),
        None => cmd.env_remove("KBXSCOPE_RECORD_EVENTS"),
    };
    match stack_every {
        Some(n) => cmd.env("KBXSCOPE_RECORD_STACKS", n.to_string()),
        None => cmd.env_remove("KBXSCOPE_RECORD_STACKS"),
    };
    let mut process = match cmd.spawn() {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    child.store(process.id(), Ordering::Relaxed);
    let status = match process.wait() {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    if let Some(limit) = wait_daemons {
        wait_for_recorded(dir.path(), limit);
    }
    let (recorded, incomplete) = read_records(dir.path());
    Ok(Ok(Preloaded { status, recorded, incomplete }))
}

/// Write the embedded interposer into the cache directory once; its path.
fn install_library() -> Result<PathBuf> {
    let dir = kbxscope::generate::cache::cache_dir(|k| std::env::var_os(k))
        .unwrap_or_else(|| std::env::temp_dir().join("kbxscope"));
    let path = dir.join(preload::file_name());
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == preload::LIBRARY.len() as u64) {
        return Ok(path);
    }
    let text = path.to_string_lossy();
    anyhow::ensure!(
        !text.contains([':', ' ']),
        "the cache directory '{}' has a ':' or a space, which LD_PRELOAD cannot carry (set KBXSCOPE_CACHE_DIR)",
        dir.display()
    );
    ensure_dir(&dir)?;
    match write_file(&path, preload::LIBRARY, false) {
        // Another kbxscope wrote it meanwhile: the same bytes.
        Ok(()) | Err(WriteError::Exists(_)) => Ok(path),
        Err(e) => Err(e.into()),
    }
}

/// Wait until every process with a record in `dir` has exited, at most `limit`.
fn wait_for_recorded(dir: &Path, limit: Duration) {
    let until = Instant::now() + limit;
    loop {
        let pids: Vec<u32> = std::fs::read_dir(dir)
            .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.split_once('-')?.0.parse().ok()).collect())
            .unwrap_or_default();
        if !pids.iter().any(|p| alive(*p)) || Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Decode every record in `dir`; also how many were not complete yet.
fn read_records(dir: &Path) -> (Recorded, usize) {
    let mut records = Vec::new();
    let mut incomplete = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().extension().is_none_or(|x| x != "kbxrec") {
            continue;
        }
        match std::fs::read(e.path()).map(|b| kbx_record::decode(&b)) {
            Ok(Ok(r)) => records.push(r),
            _ => incomplete += 1,
        }
    }
    (Recorded::from_records(records), incomplete)
}
