//! What the I/O layer counts: file events (system calls), logical reads,
//! blobs read and — for observed handles — the fixed-bucket distributions
//! of event durations and read sizes.
//!
//! [`IoStats`] is the one place an event is counted. Everything else
//! (the `--io-summary`, a sweep's rows, the Prometheus families) is read
//! from it, so the numbers agree by construction.

use std::time::Duration;

use serde::Serialize;

use crate::kbx::BlobType;

/// Upper bounds (inclusive, nanoseconds) of the event-duration buckets:
/// 1 µs to 1 s, four per decade. Above the last is `+Inf`.
pub const DURATION_BOUNDS_NS: [u64; 25] = [
    1_000,
    1_780,
    3_160,
    5_620,
    10_000,
    17_800,
    31_600,
    56_200,
    100_000,
    178_000,
    316_000,
    562_000,
    1_000_000,
    1_780_000,
    3_160_000,
    5_620_000,
    10_000_000,
    17_800_000,
    31_600_000,
    56_200_000,
    100_000_000,
    178_000_000,
    316_000_000,
    562_000_000,
    1_000_000_000,
];

/// Upper bounds (inclusive, bytes) of the read-size buckets, after
/// Darshan's access-size bins. Above the last is `+Inf`.
pub const SIZE_BOUNDS: [u64; 10] =
    [0, 100, 1024, 10_240, 102_400, 1_048_576, 4_194_304, 10_485_760, 104_857_600, 1_073_741_824];

/// Counts per bucket of a fixed-bucket histogram with `S - 1` bounds (the
/// last slot is `+Inf`). Not cumulative: each sample is in one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buckets<const S: usize>(pub [u64; S]);

impl<const S: usize> Default for Buckets<S> {
    fn default() -> Self {
        Self([0; S])
    }
}

impl<const S: usize> Buckets<S> {
    /// Count `value` in the first bucket whose bound is `>=` it (Prometheus'
    /// `le`). A linear scan from the smallest bound: file events land in the
    /// first few buckets, where the scan's branches are predictable.
    #[inline]
    fn record(&mut self, bounds: &[u64], value: u64) {
        let i = bounds.iter().position(|b| value <= *b).unwrap_or(bounds.len());
        self.0[i] += 1;
    }

    /// Samples in all buckets.
    pub fn count(&self) -> u64 {
        self.0.iter().sum()
    }

    fn merge(&mut self, other: &Self) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    fn minus(&self, earlier: &Self) -> Self {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(earlier.0.iter()) {
            *a -= b;
        }
        out
    }
}

/// Slots of a duration histogram (bounds plus `+Inf`).
pub const DURATION_SLOTS: usize = DURATION_BOUNDS_NS.len() + 1;
/// Slots of a read-size histogram (bounds plus `+Inf`).
pub const SIZE_SLOTS: usize = SIZE_BOUNDS.len() + 1;

/// Where every event of an observed handle fell: duration buckets per
/// operation and size buckets of `read(2)` results. Their sums are the
/// matching [`IoStats`] fields (`time_ns`, `bytes_read`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventHistograms {
    /// Event durations, per operation in [`FileOp::EVERY`] order.
    pub durations: [Buckets<DURATION_SLOTS>; FileOp::COUNT],
    /// Bytes returned by each successful `read(2)`.
    pub read_sizes: Buckets<SIZE_SLOTS>,
}

impl EventHistograms {
    /// Count `n` events of `op` that each took about `ns` (a producer that
    /// bucketed them itself hands over a representative value per bucket).
    pub fn add_durations(&mut self, op: FileOp, ns: u64, n: u64) {
        let b = &mut self.durations[op.index()];
        let i = DURATION_BOUNDS_NS.iter().position(|x| ns <= *x).unwrap_or(DURATION_BOUNDS_NS.len());
        b.0[i] += n;
    }

    /// Count `n` reads that each returned about `bytes`.
    pub fn add_read_sizes(&mut self, bytes: u64, n: u64) {
        let i = SIZE_BOUNDS.iter().position(|x| bytes <= *x).unwrap_or(SIZE_BOUNDS.len());
        self.read_sizes.0[i] += n;
    }

    fn merge(&mut self, other: &Self) {
        for (a, b) in self.durations.iter_mut().zip(other.durations.iter()) {
            a.merge(b);
        }
        self.read_sizes.merge(&other.read_sizes);
    }

    fn minus(&self, earlier: &Self) -> Self {
        let mut out = self.clone();
        for (a, b) in out.durations.iter_mut().zip(earlier.durations.iter()) {
            *a = a.minus(b);
        }
        out.read_sizes = self.read_sizes.minus(&earlier.read_sizes);
        out
    }
}

/// Blobs read completely, by type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PerBlobType {
    /// Empty (deleted) blobs.
    pub empty: u64,
    /// The header blob.
    pub header: u64,
    /// OpenPGP keyblocks.
    pub openpgp: u64,
    /// X.509 certificates.
    pub x509: u64,
    /// Blobs of a type kbxscope does not know.
    pub unknown: u64,
}

impl PerBlobType {
    /// Every type's label, in the order of [`PerBlobType::values`].
    pub const NAMES: [&'static str; 5] = ["empty", "header", "openpgp", "x509", "unknown"];

    /// The counts in the order of [`PerBlobType::NAMES`].
    pub fn values(&self) -> [u64; 5] {
        [self.empty, self.header, self.openpgp, self.x509, self.unknown]
    }

    fn add(&mut self, ty: BlobType) {
        *match ty {
            BlobType::Empty => &mut self.empty,
            BlobType::Header => &mut self.header,
            BlobType::OpenPgp => &mut self.openpgp,
            BlobType::X509 => &mut self.x509,
            BlobType::Unknown(_) => &mut self.unknown,
        } += 1;
    }

    fn merge(&mut self, o: &Self) {
        self.empty += o.empty;
        self.header += o.header;
        self.openpgp += o.openpgp;
        self.x509 += o.x509;
        self.unknown += o.unknown;
    }

    fn minus(&self, e: &Self) -> Self {
        Self {
            empty: self.empty - e.empty,
            header: self.header - e.header,
            openpgp: self.openpgp - e.openpgp,
            x509: self.x509 - e.x509,
            unknown: self.unknown - e.unknown,
        }
    }
}

/// A system call on a keybox file.
///
/// kbxscope's own I/O issues the first five ([`FileOp::ALL`]); the others
/// ([`FileOp::MORE`]) come from other producers (the calls of a recorded
/// program) and appear in reports only when they happened.
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
}

impl FileOp {
    /// kbxscope's own operations, in report order: the keys every summary has.
    pub const ALL: [FileOp; 5] = [FileOp::Open, FileOp::Read, FileOp::Seek, FileOp::Close, FileOp::Stat];

    /// The operations only other producers issue, in report order: reported
    /// when non-zero.
    pub const MORE: [FileOp; 6] =
        [FileOp::Write, FileOp::Mmap, FileOp::Dup, FileOp::Access, FileOp::Truncate, FileOp::Sync];

    /// Number of operations.
    pub const COUNT: usize = 11;

    /// Every operation: [`FileOp::ALL`], then [`FileOp::MORE`].
    pub const EVERY: [FileOp; FileOp::COUNT] = [
        FileOp::Open,
        FileOp::Read,
        FileOp::Seek,
        FileOp::Close,
        FileOp::Stat,
        FileOp::Write,
        FileOp::Mmap,
        FileOp::Dup,
        FileOp::Access,
        FileOp::Truncate,
        FileOp::Sync,
    ];

    /// The position in [`FileOp::MORE`], for those operations.
    #[inline]
    fn more_index(self) -> Option<usize> {
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
        }
    }
}

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

    fn slot(&mut self, op: FileOp) -> Option<&mut u64> {
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

    fn merge(&mut self, other: &PerOp) {
        for op in FileOp::ALL {
            self.add(op, other.get(op));
        }
    }

    fn minus(&self, earlier: &PerOp) -> PerOp {
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
    pub events: [u64; 6],
    /// Nanoseconds per operation.
    pub time_ns: [u64; 6],
}

impl MoreOps {
    fn merge(&mut self, o: &MoreOps) {
        for i in 0..6 {
            self.events[i] += o.events[i];
            self.time_ns[i] += o.time_ns[i];
        }
    }

    fn minus(&self, e: &MoreOps) -> MoreOps {
        let mut out = *self;
        for i in 0..6 {
            out.events[i] -= e.events[i];
            out.time_ns[i] -= e.time_ns[i];
        }
        out
    }
}

/// The `events` or `time_ns` map of a summary: the five keys of
/// [`FileOp::ALL`], then those of [`FileOp::MORE`] that are non-zero, then
/// `total` over all of them.
struct OpsMap<'a> {
    base: &'a PerOp,
    more: &'a [u64; 6],
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

/// Counters of one buffer size: file events by operation, their time, the
/// bytes `read(2)` returned and the logical reads the buffer served.
///
/// Plain integers: updating them costs an add, no lock and no allocation.
/// Serializes to the `--io-summary=json` form (the operations of
/// [`FileOp::MORE`] only when non-zero).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IoStats {
    /// The buffer size in bytes (0 = unbuffered).
    pub buffer_size: u64,
    /// File events (system calls) by operation, and their total.
    pub events: PerOp,
    /// Bytes returned by `read(2)`.
    pub bytes_read: u64,
    /// Reads asked of the buffered layer (served from the buffer or not).
    pub logical_reads: u64,
    /// Nanoseconds spent in the system calls, by operation (monotonic clock).
    pub time_ns: PerOp,
    /// Bytes `read(2)` returned beyond the file's size at open (the file
    /// grew while it was read); they were not used.
    pub beyond_end: u64,
    /// Blobs read completely, by type (counted by the blob reader).
    pub blobs: PerBlobType,
    /// The distributions of the events, when the handle is observed
    /// (metrics on); `None` costs the hot path one branch.
    pub histograms: Option<Box<EventHistograms>>,
    /// Events of the operations of [`FileOp::MORE`] (other producers only).
    pub more: MoreOps,
}

impl Serialize for IoStats {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("buffer_size", &self.buffer_size)?;
        m.serialize_entry("events", &OpsMap { base: &self.events, more: &self.more.events })?;
        m.serialize_entry("bytes_read", &self.bytes_read)?;
        m.serialize_entry("logical_reads", &self.logical_reads)?;
        m.serialize_entry("time_ns", &OpsMap { base: &self.time_ns, more: &self.more.time_ns })?;
        if self.beyond_end != 0 {
            m.serialize_entry("beyond_end", &self.beyond_end)?;
        }
        m.end()
    }
}

impl IoStats {
    /// Empty counters for a buffer of `buffer_size` bytes.
    pub fn new(buffer_size: u64) -> Self {
        Self { buffer_size, ..Self::default() }
    }

    /// Empty counters that also keep [`EventHistograms`].
    pub fn with_histograms(buffer_size: u64) -> Self {
        Self { histograms: Some(Box::default()), ..Self::new(buffer_size) }
    }

    /// Count one system call and the time it took.
    #[inline]
    pub fn record(&mut self, op: FileOp, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.add_counts(op, 1, ns);
        if let Some(h) = &mut self.histograms {
            h.durations[op.index()].record(&DURATION_BOUNDS_NS, ns);
        }
    }

    /// Events of one operation, whatever it is.
    pub fn count(&self, op: FileOp) -> u64 {
        op.more_index().map_or_else(|| self.events.get(op), |i| self.more.events[i])
    }

    /// Nanoseconds of one operation, whatever it is.
    pub fn time(&self, op: FileOp) -> u64 {
        op.more_index().map_or_else(|| self.time_ns.get(op), |i| self.more.time_ns[i])
    }

    /// Events over every operation (the summary's `total`).
    pub fn total_events(&self) -> u64 {
        self.events.total() + self.more.events.iter().sum::<u64>()
    }

    /// Nanoseconds over every operation.
    pub fn total_time(&self) -> u64 {
        self.time_ns.total() + self.more.time_ns.iter().sum::<u64>()
    }

    /// Count `n` calls of `op` that took `ns` together, without
    /// histograms (a producer that buckets them itself adds those).
    #[inline]
    pub fn add_counts(&mut self, op: FileOp, n: u64, ns: u64) {
        match op.more_index() {
            None => {
                self.events.add(op, n);
                self.time_ns.add(op, ns);
            }
            Some(i) => {
                self.more.events[i] += n;
                self.more.time_ns[i] += ns;
            }
        }
    }

    /// Count one event from any producer (see [`super::FileEvent`]): the
    /// same counting as the I/O layer's own calls.
    pub fn record_event(&mut self, e: &super::FileEvent<'_>) {
        self.record(e.op, e.duration);
        if let (FileOp::Read, Some(n), None) = (e.op, e.bytes, e.errno) {
            self.record_read(usize::try_from(n).unwrap_or(usize::MAX));
        }
    }

    /// Count the bytes one successful `read(2)` returned.
    #[inline]
    pub fn record_read(&mut self, bytes: usize) {
        self.bytes_read += bytes as u64;
        if let Some(h) = &mut self.histograms {
            h.read_sizes.record(&SIZE_BOUNDS, bytes as u64);
        }
    }

    /// Count one blob read completely.
    #[inline]
    pub fn record_blob(&mut self, ty: BlobType) {
        self.blobs.add(ty);
    }

    /// Add another set of counters (of the same buffer size) to this one;
    /// histograms only when both keep them.
    pub fn merge(&mut self, other: &IoStats) {
        self.events.merge(&other.events);
        self.time_ns.merge(&other.time_ns);
        self.bytes_read += other.bytes_read;
        self.logical_reads += other.logical_reads;
        self.beyond_end += other.beyond_end;
        self.more.merge(&other.more);
        self.blobs.merge(&other.blobs);
        if let (Some(a), Some(b)) = (&mut self.histograms, &other.histograms) {
            a.merge(b);
        }
    }

    /// What was counted after `earlier`, a past copy of these counters.
    pub fn since(&self, earlier: &IoStats) -> IoStats {
        IoStats {
            buffer_size: self.buffer_size,
            events: self.events.minus(&earlier.events),
            bytes_read: self.bytes_read - earlier.bytes_read,
            logical_reads: self.logical_reads - earlier.logical_reads,
            time_ns: self.time_ns.minus(&earlier.time_ns),
            beyond_end: self.beyond_end - earlier.beyond_end,
            blobs: self.blobs.minus(&earlier.blobs),
            more: self.more.minus(&earlier.more),
            histograms: match (&self.histograms, &earlier.histograms) {
                (Some(a), Some(b)) => Some(Box::new(a.minus(b))),
                (a, _) => a.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape() {
        let mut s = IoStats::new(8192);
        s.record(FileOp::Open, Duration::from_nanos(5));
        s.record(FileOp::Read, Duration::from_nanos(7));
        s.record(FileOp::Read, Duration::from_nanos(7));
        s.bytes_read = 10;
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["buffer_size"], 8192);
        assert_eq!(v["events"]["read"], 2);
        assert_eq!(v["events"]["total"], 3);
        assert_eq!(v["time_ns"]["read"], 14);
        assert_eq!(v["bytes_read"], 10);
        assert_eq!(v["logical_reads"], 0);
        let mut t = IoStats::new(8192);
        t.merge(&s);
        t.merge(&s);
        assert_eq!(t.events.total(), 6);
        assert_eq!(t.since(&s).events, s.events);
        assert!(serde_json::to_value(&t).unwrap().get("blobs").is_none(), "the summary keeps its form");
    }

    /// Bucketing is Prometheus' `le`: a value on a bound is in that bucket;
    /// every sample is in exactly one bucket; deltas subtract exactly.
    #[test]
    fn histograms_bucket_every_event_once() {
        let mut s = IoStats::with_histograms(8192);
        for ns in [0u64, 1_000, 1_001, 999_999_999, 1_000_000_000, 1_000_000_001, u64::MAX / 2] {
            s.record(FileOp::Read, Duration::from_nanos(ns));
        }
        for bytes in [0usize, 100, 101, 8192, 2 << 30] {
            s.record_read(bytes);
        }
        let h = s.histograms.as_deref().unwrap();
        let reads = &h.durations[FileOp::Read.index()];
        assert_eq!(reads.count(), s.events.read);
        assert_eq!(reads.0[0], 2, "0 and 1000 ns are <= 1 µs");
        assert_eq!(reads.0[1], 1);
        assert_eq!(reads.0[DURATION_SLOTS - 2], 2, "<= 1 s");
        assert_eq!(reads.0[DURATION_SLOTS - 1], 2, "+Inf");
        assert_eq!(h.read_sizes.0, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1]);
        let before = s.clone();
        s.record(FileOp::Seek, Duration::from_nanos(5));
        let d = s.since(&before);
        assert_eq!(d.events.total(), 1);
        let dh = d.histograms.unwrap();
        assert_eq!(dh.durations[FileOp::Seek.index()].0[0], 1);
        assert_eq!(dh.durations[FileOp::Read.index()].count(), 0);
    }
}
