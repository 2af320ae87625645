//! What `/proc` says about processes: whether one is alive, its parent and
//! program, the processes running a program or holding a Unix socket. Read
//! only; no process is signalled.

use std::path::Path;

/// The kernel keeps a program's name (`comm`) to 15 bytes.
const COMM_LEN: usize = 15;

/// `name` as the kernel keeps it in a process's `comm`.
pub fn comm(name: &str) -> &str {
    let mut end = name.len().min(COMM_LEN);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// A process's `comm`, state letter and parent, from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(String, char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((head.split_once(" (")?.1.to_string(), state, ppid))
}

/// Whether a process is alive (not a zombie).
pub fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(_, state, _)| state != 'Z' && state != 'X')
}

/// A process's parent and program name (its `comm`), if it runs.
pub fn process_info(pid: u32) -> Option<(u32, String)> {
    stat(pid).map(|(comm, _, ppid)| (ppid, comm))
}

/// Every process, by pid, ascending.
fn pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out: Vec<u32> = dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    out.sort_unstable();
    out
}

/// The processes running program `name` (as `/proc/PID/comm` names it).
pub fn pids_named(name: &str) -> Vec<u32> {
    let want = comm(name);
    pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end_matches('\n') == want)
        })
        .collect()
}

/// The processes that hold the listening Unix socket bound at `socket`:
/// its inodes from `/proc/net/unix`, then every `/proc/PID/fd` that links
/// to `socket:[INODE]` (systemd's socket units included, so callers filter
/// by program).
pub fn socket_holders(socket: &Path) -> Vec<u32> {
    let Ok(table) = std::fs::read_to_string("/proc/net/unix") else { return Vec::new() };
    let want = socket.as_os_str().to_string_lossy();
    let links: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() >= 8 && cols[7] == want).then(|| format!("socket:[{}]", cols[6]))
        })
        .collect();
    if links.is_empty() {
        return Vec::new();
    }
    pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                fds.flatten().any(|f| {
                    std::fs::read_link(f.path()).is_ok_and(|t| links.iter().any(|l| t.as_os_str() == l.as_str()))
                })
            })
        })
        .collect()
}

/// What `doctor` asks of a process: its program, command line, start
/// time (Unix seconds) and state, if it is alive in this pid namespace.
pub fn process(pid: u32) -> Option<kbxscope::doctor::locks::Process> {
    let (program, state, _) = stat(pid).filter(|(_, state, _)| *state != 'Z' && *state != 'X')?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let command_line =
        cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).map(String::from_utf8_lossy).collect::<Vec<_>>().join(" ");
    Some(kbxscope::doctor::locks::Process { pid, program, command_line, started: started(pid), state })
}

/// When process `pid` started, Unix seconds: its start in clock ticks
/// after boot (`/proc/PID/stat` field 22) plus the boot time (`btime` of
/// `/proc/stat`); the kernel's clock tick is 100 Hz on Linux's ABI.
fn started(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    let ticks: i64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: i64 = boot.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
    Some(btime + ticks / 100)
}

/// The processes that have any of `files` open (by `/proc/PID/fd`).
pub fn holding(files: &[std::path::PathBuf]) -> Vec<u32> {
    if files.is_empty() {
        return Vec::new();
    }
    pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .is_ok_and(|fds| fds.flatten().any(|f| std::fs::read_link(f.path()).is_ok_and(|t| files.contains(&t))))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_is_cut_at_15_bytes_on_a_char_boundary() {
        assert_eq!(comm("keyboxd"), "keyboxd");
        assert_eq!(comm("a-very-long-program-name"), "a-very-long-pro");
        assert_eq!(comm("ééééééééé"), "ééééééé");
    }

    #[test]
    fn this_process_is_alive_and_named() {
        let me = std::process::id();
        assert!(alive(me));
        let (ppid, _) = process_info(me).unwrap();
        assert!(ppid > 0);
    }
}
