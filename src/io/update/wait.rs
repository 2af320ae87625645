//! Waiting, as gpg does, while another process holds a keybox's lock
//! (`common/dotlock.c`; facts only), or as keyboxd does at its start while
//! another holds its database's (`pubring.db.lock`; keyboxd gives up after
//! 10 s): the lock file names its holder's pid on its first line. A lock whose holder is
//! alive is waited for, looking again after 50 ms, then 100, 200, 400,
//! 800 ms, 2, 4 and 8 s; a stale one (its holder gone) is not waited for
//! (gpg removes it; the replay leaves the user's files alone).
//!
//! The replay only reads the lock file: it is the user's. The looks at it
//! are kbxscope's own, like the copy of the keybox the replay starts
//! from, and not counted; a wait is the event gpg would have had, counted
//! and timed on the lock file ([`crate::events::LockWaits`]).

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::files::with_suffix;
use super::UpdateError;
use crate::events::FileStats;
use crate::io::{sys, IoTally};

/// Why the replay did not start: the lock stayed held.
#[derive(Debug, thiserror::Error)]
#[error("'{}' is locked by process {holder} ('{}'): still held after {:.0} s", store.display(), lock.display(), waited.as_secs_f64())]
pub struct LockHeld {
    /// The keybox.
    pub store: PathBuf,
    /// Its lock file.
    pub lock: PathBuf,
    /// The holder's pid.
    pub holder: u32,
    /// How long the replay waited.
    pub waited: Duration,
}

/// Why waiting failed.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The lock stayed held past the limit.
    #[error(transparent)]
    Held(#[from] LockHeld),
    /// The lock file could not be read.
    #[error(transparent)]
    Read(#[from] UpdateError),
}

/// gpg's pauses between looks at a held lock.
const BACKOFF_MS: [u64; 8] = [50, 100, 200, 400, 800, 2000, 4000, 8000];

/// Wait while another live process holds the lock of the keybox at
/// `store`, at most `limit`; `waiting` is told the holder's pid once, when
/// the wait begins. A wait is counted into `tally` on the lock file (the
/// looks are not: see the module docs). Returns whether there was a wait.
///
/// # Errors
/// The lock is still held after `limit`, or its file cannot be read.
pub fn wait_for_lock(
    store: &Path,
    tally: &IoTally,
    limit: Duration,
    mut waiting: impl FnMut(u32),
) -> Result<bool, WaitError> {
    let lock = with_suffix(store, ".lock");
    let mut started: Option<Instant> = None;
    let mut step = 0;
    let result = loop {
        let holder = match holder(&lock) {
            Ok(h) => h,
            Err(error) => break Err(UpdateError { what: "read", path: lock.clone(), error }.into()),
        };
        let Some(pid) = holder else { break Ok(()) };
        let since = *started.get_or_insert_with(|| {
            waiting(pid);
            Instant::now()
        });
        let waited = since.elapsed();
        if waited >= limit {
            break Err(LockHeld { store: store.to_path_buf(), lock: lock.clone(), holder: pid, waited }.into());
        }
        let pause = Duration::from_millis(BACKOFF_MS[step.min(BACKOFF_MS.len() - 1)]);
        std::thread::sleep(pause.min(limit - waited));
        step += 1;
    };
    if let Some(since) = started {
        let mut stats = tally.fresh_stats();
        stats.record_lock_wait(u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX));
        tally.settle_written(vec![FileStats { path: lock.display().to_string(), stats }]);
    }
    result.map(|()| started.is_some())
}

/// The live process other than this one that holds the lock of `store`
/// (its lock file `STORE.lock` names it), if any, with its name
/// (`/proc/PID/comm`, empty if unreadable).
///
/// # Errors
/// The lock file exists but cannot be read.
pub fn lock_holder(store: &Path) -> io::Result<Option<(u32, String)>> {
    let Some(pid) = holder(&with_suffix(store, ".lock"))? else { return Ok(None) };
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    Ok(Some((pid, name.trim_end().to_string())))
}

/// The live process other than this one the lock file names, if any.
fn holder(lock: &Path) -> io::Result<Option<u32>> {
    use std::io::Read;
    let mut text = Vec::new();
    match std::fs::File::open(lock) {
        // The first line is all gpg reads: a pid of at most ten digits.
        Ok(f) => f.take(64).read_to_end(&mut text)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let pid = String::from_utf8_lossy(&text).lines().next().and_then(|l| l.trim().parse::<u32>().ok());
    Ok(pid.filter(|&p| p != std::process::id() && sys::process_alive(p)))
}
