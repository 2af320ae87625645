//! The record file format of kbxscope's `LD_PRELOAD` interposer (version 1,
//! with the optional stack region of [`stacks`]): one layout definition
//! shared by the writer (`crates/kbx-preload`, whose `writer.rs` fills a
//! process's record file from inside the preloaded library) and the reader
//! (`kbxscope record`, through [`decode`]).
//!
//! Everything is made of little-endian 64-bit words at fixed offsets, so the
//! writer can update every field with one atomic operation and the decoder
//! needs nothing but a byte slice. `PROTOCOL.md`, beside this crate's
//! manifest, describes the same layout in prose; the constants here are the
//! normative definition.
//!
//! The crate is std-only, depends on nothing, does no I/O and has no
//! `unsafe`: the interposer links it into its cdylib as it is, and the main
//! crate decodes with it without linking the interposer. [`Encoder`] builds
//! the bytes the writer would leave behind, for tests and tools. The small
//! layout functions are `#[inline]`: the interposer calls them on every
//! watched call, from another crate (as it did when they were its module).

#![forbid(unsafe_code)]

use std::fmt;

pub mod stacks;
pub use stacks::{Stack, Stacks};

/// The 8 bytes a complete record file starts with. The writer stores them
/// last (release order), so a file without them is still being created.
pub const MAGIC: [u8; 8] = *b"KBXREC\0\x01";
/// Format version; bumped on any incompatible change.
pub const VERSION: u64 = 1;

/// Size of the header region in bytes.
pub const HEADER_SIZE: usize = 4096;
/// Number of file slots (distinct watched paths per process).
pub const FILE_SLOTS: usize = 64;
/// Maximum stored path length in bytes (longer paths are truncated).
pub const PATH_MAX_STORED: usize = 256;
/// Size of one file slot: state word, length word, then the path bytes.
pub const FILE_SLOT_SIZE: usize = 16 + PATH_MAX_STORED;
/// Number of latency histogram buckets (log2 of nanoseconds).
pub const LAT_BUCKETS: usize = 32;
/// Number of access-size histogram buckets (log2 of bytes).
pub const SIZE_BUCKETS: usize = 32;
/// Number of operation columns per file slot (some are reserved).
pub const NUM_OPS: usize = 32;

/// Words in one statistics cell, see the `CELL_*` word indices.
pub const CELL_WORDS: usize = 8 + LAT_BUCKETS + SIZE_BUCKETS;
/// Size of one statistics cell in bytes.
pub const CELL_SIZE: usize = CELL_WORDS * 8;
/// Cell word: number of calls (measured and inferred).
pub const CELL_COUNT: usize = 0;
/// Cell word: calls that failed (returned -1 / NULL / EOF-error).
pub const CELL_ERRORS: usize = 1;
/// Cell word: bytes transferred (sum of positive results; mmap: length).
pub const CELL_BYTES: usize = 2;
/// Cell word: total nanoseconds of the measured calls.
pub const CELL_TOTAL_NS: usize = 3;
/// Cell word: `u64::MAX - min_ns` (0 = no measured call yet), kept with `fetch_max`.
pub const CELL_MIN_INV: usize = 4;
/// Cell word: maximum nanoseconds of one measured call.
pub const CELL_MAX_NS: usize = 5;
/// Cell word: calls inferred (not measured): system calls glibc's stdio made
/// internally, deduced from the FILE state. They have no latency.
pub const CELL_INFERRED: usize = 6;
/// Cell word: reserved, 0.
pub const CELL_RESERVED: usize = 7;
/// Cell word index of latency bucket 0.
pub const CELL_LAT0: usize = 8;
/// Cell word index of size bucket 0.
pub const CELL_SIZE0: usize = 8 + LAT_BUCKETS;

/// Size of one event record in bytes (6 words).
pub const EVENT_SIZE: usize = 48;

/// Byte offset of the file table.
pub const FILES_OFFSET: usize = HEADER_SIZE;
/// Byte offset of the statistics cells: `[FILE_SLOTS][NUM_OPS]` cells.
pub const STATS_OFFSET: usize = FILES_OFFSET + FILE_SLOTS * FILE_SLOT_SIZE;
/// Byte offset of the event region (capacity in the header).
pub const EVENTS_OFFSET: usize = STATS_OFFSET + FILE_SLOTS * NUM_OPS * CELL_SIZE;

/// Header word offsets (bytes).
pub mod hdr {
    /// `MAGIC`, written last.
    pub const MAGIC: usize = 0;
    /// `VERSION`.
    pub const VERSION: usize = 8;
    /// Total file size in bytes.
    pub const TOTAL_SIZE: usize = 16;
    /// Header size (`HEADER_SIZE`).
    pub const HEADER_SIZE: usize = 24;
    /// `FILE_SLOTS` (low 32 bits) | `NUM_OPS` << 32.
    pub const SLOTS_OPS: usize = 32;
    /// `LAT_BUCKETS` (low 32) | `SIZE_BUCKETS` << 32.
    pub const BUCKETS: usize = 40;
    /// Event capacity (number of event records).
    pub const EVENT_CAP: usize = 48;
    /// Process id.
    pub const PID: usize = 56;
    /// Parent process id at creation.
    pub const PPID: usize = 64;
    /// CLOCK_MONOTONIC at creation, ns.
    pub const MONO_NS: usize = 72;
    /// CLOCK_REALTIME at creation, ns since the epoch.
    pub const REAL_NS: usize = 80;
    /// Events lost: a watched path found no free file slot.
    pub const LOST_FILES: usize = 88;
    /// Events lost: a watched fd found no free fd-table entry.
    pub const LOST_FDS: usize = 96;
    /// Next event index (reserved with fetch_add; may exceed capacity).
    pub const EVENT_NEXT: usize = 104;
    /// Events lost because the event region was full.
    pub const LOST_EVENTS: usize = 112;
    /// Length of the program name in bytes.
    pub const PROG_LEN: usize = 120;
    /// Program name bytes (basename of /proc/self/exe), up to 256.
    pub const PROG: usize = 128;
    /// Maximum program name length.
    pub const PROG_MAX: usize = 256;
    /// Entries of the stack region ([`crate::stacks::STACK_SLOTS`]), 0 when
    /// the record has none.
    pub const STACK_SLOTS: usize = 384;
    /// Every how many watched calls one stack is sampled.
    pub const STACK_EVERY: usize = 392;
    /// Stack samples taken.
    pub const STACK_SAMPLES: usize = 400;
    /// Stack samples lost: no free entry within the probe limit.
    pub const STACK_LOST: usize = 408;
    /// Length of the `/proc/self/maps` text at the region's start.
    pub const MAPS_LEN: usize = 416;
}

/// File slot state word: free.
pub const SLOT_FREE: u64 = 0;
/// File slot state word: being written.
pub const SLOT_CLAIMED: u64 = 1;
/// File slot state word: path complete.
pub const SLOT_READY: u64 = 2;

/// Operation columns. The discriminant is the column index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Op {
    /// open, open64, __open_2, __open64_2, openat*, __openat*_2, creat*, and fopen's internal open.
    Open = 0,
    /// close, and fclose's / freopen's internal close.
    Close = 1,
    /// read, __read_chk, and stdio's internal reads.
    Read = 2,
    /// pread, pread64, __pread_chk, __pread64_chk.
    Pread = 3,
    /// readv.
    Readv = 4,
    /// preadv, preadv64.
    Preadv = 5,
    /// write, and stdio's internal writes at fclose.
    Write = 6,
    /// pwrite, pwrite64.
    Pwrite = 7,
    /// writev.
    Writev = 8,
    /// lseek, lseek64, and stdio's internal lseeks.
    Lseek = 9,
    /// fstat, fstat64, __fxstat*, fstatat(fd, "", AT_EMPTY_PATH), and stdio's buffer-allocation fstat.
    Fstat = 10,
    /// stat, lstat, fstatat on a path, __xstat*, __lxstat*, __fxstatat*.
    Stat = 11,
    /// statx (by path or by fd with AT_EMPTY_PATH).
    Statx = 12,
    /// mmap, mmap64 of a watched fd (bytes: length).
    Mmap = 13,
    /// dup, dup2, dup3 of a watched fd.
    Dup = 14,
    /// fcntl(F_DUPFD / F_DUPFD_CLOEXEC) of a watched fd.
    FcntlDup = 15,
    /// ftruncate, ftruncate64.
    Ftruncate = 16,
    /// fsync.
    Fsync = 17,
    /// fdatasync.
    Fdatasync = 18,
    /// access, faccessat, euidaccess on a watched path.
    Access = 19,
    /// A watched fd closed by close_range / closefrom (one per fd).
    CloseRange = 20,
    /// fopen, fopen64, fdopen, freopen (stdio level).
    Fopen = 21,
    /// fclose (stdio level).
    Fclose = 22,
    /// fread, fgets, fgetc, getc, getline, getdelim, __uflow, ... (stdio level; bytes: delivered).
    StdioRead = 23,
    /// fseek, fseeko, ftell, ftello, rewind (stdio level).
    StdioSeek = 24,
    /// rename, renameat, renameat2 of a watched path (counted on the old name).
    Rename = 25,
    /// unlink, unlinkat, remove of a watched path.
    Unlink = 26,
    /// link, linkat to a watched path (counted on the new name: GnuPG takes its lock files so).
    Link = 27,
    /// A wait for a lock another process held: from a `link` to a watched
    /// name that failed with `EEXIST` to the next one that succeeded (its
    /// time the wait's; not a system call).
    LockWait = 28,
}

impl Op {
    /// All operations in column order.
    pub const ALL: [Op; 29] = [
        Op::Open,
        Op::Close,
        Op::Read,
        Op::Pread,
        Op::Readv,
        Op::Preadv,
        Op::Write,
        Op::Pwrite,
        Op::Writev,
        Op::Lseek,
        Op::Fstat,
        Op::Stat,
        Op::Statx,
        Op::Mmap,
        Op::Dup,
        Op::FcntlDup,
        Op::Ftruncate,
        Op::Fsync,
        Op::Fdatasync,
        Op::Access,
        Op::CloseRange,
        Op::Fopen,
        Op::Fclose,
        Op::StdioRead,
        Op::StdioSeek,
        Op::Rename,
        Op::Unlink,
        Op::Link,
        Op::LockWait,
    ];

    /// The column index.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The operation of a column index, if defined.
    pub fn from_index(i: usize) -> Option<Op> {
        Op::ALL.get(i).copied()
    }

    /// A short lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Op::Open => "open",
            Op::Close => "close",
            Op::Read => "read",
            Op::Pread => "pread",
            Op::Readv => "readv",
            Op::Preadv => "preadv",
            Op::Write => "write",
            Op::Pwrite => "pwrite",
            Op::Writev => "writev",
            Op::Lseek => "lseek",
            Op::Fstat => "fstat",
            Op::Stat => "stat",
            Op::Statx => "statx",
            Op::Mmap => "mmap",
            Op::Dup => "dup",
            Op::FcntlDup => "fcntl_dup",
            Op::Ftruncate => "ftruncate",
            Op::Fsync => "fsync",
            Op::Fdatasync => "fdatasync",
            Op::Access => "access",
            Op::CloseRange => "close_range",
            Op::Fopen => "fopen",
            Op::Fclose => "fclose",
            Op::StdioRead => "stdio_read",
            Op::StdioSeek => "stdio_seek",
            Op::Rename => "rename",
            Op::Unlink => "unlink",
            Op::Link => "link",
            Op::LockWait => "lock_wait",
        }
    }
}

// The layout is checked at compile time.
const _: () = assert!(hdr::PROG + hdr::PROG_MAX <= hdr::STACK_SLOTS && hdr::MAPS_LEN + 8 <= HEADER_SIZE);
const _: () = assert!(STATS_OFFSET.is_multiple_of(8) && EVENTS_OFFSET.is_multiple_of(8));
const _: () = assert!(Op::ALL.len() <= NUM_OPS);

/// Byte offset of file slot `slot`.
#[inline]
pub const fn file_slot_offset(slot: usize) -> usize {
    FILES_OFFSET + slot * FILE_SLOT_SIZE
}

/// Byte offset of the statistics cell of (`slot`, `op`).
#[inline]
pub const fn cell_offset(slot: usize, op: usize) -> usize {
    STATS_OFFSET + (slot * NUM_OPS + op) * CELL_SIZE
}

/// Byte offset of event record `i`.
#[inline]
pub const fn event_offset(i: usize) -> usize {
    EVENTS_OFFSET + i * EVENT_SIZE
}

/// Total file size for an event capacity.
#[inline]
pub const fn total_size(event_cap: usize) -> usize {
    EVENTS_OFFSET + event_cap * EVENT_SIZE
}

/// Latency bucket of a duration: 0 for 0–1 ns, else floor(log2(ns)) clamped.
#[inline]
pub const fn lat_bucket(ns: u64) -> usize {
    if ns <= 1 {
        0
    } else {
        let b = (63 - ns.leading_zeros()) as usize;
        if b >= LAT_BUCKETS {
            LAT_BUCKETS - 1
        } else {
            b
        }
    }
}

/// Size bucket of a byte count: 0 for 0 bytes, i for [2^(i-1), 2^i), clamped.
#[inline]
pub const fn size_bucket(bytes: u64) -> usize {
    let b = (64 - bytes.leading_zeros()) as usize;
    if b >= SIZE_BUCKETS {
        SIZE_BUCKETS - 1
    } else {
        b
    }
}

/// Event word 0: `(op + 1) | slot << 16 | tid << 32`; 0 means not yet written.
#[inline]
pub const fn event_tag(op: usize, slot: usize, tid: u32) -> u64 {
    ((op as u64 + 1) & 0xffff) | ((slot as u64 & 0xffff) << 16) | ((tid as u64) << 32)
}

/// Statistics of one (file, operation) cell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpStats {
    /// Calls, measured and inferred.
    pub count: u64,
    /// Failed calls.
    pub errors: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Total ns of the measured calls.
    pub total_ns: u64,
    /// Minimum ns of one measured call (None if none was measured).
    pub min_ns: Option<u64>,
    /// Maximum ns of one measured call.
    pub max_ns: u64,
    /// Calls inferred from stdio state (included in `count`).
    pub inferred: u64,
    /// Latency histogram, log2 ns buckets.
    pub lat_hist: [u64; LAT_BUCKETS],
    /// Access-size histogram, log2 byte buckets.
    pub size_hist: [u64; SIZE_BUCKETS],
}

/// One watched file of a process with its non-empty operation cells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRecord {
    /// Slot index.
    pub slot: usize,
    /// The path as the program gave it (maybe truncated to `PATH_MAX_STORED`).
    pub path: Vec<u8>,
    /// (operation, statistics) for every cell with `count > 0`.
    pub ops: Vec<(Op, OpStats)>,
}

impl FileRecord {
    /// The statistics of one operation, if any call was seen.
    pub fn op(&self, op: Op) -> Option<&OpStats> {
        self.ops.iter().find(|(o, _)| *o == op).map(|(_, s)| s)
    }

    /// The call count of one operation (0 if none).
    pub fn count(&self, op: Op) -> u64 {
        self.op(op).map_or(0, |s| s.count)
    }
}

/// One per-call event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Operation.
    pub op: Op,
    /// File slot.
    pub slot: usize,
    /// Thread id.
    pub tid: u32,
    /// CLOCK_MONOTONIC at the start, ns.
    pub start_ns: u64,
    /// Duration, ns.
    pub dur_ns: u64,
    /// File descriptor.
    pub fd: i64,
    /// Offset argument, or -1 when the call has none.
    pub offset: i64,
    /// Return value (or byte count).
    pub result: i64,
}

/// A decoded record file: one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Format version.
    pub version: u64,
    /// Process id.
    pub pid: u32,
    /// Parent process id at creation.
    pub ppid: u32,
    /// Program name.
    pub program: Vec<u8>,
    /// CLOCK_MONOTONIC at creation, ns.
    pub mono_ns: u64,
    /// CLOCK_REALTIME at creation, ns since the epoch.
    pub real_ns: u64,
    /// Events lost for lack of a file slot.
    pub lost_files: u64,
    /// Events lost for lack of an fd-table entry.
    pub lost_fds: u64,
    /// Events lost because the event region was full.
    pub lost_events: u64,
    /// Event capacity.
    pub event_cap: u64,
    /// Watched files.
    pub files: Vec<FileRecord>,
    /// Complete events in index order.
    pub events: Vec<Event>,
    /// Sampled call stacks, if the record was made with them.
    pub stacks: Option<Stacks>,
}

impl Record {
    /// Sum of one operation's count over all files whose path ends with `suffix`.
    pub fn count(&self, suffix: &[u8], op: Op) -> u64 {
        self.files.iter().filter(|f| f.path.ends_with(suffix)).map(|f| f.count(op)).sum()
    }

    /// The program name as text (lossy).
    pub fn program_name(&self) -> String {
        String::from_utf8_lossy(&self.program).into_owned()
    }
}

/// Why a byte slice is not a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than the fixed part.
    TooShort(usize),
    /// The magic is missing: not a record, or still being created.
    BadMagic,
    /// Another format version.
    Version(u64),
    /// Header geometry differs from this decoder's constants.
    Geometry(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::TooShort(n) => write!(f, "record file too short ({n} bytes)"),
            DecodeError::BadMagic => write!(f, "no record magic (not a record, or still being created)"),
            DecodeError::Version(v) => write!(f, "unsupported record version {v}"),
            DecodeError::Geometry(what) => write!(f, "record geometry mismatch: {what}"),
        }
    }
}

impl std::error::Error for DecodeError {}

fn word(b: &[u8], off: usize) -> u64 {
    match b.get(off..off + 8) {
        Some(s) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_le_bytes(a)
        }
        None => 0,
    }
}

fn decode_cell(b: &[u8], off: usize) -> OpStats {
    let w = |i: usize| word(b, off + i * 8);
    let min_inv = w(CELL_MIN_INV);
    let mut s = OpStats {
        count: w(CELL_COUNT),
        errors: w(CELL_ERRORS),
        bytes: w(CELL_BYTES),
        total_ns: w(CELL_TOTAL_NS),
        min_ns: if min_inv == 0 { None } else { Some(u64::MAX - min_inv) },
        max_ns: w(CELL_MAX_NS),
        inferred: w(CELL_INFERRED),
        ..OpStats::default()
    };
    for i in 0..LAT_BUCKETS {
        s.lat_hist[i] = w(CELL_LAT0 + i);
    }
    for i in 0..SIZE_BUCKETS {
        s.size_hist[i] = w(CELL_SIZE0 + i);
    }
    s
}

/// Decode a record file (a complete copy of its bytes; it may be live).
pub fn decode(b: &[u8]) -> Result<Record, DecodeError> {
    if b.len() < EVENTS_OFFSET {
        return Err(DecodeError::TooShort(b.len()));
    }
    if b[hdr::MAGIC..hdr::MAGIC + 8] != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    let version = word(b, hdr::VERSION);
    if version != VERSION {
        return Err(DecodeError::Version(version));
    }
    if word(b, hdr::HEADER_SIZE) != HEADER_SIZE as u64 {
        return Err(DecodeError::Geometry("header size"));
    }
    if word(b, hdr::SLOTS_OPS) != (FILE_SLOTS as u64 | (NUM_OPS as u64) << 32) {
        return Err(DecodeError::Geometry("slots/ops"));
    }
    if word(b, hdr::BUCKETS) != (LAT_BUCKETS as u64 | (SIZE_BUCKETS as u64) << 32) {
        return Err(DecodeError::Geometry("buckets"));
    }
    let event_cap = word(b, hdr::EVENT_CAP);
    let prog_len = (word(b, hdr::PROG_LEN) as usize).min(hdr::PROG_MAX);
    let mut files = Vec::new();
    for slot in 0..FILE_SLOTS {
        let off = file_slot_offset(slot);
        if word(b, off) != SLOT_READY {
            continue;
        }
        let len = (word(b, off + 8) as usize).min(PATH_MAX_STORED);
        let path = b[off + 16..off + 16 + len].to_vec();
        let mut ops = Vec::new();
        for op in Op::ALL {
            let s = decode_cell(b, cell_offset(slot, op.index()));
            if s.count > 0 {
                ops.push((op, s));
            }
        }
        files.push(FileRecord { slot, path, ops });
    }
    let mut events = Vec::new();
    let n = word(b, hdr::EVENT_NEXT).min(event_cap);
    for i in 0..n as usize {
        let off = event_offset(i);
        if off + EVENT_SIZE > b.len() {
            break;
        }
        let tag = word(b, off);
        let Some(op) = Op::from_index(((tag & 0xffff) as usize).wrapping_sub(1)) else {
            continue;
        };
        events.push(Event {
            op,
            slot: ((tag >> 16) & 0xffff) as usize,
            tid: (tag >> 32) as u32,
            start_ns: word(b, off + 8),
            dur_ns: word(b, off + 16),
            fd: word(b, off + 24) as i64,
            offset: word(b, off + 32) as i64,
            result: word(b, off + 40) as i64,
        });
    }
    Ok(Record {
        version,
        pid: word(b, hdr::PID) as u32,
        ppid: word(b, hdr::PPID) as u32,
        program: b[hdr::PROG..hdr::PROG + prog_len].to_vec(),
        mono_ns: word(b, hdr::MONO_NS),
        real_ns: word(b, hdr::REAL_NS),
        lost_files: word(b, hdr::LOST_FILES),
        lost_fds: word(b, hdr::LOST_FDS),
        lost_events: word(b, hdr::LOST_EVENTS),
        event_cap,
        files,
        events,
        stacks: usize::try_from(event_cap).ok().and_then(|cap| stacks::decode(b, cap)),
    })
}

/// A plain (non-atomic) encoder of the same layout, for tests and tools: it
/// builds the bytes the writer would leave behind.
#[derive(Clone, Debug)]
pub struct Encoder {
    /// The file bytes.
    pub bytes: Vec<u8>,
}

impl Encoder {
    /// A complete, empty record with a header.
    pub fn new(pid: u32, ppid: u32, program: &[u8], event_cap: usize) -> Encoder {
        let mut e = Encoder { bytes: vec![0; total_size(event_cap)] };
        e.put(hdr::VERSION, VERSION);
        e.put(hdr::TOTAL_SIZE, total_size(event_cap) as u64);
        e.put(hdr::HEADER_SIZE, HEADER_SIZE as u64);
        e.put(hdr::SLOTS_OPS, FILE_SLOTS as u64 | (NUM_OPS as u64) << 32);
        e.put(hdr::BUCKETS, LAT_BUCKETS as u64 | (SIZE_BUCKETS as u64) << 32);
        e.put(hdr::EVENT_CAP, event_cap as u64);
        e.put(hdr::PID, pid as u64);
        e.put(hdr::PPID, ppid as u64);
        let n = program.len().min(hdr::PROG_MAX);
        e.put(hdr::PROG_LEN, n as u64);
        e.bytes[hdr::PROG..hdr::PROG + n].copy_from_slice(&program[..n]);
        e.bytes[hdr::MAGIC..hdr::MAGIC + 8].copy_from_slice(&MAGIC);
        e
    }

    /// Store a little-endian word at a byte offset.
    pub fn put(&mut self, off: usize, v: u64) {
        self.bytes[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }

    fn get(&self, off: usize) -> u64 {
        word(&self.bytes, off)
    }

    /// Fill a file slot.
    pub fn file(&mut self, slot: usize, path: &[u8]) {
        let off = file_slot_offset(slot);
        let n = path.len().min(PATH_MAX_STORED);
        self.bytes[off + 16..off + 16 + n].copy_from_slice(&path[..n]);
        self.put(off + 8, n as u64);
        self.put(off, SLOT_READY);
    }

    /// Add one measured call, the way the writer does.
    pub fn call(&mut self, slot: usize, op: Op, ns: u64, bytes: u64, failed: bool) {
        let c = cell_offset(slot, op.index());
        let add = |e: &mut Encoder, i: usize, v: u64| {
            let old = e.get(c + i * 8);
            e.put(c + i * 8, old.wrapping_add(v));
        };
        add(self, CELL_COUNT, 1);
        add(self, CELL_ERRORS, failed as u64);
        add(self, CELL_BYTES, bytes);
        add(self, CELL_TOTAL_NS, ns);
        let mi = self.get(c + CELL_MIN_INV * 8).max(u64::MAX - ns);
        self.put(c + CELL_MIN_INV * 8, mi);
        let ma = self.get(c + CELL_MAX_NS * 8).max(ns);
        self.put(c + CELL_MAX_NS * 8, ma);
        add(self, CELL_LAT0 + lat_bucket(ns), 1);
        add(self, CELL_SIZE0 + size_bucket(bytes), 1);
    }

    /// Append one event.
    pub fn event(&mut self, ev: &Event) {
        let i = self.get(hdr::EVENT_NEXT) as usize;
        self.put(hdr::EVENT_NEXT, i as u64 + 1);
        if i as u64 >= self.get(hdr::EVENT_CAP) {
            let l = self.get(hdr::LOST_EVENTS);
            self.put(hdr::LOST_EVENTS, l + 1);
            return;
        }
        let off = event_offset(i);
        self.put(off + 8, ev.start_ns);
        self.put(off + 16, ev.dur_ns);
        self.put(off + 24, ev.fd as u64);
        self.put(off + 32, ev.offset as u64);
        self.put(off + 40, ev.result as u64);
        self.put(off, event_tag(ev.op.index(), ev.slot, ev.tid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_consistent() {
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(op.index(), i);
            assert_eq!(Op::from_index(i), Some(*op));
        }
        assert_eq!(Op::from_index(Op::ALL.len()), None);
        // The numbers PROTOCOL.md states.
        assert_eq!(
            (FILES_OFFSET, STATS_OFFSET, EVENTS_OFFSET, CELL_SIZE, FILE_SLOT_SIZE),
            (4096, 21504, 1201152, 576, 272)
        );
    }

    #[test]
    fn buckets() {
        assert_eq!(lat_bucket(0), 0);
        assert_eq!(lat_bucket(1), 0);
        assert_eq!(lat_bucket(2), 1);
        assert_eq!(lat_bucket(1023), 9);
        assert_eq!(lat_bucket(1024), 10);
        assert_eq!(lat_bucket(u64::MAX), LAT_BUCKETS - 1);
        assert_eq!(size_bucket(0), 0);
        assert_eq!(size_bucket(1), 1);
        assert_eq!(size_bucket(4096), 13);
        assert_eq!(size_bucket(4095), 12);
        assert_eq!(size_bucket(u64::MAX), SIZE_BUCKETS - 1);
    }

    #[test]
    fn round_trip() {
        let mut e = Encoder::new(42, 7, b"gpg", 4);
        e.file(0, b"/h/pubring.kbx");
        e.file(3, b"pubring.db");
        e.call(0, Op::Read, 1500, 4096, false);
        e.call(0, Op::Read, 500, 100, false);
        e.call(0, Op::Open, 10, 0, true);
        e.call(3, Op::Pread, 7, 4096, false);
        for i in 0..6 {
            e.event(&Event {
                op: Op::Read,
                slot: 0,
                tid: 99,
                start_ns: 1000 + i,
                dur_ns: 5,
                fd: 3,
                offset: -1,
                result: 4096,
            });
        }
        let r = decode(&e.bytes).unwrap();
        assert_eq!((r.pid, r.ppid, r.program.as_slice()), (42, 7, &b"gpg"[..]));
        assert_eq!(r.files.len(), 2);
        assert_eq!(r.files[0].path, b"/h/pubring.kbx");
        let rd = r.files[0].op(Op::Read).unwrap();
        assert_eq!((rd.count, rd.bytes, rd.total_ns, rd.min_ns, rd.max_ns), (2, 4196, 2000, Some(500), 1500));
        assert_eq!(rd.lat_hist[lat_bucket(1500)], 1);
        assert_eq!(rd.size_hist[size_bucket(4096)], 1);
        assert_eq!(r.files[0].op(Op::Open).unwrap().errors, 1);
        assert_eq!(r.files[1].slot, 3);
        assert_eq!(r.count(b"pubring.db", Op::Pread), 1);
        assert_eq!(r.count(b"pubring.kbx", Op::Pread), 0);
        assert_eq!(r.events.len(), 4);
        assert_eq!(r.lost_events, 2);
        assert_eq!(r.events[3].start_ns, 1003);
        assert_eq!(r.events[0].tid, 99);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(matches!(decode(&[0; 10]), Err(DecodeError::TooShort(10))));
        let mut e = Encoder::new(1, 1, b"x", 0);
        e.bytes[0] = b'X';
        assert_eq!(decode(&e.bytes), Err(DecodeError::BadMagic));
        let mut e = Encoder::new(1, 1, b"x", 0);
        e.put(hdr::VERSION, 2);
        assert_eq!(decode(&e.bytes), Err(DecodeError::Version(2)));
        let mut e = Encoder::new(1, 1, b"x", 0);
        e.put(hdr::SLOTS_OPS, 5);
        assert!(matches!(decode(&e.bytes), Err(DecodeError::Geometry(_))));
    }

    #[test]
    fn incomplete_event_skipped() {
        let mut e = Encoder::new(1, 1, b"x", 2);
        e.put(hdr::EVENT_NEXT, 1); // reserved but its tag not yet stored
        assert!(decode(&e.bytes).unwrap().events.is_empty());
    }
}
