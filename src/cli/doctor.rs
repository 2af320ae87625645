//! `doctor`: a GnuPG home examined ([`kbxscope::doctor`]), printed for
//! people (a screen, colour on a terminal, a progress bar while it
//! replays) or as one JSON object. Exit status 0 for a healthy home, 1
//! when anything was found.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::procfs;
use super::progress::Bar;
use super::resolve::DoctorJob;
use kbxscope::doctor::locks::{Process, Processes};
use kbxscope::doctor::{self, Finding, Report};
use kbxscope::gnupg_version::GnupgVersion;

/// The system's processes, from `/proc`.
struct Proc;

impl Processes for Proc {
    fn get(&self, pid: u32) -> Option<Process> {
        procfs::process(pid)
    }

    fn holding(&self, files: &[PathBuf]) -> Vec<Process> {
        procfs::holding(files).into_iter().filter_map(procfs::process).collect()
    }

    fn serving(&self, sockets: &[PathBuf]) -> Vec<(Process, PathBuf)> {
        sockets
            .iter()
            .flat_map(|s| {
                procfs::socket_holders(s).into_iter().filter_map(procfs::process).map(move |p| (p, s.clone()))
            })
            .collect()
    }
}

/// The installed gpg's version, from `gpg --version`'s first line.
fn installed_gpg() -> Option<(GnupgVersion, String)> {
    let out = std::process::Command::new("gpg").arg("--version").stdin(std::process::Stdio::null()).output().ok()?;
    let first = String::from_utf8_lossy(&out.stdout).lines().next()?.to_string();
    Some((GnupgVersion::from_version_line(&first)?, first))
}

/// Run `doctor`.
///
/// # Errors
/// The home cannot be examined at all (one line); output that cannot be written.
pub fn run(job: &DoctorJob) -> Result<ExitCode> {
    let home = super::store::gnupg_home(job.home.as_deref())?;
    let home = std::path::absolute(&home).unwrap_or(home);
    let default_home = std::env::var_os("HOME").is_some_and(|h| Path::new(&h).join(".gnupg") == home);
    let (version, version_from) = match (job.version, installed_gpg()) {
        (Some(v), _) => (v, "--gnupg-version".to_string()),
        (None, Some((v, line))) => (v, line),
        (None, None) => (GnupgVersion::default(), "kbxscope's default (no gpg found)".to_string()),
    };
    let gpg_default = kbxscope::io::gnupg_home().and_then(|h| std::path::absolute(h).ok());
    let gpg = if gpg_default.as_deref() == Some(home.as_path()) {
        "gpg".to_string()
    } else {
        format!("gpg --homedir {}", doctor::sh(&home))
    };
    let options = doctor::Options { home, default_home, version, version_from, now: job.at, quick: job.quick, gpg };
    let bar = (!job.quick).then(Bar::with_eta);
    let report = doctor::examine(&options, &Proc, &mut |s| {
        if let Some(b) = &bar {
            b.update(&s.what.chars().take(34).collect::<String>(), s.done, s.total);
        }
    })?;
    drop(bar);
    let text = if job.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        render(&report, std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none())
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(if report.findings.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// ANSI colours, or none.
struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn red(&self, s: &str) -> String {
        self.wrap("1;31", s)
    }
    fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
}

/// The report for people: what the home is, then each finding.
fn render(r: &Report, colour: bool) -> String {
    let p = Paint(colour);
    let mut out = String::new();
    let mut line = |label: &str, text: String| out.push_str(&format!("  {:9}{text}\n", p.dim(label)));
    let head =
        format!("kbxscope doctor: {} (GnuPG {}, from {})\n", r.home.display(), r.gnupg_version, r.gnupg_version_from);
    let stores: Vec<String> = r
        .stores
        .iter()
        .map(|s| {
            let missing = if s.exists { "" } else { ", missing" };
            format!("{}: {} {} ({}{missing})", s.program, s.kind, s.path.display(), s.decided_by)
        })
        .collect();
    line("keys", stores.join("; "));
    if let Some(h) = &r.health {
        let n = |k: &str| h.blobs.get(k).copied().unwrap_or(0);
        let stamp = h
            .last_maintenance
            .map(|t| format!("; maintained {} ago", doctor::age_words(r.checked_at - i64::from(t))))
            .unwrap_or_default();
        line(
            "store",
            format!(
                "{}: {} OpenPGP keys, {} certificates, {} deleted; {} signatures, {} by unknown signers{stamp}",
                doctor::mib(h.bytes),
                n("openpgp"),
                n("x509"),
                n("empty"),
                h.signatures,
                h.unknown_signers
            ),
        );
        if let Some(k) = h.largest.first() {
            line(
                "largest",
                format!("{} {} ({}, {} signatures)", k.fingerprint, k.name, doctor::mib(k.bytes), k.signatures),
            );
        }
    }
    line("buffer", format!("{} KiB ({})", r.buffer.kib, r.buffer.decided_by));
    let daemons: Vec<String> =
        r.daemons.iter().map(|d| format!("{} (pid {})", d.process.program, d.process.pid)).collect();
    line("daemons", if daemons.is_empty() { "none running".into() } else { daemons.join(", ") });
    let locks: Vec<String> = r.locks.iter().map(|l| l.path.display().to_string()).collect();
    line("locks", if locks.is_empty() { "none".into() } else { locks.join(", ") });
    let t = &r.trust;
    let next = t
        .trustdb
        .as_ref()
        .map(|h| match h.next_check {
            0 => "no check scheduled".to_string(),
            1 => "a check is pending".to_string(),
            n => format!("next check {}", kbxscope::timefmt::rfc3339(i64::from(n))),
        })
        .unwrap_or_else(|| "no trust database".into());
    line("trust", format!("{} ({}); {next}", t.model, t.decided_by));
    if let Some(replays) = &r.measured {
        let mut seen = Vec::new();
        for m in replays.measured.iter().filter(|m| {
            !seen.contains(&m.command) && {
                seen.push(m.command);
                true
            }
        }) {
            line(
                "replayed",
                format!("{}: {:.2} s as it is ({} file events)", m.command.name(), m.before_seconds, m.events_before),
            );
        }
        for s in &replays.skipped {
            line("skipped", format!("{}: {}", s.command.name(), s.why));
        }
    }
    let mut text = p.bold(&head) + &out;
    if r.findings.is_empty() {
        text.push_str(&format!("\n{}\n", p.green("No problems found.")));
        return text;
    }
    text.push_str(&format!(
        "\n{} finding(s), what keeps GnuPG stuck first, then by the time a fix saves:\n",
        r.findings.len()
    ));
    for (i, f) in r.findings.iter().enumerate() {
        text.push_str(&finding(i + 1, f, &p));
    }
    text
}

fn finding(n: usize, f: &Finding, p: &Paint) -> String {
    let mut s = format!("{n:2}. {} {}\n", p.red(f.kind), f.summary);
    if let Some(fix) = &f.fix {
        s.push_str(&format!("    fix:  {}\n", p.bold(fix)));
    }
    match f.saving_seconds {
        Some(x) if x >= 0.0 => s.push_str(&format!("    saves {x:.3} s a run of the commands replayed\n")),
        Some(x) => s.push_str(&format!("    measured: {:.3} s slower a run\n", -x)),
        None => {}
    }
    if let Some(note) = &f.note {
        s.push_str(&format!("    note: {note}\n"));
    }
    s
}
