//! The command line: parse, run a workload, print. The only code that prints.

pub mod args;
mod gnupg;
mod interrupt;
mod keybox;
mod make;
pub mod output;
pub mod parse;
mod preloaded;
mod progress;
mod record;
mod render;
mod sigs;
mod store;
pub mod sweep;
pub mod telemetry;
pub mod trace;

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use args::{Cli, Command, FindArgs, KeyType, ListArgs, LookupArg, StatsArgs, SummaryFormat};
use kbxscope::io::IoTally;
use kbxscope::kbx::search::Pattern;
use kbxscope::lookup::Strategy;
use kbxscope::workload::stats::StoreStats;
use kbxscope::workload::{self, ListOutcome, Listed, Places, Ran, ScanError, TypeFilter};

/// A failure already reported on stderr (its message, for the trace):
/// exit 1 without another message.
#[derive(Debug)]
pub struct Reported(pub String);

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Reported {}

/// Run the parsed command line; the I/O summary is printed even on failure.
///
/// # Errors
/// Whatever stopped the command; main prints it and exits 1.
pub fn run(cli: Cli) -> Result<ExitCode> {
    // Each file event is timed only when something shows the times.
    let metrics = cli.metrics_listen.is_some() || cli.metrics_out.is_some() || cli.metrics_push.is_some();
    let shows_time = cli.io_summary.is_some() || metrics || cli.trace_out.is_some();
    kbxscope::io::time_events(shows_time || matches!(cli.command, Command::Sweep(_) | Command::Record(_)));
    let telemetry = telemetry::Telemetry::install(telemetry::TelemetryOptions {
        listen: cli.metrics_listen,
        linger: cli.linger,
        out: cli.metrics_out.clone(),
        push: cli.metrics_push.clone(),
    })?;
    let trace = match &cli.trace_out {
        Some(path) => Some(trace::install(path, command_name(&cli.command), cli.trace_level, cli.trace_max_events)?),
        None => None,
    };
    // After the recorder: the tally registers its metric handles.
    let tally = IoTally::new(cli.kbx_buffer_size);
    let started = std::time::Instant::now();
    let name = command_name(&cli.command);
    let size = (!matches!(cli.command, Command::Sweep(_))).then(|| cli.kbx_buffer_size.bytes() as u64);
    let result = {
        // A sweep runs several sizes, each in a span of its own.
        let label = size.map_or_else(|| "sweep".to_string(), |s| s.to_string());
        let span = tracing::info_span!(target: "kbx::command", "command", name = %name, buffer_size = %label);
        let _in = span.enter();
        let result = dispatch(&cli, &tally);
        match &result {
            Err(e) => failed(&format!("{e:#}")),
            Ok(code) if *code != ExitCode::SUCCESS => failed("the command reported failures (see stderr)"),
            Ok(_) => {}
        }
        result
    };
    kbxscope::telemetry::command_finished(name, size, started.elapsed());
    if let Some(t) = trace {
        t.finish()?;
    }
    telemetry.finish(result.as_ref().is_ok_and(|c| *c == ExitCode::SUCCESS))?;
    for change in tally.changes() {
        eprintln!("kbxscope: warning: the keybox {change}; each handle read one consistent file");
    }
    // record prints its own summary (of the processes it recorded).
    if let Some(format) = cli.io_summary.filter(|_| !matches!(cli.command, Command::Record(_))) {
        let stats = tally.snapshot();
        let text = match format {
            SummaryFormat::Json => summary_json(&stats, &tally.files())? + "\n",
            SummaryFormat::Text => render::io_summary(&stats, cli.kbx_buffer_size, &tally.files()),
        };
        io::stderr().write_all(text.as_bytes())?;
    }
    result
}

/// The JSON summary: the totals, and for a database `files`, SQLite's
/// events per file (`path` beside the same keys as the totals).
fn summary_json(stats: &kbxscope::events::IoStats, files: &[kbxscope::events::FileStats]) -> Result<String> {
    let mut v = serde_json::to_value(stats)?;
    if let Some(s) = kbxscope::crypto::tally::so_far() {
        let each: serde_json::Map<String, serde_json::Value> =
            s.verified.iter().map(|(c, n)| (c.name().to_string(), serde_json::Value::from(*n))).collect();
        v["signatures"] = serde_json::json!({ "verified": each, "cached": s.cached });
    }
    if !files.is_empty() {
        let per_file = files
            .iter()
            .map(|f| {
                let mut o = serde_json::to_value(&f.stats)?;
                o["path"] = serde_json::Value::from(f.path.clone());
                Ok(o)
            })
            .collect::<Result<Vec<_>, serde_json::Error>>()?;
        v["files"] = serde_json::Value::Array(per_file);
    }
    Ok(serde_json::to_string(&v)?)
}

fn command_name(command: &Command) -> &'static str {
    match command {
        Command::Stats(_) => "stats",
        Command::Dump(_) => "dump",
        Command::List(a) if a.with_validation => "validate",
        Command::List(a) if a.with_sigs => "with-sigs",
        Command::List(a) if a.check_sigs => "check-sigs",
        Command::List(_) => "list",
        Command::Find(_) => "find",
        Command::Gen(_) => "gen",
        Command::Convert(_) => "convert",
        Command::Sweep(_) => "sweep",
        Command::Record(_) => "record",
    }
}

fn dispatch(cli: &Cli, tally: &IoTally) -> Result<ExitCode> {
    match &cli.command {
        Command::Stats(a) => stats(a, tally),
        Command::Dump(a) => dump(a.file.as_deref(), tally),
        Command::List(a) => list(a, tally),
        Command::Find(a) => find(a, tally),
        Command::Gen(a) => make::gen(a),
        Command::Convert(a) => make::convert(a, tally),
        Command::Sweep(a) => sweep::run(a),
        Command::Record(a) => record::run(a, cli),
    }
}

/// Mark a failure in the trace: a `failed` span, inside the command's,
/// carrying the error.
fn failed(error: &str) {
    let _marker = tracing::info_span!(target: "kbx::command", "failed", error).entered();
}

/// Print a located error as one line naming the file; the error to return.
fn report(path: &Path, e: &ScanError, places: &Places) -> Reported {
    say(path, &places.describe(e))
}

/// Print `what` as one line naming the file; the error to return.
fn say(path: &Path, what: &dyn std::fmt::Display) -> Reported {
    let message = format!("{}: {what}", path.display());
    eprintln!("kbxscope: {message}");
    Reported(message)
}

/// The error for the problems reported (each already on stderr, one line
/// each); `Ok` if none.
fn reported(path: &Path, mut reported: Vec<Reported>) -> Result<()> {
    match (reported.pop(), reported.len()) {
        (None, _) => Ok(()),
        (Some(only), 0) => Err(only.into()),
        (Some(_), more) => Err(Reported(format!("{}: {} problems (see stderr)", path.display(), more + 1)).into()),
    }
}

fn stats(a: &StatsArgs, tally: &IoTally) -> Result<ExitCode> {
    let store = store::open(a.file.file.as_deref(), tally)?;
    let path = store.path().to_path_buf();
    let counted = workload::stats::run(&store);
    drop(store);
    let mut out = io::stdout().lock();
    let fatal = match counted? {
        StoreStats::Keybox(outcome) => {
            if a.json {
                serde_json::to_writer(&mut out, &outcome.stats)?;
                writeln!(out)?;
            } else {
                out.write_all(outcome.stats.render_kbxutil().as_bytes())?;
            }
            outcome.fatal
        }
        StoreStats::Keyboxd(s) => {
            if a.json {
                serde_json::to_writer(&mut out, &s)?;
                writeln!(out)?;
            } else {
                out.write_all(s.render().as_bytes())?;
            }
            None
        }
    };
    out.flush()?;
    match fatal {
        Some(e) => Err(report(&path, &e, &Places::Keybox).into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

fn dump(file: Option<&Path>, tally: &IoTally) -> Result<ExitCode> {
    let store = store::open(file, tally)?;
    let path = store.path().to_path_buf();
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut write_err: Option<io::Error> = None;
    let result = workload::dump::run(&store, |number, body| {
        if write_err.is_none() {
            write_err = writeln!(out, "BEGIN-RECORD: {number}")
                .and_then(|_| out.write_all(body))
                .and_then(|_| out.write_all(b"END-RECORD\n"))
                .err();
        }
    });
    drop(store);
    if let Some(e) = write_err {
        return Err(e.into());
    }
    out.flush()?;
    let outcome = result?;
    let rows = outcome.rows.iter().map(|p| say(&path, p));
    let fatal = outcome.fatal.iter().map(|e| report(&path, e, &Places::Keybox));
    reported(&path, rows.chain(fatal).collect())?;
    Ok(ExitCode::SUCCESS)
}

/// Prints listings as they come, remembering the first write error.
struct ListingPrinter<W: Write> {
    out: W,
    json: bool,
    header: Option<String>,
    error: Option<io::Error>,
}

impl<W: Write> ListingPrinter<W> {
    fn new(out: W, json: bool, path: &Path) -> Self {
        let title = path.display().to_string();
        let header = (!json).then(|| format!("{title}\n{}\n", "-".repeat(title.chars().count())));
        Self { out, json, header, error: None }
    }

    fn print(&mut self, l: &Listed) {
        if self.error.is_some() {
            return;
        }
        let res = (|| {
            if let Some(h) = self.header.take() {
                self.out.write_all(h.as_bytes())?;
            }
            if self.json {
                serde_json::to_writer(&mut self.out, l)?;
                writeln!(self.out)
            } else {
                writeln!(self.out, "{}", render::listing(l))
            }
        })();
        self.error = res.err();
    }

    fn finish(mut self) -> io::Result<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        }
    }
}

/// Report the problems of a pass (and of the database rows it could not
/// take); `Ok` if there were none.
fn conclude(path: &Path, ran: &Ran<ListOutcome>) -> Result<()> {
    let rows = ran.places.row_problems().iter().map(|p| say(path, p));
    let pass = ran.outcome.problems.iter().chain(&ran.outcome.fatal).map(|e| report(path, e, &ran.places));
    reported(path, rows.chain(pass).collect())
}

fn list(a: &ListArgs, tally: &IoTally) -> Result<ExitCode> {
    if a.with_validation {
        return validated_list(a, tally);
    }
    if a.with_sigs || a.check_sigs {
        return sigs::list(a, tally);
    }
    let filter = match a.key_type {
        KeyType::Openpgp => TypeFilter::OpenPgp,
        KeyType::X509 => TypeFilter::X509,
        KeyType::All => TypeFilter::All,
    };
    let store = store::open(a.file.file.as_deref(), tally)?;
    let path = store.path().to_path_buf();
    let mut printer = ListingPrinter::new(io::BufWriter::new(io::stdout().lock()), a.json, &path);
    let ran = workload::list::run(&store, filter, |l| printer.print(&l))?;
    drop(store);
    printer.finish()?;
    conclude(&path, &ran)?;
    Ok(ExitCode::SUCCESS)
}

fn validated_list(a: &ListArgs, tally: &IoTally) -> Result<ExitCode> {
    let store = store::open(a.file.file.as_deref(), tally)?;
    let path = store.path().to_path_buf();
    let trust = keybox::trustlist_for(&path, a.trustlist.as_deref())?;
    let at = a.at.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
    });
    let lookup = Strategy::from(a.lookup.unwrap_or(LookupArg::Gnupg));
    let mut printer = ListingPrinter::new(io::BufWriter::new(io::stdout().lock()), a.json, &path);
    let ran = workload::validate::run(&store, lookup, &trust.list, at, |l| printer.print(&l))?;
    drop(store);
    printer.finish()?;
    trust.warn_if_none();
    conclude(&path, &ran)?;
    Ok(ExitCode::SUCCESS)
}

fn find(a: &FindArgs, tally: &IoTally) -> Result<ExitCode> {
    let (file, texts) = a.split().map_err(|e| anyhow::anyhow!(e))?;
    let patterns = texts.iter().map(|p| Pattern::parse(p)).collect::<Result<Vec<_>, _>>()?;
    let store = store::open(file.as_deref(), tally)?;
    let path = &store.path().to_path_buf();
    let mut printer = ListingPrinter::new(io::BufWriter::new(io::stdout().lock()), a.json, path);
    let ran = workload::find::run(&store, &patterns, a.all, |l| printer.print(&l))?;
    drop(store);
    printer.finish()?;
    conclude(path, &ran)?;
    if ran.outcome.listed == 0 {
        let quoted: Vec<String> = texts.iter().map(|p| format!("'{p}'")).collect();
        anyhow::bail!("{}: no key matches {}", path.display(), quoted.join(" or "));
    }
    Ok(ExitCode::SUCCESS)
}
