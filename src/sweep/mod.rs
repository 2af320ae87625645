//! `sweep`: the seed's table — file events and time per buffer size — in
//! one command.
//!
//! For each buffer size: a fresh tally, `warmup` untimed runs, then `runs`
//! timed runs of the workload; the file events are those of one run (every
//! run issues the same calls), times are kept per run.

pub mod cpu;
pub mod export;
pub mod plot;

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::io::{BufferSize, IoStats, IoTally, KeyboxFile, OpenError, PathOpener};
use crate::kbx::search::Pattern;
use crate::validate::{Lookup, TrustList};
use crate::workload;

/// What each run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// `list --with-validation --lookup L`.
    Validate(Lookup),
    /// `list`.
    List,
    /// `stats`.
    Stats,
    /// `find PATTERN`.
    Find(String),
    /// `list --with-sigs` or `list --check-sigs`, with `--lookup L`.
    Sigs(crate::sigs::Mode, Lookup),
}

impl Workload {
    /// `validate`, `list`, `stats`, `find:PATTERN`, `with-sigs` or `check-sigs`.
    pub fn name(&self) -> String {
        match self {
            Self::Sigs(crate::sigs::Mode::WithSigs, _) => "with-sigs".into(),
            Self::Sigs(crate::sigs::Mode::CheckSigs, _) => "check-sigs".into(),
            Self::Validate(_) => "validate".into(),
            Self::List => "list".into(),
            Self::Stats => "stats".into(),
            Self::Find(p) => format!("find:{p}"),
        }
    }
}

/// One buffer size of a sweep, as the user wrote it and as bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepSize {
    /// As given (`0`, `16`, `4096B`, …): the table's `N(k)` column.
    pub label: String,
    /// The buffer.
    pub size: BufferSize,
}

/// Results for one buffer size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeResult {
    /// The size as given.
    pub label: String,
    /// The buffer in bytes (0 = unbuffered).
    pub buffer_size: u64,
    /// File events of one run (open, read, seek, close, stat, total).
    pub events: crate::io::PerOp,
    /// Bytes `read(2)` returned in one run.
    pub bytes_read: u64,
    /// Logical reads of one run.
    pub logical_reads: u64,
    /// Wall time of each timed run, seconds.
    pub wall_s: Vec<f64>,
    /// User CPU time of each timed run, seconds.
    pub user_s: Vec<f64>,
    /// System CPU time of each timed run, seconds.
    pub sys_s: Vec<f64>,
    /// Mean time per `read(2)`, nanoseconds (over the timed runs).
    pub mean_read_ns: f64,
    /// The seed's own row, when the sweep ran on the built-in keybox at one
    /// of the seed's sizes.
    pub seed: Option<SeedRow>,
    /// gpgsm's numbers at this size (`sweep --with-gpgsm`), if it ran at it.
    pub gpgsm: Option<GpgsmRow>,
    /// How the keybox changed under this size's runs (another file renamed
    /// into place, appended to, …); empty when it did not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keybox_changed: Vec<crate::io::KeyboxChange>,
}

/// One row of the seed's procmon table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeedRow {
    /// File events procmon counted.
    pub events: u64,
    /// Wall time, seconds.
    pub time_s: f64,
}

/// gpgsm's numbers for one size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GpgsmRow {
    /// File events strace counted on the keybox.
    pub events: u64,
    /// Wall time of the run without strace, seconds.
    pub time_s: f64,
}

/// Median of a non-empty slice (mean of the middle two for even lengths).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

impl SizeResult {
    /// Median wall time.
    pub fn wall_median(&self) -> f64 {
        median(&self.wall_s)
    }
}

/// Errors of a sweep.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The keybox cannot be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A run failed.
    #[error("{0}")]
    Run(String),
}

/// Run the workload once on `path` with `tally`.
fn run_once(path: &Path, workload: &Workload, trust: &TrustList, at: i64, tally: &IoTally) -> Result<(), SweepError> {
    let fail = |e: &dyn std::fmt::Display| SweepError::Run(e.to_string());
    match workload {
        Workload::Validate(lookup) => {
            let opener = PathOpener { path: path.to_path_buf(), tally: tally.clone() };
            let out = workload::validate::run(&opener, *lookup, trust, at, |_| {})?;
            if let Some(e) = out.fatal {
                return Err(fail(&e));
            }
        }
        Workload::Sigs(mode, lookup) => {
            let opener = PathOpener { path: path.to_path_buf(), tally: tally.clone() };
            let startup = workload::sigs::Startup { now: at };
            if let Some(e) = workload::sigs::run(&opener, *mode, *lookup, startup, |_| {})?.fatal {
                return Err(fail(&e));
            }
        }
        Workload::List => {
            let mut f = KeyboxFile::open(path, tally)?;
            if let Some(e) = workload::list::run(&mut f, workload::TypeFilter::All, |_| {}).fatal {
                return Err(fail(&e));
            }
        }
        Workload::Stats => {
            let mut f = KeyboxFile::open(path, tally)?;
            if let Some(e) = workload::stats::run(&mut f).error {
                return Err(fail(&e));
            }
        }
        Workload::Find(p) => {
            let pattern = Pattern::parse(p).map_err(|e| fail(&e))?;
            let mut f = KeyboxFile::open(path, tally)?;
            if let Some(e) = workload::find::run(&mut f, &[pattern], false, |_| {}).fatal {
                return Err(fail(&e));
            }
        }
    }
    Ok(())
}

/// The difference of two tallies' snapshots (one run's events).
fn delta(after: &IoStats, before: &IoStats) -> IoStats {
    let mut d = IoStats::new(after.buffer_size);
    for op in crate::io::FileOp::ALL {
        d.events.add(op, after.events.get(op) - before.events.get(op));
        d.time_ns.add(op, after.time_ns.get(op) - before.time_ns.get(op));
    }
    d.bytes_read = after.bytes_read - before.bytes_read;
    d.logical_reads = after.logical_reads - before.logical_reads;
    d
}

/// Sweep `sizes` on `path`; `progress(size index, run, runs)` before each run.
///
/// # Errors
/// The first failed run.
#[allow(clippy::too_many_arguments)]
pub fn run(
    path: &Path,
    sizes: &[SweepSize],
    workload: &Workload,
    runs: usize,
    warmup: usize,
    trust: &TrustList,
    at: i64,
    progress: &mut dyn FnMut(usize, usize, usize),
) -> Result<Vec<SizeResult>, SweepError> {
    let mut out = Vec::with_capacity(sizes.len());
    // Every size's handles compare the file they open with the first one.
    let first = IoTally::new(sizes.first().map_or_else(BufferSize::default, |s| s.size));
    for (i, s) in sizes.iter().enumerate() {
        let tally = first.sibling(s.size);
        // `first` reads nothing: its changes are only the ones every size
        // shares (files seen at open); what comes after them is this size's.
        let seen_before = first.changes().len();
        for w in 0..warmup {
            progress(i, w, warmup + runs);
            run_once(path, workload, trust, at, &tally)?;
        }
        let mut r = SizeResult {
            label: s.label.clone(),
            buffer_size: s.size.bytes() as u64,
            events: Default::default(),
            bytes_read: 0,
            logical_reads: 0,
            wall_s: Vec::new(),
            user_s: Vec::new(),
            sys_s: Vec::new(),
            mean_read_ns: 0.0,
            seed: None,
            gpgsm: None,
            keybox_changed: Vec::new(),
        };
        let (mut read_ns, mut reads) = (0u64, 0u64);
        for k in 0..runs.max(1) {
            progress(i, warmup + k, warmup + runs);
            let before = tally.snapshot();
            let (u0, s0) = cpu::cpu_times();
            let start = Instant::now();
            run_once(path, workload, trust, at, &tally)?;
            let wall = start.elapsed();
            let (u1, s1) = cpu::cpu_times();
            let d = delta(&tally.snapshot(), &before);
            r.events = d.events;
            r.bytes_read = d.bytes_read;
            r.logical_reads = d.logical_reads;
            read_ns += d.time_ns.read;
            reads += d.events.read;
            r.wall_s.push(wall.as_secs_f64());
            r.user_s.push(u1.saturating_sub(u0).as_secs_f64());
            r.sys_s.push(s1.saturating_sub(s0).as_secs_f64());
        }
        r.mean_read_ns = if reads > 0 { read_ns as f64 / reads as f64 } else { 0.0 };
        r.keybox_changed = tally.changes().split_off(seen_before);
        out.push(r);
    }
    Ok(out)
}

/// The seed's measurement (procmon, Windows): N (KiB), file events, seconds.
pub const SEED_TABLE: [(u64, u64, f64); 7] = [
    (0, 4_900_000, 86.0),
    (16, 2_456_000, 58.0),
    (32, 1_233_000, 43.0),
    (64, 622_000, 37.0),
    (128, 317_000, 32.0),
    (256, 164_000, 31.0),
    (512, 88_000, 30.0),
];

/// The default sizes: the seed's.
pub fn default_sizes() -> Vec<SweepSize> {
    SEED_TABLE
        .iter()
        .map(|(k, _, _)| SweepSize {
            label: k.to_string(),
            size: BufferSize::from_gnupg_kib(*k).expect("seed sizes are valid"),
        })
        .collect()
}

/// The seed's row for a size label, if it is one of the seed's.
pub fn seed_row(label: &str) -> Option<SeedRow> {
    SEED_TABLE
        .iter()
        .find(|(k, _, _)| k.to_string() == label)
        .map(|(_, events, time_s)| SeedRow { events: *events, time_s: *time_s })
}
