//! The command line resolved: what the user typed ([`Cli`], clap's
//! types) turned once into what the commands read ([`Options`]): the
//! buffer size, the outputs, the time "now", each command's values with
//! their defaults filled in. Every check clap cannot express is made here,
//! once, as a usage error in clap's style (exit 2). The commands read
//! [`Options`]; none of them looks at [`Cli`] or at another command.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::CommandFactory;

use super::args::{
    Cli, Command, ConvertArgs, DeleteArgs, FindArgs, GenArgs, ImportArgs, KeyType, ListArgs, LookupArg, RecordArgs,
    SummaryFormat, SweepArgs, TrustArgs, TrustdbArgs,
};
use super::exporter::TelemetryOptions;
use super::gnupg::Program;
use super::parse::keybox_path;
use super::trace::TraceLevel;
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::io::{BufferSize, FileApi};
use kbxscope::kbx::search::Pattern;
use kbxscope::lookup::Strategy;
use kbxscope::openpgp::Mode;
use kbxscope::sweep::export::Format;
use kbxscope::sweep::Workload;
use kbxscope::workload::TypeFilter;

/// Everything a run needs, resolved.
#[derive(Debug)]
pub struct Options {
    /// `--kbx-buffer-size`, else the GnuPG version's own.
    pub buffer_size: BufferSize,
    /// `--file-api` (the first, for sweep), else the system's default.
    pub file_api: Option<FileApi>,
    /// `--gnupg-version`.
    pub version: GnupgVersion,
    /// `--io-summary`.
    pub summary: Option<SummaryFormat>,
    /// The metrics' outputs.
    pub telemetry: TelemetryOptions,
    /// `--trace-out` and how deep it goes.
    pub trace: Option<TraceOptions>,
    /// "Now", in Unix seconds: taken once, for every default time.
    pub now: i64,
    /// What to do.
    pub job: Job,
}

/// `--trace-out`, `--trace-level`, `--trace-max-events`.
#[derive(Debug, Clone)]
pub struct TraceOptions {
    /// The trace file.
    pub path: PathBuf,
    /// How deep.
    pub level: TraceLevel,
    /// At most this many blob and event spans.
    pub max_events: u64,
}

impl TraceOptions {
    /// How many per-call events a recorded program may leave for the
    /// trace (`--trace-level event` only), capped at `cap`.
    // Only `record` asks (Linux only).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub fn recorded_events(&self, cap: u64) -> Option<u64> {
        (self.level >= TraceLevel::Event).then(|| self.max_events.min(cap))
    }
}

/// The store a command reads: the one named, or the built-in keybox.
pub type StoreArg = Option<PathBuf>;

/// The commands, with their values resolved.
#[derive(Debug)]
pub enum Job {
    /// `stats`.
    Stats {
        /// The store.
        store: StoreArg,
        /// One JSON object.
        json: bool,
    },
    /// `dump`.
    Dump {
        /// The store.
        store: StoreArg,
    },
    /// `list` (plain).
    List {
        /// The store.
        store: StoreArg,
        /// Which blobs.
        filter: TypeFilter,
        /// The time keys' expiry is judged at, Unix seconds.
        at: i64,
        /// JSON lines.
        json: bool,
        /// Where the validity column comes from.
        trust: TrustArgs,
    },
    /// `list --with-validation`.
    Validate {
        /// The store.
        store: StoreArg,
        /// How issuers are looked up.
        lookup: Strategy,
        /// `--trustlist` (else found next to the store or in the home).
        trustlist: Option<PathBuf>,
        /// The validity time, Unix seconds.
        at: i64,
        /// JSON lines.
        json: bool,
    },
    /// `list --with-sigs` or `--check-sigs`.
    Sigs {
        /// The store.
        store: StoreArg,
        /// Listed or checked.
        mode: Mode,
        /// How signers are looked up.
        lookup: Strategy,
        /// The time signatures are judged at, Unix seconds.
        at: i64,
        /// Where the validity column comes from.
        trust: TrustArgs,
        /// JSON lines.
        json: bool,
    },
    /// `find`.
    Find {
        /// The store.
        store: StoreArg,
        /// The patterns, parsed.
        patterns: Vec<Pattern>,
        /// The patterns as typed (for the "no key matches" message).
        texts: Vec<String>,
        /// Every match, not only the first.
        all: bool,
        /// JSON lines.
        json: bool,
    },
    /// `gen`.
    Gen(GenArgs),
    /// `convert`.
    Convert(ConvertArgs),
    /// `import`.
    Import(ImportArgs),
    /// `delete`.
    Delete(DeleteArgs),
    /// `sweep`.
    Sweep(Box<SweepJob>),
    /// `record`.
    Record(RecordJob),
    /// `doctor`.
    Doctor(DoctorJob),
    /// `trustdb`.
    Trustdb(TrustdbArgs),
}

/// `sweep`, resolved.
#[derive(Debug)]
pub struct SweepJob {
    /// What was typed.
    pub args: SweepArgs,
    /// What each run does, with its lookup.
    pub workload: Workload,
    /// The validity time of the validate workload, Unix seconds.
    pub at: i64,
    /// The GnuPG program run beside kbxscope's runs, if any.
    pub gnupg: Option<GnupgChoice>,
    /// `--gnupg-version` (a GnuPG program run beside has its own).
    pub version: GnupgVersion,
    /// `--file-api` with several values: each size is run with each, side
    /// by side (empty: one API, the process's).
    pub apis: Vec<FileApi>,
    /// `--io-summary`: the table's events per operation.
    pub per_op: bool,
}

/// The GnuPG program a sweep runs beside its own runs (`--with-gpgsm`,
/// `--with-gpg`, `--program`).
#[derive(Debug)]
pub struct GnupgChoice {
    /// What runs.
    pub program: Program,
    /// The executable as given (or the program's name).
    pub path: PathBuf,
    /// The option that asked for it.
    pub option: &'static str,
}

/// `doctor`, resolved.
#[derive(Debug)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct DoctorJob {
    /// The home (else GnuPG's own).
    pub home: Option<PathBuf>,
    /// One JSON object.
    pub json: bool,
    /// No replays.
    pub quick: bool,
    /// `--gnupg-version`, when given.
    pub version: Option<GnupgVersion>,
    /// The time judged at, Unix seconds.
    pub at: i64,
}

/// `record`, resolved (read by `record`, which is Linux's).
#[derive(Debug)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct RecordJob {
    /// PROGRAM and its arguments.
    pub program: Vec<OsString>,
    /// The watched files, `:`-separated, as the interposer takes them.
    pub watch: String,
    /// `--wait-daemons`.
    pub wait_daemons: Option<Duration>,
    /// `--stacks` and `--stack-every`.
    pub stacks: Option<(PathBuf, u64)>,
    /// `--pid`: running processes watched from the kernel.
    pub pids: Vec<u32>,
    /// `--name`: programs whose processes are watched from the kernel.
    pub names: Vec<String>,
    /// `--for`: how long to watch without PROGRAM (`None`: until a signal).
    pub duration: Option<Duration>,
}

impl Job {
    /// The command's name in traces and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Job::Stats { .. } => "stats",
            Job::Dump { .. } => "dump",
            Job::List { .. } => "list",
            Job::Validate { .. } => "validate",
            Job::Sigs { mode: Mode::WithSigs, .. } => "with-sigs",
            Job::Sigs { mode: Mode::CheckSigs, .. } => "check-sigs",
            Job::Find { .. } => "find",
            Job::Gen(_) => "gen",
            Job::Convert(_) => "convert",
            Job::Import(_) => "import",
            Job::Delete(_) => "delete",
            Job::Sweep(..) => "sweep",
            Job::Record(_) => "record",
            Job::Doctor(_) => "doctor",
            Job::Trustdb(_) => "trustdb",
        }
    }
}

/// A usage error in clap's style.
fn usage(kind: clap::error::ErrorKind, message: impl std::fmt::Display) -> clap::Error {
    clap::Error::raw(kind, message).format(&mut Cli::command())
}

/// Resolve the parsed command line. `now` is the time of the run (Unix
/// seconds), taken once by the caller.
///
/// # Errors
/// A usage error clap cannot find by itself: `--lookup` without a
/// listing that looks anything up, two of `sweep`'s outputs on stdout,
/// `--io-summary=json` with `sweep`, `find`'s keybox or patterns.
pub fn resolve(cli: Cli, now: i64) -> Result<Options, clap::Error> {
    let telemetry = TelemetryOptions {
        listen: cli.metrics_listen,
        linger: cli.linger,
        out: cli.metrics_out,
        push: cli.metrics_push,
    };
    let trace =
        cli.trace_out.map(|path| TraceOptions { path, level: cli.trace_level, max_events: cli.trace_max_events });
    let job = match cli.command {
        Command::Stats(a) => Job::Stats { store: a.file.file, json: a.json },
        Command::Dump(a) => Job::Dump { store: a.file },
        Command::List(a) => list(a, now)?,
        Command::Find(a) => find(a)?,
        Command::Gen(a) => Job::Gen(a),
        Command::Convert(a) => Job::Convert(a),
        Command::Import(a) => Job::Import(a),
        Command::Delete(a) => Job::Delete(a),
        Command::Sweep(a) => {
            let apis = if cli.file_api.len() > 1 { cli.file_api.clone() } else { Vec::new() };
            Job::Sweep(Box::new(sweep(a, cli.io_summary, now, cli.gnupg_version, apis)?))
        }
        Command::Record(a) => Job::Record(record(a)),
        Command::Doctor(a) => Job::Doctor(DoctorJob {
            home: a.home,
            json: a.json,
            quick: a.quick,
            version: cli.gnupg_version_given.then_some(cli.gnupg_version),
            at: a.at.unwrap_or(now),
        }),
        Command::Trustdb(a) => Job::Trustdb(a),
    };
    let version = cli.gnupg_version;
    let buffer_size = cli.kbx_buffer_size.unwrap_or(BufferSize::gnupg_default(version));
    let file_api = file_apis(&cli.file_api, &job)?;
    Ok(Options { buffer_size, file_api, version, summary: cli.io_summary, telemetry, trace, now, job })
}

/// `--file-api`: each one this system has; several only for `sweep`
/// (whose job keeps them all); the first is the process's.
fn file_apis(apis: &[FileApi], job: &Job) -> Result<Option<FileApi>, clap::Error> {
    if let Some(missing) = apis.iter().find(|a| !a.available()) {
        let e = kbxscope::io::UnavailableApi(*missing);
        return Err(usage(clap::error::ErrorKind::ValueValidation, format!("invalid value for '--file-api': {e}")));
    }
    if apis.len() > 1 && !matches!(job, Job::Sweep(_)) {
        let msg = "only sweep takes several '--file-api' values (to put them side by side)";
        return Err(usage(clap::error::ErrorKind::ArgumentConflict, msg));
    }
    Ok(apis.first().copied())
}

impl From<LookupArg> for Strategy {
    fn from(a: LookupArg) -> Self {
        match a {
            LookupArg::Gnupg => Self::Gnupg,
            LookupArg::Scan => Self::Scan,
            LookupArg::Index => Self::Index,
        }
    }
}

/// The strategy `--lookup` names (gpg's and gpgsm's own by default).
fn strategy(lookup: Option<LookupArg>) -> Strategy {
    Strategy::from(lookup.unwrap_or(LookupArg::Gnupg))
}

fn list(a: ListArgs, now: i64) -> Result<Job, clap::Error> {
    let store = a.file.file;
    let lookup = strategy(a.lookup);
    if a.with_validation {
        return Ok(Job::Validate { store, lookup, trustlist: a.trustlist, at: a.at.unwrap_or(now), json: a.json });
    }
    if a.with_sigs || a.check_sigs {
        let mode = if a.check_sigs { Mode::CheckSigs } else { Mode::WithSigs };
        return Ok(Job::Sigs { store, mode, lookup, at: a.at.unwrap_or(now), trust: a.trust, json: a.json });
    }
    if a.lookup.is_some() {
        let msg = "the argument '--lookup' requires '--with-validation', '--with-sigs' or '--check-sigs'";
        return Err(usage(clap::error::ErrorKind::MissingRequiredArgument, msg));
    }
    let filter = match a.key_type {
        KeyType::Openpgp => TypeFilter::OpenPgp,
        KeyType::X509 => TypeFilter::X509,
        KeyType::All => TypeFilter::All,
    };
    Ok(Job::List { store, filter, at: a.at.unwrap_or(now), json: a.json, trust: a.trust })
}

/// `find [FILE] PATTERN…`: with two or more arguments the first is the
/// keybox; every pattern must parse.
fn find(a: FindArgs) -> Result<Job, clap::Error> {
    let invalid = |what: &str, value: &str, why: String| {
        usage(clap::error::ErrorKind::ValueValidation, format!("invalid value '{value}' for '{what}': {why}"))
    };
    let mut texts = a.args;
    let store = match texts.len() {
        0 | 1 => None,
        _ => {
            let file = texts.remove(0);
            Some(keybox_path(&file).map_err(|e| invalid("[FILE]", &file, e.0))?)
        }
    };
    let patterns = texts
        .iter()
        .map(|p| Pattern::parse(p).map_err(|e| invalid("<PATTERN>", p, e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Job::Find { store, patterns, texts, all: a.all, json: a.json })
}

/// `sweep`, resolved at time `now`, after its checks: at most one of its
/// outputs on stdout; `--io-summary` as the table's columns per operation
/// (JSON is `--export-json`'s); the GnuPG program beside it goes with the
/// workload.
fn sweep(
    a: SweepArgs,
    io_summary: Option<SummaryFormat>,
    now: i64,
    version: GnupgVersion,
    apis: Vec<FileApi>,
) -> Result<SweepJob, clap::Error> {
    let to_stdout = a.exports.0.iter().map(|(_, p)| p).chain(a.plot.as_ref()).filter(|p| p.as_os_str() == "-").count();
    if to_stdout > 1 {
        let options: Vec<String> = Format::ALL.iter().map(|f| format!("--{}", f.option())).collect();
        let msg = format!("only one of {} and --plot can write to stdout ('-')", options.join(", "));
        return Err(usage(clap::error::ErrorKind::ArgumentConflict, msg));
    }
    if io_summary == Some(SummaryFormat::Json) {
        let msg = "'--io-summary=json' does not apply to sweep: --export-json gives each size's file events as JSON";
        return Err(usage(clap::error::ErrorKind::ArgumentConflict, msg));
    }
    let workload = a.workload.clone().with(Strategy::from(a.lookup));
    let choice = |program, path: &PathBuf, option| Some(GnupgChoice { program, path: path.clone(), option });
    let gnupg = match (&a.with_gpgsm, &a.with_gpg, &a.program, &workload) {
        (Some(p), _, _, Workload::Import(_)) => choice(Program::GpgsmImport, p, "--with-gpgsm"),
        (Some(p), ..) => choice(Program::GpgsmValidate, p, "--with-gpgsm"),
        (None, Some(p), _, Workload::Sigs(mode, _)) => choice(Program::GpgSigs(*mode), p, "--with-gpg"),
        (None, Some(p), _, Workload::Import(_)) => choice(Program::GpgImport, p, "--with-gpg"),
        (None, Some(_), ..) => {
            let msg = "the argument '--with-gpg' requires '--workload with-sigs', '--workload check-sigs' or \
                       '--workload import:FILE'";
            return Err(usage(clap::error::ErrorKind::ArgumentConflict, msg));
        }
        (None, None, Some(p), w) => {
            let program =
                Program::for_sweep(p, w).map_err(|why| usage(clap::error::ErrorKind::ValueValidation, why))?;
            choice(program, p, "--program")
        }
        (None, None, None, _) => None,
    };
    let per_op = io_summary.is_some();
    Ok(SweepJob { at: a.at.unwrap_or(now), workload, gnupg, version, apis, per_op, args: a })
}

fn record(a: RecordArgs) -> RecordJob {
    let watch = if a.watch.is_empty() { kbxscope::record::DEFAULT_WATCH.join(":") } else { a.watch.join(":") };
    RecordJob {
        program: a.program,
        watch,
        wait_daemons: a.wait_daemons,
        stacks: a.stacks.map(|path| (path, a.stack_every)),
        pids: a.pid,
        names: a.name,
        duration: a.for_,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn job(words: &[&str]) -> Job {
        resolve(Cli::try_parse_from(words).unwrap(), 1_796_083_200).unwrap().job
    }

    #[test]
    fn find_arguments() {
        let Job::Find { store, texts, .. } = job(&["k", "find", "alice"]) else { panic!() };
        assert_eq!((store, texts), (None, vec!["alice".to_string()]));
        let Job::Find { store, texts, .. } = job(&["k", "find", "x.kbx", "a", "b"]) else { panic!() };
        assert_eq!((store, texts), (Some(PathBuf::from("x.kbx")), vec!["a".into(), "b".into()]));
    }

    #[test]
    fn times_default_to_now() {
        let Job::Validate { at, .. } = job(&["k", "list", "--with-validation", "x.kbx"]) else { panic!() };
        assert_eq!(at, 1_796_083_200);
        let Job::Validate { at, .. } = job(&["k", "list", "--with-validation", "--at", "2026-01-01", "x.kbx"]) else {
            panic!()
        };
        assert_eq!(at, 1_767_225_600);
    }

    #[test]
    fn usage_errors() {
        let err = |words: &[&str]| resolve(Cli::try_parse_from(words).unwrap(), 0).unwrap_err().kind();
        assert_eq!(err(&["k", "list", "--lookup", "index", "x.kbx"]), clap::error::ErrorKind::MissingRequiredArgument);
        assert_eq!(err(&["k", "find", "x.kbx", "#"]), clap::error::ErrorKind::ValueValidation);
        assert_eq!(err(&["k", "find", "-", "alice"]), clap::error::ErrorKind::ValueValidation);
        assert_eq!(err(&["k", "--io-summary=json", "sweep"]), clap::error::ErrorKind::ArgumentConflict);
    }
}
