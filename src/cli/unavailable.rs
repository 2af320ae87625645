//! What needs Linux, where it is not: `record` (the interposer is
//! `LD_PRELOAD`'s, the kernel source eBPF) and the runs of a GnuPG program
//! under the interposer (`sweep --program`, `--with-*` without strace).
//! Each says so in one line (docs/windows.md has a Windows recorder's
//! design).

const WHY: &str =
    "it needs Linux (an LD_PRELOAD interposer or eBPF); see docs/windows.md for a Windows recorder's design";

/// `record`, not available here.
pub mod record {
    use std::process::ExitCode;

    use anyhow::{bail, Result};

    use crate::cli::args::SummaryFormat;
    use crate::cli::resolve::{RecordJob, TraceOptions};

    /// Says in one line that `record` is not available on this system.
    ///
    /// # Errors
    /// Always.
    pub fn run(_: &RecordJob, _: Option<SummaryFormat>, _: Option<&TraceOptions>) -> Result<ExitCode> {
        bail!("record is not available on {}: {}", std::env::consts::OS, crate::cli::unavailable::WHY)
    }
}

/// `doctor`, not available here.
pub mod doctor {
    use std::process::ExitCode;

    use anyhow::{bail, Result};

    use crate::cli::resolve::DoctorJob;

    /// Says in one line that `doctor` is not available on this system.
    ///
    /// # Errors
    /// Always.
    pub fn run(_: &DoctorJob) -> Result<ExitCode> {
        bail!("doctor is not available on {}: it reads processes and locks from Linux's /proc", std::env::consts::OS)
    }
}

/// A program run under the interposer, not available here.
pub mod preloaded {
    use std::process::{Command, ExitStatus};
    use std::time::Duration;

    use anyhow::{bail, Result};
    use kbxscope::record::Recorded;

    /// What a command run under the interposer did (never made here).
    pub struct Preloaded {
        /// How it ended.
        pub status: ExitStatus,
        /// The calls it made on the watched files.
        pub recorded: Recorded,
    }

    /// Says in one line that a program cannot be recorded on this system.
    ///
    /// # Errors
    /// Always.
    pub fn run_preloaded(
        _: &mut Command,
        _: &str,
        _: Option<u64>,
        _: Option<u64>,
        _: Option<Duration>,
    ) -> Result<std::io::Result<Preloaded>> {
        bail!("a GnuPG program cannot be recorded on {}: {}", std::env::consts::OS, crate::cli::unavailable::WHY)
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// One line, naming the system and where the design is.
    #[test]
    fn record_says_in_one_line_that_it_needs_linux() {
        let e = super::preloaded::run_preloaded(&mut Command::new("gpg"), "*.kbx", None, None, None).err().unwrap();
        let text = format!("{e:#}");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains(std::env::consts::OS) && text.contains("docs/windows.md"), "{text}");
    }
}
