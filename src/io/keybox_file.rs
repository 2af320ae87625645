//! Opening and closing a keybox file, counted.
//!
//! [`KeyboxFile::open`] is the only place kbxscope opens a keybox. It
//! opens **read-only** (never a write mode) through the system's calls
//! (`sys`, with the tally's [`FileApi`](super::FileApi)): on Unix with
//! `O_NONBLOCK` so that a FIFO without a writer cannot hang the open, and
//! with `O_NOATIME` so that reading does not even change the access time
//! (the kernel allows that flag only to the file's owner; on `EPERM` the
//! open is retried without it, and both attempts are counted). One stat
//! then rejects anything that is not a regular file. Dropping the handle
//! closes the file (one system call) and adds the handle's counters to its
//! [`IoTally`].

use std::io;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};

use super::buffered::BufferedReader;
use super::event::{timed, tracing_events};
use super::sys::{self, FileKind, SysFile};
use super::tally::IoTally;
use crate::events::Reporter;
use crate::events::{FileOp, IoStats};

/// Why a keybox could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The operating system refused (missing file, permission, …). The
    /// system's error is part of the message, not a separate cause, so a
    /// chain of causes does not repeat it.
    #[error("cannot open '{}': {error}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The system's error.
        error: io::Error,
    },
    /// The path is a directory, FIFO, device or socket.
    #[error("'{}' is not a keybox: it is a {kind}, not a regular file", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
}

/// An open keybox: a [`BufferedReader`] over the file, closed on drop.
#[derive(Debug)]
pub struct KeyboxFile {
    reader: Option<BufferedReader<SysFile>>,
    tally: IoTally,
}

/// Close the file with exactly one system call, timed and counted.
fn timed_close(file: SysFile, stats: &mut IoStats, trace: bool) {
    let _ = timed(stats, trace, FileOp::Close, None, || file.close(), |_| None);
}

impl KeyboxFile {
    /// Open `path` read-only with a buffer of the tally's size.
    ///
    /// # Errors
    /// [`OpenError`] when the system refuses or the path is not a regular
    /// file. The events of a failed open are still added to `tally`.
    pub fn open(path: &Path, tally: &IoTally) -> Result<Self, OpenError> {
        let trace = tracing_events();
        let mut stats = tally.fresh_stats();
        let reporter = tally.observer.clone().map(|o| Reporter::new(o, stats.buffer_size));
        let api = tally.file_api();
        let mut open = |noatime: bool| {
            timed(&mut stats, trace, FileOp::Open, None, || sys::open_read_only(path, api, noatime), |_| None)
        };
        let opened = match open(true) {
            Err(e) if sys::retry_plain(&e) => open(false),
            other => other,
        };
        let file = match opened {
            Ok(f) => f,
            Err(error) => {
                tally.settle(&stats, reporter);
                if error.kind() == io::ErrorKind::IsADirectory {
                    return Err(OpenError::NotRegular { path: path.to_path_buf(), kind: "directory" });
                }
                return Err(OpenError::Io { path: path.to_path_buf(), error });
            }
        };
        let stat = timed(&mut stats, trace, FileOp::Stat, None, || file.stat(), |_| None);
        let identity = match stat {
            Ok(sys::Stat { kind: FileKind::Regular, identity }) => Ok(identity),
            Ok(sys::Stat { kind: FileKind::Other(kind), .. }) => {
                Err(OpenError::NotRegular { path: path.to_path_buf(), kind })
            }
            Err(error) => Err(OpenError::Io { path: path.to_path_buf(), error }),
        };
        let identity = match identity {
            Ok(id) => id,
            Err(err) => {
                timed_close(file, &mut stats, trace);
                tally.settle(&stats, reporter);
                return Err(err);
            }
        };
        tally.watch.borrow_mut().observe(identity);
        let reader =
            BufferedReader::from_parts(file, tally.new_buffer(), stats, reporter, trace).with_limit(identity.len);
        Ok(Self { reader: Some(reader), tally: tally.clone() })
    }

    fn reader(&self) -> &BufferedReader<SysFile> {
        // Invariant: `reader` is `Some` from `open` until `drop`.
        self.reader.as_ref().expect("keybox handle used after close")
    }
}

impl Deref for KeyboxFile {
    type Target = BufferedReader<SysFile>;

    fn deref(&self) -> &Self::Target {
        self.reader()
    }
}

impl DerefMut for KeyboxFile {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.reader.as_mut().expect("keybox handle used after close")
    }
}

impl Drop for KeyboxFile {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.take() {
            let mut parts = reader.into_parts();
            timed_close(parts.inner, &mut parts.stats, parts.trace);
            self.tally.settle(&parts.stats, parts.reporter);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{BufferSize, KeyboxChange};

    fn read_all(f: &mut KeyboxFile) -> Vec<u8> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 100];
        loop {
            let n = f.read(&mut chunk).unwrap();
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }

    /// A writer appending while a handle reads: the handle sees the file as
    /// it was at open, with the same system calls, and the tally says so.
    #[test]
    fn appended_bytes_are_not_handed_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.kbx");
        std::fs::write(&path, vec![7u8; 1000]).unwrap();
        let tally = IoTally::new(BufferSize::Bytes(256));
        let mut f = KeyboxFile::open(&path, &tally).unwrap();
        let mut first = [0u8; 10];
        assert_eq!(f.read(&mut first).unwrap(), 10);
        let mut w = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut w, &[9u8; 300]).unwrap();
        let rest = read_all(&mut f);
        assert_eq!(rest.len(), 990);
        assert!(rest.iter().all(|b| *b == 7));
        drop(f);
        // The same pattern on a file nobody touches.
        let calm = dir.path().join("calm.kbx");
        std::fs::write(&calm, vec![7u8; 1000]).unwrap();
        let calm_tally = IoTally::new(BufferSize::Bytes(256));
        let mut c = KeyboxFile::open(&calm, &calm_tally).unwrap();
        assert_eq!(c.read(&mut first).unwrap(), 10);
        assert_eq!(read_all(&mut c), rest);
        drop(c);
        let s = tally.snapshot();
        assert_eq!(s.events, calm_tally.snapshot().events, "the same calls as on the unchanged file");
        assert_eq!(s.beyond_end, 300);
        assert_eq!(tally.changes(), [KeyboxChange::Grew { unused_bytes: 300 }]);
    }

    /// Later opens that find another file (renamed into place) or a new
    /// size are reported once each; a sibling tally shares the first file.
    #[test]
    fn replaced_and_resized_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.kbx");
        std::fs::write(&path, vec![1u8; 100]).unwrap();
        let tally = IoTally::new(BufferSize::Bytes(64));
        drop(KeyboxFile::open(&path, &tally).unwrap());
        drop(KeyboxFile::open(&path, &tally).unwrap());
        assert!(tally.changes().is_empty());
        let next = dir.path().join("k.kbx.tmp");
        std::fs::write(&next, vec![2u8; 120]).unwrap();
        std::fs::rename(&next, &path).unwrap();
        let other = tally.sibling(BufferSize::Bytes(128));
        let mut f = KeyboxFile::open(&path, &other).unwrap();
        assert_eq!(read_all(&mut f).len(), 120);
        drop(f);
        drop(KeyboxFile::open(&path, &other).unwrap());
        assert_eq!(tally.changes(), [KeyboxChange::Replaced { old_len: 100, new_len: 120 }]);
        assert_eq!(other.changes(), tally.changes());
    }
}
