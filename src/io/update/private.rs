//! [`PrivateCopy`]: the only place a write replay writes — a directory of
//! its own (`kbxscope-replay-XXXXXX` in the temporary directory, or in a
//! directory given), holding a copy of the store the replay starts from,
//! removed with everything in it when dropped.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A private directory with the keybox a replay writes.
#[derive(Debug)]
pub struct PrivateCopy {
    dir: tempfile::TempDir,
    store: PathBuf,
}

impl PrivateCopy {
    /// A new private directory in `parent` (the system's temporary
    /// directory when `None`) that will hold a keybox named `name`, not
    /// made yet.
    ///
    /// # Errors
    /// The directory cannot be made.
    pub fn empty(parent: Option<&Path>, name: &str) -> io::Result<Self> {
        let mut b = tempfile::Builder::new();
        b.prefix("kbxscope-replay-");
        let dir = match parent {
            Some(p) => b.tempdir_in(p)?,
            None => b.tempdir()?,
        };
        let store = dir.path().join(name);
        Ok(Self { dir, store })
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
        let mut to = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&copy.store)?;
        io::copy(&mut from, &mut to)?;
        Ok(copy)
    }

    /// The keybox in it.
    pub fn store(&self) -> &Path {
        &self.store
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Open read-only without changing the access time where the kernel
/// allows it (the file's owner), else plainly read-only.
fn open_quietly(path: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).custom_flags(libc::O_NOATIME);
    match o.open(path) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => File::open(path),
        r => r,
    }
}
