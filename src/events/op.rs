//! The operations a file event can be ([`FileOp`]) and one number per
//! operation ([`PerOp`]), serialized with today's keys first and the rarer
//! operations only when they happened.

use serde::Serialize;

/// A system call on a keybox file.
///
/// kbxscope's reads issue the first five ([`FileOp::ALL`]); the others
/// ([`FileOp::MORE`]) come from the write replays, SQLite and recorded
/// programs, and appear in reports only when they happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileOp {
    /// `openat(2)`.
    Open,
    /// `read(2)` (a recorded program's `pread`, `readv`, `preadv` too).
    Read,
    /// `lseek(2)`.
    Seek,
    /// `close(2)`.
    Close,
    /// `fstat`/`statx` on the open descriptor (a recorded program's `stat`
    /// by path too).
    Stat,
    /// `write`, `pwrite`, `writev`.
    Write,
    /// `mmap` of the file.
    Mmap,
    /// `dup`, `dup2`, `dup3`, `fcntl(F_DUPFD…)` of a descriptor on the file.
    Dup,
    /// `access`/`faccessat` on the path.
    Access,
    /// `ftruncate`.
    Truncate,
    /// `fsync`, `fdatasync`.
    Sync,
    /// `fcntl(F_SETLK/F_SETLKW/F_GETLK)`: a byte-range lock taken, released
    /// or tested (SQLite's locking).
    Lock,
    /// `rename(2)` of the file (counted on the name it had).
    Rename,
    /// `unlink(2)` of the file.
    Unlink,
    /// `link(2)` making the file (GnuPG's lock files are taken by linking).
    Link,
}

impl FileOp {
    /// kbxscope's own operations, in report order: the keys every summary has.
    pub const ALL: [FileOp; 5] = [FileOp::Open, FileOp::Read, FileOp::Seek, FileOp::Close, FileOp::Stat];

    /// The operations only other producers issue, in report order: reported
    /// when non-zero.
    pub const MORE: [FileOp; 10] = [
        FileOp::Write,
        FileOp::Mmap,
        FileOp::Dup,
        FileOp::Access,
        FileOp::Truncate,
        FileOp::Sync,
        FileOp::Lock,
        FileOp::Rename,
        FileOp::Unlink,
        FileOp::Link,
    ];

    /// Number of operations.
    pub(crate) const COUNT: usize = FileOp::ALL.len() + FileOp::MORE.len();

    /// Every operation: [`FileOp::ALL`], then [`FileOp::MORE`].
    pub const EVERY: [FileOp; FileOp::COUNT] = {
        let mut every = [FileOp::Open; FileOp::COUNT];
        let mut i = 0;
        while i < FileOp::COUNT {
            every[i] = if i < FileOp::ALL.len() { FileOp::ALL[i] } else { FileOp::MORE[i - FileOp::ALL.len()] };
            i += 1;
        }
        every
    };

    /// The position in [`FileOp::MORE`], for those operations.
    #[inline]
    pub(super) fn more_index(self) -> Option<usize> {
        self.index().checked_sub(FileOp::ALL.len())
    }

    /// The position of this operation in [`FileOp::EVERY`] (and in
    /// [`FileOp::ALL`] for those five).
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The lowercase name used in reports and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            FileOp::Open => "open",
            FileOp::Read => "read",
            FileOp::Seek => "seek",
            FileOp::Close => "close",
            FileOp::Stat => "stat",
            FileOp::Write => "write",
            FileOp::Mmap => "mmap",
            FileOp::Dup => "dup",
            FileOp::Access => "access",
            FileOp::Truncate => "truncate",
            FileOp::Sync => "sync",
            FileOp::Lock => "lock",
            FileOp::Rename => "rename",
            FileOp::Unlink => "unlink",
            FileOp::Link => "link",
        }
    }
}

// `FileOp::index` is the discriminant: it must be the place in `EVERY`.
const _: () = {
    let mut i = 0;
    while i < FileOp::COUNT {
        assert!(FileOp::EVERY[i] as usize == i);
        i += 1;
    }
};

/// One number per operation of [`FileOp::ALL`] (the others are in
/// [`MoreOps`]: [`PerOp::get`] is 0 for them and [`PerOp::add`] ignores them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerOp {
    /// Opens.
    pub open: u64,
    /// Reads.
    pub read: u64,
    /// Seeks.
    pub seek: u64,
    /// Closes.
    pub close: u64,
    /// Stats.
    pub stat: u64,
}

impl PerOp {
    /// The value for one operation.
    pub fn get(&self, op: FileOp) -> u64 {
        match op {
            FileOp::Open => self.open,
            FileOp::Read => self.read,
            FileOp::Seek => self.seek,
            FileOp::Close => self.close,
            FileOp::Stat => self.stat,
            _ => 0,
        }
    }

    pub(super) fn slot(&mut self, op: FileOp) -> Option<&mut u64> {
        Some(match op {
            FileOp::Open => &mut self.open,
            FileOp::Read => &mut self.read,
            FileOp::Seek => &mut self.seek,
            FileOp::Close => &mut self.close,
            FileOp::Stat => &mut self.stat,
            _ => return None,
        })
    }

    /// Add `v` to one operation (of [`FileOp::ALL`]).
    #[inline]
    pub fn add(&mut self, op: FileOp, v: u64) {
        if let Some(n) = self.slot(op) {
            *n += v;
        }
    }

    /// Sum over all operations.
    pub fn total(&self) -> u64 {
        self.open + self.read + self.seek + self.close + self.stat
    }

    pub(super) fn merge(&mut self, other: &PerOp) {
        for op in FileOp::ALL {
            self.add(op, other.get(op));
        }
    }

    pub(super) fn minus(&self, earlier: &PerOp) -> PerOp {
        let mut out = *self;
        for op in FileOp::ALL {
            if let Some(n) = out.slot(op) {
                *n -= earlier.get(op);
            }
        }
        out
    }
}

/// Counts and times of the operations of [`FileOp::MORE`], which only
/// other producers issue (index: the position in [`FileOp::MORE`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MoreOps {
    /// Events per operation.
    pub events: [u64; FileOp::MORE.len()],
    /// Nanoseconds per operation.
    pub time_ns: [u64; FileOp::MORE.len()],
}

impl MoreOps {
    pub(super) fn merge(&mut self, o: &MoreOps) {
        for i in 0..FileOp::MORE.len() {
            self.events[i] += o.events[i];
            self.time_ns[i] += o.time_ns[i];
        }
    }

    pub(super) fn minus(&self, e: &MoreOps) -> MoreOps {
        let mut out = *self;
        for i in 0..FileOp::MORE.len() {
            out.events[i] -= e.events[i];
            out.time_ns[i] -= e.time_ns[i];
        }
        out
    }
}

/// The `events` or `time_ns` map of a summary: the five keys of
/// [`FileOp::ALL`], then those of [`FileOp::MORE`] that are non-zero, then
/// `total` over all of them.
pub(super) struct OpsMap<'a> {
    pub(super) base: &'a PerOp,
    pub(super) more: &'a [u64; FileOp::MORE.len()],
}

impl Serialize for OpsMap<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for op in FileOp::ALL {
            m.serialize_entry(op.name(), &self.base.get(op))?;
        }
        for (op, n) in FileOp::MORE.iter().zip(self.more) {
            if *n != 0 {
                m.serialize_entry(op.name(), n)?;
            }
        }
        m.serialize_entry("total", &(self.base.total() + self.more.iter().sum::<u64>()))?;
        m.end()
    }
}

impl Serialize for PerOp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(6))?;
        for op in FileOp::ALL {
            m.serialize_entry(op.name(), &self.get(op))?;
        }
        m.serialize_entry("total", &self.total())?;
        m.end()
    }
}
