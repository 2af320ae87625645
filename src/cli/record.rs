//! `kbxscope record [--watch GLOB]… [--wait-daemons[=DURATION]] [--stacks
//! FILE [--stack-every N]] -- PROGRAM [ARGS…]`: run PROGRAM with the
//! interposer preloaded and report what it and its descendants did on the
//! watched files (with `--stacks`, also which of their functions made the
//! calls: [`kbxscope::record::profile`]).
//!
//! * The interposer (embedded, [`kbxscope::record::preload`]) is written
//!   once into the cache directory (`$KBXSCOPE_CACHE_DIR`, …, as for the
//!   built-in keybox) under its SHA-256 name, through a temporary file
//!   renamed into place.
//! * PROGRAM runs with `LD_PRELOAD` (ours first, any existing value kept
//!   after it), `KBXSCOPE_RECORD` (a fresh private temporary directory,
//!   removed afterwards, also on Ctrl-C/SIGTERM), `KBXSCOPE_WATCH` and, with
//!   `--trace-level event`, `KBXSCOPE_RECORD_EVENTS` (capped by
//!   `--trace-max-events`). Its stdin, stdout and stderr are ours; record
//!   exits with its status (128 + N for signal N).
//! * The daemon rule: the records are shared memory, complete at every
//!   moment. By default they are read when PROGRAM exits: a daemon it
//!   started (gpg-agent, keyboxd, dirmngr) is reported with what it did
//!   until then, and named as still running. `--wait-daemons[=DURATION]`
//!   first waits (at most DURATION, 30 s by default) until every recorded
//!   process has exited. record never signals a process.
//! * If record itself gets SIGINT or SIGTERM (or dies), PROGRAM is not
//!   signalled and goes on unaffected: its hooks write into shared memory
//!   no one needs to read, nothing blocks and no SIGPIPE can come. record
//!   removes its directory and says in one line how many calls had been
//!   counted (they are not reported); a later image of PROGRAM finds the
//!   directory gone and records nothing. Only SIGKILL leaves the directory
//!   in `$TMPDIR`.
//! * What cannot be seen is said in one line instead of zeros: a
//!   statically linked PROGRAM, a GnuPG daemon already running for the
//!   home before record started, lost events.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::Result;

use super::args::SummaryFormat;
use super::attach::Attached;
use super::preloaded::{run_preloaded, Preloaded};
use super::procfs::{self, alive};
use super::render::duration;
use super::resolve::{RecordJob, TraceOptions};
use kbxscope::events::{FileOp, IoStats, Origin};
use kbxscope::record::kernel::{self, Pattern};
use kbxscope::record::{self, Recorded};

/// Run `record`.
///
/// # Errors
/// The interposer cannot be installed or the record directory made.
pub fn run(a: &RecordJob, summary: Option<SummaryFormat>, trace: Option<&TraceOptions>) -> Result<ExitCode> {
    let events = trace.and_then(|t| t.recorded_events(record::MAX_EVENTS));
    let mut notes = Vec::new();
    let patterns = kernel_patterns(&a.watch, &mut notes);
    let Some((program, args)) = a.program.split_first() else {
        return watch_running(a, &patterns, notes, summary, events);
    };
    let Some(exe) = resolve(program) else {
        eprintln!("kbxscope: {}: command not found", program.to_string_lossy());
        return Ok(ExitCode::from(127));
    };
    let name = program.to_string_lossy().into_owned();
    let statically = read_head(&exe).and_then(|h| record::elf::is_static(&h)).unwrap_or(false);
    let running = running_daemons(args);

    // The kernel's event source, for what the interposer cannot reach.
    let mut attached = None;
    if statically || !running.is_empty() || !a.pids.is_empty() || !a.names.is_empty() {
        match Attached::start(&patterns, events.is_some()) {
            Ok(mut k) => {
                if statically {
                    // PROGRAM, forked from here, is watched from its first instruction.
                    k.watch_pid(std::process::id(), &patterns);
                    notes.push(format!("{name} is statically linked: recorded from the kernel (eBPF)"));
                }
                for (daemon, socket) in &running {
                    notes.push(watch_daemon(&mut k, daemon, socket, &patterns));
                }
                for pid in watch_given(&mut k, a, &patterns) {
                    notes.push(format!("--pid {pid}: no such process"));
                }
                attached = Some(k);
            }
            Err(why) => {
                notes.push(format!("{why}; recording without it"));
                if statically {
                    notes.push(format!("{name} is statically linked: nothing can be recorded"));
                }
                for (daemon, socket) in &running {
                    notes.push(format!(
                        "{daemon} was already running ({}) before record started: its calls are not recorded \
                         (gpgconf --kill {daemon} to include them)",
                        socket.display()
                    ));
                }
            }
        }
    }
    let mut cmd = Command::new(&exe);
    cmd.arg0(program).args(args);
    let Preloaded { status, mut recorded, incomplete } =
        match run_preloaded(&mut cmd, &a.watch, events, a.stacks.as_ref().map(|(_, every)| *every), a.wait_daemons)? {
            Ok(r) => r,
            Err(e) => {
                eprintln!("kbxscope: cannot run {name}: {e}");
                return Ok(ExitCode::from(if e.kind() == io::ErrorKind::NotFound { 127 } else { 126 }));
            }
        };
    let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    // A static PROGRAM without the kernel source: nothing was seen, no summary of zeros.
    let blind = statically && attached.is_none();
    // The processes PROGRAM left running (those recorded from the kernel
    // were watched, not started).
    let alive: Vec<String> =
        recorded.processes.iter().filter(|p| alive(p.pid)).map(|p| format!("{} (pid {})", p.program, p.pid)).collect();
    if let Some(k) = attached {
        recorded.add_kernel(k.finish());
    }
    if !alive.is_empty() {
        notes.push(format!(
            "still running when recorded: {}; counted until {}",
            alive.join(", "),
            if a.wait_daemons.is_some() { "--wait-daemons gave up" } else { "PROGRAM exited (--wait-daemons waits)" }
        ));
    }
    if incomplete > 0 {
        notes.push(format!("{incomplete} record file(s) were still being created and are left out"));
    }
    report(&recorded, notes, summary, events.is_some(), a.stacks.as_ref().map(|(p, _)| p.as_path()), blind)?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(255)))
}

/// `record --pid`/`--name` without PROGRAM: watch from the kernel until
/// `--for` has passed or a signal comes, then report.
fn watch_running(
    a: &RecordJob,
    patterns: &[Pattern],
    mut notes: Vec<String>,
    summary: Option<SummaryFormat>,
    events: Option<u64>,
) -> Result<ExitCode> {
    let mut k = match Attached::start(patterns, events.is_some()) {
        Ok(k) => k,
        Err(why) => {
            eprintln!("kbxscope: record: {why}");
            return Ok(ExitCode::from(1));
        }
    };
    if let Some(pid) = watch_given(&mut k, a, patterns).first() {
        eprintln!("kbxscope: record: no process {pid}");
        return Ok(ExitCode::from(1));
    }
    let pids = k.watched();
    let until = a.duration.map_or_else(|| "Ctrl-C".to_string(), |d| format!("{d:?} have passed"));
    // Caught before saying so: a Ctrl-C right after the line ends the wait.
    let caught = super::interrupt::catch_stops();
    eprintln!(
        "kbxscope: record: attached to {} process{} ({}); recording until {until}",
        pids.len(),
        if pids.len() == 1 { "" } else { "es" },
        pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
    );
    let stopped = caught.wait(a.duration);
    let mut recorded = Recorded::default();
    recorded.add_kernel(k.finish());
    if let Some(signal) = stopped {
        notes.push(format!("{signal}: stopped; every probe detached"));
    }
    report(&recorded, notes, summary, events.is_some(), a.stacks.as_ref().map(|(p, _)| p.as_path()), false)?;
    Ok(ExitCode::SUCCESS)
}

/// The kernel's form of the `--watch` globs; a note for those it cannot match.
fn kernel_patterns(watch: &str, notes: &mut Vec<String>) -> Vec<Pattern> {
    let mut out = Vec::new();
    for glob in watch.split(':').filter(|g| !g.is_empty()) {
        match Pattern::of_glob(glob) {
            Some(p) if out.len() < kernel::PATTERNS => out.push(p),
            _ => notes.push(format!(
                "--watch {glob}: the kernel's event source matches base names and *SUFFIX only (at most {}): \
                 not watched in processes recorded from the kernel",
                kernel::PATTERNS
            )),
        }
    }
    out
}

/// Watch `--pid` and `--name`'s processes; the `--pid`s that do not run.
fn watch_given(k: &mut Attached, a: &RecordJob, patterns: &[Pattern]) -> Vec<u32> {
    let missing = a.pids.iter().copied().filter(|pid| !k.watch_pid(*pid, patterns)).collect();
    for name in &a.names {
        for pid in procfs::pids_named(name) {
            k.watch_pid(pid, patterns);
        }
        k.watch_comm(name);
    }
    missing
}

/// Watch the daemon already listening at `socket`: the process holding it
/// that runs `daemon`; if only systemd holds it (socket activation, the
/// daemon not started yet), the daemon from its exec on. The note that
/// says so.
fn watch_daemon(k: &mut Attached, daemon: &str, socket: &Path, patterns: &[Pattern]) -> String {
    let pids: Vec<u32> = procfs::socket_holders(socket)
        .into_iter()
        .filter(|pid| procfs::process_info(*pid).is_some_and(|(_, c)| c == procfs::comm(daemon)))
        .collect();
    for pid in &pids {
        k.watch_pid(*pid, patterns);
    }
    if pids.is_empty() {
        k.watch_comm(daemon);
        return format!(
            "{daemon} listens at {} through another process (systemd): recorded from the kernel (eBPF) once it starts",
            socket.display()
        );
    }
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    format!(
        "{daemon} (pid {}) was already running ({}): recorded from the kernel (eBPF)",
        list.join(", "),
        socket.display()
    )
}

/// Say what was recorded: the notes, metrics, trace events, stacks and the summary.
fn report(
    recorded: &Recorded,
    mut notes: Vec<String>,
    summary: Option<SummaryFormat>,
    events: bool,
    stacks: Option<&Path>,
    blind: bool,
) -> Result<()> {
    let l = recorded.lost;
    if l.files + l.fds > 0 {
        notes.push(format!(
            "lost: {} calls on files beyond 64 per process, {} on descriptors beyond the fd table",
            l.files, l.fds
        ));
    }
    if l.events > 0 {
        notes.push(format!("lost: {} per-call events beyond --trace-max-events (the counts are complete)", l.events));
    }
    if l.ring > 0 {
        notes.push(format!(
            "lost: {} per-call events the kernel's ring buffer had no room for (the counts are complete; \
             KBXSCOPE_ATTACH_RING_KIB=N gives it N KiB, {} by default)",
            l.ring,
            kbxscope::record::kernel::RING_KIB
        ));
    }
    // With the summary, whose counts it explains (without one, record adds
    // nothing to PROGRAM's stderr but its own troubles).
    for m in recorded.maintenance_passes().into_iter().filter(|_| summary.is_some()) {
        let times = if m.times == 1 { String::new() } else { format!(" {} times", m.times) };
        notes.push(format!(
            "{} (pid {}) ran GnuPG's keybox maintenance pass{times}: it copied the keybox into {} and removed the copy, \
             nothing being dropped, so the stamp stays older than three hours and the next start copies it again",
            m.program, m.pid, m.tmp
        ));
    }
    if let Some(observer) = kbxscope::events::observer() {
        for p in &recorded.processes {
            observer.observe_recorded(&Origin { pid: p.pid, tid: p.pid, program: &p.program }, &p.stats);
        }
    }
    if events {
        recorded.for_each_event(kbxscope::events::trace);
    }
    if let Some(path) = stacks {
        notes.push(write_stacks(path, recorded)?);
    }
    for n in &notes {
        eprintln!("kbxscope: record: {n}");
    }
    if let Some(format) = summary {
        let text = match format {
            _ if blind => String::new(),
            SummaryFormat::Json => serde_json::to_string(&recorded.summary())? + "\n",
            SummaryFormat::Text => summary_text(recorded),
        };
        io::stderr().write_all(text.as_bytes())?;
    }
    Ok(())
}

/// PROGRAM as `execvp` finds it.
fn resolve(program: &OsStr) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.components().count() > 1 || program.to_string_lossy().contains('/') {
        return p.exists().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(&path).map(|d| d.join(p)).find(|c| c.is_file())
}

/// The first 64 KiB of a file (the ELF header and program headers).
fn read_head(path: &Path) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    std::fs::File::open(path).ok()?.take(64 * 1024).read_to_end(&mut head).ok()?;
    Some(head)
}

/// The GnuPG home PROGRAM will use: `--homedir` in its arguments, else
/// the user's ([`kbxscope::io::gnupg_home`]).
fn gnupg_home(args: &[OsString]) -> Option<PathBuf> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let s = a.to_string_lossy();
        if s == "--homedir" {
            return it.next().map(PathBuf::from);
        }
        if let Some(h) = s.strip_prefix("--homedir=") {
            return Some(PathBuf::from(h));
        }
        if s == "--" {
            break;
        }
    }
    kbxscope::io::gnupg_home()
}

/// The GnuPG daemons already listening for PROGRAM's home, with their
/// sockets (as `gpgconf --list-dirs` names them, else in the home). A
/// connection is opened and closed at once; nothing is sent.
fn running_daemons(args: &[OsString]) -> Vec<(&'static str, PathBuf)> {
    let Some(home) = gnupg_home(args) else { return Vec::new() };
    if !home.is_dir() {
        return Vec::new();
    }
    let listed = Command::new("gpgconf")
        .arg("--homedir")
        .arg(&home)
        .arg("--list-dirs")
        .env_remove("LD_PRELOAD")
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let socket = |key: &str, file: &str| {
        listed
            .lines()
            .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(':')))
            .map(|v| PathBuf::from(unescape(v)))
            .unwrap_or_else(|| home.join(file))
    };
    [
        ("gpg-agent", "agent-socket", "S.gpg-agent"),
        ("keyboxd", "keyboxd-socket", "S.keyboxd"),
        ("dirmngr", "dirmngr-socket", "S.dirmngr"),
    ]
    .into_iter()
    .map(|(daemon, key, file)| (daemon, socket(key, file)))
    .filter(|(_, s)| std::os::unix::net::UnixStream::connect(s).is_ok())
    .collect()
}

/// gpgconf's `%XX` escapes.
fn unescape(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(x) = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Write `--stacks`' profile; the note that says what it holds.
fn write_stacks(path: &Path, recorded: &Recorded) -> Result<String> {
    let mut symbols = record::profile::Symbolizer::new(Box::new(|module| std::fs::read(module).ok()));
    let (doc, t) = record::profile::profile(&recorded.stacks, &mut symbols);
    let bytes = serde_json::to_vec(&doc)?;
    if path == Path::new("-") {
        io::stdout().write_all(&bytes)?;
    } else {
        super::output::write_file(path, &bytes, true)?;
    }
    let lost = if t.lost > 0 { format!(", {} lost (the stack table was full)", t.lost) } else { String::new() };
    Ok(format!(
        "stacks: {} sampled calls, {} distinct stacks, in {}{lost}",
        t.samples,
        t.stacks,
        if path == Path::new("-") { "standard output".into() } else { path.display().to_string() }
    ))
}

/// One table: the operations that happened (kbxscope's five always).
fn table(out: &mut String, title: &str, s: &IoStats) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "{title}");
    let _ = writeln!(out, "  {:<8} {:>10} {:>12}", "op", "events", "time");
    for op in FileOp::EVERY.into_iter().filter(|op| FileOp::ALL.contains(op) || s.count(*op) > 0) {
        let _ = writeln!(out, "  {:<8} {:>10} {:>12}", op.name(), s.count(op), duration(s.time(op)));
    }
    let _ = writeln!(out, "  {:<8} {:>10} {:>12}", "total", s.total_events(), duration(s.total_time()));
    let _ = writeln!(out, "  bytes read: {}", s.bytes_read);
    super::render::lock_waits(out, s);
}

/// `--io-summary=text`: a table per process, then the total.
fn summary_text(r: &Recorded) -> String {
    let mut out = String::new();
    for p in &r.processes {
        let files: Vec<&str> = p.files.iter().map(|f| f.path.as_str()).collect();
        table(&mut out, &format!("record: {} (pid {}): {}", p.program, p.pid, files.join(", ")), &p.stats);
    }
    let n = r.processes.len();
    table(&mut out, &format!("record: total over {n} process{}", if n == 1 { "" } else { "es" }), &r.total());
    out
}
