//! What the I/O layer counts: file events (system calls), logical reads,
//! blobs read and — for observed handles — the fixed-bucket distributions
//! of event durations and read sizes.
//!
//! [`IoStats`] is the one place an event is counted. Everything else
//! (the `--io-summary`, a sweep's rows, the Prometheus families) is read
//! from it, so the numbers agree by construction.

use std::time::Duration;

use serde::Serialize;

use super::histogram::{EventHistograms, DURATION_BOUNDS_NS, SIZE_BOUNDS};
use super::op::{FileOp, MoreOps, OpsMap, PerOp};

use crate::kbx::BlobType;

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
    pub(crate) const NAMES: [&'static str; 5] = ["empty", "header", "openpgp", "x509", "unknown"];

    /// The counts in the order of `PerBlobType::NAMES`.
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

/// Waits for a lock another process held (GnuPG's keybox lock file): not
/// system calls, so not file events; counted and timed apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LockWaits {
    /// Waits.
    pub count: u64,
    /// Nanoseconds waited, all waits together.
    pub time_ns: u64,
}

impl LockWaits {
    fn merge(&mut self, o: &Self) {
        self.count += o.count;
        self.time_ns += o.time_ns;
    }

    fn minus(&self, e: &Self) -> Self {
        Self { count: self.count - e.count, time_ns: self.time_ns - e.time_ns }
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
    /// Bytes `write(2)` wrote (the write replays; a recorded program).
    pub bytes_written: u64,
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
    /// Waits for another process's lock.
    pub lock_waits: LockWaits,
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
        if self.bytes_written != 0 {
            m.serialize_entry("bytes_written", &self.bytes_written)?;
        }
        if self.beyond_end != 0 {
            m.serialize_entry("beyond_end", &self.beyond_end)?;
        }
        if self.lock_waits.count != 0 {
            m.serialize_entry("lock_waits", &self.lock_waits)?;
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
    pub(crate) fn with_histograms(buffer_size: u64) -> Self {
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
    pub(crate) fn add_counts(&mut self, op: FileOp, n: u64, ns: u64) {
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

    /// Count the bytes one successful `read(2)` returned.
    #[inline]
    pub(crate) fn record_read(&mut self, bytes: usize) {
        self.bytes_read += bytes as u64;
        if let Some(h) = &mut self.histograms {
            h.read_sizes.record(&SIZE_BOUNDS, bytes as u64);
        }
    }

    /// Count the bytes one successful `write(2)` wrote.
    #[inline]
    pub(crate) fn record_written(&mut self, bytes: usize) {
        self.bytes_written += bytes as u64;
    }

    /// Count one blob read completely.
    /// One wait of `ns` nanoseconds for another process's lock.
    pub(crate) fn record_lock_wait(&mut self, ns: u64) {
        self.lock_waits.count += 1;
        self.lock_waits.time_ns += ns;
    }

    #[inline]
    pub(crate) fn record_blob(&mut self, ty: BlobType) {
        self.blobs.add(ty);
    }

    /// Add another set of counters (of the same buffer size) to this one;
    /// histograms only when both keep them.
    pub(crate) fn merge(&mut self, other: &IoStats) {
        self.events.merge(&other.events);
        self.time_ns.merge(&other.time_ns);
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.logical_reads += other.logical_reads;
        self.beyond_end += other.beyond_end;
        self.more.merge(&other.more);
        self.lock_waits.merge(&other.lock_waits);
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
            bytes_written: self.bytes_written - earlier.bytes_written,
            logical_reads: self.logical_reads - earlier.logical_reads,
            time_ns: self.time_ns.minus(&earlier.time_ns),
            beyond_end: self.beyond_end - earlier.beyond_end,
            blobs: self.blobs.minus(&earlier.blobs),
            more: self.more.minus(&earlier.more),
            lock_waits: self.lock_waits.minus(&earlier.lock_waits),
            histograms: match (&self.histograms, &earlier.histograms) {
                (Some(a), Some(b)) => Some(Box::new(a.minus(b))),
                (a, _) => a.clone(),
            },
        }
    }
}

/// The events on one file, by the path its opener gave (SQLite's files of
/// a database; a recorded process's watched files).
#[derive(Debug, Clone, Default)]
pub struct FileStats {
    /// The path as the program (or SQLite) gave it.
    pub path: String,
    /// Its events.
    pub stats: IoStats,
}

#[cfg(test)]
mod tests {
    use super::super::histogram::DURATION_SLOTS;
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
