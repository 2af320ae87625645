//! `record`'s kernel event source: the BPF program of
//! `src/record/bpf/attach.bpf.c` loaded with aya, for processes that run
//! already (`record --pid`, `--name`, the GnuPG daemons serving PROGRAM's
//! home) and statically linked programs, which the interposer cannot
//! reach.
//!
//! The programs are attached to raw tracepoints through links that are
//! file descriptors of this process: they detach when [`Attached`] is
//! dropped, when kbxscope exits, and when it is killed. Nothing is pinned.
//! The watched processes are never stopped or signalled.

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use aya::maps::{Array, HashMap, MapData, PerCpuHashMap, RingBuf};
use aya::programs::{Program, RawTracePoint, TracePoint};
use aya::{Ebpf, EbpfLoader};

use kbxscope::record::kernel::{
    self, Cell, Event, Pattern, CELL_KEY_SIZE, CELL_SIZE, PATH_LEN, PATTERNS, PATTERN_SIZE,
};
use kbxscope::record::{KernelRecording, Lost};

use super::procfs;

/// The compiled BPF program (built from `attach.bpf.c` by `.ci/bpf.sh`,
/// which CI runs to check that this is what the source compiles to).
static OBJECT: &[u8] = aya::include_bytes_aligned!("../record/bpf/attach.bpf.o");

/// File ids user space gives descriptors found open at attach (the kernel
/// program counts its own from 0).
const USER_IDS: u32 = 1 << 31;

/// The raw tracepoints' programs and where they attach.
const RAW_PROGRAMS: [(&str, &str); 4] = [
    ("sys_enter", "sys_enter"),
    ("sys_exit", "sys_exit"),
    ("on_fork", "sched_process_fork"),
    ("on_exec", "sched_process_exec"),
];

/// The system calls the kernel program counts, as their tracepoints name
/// them (`syscalls/sys_enter_NAME`), for `KBXSCOPE_ATTACH_PROBES=syscalls`.
const SYSCALLS: [&str; 39] = [
    "read",
    "write",
    "open",
    "close",
    "newstat",
    "newfstat",
    "newlstat",
    "lseek",
    "mmap",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "access",
    "dup",
    "dup2",
    "fcntl",
    "fsync",
    "fdatasync",
    "ftruncate",
    "rename",
    "creat",
    "link",
    "unlink",
    "openat",
    "newfstatat",
    "unlinkat",
    "renameat",
    "linkat",
    "faccessat",
    "dup3",
    "preadv",
    "pwritev",
    "renameat2",
    "preadv2",
    "statx",
    "close_range",
    "openat2",
    "faccessat2",
];

/// Where the system calls are seen: the raw tracepoints `sys_enter` and
/// `sys_exit` (the default: every call of every process takes the traced
/// path while attached, and stops at the first array lookup), or each
/// counted call's own syscall tracepoint (`KBXSCOPE_ATTACH_PROBES=syscalls`,
/// which needs tracefs mounted: other calls pay nothing, the counted ones
/// the perf event's record). `benches/attach-overhead.sh` measures both.
fn syscall_tracepoints() -> bool {
    std::env::var_os("KBXSCOPE_ATTACH_PROBES").is_some_and(|v| v == "syscalls")
}

/// The size of the ring buffer of per-call events, bytes: 4 MiB, or
/// `KBXSCOPE_ATTACH_RING_KIB` (for a busy machine's trace, or the test that
/// fills it); one page when no trace wants events.
fn ring_bytes(trace_events: bool) -> u32 {
    if !trace_events {
        return kernel::ring_bytes(Some(4));
    }
    kernel::ring_bytes(std::env::var("KBXSCOPE_ATTACH_RING_KIB").ok().and_then(|v| v.parse().ok()))
}

/// A process's flag in the kernel's `pids`: its children are watched too
/// (every watched process's are, as `strace -f -p` follows them).
const FOLLOW: u32 = 1;

/// The loaded and attached kernel program.
pub struct Attached {
    ebpf: Ebpf,
    next_user_id: u32,
    programs: BTreeMap<u32, (u32, String)>,
    events: Option<EventReader>,
}

/// The thread that drains the ring buffer while the trace wants events.
struct EventReader {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
    got: Arc<Mutex<Vec<Event>>>,
}

/// Why the kernel event source cannot be used, in one line: what is
/// missing and how to get it.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The kernel refused for want of privilege.
    #[error(
        "eBPF is not available: the kernel refused (it needs CAP_BPF and CAP_PERFMON, or root, and a kernel not locked down)"
    )]
    Denied {
        /// What was refused.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The kernel refused for another reason (no BTF, an old kernel, …).
    #[error("eBPF is not available: {source}")]
    Kernel {
        /// What was refused.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The committed object lacks a program or map kbxscope needs.
    #[error("the BPF object has no {0}")]
    Missing(String),
    /// A map of the object is not what kbxscope expects of it.
    #[error("BPF map {name}: {source}")]
    Map {
        /// The map.
        name: &'static str,
        /// aya's error.
        #[source]
        source: aya::maps::MapError,
    },
    /// A program of the object is not of the type kbxscope expects.
    #[error("BPF program {name}: {source}")]
    Program {
        /// The program.
        name: &'static str,
        /// aya's error.
        #[source]
        source: aya::programs::ProgramError,
    },
}

impl AttachError {
    /// The kernel's refusal `e`: [`AttachError::Denied`] when anything
    /// in its chain is EPERM or EACCES.
    fn kernel(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        let mut denied = false;
        let mut at: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(err) = at {
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                denied |= io.kind() == std::io::ErrorKind::PermissionDenied
                    || matches!(io.raw_os_error(), Some(libc::EPERM | libc::EACCES));
            }
            at = err.source();
        }
        let source = Box::new(e);
        if denied {
            AttachError::Denied { source }
        } else {
            AttachError::Kernel { source }
        }
    }
}

/// Program `name` of the object, as the type it is, loaded into the
/// kernel (verified).
macro_rules! loaded {
    ($ebpf:expr, $name:expr, $ty:ty) => {{
        let program: &mut $ty = $ebpf
            .program_mut($name)
            .ok_or_else(|| AttachError::Missing(format!("program {}", $name)))?
            .try_into()
            .map_err(|source| AttachError::Program { name: $name, source })?;
        program.load().map_err(AttachError::kernel)?;
        program
    }};
}

impl Attached {
    /// Load the program for the file names `patterns` (at most
    /// [`PATTERNS`]) and attach it; with `trace_events`, per-call events
    /// are read from its ring buffer until [`Attached::finish`].
    ///
    /// # Errors
    /// The kernel refuses the program or a map (one line: [`AttachError`]).
    pub fn start(patterns: &[Pattern], trace_events: bool) -> Result<Attached, AttachError> {
        let trace = u32::from(trace_events);
        let mut ebpf = EbpfLoader::new()
            .override_global("trace_events", &trace, true)
            .map_max_entries("events", ring_bytes(trace_events))
            .load(OBJECT)
            .map_err(AttachError::kernel)?;
        {
            let map = |source| AttachError::Map { name: "patterns", source };
            let patterns_map = ebpf.map_mut("patterns").ok_or_else(|| AttachError::Missing("map patterns".into()))?;
            let mut table: Array<_, [u8; PATTERN_SIZE]> = Array::try_from(patterns_map).map_err(map)?;
            for (i, p) in patterns.iter().take(PATTERNS).enumerate() {
                table.set(i as u32, p.value(), 0).map_err(map)?;
            }
        }
        let per_syscall = syscall_tracepoints();
        for (name, tracepoint) in RAW_PROGRAMS {
            if per_syscall && name.starts_with("sys_") {
                continue;
            }
            let program = loaded!(ebpf, name, RawTracePoint);
            program.attach(tracepoint).map_err(AttachError::kernel)?;
        }
        if per_syscall {
            for (name, phase) in [("tp_enter", "sys_enter_"), ("tp_exit", "sys_exit_")] {
                let program = loaded!(ebpf, name, TracePoint);
                for call in SYSCALLS {
                    program.attach("syscalls", &format!("{phase}{call}")).map_err(AttachError::kernel)?;
                }
            }
        }
        let events = if trace_events {
            let events = ebpf.take_map("events").ok_or_else(|| AttachError::Missing("map events".into()))?;
            let ring = RingBuf::try_from(events).map_err(|source| AttachError::Map { name: "events", source })?;
            Some(EventReader::start(ring))
        } else {
            None
        };
        Ok(Attached { ebpf, next_user_id: USER_IDS, programs: BTreeMap::new(), events })
    }

    /// Watch process `pid` and the children it forks from now on, with the
    /// watched files it has open now (from `/proc/PID/fd`). Whether it ran.
    pub fn watch_pid(&mut self, pid: u32, patterns: &[Pattern]) -> bool {
        let Some(info) = procfs::process_info(pid) else { return false };
        self.programs.insert(pid, info);
        if let Ok(mut pids) = HashMap::<_, u32, u32>::try_from(self.ebpf.map_mut("pids").expect("pids map")) {
            let _ = pids.insert(pid, FOLLOW, 0);
        }
        // Its bit last: the kernel counts from the moment it is set. (The
        // kernel sets bits of the same word atomically; this read and
        // write of a word could only lose a bit the kernel set in between
        // for a process it saw exec or fork in the same instant.)
        if let Ok(mut bits) = Array::<_, u64>::try_from(self.ebpf.map_mut("pidbits").expect("pidbits map")) {
            let word = bits.get(&(pid >> 6), 0).unwrap_or(0);
            let _ = bits.set(pid >> 6, word | 1 << (pid & 63), 0);
        }
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return true };
        for entry in dir.flatten() {
            let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            let Ok(target) = std::fs::read_link(entry.path()) else { continue };
            let bytes = target.as_os_str().as_encoded_bytes();
            if patterns.iter().any(|p| p.matches(bytes)) {
                self.open_before(pid, fd, bytes);
            }
        }
        true
    }

    /// A watched file process `pid` had open on `fd` before the attach.
    fn open_before(&mut self, pid: u32, fd: i32, path: &[u8]) {
        let Some(key) = kernel::key_of_path(path) else { return };
        let Ok(mut paths) = HashMap::<_, [u8; PATH_LEN], u32>::try_from(self.ebpf.map_mut("paths").expect("paths map"))
        else {
            return;
        };
        let id = match paths.get(&key, 0) {
            Ok(id) => id,
            Err(_) => {
                let id = self.next_user_id;
                self.next_user_id += 1;
                if paths.insert(key, id, 0).is_err() {
                    return;
                }
                id
            }
        };
        let mut fd_key = [0u8; 8];
        fd_key[..4].copy_from_slice(&pid.to_ne_bytes());
        fd_key[4..].copy_from_slice(&fd.to_ne_bytes());
        if let Ok(mut fds) = HashMap::<_, [u8; 8], u32>::try_from(self.ebpf.map_mut("fds").expect("fds map")) {
            let _ = fds.insert(fd_key, id, 0);
        }
    }

    /// Watch every process that runs program `name` (its first 15 bytes,
    /// as the kernel keeps them) from its exec on, with its children.
    pub fn watch_comm(&mut self, name: &str) {
        let mut key = [0u8; kernel::NAME_LEN];
        let b = procfs::comm(name).as_bytes();
        key[..b.len()].copy_from_slice(b);
        if let Ok(mut comms) =
            HashMap::<_, [u8; kernel::NAME_LEN], u32>::try_from(self.ebpf.map_mut("comms").expect("comms map"))
        {
            let _ = comms.insert(key, FOLLOW, 0);
        }
    }

    /// The processes watched now (those the kernel added on fork or exec too).
    pub fn watched(&self) -> Vec<u32> {
        HashMap::<_, u32, u32>::try_from(self.ebpf.map("pids").expect("pids map"))
            .map(|m| m.keys().flatten().collect())
            .unwrap_or_default()
    }

    /// Name a process the kernel added (fork, exec) while it still runs.
    fn note_programs(&mut self) {
        for pid in self.watched() {
            if let std::collections::btree_map::Entry::Vacant(e) = self.programs.entry(pid) {
                if let Some(info) = procfs::process_info(pid) {
                    e.insert(info);
                }
            }
        }
    }

    /// Detach and read what was counted.
    pub fn finish(mut self) -> KernelRecording {
        // The links go first: nothing is counted while the maps are read.
        for (_, program) in self.ebpf.programs_mut() {
            let _ = match program {
                Program::RawTracePoint(p) => p.unload(),
                Program::TracePoint(p) => p.unload(),
                _ => Ok(()),
            };
        }
        self.note_programs();
        let mut out = KernelRecording::default();
        if let Some(reader) = self.events.take() {
            out.events = reader.finish();
        }
        if let Ok(cells) = PerCpuHashMap::<_, [u8; CELL_KEY_SIZE], [u8; CELL_SIZE]>::try_from(
            self.ebpf.map("cells").expect("cells map"),
        ) {
            out.cells = cells
                .iter()
                .flatten()
                .filter_map(|(k, per_cpu)| Cell::decode(&k, &kernel::sum_cpus(&per_cpu)))
                .collect();
        }
        if let Ok(paths) = HashMap::<_, [u8; PATH_LEN], u32>::try_from(self.ebpf.map("paths").expect("paths map")) {
            out.paths = paths.iter().flatten().map(|(k, id)| (id, kernel::path_of_key(&k))).collect();
        }
        if let Ok(lost) = Array::<_, u64>::try_from(self.ebpf.map("lost").expect("lost map")) {
            let at = |i: u32| lost.get(&i, 0).unwrap_or(0);
            out.lost = Lost {
                files: at(kernel::lost::FILES) + at(kernel::lost::CELLS),
                fds: at(kernel::lost::FDS),
                events: 0,
                ring: at(kernel::lost::EVENTS),
            };
        }
        // The kernel's names (from fork and exec) are the latest.
        if let Ok(procs) = HashMap::<_, u32, [u8; 24]>::try_from(self.ebpf.map("procs").expect("procs map")) {
            for (pid, p) in procs.iter().flatten() {
                let ppid = u32::from_ne_bytes([p[0], p[1], p[2], p[3]]);
                self.programs.insert(pid, (ppid, kernel::path_of_key(&p[8..])));
            }
        }
        for c in &out.cells {
            let info = self.programs.get(&c.pid).cloned().unwrap_or_else(|| (0, format!("pid {}", c.pid)));
            out.programs.entry(c.pid).or_insert(info);
        }
        out
    }
}

impl EventReader {
    fn start(mut ring: RingBuf<MapData>) -> EventReader {
        let stop = Arc::new(AtomicBool::new(false));
        let got = Arc::new(Mutex::new(Vec::new()));
        let (s, g) = (Arc::clone(&stop), Arc::clone(&got));
        let thread = std::thread::spawn(move || loop {
            let done = s.load(Ordering::Acquire);
            let mut batch = Vec::new();
            while let Some(item) = ring.next() {
                if let Some(e) = Event::decode(&item) {
                    batch.push(e);
                }
            }
            g.lock().unwrap_or_else(PoisonError::into_inner).extend(batch);
            if done {
                break;
            }
            let fd = ring.as_fd();
            let mut fds = [rustix::event::PollFd::new(&fd, rustix::event::PollFlags::IN)];
            let timeout = rustix::event::Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
            let _ = rustix::event::poll(&mut fds, Some(&timeout));
        });
        EventReader { stop, thread, got }
    }

    fn finish(self) -> Vec<Event> {
        self.stop.store(true, Ordering::Release);
        let _ = self.thread.join();
        std::mem::take(&mut *self.got.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
