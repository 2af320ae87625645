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

use std::path::Path;
use std::time::Instant;

use serde::{Serialize, Serializer};

use crate::events::IoStats;
use crate::io::{BufferSize, IoTally, KeyboxFile, OpenError, PathOpener};
use crate::kbx::search::{Pattern, PatternError};
use crate::lookup::Strategy;
use crate::workload::{self, ScanError};
use crate::x509::TrustList;

/// What each run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// `list --with-validation --lookup L`.
    Validate(Strategy),
    /// `list`.
    List,
    /// `stats`.
    Stats,
    /// `find PATTERN`.
    Find(String),
    /// `list --with-sigs` or `list --check-sigs`, with `--lookup L`.
    Sigs(crate::openpgp::Mode, Strategy),
}

/// A workload as `--workload` names it, before its lookup strategy is
/// known: the one table of workload names ([`WorkloadKind::TABLE`]) that
/// parsing, the help and the exports use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `list --with-validation`.
    Validate,
    /// `list`.
    List,
    /// `stats`.
    Stats,
    /// `find PATTERN`.
    Find(String),
    /// `list --with-sigs`.
    WithSigs,
    /// `list --check-sigs`.
    CheckSigs,
}

impl WorkloadKind {
    /// Every workload: its name for `--workload` and what a run does, in
    /// the order the help lists them.
    pub const TABLE: [(&'static str, &'static str); 6] = [
        ("validate", "list --with-validation"),
        ("list", "list"),
        ("stats", "stats"),
        ("find:PATTERN", "find PATTERN"),
        ("with-sigs", "list --with-sigs"),
        ("check-sigs", "list --check-sigs"),
    ];

    /// The workload `--workload NAME` names (`find:` with a non-empty pattern).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "validate" => Self::Validate,
            "list" => Self::List,
            "stats" => Self::Stats,
            "with-sigs" => Self::WithSigs,
            "check-sigs" => Self::CheckSigs,
            _ => match s.strip_prefix("find:") {
                Some(p) if !p.is_empty() => Self::Find(p.to_string()),
                _ => return None,
            },
        })
    }

    /// The names [`WorkloadKind::parse`] takes, as a sentence's list:
    /// `validate, list, …, with-sigs or check-sigs`.
    pub fn names() -> String {
        let names: Vec<&str> = Self::TABLE.iter().map(|(n, _)| *n).collect();
        let (last, rest) = names.split_last().expect("a table of six");
        format!("{} or {last}", rest.join(", "))
    }

    /// This workload with its lookup strategy (used by the validate and
    /// signature workloads).
    pub fn with(self, lookup: Strategy) -> Workload {
        match self {
            Self::Validate => Workload::Validate(lookup),
            Self::List => Workload::List,
            Self::Stats => Workload::Stats,
            Self::Find(p) => Workload::Find(p),
            Self::WithSigs => Workload::Sigs(crate::openpgp::Mode::WithSigs, lookup),
            Self::CheckSigs => Workload::Sigs(crate::openpgp::Mode::CheckSigs, lookup),
        }
    }
}

impl Workload {
    /// `validate`, `list`, `stats`, `find:PATTERN`, `with-sigs` or `check-sigs`
    /// (the names of [`WorkloadKind::TABLE`]).
    pub fn name(&self) -> String {
        match self {
            Self::Sigs(crate::openpgp::Mode::WithSigs, _) => WorkloadKind::TABLE[4].0.into(),
            Self::Sigs(crate::openpgp::Mode::CheckSigs, _) => WorkloadKind::TABLE[5].0.into(),
            Self::Validate(_) => WorkloadKind::TABLE[0].0.into(),
            Self::List => WorkloadKind::TABLE[1].0.into(),
            Self::Stats => WorkloadKind::TABLE[2].0.into(),
            Self::Find(p) => format!("find:{p}"),
        }
    }

    /// The command a run amounts to: `list --with-validation --lookup
    /// gnupg`, `list`, `stats`, `find 'PATTERN'`.
    pub fn command(&self) -> String {
        match self {
            Self::Validate(l) => format!("list --with-validation --lookup {}", l.name()),
            Self::List => "list".into(),
            Self::Stats => "stats".into(),
            Self::Find(p) => format!("find '{p}'"),
            Self::Sigs(crate::openpgp::Mode::WithSigs, l) => format!("list --with-sigs --lookup {}", l.name()),
            Self::Sigs(crate::openpgp::Mode::CheckSigs, l) => format!("list --check-sigs --lookup {}", l.name()),
        }
    }

    /// The lookup strategy of the validate and signature workloads.
    pub fn lookup(&self) -> Option<Strategy> {
        match self {
            Self::Validate(l) | Self::Sigs(_, l) => Some(*l),
            _ => None,
        }
    }
}

impl Serialize for Workload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// A whole sweep: what ran, on which keybox, and the results per size.
/// Serialised as it is, it is the JSON export.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    /// The keybox's path.
    pub keybox: String,
    /// What each run did (`validate`, `list`, `stats`, `find:PATTERN`).
    pub workload: Workload,
    /// The validate workload's lookup strategy (`gnupg`, `scan`, `index`).
    pub lookup: Option<&'static str>,
    /// Untimed runs per size.
    pub warmup: usize,
    /// Timed runs per size.
    pub runs: usize,
    /// One entry per buffer size, in the order given.
    pub results: Vec<SizeResult>,
    /// With `sweep --program`: the command each program run was (`gpgsm -k
    /// --with-validation --disable-dirmngr`); each row's
    /// [`SizeResult::program`] has its numbers, and the rest of the row is
    /// kbxscope's own run of the workload, the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
}

/// Times of the timed runs (seconds), with their summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Times {
    /// Each run, in order.
    pub runs: Vec<f64>,
    /// Their median (mean of the middle two for an even count).
    pub median: f64,
    /// Their mean.
    pub mean: f64,
    /// Their sample standard deviation (0 for a single run).
    pub stddev: f64,
    /// The fastest run.
    pub min: f64,
    /// The slowest run.
    pub max: f64,
}

impl Times {
    /// The summary of `runs` (all zero when empty).
    pub fn new(runs: Vec<f64>) -> Self {
        let n = runs.len() as f64;
        if runs.is_empty() {
            return Self { runs, median: 0.0, mean: 0.0, stddev: 0.0, min: 0.0, max: 0.0 };
        }
        let mean = runs.iter().sum::<f64>() / n;
        let stddev = if runs.len() > 1 {
            (runs.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Self {
            median: median(&runs),
            mean,
            stddev,
            min: runs.iter().copied().fold(f64::INFINITY, f64::min),
            max: runs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            runs,
        }
    }
}

/// One buffer size of a sweep, as the user wrote it and as bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepSize {
    /// As given (`0`, `16`, `4096B`, …): GnuPG's `--kbx-buffer-size`
    /// value for the seed's sizes.
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
    pub events: crate::events::PerOp,
    /// Bytes `read(2)` returned in one run.
    pub bytes_read: u64,
    /// Logical reads of one run.
    pub logical_reads: u64,
    /// Wall time of the timed runs, seconds.
    pub wall_s: Times,
    /// User CPU time of the timed runs, seconds.
    pub user_s: Times,
    /// System CPU time of the timed runs, seconds.
    pub sys_s: Times,
    /// Mean time per `read(2)`, nanoseconds (over the timed runs).
    pub mean_read_ns: f64,
    /// The seed's own row, when the sweep ran on the built-in keybox at one
    /// of the seed's sizes.
    pub seed: Option<SeedRow>,
    /// GnuPG's numbers at this size (`sweep --with-gpgsm` or `--with-gpg`),
    /// if it ran at it.
    pub gnupg: Option<GnupgRow>,
    /// The program's own numbers at this size (`sweep --program`): the
    /// row the table shows, beside which the rest of this result is the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramRow>,
    /// How the keybox changed under this size's runs (another file renamed
    /// into place, appended to, …); empty when it did not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keybox_changed: Vec<crate::io::KeyboxChange>,
}

impl SizeResult {
    /// The buffer (0 bytes = unbuffered), for display: `8 KiB`, `unbuffered`.
    pub fn buffer(&self) -> BufferSize {
        match usize::try_from(self.buffer_size) {
            Ok(0) | Err(_) => BufferSize::Unbuffered,
            Ok(n) => BufferSize::Bytes(n),
        }
    }
}

/// One row of the seed's procmon table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeedRow {
    /// File events procmon counted.
    pub events: u64,
    /// Wall time, seconds.
    pub time_s: f64,
}

/// GnuPG's numbers for one size: gpgsm's for validation, gpg's for the
/// signature workloads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GnupgRow {
    /// Which tool: `gpgsm` or `gpg`.
    pub tool: &'static str,
    /// File events on the keybox (open, read, seek, close, access).
    pub events: u64,
    /// Wall time of the run without strace, seconds.
    pub time_s: f64,
    /// How the events were counted: `record` (from inside) or `strace`.
    #[serde(skip)]
    pub counted_with: &'static str,
}

/// A real program's numbers for one size (`sweep --program`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgramRow {
    /// Which tool: `gpgsm` or `gpg`.
    pub tool: &'static str,
    /// Why it did not run at this size (then no events and no times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    /// File events on the keybox in one run: open, read, seek, close and
    /// access, as strace counts them.
    pub events: u64,
    /// Wall time of the timed runs, seconds.
    pub wall_s: Times,
    /// User CPU time of the timed runs, seconds.
    pub user_s: Times,
    /// System CPU time of the timed runs, seconds.
    pub sys_s: Times,
}

impl ProgramRow {
    /// A size the program cannot read with.
    pub fn not_run(tool: &'static str, why: String) -> Self {
        let none = || Times::new(Vec::new());
        Self { tool, not_run: Some(why), events: 0, wall_s: none(), user_s: none(), sys_s: none() }
    }

    /// Its events over the model's (`None` when it did not run).
    pub fn ratio(&self, model: &SizeResult) -> Option<f64> {
        let m = model.events.total();
        (self.not_run.is_none() && m > 0).then(|| self.events as f64 / m as f64)
    }
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

/// Why a sweep stopped. The CLI words it; the variants say what and where.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The keybox cannot be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
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

/// Run the workload once on `path` with `tally`.
fn run_once(path: &Path, workload: &Workload, trust: &TrustList, at: i64, tally: &IoTally) -> Result<(), SweepError> {
    let fail = |error: ScanError| SweepError::Scan { size: tally.buffer_size(), error };
    match workload {
        Workload::Validate(lookup) => {
            let opener = PathOpener { path: path.to_path_buf(), tally: tally.clone() };
            let out = workload::validate::run(&opener, *lookup, trust, at, |_| {})?;
            if let Some(e) = out.fatal {
                return Err(fail(e));
            }
        }
        Workload::Sigs(mode, lookup) => {
            let opener = PathOpener { path: path.to_path_buf(), tally: tally.clone() };
            if let Some(e) = workload::sigs::run(&opener, *mode, *lookup, at, |_| {})?.fatal {
                return Err(fail(e));
            }
        }
        Workload::List => {
            let mut f = KeyboxFile::open(path, tally)?;
            if let Some(e) = workload::list::run(&mut f, workload::TypeFilter::All, |_| {}).fatal {
                return Err(fail(e));
            }
        }
        Workload::Stats => {
            let mut f = KeyboxFile::open(path, tally)?;
            if let Some(e) = workload::stats::run(&mut f).fatal {
                return Err(fail(e));
            }
        }
        Workload::Find(p) => {
            let pattern = Pattern::parse(p)?;
            let mut f = KeyboxFile::open(path, tally)?;
            if let Some(e) = workload::find::run(&mut f, &[pattern], false, |_| {}).fatal {
                return Err(fail(e));
            }
        }
    }
    Ok(())
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
        let once = |tally: &IoTally| run_once(path, plan.workload, plan.trust, plan.at, tally);
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
            one = delta(&tally.snapshot(), &before);
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
    })
}

/// User and system CPU time of the waited-for children so far (a
/// program's run is the difference around it).
pub fn children_cpu_times() -> (std::time::Duration, std::time::Duration) {
    cpu::times(libc::RUSAGE_CHILDREN)
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
