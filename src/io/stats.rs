//! What the I/O layer counts: file events (system calls) and logical reads.

use std::time::Duration;

use serde::Serialize;

/// A system call on a keybox file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileOp {
    /// `openat(2)`.
    Open,
    /// `read(2)`.
    Read,
    /// `lseek(2)`.
    Seek,
    /// `close(2)`.
    Close,
    /// `fstat`/`statx` on the open descriptor.
    Stat,
}

impl FileOp {
    /// Every operation, in report order.
    pub const ALL: [FileOp; 5] = [FileOp::Open, FileOp::Read, FileOp::Seek, FileOp::Close, FileOp::Stat];

    /// The lowercase name used in reports and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            FileOp::Open => "open",
            FileOp::Read => "read",
            FileOp::Seek => "seek",
            FileOp::Close => "close",
            FileOp::Stat => "stat",
        }
    }
}

/// One number per [`FileOp`].
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
        }
    }

    fn slot(&mut self, op: FileOp) -> &mut u64 {
        match op {
            FileOp::Open => &mut self.open,
            FileOp::Read => &mut self.read,
            FileOp::Seek => &mut self.seek,
            FileOp::Close => &mut self.close,
            FileOp::Stat => &mut self.stat,
        }
    }

    /// Add `v` to one operation.
    pub fn add(&mut self, op: FileOp, v: u64) {
        *self.slot(op) += v;
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
/// Serializes to the `--io-summary=json` form.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
    #[serde(skip_serializing_if = "is_zero")]
    pub beyond_end: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl IoStats {
    /// Empty counters for a buffer of `buffer_size` bytes.
    pub fn new(buffer_size: u64) -> Self {
        Self { buffer_size, ..Self::default() }
    }

    /// Count one system call and the time it took.
    #[inline]
    pub fn record(&mut self, op: FileOp, took: Duration) {
        self.events.add(op, 1);
        self.time_ns.add(op, took.as_nanos() as u64);
    }

    /// Add another set of counters (of the same buffer size) to this one.
    pub fn merge(&mut self, other: &IoStats) {
        self.events.merge(&other.events);
        self.time_ns.merge(&other.time_ns);
        self.bytes_read += other.bytes_read;
        self.logical_reads += other.logical_reads;
        self.beyond_end += other.beyond_end;
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
    }
}
