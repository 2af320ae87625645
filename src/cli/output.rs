//! Writing the files kbxscope makes (generated keyboxes, exports, plots,
//! traces, metrics): never in place, never over an existing file unless
//! asked, nothing left behind on failure.
//!
//! Everything goes through [`tempfile::NamedTempFile`] created in the
//! target's directory: the bytes are written and flushed to disk, then the
//! file is moved into place with `persist` (replacing, when overwriting is
//! allowed) or `persist_noclobber` (which fails if the target exists, so
//! even a file created meanwhile by someone else is not replaced). A
//! temporary file that is never moved into place is removed when dropped,
//! on every error path, and by [`super::interrupt`] if Ctrl-C or SIGTERM
//! ends the process first.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use super::interrupt;

/// Why a file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The target exists and overwriting was not asked for.
    #[error("'{}' exists; not replacing it (use --force to replace it)", .0.display())]
    Exists(PathBuf),
    /// The system refused.
    // The reason comes after it, as the error's source (printed once).
    #[error("cannot write '{}'", path.display())]
    Io {
        /// The target.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
}

/// A temporary file known to [`interrupt`]: removed if a signal ends the
/// process before it is moved into place or dropped.
#[derive(Debug)]
struct Live(Option<NamedTempFile>);

impl Live {
    fn tmp(&mut self) -> &mut NamedTempFile {
        // Some until `persist` or `drop` takes it, and both consume self.
        self.0.as_mut().expect("a live temporary file")
    }

    /// Move the finished file to `path`.
    fn persist(mut self, path: &Path, overwrite: bool) -> Result<(), WriteError> {
        let tmp = self.0.take().expect("a live temporary file");
        let at = tmp.path().to_path_buf();
        interrupt::settle(&at, || persist(tmp, path, overwrite))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(tmp) = self.0.take() {
            let at = tmp.path().to_path_buf();
            interrupt::settle(&at, || drop(tmp));
        }
    }
}

/// A temporary file next to `path` (hidden, named after it).
fn temp_next_to(path: &Path) -> Result<Live, WriteError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let make = || tempfile::Builder::new().prefix(&prefix).suffix(".tmp").tempfile_in(dir);
    interrupt::create(make, |t: &NamedTempFile| t.path())
        .map(|tmp| Live(Some(tmp)))
        .map_err(|e| WriteError::Io { path: path.to_path_buf(), source: without_temp_name(e) })
}

/// tempfile's errors name the temporary file (`… at path "/d/.x.svg.a1B2.tmp"`);
/// the user named the target, so keep only the system's reason.
fn without_temp_name(e: io::Error) -> io::Error {
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((reason, _)) => io::Error::new(e.kind(), reason.to_string()),
        None => e,
    }
}

/// Move a finished temporary file to `path`.
fn persist(tmp: NamedTempFile, path: &Path, overwrite: bool) -> Result<(), WriteError> {
    let result = if overwrite { tmp.persist(path) } else { tmp.persist_noclobber(path) };
    // On failure the temporary file comes back inside the error and is
    // removed when that error is dropped here.
    result.map(drop).map_err(|e| {
        if e.error.kind() == io::ErrorKind::AlreadyExists && !overwrite {
            WriteError::Exists(path.to_path_buf())
        } else {
            WriteError::Io { path: path.to_path_buf(), source: e.error }
        }
    })
}

/// Write `bytes` to `path` through a temporary file moved into place.
///
/// # Errors
/// [`WriteError::Exists`] if `path` exists and `overwrite` is false;
/// [`WriteError::Io`] for system errors.
pub fn write_file(path: &Path, bytes: &[u8], overwrite: bool) -> Result<(), WriteError> {
    if !overwrite && fs::symlink_metadata(path).is_ok() {
        return Err(WriteError::Exists(path.to_path_buf()));
    }
    let mut live = temp_next_to(path)?;
    let tmp = live.tmp();
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|source| WriteError::Io { path: path.to_path_buf(), source })?;
    live.persist(path, overwrite)
}

/// An output file written while the command runs (a trace, an export),
/// under a temporary name, and moved to its final name by
/// [`commit`](Self::commit). Dropped without a commit, the temporary file
/// is removed.
#[derive(Debug)]
pub struct TempOutput {
    tmp: Live,
    path: PathBuf,
}

impl TempOutput {
    /// Create the temporary file next to `path`; returns a second handle
    /// on it for a writer that owns its file, and the output itself.
    ///
    /// # Errors
    /// The directory is missing or not writable.
    pub fn create(path: &Path) -> Result<(fs::File, Self), WriteError> {
        let mut out = Self::open(path)?;
        let file = out.tmp.tmp().reopen().map_err(|source| WriteError::Io { path: path.to_path_buf(), source })?;
        Ok((file, out))
    }

    /// Create the temporary file next to `path`, to be filled with
    /// [`write_all`](Self::write_all).
    ///
    /// # Errors
    /// The directory is missing or not writable.
    pub fn open(path: &Path) -> Result<Self, WriteError> {
        Ok(Self { tmp: temp_next_to(path)?, path: path.to_path_buf() })
    }

    /// Write all of `bytes` and flush them to disk.
    ///
    /// # Errors
    /// The write failed.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        let path = &self.path;
        let tmp = self.tmp.tmp();
        tmp.write_all(bytes)
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|source| WriteError::Io { path: path.clone(), source })
    }

    /// Move the finished file into place (replacing an older one).
    ///
    /// # Errors
    /// The move failed (the temporary file is removed).
    pub fn commit(mut self) -> Result<(), WriteError> {
        self.tmp.tmp().as_file().sync_all().map_err(|source| WriteError::Io { path: self.path.clone(), source })?;
        self.tmp.persist(&self.path, true)
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

    fn names(dir: &Path) -> Vec<std::ffi::OsString> {
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect()
    }

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
        assert_eq!(names(dir.path()).len(), 1, "no temporary file left: {:?}", names(dir.path()));
    }

    #[test]
    fn failure_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing-dir").join("out.kbx");
        assert!(matches!(write_file(&p, b"x", false), Err(WriteError::Io { .. })));
        assert!(!p.exists());
    }

    /// An output that is never committed (the command failed) leaves no
    /// temporary file behind; a committed one replaces the target.
    #[test]
    fn uncommitted_output_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("export.json");
        let mut out = TempOutput::open(&p).unwrap();
        out.write_all(b"{}").unwrap();
        assert_eq!(names(dir.path()).len(), 1, "the temporary file exists while writing");
        drop(out);
        assert!(names(dir.path()).is_empty(), "left behind: {:?}", names(dir.path()));
        let (mut f, out) = TempOutput::create(&p).unwrap();
        f.write_all(b"[1]").unwrap();
        drop(f);
        out.commit().unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"[1]");
        assert_eq!(names(dir.path()).len(), 1);
    }
}
