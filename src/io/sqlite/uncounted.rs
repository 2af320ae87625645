//! Where SQLite's calls are not counted yet: systems without the unix VFS
//! (Windows, whose win32 VFS has a system-call table of its own —
//! `CreateFileW`, `ReadFile`, `LockFileEx`, … — that hooks could count
//! the same way; not done yet). Databases open and read as on Unix, read-
//! only; their calls are simply not in the counts (docs/windows.md).

use std::ffi::CStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::events::IoStats;

/// SQLite's calls are not counted here.
pub(in crate::io::sqlite) const COUNTED: bool = false;

/// SQLite's own default VFS (win32).
pub(in crate::io::sqlite) const VFS_NAME: &CStr = c"win32";

/// Why SQLite's system calls could not be hooked (never, here: nothing is
/// hooked).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SQLite's system calls cannot be hooked on this system")]
pub struct HookError;

/// What SQLite would write beside the read-only database at `path`, found
/// before it is opened (here no hook refuses it when SQLite tries): the
/// `-shm` and `-wal` files of a database in WAL mode (its header's format
/// versions, bytes 18 and 19, are 2), or the roll-back of a hot journal.
/// These reads are the check's, not SQLite's, and are not counted either.
pub(in crate::io::sqlite) fn write_beside(path: &Path) -> Option<String> {
    let mut header = [0u8; 20];
    let wal = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut header)).is_ok()
        && header.starts_with(b"SQLite format 3\0")
        && (header[18] == 2 || header[19] == 2);
    if wal {
        return Some(format!("create {}-shm", path.display()));
    }
    let journal = PathBuf::from(format!("{}-journal", path.display()));
    let hot = std::fs::metadata(&journal).is_ok_and(|m| m.len() > 0);
    hot.then(|| format!("roll back {}", journal.display()))
}

/// Nothing to install.
pub(in crate::io::sqlite) fn install() -> Result<(), HookError> {
    Ok(())
}

/// What a database's calls left: nothing counted, nothing refused.
#[derive(Debug, Default)]
pub(in crate::io::sqlite) struct Sink {
    /// Per file (always empty here).
    pub(in crate::io::sqlite) files: Vec<(Rc<str>, IoStats)>,
    /// A refused write (never, here).
    pub(in crate::io::sqlite) refused: Option<String>,
}

impl Sink {
    pub(in crate::io::sqlite) fn new(_template: IoStats, _trace: bool, _writes: bool) -> Self {
        Self::default()
    }
}

// The initializer is `const` already: clippy 1.95 says otherwise for
// x86_64-pc-windows-gnu built with -Zbuild-std (its thread_local! expands
// to the OS-key form there), a false positive.
#[allow(clippy::missing_const_for_thread_local)]
mod armed_flag {
    use std::cell::Cell;

    thread_local! {
        pub(super) static ARMED: Cell<bool> = const { Cell::new(false) };
    }
}
use armed_flag::ARMED;

/// One database at a time per thread, as on Unix.
pub(in crate::io::sqlite) struct Armed(Sink);

impl Armed {
    /// Arm `sink`; `None` if a database is open on this thread already.
    pub(in crate::io::sqlite) fn arm(sink: Sink) -> Option<Armed> {
        ARMED.with(|a| (!a.replace(true)).then_some(Armed(sink)))
    }

    /// Look at the sink.
    pub(in crate::io::sqlite) fn with<R>(&self, f: impl FnOnce(&Sink) -> R) -> R {
        f(&self.0)
    }

    /// Disarm: the sink.
    pub(in crate::io::sqlite) fn disarm(self) -> Sink {
        ARMED.with(|a| a.set(false));
        self.0
    }
}
