//! The command line, declared with clap's derive API. Nothing else.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::parse::{
    count, count_usize, keybox_path, parse_duration, parse_file_api, parse_file_size, parse_listen, parse_push_url,
    parse_size, parse_time, parse_workload, workload_help, PushUrl,
};
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::io::{BufferSize, FileApi};
use kbxscope::sweep::export::Format;

/// Where the guide is, under the top-level `--help`.
const GUIDE: &str = "The guide, one page per topic: docs/README.md in kbxscope's source.";

/// Read GnuPG keybox files (pubring.kbx, where gpg and gpgsm keep public
/// keys and certificates) and show what reading them costs: every system call
/// made on the keybox (a "file event") is counted and timed.
#[derive(Debug, Parser)]
#[command(name = "kbxscope", version, max_term_width = 100, after_help = GUIDE)]
pub struct Cli {
    /// Read buffer for keybox files. A bare number is KiB as in GnuPG
    /// (0 = the 8 KiB stream default, others round up to a multiple of
    /// 8 KiB); with a unit it is exact (4096B, 12k, 12KiB, 1M, 1MiB);
    /// 'unbuffered' sends every read to the operating system. At most 1 GiB.
    /// Default: the GnuPG version's (64 KiB for 2.4, 128 KiB on Windows;
    /// 8 KiB for 2.2).
    #[arg(long, global = true, help_heading = "Global options", value_name = "SIZE")]
    pub kbx_buffer_size: Option<BufferSize>,

    /// The GnuPG whose signature statuses and reads the replays of gpg
    /// follow: 2.4 (the default: Debian 13, Fedora, Arch) or 2.2 (Debian 12,
    /// Ubuntu LTS). 2.4 rejects every third-party SHA-1 certification of a
    /// user id, 2.2 only those made after 2019-01-19; 2.2 does not check a
    /// certification with a key that has expired or was revoked until it
    /// has listed that key (and searches the whole keybox for it each
    /// time); 2.2 reads through 8 KiB. Beside a real gpg (sweep --with-gpg,
    /// --program) the model is that program's version.
    #[arg(long, global = true, help_heading = "Global options", value_name = "VERSION", default_value = "2.4")]
    pub gnupg_version: GnupgVersion,

    /// The system calls that open, read, seek and close a keybox: posix on
    /// Unix; on Windows win32 (the default: CreateFileW, ReadFile, as
    /// GnuPG's keybox code) or crt (the C runtime's _wopen, _read,
    /// _lseeki64, _close). sweep takes several, comma-separated, and puts
    /// them side by side at each size.
    #[arg(long, global = true, help_heading = "Global options", value_name = "API", value_delimiter = ',',
          value_parser = parse_file_api)]
    pub file_api: Vec<FileApi>,

    /// After the command, print the file events per operation, bytes read,
    /// logical reads and time per operation to stderr.
    #[arg(long, global = true, help_heading = "Global options", value_name = "FORMAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "text")]
    pub io_summary: Option<SummaryFormat>,

    /// Serve Prometheus metrics on /metrics while the command runs. Without
    /// ADDR: 127.0.0.1:9464 (loopback only; other interfaces need an explicit
    /// address).
    #[arg(long, global = true, help_heading = "Global options", value_name = "ADDR", num_args = 0..=1, require_equals = true,
          default_missing_value = "127.0.0.1:9464", value_parser = parse_listen)]
    pub metrics_listen: Option<std::net::SocketAddr>,

    /// With --metrics-listen: keep serving this long after the work (30s, 2m, …)
    /// so a scraper sees the final values.
    #[arg(long, global = true, help_heading = "Global options", value_name = "DURATION", value_parser = parse_duration,
          requires = "metrics_listen")]
    pub linger: Option<std::time::Duration>,

    /// At exit, write the Prometheus text exposition to FILE (for
    /// node_exporter's textfile collector), through a temporary file.
    #[arg(long, global = true, help_heading = "Global options", value_name = "FILE")]
    pub metrics_out: Option<PathBuf>,

    /// At exit, push the metrics to a Prometheus Pushgateway at URL
    /// (http://HOST:PORT), as job "kbxscope".
    #[arg(long, global = true, value_name = "URL", value_parser = parse_push_url)]
    pub metrics_push: Option<PushUrl>,

    /// Write a Chrome trace (for Perfetto or chrome://tracing) of the command.
    #[arg(long, global = true, help_heading = "Global options", value_name = "FILE")]
    pub trace_out: Option<PathBuf>,

    /// How deep the trace goes: command, lookup (passes and issuer lookups),
    /// blob (each blob read), event (each system call).
    #[arg(long, global = true, help_heading = "Global options", value_enum, default_value_t = super::trace::TraceLevel::Blob, requires = "trace_out")]
    pub trace_level: super::trace::TraceLevel,

    /// At most this many blob and event spans in the trace; the trace notes
    /// where it was cut.
    #[arg(long, global = true, help_heading = "Global options", value_name = "N", default_value_t = super::trace::DEFAULT_MAX_EVENTS, value_parser = count, requires = "trace_out")]
    pub trace_max_events: u64,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,

    /// Whether --gnupg-version was given (not only its default): set
    /// after parsing.
    #[arg(skip)]
    pub gnupg_version_given: bool,
}

/// The command line with `--metrics-listen ADDR` and `--io-summary FORMAT`
/// (a space instead of `=`) joined into `--metrics-listen=ADDR`: their value
/// is optional, so clap alone would take ADDR for a subcommand. The next
/// word is joined only when it is a valid value for the option (an
/// address, `text`/`json`), so `--metrics-listen list …` keeps its meaning.
pub fn join_optional_values(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(args);
            break;
        }
        let joins = |next: &str| match arg.to_str() {
            Some("--metrics-listen") => parse_listen(next).is_ok(),
            Some("--io-summary") => SummaryFormat::from_str(next, false).is_ok(),
            _ => false,
        };
        match args.peek().and_then(|n| n.to_str()).filter(|n| joins(n)) {
            Some(next) => {
                let mut joined = arg.clone();
                joined.push("=");
                joined.push(next);
                out.push(joined);
                args.next();
            }
            None => out.push(arg),
        }
    }
    out
}

/// How a GnuPG program's file events are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Counter {
    /// From inside, with kbxscope's interposer (as `record` does).
    Record,
    /// From outside, with strace (slower: it stops the program at every call).
    Strace,
}

impl Counter {
    pub fn name(self) -> &'static str {
        match self {
            Counter::Record => "record",
            Counter::Strace => "strace",
        }
    }
}

/// Format of `--io-summary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    /// A small table.
    Text,
    /// One JSON object on one line.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Count a keybox's records (blobs) by type, exactly as `kbxutil --stats` does.
    Stats(StatsArgs),
    /// Print every record's fields, as `kbxutil` dumps them.
    Dump(FileArg),
    /// List the keys and certificates, like `gpg -k` and `gpgsm -k`; with
    /// --with-validation, check each certificate's chain as gpgsm does.
    #[command(after_help = "More: docs/commands.md, docs/validation.md and docs/signatures.md in kbxscope's source.")]
    List(ListArgs),
    /// Find keys by fingerprint, key id, mail address or name, searching the
    /// way GnuPG does: from the start, stopping at the first match.
    Find(FindArgs),
    /// Write a realistic test keybox (real keys and certificates) and its trustlist.
    Gen(GenArgs),
    /// Write a keybox's keys and certificates as keyboxd's database (the
    /// format of GnuPG 2.4's public-keys.d/pubring.db) to a new file; the
    /// keybox is only read.
    Convert(ConvertArgs),
    /// Run one job at several read-buffer sizes and show, per size, how many
    /// system calls it made on the keybox and how long it took.
    ///
    /// Without FILE it runs `list --with-validation` on the built-in keybox at
    /// the sizes GnuPG's developers measured (the "seed": their procmon counts
    /// when they tuned --kbx-buffer-size), and shows their numbers beside ours.
    #[command(after_help = "More: docs/sweep.md in kbxscope's source.")]
    Sweep(SweepArgs),
    /// Replay `gpg --import FILE…` (or `gpgsm --import` for certificates),
    /// as --gnupg-version's GnuPG does it, on a private copy of a keybox or,
    /// through keyboxd, of its database: the keys are checked, merged and
    /// written with the reads, writes, locks, syncs and renames GnuPG makes,
    /// counted per file. The copy starts empty, or as --onto's store, and is
    /// removed at the end; no store of yours is written.
    #[command(after_help = "More: docs/import.md in kbxscope's source.")]
    Import(ImportArgs),
    /// Replay `gpg --batch --yes --delete-keys FINGERPRINT…` (or `gpgsm
    /// --batch --delete-keys` with --gpgsm) on a private copy of --onto's
    /// store: each key searched for, and its blob marked deleted in place
    /// under the keybox's lock, or its rows deleted in one transaction by
    /// keyboxd, counted per file. The store named is only read.
    #[command(after_help = "More: docs/import.md in kbxscope's source.")]
    Delete(DeleteArgs),
    /// Run PROGRAM with kbxscope's interposer preloaded and measure every
    /// call it and its descendants make on the watched files (the keybox and
    /// keyboxd's database): per process, per file, per operation. PROGRAM's
    /// input, output and exit status pass through; the global options
    /// (--io-summary, --metrics-*, --trace-out) report what was recorded.
    ///
    /// Daemons PROGRAM starts (gpg-agent, keyboxd, dirmngr) are recorded
    /// until PROGRAM exits, then reported as they are (still running);
    /// --wait-daemons waits for them. A daemon already running before
    /// record started, and statically linked programs, cannot be recorded:
    /// record says so.
    #[command(after_help = "More: docs/record.md in kbxscope's source.")]
    Record(RecordArgs),
    /// Examine a GnuPG home and say why gpg is slow or stuck: its locks
    /// (who holds each, whether it is stale), its store's health (flooded
    /// keys, signatures by unknown signers, deleted space, the maintenance
    /// pass at every start), the trust database's next check, permissions
    /// and stores left behind; each finding with its evidence, the command
    /// that fixes it and the time that saves, measured by replaying the
    /// home's usual commands on private copies before and after the change.
    /// Nothing of the home is changed. Exit status: 0 healthy, 1 findings.
    #[command(after_help = "More: docs/doctor.md in kbxscope's source.")]
    Doctor(DoctorArgs),
    /// Read a GnuPG home's trust database (trustdb.gpg): its header (trust
    /// model, marginals, completes, depth, when it was made and when gpg
    /// checks it next by itself), its records, and the owner trusts as
    /// `gpg --export-ownertrust` prints them (the output can be imported
    /// with `gpg --import-ownertrust`). Damage is named with its record
    /// number; exit status 1 then. Only read.
    #[command(after_help = "More: docs/trustdb.md in kbxscope's source.")]
    Trustdb(TrustdbArgs),
}

/// Arguments of `trustdb`.
#[derive(Debug, Args)]
pub struct TrustdbArgs {
    /// A GnuPG home or a trust database file (default: $GNUPGHOME, else
    /// ~/.gnupg).
    #[arg(value_name = "HOME|FILE")]
    pub path: Option<PathBuf>,
    /// One JSON object: the header, record counts, every key with its
    /// validities, the owner trusts and the damage.
    #[arg(long)]
    pub json: bool,
    /// Compute what gpg's trust-database check would store now (the web of
    /// trust walked over the home's keybox, every certification checked)
    /// and compare it with what the database holds; nothing is written.
    #[arg(long)]
    pub check: bool,
}

/// Arguments of `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The GnuPG home (default: $GNUPGHOME, else ~/.gnupg). Its GnuPG
    /// version is the installed gpg's, unless --gnupg-version says.
    #[arg(value_name = "HOME")]
    pub home: Option<PathBuf>,
    /// One JSON object (schema: docs/doctor.md).
    #[arg(long)]
    pub json: bool,
    /// Skip the replays: look and weigh only (no savings measured).
    #[arg(long)]
    pub quick: bool,
    /// Judge the home as GnuPG would at this time (RFC 3339 or a date;
    /// default: now).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub at: Option<i64>,
}

/// Arguments of `record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Watch files matching GLOB (repeatable; `*`, `?`, `[…]`; a pattern
    /// without `/` matches the file name, one with `/` the absolute path).
    /// Default: pubring.kbx and its .tmp, ~ and .lock; pubring.db and its
    /// .lock, -journal, -wal, -shm.
    #[arg(long, value_name = "GLOB")]
    pub watch: Vec<String>,
    /// After PROGRAM exits, wait until every recorded process has exited,
    /// at most DURATION (default 30s).
    #[arg(long, value_name = "DURATION", num_args = 0..=1, require_equals = true, default_missing_value = "30s",
          value_parser = parse_duration)]
    pub wait_daemons: Option<std::time::Duration>,
    /// Also take the call stack of the watched calls and write a speedscope
    /// profile to FILE (- = stdout): file events, bytes and time per stack,
    /// per process. Costs 3–10 µs a sampled call, more for deeper stacks
    /// (see --stack-every).
    #[arg(long, value_name = "FILE")]
    pub stacks: Option<PathBuf>,
    /// With --stacks: sample one watched call in N (weights are multiplied
    /// by N). 1 = every call, exact.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "stacks",
          value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    pub stack_every: u64,
    /// Also watch the running process PID and the processes it starts from
    /// then on (as `strace -f -p`), from the kernel (eBPF; needs CAP_BPF
    /// and CAP_PERFMON): with no PROGRAM, for --for DURATION or until
    /// Ctrl-C (repeatable, or comma-separated).
    #[arg(long, value_name = "PID", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub pid: Vec<u32>,
    /// Also watch every process running program NAME (as `ps -o comm`
    /// shows it), those that start meanwhile too, and the processes they
    /// start (repeatable).
    #[arg(long, value_name = "NAME")]
    pub name: Vec<String>,
    /// With --pid or --name and no PROGRAM: stop after DURATION (default:
    /// at Ctrl-C or SIGTERM).
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration, conflicts_with = "program")]
    pub for_: Option<std::time::Duration>,
    /// The program and its arguments (after `--`).
    #[arg(value_name = "PROGRAM", required_unless_present_any = ["pid", "name"], trailing_var_arg = true,
          allow_hyphen_values = true)]
    pub program: Vec<std::ffi::OsString>,
}

/// Arguments of `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The keybox (default: the built-in one, with the seed's numbers beside ours).
    #[arg(value_name = "FILE", value_parser = keybox_path)]
    pub file: Option<PathBuf>,
    /// Buffer sizes, comma-separated, as --kbx-buffer-size takes them (64 =
    /// 64 KiB, 0 = GnuPG's 8 KiB default, 4096B, 12kb, 1MiB, unbuffered).
    /// Default: the seed's 0,16,32,64,128,256,512.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<kbxscope::sweep::SweepSize>,
    /// What each run does (the help lists every workload, from the sweep's table).
    #[arg(long, value_name = "WORKLOAD", default_value = "validate", value_parser = parse_workload,
          help = workload_help())]
    pub workload: kbxscope::sweep::WorkloadKind,
    /// Lookup strategy of the validate, with-sigs and check-sigs workloads.
    #[arg(long, value_enum, default_value_t = LookupArg::Gnupg)]
    pub lookup: LookupArg,
    /// Timed runs per size.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Untimed runs per size before the timed ones.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub warmup: u32,
    /// Trustlist for the validate workload (as for list --with-validation).
    #[arg(long, value_name = "FILE")]
    pub trustlist: Option<PathBuf>,
    /// Validity time for the validate workload (RFC 3339 or a date).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub at: Option<i64>,
    /// `--export-json`, `--export-csv`, … (one per export format).
    #[command(flatten)]
    pub exports: ExportArgs,
    /// Draw file events and time against buffer size (log scale) as an SVG
    /// (- = stdout).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Show every column (reads, opens, seeks, min … max, read latency, the
    /// seed's time), not only those that fit 80 columns.
    #[arg(long)]
    pub wide: bool,
    /// Also run `gpgsm -k --with-validation --disable-dirmngr` at each size
    /// (a copy of the keybox in a temporary GNUPGHOME), count its file events
    /// with strace and show them beside ours. PATH: the gpgsm to run.
    #[arg(long, value_name = "PATH", num_args = 0..=1, require_equals = true, default_missing_value = "gpgsm")]
    pub with_gpgsm: Option<PathBuf>,
    /// With --workload with-sigs, check-sigs or import:FILE: also run `gpg
    /// --list-sigs`, `gpg --check-sigs` or `gpg --import FILE` at each size
    /// it can read with (a temporary GNUPGHOME with a fresh copy of the
    /// keybox each run), counted (see --count-with) and timed apart, beside
    /// ours. PATH: the gpg to run.
    #[arg(long, value_name = "PATH", num_args = 0..=1, require_equals = true, default_missing_value = "gpg", conflicts_with = "with_gpgsm")]
    pub with_gpg: Option<PathBuf>,
    /// How --with-gpg, --with-gpgsm and --program count GnuPG's file events:
    /// record = from inside, with kbxscope's interposer; strace = from outside.
    #[arg(long, value_enum, value_name = "HOW", default_value_t = Counter::Record)]
    pub count_with: Counter,
    /// Sweep a real GnuPG instead: at each size run PROGRAM (gpgsm, gpg or a
    /// path, whose name says which) on a fresh copy of the keybox with
    /// --kbx-buffer-size, its events recorded from inside; kbxscope's own
    /// run of the workload is the `model` column beside it.
    #[arg(long, value_name = "PROGRAM", conflicts_with_all = ["with_gpg", "with_gpgsm"])]
    pub program: Option<PathBuf>,
    /// Keybox or keyboxd? Also run the workload on keyboxd's database of
    /// the same keys (the keybox converted into a temporary file, removed
    /// at the end), at each page-cache size of --cache-sizes, and show both:
    /// two tables and a verdict, both in the exports and the plot.
    #[arg(long, conflicts_with_all = ["with_gpg", "with_gpgsm", "program"])]
    pub versus_keyboxd: bool,
    /// SQLite page-cache sizes for the database (with --versus-keyboxd, or
    /// when FILE is a database and --sizes is not given). Default:
    /// 64k,256k,1M,2000k (SQLite's and keyboxd's),8M,32M.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    pub cache_sizes: Vec<kbxscope::sweep::SweepSize>,
}

/// `--export-NAME FILE` for every export format ([`Format::ALL`]): the
/// options are made from the formats, so a new format needs no change here.
#[derive(Debug, Clone, Default)]
pub struct ExportArgs(pub Vec<(Format, PathBuf)>);

impl clap::FromArgMatches for ExportArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let given = |f: &Format| m.get_one::<PathBuf>(f.option()).map(|p| (*f, p.clone()));
        Ok(Self(Format::ALL.iter().filter_map(given).collect()))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for ExportArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        Format::ALL.iter().fold(cmd, |cmd, f| {
            let (_, option, what) = f.exporter();
            cmd.arg(
                clap::Arg::new(option)
                    .long(option)
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(format!("Write the results as {what} (- = stdout)")),
            )
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// A keybox path.
#[derive(Debug, Args)]
pub struct FileArg {
    /// The keybox file (e.g. ~/.gnupg/pubring.kbx). Without it: the built-in
    /// default keybox (the `seed` preset, generated once into the cache
    /// directory).
    #[arg(value_name = "FILE", value_parser = keybox_path)]
    pub file: Option<PathBuf>,
}

/// Arguments of `stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub file: FileArg,
    /// Print the numbers as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub file: FileArg,
    /// Which blobs to list.
    #[arg(long = "type", value_enum, default_value_t = KeyType::All)]
    pub key_type: KeyType,
    /// One JSON object per key, one per line.
    #[arg(long)]
    pub json: bool,
    /// Validate every certificate as `gpgsm -k --with-validation` does (only
    /// certificates are listed then).
    #[arg(long, conflicts_with_all = ["with_sigs", "check_sigs"])]
    pub with_validation: bool,
    /// OpenPGP keys with their signatures, as `gpg --list-sigs` shows them
    /// (every signer's user id looked up).
    #[arg(long, conflicts_with = "check_sigs")]
    pub with_sigs: bool,
    /// OpenPGP keys with every signature verified, as `gpg --check-sigs`
    /// does.
    #[arg(long)]
    pub check_sigs: bool,
    /// gpg-agent trustlist of the trusted roots. Default: KEYBOX.trustlist.txt
    /// next to a generated keybox, else trustlist.txt in the GnuPG home
    /// ($GNUPGHOME, else ~/.gnupg; on Windows %APPDATA%\gnupg).
    #[arg(long, value_name = "FILE", requires = "with_validation")]
    pub trustlist: Option<PathBuf>,
    /// Check validity periods (--with-validation), or judge keys' expiry
    /// and signatures (the listings of OpenPGP keys; as gpg's
    /// --faked-system-time) at this time (RFC 3339, e.g.
    /// 2026-12-01T00:00:00Z, or a date, 2026-12-01). Default: now.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub at: Option<i64>,
    /// How issuers (--with-validation) or signers (--with-sigs, --check-sigs)
    /// are looked up: gnupg = gpgsm's or gpg's access pattern (default),
    /// scan = one rescan per lookup, index = one forward pass, then memory.
    #[arg(long, value_enum)]
    pub lookup: Option<LookupArg>,
    #[command(flatten)]
    pub trust: TrustArgs,
}

/// Where the user ids' validity column of OpenPGP listings comes from:
/// gpg's trust database, read under a trust model.
#[derive(Debug, Clone, Default, Args)]
pub struct TrustArgs {
    /// The trust model of the validity column, as gpg's --trust-model: pgp,
    /// classic, direct, always or auto (tofu and tofu+pgp are named, not
    /// computed). Default: gpg.conf's trust-model in the store's GnuPG home,
    /// else auto (the trust database's model).
    #[arg(long, value_name = "MODEL", value_parser = ["pgp", "classic", "direct", "always", "tofu", "tofu+pgp", "auto"])]
    pub trust_model: Option<String>,
    /// gpg's trust database. Default: trustdb.gpg in the store's GnuPG home
    /// (beside pubring.kbx); where there is none, every user id is
    /// `unknown`, as gpg shows it.
    #[arg(long, value_name = "FILE")]
    pub trustdb: Option<PathBuf>,
}

/// `--lookup` of `list --with-validation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LookupArg {
    /// gpgsm 2.4's access pattern.
    Gnupg,
    /// One rescan per issuer lookup.
    Scan,
    /// One pass builds an in-memory index.
    Index,
}

/// Arguments of `find`.
#[derive(Debug, Args)]
pub struct FindArgs {
    /// [FILE] PATTERN…: with two or more arguments the first is the keybox;
    /// with one, it is the pattern and the built-in keybox is searched.
    /// Patterns are GnuPG's (a key matches if any pattern does): a
    /// fingerprint, a 16- or 8-digit key id (optional 0x), <mail>,
    /// @part-of-mail, /SUBJECT-DN, #SERIAL[/ISSUER-DN], =exact user id, or text.
    #[arg(value_name = "PATTERN", required = true, num_args = 1..)]
    pub args: Vec<String>,
    /// Report every match instead of stopping at the first.
    #[arg(long)]
    pub all: bool,
    /// One JSON object per match, one per line.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `gen`.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// The keybox to write (its trustlist goes to OUT.trustlist.txt).
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
    /// Shape: seed = 1294 OpenPGP + 803 X.509, about 42 MiB (the seed's
    /// keybox); small = about 1/8 of that; tiny = a few dozen blobs.
    #[arg(long, value_enum, default_value_t = PresetArg::Seed)]
    pub preset: PresetArg,
    /// Number of OpenPGP keys (overrides the preset).
    #[arg(long, value_name = "N", value_parser = count_usize)]
    pub openpgp: Option<usize>,
    /// Number of X.509 certificates (overrides the preset).
    #[arg(long, value_name = "N", value_parser = count_usize)]
    pub x509: Option<usize>,
    /// File size to aim at: bytes, or with a unit (k, kb, KiB, M, MB, MiB, G: powers of 1024).
    #[arg(long, value_name = "SIZE", value_parser = parse_file_size)]
    pub size: Option<u64>,
    /// Seed of the random stream (same version + options + seed = same bytes).
    #[arg(long, value_name = "N", value_parser = count)]
    pub seed: Option<u64>,
    /// The certificates' keys: seed = the built-in keybox's (mostly EC
    /// issuers, 75% P-256 end entities); mixed = RSA-heavy issuers
    /// (RSA-4096/2048 and EC roots), 55% P-256 end entities, half of them
    /// naming their issuer by key id alone.
    #[arg(long, value_enum, default_value_t = PkiArg::Seed)]
    pub pki: PkiArg,
    /// Replace OUT (and its trustlist) if they exist.
    #[arg(long)]
    pub force: bool,
    /// Write the keys as keyboxd's database (public-keys.d/pubring.db)
    /// instead of a keybox: the same keys and certificates, the same verdicts.
    #[arg(long)]
    pub keyboxd: bool,
}

/// Arguments of `convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The keybox (or a GnuPG home whose store is pubring.kbx).
    #[arg(value_name = "KEYBOX")]
    pub keybox: PathBuf,
    /// The database to write (a new file; see --force).
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files of OpenPGP public keys (binary or ASCII-armored), as
    /// `gpg --import` reads them, or of X.509 certificates (PEM or DER), as
    /// `gpgsm --import` reads them.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Start from a copy of this store instead of a new empty keybox: a
    /// keybox, keyboxd's database, or a GnuPG home (its keybox, or its
    /// database with `use-keyboxd`); `keyboxd` starts from a new empty
    /// database. The store named is only read.
    #[arg(long, value_name = "STORE")]
    pub onto: Option<PathBuf>,
    /// gpg's `--import-options bulk-import`: keyboxd stores every key in
    /// one transaction (keyboxd's databases only).
    #[arg(long)]
    pub bulk_import: bool,
    /// The time of the import (RFC 3339 or a date; default now): the
    /// signatures' judgement and the times written into the blobs.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub at: Option<i64>,
    /// One JSON object per key on stdout, then the summary.
    #[arg(long)]
    pub json: bool,
    /// What the write replays share.
    #[command(flatten)]
    pub replay: ReplayArgs,
}

/// The options of the write replays (`import`, `delete`).
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// Also write the store the replay made (keybox or database) to FILE
    /// (a new file; see --force), through a temporary file renamed into
    /// place.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace --out's FILE if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
    /// While another process holds the lock of --onto's keybox, wait for
    /// it as gpg does, at most this many seconds (gpg waits for ever),
    /// then fail; 0 fails at once.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub lock_wait: u64,
}

/// Arguments of `delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Fingerprints of the keys (40 or 64 hex digits; gpg deletes in batch
    /// mode only by fingerprint).
    #[arg(value_name = "FINGERPRINT", required = true)]
    pub fingerprints: Vec<String>,
    /// The store whose private copy the keys are deleted from: a keybox,
    /// keyboxd's database, or a GnuPG home (its keybox, or its database
    /// with `use-keyboxd`); it is only read.
    #[arg(long, value_name = "STORE", required = true)]
    pub onto: PathBuf,
    /// The time of the run (RFC 3339 or a date; default now): the
    /// maintenance pass's.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub at: Option<i64>,
    /// Delete X.509 certificates as `gpgsm --batch --delete-keys` does
    /// (from a keybox, or through keyboxd from its database; SHA-1
    /// fingerprints; gpgsm takes them last first and stops at the first it
    /// cannot find).
    #[arg(long)]
    pub gpgsm: bool,
    /// What the write replays share.
    #[command(flatten)]
    pub replay: ReplayArgs,
}

/// `--preset` of `gen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PresetArg {
    /// 1294 OpenPGP + 803 X.509, about 42 MiB.
    Seed,
    /// About 1/8 of the seed.
    Small,
    /// A few dozen blobs.
    Tiny,
}

/// `--pki` of `gen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PkiArg {
    /// The built-in keybox's certificates.
    Seed,
    /// RSA-heavy issuers, 55% P-256 end entities.
    Mixed,
}

/// `--type` of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeyType {
    /// OpenPGP keys.
    Openpgp,
    /// X.509 certificates.
    X509,
    /// Both.
    All,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `--metrics-listen ADDR` and `--io-summary json` with a space parse as
    /// with `=`; a subcommand after them stays a subcommand.
    #[test]
    fn optional_values_with_a_space() {
        let parse = |words: &[&str]| {
            let argv = join_optional_values(words.iter().map(std::ffi::OsString::from));
            Cli::try_parse_from(argv).unwrap()
        };
        let cli = parse(&["kbxscope", "--metrics-listen", "127.0.0.1:19464", "stats", "x.kbx"]);
        assert_eq!(cli.metrics_listen, Some("127.0.0.1:19464".parse().unwrap()));
        assert!(matches!(cli.command, Command::Stats(_)));
        let cli = parse(&["kbxscope", "--metrics-listen", "stats", "--io-summary", "json", "x.kbx"]);
        assert_eq!(cli.metrics_listen, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(cli.io_summary, Some(SummaryFormat::Json));
        let cli = parse(&["kbxscope", "stats", "--io-summary", "--", "json"]);
        assert_eq!(cli.io_summary, Some(SummaryFormat::Text), "nothing joined after --");
    }

    #[test]
    fn global_options_parse_anywhere() {
        let cli = Cli::try_parse_from(["kbxscope", "stats", "x.kbx", "--kbx-buffer-size", "16", "--io-summary=json"])
            .unwrap();
        assert_eq!(cli.kbx_buffer_size, Some(BufferSize::Bytes(16384)));
        assert_eq!(cli.io_summary, Some(SummaryFormat::Json));
        let cli = Cli::try_parse_from(["kbxscope", "--io-summary", "dump", "x.kbx"]).unwrap();
        assert_eq!(cli.io_summary, Some(SummaryFormat::Text));
        assert_eq!(cli.kbx_buffer_size, None);
        assert_eq!(cli.gnupg_version, GnupgVersion::V2_4);
    }

    #[test]
    fn rejects_dash_and_bad_sizes() {
        assert!(Cli::try_parse_from(["kbxscope", "stats", "-"]).is_err());
        assert!(Cli::try_parse_from(["kbxscope", "stats", "x", "--kbx-buffer-size", "-1"]).is_err());
        assert!(Cli::try_parse_from(["kbxscope", "stats", "x", "--kbx-buffer-size", "0B"]).is_err());
    }
}
