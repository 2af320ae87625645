//! Metrics: names, the I/O layer's families kept here, and the few
//! emitted through the `metrics` facade.
//!
//! The file-event families (`kbx_file_events_total`,
//! `kbx_file_event_duration_seconds`, `kbx_file_read_bytes_total`,
//! `kbx_logical_reads_total`, `kbx_read_size_bytes`,
//! `kbx_blobs_read_total`, `kbx_file_written_bytes_total`,
//! `kbx_lock_waits_total`, `kbx_lock_wait_seconds_total`) are not recorded sample by sample: the I/O
//! layer counts and buckets each event once, in the handle's
//! [`IoStats`], and hands the deltas to [`IoMetrics`] (an
//! [`IoObserver`]) every `crate::events::REPORT_EVERY` events and
//! at close. [`IoMetrics`] adds them up per buffer size under one lock —
//! a few thousand times per scan, never per event — and renders them
//! itself ([`IoMetrics::render`]), so counters and histograms come from
//! the same numbers: `_count` equals the counter, `_sum` the time, at
//! every scrape. Memory is fixed per buffer size, whatever the number of
//! events.
//!
//! The rare families (scans, validations, command duration, build info)
//! go through the `metrics` facade: no-ops until the binary installs the
//! Prometheus exporter, which renders them next to ours.
//!
//! Every family has base units in its name, `_total` on counters, and a
//! description. No label carries a path or another unbounded value: `op`,
//! `buffer_size` (bytes), `type`, `lookup`, `result`, `command`, `version`,
//! and, for the calls of programs `kbxscope record` ran, `program` (the
//! executable's name, never a pid; `buffer_size` is `0` there: the
//! program's buffer is not known). Their series appear only when a program
//! was recorded, with the operations it issued beyond kbxscope's five
//! (`write`, `mmap`, …) when non-zero.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, histogram, Unit};

use crate::events::{Buckets, DURATION_BOUNDS_NS, SIZE_BOUNDS};
use crate::events::{FileOp, IoObserver, IoStats, Origin, PerBlobType};

/// System calls on keybox files, by `op` and `buffer_size`.
pub const FILE_EVENTS: &str = "kbx_file_events_total";
/// Time spent in those calls (histogram), by `op` and `buffer_size`.
pub const FILE_EVENT_DURATION: &str = "kbx_file_event_duration_seconds";
/// Bytes returned by `read(2)`, by `buffer_size`.
pub const FILE_READ_BYTES: &str = "kbx_file_read_bytes_total";
/// Bytes `write(2)` wrote (a write replay's files; a recorded program's),
/// by `buffer_size`.
pub const FILE_WRITTEN_BYTES: &str = "kbx_file_written_bytes_total";
/// Waits for a lock another process held (GnuPG's keybox lock file), by
/// `buffer_size`.
pub const LOCK_WAITS: &str = "kbx_lock_waits_total";
/// Time those waits took, by `buffer_size`.
pub const LOCK_WAIT_SECONDS: &str = "kbx_lock_wait_seconds_total";
/// Reads asked of the buffered layer, by `buffer_size`.
pub const LOGICAL_READS: &str = "kbx_logical_reads_total";
/// Sizes of `read(2)` results (histogram), by `buffer_size`.
pub const READ_SIZE: &str = "kbx_read_size_bytes";
/// Blobs read completely, by `type`.
pub const BLOBS_READ: &str = "kbx_blobs_read_total";
/// Passes over a keybox (listing passes and lookups), by `lookup` and `buffer_size`.
pub const KEYBOX_SCANS: &str = "kbx_keybox_scans_total";
/// Certificates validated, by `result` (`good` or `bad`).
pub const CERTIFICATES_VALIDATED: &str = "kbx_certificates_validated_total";
/// Wall time of a command (histogram), by `command` and `buffer_size`.
pub const COMMAND_DURATION: &str = "kbx_command_duration_seconds";
/// Always 1, labelled with the `version`.
pub const BUILD_INFO: &str = "kbx_build_info";
/// When the last command ended (Unix time), for batch-job alerts.
pub(crate) const LAST_RUN_TIMESTAMP: &str = "kbx_last_run_timestamp_seconds";
/// 1 if the last command succeeded, else 0.
pub(crate) const LAST_RUN_SUCCESS: &str = "kbx_last_run_success";

/// Histogram buckets for command durations: 1 ms to 10 min.
pub const COMMAND_BUCKETS: [f64; 17] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 180.0, 600.0];

/// Describe the families emitted through the facade to the recorder
/// installed now (ours carry their descriptions in [`IoMetrics::render`]).
pub fn describe() {
    describe_counter!(
        KEYBOX_SCANS,
        Unit::Count,
        "Passes over a keybox: listing passes and issuer lookups, by lookup strategy."
    );
    describe_counter!(CERTIFICATES_VALIDATED, Unit::Count, "X.509 certificates validated, by result.");
    describe_histogram!(COMMAND_DURATION, Unit::Seconds, "Wall time of a kbxscope command.");
    describe_gauge!(BUILD_INFO, Unit::Count, "Always 1; the version label says which kbxscope this is.");
    describe_gauge!(LAST_RUN_TIMESTAMP, Unit::Seconds, "When the last kbxscope command ended, in Unix time.");
    describe_gauge!(LAST_RUN_SUCCESS, Unit::Count, "1 if the last kbxscope command succeeded, else 0.");
}

/// Set the batch-job gauges: the command ended now, and whether it succeeded.
pub fn run_ended(success: bool) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    metrics::gauge!(LAST_RUN_TIMESTAMP).set(now.as_secs_f64());
    metrics::gauge!(LAST_RUN_SUCCESS).set(if success { 1.0 } else { 0.0 });
}

/// The file-event families, per buffer size: the sum of every delta the
/// handles reported.
#[derive(Debug, Default)]
pub struct IoMetrics {
    by_size: Mutex<BTreeMap<u64, IoStats>>,
    /// Recorded programs' calls, by program name.
    by_program: Mutex<BTreeMap<String, IoStats>>,
}

impl IoObserver for IoMetrics {
    fn observe(&self, delta: &IoStats) {
        let mut by_size = self.by_size.lock().unwrap_or_else(PoisonError::into_inner);
        let size = delta.buffer_size;
        by_size
            .entry(size)
            .or_insert_with(|| {
                // A size now in use: its scan counters exist from here on,
                // zero for the lookups that do not run.
                for lookup in SCAN_LOOKUPS {
                    counter!(KEYBOX_SCANS, "lookup" => lookup, "buffer_size" => size.to_string()).increment(0);
                }
                IoStats::with_histograms(size)
            })
            .merge(delta);
    }

    fn observe_recorded(&self, origin: &Origin<'_>, delta: &IoStats) {
        let mut by_program = self.by_program.lock().unwrap_or_else(PoisonError::into_inner);
        by_program.entry(origin.program.to_string()).or_insert_with(|| IoStats::with_histograms(0)).merge(delta);
    }
}

/// A label value with backslashes, quotes and newlines escaped (program
/// names are file names, which may hold anything).
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The operations a recorded program's series show: kbxscope's five, and
/// the others it issued.
fn recorded_ops(s: &IoStats) -> impl Iterator<Item = FileOp> + '_ {
    FileOp::EVERY.into_iter().filter(move |op| FileOp::ALL.contains(op) || s.count(*op) > 0)
}

/// `le` label values: the bounds in the family's base unit.
fn le_labels(bounds: &[u64], scale: f64) -> Vec<String> {
    bounds.iter().map(|b| format!("{}", *b as f64 / scale)).chain(["+Inf".to_string()]).collect()
}

fn write_histogram<const S: usize>(
    out: &mut String,
    name: &str,
    labels: &str,
    les: &[String],
    b: &Buckets<S>,
    sum: f64,
) {
    let mut cumulative = 0;
    for (le, n) in les.iter().zip(b.0.iter()) {
        cumulative += n;
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
    }
    let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
    let _ = writeln!(out, "{name}_count{{{labels}}} {cumulative}");
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

impl IoMetrics {
    /// A copy of the totals of every buffer size seen so far.
    pub fn snapshot(&self) -> BTreeMap<u64, IoStats> {
        self.by_size.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// A copy of the recorded programs' totals, by program name.
    pub fn recorded(&self) -> BTreeMap<String, IoStats> {
        self.by_program.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The families in the Prometheus text format (0.0.4), from one
    /// consistent snapshot. Only buffer sizes some handle used appear;
    /// blob types always do (zero until counted).
    pub fn render(&self) -> String {
        let by_size = self.snapshot();
        let recorded: Vec<(String, IoStats)> = self
            .recorded()
            .into_iter()
            .map(|(p, s)| (format!("buffer_size=\"0\",program=\"{}\"", label_value(&p)), s))
            .collect();
        let mut out = String::new();
        header(
            &mut out,
            FILE_EVENTS,
            "counter",
            "System calls on keybox files and keyboxd's database (open, read, seek, close, stat; lock).",
        );
        for (size, s) in &by_size {
            // kbxscope's five, and a database's locks when there were some.
            for op in recorded_ops(s) {
                let _ = writeln!(out, "{FILE_EVENTS}{{op=\"{}\",buffer_size=\"{size}\"}} {}", op.name(), s.count(op));
            }
        }
        for (labels, s) in &recorded {
            for op in recorded_ops(s) {
                let _ = writeln!(out, "{FILE_EVENTS}{{op=\"{}\",{labels}}} {}", op.name(), s.count(op));
            }
        }
        header(&mut out, FILE_EVENT_DURATION, "histogram", "Time spent in each system call on a keybox file.");
        let les = le_labels(&DURATION_BOUNDS_NS, 1e9);
        for (size, s) in &by_size {
            let h = s.histograms.as_deref().cloned().unwrap_or_default();
            for op in recorded_ops(s) {
                let labels = format!("op=\"{}\",buffer_size=\"{size}\"", op.name());
                let sum = s.time(op) as f64 / 1e9;
                write_histogram(&mut out, FILE_EVENT_DURATION, &labels, &les, &h.durations[op.index()], sum);
            }
        }
        for (labels, s) in &recorded {
            let h = s.histograms.as_deref().cloned().unwrap_or_default();
            for op in recorded_ops(s) {
                let labels = format!("op=\"{}\",{labels}", op.name());
                let sum = s.time(op) as f64 / 1e9;
                write_histogram(&mut out, FILE_EVENT_DURATION, &labels, &les, &h.durations[op.index()], sum);
            }
        }
        header(&mut out, FILE_READ_BYTES, "counter", "Bytes returned by read(2) on keybox files.");
        for (size, s) in &by_size {
            let _ = writeln!(out, "{FILE_READ_BYTES}{{buffer_size=\"{size}\"}} {}", s.bytes_read);
        }
        for (labels, s) in &recorded {
            let _ = writeln!(out, "{FILE_READ_BYTES}{{{labels}}} {}", s.bytes_read);
        }
        header(&mut out, FILE_WRITTEN_BYTES, "counter", "Bytes written by write(2) to a keybox's files.");
        let every = || {
            let sizes = by_size.iter().map(|(size, s)| (format!("buffer_size=\"{size}\""), s));
            sizes.chain(recorded.iter().map(|(l, s)| (l.clone(), s)))
        };
        for (labels, s) in every() {
            let _ = writeln!(out, "{FILE_WRITTEN_BYTES}{{{labels}}} {}", s.bytes_written);
        }
        header(&mut out, LOCK_WAITS, "counter", "Waits for a lock another process held on a keybox.");
        for (labels, s) in every() {
            let _ = writeln!(out, "{LOCK_WAITS}{{{labels}}} {}", s.lock_waits.count);
        }
        header(&mut out, LOCK_WAIT_SECONDS, "counter", "Time spent waiting for another process's lock on a keybox.");
        for (labels, s) in every() {
            let _ = writeln!(out, "{LOCK_WAIT_SECONDS}{{{labels}}} {}", s.lock_waits.time_ns as f64 / 1e9);
        }
        header(&mut out, LOGICAL_READS, "counter", "Reads asked of the buffered layer, served from the buffer or not.");
        for (size, s) in &by_size {
            let _ = writeln!(out, "{LOGICAL_READS}{{buffer_size=\"{size}\"}} {}", s.logical_reads);
        }
        header(&mut out, READ_SIZE, "histogram", "Bytes returned by each read(2) on a keybox file.");
        let les = le_labels(&SIZE_BOUNDS, 1.0);
        for (size, s) in &by_size {
            let h = s.histograms.as_deref().cloned().unwrap_or_default();
            let labels = format!("buffer_size=\"{size}\"");
            write_histogram(&mut out, READ_SIZE, &labels, &les, &h.read_sizes, s.bytes_read as f64);
        }
        for (labels, s) in &recorded {
            let h = s.histograms.as_deref().cloned().unwrap_or_default();
            write_histogram(&mut out, READ_SIZE, labels, &les, &h.read_sizes, s.bytes_read as f64);
        }
        header(&mut out, BLOBS_READ, "counter", "Keybox blobs read completely, by blob type.");
        let mut blobs = [0u64; 5];
        for s in by_size.values() {
            for (a, b) in blobs.iter_mut().zip(s.blobs.values()) {
                *a += b;
            }
        }
        for (ty, n) in PerBlobType::NAMES.iter().zip(blobs) {
            let _ = writeln!(out, "{BLOBS_READ}{{type=\"{ty}\"}} {n}");
        }
        out
    }
}

/// The `lookup` label values of [`KEYBOX_SCANS`]: the listing pass (also
/// the index's one pass), gpg's and gpgsm's lookups, one rescan per lookup.
pub(crate) const SCAN_LOOKUPS: [&str; 3] = ["sequential", "gnupg", "scan"];

/// Count one pass over the keybox for `lookup` (one of [`SCAN_LOOKUPS`])
/// with buffers of `buffer_size` bytes.
pub(crate) fn scan_started(lookup: &'static str, buffer_size: u64) {
    counter!(KEYBOX_SCANS, "lookup" => lookup, "buffer_size" => buffer_size.to_string()).increment(1);
}

/// Count one validated certificate.
pub(crate) fn certificate_validated(good: bool) {
    counter!(CERTIFICATES_VALIDATED, "result" => if good { "good" } else { "bad" }).increment(1);
}

/// Zero the validation counters for every result, so a dashboard sees
/// them before (or without) the first validation. (Scans carry a
/// `buffer_size`: they are zeroed when a size is first used, and a size
/// never used gets no series.)
pub fn zero_series() {
    for result in ["good", "bad"] {
        counter!(CERTIFICATES_VALIDATED, "result" => result).absolute(0);
    }
}

/// Record a command's wall time, labelled with its buffer size in bytes,
/// or `sweep` for a sweep (which ran several).
pub fn command_finished(command: &'static str, buffer_size: Option<u64>, took: Duration) {
    let size = buffer_size.map_or_else(|| "sweep".to_string(), |b| b.to_string());
    histogram!(COMMAND_DURATION, "command" => command, "buffer_size" => size).record(took.as_secs_f64());
}

/// Set the build-info gauge.
pub fn build_info() {
    metrics::gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use crate::io::{BufferSize, IoTally, KeyboxFile};

    /// Exact family values for a known file and buffer: counters and
    /// histograms from the same deltas.
    #[test]
    fn renders_every_event_exactly() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gnupg-mixed.kbx");
        let size = include_bytes!("../../tests/fixtures/gnupg-mixed.kbx").len() as u64;
        let metrics = Arc::new(super::IoMetrics::default());
        let tally = IoTally::with_observer(BufferSize::Bytes(8192), Some(metrics.clone()));
        let mut f = KeyboxFile::open(&path, &tally).unwrap();
        let out = crate::workload::stats::pass(&mut f);
        assert!(out.fatal.is_none());
        drop(f);
        let text = metrics.render();
        let value = |series: &str| -> u64 {
            let line = text.lines().find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '));
            line.unwrap_or_else(|| panic!("no {series} in\n{text}")).rsplit(' ').next().unwrap().parse().unwrap()
        };
        let reads = size.div_ceil(8192) + 1;
        for (op, want) in [("open", 1), ("stat", 1), ("close", 1), ("seek", 0), ("read", reads)] {
            let labels = format!("op=\"{op}\",buffer_size=\"8192\"");
            assert_eq!(value(&format!("kbx_file_events_total{{{labels}}}")), want, "{op}");
            assert_eq!(value(&format!("kbx_file_event_duration_seconds_count{{{labels}}}")), want, "{op}");
            assert_eq!(value(&format!("kbx_file_event_duration_seconds_bucket{{{labels},le=\"+Inf\"}}")), want);
        }
        assert_eq!(value("kbx_file_read_bytes_total{buffer_size=\"8192\"}"), size);
        assert_eq!(value("kbx_read_size_bytes_sum{buffer_size=\"8192\"}"), size);
        assert_eq!(value("kbx_read_size_bytes_count{buffer_size=\"8192\"}"), reads);
        // every full read is 8 KiB (<= 10240), the last two partial and empty
        assert_eq!(value("kbx_read_size_bytes_bucket{buffer_size=\"8192\",le=\"0\"}"), 1);
        assert_eq!(value("kbx_read_size_bytes_bucket{buffer_size=\"8192\",le=\"10240\"}"), reads);
        assert_eq!(value("kbx_logical_reads_total{buffer_size=\"8192\"}"), 45 * 2 + 1);
        assert_eq!(value("kbx_blobs_read_total{type=\"x509\"}"), 24);
        assert_eq!(value("kbx_blobs_read_total{type=\"openpgp\"}"), 20);
        assert_eq!(value("kbx_blobs_read_total{type=\"header\"}"), 1);
        assert_eq!(value("kbx_blobs_read_total{type=\"unknown\"}"), 0);
        assert_eq!(metrics.snapshot()[&8192].events, tally.snapshot().events, "the same numbers as --io-summary");
    }

    /// A long pass reports before the handle closes; a failed open is
    /// reported too; an unused size is absent.
    #[test]
    fn long_passes_report_early_and_failed_opens_count() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gnupg-mixed.kbx");
        let metrics = Arc::new(super::IoMetrics::default());
        let tally = IoTally::with_observer(BufferSize::Bytes(1), Some(metrics.clone()));
        let mut f = KeyboxFile::open(&path, &tally).unwrap();
        let mut b = [0u8; 2000];
        assert_eq!(f.read(&mut b).unwrap(), 2000);
        let seen = metrics.snapshot()[&1].events.read;
        assert_eq!(seen, u64::from(crate::events::REPORT_EVERY), "reported after 1024 reads");
        drop(f);
        assert_eq!(metrics.snapshot()[&1].events.read, 2000);
        assert!(KeyboxFile::open(Path::new("/nonexistent/k.kbx"), &tally).is_err());
        let s = &metrics.snapshot()[&1];
        assert_eq!(s.events.open, 2);
        assert_eq!(s.histograms.as_ref().unwrap().durations[0].count(), 2);
        let _unused = tally.sibling(BufferSize::Bytes(4096));
        assert!(!metrics.render().contains("buffer_size=\"4096\""));
    }
}
