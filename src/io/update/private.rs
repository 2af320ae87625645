//! [`PrivateCopy`]: the only place a write replay writes — a directory of
//! its own (`kbxscope-replay-XXXXXX` in the temporary directory, or in a
//! directory given), holding a copy of the store the replay starts from,
//! removed with everything in it when dropped.
//!
//! Every private directory alive is known here, so that a signal ending
//! the process can remove them all ([`PrivateCopy::remove_all`]; the command line's
//! signal watcher calls it), and a hook set with [`PrivateCopy::before_first`] runs
//! before the first one is made (the command line starts that watcher
//! then: a command that never makes one stays single-threaded).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once, OnceLock, PoisonError};

use crate::io::sys;

/// A private directory with the keybox a replay writes.
#[derive(Debug)]
pub struct PrivateCopy {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    store: PathBuf,
}

/// The private directories alive.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static HOOK: OnceLock<fn()> = OnceLock::new();
static FIRST: Once = Once::new();

fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PrivateCopy {
    /// Run `hook` before the first private directory is made (once per
    /// process; a second hook is ignored).
    pub fn before_first(hook: fn()) {
        let _ = HOOK.set(hook);
    }

    /// Remove every private directory alive, and make sure no other is made
    /// or removed until the process ends (the registry stays locked): for a
    /// signal handler that exits next.
    pub fn remove_all() {
        let guard = live();
        for dir in guard.iter() {
            remove_under_writer(dir);
        }
        std::mem::forget(guard);
    }

    /// A new private directory in `parent` (the system's temporary
    /// directory when `None`) that will hold a keybox named `name`, not
    /// made yet.
    ///
    /// # Errors
    /// The directory cannot be made.
    pub fn empty(parent: Option<&Path>, name: &str) -> io::Result<Self> {
        FIRST.call_once(|| {
            if let Some(hook) = HOOK.get() {
                hook();
            }
        });
        let mut b = tempfile::Builder::new();
        b.prefix("kbxscope-replay-");
        // Known from its making: no signal falls in between.
        let mut live = live();
        let dir = match parent {
            Some(p) => b.tempdir_in(p)?,
            None => b.tempdir()?,
        };
        let path = dir.path().to_path_buf();
        live.push(path.clone());
        let store = path.join(name);
        Ok(Self { dir: Some(dir), path, store })
    }

    /// A new private directory holding a copy of the keybox `source`,
    /// which is only read (`O_RDONLY|O_NOATIME`: not even its access time
    /// changes), under the same file name.
    ///
    /// # Errors
    /// The source cannot be read or the copy written; nothing is left.
    pub fn of(source: &Path, parent: Option<&Path>) -> io::Result<Self> {
        let name = source.file_name().map_or_else(|| "pubring.kbx".into(), |n| n.to_string_lossy().into_owned());
        let copy = Self::empty(parent, &name)?;
        let mut from = open_quietly(source)?;
        let mut to = sys::create_private(&copy.store)?;
        io::copy(&mut from, &mut to)?;
        Ok(copy)
    }

    /// A new private directory holding a store named `name` made of
    /// `bytes` (a changed copy of a keybox, to replay a change on it).
    ///
    /// # Errors
    /// The directory or the file cannot be made; nothing is left.
    pub fn holding(name: &str, bytes: &[u8]) -> io::Result<Self> {
        let copy = Self::empty(None, name)?;
        let mut to = sys::create_private(&copy.store)?;
        io::Write::write_all(&mut to, bytes)?;
        Ok(copy)
    }

    /// The keybox in it.
    pub fn store(&self) -> &Path {
        &self.store
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        let mut live = live();
        drop(self.dir.take());
        live.retain(|p| p != &self.path);
    }
}

/// Remove `dir` while the replay's thread may still be making files in
/// it (a signal's watcher runs beside it): first renamed aside, so that
/// the replay's next file, made by its path, cannot land in it; then
/// removed. Should the rename fail, removing is retried while a file made
/// meanwhile keeps the directory from going (a bounded number of times).
fn remove_under_writer(dir: &Path) {
    let mut aside = dir.as_os_str().to_owned();
    aside.push(".removing");
    let aside = PathBuf::from(aside);
    let target = if std::fs::rename(dir, &aside).is_ok() { aside.as_path() } else { dir };
    for _ in 0..100 {
        match std::fs::remove_dir_all(target) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => continue,
            _ => break,
        }
    }
}

/// Open read-only without changing the access time where the kernel
/// allows it (the file's owner), else plainly read-only.
fn open_quietly(path: &Path) -> io::Result<File> {
    match sys::open_for_update(path, None, true) {
        Err(e) if sys::retry_plain(&e) => sys::open_for_update(path, None, false),
        r => r,
    }
}
