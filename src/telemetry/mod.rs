//! Metric names and the handles the I/O layer updates.
//!
//! Library code only emits through the `metrics` facade: with no recorder
//! installed every handle is a no-op. The binary installs the Prometheus
//! exporter once (`--metrics-listen`, `--metrics-out`). Handles are
//! registered once per buffer size ([`IoMetrics::register`]) and reused,
//! so a file event costs a counter increment and a histogram sample.
//!
//! Every family has base units in its name, `_total` on counters, and a
//! description ([`describe`]). No label carries a path or another
//! unbounded value: `op`, `buffer_size` (bytes), `type`, `lookup`,
//! `result`, `command`, `version`.

use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, histogram, Counter, Histogram, Unit};

use crate::io::FileOp;
use crate::kbx::BlobType;

pub mod sink;

/// System calls on keybox files, by `op` and `buffer_size`.
pub const FILE_EVENTS: &str = "kbx_file_events_total";
/// Time spent in those calls (histogram), by `op` and `buffer_size`.
pub const FILE_EVENT_DURATION: &str = "kbx_file_event_duration_seconds";
/// Bytes returned by `read(2)`, by `buffer_size`.
pub const FILE_READ_BYTES: &str = "kbx_file_read_bytes_total";
/// Reads asked of the buffered layer, by `buffer_size`.
pub const LOGICAL_READS: &str = "kbx_logical_reads_total";
/// Sizes of `read(2)` results (histogram), by `buffer_size`.
pub const READ_SIZE: &str = "kbx_read_size_bytes";
/// Blobs read completely, by `type`.
pub const BLOBS_READ: &str = "kbx_blobs_read_total";
/// Passes over a keybox (listing passes and lookups), by `lookup`.
pub const KEYBOX_SCANS: &str = "kbx_keybox_scans_total";
/// Certificates validated, by `result` (`good` or `bad`).
pub const CERTIFICATES_VALIDATED: &str = "kbx_certificates_validated_total";
/// Wall time of a command (histogram), by `command` and `buffer_size`.
pub const COMMAND_DURATION: &str = "kbx_command_duration_seconds";
/// Always 1, labelled with the `version`.
pub const BUILD_INFO: &str = "kbx_build_info";

/// Histogram buckets for durations: 1 µs to 1 s, four per decade.
pub const DURATION_BUCKETS: [f64; 25] = [
    1e-6, 1.78e-6, 3.16e-6, 5.62e-6, 1e-5, 1.78e-5, 3.16e-5, 5.62e-5, 1e-4, 1.78e-4, 3.16e-4, 5.62e-4, 1e-3, 1.78e-3,
    3.16e-3, 5.62e-3, 1e-2, 1.78e-2, 3.16e-2, 5.62e-2, 0.1, 0.178, 0.316, 0.562, 1.0,
];

/// Histogram buckets for read sizes, after Darshan's access-size bins.
pub const SIZE_BUCKETS: [f64; 10] =
    [0.0, 100.0, 1024.0, 10_240.0, 102_400.0, 1_048_576.0, 4_194_304.0, 10_485_760.0, 104_857_600.0, 1_073_741_824.0];

static ENABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turn on the I/O layer's metric handles, once a recorder is installed
/// (the binary calls this when it installs the exporter; tests with a
/// local recorder call it too). Until then [`crate::io::IoTally`]
/// registers no handles and a file event costs no metrics work at all —
/// not even the per-handle bucketing.
pub fn enable() {
    ENABLED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`enable`] was called.
pub fn enabled() -> bool {
    ENABLED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Describe every family to the recorder installed now.
pub fn describe() {
    describe_counter!(
        FILE_EVENTS,
        Unit::Count,
        "System calls kbxscope issued on keybox files (open, read, seek, close, stat)."
    );
    describe_histogram!(FILE_EVENT_DURATION, Unit::Seconds, "Time spent in each system call on a keybox file.");
    describe_counter!(FILE_READ_BYTES, Unit::Bytes, "Bytes returned by read(2) on keybox files.");
    describe_counter!(LOGICAL_READS, Unit::Count, "Reads asked of the buffered layer, served from the buffer or not.");
    describe_histogram!(READ_SIZE, Unit::Bytes, "Bytes returned by each read(2) on a keybox file.");
    describe_counter!(BLOBS_READ, Unit::Count, "Keybox blobs read completely, by blob type.");
    describe_counter!(
        KEYBOX_SCANS,
        Unit::Count,
        "Passes over a keybox: listing passes and issuer lookups, by lookup strategy."
    );
    describe_counter!(CERTIFICATES_VALIDATED, Unit::Count, "X.509 certificates validated, by result.");
    describe_histogram!(COMMAND_DURATION, Unit::Seconds, "Wall time of a kbxscope command.");
    describe_gauge!(BUILD_INFO, Unit::Count, "Always 1; the version label says which kbxscope this is.");
}

/// Pending counts and histogram samples flush after this many system calls
/// (and when the handle closes), so a scraper sees a long scan progress.
pub const FLUSH_EVERY: u32 = 1024;

/// Slots of a [`LocalHistogram`]: one per bucket bound plus `+Inf`.
const SLOTS: usize = DURATION_BUCKETS.len() + 1;

/// A histogram a handle fills privately between flushes: per bucket, how
/// many samples fell in it and their sum. Flushing hands each non-empty
/// bucket to the recorder as `record_many(mean, count)`: the mean of
/// samples in `(lower, upper]` lies in that bucket, so the exported
/// bucket counts, `_count` and `_sum` are exactly what one `record` per
/// sample would have given.
#[derive(Debug, Clone)]
pub struct LocalHistogram {
    counts: [u64; SLOTS],
    sums: [f64; SLOTS],
}

impl Default for LocalHistogram {
    fn default() -> Self {
        Self { counts: [0; SLOTS], sums: [0.0; SLOTS] }
    }
}

impl LocalHistogram {
    /// Add one sample, bucketed by `bounds` as Prometheus does (`value <= le`).
    /// A linear scan from the smallest bound: file events land in the first
    /// few buckets (microseconds; a buffer's worth of bytes), where a
    /// scan's branches are predictable and a binary search's are not.
    #[inline]
    pub fn record(&mut self, bounds: &[f64], value: f64) {
        let i = bounds.iter().position(|b| value <= *b).unwrap_or(bounds.len());
        self.counts[i] += 1;
        self.sums[i] += value;
    }

    /// Take the non-empty buckets as `(mean, count)` and empty the histogram.
    pub fn take(&mut self) -> Vec<(f64, u64)> {
        let mut out = Vec::new();
        for (c, s) in self.counts.iter_mut().zip(self.sums.iter_mut()) {
            if *c > 0 {
                out.push((*s / *c as f64, std::mem::take(c)));
                *s = 0.0;
            }
        }
        out
    }
}

/// Counts and samples a handle has not yet handed to the recorder: plain
/// numbers, so the hot path touches no shared cache line.
#[derive(Debug, Clone, Default)]
pub struct PendingCounts {
    events: [u64; 5],
    durations: [LocalHistogram; 5],
    read_sizes: LocalHistogram,
    bytes: u64,
    /// Logical reads not yet added.
    pub logical_reads: u64,
    unflushed: u32,
}

/// Handles for one buffer size, registered once and cloned into each handle.
#[derive(Clone)]
pub struct IoMetrics {
    events: [Counter; 5],
    durations: [Histogram; 5],
    read_bytes: Counter,
    logical_reads: Counter,
    read_sizes: Histogram,
    blobs: [Counter; 5],
}

impl std::fmt::Debug for IoMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IoMetrics")
    }
}

fn op_index(op: FileOp) -> usize {
    match op {
        FileOp::Open => 0,
        FileOp::Read => 1,
        FileOp::Seek => 2,
        FileOp::Close => 3,
        FileOp::Stat => 4,
    }
}

impl IoMetrics {
    /// Register the handles for `buffer_size` bytes with the current recorder.
    pub fn register(buffer_size: u64) -> Self {
        let size = buffer_size.to_string();
        let per_op = |name: &'static str| FileOp::ALL.map(|op| (name, op.name()));
        let events = per_op(FILE_EVENTS).map(|(n, op)| counter!(n, "op" => op, "buffer_size" => size.clone()));
        let durations =
            per_op(FILE_EVENT_DURATION).map(|(n, op)| histogram!(n, "op" => op, "buffer_size" => size.clone()));
        let blobs = ["empty", "header", "openpgp", "x509", "unknown"].map(|t| counter!(BLOBS_READ, "type" => t));
        Self {
            events,
            durations,
            read_bytes: counter!(FILE_READ_BYTES, "buffer_size" => size.clone()),
            logical_reads: counter!(LOGICAL_READS, "buffer_size" => size.clone()),
            read_sizes: histogram!(READ_SIZE, "buffer_size" => size),
            blobs,
        }
    }

    /// One system call and its duration, counted at once (for the rare
    /// events: open, stat, close).
    #[inline]
    pub fn event(&self, op: FileOp, took: Duration) {
        let i = op_index(op);
        self.events[i].increment(1);
        self.durations[i].record(took.as_secs_f64());
    }

    /// One system call and its duration, kept in `pending` until the next
    /// [`flush`](Self::flush).
    #[inline]
    pub fn timed(&self, op: FileOp, took: Duration, pending: &mut PendingCounts) {
        let i = op_index(op);
        pending.events[i] += 1;
        pending.durations[i].record(&DURATION_BUCKETS, took.as_secs_f64());
        pending.unflushed += 1;
        if pending.unflushed >= FLUSH_EVERY {
            self.flush(pending);
        }
    }

    /// What one `read(2)` returned, kept in `pending`.
    #[inline]
    pub fn read_result(&self, bytes: usize, pending: &mut PendingCounts) {
        pending.bytes += bytes as u64;
        pending.read_sizes.record(&SIZE_BUCKETS, bytes as f64);
    }

    /// Hand the pending counts and samples to the recorder and zero them.
    pub fn flush(&self, pending: &mut PendingCounts) {
        for (i, n) in pending.events.iter_mut().enumerate() {
            if *n > 0 {
                self.events[i].increment(*n);
                *n = 0;
            }
        }
        self.read_bytes.increment(std::mem::take(&mut pending.bytes));
        self.logical_reads.increment(std::mem::take(&mut pending.logical_reads));
        for (h, local) in self.durations.iter().zip(pending.durations.iter_mut()) {
            sink::record(h, local.take());
        }
        sink::record(&self.read_sizes, pending.read_sizes.take());
        pending.unflushed = 0;
    }

    /// One blob read completely.
    #[inline]
    pub fn blob(&self, ty: BlobType) {
        let i = match ty {
            BlobType::Empty => 0,
            BlobType::Header => 1,
            BlobType::OpenPgp => 2,
            BlobType::X509 => 3,
            BlobType::Unknown(_) => 4,
        };
        self.blobs[i].increment(1);
    }
}

/// Count one pass over the keybox for `lookup` (`list`, `gnupg`, `scan`, `index`, …).
pub fn scan_started(lookup: &'static str) {
    counter!(KEYBOX_SCANS, "lookup" => lookup).increment(1);
}

/// Count one validated certificate.
pub fn certificate_validated(good: bool) {
    counter!(CERTIFICATES_VALIDATED, "result" => if good { "good" } else { "bad" }).increment(1);
}

/// Record a command's wall time.
pub fn command_finished(command: &'static str, buffer_size: u64, took: Duration) {
    histogram!(COMMAND_DURATION, "command" => command, "buffer_size" => buffer_size.to_string())
        .record(took.as_secs_f64());
}

/// Set the build-info gauge.
pub fn build_info() {
    metrics::gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    use crate::io::{BufferSize, IoTally, KeyboxFile};

    /// Bucketing locally and recording `(mean, count)` per bucket gives the
    /// exporter's histogram exactly what one sample per event would.
    #[test]
    fn local_buckets_export_exactly() {
        let samples: Vec<f64> = (0..5000).map(|i| 1e-7 * 1.0037f64.powi(i)).collect();
        let mut local = super::LocalHistogram::default();
        let mut direct = metrics_util::storage::Histogram::new(&super::DURATION_BUCKETS).unwrap();
        for v in &samples {
            local.record(&super::DURATION_BUCKETS, *v);
            direct.record(*v);
        }
        // exactly on a bound: Prometheus's `le` includes it
        local.record(&super::DURATION_BUCKETS, 1e-3);
        direct.record(1e-3);
        let mut via_local = metrics_util::storage::Histogram::new(&super::DURATION_BUCKETS).unwrap();
        for (mean, count) in local.take() {
            for _ in 0..count {
                via_local.record(mean);
            }
        }
        assert_eq!(via_local.buckets(), direct.buckets());
        assert_eq!(via_local.count(), 5001);
        assert!((via_local.sum() - direct.sum()).abs() < 1e-9 * direct.sum());
        assert!(local.take().is_empty(), "take empties it");
    }

    /// Exact counter values for a known file and buffer, with a local recorder.
    #[test]
    fn counts_every_event_exactly() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gnupg-mixed.kbx");
        let size = include_bytes!("../../tests/fixtures/gnupg-mixed.kbx").len() as u64;
        super::enable();
        let rec = DebuggingRecorder::new();
        let snap = rec.snapshotter();
        metrics::with_local_recorder(&rec, || {
            let tally = IoTally::new(BufferSize::Bytes(8192));
            let mut f = KeyboxFile::open(&path, &tally).unwrap();
            let out = crate::workload::stats::run(&mut f);
            assert!(out.error.is_none());
        });
        let mut counters = std::collections::BTreeMap::new();
        let mut hist_counts = std::collections::BTreeMap::new();
        for (key, _, _, value) in snap.snapshot().into_vec() {
            let labels: Vec<String> = key.key().labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
            let name = format!("{}{{{}}}", key.key().name(), labels.join(","));
            match value {
                DebugValue::Counter(v) => {
                    counters.insert(name, v);
                }
                DebugValue::Histogram(v) => {
                    hist_counts.insert(name, v.len());
                }
                DebugValue::Gauge(_) => {}
            }
        }
        let c = |n: &str| counters.get(n).copied().unwrap_or_else(|| panic!("no counter {n}: {counters:?}"));
        for (op, want) in [("open", 1), ("stat", 1), ("close", 1), ("seek", 0), ("read", size.div_ceil(8192) + 1)] {
            assert_eq!(c(&format!("kbx_file_events_total{{op={op},buffer_size=8192}}")), want, "{op}");
            assert_eq!(
                hist_counts
                    .get(&format!("kbx_file_event_duration_seconds{{op={op},buffer_size=8192}}"))
                    .copied()
                    .unwrap_or(0) as u64,
                want,
                "{op} durations"
            );
        }
        assert_eq!(c("kbx_file_read_bytes_total{buffer_size=8192}"), size);
        assert_eq!(c("kbx_logical_reads_total{buffer_size=8192}"), 45 * 2 + 1);
        assert_eq!(c("kbx_blobs_read_total{type=x509}"), 24);
        assert_eq!(c("kbx_blobs_read_total{type=openpgp}"), 20);
        assert_eq!(c("kbx_blobs_read_total{type=header}"), 1);
        assert_eq!(c("kbx_keybox_scans_total{lookup=sequential}"), 1);
        assert_eq!(hist_counts["kbx_read_size_bytes{buffer_size=8192}"] as u64, size.div_ceil(8192) + 1);
    }
}
