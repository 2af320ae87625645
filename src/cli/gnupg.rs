//! `sweep --with-gpgsm`, `--with-gpg` and `--program`: GnuPG's own
//! numbers, from one runner for every GnuPG program, which the sweep asks
//! for them at each size ([`GnupgProgram`]).
//!
//! In a temporary GNUPGHOME holding a fresh copy of the keybox (as
//! `pubring.kbx`) for every run — gpg's compress run and gpgsm may rewrite
//! a keybox — the program runs without instrumentation for the time, then
//! once more for the count: by default under kbxscope's interposer
//! ([`Counter::Record`], the machinery of `record`), or under strace
//! ([`Counter::Strace`]). Both count the same calls on the keybox: open,
//! read, lseek, close and access. A program without `--kbx-buffer-size`
//! (GnuPG before 2.4.2 / 2.2.42) runs only at its fixed 8 KiB. Each
//! [`Program`] says what it runs: gpgsm validates (`-k --with-validation
//! --disable-dirmngr`, with the trustlist in the home), gpg lists or checks
//! signatures (`--list-sigs`, `--check-sigs`), either lists (`-k`), and
//! gpg imports (`--import FILE`, the import workload's keys). For an import
//! both count the calls on every file of the keybox's (`pubring.kbx`,
//! `.tmp`, `~`, `.lock`): open, read, write, lseek, close, access, rename
//! and unlink (the replay's stat and link are not among them).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};

use super::args::Counter;
use super::output::write_file;
use kbxscope::events::FileOp;
use kbxscope::io::{BufferSize, IoTally, KeyboxFile};
use kbxscope::openpgp::Mode;
use kbxscope::sweep::{GnupgProgram, GnupgRow, ProgramError, ProgramRow, SweepSize, Times, Workload};

/// The calls both counters count on the keybox (strace's `openat`, `read`,
/// `lseek`, `close`, `access`).
const COUNTED: [FileOp; 5] = [FileOp::Open, FileOp::Read, FileOp::Seek, FileOp::Close, FileOp::Access];

/// The calls both count for an import, on every file of the keybox's.
const COUNTED_IMPORT: [FileOp; 8] = [
    FileOp::Open,
    FileOp::Read,
    FileOp::Write,
    FileOp::Seek,
    FileOp::Close,
    FileOp::Access,
    FileOp::Rename,
    FileOp::Unlink,
];

/// `given` if the user named the program, else `name` on `PATH`; a
/// missing one is an error naming `option` and the Debian package (the
/// package is the program's name for every tool used here).
fn find(option: &str, name: &str, given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.is_file()))
        .ok_or_else(|| anyhow!("{option} needs '{name}', which is not installed (Debian: apt-get install {name})"))
}

/// `--program` names a program, or goes with a workload, that cannot be
/// swept: the usage error's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotForSweep(String);

/// What GnuPG program runs, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// `gpgsm -k --with-validation --disable-dirmngr`.
    GpgsmValidate,
    /// `gpg --list-sigs` or `gpg --check-sigs`.
    GpgSigs(Mode),
    /// `gpgsm -k`.
    GpgsmList,
    /// `gpg -k`.
    GpgList,
    /// `gpg --import FILE` (the file given to the runner).
    GpgImport,
    /// `gpgsm --disable-dirmngr --import FILE`.
    GpgsmImport,
}

impl Program {
    /// What `sweep --program PROGRAM` runs for `workload`: PROGRAM's file
    /// name says gpg or gpgsm.
    ///
    /// # Errors
    /// A program that is neither, or a workload it has no command for (the
    /// usage error's words).
    pub fn for_sweep(program: &Path, workload: &Workload) -> Result<Self, NotForSweep> {
        let name = program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let gpgsm = name.starts_with("gpgsm");
        if !gpgsm && !name.starts_with("gpg") {
            return Err(NotForSweep(format!(
                "--program: '{}' is neither gpg nor gpgsm (its file name says which)",
                program.display()
            )));
        }
        Ok(match (gpgsm, workload) {
            (true, Workload::Validate(_)) => Program::GpgsmValidate,
            (true, Workload::List) => Program::GpgsmList,
            (true, Workload::Import(_)) => Program::GpgsmImport,
            (false, Workload::Sigs(mode, _)) => Program::GpgSigs(*mode),
            (false, Workload::List) => Program::GpgList,
            (false, Workload::Import(_)) => Program::GpgImport,
            (true, w) => {
                return Err(NotForSweep(format!(
                    "--program gpgsm goes with --workload validate, list or import:FILE, not {}",
                    w.name()
                )))
            }
            (false, w) => {
                return Err(NotForSweep(format!(
                    "--program gpg goes with --workload with-sigs, check-sigs, list or import:FILE, not {}",
                    w.name()
                )))
            }
        })
    }

    /// The executable's name (on `PATH`, and the Debian package).
    pub fn tool(self) -> &'static str {
        match self {
            Program::GpgsmValidate | Program::GpgsmList | Program::GpgsmImport => "gpgsm",
            Program::GpgSigs(_) | Program::GpgList | Program::GpgImport => "gpg",
        }
    }

    /// The command's arguments after the home and buffer options.
    fn args(self) -> &'static [&'static str] {
        match self {
            Program::GpgsmValidate => &["-k", "--with-validation", "--disable-dirmngr"],
            Program::GpgSigs(Mode::WithSigs) => &["--list-sigs"],
            Program::GpgSigs(Mode::CheckSigs) => &["--check-sigs"],
            Program::GpgsmList | Program::GpgList => &["-k"],
            Program::GpgImport => &["--import"],
            Program::GpgsmImport => &["--disable-dirmngr", "--import"],
        }
    }

    /// Whether a run ended as the program ends when it worked (gpgsm exits
    /// 1 when a certificate does not validate; gpg 1 or 2 when a signature
    /// is bad or a key is missing).
    fn finished(self, status: ExitStatus) -> bool {
        // gpgsm's import exits 2 after any error it logged (a certificate
        // refused, a hash it does not like).
        match self {
            Program::GpgsmValidate | Program::GpgsmList => status.success() || status.code() == Some(1),
            _ => status.success() || matches!(status.code(), Some(1 | 2)),
        }
    }

    /// Whether strace follows forks (gpg's keybox calls are all its own,
    /// but it is traced with `-f` as it always was here).
    fn follow_forks(self) -> bool {
        self.tool() == "gpg"
    }
}

/// One size's measurement of a program: the events of one run and the
/// times of the timed runs.
struct Measured {
    events: u64,
    wall: Vec<f64>,
    user: Vec<f64>,
    sys: Vec<f64>,
}

/// Why a program does not run at a buffer size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum NotRun {
    /// It has no `--kbx-buffer-size`: it reads with its 8 KiB only.
    #[error("{version} has no --kbx-buffer-size (8 KiB only)")]
    NoBufferOption {
        /// The program's version line.
        version: String,
    },
    /// GnuPG's option cannot say this size (not a multiple of 8 KiB).
    #[error("--kbx-buffer-size cannot express {size}")]
    Inexpressible {
        /// The size as shown.
        size: String,
    },
}

/// A temporary GnuPG home for one program's runs.
pub struct GnupgRunner {
    program: Program,
    exe: PathBuf,
    counter: Counter,
    /// strace, when it counts.
    strace: Option<PathBuf>,
    /// The program's `--version` first line (`gpgsm (GnuPG) 2.2.40`).
    version: String,
    home: tempfile::TempDir,
    keybox: Vec<u8>,
    /// Whether this program has `--kbx-buffer-size`.
    has_buffer_option: bool,
    /// Arguments after the program's own (an import's file).
    extra: Vec<std::ffi::OsString>,
}

impl GnupgRunner {
    /// The GnuPG version this program is, where kbxscope models it.
    pub fn gnupg_version(&self) -> Option<kbxscope::gnupg_version::GnupgVersion> {
        kbxscope::gnupg_version::GnupgVersion::from_version_line(&self.version)
    }

    /// Prepare a home for `program` (the executable `given`, else found on
    /// `PATH`; `option` asked for it) with the keybox, read through the
    /// instrumented layer on a tally of its own, and for gpgsm the
    /// trustlist; `extra` follows the program's arguments (the file an
    /// import reads). The program runs its command once before any
    /// measurement (gpg makes its trustdb, gpgsm starts its agent, which
    /// then is not counted).
    ///
    /// # Errors
    /// The program or strace missing, or the files cannot be copied.
    pub fn new(
        program: Program,
        option: &str,
        given: Option<&Path>,
        keybox: &Path,
        trustlist: Option<&Path>,
        counter: Counter,
        extra: Vec<std::ffi::OsString>,
    ) -> Result<Self> {
        let exe = find(option, program.tool(), given)?;
        let strace = match counter {
            Counter::Strace => Some(find(option, "strace", None)?),
            Counter::Record => None,
        };
        let home = tempfile::Builder::new().prefix(&format!("kbxscope-{}-", program.tool())).tempdir()?;
        let mut f = KeyboxFile::open(keybox, &IoTally::new(BufferSize::default()))?;
        let mut bytes = Vec::new();
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut chunk)?;
            bytes.extend_from_slice(&chunk[..n]);
            if n < chunk.len() {
                break;
            }
        }
        if let ("gpgsm", Some(t)) = (program.tool(), trustlist) {
            let text = kbxscope::io::read_text(t, 1 << 20)?;
            write_file(&home.path().join("trustlist.txt"), text.as_bytes(), true)?;
        }
        let probe = Command::new(&exe)
            .args(["--kbx-buffer-size", "8", "--version"])
            .output()
            .with_context(|| format!("cannot run {}", program.tool()))?;
        let version = Command::new(&exe).arg("--version").output().map_or_else(
            |_| program.tool().to_string(),
            |o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or(program.tool()).to_string(),
        );
        let runner = Self {
            program,
            exe,
            counter,
            strace,
            version,
            home,
            keybox: bytes,
            has_buffer_option: probe.status.success(),
            extra,
        };
        // gpgsm starts its agent, gpg makes its trustdb: outside the
        // measurements.
        runner.fresh_copy()?;
        let _ = runner.invocation(None).stdout(Stdio::null()).stderr(Stdio::null()).status();
        Ok(runner)
    }

    fn fresh_copy(&self) -> Result<()> {
        write_file(&self.home.path().join("pubring.kbx"), &self.keybox, true)?;
        Ok(())
    }

    /// The whole command at `kib`: the home, the buffer, the program's
    /// arguments and `extra`; no input.
    fn invocation(&self, kib: Option<u64>) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(["--homedir", &self.home.path().to_string_lossy(), "--batch"]);
        if let Some(k) = kib {
            c.args(["--kbx-buffer-size", &k.to_string()]);
        }
        c.args(self.program.args()).args(&self.extra).stdin(Stdio::null());
        c
    }

    /// How the program reads with a size: `--kbx-buffer-size K` (a number
    /// of KiB, 0 = its 8 KiB default), its built-in 8 KiB (no option), or
    /// not at all, and why.
    fn buffer_kib(&self, s: &SweepSize) -> Result<Option<u64>, NotRun> {
        let bytes = s.size.bytes() as u64;
        if !self.has_buffer_option {
            return match bytes {
                8192 => Ok(None),
                _ => Err(NotRun::NoBufferOption { version: self.version.clone() }),
            };
        }
        match s.label.parse::<u64>() {
            Ok(kib) => Ok(Some(kib)),
            Err(_) if bytes > 0 && bytes.is_multiple_of(8192) => Ok(Some(bytes / 1024)),
            Err(_) => Err(NotRun::Inexpressible { size: s.size.to_string() }),
        }
    }

    /// `warmup` plain runs, `runs` timed (wall and the child's CPU time),
    /// then one counted run; each on a fresh copy of the keybox.
    fn measure(&mut self, kib: Option<u64>, warmup: usize, runs: usize) -> Result<Measured> {
        let (tool, args) = (self.program.tool(), self.program.args());
        let mut m = Measured { events: 0, wall: Vec::new(), user: Vec::new(), sys: Vec::new() };
        for k in 0..warmup + runs {
            self.fresh_copy()?;
            let (u0, s0) = kbxscope::sweep::children_cpu_times();
            let started = Instant::now();
            let status = self.invocation(kib).stdout(Stdio::null()).stderr(Stdio::null()).status()?;
            let seconds = started.elapsed().as_secs_f64();
            let (u1, s1) = kbxscope::sweep::children_cpu_times();
            if !self.program.finished(status) {
                bail!("{tool} {} failed: {status}", args.join(" "));
            }
            if k >= warmup {
                m.wall.push(seconds);
                m.user.push(u1.saturating_sub(u0).as_secs_f64());
                m.sys.push(s1.saturating_sub(s0).as_secs_f64());
            }
        }
        self.fresh_copy()?;
        m.events = match &self.strace {
            Some(strace) => self.count_strace(strace, kib)?,
            None => self.count_record(kib)?,
        };
        Ok(m)
    }

    /// One run under the interposer: its calls on the home's keybox (for
    /// an import, on its files).
    fn count_record(&self, kib: Option<u64>) -> Result<u64> {
        let (tool, args) = (self.program.tool(), self.program.args());
        let keybox = self.home.path().join("pubring.kbx").to_string_lossy().into_owned();
        let (watch, counted): (String, &[FileOp]) = match self.program {
            Program::GpgImport | Program::GpgsmImport => {
                (format!("{keybox}:{keybox}.tmp:{keybox}~:{keybox}.lock"), &COUNTED_IMPORT)
            }
            _ => (keybox, &COUNTED),
        };
        let mut cmd = self.invocation(kib);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let run = super::preloaded::run_preloaded(&mut cmd, &watch, None, None, None)?
            .with_context(|| format!("cannot run {tool}"))?;
        if !self.program.finished(run.status) {
            bail!("{tool} {} under the interposer failed: {}", args.join(" "), run.status);
        }
        let total = run.recorded.total();
        Ok(counted.iter().map(|op| total.count(*op)).sum())
    }

    /// One run under strace: its lines naming the home's keybox (for an
    /// import, any of its files: their names begin with the keybox's).
    fn count_strace(&self, strace: &Path, kib: Option<u64>) -> Result<u64> {
        let tool = self.program.tool();
        let trace = self.home.path().join("strace.txt");
        let cmd = self.invocation(kib);
        let follow: &[&str] = if self.program.follow_forks() { &["-f"] } else { &[] };
        let keybox = self.home.path().join("pubring.kbx").to_string_lossy().into_owned();
        let (calls, needles) = match self.program {
            Program::GpgImport | Program::GpgsmImport => (
                "trace=openat,read,write,lseek,close,access,rename,unlink",
                vec![format!("<{keybox}"), format!("\"{keybox}")],
            ),
            _ => ("trace=openat,read,lseek,close,access", vec![format!("{keybox}>"), format!("\"{keybox}\"")]),
        };
        let status = Command::new(strace)
            .args(follow)
            .args(["-y", "-qq", "-s", "0", "-e", calls, "-o"])
            .arg(&trace)
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !self.program.finished(status) {
            bail!("strace {tool} failed: {status}");
        }
        Ok(kbxscope::io::count_lines_containing(&trace, &needles)?)
    }
}

/// The sweep asks the runner for the program's numbers at each size.
impl GnupgProgram for GnupgRunner {
    fn describe(&self) -> String {
        let (tool, args) = (self.program.tool(), self.program.args().join(" "));
        format!("{tool} {args} ({}), counted with {}", self.version, self.counter.name())
    }

    fn gnupg_row(&mut self, s: &SweepSize) -> Result<Option<GnupgRow>, ProgramError> {
        let Ok(kib) = self.buffer_kib(s) else { return Ok(None) };
        let m = self.measure(kib, 0, 1)?;
        let (tool, counted_with) = (self.program.tool(), self.counter.name());
        Ok(Some(GnupgRow { tool, events: m.events, time_s: m.wall[0], counted_with }))
    }

    fn program_row(&mut self, s: &SweepSize, warmup: usize, runs: usize) -> Result<ProgramRow, ProgramError> {
        let tool = self.program.tool();
        let kib = match self.buffer_kib(s) {
            Ok(k) => k,
            Err(why) => return Ok(ProgramRow::not_run(tool, why.to_string())),
        };
        let m = self.measure(kib, warmup, runs.max(1))?;
        Ok(ProgramRow {
            tool,
            not_run: None,
            events: m.events,
            wall_s: Times::new(m.wall),
            user_s: Times::new(m.user),
            sys_s: Times::new(m.sys),
        })
    }
}

impl Drop for GnupgRunner {
    fn drop(&mut self) {
        let _ = Command::new("gpgconf")
            .args(["--homedir", &self.home.path().to_string_lossy(), "--kill", "all"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
