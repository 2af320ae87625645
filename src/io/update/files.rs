//! The counted system calls of a keybox update on the files beside the
//! read handles: the temporary file, the backup, the lock file and the
//! lock's own file, and the store's path itself (its `access`, `rename`
//! and the copy's stream). Each call is timed, counted on the file it
//! names and traced like every other file event.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::super::event::{timed, tracing_events};
use super::super::sys;
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

pub(crate) use crate::io::sys::{Access, WriteMode};

/// The paths of one keybox's update files.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    /// Where the keybox is written and renamed (inside the private copy).
    pub(crate) store: PathBuf,
    /// Where the keybox is read, checked and named: the store itself,
    /// or, for a replay that only reads ([`Paths::beside`]), the user's
    /// keybox, never written.
    pub(crate) source: PathBuf,
    pub(crate) tmp: PathBuf,
    pub(crate) backup: PathBuf,
    pub(crate) lock: PathBuf,
    pub(crate) own: PathBuf,
    pub(crate) own_probe: PathBuf,
    /// The host named in the lock's own file (and written into it).
    pub(crate) host: String,
}

/// `store`'s name with `suffix` appended (`.tmp`, `~`, `.lock`).
pub(super) fn with_suffix(store: &Path, suffix: &str) -> PathBuf {
    let mut s = store.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

impl Paths {
    /// GnuPG's names around `store`: `.tmp`, `~`, `.lock`, and the lock's
    /// own file `.#lk0x<16 hex digits>.<host>.<pid>` in the same directory.
    pub(crate) fn of(store: &Path, host: &str) -> Self {
        let with = |suffix| with_suffix(store, suffix);
        let dir = store.parent().unwrap_or(Path::new("."));
        let own_name = format!(".#lk0x{:016x}.{host}.{}", 0x5000_0000_u64, std::process::id());
        let own = dir.join(&own_name);
        let own_probe = dir.join(format!("{own_name}x"));
        let (tmp, backup, lock) = (with(".tmp"), with("~"), with(".lock"));
        Self {
            store: store.to_path_buf(),
            source: store.to_path_buf(),
            tmp,
            backup,
            lock,
            own,
            own_probe,
            host: host.to_string(),
        }
    }

    /// GnuPG's names for the keybox `source`, which is only read, with
    /// every file written (the lock's, the temporary copy, and the keybox
    /// when it is replaced) in the private directory `dir` instead.
    pub(crate) fn beside(source: &Path, dir: &Path, host: &str) -> Self {
        let name = source.file_name().map_or_else(|| "pubring.kbx".into(), |n| n.to_os_string());
        Self { source: source.to_path_buf(), ..Self::of(&dir.join(name), host) }
    }

    /// Whether the keybox is read from where it is written.
    pub(crate) fn reads_in_place(&self) -> bool {
        self.source == self.store
    }

    /// The file a role names: the one read, checked and counted on.
    pub(crate) fn of_role(&self, role: Role) -> &Path {
        match role {
            Role::Store => &self.source,
            Role::Tmp => &self.tmp,
            Role::Backup => &self.backup,
            Role::Lock => &self.lock,
            Role::LockOwn => &self.own,
        }
    }

    /// The file a role's writes and renames go to.
    fn written(&self, role: Role) -> &Path {
        match role {
            Role::Store => &self.store,
            r => self.of_role(r),
        }
    }
}

/// The counters of an update's files, one per [`Role`].
#[derive(Debug)]
pub(crate) struct Files {
    pub(crate) paths: Paths,
    counters: Counters,
}

/// The counters of an update's files, one per [`Role`], apart from the
/// paths so that a call can borrow a path while it is counted.
#[derive(Debug)]
struct Counters {
    stats: [IoStats; 5],
    trace: bool,
}

impl Counters {
    /// Time and count `f`, an `op` on `role`'s file at `at`; `bytes` says
    /// what a read returned.
    fn call<T>(
        &mut self,
        role: Role,
        op: FileOp,
        at: Option<u64>,
        f: impl FnOnce() -> io::Result<T>,
        bytes: impl Fn(&T) -> Option<usize>,
    ) -> io::Result<T> {
        timed(&mut self.stats[role.index()], self.trace, op, at, f, bytes)
    }
}

/// An open file of an update: its descriptor and role.
#[derive(Debug)]
pub(crate) struct Open {
    file: File,
    role: Role,
    /// The file position (traced with each read, write and seek).
    pos: u64,
}

impl Files {
    pub(crate) fn new(paths: Paths, tally: &IoTally) -> Self {
        let stats = std::array::from_fn(|_| tally.fresh_stats());
        Self { paths, counters: Counters { stats, trace: tracing_events() } }
    }

    fn call<T>(&mut self, role: Role, op: FileOp, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        self.counters.call(role, op, None, f, |_| None)
    }

    /// `access(2)` on a role's path.
    pub(crate) fn access(&mut self, role: Role, how: Access) -> io::Result<()> {
        let path = self.paths.of_role(role);
        // Through libc on Unix, as GnuPG calls it: an interposer (`record`) sees it.
        let call = || sys::access(path, how);
        self.counters.call(role, FileOp::Access, None, call, |_| None)
    }

    /// `stat(2)` on a role's path.
    pub(crate) fn stat(&mut self, role: Role) -> io::Result<std::fs::Metadata> {
        let path = self.paths.of_role(role);
        self.counters.call(role, FileOp::Stat, None, || std::fs::metadata(path), |_| None)
    }

    /// Open a role's file: read-only, or for writing as `write` says.
    pub(crate) fn open(&mut self, role: Role, write: Option<WriteMode>) -> io::Result<Open> {
        // The user's keybox, only read: not even its access time changes
        // where the kernel allows O_NOATIME (the file's owner); else a
        // second, plain open (both counted: both are real calls).
        let quiet = write.is_none() && role == Role::Store && !self.paths.reads_in_place();
        let path = match write {
            None => self.paths.of_role(role),
            Some(_) => self.paths.written(role),
        };
        let counters = &mut self.counters;
        let mut open = |noatime: bool| {
            counters.call(role, FileOp::Open, None, || sys::open_for_update(path, write, noatime), |_| None)
        };
        let file = match open(quiet) {
            Err(e) if quiet && sys::retry_plain(&e) => open(false),
            r => r,
        }?;
        Ok(Open { file, role, pos: 0 })
    }

    /// One `read(2)` of at most `into.len()` bytes.
    pub(crate) fn read(&mut self, f: &mut Open, into: &mut [u8]) -> io::Result<usize> {
        let (file, at) = (&mut f.file, Some(f.pos));
        let n = self.counters.call(f.role, FileOp::Read, at, || file.read(into), |n| Some(*n))?;
        f.pos += n as u64;
        Ok(n)
    }

    /// One `write(2)` of all of `bytes` (counted again if the system
    /// writes less).
    pub(crate) fn write(&mut self, f: &mut Open, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let (file, at) = (&mut f.file, Some(f.pos));
            let n = self.counters.call(f.role, FileOp::Write, at, || file.write(bytes), |_| None)?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            f.pos += n as u64;
            self.counters.stats[f.role.index()].record_written(n);
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// One `lseek(2)` to `to`.
    pub(crate) fn seek(&mut self, f: &mut Open, to: u64) -> io::Result<()> {
        use std::io::Seek;
        let file = &mut f.file;
        self.counters.call(f.role, FileOp::Seek, Some(to), || file.seek(io::SeekFrom::Start(to)), |_| None)?;
        f.pos = to;
        Ok(())
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
        let file = f.file;
        self.call(f.role, FileOp::Close, || sys::close_file(file))
    }

    /// `rename(2)` of `from`'s path to `to`'s (counted on `from`). The
    /// user's keybox is never renamed: when only it is read, an empty
    /// stand-in in the private directory takes the rename (made uncounted,
    /// with one `mknod`: it is kbxscope's call, not GnuPG's).
    pub(crate) fn rename(&mut self, from: Role, to: Role) -> io::Result<()> {
        let (a, b) = (self.paths.written(from), self.paths.written(to));
        if from == Role::Store && !self.paths.reads_in_place() {
            sys::make_stand_in(a)?;
        }
        self.counters.call(from, FileOp::Rename, None, || std::fs::rename(a, b), |_| None)
    }

    /// `unlink(2)` of a role's path.
    pub(crate) fn unlink(&mut self, role: Role) -> io::Result<()> {
        let path = self.paths.of_role(role);
        self.counters.call(role, FileOp::Unlink, None, || std::fs::remove_file(path), |_| None)
    }

    /// `unlink(2)` of the lock's probe name (counted on the lock's own file).
    pub(crate) fn unlink_probe(&mut self) -> io::Result<()> {
        let path = &self.paths.own_probe;
        self.counters.call(Role::LockOwn, FileOp::Unlink, None, || std::fs::remove_file(path), |_| None)
    }

    /// `link(2)` of the lock's own file to `to` (the lock, counted on
    /// it) or to its probe name (`None`, counted on the own file).
    pub(crate) fn link_own(&mut self, to: Option<Role>) -> io::Result<()> {
        let from = &self.paths.own;
        let (role, target) = match to {
            Some(r) => (r, self.paths.of_role(r)),
            None => (Role::LockOwn, self.paths.own_probe.as_path()),
        };
        self.counters.call(role, FileOp::Link, None, || std::fs::hard_link(from, target), |_| None)
    }

    /// The counters per file, named by their paths; files nothing was
    /// done to are left out. The store's read handles count apart.
    pub(crate) fn into_rows(self) -> Vec<FileStats> {
        Role::ALL
            .iter()
            .zip(self.counters.stats)
            .filter(|(_, s)| s.total_events() > 0)
            .map(|(r, stats)| FileStats { path: self.paths.of_role(*r).display().to_string(), stats })
            .collect()
    }
}
