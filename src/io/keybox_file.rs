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
    /// Metric handles, when telemetry is on ([`crate::telemetry::enable`]):
    /// without them the hot path does no metrics work at all.
    metrics: Option<IoMetrics>,
    watch: Rc<RefCell<Watch>>,
}

/// What identifies the file a handle opened: device, inode, size and
/// modification time, from the `fstat` every open makes anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    /// Device.
    pub dev: u64,
    /// Inode: a new file renamed into place has another one.
    pub ino: u64,
    /// Size in bytes.
    pub len: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
}

impl FileIdentity {
    fn of(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        }
    }
}

/// The file the first handle saw, and every change later handles found.
#[derive(Debug, Default)]
struct Watch {
    first: Option<FileIdentity>,
    seen: Vec<FileIdentity>,
    changes: Vec<String>,
}

impl Watch {
    fn observe(&mut self, id: FileIdentity) {
        let Some(first) = self.first else {
            self.first = Some(id);
            return;
        };
        if id == first || self.seen.contains(&id) {
            return;
        }
        self.seen.push(id);
        self.changes.push(if (id.dev, id.ino) != (first.dev, first.ino) {
            format!("was replaced by another file (renamed into place): {} → {} bytes", first.len, id.len)
        } else if id.len != first.len {
            format!("changed size: {} → {} bytes", first.len, id.len)
        } else {
            "was modified in place (same size, new modification time)".to_string()
        });
    }
}

impl IoTally {
    /// A zeroed tally for handles with buffers of `buffer_size`. Its metric
    /// handles are registered here, with the recorder installed now.
    pub fn new(buffer_size: BufferSize) -> Self {
        Self {
            buffer_size,
            total: Rc::new(RefCell::new(IoStats::new(buffer_size.bytes() as u64))),
            metrics: crate::telemetry::enabled().then(|| IoMetrics::register(buffer_size.bytes() as u64)),
            watch: Rc::default(),
        }
    }

    /// A zeroed tally for another buffer size that compares the files its
    /// handles open with the same first file as this one (a sweep's sizes).
    pub fn sibling(&self, buffer_size: BufferSize) -> Self {
        Self { watch: self.watch.clone(), ..Self::new(buffer_size) }
    }

    /// How the keybox changed while it was read, one sentence each: another
    /// file renamed into place, a new size or modification time seen by a
    /// later open, bytes appended while a handle was reading. Empty when
    /// every handle saw the same file.
    pub fn changes(&self) -> Vec<String> {
        let mut out = self.watch.borrow().changes.clone();
        let beyond = self.total.borrow().beyond_end;
        if beyond > 0 {
            out.push(format!("grew while being read: {beyond} byte(s) past its size at open were not used"));
        }
        out
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
    reader: Option<BufferedReader<File>>,
    tally: IoTally,
}

fn timed_open(path: &Path, flags: i32, stats: &mut IoStats, metrics: Option<&IoMetrics>) -> io::Result<File> {
    let span = super::buffered::event_span(FileOp::Open, 0, stats.buffer_size);
    let _in = span.enter();
    let start = Instant::now();
    let r = OpenOptions::new().read(true).custom_flags(flags).open(path);
    let took = start.elapsed();
    stats.record(FileOp::Open, took);
    if let Some(m) = metrics {
        m.event(FileOp::Open, took);
    }
    r
}

/// Close the file with exactly one `close(2)`.
///
/// Dropping a `File` would do the same in release builds, but debug builds
/// of the standard library first call `fcntl(fd, F_GETFD)` to check that the
/// descriptor is still open: an extra system call on the keybox that the
/// counts would have to leave out. So the descriptor is closed by hand.
fn timed_close(file: File, stats: &mut IoStats, metrics: Option<&IoMetrics>) {
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
    if let Some(m) = metrics {
        m.event(FileOp::Close, took);
    }
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
        let m = tally.metrics.as_ref();
        let opened = match timed_open(path, base | libc::O_NOATIME, &mut stats, m) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => timed_open(path, base, &mut stats, m),
            other => other,
        };
        let file = match opened {
            Ok(f) => f,
            Err(source) => {
                tally.add(&stats);
                return Err(OpenError::Io { path: path.to_path_buf(), error: source });
            }
        };
        let span = super::buffered::event_span(FileOp::Stat, 0, stats.buffer_size);
        let entered = span.enter();
        let start = Instant::now();
        let meta = file.metadata();
        let took = start.elapsed();
        stats.record(FileOp::Stat, took);
        if let Some(m) = m {
            m.event(FileOp::Stat, took);
        }
        drop(entered);
        let identity = match meta {
            Ok(meta) if meta.file_type().is_file() => Ok(FileIdentity::of(&meta)),
            Ok(meta) => Err(OpenError::NotRegular { path: path.to_path_buf(), kind: file_kind(meta.file_type()) }),
            Err(error) => Err(OpenError::Io { path: path.to_path_buf(), error }),
        };
        let identity = match identity {
            Ok(id) => id,
            Err(err) => {
                timed_close(file, &mut stats, m);
                tally.add(&stats);
                return Err(err);
            }
        };
        tally.watch.borrow_mut().observe(identity);
        let mut reader = BufferedReader::new(file, tally.buffer_size).with_limit(identity.len);
        if let Some(metrics) = &tally.metrics {
            reader = reader.with_metrics(metrics.clone());
        }
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
            timed_close(file, &mut stats, self.tally.metrics.as_ref());
            self.tally.add(&stats);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(tally.changes(), ["grew while being read: 300 byte(s) past its size at open were not used"]);
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
        assert_eq!(tally.changes(), ["was replaced by another file (renamed into place): 100 → 120 bytes"]);
        assert_eq!(other.changes(), tally.changes());
    }
}
