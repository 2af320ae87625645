//! `sweep`: the seed's table on any keybox.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::args::{LookupArg, SweepArgs};
use super::gpg::GpgRunner;
use super::gpgsm::GpgsmRunner;
use super::keybox;
use super::output::TempOutput;
use super::progress::Bar;
use kbxscope::io::IoTally;
use kbxscope::sweep::{self, export, median, plot, GpgsmRow, SizeResult, SweepSize, Workload};
use kbxscope::validate::Lookup;

/// An export destination, opened before the runs (a bad path fails fast).
enum Sink {
    Stdout,
    File(TempOutput),
}

fn open_sink(path: &Option<PathBuf>) -> Result<Option<Sink>> {
    Ok(match path {
        None => None,
        Some(p) if p.as_os_str() == "-" => Some(Sink::Stdout),
        Some(p) => Some(Sink::File(TempOutput::open(p)?)),
    })
}

fn finish_sink(sink: Option<Sink>, bytes: Vec<u8>) -> Result<()> {
    match sink {
        None => {}
        Some(Sink::Stdout) => std::io::stdout().write_all(&bytes)?,
        Some(Sink::File(mut t)) => {
            t.write_all(&bytes)?;
            t.commit()?;
        }
    }
    Ok(())
}

/// Parse `--workload`.
pub fn parse_workload(s: &str) -> Result<WorkloadArg, String> {
    match s {
        "validate" => Ok(WorkloadArg::Validate),
        "list" => Ok(WorkloadArg::List),
        "stats" => Ok(WorkloadArg::Stats),
        "with-sigs" => Ok(WorkloadArg::WithSigs),
        "check-sigs" => Ok(WorkloadArg::CheckSigs),
        _ => match s.strip_prefix("find:") {
            Some(p) if !p.is_empty() => Ok(WorkloadArg::Find(p.to_string())),
            _ => Err(format!("expected validate, list, stats, find:PATTERN, with-sigs or check-sigs; got '{s}'")),
        },
    }
}

/// `--workload` as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadArg {
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

/// Parse one `--sizes` entry, keeping how it was written.
pub fn parse_size(s: &str) -> Result<SweepSize, String> {
    s.parse().map(|size| SweepSize { label: s.to_string(), size }).map_err(|e| format!("{e}"))
}

/// Run the sweep and print the table.
pub fn run(a: &SweepArgs) -> Result<ExitCode> {
    let exports = (open_sink(&a.export_json)?, open_sink(&a.export_csv)?, open_sink(&a.export_markdown)?);
    let plot_sink = open_sink(&a.plot)?;
    let probe = IoTally::new(kbxscope::io::BufferSize::default());
    let path = keybox::resolve(a.file.as_deref(), &probe)?;
    let builtin = a.file.is_none();
    let lookup = match a.lookup {
        LookupArg::Gnupg => Lookup::Gnupg,
        LookupArg::Scan => Lookup::Scan,
        LookupArg::Index => Lookup::Index,
    };
    let workload = match &a.workload {
        WorkloadArg::Validate => Workload::Validate(lookup),
        WorkloadArg::List => Workload::List,
        WorkloadArg::Stats => Workload::Stats,
        WorkloadArg::Find(p) => Workload::Find(p.clone()),
        WorkloadArg::WithSigs => Workload::Sigs(kbxscope::sigs::Mode::WithSigs, lookup),
        WorkloadArg::CheckSigs => Workload::Sigs(kbxscope::sigs::Mode::CheckSigs, lookup),
    };
    let trust = if matches!(workload, Workload::Validate(_)) {
        keybox::trustlist_for(&path, a.trustlist.as_deref())?
    } else {
        Default::default()
    };
    let at = a.at.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
    });
    let sizes = if a.sizes.is_empty() { sweep::default_sizes() } else { a.sizes.clone() };
    let mut gpgsm = match &a.with_gpgsm {
        None => None,
        Some(p) => {
            let given = (p.as_os_str() != "gpgsm").then_some(p.as_path());
            let trust = keybox::trustlist_path(&path);
            let trust = a.trustlist.clone().or_else(|| super::textfile::is_file(&trust).then_some(trust));
            Some(GpgsmRunner::new(given, &path, trust.as_deref())?)
        }
    };
    let mut gpg = match (&a.with_gpg, &workload) {
        (None, _) => None,
        (Some(p), Workload::Sigs(mode, _)) => {
            let given = (p.as_os_str() != "gpg").then_some(p.as_path());
            Some(GpgRunner::new(given, &path, *mode)?)
        }
        (Some(_), _) => anyhow::bail!("--with-gpg goes with --workload with-sigs or check-sigs"),
    };
    let bar = Bar::new();
    let results =
        sweep::run(&path, &sizes, &workload, a.runs as usize, a.warmup as usize, &trust, at, &mut |i, k, n| {
            bar.update(&format!("{} KiB: run {}/{}", sizes[i].label, k + 1, n), i, sizes.len())
        })?;
    drop(bar);
    let mut results = results;
    for (r, s) in results.iter_mut().zip(&sizes) {
        if builtin && !matches!(workload, Workload::Sigs(..)) {
            r.seed = sweep::seed_row(&r.label);
        }
        if let Some(runner) = gpgsm.as_mut() {
            r.gpgsm = gpgsm_at(runner, s)?;
        }
        if let Some(runner) = gpg.as_mut() {
            // gpg's numbers go in the same column (`gpgsm` in the exports).
            r.gpgsm = runner.at(s)?;
        }
    }
    print!("{}", table(&path, &workload, &results, gpgsm.is_some() || gpg.is_some()));
    finish_sink(exports.0, export::json(&results))?;
    finish_sink(exports.1, export::csv(&results))?;
    finish_sink(exports.2, export::markdown(&results))?;
    if let Some(sink) = plot_sink {
        let title = format!("{} — {}", file_name(&path), workload.name());
        finish_sink(Some(sink), plot::svg(&results, &title).map_err(|e| anyhow::anyhow!("--plot: {e}"))?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// gpgsm's row for a size, if this gpgsm can run at it: sizes GnuPG can
/// express (a number of KiB; 0 = its 8 KiB default), or only 8 KiB for a
/// gpgsm without `--kbx-buffer-size`.
fn gpgsm_at(runner: &mut GpgsmRunner, s: &SweepSize) -> Result<Option<GpgsmRow>> {
    let bytes = s.size.bytes() as u64;
    if !runner.has_buffer_option {
        return Ok(if bytes == 8192 { Some(runner.run(None)?) } else { None });
    }
    match s.label.parse::<u64>() {
        Ok(kib) => Ok(Some(runner.run(Some(kib))?)),
        Err(_) if bytes > 0 && bytes.is_multiple_of(8192) => Ok(Some(runner.run(Some(bytes / 1024))?)),
        Err(_) => Ok(None),
    }
}

/// The file name of a path, for titles.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The terminal table: the seed's columns first; with the built-in keybox,
/// the seed's own numbers and the ratio beside ours; with `--with-gpgsm`,
/// gpgsm's events and time.
fn table(path: &Path, workload: &Workload, results: &[SizeResult], with_gpgsm: bool) -> String {
    let ms = results.iter().all(|r| r.wall_median() < 1.0);
    let (unit, scale) = if ms { ("ms", 1000.0) } else { ("s", 1.0) };
    let seed = results.iter().any(|r| r.seed.is_some());
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} — {} ({} runs per size)",
        path.display(),
        workload.name(),
        results.first().map_or(0, |r| r.wall_s.len())
    );
    let mut header = format!(
        "{:>7} {:>12} {:>9} {:>12} {:>6} {:>6} {:>8} {:>8} {:>10}",
        "N(k)",
        "file events",
        format!("time({unit})"),
        "reads",
        "opens",
        "seeks",
        "user(s)",
        "sys(s)",
        "read(µs)"
    );
    if seed {
        header += &format!(" {:>12} {:>7} {:>12}", "seed events", "ratio", "seed time(s)");
    }
    if with_gpgsm {
        let tool = if matches!(workload, Workload::Sigs(..)) { "gpg" } else { "gpgsm" };
        header += &format!(" {:>13} {:>14}", format!("{tool} events"), format!("{tool} time(s)"));
    }
    let _ = writeln!(s, "{header}");
    for r in results {
        let _ = write!(
            s,
            "{:>7} {:>12} {:>9.3} {:>12} {:>6} {:>6} {:>8.2} {:>8.2} {:>10.2}",
            r.label,
            r.events.total(),
            r.wall_median() * scale,
            r.events.read,
            r.events.open,
            r.events.seek,
            median(&r.user_s),
            median(&r.sys_s),
            r.mean_read_ns / 1000.0
        );
        match r.seed {
            Some(row) => {
                let ratio = r.events.total() as f64 / row.events as f64;
                let _ = write!(s, " {:>12} {:>7.3} {:>12.0}", row.events, ratio, row.time_s);
            }
            None if seed => {
                let _ = write!(s, " {:>12} {:>7} {:>12}", "-", "-", "-");
            }
            None => {}
        }
        match (with_gpgsm, r.gpgsm) {
            (true, Some(GpgsmRow { events, time_s })) => {
                let _ = write!(s, " {:>13} {:>14.3}", events, time_s);
            }
            (true, None) => {
                let _ = write!(s, " {:>13} {:>14}", "-", "-");
            }
            (false, _) => {}
        }
        s.push('\n');
    }
    for r in results {
        for change in &r.keybox_changed {
            let change = super::render::keybox_change(change);
            let _ = writeln!(s, "note: at size {}, the keybox {change}; this row measured a changed file", r.label);
        }
    }
    s
}
