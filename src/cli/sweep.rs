//! `sweep`: one job at several buffer sizes, on any keybox: the table (80
//! columns, or `--wide`), the exports and the plot, each to its file or
//! stdout. The library builds the sweep ([`sweep::run`]); this wires the
//! arguments to it, runs GnuPG for it and writes what it gives.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::gnupg::{GnupgRunner, Program};
use super::keybox;
use super::output::TempOutput;
use super::progress::Bar;
use super::resolve::SweepJob;
use super::store;
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::io::IoTally;
use kbxscope::store::{Store, StoreKind};
use kbxscope::sweep::export::{Exporter, Table};
use kbxscope::sweep::{self, plot, Comparison, Progress, SweepError, SweepSize, Workload};
use kbxscope::workload::import::Incoming;

/// An export destination, opened before the runs (a bad path fails fast).
enum Sink {
    Stdout,
    File(TempOutput),
}

fn open_sink(path: &Path) -> Result<Sink> {
    Ok(if path.as_os_str() == "-" { Sink::Stdout } else { Sink::File(TempOutput::open(path)?) })
}

fn finish_sink(sink: Sink, bytes: Vec<u8>) -> Result<()> {
    match sink {
        Sink::Stdout => std::io::stdout().write_all(&bytes)?,
        Sink::File(mut t) => {
            t.write_all(&bytes)?;
            t.commit()?;
        }
    }
    Ok(())
}

/// Run the sweep and print the table (on stderr when an export or the
/// plot goes to stdout, so that stdout holds only that).
pub fn run(job: &SweepJob) -> Result<ExitCode> {
    let SweepJob { args: a, workload, at, gnupg, version, apis, per_op } = job;
    let exports = a.exports.0.iter().map(|(f, p)| Ok((*f, open_sink(p)?))).collect::<Result<Vec<_>>>()?;
    let plot_sink = a.plot.as_deref().map(open_sink).transpose()?;
    let stdout_taken = exports.iter().map(|(_, s)| s).chain(&plot_sink).any(|s| matches!(s, Sink::Stdout));
    // The look at the file is counted apart (not in any row, not in the
    // metrics) and reported as the sweep's `probe_events`.
    let probe = IoTally::with_observer(kbxscope::io::BufferSize::default(), None);
    // A database, or a home that uses keyboxd, sweeps SQLite's page cache.
    let (path, keyboxd) = {
        let store = store::open(a.file.as_deref(), &probe)?;
        (store.path().to_path_buf(), store.kind() == StoreKind::Keyboxd)
    };
    let sigs = matches!(workload, Workload::Sigs(..));
    let incoming = match workload {
        Workload::Import(file) => super::import::read_input(&[PathBuf::from(file)])?,
        _ => Incoming::default(),
    };
    let import = matches!(workload, Workload::Import(_));
    let certs = matches!(incoming, Incoming::Certs(_));
    if let Some(c) = gnupg.as_ref().filter(|c| matches!(c.program, Program::GpgImport | Program::GpgsmImport)) {
        if certs != (c.program == Program::GpgsmImport) {
            let (what, who) = if certs { ("certificates", "gpgsm") } else { ("OpenPGP keys", "gpg") };
            let file = if let Workload::Import(f) = workload { f.as_str() } else { "" };
            anyhow::bail!("'{file}' holds {what}: {who} imports them (--program {who}, or --with-{who})");
        }
    }
    if (sigs || import) && *version == GnupgVersion::V2_2 && (keyboxd || a.versus_keyboxd) {
        anyhow::bail!(
            "GnuPG 2.2 has no keyboxd: --gnupg-version 2.2 replays gpg on a keybox, not on keyboxd's database{}",
            if keyboxd { format!(" ('{}')", path.display()) } else { String::new() }
        );
    }
    if keyboxd && a.versus_keyboxd {
        anyhow::bail!(
            "'{}' is keyboxd's database already: --versus-keyboxd compares a keybox with a database of its keys",
            path.display()
        );
    }
    // The database of the same keys, in a temporary file removed at the
    // end (and if a signal ends the run).
    let versus = if a.versus_keyboxd { Some(temporary_database(&path, &probe)?) } else { None };
    if keyboxd && (a.with_gpgsm.is_some() || a.with_gpg.is_some() || a.program.is_some()) {
        anyhow::bail!(
            "'{}' is keyboxd's database: --with-gpgsm, --with-gpg and --program run GnuPG on a keybox",
            path.display()
        );
    }
    let trust = if matches!(workload, Workload::Validate(_)) {
        keybox::trustlist_for(&path, a.trustlist.as_deref())?
    } else {
        keybox::Trust { list: Default::default(), none_found: false }
    };
    let cache_sizes = if a.cache_sizes.is_empty() { sweep::default_cache_sizes() } else { a.cache_sizes.clone() };
    let sizes = match (a.sizes.is_empty(), keyboxd) {
        (false, _) => a.sizes.clone(),
        (true, false) => sweep::default_sizes(),
        (true, true) => cache_sizes.clone(),
    };
    // Several file APIs: each size with each, side by side (a database is
    // read through SQLite's own calls: one row per size).
    let sizes: Vec<SweepSize> = if apis.is_empty() || keyboxd {
        sizes
    } else {
        sizes.iter().flat_map(|s| apis.iter().map(|api| s.with_api(*api))).collect()
    };
    let mut gnupg = match gnupg {
        Some(c) => {
            let given = (c.path.as_os_str() != c.program.tool()).then_some(c.path.as_path());
            let trust = a.trustlist.clone().or_else(|| keybox::trustlist_next_to(&path));
            // An import's program reads the workload's file.
            let extra = match workload {
                Workload::Import(file) => vec![std::ffi::OsString::from(file)],
                _ => Vec::new(),
            };
            Some(GnupgRunner::new(c.program, c.option, given, &path, trust.as_deref(), a.count_with, extra)?)
        }
        None => None,
    };
    // Beside a GnuPG program, the model is that program's own version.
    let version = gnupg.as_ref().and_then(GnupgRunner::gnupg_version).unwrap_or(*version);
    let compare = match (gnupg.as_mut(), &versus) {
        (Some(g), _) if a.program.is_some() => Some(Comparison::Program(g)),
        (Some(g), _) => Some(Comparison::Gnupg(g)),
        (None, Some(db)) => Some(Comparison::Keyboxd { database: db.path(), sizes: &cache_sizes }),
        (None, None) => None,
    };
    let plan = sweep::Plan {
        sizes: &sizes,
        workload,
        runs: a.runs as usize,
        warmup: a.warmup as usize,
        trust: &trust.list,
        at: *at,
        version,
        keyboxd,
        builtin: a.file.is_none(),
        compare,
        probe: Some(&probe),
        incoming: &incoming,
    };
    let mut bar = None;
    let result = sweep::run(&path, plan, &mut |p| match p {
        Progress::Run(step) => bar.get_or_insert_with(Bar::with_eta).update(&step.to_string(), step.done, step.total),
        Progress::Done => bar = None,
    });
    drop(bar);
    let result = result.map_err(|e| sweep_error(&path, e))?;
    if let Some(tmp) = versus {
        let at = tmp.path().to_path_buf();
        super::interrupt::settle(&at, || drop(tmp));
    }
    trust.warn_if_none();
    let text = Table { wide: a.wide, per_op: *per_op }.render(&result);
    if stdout_taken {
        std::io::stderr().write_all(&text)?;
    } else {
        std::io::stdout().write_all(&text)?;
    }
    for (format, sink) in exports {
        finish_sink(sink, format.render(&result))?;
    }
    if let Some(sink) = plot_sink {
        finish_sink(sink, plot::svg(&result).map_err(|e| anyhow::anyhow!("--plot: {e}"))?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The keybox's keys as keyboxd's database, in a temporary file (removed
/// when dropped, and if a signal ends the run): read through `tally` (a
/// probe's, not a row's).
fn temporary_database(path: &Path, tally: &IoTally) -> Result<tempfile::NamedTempFile> {
    let keybox = Store::open_as(path, StoreKind::Keybox, tally, None)?.read_keybox()?;
    let db = kbxscope::keyboxd::write::database(&keybox, "2019-01-01 00:00:00")?;
    let mut tmp = super::interrupt::create(
        || tempfile::Builder::new().prefix("kbxscope-versus-").suffix(".db").tempfile(),
        |t: &tempfile::NamedTempFile| t.path(),
    )?;
    tmp.write_all(&db.bytes)?;
    tmp.flush()?;
    Ok(tmp)
}

/// A failed sweep in words: the keybox, the buffer size and what went wrong.
fn sweep_error(path: &Path, e: SweepError) -> anyhow::Error {
    match e {
        SweepError::Store(kbxscope::store::StoreError::Keyboxd(e)) => anyhow::anyhow!("{e}"),
        SweepError::Scan { size, error } => anyhow::anyhow!("{}: at buffer size {size}: {error}", path.display()),
        SweepError::Pattern(e) => anyhow::anyhow!("--workload find: {e}"),
        SweepError::Private { error } => {
            anyhow::anyhow!("--workload import: cannot make a private copy of '{}': {error}", path.display())
        }
        e @ (SweepError::Store(_) | SweepError::Program(_) | SweepError::Import(_)) => e.into(),
    }
}
