//! `sweep --with-gpg`: gpg's own numbers beside kbxscope's for the
//! `with-sigs` and `check-sigs` workloads.
//!
//! In a temporary GNUPGHOME (its trustdb made once, before any
//! measurement) holding a fresh copy of the keybox as `pubring.kbx` for
//! every run — gpg's compress run may rewrite a keybox with deleted blobs —
//! `gpg --batch --list-sigs` or `--check-sigs` [`--kbx-buffer-size N`]
//! runs once under strace, which counts its system calls on the keybox
//! (open, read, lseek, close, access), and once without, for the time. A
//! gpg without `--kbx-buffer-size` (before 2.4.2) runs only at its fixed
//! 8 KiB.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::output::write_file;
use kbxscope::io::{BufferSize, IoTally, KeyboxFile};
use kbxscope::openpgp::Mode;
use kbxscope::sweep::{GnupgRow, SweepSize};

/// A temporary GnuPG home for gpg runs.
pub struct GpgRunner {
    gpg: PathBuf,
    strace: PathBuf,
    home: tempfile::TempDir,
    keybox: Vec<u8>,
    command: &'static str,
    has_buffer_option: bool,
}

impl GpgRunner {
    /// Prepare a home (gpg makes its trustdb there first) and read the
    /// keybox through the instrumented layer, on a tally of its own.
    ///
    /// # Errors
    /// gpg or strace missing, or the keybox cannot be read.
    pub fn new(gpg: Option<&Path>, keybox: &Path, mode: Mode) -> Result<Self> {
        let gpg = super::tools::find("--with-gpg", "gpg", gpg)?;
        let strace = super::tools::find("--with-gpg", "strace", None)?;
        let home = tempfile::Builder::new().prefix("kbxscope-gpg-").tempdir()?;
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
        let probe =
            Command::new(&gpg).args(["--kbx-buffer-size", "8", "--version"]).output().context("cannot run gpg")?;
        let command = match mode {
            Mode::WithSigs => "--list-sigs",
            Mode::CheckSigs => "--check-sigs",
        };
        let runner = Self { gpg, strace, home, keybox: bytes, command, has_buffer_option: probe.status.success() };
        // The trustdb, outside the measurements (on an empty keybox).
        let _ = runner.command(None).arg("-k").stdout(Stdio::null()).stderr(Stdio::null()).status();
        Ok(runner)
    }

    fn fresh_copy(&self) -> Result<()> {
        write_file(&self.home.path().join("pubring.kbx"), &self.keybox, true)?;
        Ok(())
    }

    fn command(&self, kib: Option<u64>) -> Command {
        let mut c = Command::new(&self.gpg);
        c.args(["--homedir", &self.home.path().to_string_lossy(), "--batch"]);
        if let Some(k) = kib {
            c.args(["--kbx-buffer-size", &k.to_string()]);
        }
        c
    }

    /// gpg's row for a size, if this gpg can read with it (a number of KiB,
    /// 0 = its 8 KiB default; only 8 KiB without `--kbx-buffer-size`).
    ///
    /// # Errors
    /// gpg or strace cannot be run.
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
        self.fresh_copy()?;
        let started = Instant::now();
        let status = self.command(kib).arg(self.command).stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        let seconds = started.elapsed().as_secs_f64();
        if !status.success() && !matches!(status.code(), Some(1 | 2)) {
            bail!("gpg {} failed: {status}", self.command);
        }
        self.fresh_copy()?;
        let trace = self.home.path().join("strace.txt");
        let gpg = self.command(kib);
        let status = Command::new(&self.strace)
            .args(["-f", "-y", "-qq", "-s", "0", "-e", "trace=openat,read,lseek,close,access", "-o"])
            .arg(&trace)
            .arg(gpg.get_program())
            .args(gpg.get_args())
            .arg(self.command)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() && !matches!(status.code(), Some(1 | 2)) {
            bail!("strace gpg failed: {status}");
        }
        let keybox = self.home.path().join("pubring.kbx").to_string_lossy().into_owned();
        let events = super::textfile::count_lines_containing(&trace, &[format!("{keybox}>"), format!("\"{keybox}\"")])?;
        Ok(GnupgRow { tool: "gpg", events, time_s: seconds })
    }
}

impl Drop for GpgRunner {
    fn drop(&mut self) {
        let _ = Command::new("gpgconf")
            .args(["--homedir", &self.home.path().to_string_lossy(), "--kill", "all"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
