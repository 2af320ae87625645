//! `sweep --with-gpgsm`: GnuPG's own numbers beside kbxscope's.
//!
//! In a temporary GNUPGHOME holding a copy of the keybox (as `pubring.kbx`)
//! and its trustlist, `gpgsm -k --with-validation --disable-dirmngr
//! [--kbx-buffer-size N]` runs once under strace, which counts its system
//! calls on the keybox (open, read, lseek, close, access), and once without,
//! for the time. A gpgsm without `--kbx-buffer-size` (before 2.4.2 / 2.2.42)
//! runs only at its fixed 8 KiB. Each run gets a fresh copy: gpgsm may
//! rewrite its keybox.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::output::write_file;
use kbxscope::io::{BufferSize, IoTally, KeyboxFile};
use kbxscope::sweep::GnupgRow;

/// A temporary GnuPG home for gpgsm runs.
pub struct GpgsmRunner {
    gpgsm: PathBuf,
    strace: PathBuf,
    home: tempfile::TempDir,
    keybox: Vec<u8>,
    /// Whether this gpgsm has `--kbx-buffer-size`.
    pub has_buffer_option: bool,
}

impl GpgsmRunner {
    /// Prepare a home with the keybox (read through the instrumented layer,
    /// on a tally of its own) and the trustlist.
    ///
    /// # Errors
    /// gpgsm or strace missing, or the files cannot be copied.
    pub fn new(gpgsm: Option<&Path>, keybox: &Path, trustlist: Option<&Path>) -> Result<Self> {
        let gpgsm = super::tools::find("--with-gpgsm", "gpgsm", gpgsm)?;
        let strace = super::tools::find("--with-gpgsm", "strace", None)?;
        let home = tempfile::Builder::new().prefix("kbxscope-gpgsm-").tempdir()?;
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
        if let Some(t) = trustlist {
            let text = super::textfile::read_text(t, 1 << 20)?;
            write_file(&home.path().join("trustlist.txt"), text.as_bytes(), true)?;
        }
        let probe =
            Command::new(&gpgsm).args(["--kbx-buffer-size", "8", "--version"]).output().context("cannot run gpgsm")?;
        let mut runner = Self { gpgsm, strace, home, keybox: bytes, has_buffer_option: probe.status.success() };
        // Start gpg-agent once, outside the measurements.
        runner.fresh_copy()?;
        let _ = runner.command(None).arg("-k").stdout(Stdio::null()).stderr(Stdio::null()).status();
        Ok(runner)
    }

    fn fresh_copy(&self) -> Result<()> {
        write_file(&self.home.path().join("pubring.kbx"), &self.keybox, true)?;
        Ok(())
    }

    fn command(&mut self, kib: Option<u64>) -> Command {
        let mut c = Command::new(&self.gpgsm);
        c.args(["--homedir", &self.home.path().to_string_lossy(), "--batch"]);
        if let Some(k) = kib {
            c.args(["--kbx-buffer-size", &k.to_string()]);
        }
        c
    }

    /// Run gpgsm at `kib` (GnuPG's KiB meaning; `None` = its default).
    ///
    /// # Errors
    /// gpgsm or strace cannot be run.
    pub fn run(&mut self, kib: Option<u64>) -> Result<GnupgRow> {
        let args = ["-k", "--with-validation", "--disable-dirmngr"];
        self.fresh_copy()?;
        let started = Instant::now();
        let status = self.command(kib).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        let seconds = started.elapsed().as_secs_f64();
        if !status.success() && status.code() != Some(1) {
            bail!("gpgsm failed: {status}");
        }
        self.fresh_copy()?;
        let trace = self.home.path().join("strace.txt");
        let gpgsm = self.command(kib);
        let status = Command::new(&self.strace)
            .args(["-y", "-qq", "-s", "0", "-e", "trace=openat,read,lseek,close,access", "-o"])
            .arg(&trace)
            .arg(gpgsm.get_program())
            .args(gpgsm.get_args())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() && status.code() != Some(1) {
            bail!("strace gpgsm failed: {status}");
        }
        let keybox = self.home.path().join("pubring.kbx").to_string_lossy().into_owned();
        let events = super::textfile::count_lines_containing(&trace, &[format!("{keybox}>"), format!("\"{keybox}\"")])?;
        Ok(GnupgRow { tool: "gpgsm", events, time_s: seconds })
    }
}

impl Drop for GpgsmRunner {
    fn drop(&mut self) {
        let _ = Command::new("gpgconf")
            .args(["--homedir", &self.home.path().to_string_lossy(), "--kill", "all"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
