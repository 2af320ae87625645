//! The counted system calls of a keybox update on the files beside the
//! read handles: the temporary file, the backup, the lock file and the
//! lock's own file, and the store's path itself (its `access`, `rename`
//! and the copy's stream). Each call is timed, counted on the file it
//! names and traced like every other file event.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::super::event::{timed, tracing_events};
use super::super::tally::IoTally;
use crate::events::{FileOp, FileStats, IoStats};

/// A file of a keybox update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The keybox (`pubring.kbx`).
    Store,
    /// The temporary copy (`pubring.kbx.tmp`).
    Tmp,
    /// The backup the old keybox is renamed to (`pubring.kbx~`).
    Backup,
    /// The lock file (`pubring.kbx.lock`).
    Lock,
    /// The lock's own file (`.#lk0x….HOST.PID`, and its `x` probe), made
    /// once per lock and linked to the lock file to take it.
    LockOwn,
}

impl Role {
    const ALL: [Role; 5] = [Role::Store, Role::Tmp, Role::Backup, Role::Lock, Role::LockOwn];

    /// Its counters' place in [`Files`].
    fn index(self) -> usize {
        self as usize
    }
}

/// How access is checked (`access(2)`'s mode).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Access {
    /// `F_OK`: the file exists.
    Exists,
    /// `W_OK`: the file may be written.
    Writable,
}

/// The paths of one keybox's update files.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    pub(crate) store: PathBuf,
    pub(crate) tmp: PathBuf,
    pub(crate) backup: PathBuf,
    pub(crate) lock: PathBuf,
    pub(crate) own: PathBuf,
    pub(crate) own_probe: PathBuf,
    /// The host named in the lock's own file (and written into it).
    pub(crate) host: String,
}

impl Paths {
    /// GnuPG's names around `store`: `.tmp`, `~`, `.lock`, and the lock's
    /// own file `.#lk0x<16 hex digits>.<host>.<pid>` in the same directory.
    pub(crate) fn of(store: &Path, host: &str) -> Self {
        let with = |suffix: &str| {
            let mut s = store.as_os_str().to_os_string();
            s.push(suffix);
            PathBuf::from(s)
        };
        let dir = store.parent().unwrap_or(Path::new("."));
        let own_name = format!(".#lk0x{:016x}.{host}.{}", 0x5000_0000_u64, std::process::id());
        let own = dir.join(&own_name);
        let own_probe = dir.join(format!("{own_name}x"));
        let (tmp, backup, lock) = (with(".tmp"), with("~"), with(".lock"));
        Self { store: store.to_path_buf(), tmp, backup, lock, own, own_probe, host: host.to_string() }
    }

    pub(crate) fn of_role(&self, role: Role) -> &Path {
        match role {
            Role::Store => &self.store,
            Role::Tmp => &self.tmp,
            Role::Backup => &self.backup,
            Role::Lock => &self.lock,
            Role::LockOwn => &self.own,
        }
    }
}

/// The counters of an update's files, one per [`Role`].
#[derive(Debug)]
pub(crate) struct Files {
    pub(crate) paths: Paths,
    stats: [IoStats; 5],
    trace: bool,
}

/// An open file of an update: its descriptor and role.
#[derive(Debug)]
pub(crate) struct Open {
    file: File,
    role: Role,
}

impl Files {
    pub(crate) fn new(paths: Paths, tally: &IoTally) -> Self {
        let stats = std::array::from_fn(|_| IoStats::new(tally.buffer_size().bytes() as u64));
        Self { paths, stats, trace: tracing_events() }
    }

    fn call<T>(&mut self, role: Role, op: FileOp, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        timed(&mut self.stats[role.index()], self.trace, op, None, f, |_| None)
    }

    /// `access(2)` on a role's path.
    pub(crate) fn access(&mut self, role: Role, how: Access) -> io::Result<()> {
        let path = self.paths.of_role(role);
        let mode = match how {
            Access::Exists => rustix::fs::Access::EXISTS,
            Access::Writable => rustix::fs::Access::WRITE_OK,
        };
        let call = || rustix::fs::access(path, mode).map_err(io::Error::from);
        timed(&mut self.stats[role.index()], self.trace, FileOp::Access, None, call, |_| None)
    }

    /// `stat(2)` on a role's path.
    pub(crate) fn stat(&mut self, role: Role) -> io::Result<std::fs::Metadata> {
        let path = self.paths.of_role(role);
        timed(&mut self.stats[role.index()], self.trace, FileOp::Stat, None, || std::fs::metadata(path), |_| None)
    }

    /// Open a role's file: read-only, or for writing with `flags`
    /// (`O_CREAT|O_TRUNC`, `O_CREAT|O_EXCL`) and `mode`; `flags` without
    /// `O_CREAT` opens for reading and writing (`r+`).
    pub(crate) fn open(&mut self, role: Role, write: Option<(i32, u32)>) -> io::Result<Open> {
        let path = self.paths.of_role(role);
        let mut o = OpenOptions::new();
        match write {
            None => o.read(true),
            Some((flags, _)) if flags & libc::O_CREAT == 0 => o.read(true).write(true).custom_flags(flags),
            Some((flags, mode)) => o.write(true).custom_flags(flags).mode(mode),
        };
        let file = timed(&mut self.stats[role.index()], self.trace, FileOp::Open, None, || o.open(path), |_| None)?;
        Ok(Open { file, role })
    }

    /// One `read(2)` of at most `into.len()` bytes.
    pub(crate) fn read(&mut self, f: &mut Open, into: &mut [u8]) -> io::Result<usize> {
        let file = &mut f.file;
        timed(&mut self.stats[f.role.index()], self.trace, FileOp::Read, None, || file.read(into), |n| Some(*n))
    }

    /// One `write(2)` of all of `bytes` (counted again if the system
    /// writes less).
    pub(crate) fn write(&mut self, f: &mut Open, mut bytes: &[u8]) -> io::Result<()> {
        let stats = &mut self.stats[f.role.index()];
        while !bytes.is_empty() {
            let file = &mut f.file;
            let n = timed(stats, self.trace, FileOp::Write, None, || file.write(bytes), |_| None)?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            stats.record_written(n);
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// One `lseek(2)` to `to`.
    pub(crate) fn seek(&mut self, f: &mut Open, to: u64) -> io::Result<()> {
        use std::io::Seek;
        let file = &mut f.file;
        self.call(f.role, FileOp::Seek, || file.seek(io::SeekFrom::Start(to))).map(|_| ())
    }

    /// `lseek(2)` by 0 from where the file stands (estream asks so when a
    /// stream turns from reading to writing).
    pub(crate) fn tell(&mut self, f: &mut Open) -> io::Result<()> {
        use std::io::Seek;
        let file = &mut f.file;
        self.call(f.role, FileOp::Seek, || file.stream_position()).map(|_| ())
    }

    /// `close(2)`, which may report a delayed write error (a full disk).
    pub(crate) fn close(&mut self, f: Open) -> io::Result<()> {
        use std::os::fd::IntoRawFd;
        let fd = f.file.into_raw_fd();
        self.call(f.role, FileOp::Close, || {
            // SAFETY: `into_raw_fd` handed over sole ownership of `fd`,
            // an open descriptor, closed here exactly once.
            #[allow(unsafe_code)]
            let rc = unsafe { libc::close(fd) };
            if rc == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        })
    }

    /// `rename(2)` of `from`'s path to `to`'s (counted on `from`).
    pub(crate) fn rename(&mut self, from: Role, to: Role) -> io::Result<()> {
        let (a, b) = (self.paths.of_role(from), self.paths.of_role(to));
        timed(&mut self.stats[from.index()], self.trace, FileOp::Rename, None, || std::fs::rename(a, b), |_| None)
    }

    /// `unlink(2)` of a role's path.
    pub(crate) fn unlink(&mut self, role: Role) -> io::Result<()> {
        let path = self.paths.of_role(role);
        timed(&mut self.stats[role.index()], self.trace, FileOp::Unlink, None, || std::fs::remove_file(path), |_| None)
    }

    /// `unlink(2)` of the lock's probe name (counted on the lock's own file).
    pub(crate) fn unlink_probe(&mut self) -> io::Result<()> {
        let path = &self.paths.own_probe;
        let stats = &mut self.stats[Role::LockOwn.index()];
        timed(stats, self.trace, FileOp::Unlink, None, || std::fs::remove_file(path), |_| None)
    }

    /// `link(2)` of the lock's own file to `to` (the lock, counted on
    /// it) or to its probe name (`None`, counted on the own file).
    pub(crate) fn link_own(&mut self, to: Option<Role>) -> io::Result<()> {
        let from = &self.paths.own;
        let (role, target) = match to {
            Some(r) => (r, self.paths.of_role(r)),
            None => (Role::LockOwn, self.paths.own_probe.as_path()),
        };
        timed(
            &mut self.stats[role.index()],
            self.trace,
            FileOp::Link,
            None,
            || std::fs::hard_link(from, target),
            |_| None,
        )
    }

    /// The counters per file, named by their paths; files nothing was
    /// done to are left out. The store's read handles count apart.
    pub(crate) fn into_rows(self) -> Vec<FileStats> {
        Role::ALL
            .iter()
            .zip(self.stats)
            .filter(|(_, s)| s.total_events() > 0)
            .map(|(r, stats)| FileStats { path: self.paths.of_role(*r).display().to_string(), stats })
            .collect()
    }
}
