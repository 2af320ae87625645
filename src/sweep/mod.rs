//! `sweep`: the seed's table — file events and time per buffer size — in
//! one command.
//!
//! For each buffer size: a fresh tally, `warmup` untimed runs, then `runs`
//! timed runs of the workload; the file events are those of one run (every
//! run issues the same calls), times are kept per run with their summary
//! ([`Times`]). Beside them, as the [`Plan`] asks: the seed's numbers, a
//! GnuPG program's ([`GnupgProgram`], which the CLI runs), or the same
//! workload on keyboxd's database of the keys, with a [`Verdict`].
//! [`Sweep`] is the whole result: what the table shows
//! ([`export::Table`]) and, serialised as it is, the JSON export.

mod error;
pub mod export;
mod measure;
pub mod plot;
mod program;
mod result;
mod seed;
#[cfg(test)]
mod tests;
mod verdict;
mod workloads;

pub use error::SweepError;
pub use measure::{Progress, Step};
pub use program::{GnupgProgram, ProgramError};
pub use result::{median, GnupgRow, ProgramRow, SeedRow, SizeResult, Sweep, SweepSize, Times};
pub use seed::{default_cache_sizes, default_sizes, seed_row};
pub use verdict::Verdict;
pub use workloads::{Workload, WorkloadKind};

use std::path::Path;

use crate::gnupg_version::GnupgVersion;
use crate::io::IoTally;
use crate::x509::TrustList;

/// What a sweep compares kbxscope's rows with (one at most; the seed's
/// numbers come with the built-in keybox, [`Plan::builtin`]).
pub enum Comparison<'a> {
    /// `--with-gpgsm`, `--with-gpg`: the program's events and time beside
    /// each row ([`SizeResult::gnupg`]), where it can read with the size.
    Gnupg(&'a mut dyn GnupgProgram),
    /// `--program`: the program's rows ([`SizeResult::program`]), with the
    /// plan's runs and warm-ups; kbxscope's run, one per size, is the model.
    Program(&'a mut dyn GnupgProgram),
    /// `--versus-keyboxd`: the same workload on `database`, keyboxd's
    /// database of the same keys, at the page-cache sizes `sizes`
    /// ([`Sweep::versus`]).
    Keyboxd {
        /// The database (the caller makes it, and removes it).
        database: &'a Path,
        /// SQLite's page-cache sizes.
        sizes: &'a [SweepSize],
    },
}

/// What to sweep: sizes, workload, runs, and what to compare with.
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
    /// The GnuPG version whose rules and reads the signature workloads
    /// reproduce (with a GnuPG program to compare with, its own).
    pub version: GnupgVersion,
    /// The file is keyboxd's database: each size is SQLite's page cache
    /// (`PRAGMA cache_size`), the workload is read through SQLite.
    pub keyboxd: bool,
    /// The file is the built-in keybox: the seed's numbers beside the
    /// seed's sizes (not for the signature and import workloads, which it
    /// did not run).
    pub builtin: bool,
    /// GnuPG, or keyboxd's database, beside kbxscope's rows.
    pub compare: Option<Comparison<'a>>,
    /// The tally that counted the look at the file before the sweep (to
    /// tell a keybox from a database): the sweep's `probe_events`.
    pub probe: Option<&'a IoTally>,
    /// What the import workload imports (no keys for the others).
    pub incoming: &'a crate::workload::import::Incoming,
}

/// Sweep `plan.sizes` on `path` and fill in what the plan compares with;
/// `progress` is told before each of kbxscope's runs, and when one store's
/// runs are over.
///
/// # Errors
/// The first failed run, kbxscope's or the GnuPG program's.
pub fn run(path: &Path, plan: Plan<'_>, progress: &mut dyn FnMut(Progress)) -> Result<Sweep, SweepError> {
    let Plan { sizes, workload, runs, warmup, trust, at, version, keyboxd, builtin, mut compare, probe, incoming } =
        plan;
    // With --program, kbxscope's run is the model: its events are the
    // same on every run, so one run per size.
    let model = matches!(compare, Some(Comparison::Program(_)));
    // gpgsm 2.2 locks the keybox around its searches; beside a GnuPG
    // program, whose count is the keybox's own calls, the model leaves the
    // lock file out too, so that both count the same.
    let beside = matches!(compare, Some(Comparison::Gnupg(_) | Comparison::Program(_)));
    let ours = measure::Runs {
        sizes,
        workload,
        runs: if model { 1 } else { runs },
        warmup: if model { 0 } else { warmup },
        trust,
        at,
        version,
        keyboxd,
        versus: false,
        incoming,
        searches_lock: version == GnupgVersion::V2_2 && !beside,
    };
    let mut sweep = measure::measure(path, &ours, progress)?;
    let seed = builtin && !matches!(workload, Workload::Sigs(..) | Workload::Import(_));
    for (r, s) in sweep.results.iter_mut().zip(sizes) {
        if seed {
            r.seed = seed_row(&r.label);
        }
        match &mut compare {
            Some(Comparison::Gnupg(g)) => r.gnupg = g.gnupg_row(s).map_err(SweepError::Program)?,
            Some(Comparison::Program(p)) => {
                r.program = Some(p.program_row(s, warmup, runs).map_err(SweepError::Program)?);
            }
            _ => {}
        }
    }
    match compare {
        Some(Comparison::Program(p)) => {
            sweep.program = Some(p.describe());
            (sweep.runs, sweep.warmup) = (runs, warmup);
        }
        Some(Comparison::Keyboxd { database, sizes }) => {
            let plan = measure::Runs { sizes, keyboxd: true, versus: true, ..ours };
            let mut db = measure::measure(database, &plan, progress)?;
            db.keybox = format!("{} as keyboxd's database (kbxscope convert, a temporary copy)", path.display());
            sweep.versus = Some(Box::new(db));
        }
        _ => {}
    }
    sweep.probe_events = probe.map(|p| p.snapshot().events).filter(|e| e.total() > 0);
    Ok(sweep)
}

/// User and system CPU time of the waited-for children so far (a
/// program's run is the difference around it).
pub fn children_cpu_times() -> (std::time::Duration, std::time::Duration) {
    crate::io::cpu_times(crate::io::CpuOf::Children)
}
