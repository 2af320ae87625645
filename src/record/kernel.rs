//! The kernel's event source for `record` (eBPF): the operation columns of
//! `src/record/bpf/attach.bpf.c` and the decoding of what its maps and
//! ring buffer hold, over byte slices. The loader (the command line's
//! `attach`) reads the maps; [`super::Recorded::add_kernel`] sums the
//! cells into the same per-process, per-file statistics the interposer's
//! records make.
//!
//! Every column is one system call as the kernel numbers it (`openat`,
//! `pread64`, `newfstatat`, …): `strace` names them so, and counts them so.

use kbx_record::{OpStats, LAT_BUCKETS, SIZE_BUCKETS};

use crate::events::FileOp;

/// The kernel program's operation columns, in its `enum op` order: the
/// system call's name and the operation it counts as.
pub const OPS: [(&str, FileOp); 40] = [
    ("open", FileOp::Open),
    ("openat", FileOp::Open),
    ("creat", FileOp::Open),
    ("close", FileOp::Close),
    ("read", FileOp::Read),
    ("pread64", FileOp::Read),
    ("readv", FileOp::Read),
    ("preadv", FileOp::Read),
    ("preadv2", FileOp::Read),
    ("write", FileOp::Write),
    ("pwrite64", FileOp::Write),
    ("writev", FileOp::Write),
    ("pwritev", FileOp::Write),
    ("lseek", FileOp::Seek),
    ("fstat", FileOp::Stat),
    ("newfstatat", FileOp::Stat),
    ("statx", FileOp::Stat),
    ("stat", FileOp::Stat),
    ("lstat", FileOp::Stat),
    ("mmap", FileOp::Mmap),
    ("dup", FileOp::Dup),
    ("dup2", FileOp::Dup),
    ("dup3", FileOp::Dup),
    ("fcntl_dup", FileOp::Dup),
    ("fcntl_lock", FileOp::Lock),
    ("ftruncate", FileOp::Truncate),
    ("fsync", FileOp::Sync),
    ("fdatasync", FileOp::Sync),
    ("access", FileOp::Access),
    ("faccessat", FileOp::Access),
    ("faccessat2", FileOp::Access),
    ("rename", FileOp::Rename),
    ("renameat", FileOp::Rename),
    ("renameat2", FileOp::Rename),
    ("unlink", FileOp::Unlink),
    ("unlinkat", FileOp::Unlink),
    ("link", FileOp::Link),
    ("linkat", FileOp::Link),
    ("close_range", FileOp::Close),
    ("openat2", FileOp::Open),
];

/// Bytes of a `cells` key: tgid, file id, operation, padding (u32 each).
pub const CELL_KEY_SIZE: usize = 16;
/// Bytes of a `cells` value: count, errors, bytes, time, then the latency
/// and size histograms (u64 each).
pub const CELL_SIZE: usize = 8 * (4 + LAT_BUCKETS + SIZE_BUCKETS);
/// Bytes of one ring-buffer event.
pub const EVENT_SIZE: usize = 56;
/// Bytes of a `paths` key (the path as the program gave it, NUL-padded).
pub const PATH_LEN: usize = 256;
/// Bytes of a `patterns` value: length, suffix flag, name.
pub const PATTERN_SIZE: usize = 8 + NAME_LEN;
/// Longest watched name the kernel compares, plus its NUL.
pub const NAME_LEN: usize = 64;
/// How many watched names the kernel program holds.
pub const PATTERNS: usize = 16;

/// Indices of the kernel program's `lost` counters.
pub mod lost {
    /// A watched path found the path table full.
    pub const FILES: u32 = 0;
    /// A watched descriptor found the descriptor table full.
    pub const FDS: u32 = 1;
    /// A call found the cell table full.
    pub const CELLS: u32 = 2;
    /// A per-call event found the ring buffer full.
    pub const EVENTS: u32 = 3;
}

/// The ring buffer of per-call events, KiB, unless the user says otherwise.
pub const RING_KIB: u32 = 4096;

/// The ring buffer's size in bytes for `kib` KiB (the default when
/// `None`): a power of two from one page (4 KiB) to 1 GiB, as the kernel
/// requires, rounded up.
pub fn ring_bytes(kib: Option<u32>) -> u32 {
    let kib = kib.unwrap_or(RING_KIB).clamp(4, 1 << 20);
    kib.next_power_of_two() * 1024
}

/// One cell: the calls of one operation by one process on one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Process id (tgid).
    pub pid: u32,
    /// The kernel program's file id (a key of its `paths` map).
    pub file: u32,
    /// Index into [`OPS`].
    pub op: usize,
    /// Counts, bytes, time and histograms.
    pub stats: OpStats,
}

/// One per-call event from the ring buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Index into [`OPS`].
    pub op: usize,
    /// File id.
    pub file: u32,
    /// `CLOCK_MONOTONIC` at the call's entry, ns.
    pub start_ns: u64,
    /// Duration, ns.
    pub dur_ns: u64,
    /// The descriptor (-1 for calls by path).
    pub fd: i64,
    /// The offset argument, -1 if none.
    pub offset: i64,
    /// The return value.
    pub result: i64,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl Cell {
    /// Decode a `cells` entry; `None` if the sizes are wrong or the
    /// operation unknown.
    pub fn decode(key: &[u8], value: &[u8]) -> Option<Cell> {
        if key.len() != CELL_KEY_SIZE || value.len() != CELL_SIZE {
            return None;
        }
        let op = u32_at(key, 8)? as usize;
        if op >= OPS.len() {
            return None;
        }
        let word = |i: usize| u64_at(value, 8 * i).unwrap_or(0);
        let mut stats =
            OpStats { count: word(0), errors: word(1), bytes: word(2), total_ns: word(3), ..OpStats::default() };
        for b in 0..LAT_BUCKETS {
            stats.lat_hist[b] = word(4 + b);
        }
        for b in 0..SIZE_BUCKETS {
            stats.size_hist[b] = word(4 + LAT_BUCKETS + b);
        }
        Some(Cell { pid: u32_at(key, 0)?, file: u32_at(key, 4)?, op, stats })
    }
}

/// One `cells` value out of each CPU's copy (the kernel counts on the
/// CPU a call ran on): every u64 word added up.
pub fn sum_cpus(per_cpu: &[[u8; CELL_SIZE]]) -> [u8; CELL_SIZE] {
    let mut sum = [0u8; CELL_SIZE];
    for (i, word) in sum.chunks_exact_mut(8).enumerate() {
        let total = per_cpu.iter().map(|v| u64_at(v, 8 * i).unwrap_or(0)).fold(0u64, u64::wrapping_add);
        word.copy_from_slice(&total.to_ne_bytes());
    }
    sum
}

impl Event {
    /// Decode a ring-buffer record; `None` if it is not one.
    pub fn decode(b: &[u8]) -> Option<Event> {
        if b.len() < EVENT_SIZE {
            return None;
        }
        let op = u32_at(b, 8)? as usize;
        (op < OPS.len()).then_some(())?;
        Some(Event {
            pid: u32_at(b, 0)?,
            tid: u32_at(b, 4)?,
            op,
            file: u32_at(b, 12)?,
            start_ns: u64_at(b, 16)?,
            dur_ns: u64_at(b, 24)?,
            fd: u64_at(b, 32)? as i64,
            offset: u64_at(b, 40)? as i64,
            result: u64_at(b, 48)? as i64,
        })
    }
}

/// A `paths` key's text: the bytes before the first NUL.
pub fn path_of_key(key: &[u8]) -> String {
    let end = key.iter().position(|b| *b == 0).unwrap_or(key.len());
    String::from_utf8_lossy(&key[..end]).into_owned()
}

/// A `paths` key for `path` (NUL-padded), or `None` if it does not fit.
pub fn key_of_path(path: &[u8]) -> Option<[u8; PATH_LEN]> {
    if path.is_empty() || path.len() >= PATH_LEN {
        return None;
    }
    let mut k = [0u8; PATH_LEN];
    k[..path.len()].copy_from_slice(path);
    Some(k)
}

/// What the kernel can match of one `--watch` glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// A base name, exactly.
    Name(Vec<u8>),
    /// `*SUFFIX`: base names ending so.
    Suffix(Vec<u8>),
}

impl Pattern {
    /// The kernel's form of a glob, or `None` if it has `/`, `?`, `[` or a
    /// `*` anywhere but first, or is too long: the kernel program compares
    /// base names and suffixes only.
    pub fn of_glob(glob: &str) -> Option<Pattern> {
        let b = glob.as_bytes();
        let (suffix, rest) = match b.strip_prefix(b"*") {
            Some(r) => (true, r),
            None => (false, b),
        };
        if rest.is_empty() || rest.len() >= NAME_LEN || rest.iter().any(|c| b"/*?[".contains(c)) {
            return None;
        }
        Some(if suffix { Pattern::Suffix(rest.to_vec()) } else { Pattern::Name(rest.to_vec()) })
    }

    /// Its `patterns` map value.
    pub fn value(&self) -> [u8; PATTERN_SIZE] {
        let (s, suffix) = match self {
            Pattern::Name(s) => (s, 0u32),
            Pattern::Suffix(s) => (s, 1u32),
        };
        let mut v = [0u8; PATTERN_SIZE];
        v[..4].copy_from_slice(&(s.len() as u32).to_ne_bytes());
        v[4..8].copy_from_slice(&suffix.to_ne_bytes());
        v[8..8 + s.len()].copy_from_slice(s);
        v
    }

    /// Whether a path's base name matches (as the kernel program decides).
    pub fn matches(&self, path: &[u8]) -> bool {
        let base = path.rsplit(|c| *c == b'/').next().unwrap_or(path);
        match self {
            Pattern::Name(n) => base == n.as_slice(),
            Pattern::Suffix(s) => base.ends_with(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_is_a_power_of_two_of_pages() {
        assert_eq!(ring_bytes(None), 4 << 20);
        assert_eq!(ring_bytes(Some(4)), 4096);
        assert_eq!(ring_bytes(Some(0)), 4096, "at least a page");
        assert_eq!(ring_bytes(Some(5)), 8192, "rounded up");
        assert_eq!(ring_bytes(Some(u32::MAX)), 1 << 30, "at most 1 GiB");
    }

    #[test]
    fn cells_and_events_decode() {
        let mut key = [0u8; CELL_KEY_SIZE];
        key[..4].copy_from_slice(&42u32.to_ne_bytes());
        key[4..8].copy_from_slice(&7u32.to_ne_bytes());
        key[8..12].copy_from_slice(&5u32.to_ne_bytes());
        let mut value = vec![0u8; CELL_SIZE];
        value[..8].copy_from_slice(&3u64.to_ne_bytes());
        value[16..24].copy_from_slice(&12288u64.to_ne_bytes());
        value[8 * (4 + 10)..8 * (4 + 11)].copy_from_slice(&3u64.to_ne_bytes());
        let c = Cell::decode(&key, &value).unwrap();
        assert_eq!((c.pid, c.file, OPS[c.op].0, c.stats.count, c.stats.bytes), (42, 7, "pread64", 3, 12288));
        assert_eq!(c.stats.lat_hist[10], 3);
        key[8..12].copy_from_slice(&99u32.to_ne_bytes());
        assert!(Cell::decode(&key, &value).is_none());
        assert!(Cell::decode(&key[..8], &value).is_none());

        let mut e = [0u8; EVENT_SIZE];
        e[..4].copy_from_slice(&42u32.to_ne_bytes());
        e[8..12].copy_from_slice(&13u32.to_ne_bytes());
        e[40..48].copy_from_slice(&(-1i64).to_ne_bytes());
        let e = Event::decode(&e).unwrap();
        assert_eq!((e.pid, OPS[e.op].0, e.offset), (42, "lseek", -1));
    }

    #[test]
    fn each_cpus_counts_add_up() {
        let mut a = [0u8; CELL_SIZE];
        let mut b = [0u8; CELL_SIZE];
        a[..8].copy_from_slice(&3u64.to_ne_bytes());
        b[..8].copy_from_slice(&4u64.to_ne_bytes());
        b[CELL_SIZE - 8..].copy_from_slice(&9u64.to_ne_bytes());
        let sum = sum_cpus(&[a, b]);
        assert_eq!(u64_at(&sum, 0), Some(7));
        assert_eq!(u64_at(&sum, CELL_SIZE - 8), Some(9));
        assert_eq!(u64_at(&sum, 8), Some(0));
        assert_eq!(sum_cpus(&[]), [0u8; CELL_SIZE]);
    }

    #[test]
    fn globs_the_kernel_can_match() {
        assert_eq!(Pattern::of_glob("pubring.kbx"), Some(Pattern::Name(b"pubring.kbx".to_vec())));
        assert_eq!(Pattern::of_glob("*.key"), Some(Pattern::Suffix(b".key".to_vec())));
        assert_eq!(Pattern::of_glob("pubring.*"), None);
        assert_eq!(Pattern::of_glob("*/pubring.kbx"), None);
        assert_eq!(Pattern::of_glob("*"), None);
        let p = Pattern::of_glob("pubring.kbx").unwrap();
        assert!(p.matches(b"/home/a/.gnupg/pubring.kbx") && p.matches(b"pubring.kbx"));
        assert!(!p.matches(b"/h/xpubring.kbx"));
        assert!(Pattern::of_glob("*.key").unwrap().matches(b"/h/private-keys-v1.d/AB.key"));
        let v = Pattern::of_glob("*.key").unwrap().value();
        assert_eq!((&v[..4], &v[4..8], &v[8..12]), (&4u32.to_ne_bytes()[..], &1u32.to_ne_bytes()[..], &b".key"[..]));
        assert_eq!(path_of_key(&key_of_path(b"/h/pubring.db").unwrap()), "/h/pubring.db");
        assert!(key_of_path(&[b'a'; PATH_LEN]).is_none());
    }
}
