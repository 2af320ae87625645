//! `sweep --with-gpgsm` and `--with-gpg`: GnuPG's own numbers beside
//! kbxscope's, from one runner for every GnuPG program.
//!
//! In a temporary GNUPGHOME holding a fresh copy of the keybox (as
//! `pubring.kbx`) for every run — gpg's compress run and gpgsm may rewrite
//! a keybox — the program runs once under strace, which counts its system
//! calls on the keybox (open, read, lseek, close, access), and once
//! without, for the time. A program without `--kbx-buffer-size` (GnuPG
//! before 2.4.2 / 2.2.42) runs only at its fixed 8 KiB. Each [`Program`]
//! says what it runs: gpgsm validates (`-k --with-validation
//! --disable-dirmngr`, with the trustlist in the home), gpg lists or
//! checks signatures (`--list-sigs`, `--check-sigs`). A further program
//! (keyboxd's clients, a program recorded from inside) is one more variant.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::output::write_file;
use kbxscope::io::{BufferSize, IoTally, KeyboxFile};
use kbxscope::openpgp::Mode;
use kbxscope::sweep::{GnupgRow, SweepSize};

/// What GnuPG program runs, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// `gpgsm -k --with-validation --disable-dirmngr`.
    GpgsmValidate,
    /// `gpg --list-sigs` or `gpg --check-sigs`.
    GpgSigs(Mode),
}

impl Program {
    /// The executable's name (on `PATH`, and the Debian package).
    fn tool(self) -> &'static str {
        match self {
            Program::GpgsmValidate => "gpgsm",
            Program::GpgSigs(_) => "gpg",
        }
    }

    /// The option that asked for it.
    fn option(self) -> &'static str {
        match self {
            Program::GpgsmValidate => "--with-gpgsm",
            Program::GpgSigs(_) => "--with-gpg",
        }
    }

    /// The command's arguments after the home and buffer options.
    fn args(self) -> &'static [&'static str] {
        match self {
            Program::GpgsmValidate => &["-k", "--with-validation", "--disable-dirmngr"],
            Program::GpgSigs(Mode::WithSigs) => &["--list-sigs"],
            Program::GpgSigs(Mode::CheckSigs) => &["--check-sigs"],
        }
    }

    /// Whether a run ended as the program ends when it worked (gpgsm exits
    /// 1 when a certificate does not validate; gpg 1 or 2 when a signature
    /// is bad or a key is missing).
    fn finished(self, status: ExitStatus) -> bool {
        match self {
            Program::GpgsmValidate => status.success() || status.code() == Some(1),
            Program::GpgSigs(_) => status.success() || matches!(status.code(), Some(1 | 2)),
        }
    }

    /// Whether strace follows forks (gpg's keybox calls are all its own,
    /// but it is traced with `-f` as it always was here).
    fn follow_forks(self) -> bool {
        matches!(self, Program::GpgSigs(_))
    }
}

/// A temporary GnuPG home for one program's runs.
pub struct GnupgRunner {
    program: Program,
    exe: PathBuf,
    strace: PathBuf,
    home: tempfile::TempDir,
    keybox: Vec<u8>,
    /// Whether this program has `--kbx-buffer-size`.
    has_buffer_option: bool,
}

impl GnupgRunner {
    /// Prepare a home for `program` (the executable `given`, else found on
    /// `PATH`) with the keybox, read through the instrumented layer on a
    /// tally of its own, and for gpgsm the trustlist. The program runs once
    /// before any measurement (gpg makes its trustdb, gpgsm starts its
    /// agent).
    ///
    /// # Errors
    /// The program or strace missing, or the files cannot be copied.
    pub fn new(program: Program, given: Option<&Path>, keybox: &Path, trustlist: Option<&Path>) -> Result<Self> {
        let exe = super::tools::find(program.option(), program.tool(), given)?;
        let strace = super::tools::find(program.option(), "strace", None)?;
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
        if let (Program::GpgsmValidate, Some(t)) = (program, trustlist) {
            let text = super::textfile::read_text(t, 1 << 20)?;
            write_file(&home.path().join("trustlist.txt"), text.as_bytes(), true)?;
        }
        let probe = Command::new(&exe)
            .args(["--kbx-buffer-size", "8", "--version"])
            .output()
            .with_context(|| format!("cannot run {}", program.tool()))?;
        let runner = Self { program, exe, strace, home, keybox: bytes, has_buffer_option: probe.status.success() };
        // gpgsm starts its agent on the keybox; gpg makes its trustdb on
        // an empty home. Outside the measurements either way.
        if program == Program::GpgsmValidate {
            runner.fresh_copy()?;
        }
        let _ = runner.command(None).arg("-k").stdout(Stdio::null()).stderr(Stdio::null()).status();
        Ok(runner)
    }

    fn fresh_copy(&self) -> Result<()> {
        write_file(&self.home.path().join("pubring.kbx"), &self.keybox, true)?;
        Ok(())
    }

    fn command(&self, kib: Option<u64>) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(["--homedir", &self.home.path().to_string_lossy(), "--batch"]);
        if let Some(k) = kib {
            c.args(["--kbx-buffer-size", &k.to_string()]);
        }
        c
    }

    /// The program's row for a size, if it can read with it: sizes GnuPG
    /// can express (a number of KiB; 0 = its 8 KiB default), or only 8 KiB
    /// for a program without `--kbx-buffer-size`.
    ///
    /// # Errors
    /// The program or strace cannot be run, or failed.
    pub fn at(&mut self, s: &SweepSize) -> Result<Option<GnupgRow>> {
        let bytes = s.size.bytes() as u64;
        if !self.has_buffer_option {
            return Ok(if bytes == 8192 { Some(self.run(None)?) } else { None });
        }
        match s.label.parse::<u64>() {
            Ok(kib) => Ok(Some(self.run(Some(kib))?)),
            Err(_) if bytes > 0 && bytes.is_multiple_of(8192) => Ok(Some(self.run(Some(bytes / 1024))?)),
            Err(_) => Ok(None),
        }
    }

    fn run(&mut self, kib: Option<u64>) -> Result<GnupgRow> {
        let (tool, args) = (self.program.tool(), self.program.args());
        self.fresh_copy()?;
        let started = Instant::now();
        let status = self.command(kib).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        let seconds = started.elapsed().as_secs_f64();
        if !self.program.finished(status) {
            bail!("{tool} {} failed: {status}", args.join(" "));
        }
        self.fresh_copy()?;
        let trace = self.home.path().join("strace.txt");
        let cmd = self.command(kib);
        let follow: &[&str] = if self.program.follow_forks() { &["-f"] } else { &[] };
        let status = Command::new(&self.strace)
            .args(follow)
            .args(["-y", "-qq", "-s", "0", "-e", "trace=openat,read,lseek,close,access", "-o"])
            .arg(&trace)
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !self.program.finished(status) {
            bail!("strace {tool} failed: {status}");
        }
        let keybox = self.home.path().join("pubring.kbx").to_string_lossy().into_owned();
        let events = super::textfile::count_lines_containing(&trace, &[format!("{keybox}>"), format!("\"{keybox}\"")])?;
        Ok(GnupgRow { tool, events, time_s: seconds })
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
