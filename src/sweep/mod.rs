//! `sweep`: the seed's table — file events and time per buffer size — in
//! one command.
//!
//! For each buffer size: a fresh tally, `warmup` untimed runs, then `runs`
//! timed runs of the workload; the file events are those of one run (every
//! run issues the same calls), times are kept per run with their summary
//! ([`Times`]). [`Sweep`] is the whole result: what the table shows and,
//! serialised as it is, the JSON export.

mod cpu;
pub mod export;
pub mod plot;
mod result;
mod seed;
mod workloads;

pub use result::{GnupgRow, ProgramRow, SeedRow, SizeResult, Sweep, SweepSize, Times};
pub use seed::{default_cache_sizes, default_sizes, seed_row};
pub use workloads::{Workload, WorkloadKind};

use std::path::Path;
use std::time::Instant;

use crate::events::IoStats;
use crate::io::{BufferSize, IoTally};
use crate::kbx::search::{Pattern, PatternError};
use crate::lookup::Strategy;
use crate::store::{Store, StoreError, StoreKind};
use crate::workload::stats::StoreStats;
use crate::workload::{self, ScanError};
use crate::x509::TrustList;

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

/// Why a sweep stopped. The CLI words it; the variants say what and where.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The store cannot be opened or read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A run met an error in the keybox (it names the blob and offset).
    #[error("{error}")]
    Scan {
        /// The buffer size of the run.
        size: BufferSize,
        /// What the workload reported.
        error: ScanError,
    },
    /// The find workload's pattern is not a valid search pattern.
    #[error(transparent)]
    Pattern(#[from] PatternError),
}

/// Run the workload once on the store `path` (a keybox, or keyboxd's
/// database with SQLite's page cache the tally's buffer size) with `tally`.
fn run_once(
    path: &Path,
    kind: StoreKind,
    workload: &Workload,
    trust: &TrustList,
    at: i64,
    tally: &IoTally,
) -> Result<(), SweepError> {
    let cache = match kind {
        StoreKind::Keybox => None,
        StoreKind::Keyboxd => Some((tally.buffer_size().bytes() as u64).div_ceil(1024)),
    };
    let store = Store::open_as(path, kind, tally, cache)?;
    let fatal = match workload {
        Workload::Validate(lookup) => workload::validate::run(&store, *lookup, trust, at, |_| {})?.outcome.fatal,
        Workload::Sigs(mode, lookup) => workload::sigs::run(&store, *mode, *lookup, at, |_| {})?.outcome.fatal,
        Workload::List => workload::list::run(&store, workload::TypeFilter::All, |_| {})?.outcome.fatal,
        Workload::Stats => match workload::stats::run(&store)? {
            StoreStats::Keybox(outcome) => outcome.fatal,
            StoreStats::Keyboxd(_) => None,
        },
        Workload::Find(p) => {
            let pattern = Pattern::parse(p)?;
            workload::find::run(&store, &[pattern], false, |_| {})?.outcome.fatal
        }
    };
    fatal.map_or(Ok(()), |error| Err(SweepError::Scan { size: tally.buffer_size(), error }))
}

/// The difference of two tallies' snapshots (one run's events).
fn delta(after: &IoStats, before: &IoStats) -> IoStats {
    let mut d = IoStats::new(after.buffer_size);
    for op in crate::events::FileOp::ALL {
        d.events.add(op, after.events.get(op) - before.events.get(op));
        d.time_ns.add(op, after.time_ns.get(op) - before.time_ns.get(op));
    }
    d.bytes_read = after.bytes_read - before.bytes_read;
    d.logical_reads = after.logical_reads - before.logical_reads;
    d
}

/// Where a sweep is, for a progress display: before each run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Index of the size in the list.
    pub size: usize,
    /// Whether this run is a warm-up (untimed).
    pub warmup: bool,
    /// 1-based number of this run among the warm-ups, or among the timed runs.
    pub run: usize,
    /// How many warm-ups, or timed runs, this size has.
    pub of: usize,
    /// Runs of the whole sweep (warm-ups included) finished before this one.
    pub done: usize,
    /// Runs of the whole sweep, warm-ups included.
    pub total: usize,
}

/// What to sweep: sizes, workload, runs.
#[derive(Clone)]
pub struct Plan<'a> {
    /// The buffer sizes, in order.
    pub sizes: &'a [SweepSize],
    /// What each run does.
    pub workload: &'a Workload,
    /// Timed runs per size (at least 1 is made).
    pub runs: usize,
    /// Untimed runs per size before the timed ones.
    pub warmup: usize,
    /// Trusted roots for the validate workload.
    pub trust: &'a TrustList,
    /// Validity time for the validate workload (Unix seconds).
    pub at: i64,
    /// The file is keyboxd's database: each size is SQLite's page cache
    /// (`PRAGMA cache_size`), the workload is read through SQLite.
    pub keyboxd: bool,
}

/// Sweep `plan.sizes` on `path`; `progress` is told before each run.
///
/// # Errors
/// The first failed run.
pub fn run(path: &Path, plan: &Plan<'_>, progress: &mut dyn FnMut(Step)) -> Result<Sweep, SweepError> {
    let (runs, warmup) = (plan.runs.max(1), plan.warmup);
    let mut out = Vec::with_capacity(plan.sizes.len());
    let total = plan.sizes.len() * (warmup + runs);
    let mut done = 0;
    // Every size's handles compare the file they open with the first one.
    let first = IoTally::new(plan.sizes.first().map_or_else(BufferSize::default, |s| s.size));
    for (i, s) in plan.sizes.iter().enumerate() {
        let tally = first.sibling(s.size);
        // `first` reads nothing: its changes are only the ones every size
        // shares (files seen at open); what comes after them is this size's.
        let seen_before = first.changes().len();
        let kind = if plan.keyboxd { StoreKind::Keyboxd } else { StoreKind::Keybox };
        let once = |tally: &IoTally| run_once(path, kind, plan.workload, plan.trust, plan.at, tally);
        let _size =
            tracing::info_span!(target: "kbx::sweep", "size", buffer_size = s.size.bytes() as u64, label = %s.label)
                .entered();
        for w in 0..warmup {
            progress(Step { size: i, warmup: true, run: w + 1, of: warmup, done, total });
            let _run = tracing::info_span!(target: "kbx::sweep", "warmup", run = w + 1, of = warmup).entered();
            once(&tally)?;
            done += 1;
        }
        let (mut wall, mut user, mut sys) = (Vec::new(), Vec::new(), Vec::new());
        let mut one = IoStats::new(s.size.bytes() as u64);
        let mut other_events = 0;
        let (mut read_ns, mut reads) = (0u64, 0u64);
        for k in 0..runs {
            progress(Step { size: i, warmup: false, run: k + 1, of: runs, done, total });
            let before = tally.snapshot();
            let (u0, s0) = cpu::times(libc::RUSAGE_SELF);
            let run = tracing::info_span!(target: "kbx::sweep", "run", run = k + 1, of = runs).entered();
            let start = Instant::now();
            once(&tally)?;
            let elapsed = start.elapsed();
            drop(run);
            let (u1, s1) = cpu::times(libc::RUSAGE_SELF);
            let after = tally.snapshot();
            one = delta(&after, &before);
            other_events =
                (after.total_events() - after.events.total()) - (before.total_events() - before.events.total());
            read_ns += one.time_ns.read;
            reads += one.events.read;
            wall.push(elapsed.as_secs_f64());
            user.push(u1.saturating_sub(u0).as_secs_f64());
            sys.push(s1.saturating_sub(s0).as_secs_f64());
            done += 1;
        }
        out.push(SizeResult {
            label: s.label.clone(),
            buffer_size: s.size.bytes() as u64,
            events: one.events,
            bytes_read: one.bytes_read,
            logical_reads: one.logical_reads,
            wall_s: Times::new(wall),
            user_s: Times::new(user),
            sys_s: Times::new(sys),
            mean_read_ns: if reads > 0 { read_ns as f64 / reads as f64 } else { 0.0 },
            seed: None,
            gnupg: None,
            program: None,
            keybox_changed: tally.changes().split_off(seen_before),
            other_events,
        });
    }
    Ok(Sweep {
        keybox: path.display().to_string(),
        workload: plan.workload.clone(),
        lookup: plan.workload.lookup().map(Strategy::name),
        warmup,
        runs,
        results: out,
        program: None,
        keyboxd: plan.keyboxd,
        versus: None,
        probe_events: None,
    })
}

/// User and system CPU time of the waited-for children so far (a
/// program's run is the difference around it).
pub fn children_cpu_times() -> (std::time::Duration, std::time::Duration) {
    cpu::times(libc::RUSAGE_CHILDREN)
}
