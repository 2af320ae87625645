//! A sweep's result: per size the events, bytes and times ([`SizeResult`]),
//! with the seed's, GnuPG's or a recorded program's numbers beside them.
//! Serialised as it is, [`Sweep`] is the JSON export.

use serde::Serialize;

use super::workloads::Workload;
use crate::io::{BufferSize, FileApi};

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
    /// The file is keyboxd's database: each size is SQLite's page cache.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub keyboxd: bool,
    /// The same workload on keyboxd's database of the same keys (`sweep
    /// --versus-keyboxd`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versus: Option<Box<Sweep>>,
    /// The calls made on the file before the first size, to tell a keybox
    /// from a database (open, `fstat`, the first read, close), counted
    /// apart from every row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_events: Option<crate::events::PerOp>,
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
    /// The file API of this row, when a sweep compares them (`sweep
    /// --file-api win32,crt`); `None`: the process's.
    pub api: Option<FileApi>,
}

impl SweepSize {
    /// This size with the file API `api`.
    pub fn with_api(&self, api: FileApi) -> Self {
        Self { api: Some(api), ..self.clone() }
    }
}

/// Results for one buffer size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeResult {
    /// The size as given.
    pub label: String,
    /// The buffer in bytes (0 = unbuffered).
    pub buffer_size: u64,
    /// The file API of the row, when the sweep compares them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_api: Option<FileApi>,
    /// An import into keyboxd's database with gpg's `bulk-import` (one
    /// transaction for all keys); the label ends in ` bulk`.
    #[serde(skip_serializing_if = "is_false")]
    pub bulk_import: bool,
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
    /// File events of the operations a keybox's reads never make (a
    /// database's `fcntl` locks; the access checks, writes, links, unlinks
    /// and renames of GnuPG's start beside a keybox), in one run; in
    /// `events_total` too.
    #[serde(skip_serializing_if = "is_zero")]
    pub other_events: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl SizeResult {
    /// File events of one run, every operation (the table's and the
    /// exports' total).
    pub fn total_events(&self) -> u64 {
        self.events.total() + self.other_events
    }

    /// The row's buffer for display, its file API when the sweep compares
    /// them, and gpg's `bulk-import` when it was used: `8 KiB`, `64 KiB,
    /// crt`, `2000 KiB, bulk import`.
    pub fn shown(&self) -> String {
        let mut s = self.buffer().to_string();
        if let Some(api) = self.file_api {
            s = format!("{s}, {api}");
        }
        if self.bulk_import {
            s += ", bulk import";
        }
        s
    }

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
        let m = model.total_events();
        (self.not_run.is_none() && m > 0).then(|| self.events as f64 / m as f64)
    }
}
