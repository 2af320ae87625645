//! Writing files kbxscope makes (generated keyboxes, reports): never in
//! place, never over an existing file unless asked.
//!
//! [`write_file`] writes a temporary file in the target's directory
//! (`.NAME.tmp-PID`), flushes it to disk and only then moves it into
//! place: with `overwrite`, by `rename(2)`; without, by `link(2)`, which
//! fails if the target exists — so even a file created meanwhile by
//! someone else is not replaced. A failure, or a kill before the move,
//! leaves no partial target (at most the temporary file, removed on
//! failure).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why a file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The target exists and overwriting was not asked for.
    #[error("'{}' exists; not replacing it (use --force to replace it)", .0.display())]
    Exists(PathBuf),
    /// The system refused.
    #[error("cannot write '{}': {source}", path.display())]
    Io {
        /// The target.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Write `bytes` to `path` through a temporary file and a rename.
///
/// # Errors
/// [`WriteError::Exists`] if `path` exists and `overwrite` is false;
/// [`WriteError::Io`] for system errors.
pub fn write_file(path: &Path, bytes: &[u8], overwrite: bool) -> Result<(), WriteError> {
    let io_err = |source| WriteError::Io { path: path.to_path_buf(), source };
    if !overwrite && fs::symlink_metadata(path).is_ok() {
        return Err(WriteError::Exists(path.to_path_buf()));
    }
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        if overwrite {
            fs::rename(&tmp, path)
        } else {
            fs::hard_link(&tmp, path).and_then(|()| fs::remove_file(&tmp))
        }
    })();
    match result {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            if e.kind() == io::ErrorKind::AlreadyExists && !overwrite {
                Err(WriteError::Exists(path.to_path_buf()))
            } else {
                Err(io_err(e))
            }
        }
    }
}

/// An output file written in place under a temporary name and moved to
/// its final name by [`TempOutput::commit`] (for streams such as a trace
/// that are written while the command runs).
#[derive(Debug)]
pub struct TempOutput {
    tmp: PathBuf,
    path: PathBuf,
    file: Option<fs::File>,
}

impl TempOutput {
    /// Create the temporary file next to `path`; returns it and the handle
    /// that moves it into place.
    ///
    /// # Errors
    /// The directory is missing or not writable.
    pub fn create(path: &Path) -> Result<(fs::File, Self), WriteError> {
        let mut out = Self::open(path)?;
        let f = out.file.take().expect("just opened");
        Ok((f, out))
    }

    /// Create the temporary file next to `path`, kept inside for
    /// [`write_all`](Self::write_all).
    ///
    /// # Errors
    /// The directory is missing or not writable.
    pub fn open(path: &Path) -> Result<Self, WriteError> {
        let tmp = temp_path(path);
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|source| WriteError::Io { path: path.to_path_buf(), source })?;
        Ok(Self { tmp, path: path.to_path_buf(), file: Some(f) })
    }

    /// Write all of `bytes` to the file opened by [`open`](Self::open) and flush it to disk.
    ///
    /// # Errors
    /// The write failed (or the file was handed out by `create`).
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        let path = self.path.clone();
        let io_err = |source| WriteError::Io { path: path.clone(), source };
        let f = self.file.as_mut().ok_or_else(|| io_err(io::Error::other("the file was handed out")))?;
        f.write_all(bytes).and_then(|()| f.sync_all()).map_err(io_err)
    }

    /// Move the finished file into place (replacing an older one).
    ///
    /// # Errors
    /// The rename failed.
    pub fn commit(mut self) -> Result<(), WriteError> {
        drop(self.file.take());
        fs::rename(&self.tmp, &self.path).map_err(|source| WriteError::Io { path: self.path.clone(), source })
    }
}

/// Create `dir` and its parents if missing.
///
/// # Errors
/// The system's error, naming the directory.
pub fn ensure_dir(dir: &Path) -> Result<(), WriteError> {
    fs::create_dir_all(dir).map_err(|source| WriteError::Io { path: dir.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_refuses_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.kbx");
        write_file(&p, b"one", false).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        assert!(matches!(write_file(&p, b"two", false), Err(WriteError::Exists(_))));
        assert_eq!(fs::read(&p).unwrap(), b"one");
        write_file(&p, b"two", true).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    }

    #[test]
    fn failure_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing-dir").join("out.kbx");
        assert!(matches!(write_file(&p, b"x", false), Err(WriteError::Io { .. })));
        assert!(!p.exists());
    }
}
