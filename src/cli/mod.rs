//! The command line: parse, resolve, run a command, print. The only code
//! that prints.
//!
//! `args` holds what clap parses, `parse` the value parsers, `resolve`
//! turns both into the [`resolve::Options`] the commands read; each
//! command is a file of its own (`read`: stats, dump, list, validation,
//! find; `sigs`; `make`: gen and convert; `sweep`; `record`) and none
//! imports another. The machinery they share: `store` (the store named,
//! or the built-in keybox), `report` (problems said on stderr), `output`
//! (files written through a temporary file), `preloaded` (a program run
//! under the interposer), `exporter` (the metrics served, written, pushed), `trace`, `progress`, `render`.

pub mod args;
#[cfg(target_os = "linux")]
mod attach;
mod delete;
#[cfg(target_os = "linux")]
mod doctor;
pub mod exporter;
mod gnupg;
mod import;
mod interrupt;
mod keybox;
mod make;
pub mod output;
pub mod parse;
#[cfg(target_os = "linux")]
mod preloaded;
#[cfg(target_os = "linux")]
mod procfs;
mod progress;
mod read;
#[cfg(target_os = "linux")]
mod record;
mod render;
mod report;
pub mod resolve;
mod sigs;
mod store;
pub mod sweep;
pub mod trace;
mod trustdb;
#[cfg(not(target_os = "linux"))]
mod unavailable;
mod validity;
#[cfg(not(target_os = "linux"))]
use unavailable::{doctor, preloaded, record};

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;

use args::SummaryFormat;
use kbxscope::io::IoTally;
use kbxscope::openpgp::Judge;
pub use report::Reported;
use resolve::{Job, Options};

/// Run the resolved command line; the I/O summary is printed even on failure.
///
/// # Errors
/// Whatever stopped the command; main prints it and exits 1.
pub fn run(o: Options) -> Result<ExitCode> {
    let name = o.job.name();
    let sweep = matches!(o.job, Job::Sweep(..));
    let record = matches!(o.job, Job::Record(_));
    // Each file event is timed only when something shows the times.
    let t = &o.telemetry;
    let metrics = t.listen.is_some() || t.out.is_some() || t.push.is_some();
    let shows_time = o.summary.is_some() || metrics || o.trace.is_some();
    kbxscope::io::time_events(shows_time || sweep || record);
    // A replay's private directory is removed on Ctrl-C and SIGTERM too.
    kbxscope::io::update::PrivateCopy::before_first(interrupt::watch);
    let telemetry = exporter::Telemetry::install(o.telemetry.clone())?;
    let trace = match &o.trace {
        Some(t) => Some(trace::install(&t.path, name, t.level, t.max_events)?),
        None => None,
    };
    if let Some(api) = o.file_api {
        // Resolve took only this system's APIs.
        api.set_default()?;
    }
    // After the recorder: the tally registers its metric handles.
    let tally = IoTally::new(o.buffer_size);
    let started = std::time::Instant::now();
    let size = (!sweep).then(|| o.buffer_size.bytes() as u64);
    let result = {
        // A sweep runs several sizes, each in a span of its own.
        let label = size.map_or_else(|| "sweep".to_string(), |s| s.to_string());
        let span = tracing::info_span!(target: "kbx::command", "command", name = %name, buffer_size = %label);
        let _in = span.enter();
        let result = dispatch(&o, &tally);
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
    // record prints its own summary (of the processes it recorded), a
    // sweep's table its sizes' (per operation).
    let own_summary = record || matches!(o.job, Job::Sweep(_));
    if let Some(format) = o.summary.filter(|_| !own_summary) {
        let stats = tally.snapshot();
        let text = match format {
            SummaryFormat::Json => summary_json(&stats, &tally.files())? + "\n",
            SummaryFormat::Text => render::io_summary(&stats, o.buffer_size, &tally.files()),
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

fn dispatch(o: &Options, tally: &IoTally) -> Result<ExitCode> {
    match &o.job {
        Job::Stats { store, json } => read::stats(store.as_deref(), *json, tally),
        Job::Dump { store } => read::dump(store.as_deref(), tally),
        Job::List { store, filter, at, json, trust } => {
            read::list(store.as_deref(), *filter, *json, *at, (trust, o.version), tally)
        }
        Job::Validate { store, lookup, trustlist, at, json } => {
            read::validate(store.as_deref(), *lookup, trustlist.as_deref(), *at, *json, o.version, tally)
        }
        Job::Sigs { store, mode, lookup, at, trust, json } => {
            let judge = Judge { version: o.version, now: *at };
            sigs::list(store.as_deref(), *mode, *lookup, judge, *json, trust, tally)
        }
        Job::Find { store, patterns, texts, all, json } => {
            read::find(store.as_deref(), patterns, texts, (*all, *json), o.now, tally)
        }
        Job::Gen(a) => make::gen(a),
        Job::Convert(a) => make::convert(a, o.now, tally),
        Job::Import(a) => import::run(a, Judge { version: o.version, now: a.at.unwrap_or(o.now) }, tally),
        Job::Delete(a) => delete::run(a, o.version, a.at.unwrap_or(o.now), tally),
        Job::Sweep(job) => sweep::run(job),
        Job::Record(r) => record::run(r, o.summary, o.trace.as_ref()),
        Job::Doctor(d) => doctor::run(d),
        Job::Trustdb(a) => trustdb::run(a, o.now, o.version, tally),
    }
}

/// Mark a failure in the trace: a `failed` span, inside the command's,
/// carrying the error.
fn failed(error: &str) {
    let _marker = tracing::info_span!(target: "kbx::command", "failed", error).entered();
}
