//! `sweep`: one job at several buffer sizes, on any keybox: the table (80
//! columns, or `--wide`), the exports and the plot, each to its file or stdout.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::args::SweepArgs;
use super::gnupg::{GnupgRunner, Program};
use super::keybox;
use super::output::TempOutput;
use super::progress::Bar;
use super::store;
use kbxscope::io::IoTally;
use kbxscope::lookup::Strategy;
use kbxscope::store::{Store, StoreKind};
use kbxscope::sweep::{self, plot, ProgramRow, SizeResult, Sweep, SweepError, SweepSize, Workload};

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

/// Run the sweep and print the table (on stderr when an export or the
/// plot goes to stdout, so that stdout holds only that).
pub fn run(a: &SweepArgs, now: i64) -> Result<ExitCode> {
    let exports =
        a.exports.0.iter().map(|(f, p)| Ok((*f, open_sink(&Some(p.clone()))?))).collect::<Result<Vec<_>>>()?;
    let plot_sink = open_sink(&a.plot)?;
    let stdout_taken = exports.iter().map(|(_, s)| s).chain([&plot_sink]).any(|s| matches!(s, Some(Sink::Stdout)));
    // The look at the file is counted apart (not in any row, not in the
    // metrics) and reported as the sweep's `probe_events`.
    let probe = IoTally::with_observer(kbxscope::io::BufferSize::default(), None);
    // A database, or a home that uses keyboxd, sweeps SQLite's page cache.
    let (path, keyboxd) = {
        let store = store::open(a.file.as_deref(), &probe)?;
        (store.path().to_path_buf(), store.kind() == StoreKind::Keyboxd)
    };
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
    let builtin = a.file.is_none();
    let lookup = Strategy::from(a.lookup);
    let workload = a.workload.clone().with(lookup);
    let trust = if matches!(workload, Workload::Validate(_)) {
        keybox::trustlist_for(&path, a.trustlist.as_deref())?
    } else {
        keybox::Trust { list: Default::default(), none_found: false }
    };
    let at = a.at.unwrap_or(now);
    let cache_sizes = if a.cache_sizes.is_empty() { sweep::default_cache_sizes() } else { a.cache_sizes.clone() };
    let sizes = match (a.sizes.is_empty(), keyboxd) {
        (false, _) => a.sizes.clone(),
        (true, false) => sweep::default_sizes(),
        (true, true) => cache_sizes.clone(),
    };
    let gnupg_trust = || a.trustlist.clone().or_else(|| keybox::trustlist_next_to(&path));
    let runner = |program: Program, option: &str, p: &Path| {
        let given = (p.as_os_str() != program.tool()).then_some(p);
        GnupgRunner::new(program, option, given, &path, gnupg_trust().as_deref(), a.count_with)
    };
    let mut gnupg = match (&a.with_gpgsm, &a.with_gpg, &workload) {
        (Some(p), _, _) => Some(runner(Program::GpgsmValidate, "--with-gpgsm", p)?),
        (None, Some(p), Workload::Sigs(mode, _)) => Some(runner(Program::GpgSigs(*mode), "--with-gpg", p)?),
        (None, Some(_), _) => anyhow::bail!("--with-gpg goes with --workload with-sigs or check-sigs"),
        (None, None, _) => None,
    };
    let mut program = match &a.program {
        Some(p) => Some(runner(Program::for_sweep(p, &workload)?, "--program", p)?),
        None => None,
    };
    // With --program, kbxscope's run is the model: its events are the
    // same on every run, so one run per size.
    let (runs, warmup) = match program {
        Some(_) => (1, 0),
        None => (a.runs as usize, a.warmup as usize),
    };
    let plan = sweep::Plan { sizes: &sizes, workload: &workload, runs, warmup, trust: &trust.list, at, keyboxd };
    let bar = Bar::with_eta();
    let result = sweep::run(&path, &plan, &mut |step| bar.update(&step_text(&sizes, step), step.done, step.total));
    drop(bar);
    let mut result = result.map_err(|e| sweep_error(&path, e))?;
    for (r, s) in result.results.iter_mut().zip(&sizes) {
        if builtin && !matches!(workload, Workload::Sigs(..)) {
            r.seed = sweep::seed_row(&r.label);
        }
        if let Some(runner) = gnupg.as_mut() {
            r.gnupg = runner.at(s)?;
        }
        if let Some(runner) = program.as_mut() {
            r.program = Some(runner.program_row(s, a.warmup as usize, a.runs as usize)?);
        }
    }
    if let Some(runner) = &program {
        result.program = Some(runner.describe());
        (result.runs, result.warmup) = (a.runs as usize, a.warmup as usize);
    }
    if let Some(tmp) = &versus {
        let plan = sweep::Plan { sizes: &cache_sizes, keyboxd: true, ..plan.clone() };
        let bar = Bar::with_eta();
        let db = sweep::run(tmp.path(), &plan, &mut |step| {
            bar.update(&format!("keyboxd: {}", step_text(&cache_sizes, step)), step.done, step.total)
        });
        drop(bar);
        let mut db = db.map_err(|e| sweep_error(&path, e))?;
        db.keybox = format!("{} as keyboxd's database (kbxscope convert, a temporary copy)", path.display());
        result.versus = Some(Box::new(db));
    }
    if let Some(tmp) = versus {
        let at = tmp.path().to_path_buf();
        super::interrupt::settle(&at, || drop(tmp));
    }
    let probed = probe.snapshot().events;
    result.probe_events = (probed.total() > 0).then_some(probed);
    trust.warn_if_none();
    let mut text = table(&result, a.wide);
    if let Some(v) = &result.versus {
        text += "\n";
        text += &table(v, a.wide);
        text += &verdict(&result, v);
    }
    if stdout_taken {
        std::io::stderr().write_all(text.as_bytes())?;
    } else {
        std::io::stdout().write_all(text.as_bytes())?;
    }
    for (format, sink) in exports {
        finish_sink(sink, format.render(&result))?;
    }
    if let Some(sink) = plot_sink {
        finish_sink(Some(sink), plot::svg(&result).map_err(|e| anyhow::anyhow!("--plot: {e}"))?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The progress bar's message: the size, and which run of how many.
fn step_text(sizes: &[SweepSize], step: sweep::Step) -> String {
    let size = sizes[step.size].size;
    let what = if step.warmup { "warm-up" } else { "timed run" };
    format!("{size} ({}/{}): {what} {}/{}", step.size + 1, sizes.len(), step.run, step.of)
}

/// The keybox's keys as keyboxd's database, in a temporary file (removed
/// when dropped, and if a signal ends the run): read through `tally` (a
/// probe's, not a row's).
fn temporary_database(path: &Path, tally: &kbxscope::io::IoTally) -> Result<tempfile::NamedTempFile> {
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

/// Keybox or keyboxd: the fastest row of each, side by side.
fn verdict(keybox: &Sweep, db: &Sweep) -> String {
    let fastest = |s: &Sweep| s.results.iter().min_by(|a, b| a.wall_s.mean.total_cmp(&b.wall_s.mean)).cloned();
    let (Some(k), Some(d)) = (fastest(keybox), fastest(db)) else { return String::new() };
    let row = |r: &kbxscope::sweep::SizeResult| {
        format!("{} ({} file events, {:.3} s)", r.buffer(), thousands(r.total_events()), r.wall_s.mean)
    };
    let (faster, ratio) = if d.wall_s.mean <= k.wall_s.mean {
        ("keyboxd", k.wall_s.mean / d.wall_s.mean.max(1e-9))
    } else {
        ("the keybox", d.wall_s.mean / k.wall_s.mean.max(1e-9))
    };
    format!(
        "keybox or keyboxd? the keybox at its fastest, buffer {}\n\
         keyboxd at its fastest, page cache {}\n\
         {faster} is {ratio:.1}x faster for this workload on these keys (the stores' file\n\
         I/O as GnuPG reads them; the round trips between gpg and keyboxd are not modelled).\n",
        row(&k),
        row(&d)
    )
}

/// A failed sweep in words: the keybox, the buffer size and what went wrong.
fn sweep_error(path: &Path, e: SweepError) -> anyhow::Error {
    match e {
        SweepError::Store(kbxscope::store::StoreError::Keyboxd(e)) => anyhow::anyhow!("{e}"),
        SweepError::Store(e) => e.into(),
        SweepError::Scan { size, error } => anyhow::anyhow!("{}: at buffer size {size}: {error}", path.display()),
        SweepError::Pattern(e) => anyhow::anyhow!("--workload find: {e}"),
    }
}

/// `4834239` → `4,834,239`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One column of the table: a two-line heading and a cell per size.
struct Column {
    head: [String; 2],
    cells: Vec<String>,
}

impl Column {
    fn new(head: [&str; 2], results: &[SizeResult], cell: impl Fn(&SizeResult) -> String) -> Self {
        Self { head: head.map(str::to_string), cells: results.iter().map(cell).collect() }
    }

    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.chars().count())
            .chain(self.head.iter().map(|h| h.chars().count()))
            .max()
            .unwrap_or(0)
    }
}

/// The terminal table. By default it fits 80 columns: buffer, file events,
/// mean time ± σ, user and system CPU time; with the built-in keybox the
/// seed's events and the ratio; with `--with-gpgsm` gpgsm's events and time
/// (then without user, system and ratio). `wide` shows every column. One
/// unit of time for the whole table, said in the time column's heading; a
/// legend says what the seed is. With `--program` the rows are the
/// program's and kbxscope's run is the `model` column ([`program_columns`]).
fn table(sweep: &Sweep, wide: bool) -> String {
    let results = &sweep.results;
    let seed = results.iter().any(|r| r.seed.is_some());
    let gnupg = results.iter().find_map(|r| r.gnupg);
    let program = results.iter().find_map(|r| r.program.as_ref()).map(|p| p.tool);
    let ms = results.iter().all(|r| r.program.as_ref().map_or(r.wall_s.max, |p| p.wall_s.max) < 1.0);
    let (unit, scale, digits) = if ms { ("ms", 1000.0, 2) } else { ("s", 1.0, 3) };
    let t = move |v: f64| format!("{:.digits$}", v * scale);
    let time_head = format!("time ({unit})");
    let dash = || "-".to_string();
    let mut cols = match program {
        Some(tool) => program_columns(results, tool, &time_head, &t, wide),
        None => ours_columns(results, gnupg.is_some(), &time_head, &t, wide),
    };
    if seed {
        cols.push(Column::new(["seed", "events"], results, |r| r.seed.map_or_else(dash, |x| thousands(x.events))));
        if (wide || gnupg.is_none()) && program.is_none() {
            cols.push(Column::new(["", "ratio"], results, |r| {
                r.seed.map_or_else(dash, |x| format!("{:.3}", r.total_events() as f64 / x.events as f64))
            }));
        }
        if wide {
            cols.push(Column::new(["seed", "time"], results, |r| r.seed.map_or_else(dash, |x| t(x.time_s))));
        }
    }
    if let Some(g) = gnupg {
        cols.push(Column::new([g.tool, "events"], results, |r| r.gnupg.map_or_else(dash, |x| thousands(x.events))));
        cols.push(Column::new([g.tool, "time"], results, |r| r.gnupg.map_or_else(dash, |x| t(x.time_s))));
    }
    let widths: Vec<usize> = cols.iter().map(Column::width).collect();
    let line = |cell: &dyn Fn(&Column) -> String| {
        let mut l = String::new();
        for (c, w) in cols.iter().zip(&widths) {
            let text = cell(c);
            let pad = w.saturating_sub(text.chars().count());
            let _ = write!(l, "{}{}{text}", if l.is_empty() { "" } else { "  " }, " ".repeat(pad));
        }
        l.trim_end().to_string() + "\n"
    };
    let runs = match sweep.runs {
        1 => "1 timed run".to_string(),
        n => format!("{n} timed runs"),
    };
    let warm = match sweep.warmup {
        0 => String::new(),
        1 => " after 1 warm-up".to_string(),
        n => format!(" after {n} warm-ups"),
    };
    let mut s = String::new();
    let _ = writeln!(s, "{}", sweep.keybox);
    let _ = writeln!(s, "{}, {runs} per size{warm}", sweep.program.clone().unwrap_or_else(|| sweep.workload.command()));
    s += &line(&|c| c.head[0].clone());
    s += &line(&|c| c.head[1].clone());
    for i in 0..results.len() {
        s += &line(&|c| c.cells[i].clone());
    }
    if sweep.keyboxd {
        s += "keyboxd's database: buffer = SQLite's page cache (PRAGMA cache_size; keyboxd's\n";
        s += "is SQLite's default, 2000 KiB); file events: SQLite's calls, locks included.\n";
    }
    if seed {
        s += "seed: what procmon counted for gpgsm -k --with-validation on GnuPG's 42 MiB\n";
        s += "keybox (Windows), which the built-in keybox imitates; ratio: ours / the seed's.\n";
    }
    if let Some(g) = gnupg {
        let how = if g.counted_with == "strace" { "counted by strace" } else { "recorded from inside" };
        let _ = writeln!(s, "{}: this {} on this keybox, its file events {how}.", g.tool, g.tool);
    }
    if let Some(tool) = program {
        let _ = writeln!(s, "model: kbxscope's own {}, 1 run per size;", sweep.workload.command());
        let _ = writeln!(s, "ratio: {tool}'s events / the model's.");
        let mut reasons: Vec<&str> = results.iter().filter_map(|r| r.program.as_ref()?.not_run.as_deref()).collect();
        reasons.dedup();
        for why in reasons {
            let _ = writeln!(s, "not run: {why}.");
        }
    }
    for r in results {
        for change in &r.keybox_changed {
            let change = super::render::keybox_change(change);
            let _ = writeln!(s, "note: at size {}, the keybox {change}; this row measured a changed file", r.buffer());
        }
    }
    s
}

/// kbxscope's own columns: buffer, events (reads, opens, seeks when wide),
/// time, and user and system time unless GnuPG's columns take their place.
fn ours_columns(
    results: &[SizeResult],
    gnupg: bool,
    time_head: &str,
    t: &dyn Fn(f64) -> String,
    wide: bool,
) -> Vec<Column> {
    let mut cols = vec![
        Column::new(["", "buffer"], results, |r| r.buffer().to_string()),
        Column::new(["file", "events"], results, |r| thousands(r.total_events())),
    ];
    if wide {
        cols.push(Column::new(["", "reads"], results, |r| thousands(r.events.read)));
        cols.push(Column::new(["", "opens"], results, |r| thousands(r.events.open)));
        cols.push(Column::new(["", "seeks"], results, |r| thousands(r.events.seek)));
    }
    cols.push(Column::new([time_head, "mean"], results, |r| t(r.wall_s.mean)));
    cols.push(Column::new(["", "± σ"], results, |r| format!("± {}", t(r.wall_s.stddev))));
    if wide {
        cols.push(Column::new(["", "min … max"], results, |r| format!("{} … {}", t(r.wall_s.min), t(r.wall_s.max))));
    }
    if wide || !gnupg {
        cols.push(Column::new(["", "user"], results, |r| t(r.user_s.median)));
        cols.push(Column::new(["", "sys"], results, |r| t(r.sys_s.median)));
    }
    if wide {
        cols.push(Column::new(["µs per", "read"], results, |r| format!("{:.2}", r.mean_read_ns / 1000.0)));
    }
    cols
}

/// `--program`'s columns: the program's events and times (`not run` where
/// it cannot read with the size), then the model's events and the ratio
/// (and, when wide, the model's time).
fn program_columns(
    results: &[SizeResult],
    tool: &str,
    time_head: &str,
    t: &dyn Fn(f64) -> String,
    wide: bool,
) -> Vec<Column> {
    fn ran(r: &SizeResult) -> Option<&ProgramRow> {
        r.program.as_ref().filter(|p| p.not_run.is_none())
    }
    fn cell(f: &dyn Fn(&ProgramRow) -> String) -> impl Fn(&SizeResult) -> String + '_ {
        move |r| ran(r).map_or_else(|| "-".to_string(), f)
    }
    let mut cols = vec![
        Column::new(["", "buffer"], results, |r| r.buffer().to_string()),
        Column::new([tool, "events"], results, |r| ran(r).map_or_else(|| "not run".into(), |p| thousands(p.events))),
        Column::new([time_head, "mean"], results, cell(&|p| t(p.wall_s.mean))),
        Column::new(["", "± σ"], results, cell(&|p| format!("± {}", t(p.wall_s.stddev)))),
    ];
    if wide {
        cols.push(Column::new(
            ["", "min … max"],
            results,
            cell(&|p| format!("{} … {}", t(p.wall_s.min), t(p.wall_s.max))),
        ));
    }
    cols.push(Column::new(["", "user"], results, cell(&|p| t(p.user_s.median))));
    cols.push(Column::new(["", "sys"], results, cell(&|p| t(p.sys_s.median))));
    cols.push(Column::new(["model", "events"], results, |r| thousands(r.total_events())));
    cols.push(Column::new(["", "ratio"], results, |r| {
        r.program.as_ref().and_then(|p| p.ratio(r)).map_or_else(|| "-".to_string(), |x| format!("{x:.3}"))
    }));
    if wide {
        cols.push(Column::new(["model", "time"], results, |r| t(r.wall_s.mean)));
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;
    use kbxscope::events::PerOp;
    use kbxscope::lookup::Strategy;
    use kbxscope::sweep::{GnupgRow, SeedRow, Times};

    fn sweep(seed: bool, gpgsm: bool, slow: bool) -> Sweep {
        let k = if slow { 1.0 } else { 0.001 };
        let row = |label: &str, bytes: u64, reads: u64, time: f64| SizeResult {
            label: label.into(),
            buffer_size: bytes,
            events: PerOp { open: 3074, read: reads, seek: 575, close: 3074, stat: 3074 },
            bytes_read: 0,
            logical_reads: 0,
            wall_s: Times::new(vec![time * k, time * k * 1.01, time * k * 0.98]),
            user_s: Times::new(vec![0.5 * k; 3]),
            sys_s: Times::new(vec![2.0 * k; 3]),
            mean_read_ns: 570.0,
            seed: seed.then_some(SeedRow { events: 4_900_000, time_s: 86.0 }),
            gnupg: gpgsm.then_some(GnupgRow {
                tool: "gpgsm",
                events: 4_838_252,
                time_s: 5.674,
                counted_with: "strace",
            }),
            program: None,
            keybox_changed: Vec::new(),
            other_events: 0,
        };
        Sweep {
            keybox: "/root/.cache/kbxscope/seed-v2-seed1.kbx".into(),
            workload: Workload::Validate(Strategy::Gnupg),
            lookup: Some("gnupg"),
            warmup: 1,
            runs: 3,
            results: vec![
                row("0", 8192, 4_824_396, 3.297),
                row("512", 512 << 10, 77_566, 2.502),
                row("unbuffered", 0, 48_243_960, 13.1),
            ],
            program: None,
            keyboxd: false,
            versus: None,
            probe_events: None,
        }
    }

    /// `--program gpgsm` on GnuPG 2.2.40: it runs at 8 KiB only.
    fn program_sweep() -> Sweep {
        let mut s = sweep(false, false, false);
        s.program =
            Some("gpgsm -k --with-validation --disable-dirmngr (gpgsm (GnuPG) 2.2.40), counted with record".into());
        let why = "gpgsm (GnuPG) 2.2.40 has no --kbx-buffer-size (8 KiB only)".to_string();
        for r in &mut s.results {
            r.program = Some(match r.buffer_size {
                8192 => ProgramRow {
                    tool: "gpgsm",
                    not_run: None,
                    events: 4_838_252,
                    wall_s: Times::new(vec![0.31, 0.33, 0.32]),
                    user_s: Times::new(vec![0.1; 3]),
                    sys_s: Times::new(vec![0.2; 3]),
                },
                _ => ProgramRow::not_run("gpgsm", why.clone()),
            });
        }
        s
    }

    #[test]
    fn the_table_fits_80_columns() {
        for (seed, gpgsm, slow) in [(true, false, true), (true, true, true), (false, false, false), (false, true, true)]
        {
            let text = table(&sweep(seed, gpgsm, slow), false);
            for l in text.lines().skip(1) {
                assert!(l.chars().count() <= 80, "{} columns: {l}\n{text}", l.chars().count());
            }
        }
        // With --program, the second line names the command and its version.
        let text = table(&program_sweep(), false);
        for l in text.lines().skip(2) {
            assert!(l.chars().count() <= 80, "{} columns: {l}\n{text}", l.chars().count());
        }
    }

    #[test]
    fn table_snapshots() {
        insta::assert_snapshot!("seed", table(&sweep(true, false, true), false));
        insta::assert_snapshot!("seed_gpgsm", table(&sweep(true, true, true), false));
        insta::assert_snapshot!("plain_ms", table(&sweep(false, false, false), false));
        insta::assert_snapshot!("wide", table(&sweep(true, true, true), true));
        insta::assert_snapshot!("program", table(&program_sweep(), false));
        insta::assert_snapshot!("program_wide", table(&program_sweep(), true));
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(4_834_239), "4,834,239");
    }
}
