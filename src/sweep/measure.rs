//! kbxscope's own runs of one store at every size: for each, a fresh
//! tally, the warm-ups, then the timed runs; the file events of one run
//! (every run issues the same calls) and the times of each.

use std::fmt;
use std::path::Path;
use std::time::Instant;

use super::error::SweepError;
use super::result::{SizeResult, Sweep, SweepSize, Times};
use super::workloads::Workload;
use crate::events::IoStats;
use crate::gnupg_version::GnupgVersion;
use crate::io::update::PrivateCopy;
use crate::io::{cpu_times, BufferSize, CpuOf, IoTally};
use crate::kbx::search::Pattern;
use crate::lookup::Strategy;
use crate::openpgp::Judge;
use crate::store::{Store, StoreKind};
use crate::workload;
use crate::workload::import::Incoming;
use crate::workload::keyboxd_import::KeyboxdRun;
use crate::workload::stats::StoreStats;
use crate::x509::TrustList;

/// Where a sweep is, for a progress display: before each of kbxscope's
/// runs. Displayed, it is the display's message: `64 KiB (4/7): timed run
/// 2/3`, after `keyboxd: ` in the second sweep of `--versus-keyboxd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Index of the size in the list.
    pub size: usize,
    /// How many sizes the list has.
    pub sizes: usize,
    /// The size.
    pub buffer: BufferSize,
    /// A run of the second sweep, on keyboxd's database (`--versus-keyboxd`).
    pub versus: bool,
    /// keyboxd's import with gpg's `bulk-import` (the second row of each
    /// page-cache size of an import into a database).
    pub bulk_import: bool,
    /// Whether this run is a warm-up (untimed).
    pub warmup: bool,
    /// 1-based number of this run among the warm-ups, or among the timed runs.
    pub run: usize,
    /// How many warm-ups, or timed runs, this size has.
    pub of: usize,
    /// Runs of this store's sweep (warm-ups included) finished before this one.
    pub done: usize,
    /// Runs of this store's sweep, warm-ups included.
    pub total: usize,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.warmup { "warm-up" } else { "timed run" };
        if self.versus {
            f.write_str("keyboxd: ")?;
        }
        let bulk = if self.bulk_import { ", bulk import" } else { "" };
        write!(f, "{}{bulk} ({}/{}): {what} {}/{}", self.buffer, self.size + 1, self.sizes, self.run, self.of)
    }
}

/// What a sweep tells a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// One of kbxscope's runs is about to start.
    Run(Step),
    /// kbxscope's runs of one store are over (GnuPG's runs, or the second
    /// store's, may follow).
    Done,
}

/// kbxscope's runs of one store.
#[derive(Clone, Copy)]
pub(super) struct Runs<'a> {
    /// The buffer sizes, in order.
    pub(super) sizes: &'a [SweepSize],
    /// What each run does.
    pub(super) workload: &'a Workload,
    /// Timed runs per size (at least 1 is made).
    pub(super) runs: usize,
    /// Untimed runs per size before the timed ones.
    pub(super) warmup: usize,
    /// Trusted roots for the validate workload.
    pub(super) trust: &'a TrustList,
    /// Validity time for the validate workload (Unix seconds).
    pub(super) at: i64,
    /// Whose rules the signature workloads follow.
    pub(super) version: GnupgVersion,
    /// The file is keyboxd's database: each size is SQLite's page cache.
    pub(super) keyboxd: bool,
    /// The second sweep of `--versus-keyboxd` (said in each [`Step`]).
    pub(super) versus: bool,
    /// What the import workload imports.
    pub(super) incoming: &'a Incoming,
    /// gpgsm 2.2's lock around each search, in the validate workload
    /// (not beside a GnuPG program, whose count is the keybox's own calls).
    pub(super) searches_lock: bool,
}

/// Run the workload once on the store `path` (a keybox, or keyboxd's
/// database with SQLite's page cache the tally's buffer size) with `tally`;
/// an import into a database with gpg's `bulk-import` when `bulk`.
fn run_once(path: &Path, kind: StoreKind, plan: &Runs<'_>, tally: &IoTally, bulk: bool) -> Result<(), SweepError> {
    let cache = match kind {
        StoreKind::Keybox => None,
        StoreKind::Keyboxd => Some((tally.buffer_size().bytes() as u64).div_ceil(1024)),
    };
    if matches!(plan.workload, Workload::Import(_)) {
        return import_once(path, plan, tally, cache.map(|kib| KeyboxdRun { bulk, cache_kib: Some(kib) }));
    }
    let store = Store::open_as(path, kind, tally, cache)?;
    let (trust, at) = (plan.trust, plan.at);
    let fatal = match plan.workload {
        Workload::Validate(lookup) => {
            workload::validate::run(&store, *lookup, trust, at, plan.version, plan.searches_lock, |_| {})?.outcome.fatal
        }
        Workload::Sigs(mode, lookup) => {
            let judge = Judge { version: plan.version, now: at };
            workload::sigs::run(&store, *mode, *lookup, judge, |_| {})?.outcome.fatal
        }
        Workload::List => workload::list::run(&store, workload::TypeFilter::All, |_| {})?.outcome.fatal,
        Workload::Stats => match workload::stats::run(&store)? {
            StoreStats::Keybox(outcome) => outcome.fatal,
            StoreStats::Keyboxd(_) => None,
        },
        Workload::Find(p) => {
            let pattern = Pattern::parse(p)?;
            workload::find::run(&store, &[pattern], false, |_| {})?.outcome.fatal
        }
        Workload::Import(_) => None,
    };
    fatal.map_or(Ok(()), |error| Err(SweepError::Scan { size: tally.buffer_size(), error }))
}

/// One import onto a fresh private copy of the store at `path` (the copy
/// is kbxscope's own, not counted; removed at the end of the run): a
/// keybox, or keyboxd's database run as `keyboxd` says.
fn import_once(path: &Path, plan: &Runs<'_>, tally: &IoTally, keyboxd: Option<KeyboxdRun>) -> Result<(), SweepError> {
    let copy = PrivateCopy::of(path, None).map_err(|error| SweepError::Private { error })?;
    let judge = Judge { version: plan.version, now: plan.at };
    match (plan.incoming, keyboxd) {
        (Incoming::Keys(keys), None) => {
            workload::import::into_keybox(copy.store(), tally, keys, judge, |_| {})?;
        }
        (Incoming::Keys(keys), Some(how)) => {
            workload::keyboxd_import::into_keyboxd(copy.store(), tally, keys, judge, how, |_| {})?;
        }
        (Incoming::Certs(certs), None) => {
            workload::import_x509::into_keybox(copy.store(), tally, certs, plan.at, plan.version, |_| {})?;
        }
        (Incoming::Certs(certs), Some(how)) => {
            workload::keyboxd_x509::into_keyboxd(copy.store(), tally, certs, plan.at, how.cache_kib, |_| {})?;
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

/// kbxscope's rows of `plan.sizes` on `path`, in a [`Sweep`] that says
/// nothing yet of GnuPG, the seed or another store; `progress` is told
/// before each run, and when they are over. An import into keyboxd's
/// database has two rows per page-cache size: without and with gpg's
/// `bulk-import` (gpgsm's import of certificates has no such option: one
/// row).
///
/// # Errors
/// The first failed run.
pub(super) fn measure(path: &Path, plan: &Runs<'_>, progress: &mut dyn FnMut(Progress)) -> Result<Sweep, SweepError> {
    let (runs, warmup) = (plan.runs.max(1), plan.warmup);
    let keys = matches!(plan.incoming, Incoming::Keys(_));
    let bulk: &[bool] =
        if plan.keyboxd && keys && matches!(plan.workload, Workload::Import(_)) { &[false, true] } else { &[false] };
    let rows: Vec<(&SweepSize, bool)> = plan.sizes.iter().flat_map(|s| bulk.iter().map(move |b| (s, *b))).collect();
    let mut out = Vec::with_capacity(rows.len());
    let total = rows.len() * (warmup + runs);
    let mut done = 0;
    let kind = if plan.keyboxd { StoreKind::Keyboxd } else { StoreKind::Keybox };
    // Every size's handles compare the file they open with the first one.
    let first = IoTally::new(plan.sizes.first().map_or_else(BufferSize::default, |s| s.size));
    for (i, &(s, bulk_import)) in rows.iter().enumerate() {
        let tally = first.sibling(s.size).with_file_api(s.api.unwrap_or(first.file_api()));
        // `first` reads nothing: its changes are only the ones every size
        // shares (files seen at open); what comes after them is this size's.
        let seen_before = first.changes().len();
        let mut step = |warm: bool, run: usize, of: usize, done: usize| {
            let (sizes, buffer, versus) = (rows.len(), s.size, plan.versus);
            let warmup = warm;
            progress(Progress::Run(Step { size: i, sizes, buffer, versus, bulk_import, warmup, run, of, done, total }));
        };
        let _size =
            tracing::info_span!(target: "kbx::sweep", "size", buffer_size = s.size.bytes() as u64, label = %s.label)
                .entered();
        for w in 0..warmup {
            step(true, w + 1, warmup, done);
            let _run = tracing::info_span!(target: "kbx::sweep", "warmup", run = w + 1, of = warmup).entered();
            run_once(path, kind, plan, &tally, bulk_import)?;
            done += 1;
        }
        let (mut wall, mut user, mut sys) = (Vec::new(), Vec::new(), Vec::new());
        let mut one = IoStats::new(s.size.bytes() as u64);
        let mut other_events = 0;
        let (mut read_ns, mut reads) = (0u64, 0u64);
        for k in 0..runs {
            step(false, k + 1, runs, done);
            let before = tally.snapshot();
            let (u0, s0) = cpu_times(CpuOf::Myself);
            let run = tracing::info_span!(target: "kbx::sweep", "run", run = k + 1, of = runs).entered();
            let start = Instant::now();
            run_once(path, kind, plan, &tally, bulk_import)?;
            let elapsed = start.elapsed();
            drop(run);
            let (u1, s1) = cpu_times(CpuOf::Myself);
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
            label: if bulk_import { format!("{} bulk", s.label) } else { s.label.clone() },
            bulk_import,
            buffer_size: s.size.bytes() as u64,
            file_api: s.api,
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
    progress(Progress::Done);
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
