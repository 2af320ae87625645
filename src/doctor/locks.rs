//! The locks of a GnuPG home, judged: who wrote each, whether that process
//! lives, whether GnuPG will clear it by itself, and whether any live
//! process can hold it at all.
//!
//! GnuPG's dotlock (facts from `common/dotlock.c`): a lock `NAME.lock` is
//! a hard link to the holder's own file `.#lk0x<handle>.<host>.<pid>` in
//! the same directory, which holds the pid (ten characters, padded) and
//! the host name, each on its line. A process that finds a lock reads it;
//! it removes it as stale only when the host is its own and `kill(pid, 0)`
//! says there is no such process. Any other lock it waits for: a lock of
//! another host (a container's previous life, a shared volume) or of a
//! recycled pid is never cleared.
//!
//! kbxscope's rule, stricter than "the pid is gone": a lock is **stale**
//! only when no live process can hold it — its host is this one and its
//! pid is gone, or the process at its pid started after the lock was
//! written (a recycled pid), or its host is another while the home lies on
//! a local file system and no process here has the store open. A lock
//! whose writer runs is **live**, never stale; one of another host on a
//! network file system stays undecided.

use std::path::{Path, PathBuf};

/// A process, as the system shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Process {
    /// Its pid (in this pid namespace).
    pub pid: u32,
    /// Its program's name.
    pub program: String,
    /// Its command line, arguments joined by spaces.
    pub command_line: String,
    /// When it started, Unix seconds.
    pub started: Option<i64>,
    /// Its state letter (`R` running, `S` sleeping, `D` waiting on I/O, …).
    pub state: char,
}

/// What `doctor` asks of the system's processes (the command line answers
/// from `/proc`; tests answer from a table).
pub trait Processes {
    /// The live process `pid` of this pid namespace.
    fn get(&self, pid: u32) -> Option<Process>;
    /// The processes that have any of `files` open.
    fn holding(&self, files: &[PathBuf]) -> Vec<Process>;
    /// The processes listening on any of the Unix sockets `sockets`, with
    /// the socket each serves.
    fn serving(&self, sockets: &[PathBuf]) -> Vec<(Process, PathBuf)>;
}

/// What a lock file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockContent {
    /// The pid on its first line.
    pub pid: Option<u32>,
    /// The host on its second line.
    pub host: Option<String>,
}

/// Read a lock file's bytes as dotlock writes them: `%10d\n%s\n`.
pub fn parse(bytes: &[u8]) -> LockContent {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.split('\n');
    let pid = lines.next().and_then(|l| l.trim().parse::<u32>().ok()).filter(|p| *p > 0);
    let host = lines.next().map(str::trim).filter(|h| !h.is_empty() && h.len() <= 255).map(str::to_string);
    let host = if pid.is_some() { host } else { None };
    LockContent { pid, host }
}

/// A lock of the home and what it was found to be.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Lock {
    /// The lock file.
    pub path: PathBuf,
    /// The pid it names.
    pub pid: Option<u32>,
    /// The host it names.
    pub host: Option<String>,
    /// When it was written, Unix seconds.
    pub written: Option<i64>,
    /// The process at `pid` on this host, if it lives.
    pub process: Option<Process>,
    /// Whether the writer lives (`None`: cannot be known from here).
    pub alive: Option<bool>,
    /// Whether no live process can hold it.
    pub stale: bool,
    /// Whether GnuPG removes it by itself at its next try.
    pub cleared_by_gnupg: bool,
    /// Processes here that have the locked file open.
    pub holders: Vec<Process>,
    /// Processes waiting for it: their own lock files lie beside it, and
    /// they are not its writer.
    pub waiters: Vec<Process>,
    /// Another lock of the home its live writer is itself waiting for (a
    /// chain, or GnuPG's "(deadlock?)").
    pub holder_waits_for: Option<PathBuf>,
    /// Why it is what it is, in words.
    pub why: String,
}

/// What the judgement needs to know beside the lock's content.
pub struct Context<'a> {
    /// This host's name.
    pub host: &'a str,
    /// The home lies on a file system other hosts may share.
    pub network: bool,
    /// The files the lock guards (the store; the trust database).
    pub guarded: &'a [PathBuf],
    /// The own files of lock takers (`.#lk0x…`) in the lock's directory.
    pub own_files: &'a [PathBuf],
}

/// Mark each live lock whose writer is itself among another lock's
/// waiters.
pub fn chain(locks: &mut [Lock]) {
    let waiting: Vec<(u32, PathBuf)> =
        locks.iter().flat_map(|l| l.waiters.iter().map(|w| (w.pid, l.path.clone()))).collect();
    for l in locks.iter_mut() {
        if let Some(p) = l.process.as_ref().filter(|_| l.alive == Some(true)) {
            l.holder_waits_for =
                waiting.iter().find(|(pid, path)| *pid == p.pid && *path != l.path).map(|(_, at)| at.clone());
        }
    }
}

/// The pid and host a taker's own file `.#lk0x<handle>.<host>.<pid>` names.
pub fn own_file_owner(name: &str) -> Option<(String, u32)> {
    let rest = name.strip_prefix(".#lk0x")?;
    let (_, rest) = rest.split_once('.')?;
    let (host, pid) = rest.rsplit_once('.')?;
    Some((host.to_string(), pid.parse().ok()?))
}

/// Judge the lock at `path` holding `content`, written at `written`.
pub fn judge(path: &Path, content: &LockContent, written: Option<i64>, cx: &Context<'_>, ps: &dyn Processes) -> Lock {
    let holders = ps.holding(cx.guarded);
    let waiters: Vec<Process> = cx
        .own_files
        .iter()
        .filter_map(|f| own_file_owner(&f.file_name()?.to_string_lossy()))
        .filter(|(host, pid)| host == cx.host && Some(*pid) != content.pid)
        .filter_map(|(_, pid)| ps.get(pid))
        .collect();
    let ours = content.host.as_deref() == Some(cx.host);
    let process = content.pid.filter(|_| ours).and_then(|pid| ps.get(pid));
    let mut lock = Lock {
        path: path.to_path_buf(),
        pid: content.pid,
        host: content.host.clone(),
        written,
        process: process.clone(),
        alive: None,
        stale: false,
        cleared_by_gnupg: false,
        holders,
        waiters,
        holder_waits_for: None,
        why: String::new(),
    };
    let (Some(pid), Some(host)) = (content.pid, content.host.as_deref()) else {
        lock.why = "its contents are not a pid and a host name: GnuPG cannot tell who holds it".into();
        lock.stale = lock.holders.is_empty() && !cx.network;
        return lock;
    };
    if ours {
        match &process {
            None => {
                lock.alive = Some(false);
                lock.stale = true;
                lock.cleared_by_gnupg = true;
                lock.why = format!("no process {pid} runs on this host (in this pid namespace): GnuPG removes the lock at its next try");
            }
            Some(p) if p.started.zip(written).is_some_and(|(s, w)| s > w + 1) => {
                lock.alive = Some(false);
                lock.stale = true;
                lock.why = format!(
                    "pid {pid} is now {} (started after the lock was written): the writer is gone, its pid recycled, and GnuPG waits for it",
                    p.program
                );
            }
            Some(p) => {
                lock.alive = Some(true);
                lock.why = format!("held by {} (pid {pid}), which runs", p.program);
            }
        }
    } else if !lock.holders.is_empty() {
        lock.why = format!(
            "written on host {host}, while {} here has the locked file open",
            lock.holders.iter().map(|p| format!("{} ({})", p.program, p.pid)).collect::<Vec<_>>().join(", ")
        );
    } else if cx.network {
        lock.why = format!(
            "written by pid {pid} on host {host}; the home is on a network file system, where that host may still hold it"
        );
    } else {
        lock.stale = true;
        lock.why = format!(
            "written by pid {pid} on host {host}, not this host ({}): the home is on a local file system and no process here has the locked file open; GnuPG never clears another host's lock",
            cx.host
        );
    }
    lock
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Table(Vec<Process>, Vec<PathBuf>);

    impl Processes for Table {
        fn get(&self, pid: u32) -> Option<Process> {
            self.0.iter().find(|p| p.pid == pid).cloned()
        }
        fn holding(&self, files: &[PathBuf]) -> Vec<Process> {
            if files.iter().any(|f| self.1.contains(f)) {
                self.0.clone()
            } else {
                Vec::new()
            }
        }
        fn serving(&self, _: &[PathBuf]) -> Vec<(Process, PathBuf)> {
            Vec::new()
        }
    }

    fn process(pid: u32, started: i64) -> Process {
        Process { pid, program: "gpg".into(), command_line: "gpg --import".into(), started: Some(started), state: 'S' }
    }

    fn cx<'a>(guarded: &'a [PathBuf], own: &'a [PathBuf]) -> Context<'a> {
        Context { host: "here", network: false, guarded, own_files: own }
    }

    #[test]
    fn dotlock_contents_are_read() {
        assert_eq!(parse(b"      4242\nhere\n"), LockContent { pid: Some(4242), host: Some("here".into()) });
        assert_eq!(parse(b"garbage\x00\xff"), LockContent { pid: None, host: None });
        assert_eq!(parse(b""), LockContent { pid: None, host: None });
        assert_eq!(own_file_owner(".#lk0x00005000.box.a.b.77"), Some(("box.a.b".into(), 77)));
        assert_eq!(own_file_owner("pubring.kbx.lock"), None);
    }

    #[test]
    fn a_dead_pid_on_this_host_is_stale_and_cleared_by_gnupg() {
        let t = Table(vec![], vec![]);
        let l = judge(Path::new("x.lock"), &parse(b"99\nhere\n"), Some(100), &cx(&[], &[]), &t);
        assert!(l.stale && l.cleared_by_gnupg && l.alive == Some(false));
    }

    #[test]
    fn a_live_writer_is_never_stale() {
        let t = Table(vec![process(99, 50)], vec![]);
        let l = judge(Path::new("x.lock"), &parse(b"99\nhere\n"), Some(100), &cx(&[], &[]), &t);
        assert!(!l.stale && l.alive == Some(true));
        assert_eq!(l.process.unwrap().program, "gpg");
    }

    #[test]
    fn a_recycled_pid_is_stale_but_not_cleared() {
        let t = Table(vec![process(99, 500)], vec![]);
        let l = judge(Path::new("x.lock"), &parse(b"99\nhere\n"), Some(100), &cx(&[], &[]), &t);
        assert!(l.stale && !l.cleared_by_gnupg);
    }

    #[test]
    fn another_hosts_lock_is_stale_only_when_nobody_here_has_the_file_open() {
        let store = vec![PathBuf::from("pubring.kbx")];
        let none = Table(vec![], vec![]);
        let l = judge(Path::new("x.lock"), &parse(b"7\nbuildkitsandbox\n"), Some(1), &cx(&store, &[]), &none);
        assert!(l.stale && !l.cleared_by_gnupg && l.alive.is_none());
        let open = Table(vec![process(5, 1)], store.clone());
        let l = judge(Path::new("x.lock"), &parse(b"7\nbuildkitsandbox\n"), Some(1), &cx(&store, &[]), &open);
        assert!(!l.stale && l.holders.len() == 1);
        let mut shared = cx(&store, &[]);
        shared.network = true;
        assert!(!judge(Path::new("x.lock"), &parse(b"7\nother\n"), Some(1), &shared, &none).stale);
    }

    #[test]
    fn a_holder_waiting_for_another_lock_is_marked() {
        let t = Table(vec![process(99, 50), process(120, 60)], vec![]);
        let own = [PathBuf::from(".#lk0x0000.here.99"), PathBuf::from(".#lk0x0001.here.120")];
        // 99 holds a.lock and waits for b.lock, which 120 holds.
        let a = judge(Path::new("a.lock"), &parse(b"99\nhere\n"), Some(100), &cx(&[], &own), &t);
        let b = judge(Path::new("b.lock"), &parse(b"120\nhere\n"), Some(100), &cx(&[], &own), &t);
        let mut locks = vec![a, b];
        chain(&mut locks);
        assert_eq!(locks[0].holder_waits_for.as_deref(), Some(Path::new("b.lock")));
        assert_eq!(locks[1].holder_waits_for.as_deref(), Some(Path::new("a.lock")));
    }

    #[test]
    fn waiters_are_found_by_their_own_files() {
        let t = Table(vec![process(99, 50), process(120, 60)], vec![]);
        let own = [PathBuf::from(".#lk0x0000.here.99"), PathBuf::from(".#lk0x0001.here.120")];
        let l = judge(Path::new("x.lock"), &parse(b"99\nhere\n"), Some(100), &cx(&[], &own), &t);
        assert_eq!(l.waiters.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![120]);
    }
}
