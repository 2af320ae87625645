//! Opening and closing a keybox file, counted.
//!
//! [`KeyboxFile::open`] is the only place kbxscope opens a keybox. It
//! opens **read-only** (`O_RDONLY`, never a write mode), with
//! `O_NONBLOCK` so that a FIFO without a writer cannot hang the open, and
//! with `O_NOATIME` so that reading does not even change the access time
//! (the kernel allows that flag only to the file's owner; on `EPERM` the
//! open is retried without it, and both attempts are counted). One
//! `fstat` (`statx`) then rejects anything that is not a regular file.
//! Dropping the handle closes the file (one `close(2)`) and adds the
//! handle's counters to its [`IoTally`].

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::fd::IntoRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use super::buffer_size::BufferSize;
use super::buffered::BufferedReader;
use super::stats::{FileOp, IoStats};
use crate::telemetry::IoMetrics;

/// The running total of the file events of every handle opened with it.
///
/// Cloning gives another reference to the same total. Handles add their
/// counters when they close, so the per-event cost stays in the handle.
#[derive(Debug, Clone)]
pub struct IoTally {
    buffer_size: BufferSize,
    total: Rc<RefCell<IoStats>>,
    metrics: IoMetrics,
}

impl IoTally {
    /// A zeroed tally for handles with buffers of `buffer_size`. Its metric
    /// handles are registered here, with the recorder installed now.
    pub fn new(buffer_size: BufferSize) -> Self {
        Self {
            buffer_size,
            total: Rc::new(RefCell::new(IoStats::new(buffer_size.bytes() as u64))),
            metrics: IoMetrics::register(buffer_size.bytes() as u64),
        }
    }

    /// The buffer size of the handles this tally opens.
    pub fn buffer_size(&self) -> BufferSize {
        self.buffer_size
    }

    /// The counters of every handle closed so far.
    pub fn snapshot(&self) -> IoStats {
        self.total.borrow().clone()
    }

    fn add(&self, stats: &IoStats) {
        self.total.borrow_mut().merge(stats);
    }
}

/// Why a keybox could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The operating system refused (missing file, permission, …).
    #[error("cannot open '{}': {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
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
    reader: Option<BufferedReader<File>>,
    tally: IoTally,
}

fn timed_open(path: &Path, flags: i32, stats: &mut IoStats, metrics: &IoMetrics) -> io::Result<File> {
    let span = super::buffered::event_span(FileOp::Open, 0, stats.buffer_size);
    let _in = span.enter();
    let start = Instant::now();
    let r = OpenOptions::new().read(true).custom_flags(flags).open(path);
    let took = start.elapsed();
    stats.record(FileOp::Open, took);
    metrics.event(FileOp::Open, took);
    r
}

/// Close the file with exactly one `close(2)`.
///
/// Dropping a `File` would do the same in release builds, but debug builds
/// of the standard library first call `fcntl(fd, F_GETFD)` to check that the
/// descriptor is still open: an extra system call on the keybox that the
/// counts would have to leave out. So the descriptor is closed by hand.
fn timed_close(file: File, stats: &mut IoStats, metrics: &IoMetrics) {
    let fd = file.into_raw_fd();
    let span = super::buffered::event_span(FileOp::Close, 0, stats.buffer_size);
    let _in = span.enter();
    let start = Instant::now();
    // SAFETY: `into_raw_fd` handed us sole ownership of `fd`, which is open
    // (it came from a successful open) and is closed here exactly once;
    // nothing else refers to it afterwards.
    #[allow(unsafe_code)]
    let _ = unsafe { libc::close(fd) };
    let took = start.elapsed();
    stats.record(FileOp::Close, took);
    metrics.event(FileOp::Close, took);
}

fn file_kind(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "directory"
    } else if ft.is_fifo() {
        "FIFO"
    } else if ft.is_char_device() {
        "character device"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

impl KeyboxFile {
    /// Open `path` read-only with a buffer of the tally's size.
    ///
    /// # Errors
    /// [`OpenError`] when the system refuses or the path is not a regular
    /// file. The events of a failed open are still added to `tally`.
    pub fn open(path: &Path, tally: &IoTally) -> Result<Self, OpenError> {
        let mut stats = IoStats::new(tally.buffer_size.bytes() as u64);
        let base = libc::O_NONBLOCK;
        let m = &tally.metrics;
        let opened = match timed_open(path, base | libc::O_NOATIME, &mut stats, m) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => timed_open(path, base, &mut stats, m),
            other => other,
        };
        let file = match opened {
            Ok(f) => f,
            Err(source) => {
                tally.add(&stats);
                return Err(OpenError::Io { path: path.to_path_buf(), source });
            }
        };
        let span = super::buffered::event_span(FileOp::Stat, 0, stats.buffer_size);
        let entered = span.enter();
        let start = Instant::now();
        let meta = file.metadata();
        let took = start.elapsed();
        stats.record(FileOp::Stat, took);
        m.event(FileOp::Stat, took);
        drop(entered);
        let problem = match meta {
            Ok(m) if m.file_type().is_file() => None,
            Ok(m) => Some(OpenError::NotRegular { path: path.to_path_buf(), kind: file_kind(m.file_type()) }),
            Err(source) => Some(OpenError::Io { path: path.to_path_buf(), source }),
        };
        if let Some(err) = problem {
            timed_close(file, &mut stats, m);
            tally.add(&stats);
            return Err(err);
        }
        let mut reader = BufferedReader::new(file, tally.buffer_size).with_metrics(tally.metrics.clone());
        reader.stats_mut().merge(&stats);
        Ok(Self { reader: Some(reader), tally: tally.clone() })
    }

    fn reader(&self) -> &BufferedReader<File> {
        // Invariant: `reader` is `Some` from `open` until `drop`.
        self.reader.as_ref().expect("keybox handle used after close")
    }
}

impl Deref for KeyboxFile {
    type Target = BufferedReader<File>;

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
            let (file, mut stats) = reader.into_parts();
            timed_close(file, &mut stats, &self.tally.metrics);
            self.tally.add(&stats);
        }
    }
}
