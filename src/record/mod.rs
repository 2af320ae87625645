//! `kbxscope record`: the calls another program (and its descendants) made
//! on the watched files, read from the records the preloaded interposer
//! (`crates/kbx-preload`) left behind, decoded with the record format's
//! crate (`kbx_record`, `crates/kbx-record`, see its `PROTOCOL.md`).
//!
//! Pure functions over bytes: [`preload`] is the interposer embedded at
//! build time, [`elf`] tells a static binary (which cannot be interposed)
//! from a dynamic one, and [`Recorded::from_records`] sums the decoded
//! records per process (a pid that ran several images owns one record per
//! image) and per file, mapping the interposer's operations onto
//! [`FileOp`]: the open family → `open`; `read`, `__read_chk`, `pread`,
//! `readv`, `preadv` → `read`; `lseek` → `seek`; `close`, `close_range` →
//! `close`; `fstat`, `stat`, `statx` → `stat`; and `write`, `mmap`, `dup`,
//! `access`, `truncate`, `sync` under their own names. The interposer's own
//! columns (`pread`, `statx`, `fopen`, `stdio_read`, …) stay visible in
//! [`Process::calls`]; [`profile`] makes `--stacks`' speedscope profile of
//! the sampled call stacks. The command line runs the program and prints.

pub mod elf;
pub mod kernel;
#[cfg(target_os = "linux")]
pub mod preload;
pub mod profile;

use std::collections::BTreeMap;
use std::time::Duration;

use kbx_record::{Op, OpStats, Record};
use serde::Serialize;

use crate::events::{FileEvent, FileOp, FileStats, IoStats, Origin};

/// The files watched unless `--watch` says otherwise: the keybox with the
/// files GnuPG updates it through (its temporary copy, backup and lock
/// file), and keyboxd's SQLite database with its lock file (keyboxd's
/// dotlock), journal, WAL and shared memory.
pub const DEFAULT_WATCH: &[&str] = &[
    "pubring.kbx",
    "pubring.kbx.tmp",
    "pubring.kbx~",
    "pubring.kbx.lock",
    "pubring.db",
    "pubring.db.lock",
    "pubring.db-journal",
    "pubring.db-wal",
    "pubring.db-shm",
];

/// The interposer's upper bound on `KBXSCOPE_RECORD_EVENTS`.
pub const MAX_EVENTS: u64 = 1 << 24;

/// The operation an interposer column counts as, if it counts system
/// calls (the stdio columns count library calls: `None`).
pub(crate) fn file_op(op: Op) -> Option<FileOp> {
    Some(match op {
        Op::Open => FileOp::Open,
        Op::Close | Op::CloseRange => FileOp::Close,
        Op::Read | Op::Pread | Op::Readv | Op::Preadv => FileOp::Read,
        Op::Write | Op::Pwrite | Op::Writev => FileOp::Write,
        Op::Lseek => FileOp::Seek,
        Op::Fstat | Op::Stat | Op::Statx => FileOp::Stat,
        Op::Mmap => FileOp::Mmap,
        Op::Dup | Op::FcntlDup => FileOp::Dup,
        Op::Ftruncate => FileOp::Truncate,
        Op::Fsync | Op::Fdatasync => FileOp::Sync,
        Op::Access => FileOp::Access,
        Op::Rename => FileOp::Rename,
        Op::Unlink => FileOp::Unlink,
        Op::Link => FileOp::Link,
        Op::Fopen | Op::Fclose | Op::StdioRead | Op::StdioSeek | Op::LockWait => return None,
    })
}

/// One recorded process (all its images).
#[derive(Debug, Clone)]
pub struct Process {
    /// Process id.
    pub pid: u32,
    /// Parent process id when its first record was made.
    pub ppid: u32,
    /// The program's name (its last image's executable).
    pub program: String,
    /// Every call on every watched file, with histograms.
    pub stats: IoStats,
    /// Per watched file, by path.
    pub files: Vec<FileStats>,
    /// The interposer's own columns (`read`, `pread`, `fstat`, `statx`,
    /// `fopen`, `stdio_read`, …), non-zero ones only.
    pub calls: BTreeMap<&'static str, u64>,
    /// Records (program images) of this pid.
    pub images: usize,
}

/// A keybox maintenance pass a recorded process made for nothing: GnuPG's
/// `keybox_compress` copied the keybox into its temporary file and removed
/// the copy, as nothing was to be dropped (which leaves the maintenance
/// stamp old, so the next start copies again). Found by the `unlink` of a
/// `*.kbx.tmp`, which GnuPG makes only there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintenancePass {
    /// The process.
    pub pid: u32,
    /// Its program.
    pub program: String,
    /// The temporary file.
    pub tmp: String,
    /// How many times.
    pub times: u64,
    /// Bytes written to the temporary file in all (its inserts' copies too).
    pub bytes_written: u64,
}

impl Recorded {
    /// The maintenance passes made for nothing, per process and keybox.
    pub fn maintenance_passes(&self) -> Vec<MaintenancePass> {
        let mut out = Vec::new();
        for p in &self.processes {
            for f in p.files.iter().filter(|f| f.path.ends_with(".kbx.tmp")) {
                let times = f.stats.count(FileOp::Unlink);
                if times > 0 {
                    out.push(MaintenancePass {
                        pid: p.pid,
                        program: p.program.clone(),
                        tmp: f.path.clone(),
                        times,
                        bytes_written: f.stats.bytes_written,
                    });
                }
            }
        }
        out
    }
}

/// Events the interposer could not count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lost {
    /// A watched path found no free file slot.
    pub files: u64,
    /// A watched descriptor found no free fd-table entry.
    pub fds: u64,
    /// Per-call events beyond the event region (only the trace lacks them).
    pub events: u64,
    /// Per-call events the kernel's ring buffer had no room for (only the
    /// trace lacks them).
    pub ring: u64,
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallEvent {
    /// Index into [`Recorded::processes`].
    pub process: usize,
    /// Index into that process's [`Process::files`].
    pub file: usize,
    /// The operation.
    pub op: FileOp,
    /// Thread id.
    pub tid: u32,
    /// `CLOCK_MONOTONIC` at the start, ns.
    pub start_ns: u64,
    /// Duration, ns.
    pub dur_ns: u64,
    /// The offset argument, -1 if none.
    pub offset: i64,
    /// The call's result (bytes for reads and writes; negative: failed).
    pub result: i64,
}

/// What the kernel's event source counted ([`kernel`]), for
/// [`Recorded::add_kernel`].
#[derive(Debug, Clone, Default)]
pub struct KernelRecording {
    /// Its cells.
    pub cells: Vec<kernel::Cell>,
    /// Its per-call events.
    pub events: Vec<kernel::Event>,
    /// The path of each file id.
    pub paths: BTreeMap<u32, String>,
    /// Each process's parent and program.
    pub programs: BTreeMap<u32, (u32, String)>,
    /// Calls it could not count (files, descriptors) and events it lost.
    pub lost: Lost,
}

/// Everything recorded in one run.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// By pid.
    pub processes: Vec<Process>,
    /// Lost counters, summed over the records.
    pub lost: Lost,
    /// Per-call events, by start.
    pub events: Vec<CallEvent>,
    /// Sampled call stacks, per process image that has them.
    pub stacks: Vec<profile::ProcessStacks>,
}

/// A representative duration of latency bucket `b` (`[2^b, 2^(b+1))` ns):
/// its geometric middle.
fn bucket_ns(b: usize) -> u64 {
    if b == 0 {
        1
    } else {
        ((1u64 << b) as f64 * std::f64::consts::SQRT_2) as u64
    }
}

/// Add one interposer cell to `s`, as `op`.
fn add_cell(s: &mut IoStats, op: FileOp, c: &OpStats) {
    s.add_counts(op, c.count, c.total_ns);
    if op == FileOp::Read {
        s.bytes_read += c.bytes;
    }
    if op == FileOp::Write {
        s.bytes_written += c.bytes;
    }
    if let Some(h) = &mut s.histograms {
        for (b, n) in c.lat_hist.iter().enumerate().filter(|(_, n)| **n > 0) {
            h.add_durations(op, bucket_ns(b), *n);
        }
        // Inferred calls (stdio's own, deduced) have no latency: the lowest bucket.
        if c.inferred > 0 {
            h.add_durations(op, 0, c.inferred);
        }
        if op == FileOp::Read {
            for (b, n) in c.size_hist.iter().enumerate().filter(|(_, n)| **n > 0) {
                let bytes = if b == 0 { 0 } else { 1u64 << (b - 1) };
                h.add_read_sizes(bytes, *n);
            }
        }
    }
}

impl Recorded {
    /// Sum decoded records per pid and per path.
    pub fn from_records(records: Vec<Record>) -> Recorded {
        let mut out = Recorded::default();
        out.add_records(records);
        out
    }

    /// The index of process `pid` (made with `ppid` and `program` if new).
    fn process(&mut self, pid: u32, ppid: u32, program: &str) -> usize {
        if let Some(at) = self.processes.iter().position(|p| p.pid == pid) {
            return at;
        }
        self.processes.push(Process {
            pid,
            ppid,
            program: program.to_string(),
            stats: IoStats::with_histograms(0),
            files: Vec::new(),
            calls: BTreeMap::new(),
            images: 0,
        });
        self.processes.len() - 1
    }

    /// The index of `path` among process `at`'s files (made if new).
    fn file(&mut self, at: usize, path: &str) -> usize {
        let p = &mut self.processes[at];
        match p.files.iter().position(|x| x.path == path) {
            Some(i) => i,
            None => {
                p.files.push(FileStats { path: path.to_string(), stats: IoStats::new(0) });
                p.files.len() - 1
            }
        }
    }

    /// Order processes by pid and events by start (event indices follow).
    fn sort(&mut self) {
        let mut by_pid: Vec<(usize, Process)> = std::mem::take(&mut self.processes).into_iter().enumerate().collect();
        by_pid.sort_by_key(|(_, p)| p.pid);
        let mut new_index = vec![0; by_pid.len()];
        for (new, (old, _)) in by_pid.iter().enumerate() {
            new_index[*old] = new;
        }
        self.processes = by_pid.into_iter().map(|(_, p)| p).collect();
        for e in &mut self.events {
            e.process = new_index[e.process];
        }
        self.events.sort_by_key(|e| e.start_ns);
    }

    /// Add decoded interposer records, per pid and per path.
    pub fn add_records(&mut self, mut records: Vec<Record>) {
        records.sort_by_key(|r| (r.pid, r.mono_ns));
        for mut r in records {
            let program = String::from_utf8_lossy(&r.program).into_owned();
            if let Some(s) = r.stacks.take() {
                self.stacks.push(profile::ProcessStacks { pid: r.pid, program: program.clone(), stacks: s });
            }
            self.lost.files += r.lost_files;
            self.lost.fds += r.lost_fds;
            self.lost.events += r.lost_events;
            let at = self.process(r.pid, r.ppid, &program);
            self.processes[at].program = program;
            self.processes[at].images += 1;
            // A fork's child inherits its parent's table of watched paths:
            // a path it made no call on is no file of its (an event always
            // comes with its call's count, so no event is on such a path).
            let mut slot_files = BTreeMap::new();
            for f in r.files.iter().filter(|f| !f.ops.is_empty()) {
                let fi = self.file(at, &String::from_utf8_lossy(&f.path));
                slot_files.insert(f.slot, fi);
                let p = &mut self.processes[at];
                for (op, c) in &f.ops {
                    *p.calls.entry(op.name()).or_default() += c.count;
                    if let Some(fop) = file_op(*op) {
                        add_cell(&mut p.stats, fop, c);
                        add_cell(&mut p.files[fi].stats, fop, c);
                    } else if *op == Op::LockWait {
                        for s in [&mut p.stats, &mut p.files[fi].stats] {
                            s.lock_waits.count += c.count;
                            s.lock_waits.time_ns += c.total_ns;
                        }
                    }
                }
            }
            for e in r.events {
                let Some(op) = file_op(e.op) else { continue };
                let file = match slot_files.get(&e.slot) {
                    Some(fi) => *fi,
                    None => self.file(at, ""),
                };
                self.events.push(CallEvent {
                    process: at,
                    file,
                    op,
                    tid: e.tid,
                    start_ns: e.start_ns,
                    dur_ns: e.dur_ns,
                    offset: e.offset,
                    result: e.result,
                });
            }
        }
        self.sort();
    }

    /// Add what the kernel's event source counted: its `cells`, the paths
    /// of its file ids, each process's parent and program, its per-call
    /// events and lost counters. A process the interposer recorded too
    /// gets the kernel's columns beside the interposer's.
    pub fn add_kernel(&mut self, k: KernelRecording) {
        let program = |pid: &u32| k.programs.get(pid).map_or((0, ""), |(ppid, p)| (*ppid, p.as_str()));
        let path = |file: &u32| k.paths.get(file).map_or("", String::as_str);
        for c in &k.cells {
            let (ppid, name) = program(&c.pid);
            let at = self.process(c.pid, ppid, name);
            let fi = self.file(at, path(&c.file));
            let (column, fop) = kernel::OPS[c.op];
            let p = &mut self.processes[at];
            p.images = p.images.max(1);
            *p.calls.entry(column).or_default() += c.stats.count;
            add_cell(&mut p.stats, fop, &c.stats);
            add_cell(&mut p.files[fi].stats, fop, &c.stats);
        }
        // Per event, the process's and the file's index from a map made once.
        let mut index: BTreeMap<(u32, u32), (usize, usize)> = BTreeMap::new();
        for e in &k.events {
            let (process, file) = match index.get(&(e.pid, e.file)) {
                Some(at) => *at,
                None => {
                    let (ppid, name) = program(&e.pid);
                    let at = self.process(e.pid, ppid, name);
                    let fi = self.file(at, path(&e.file));
                    index.insert((e.pid, e.file), (at, fi));
                    (at, fi)
                }
            };
            self.events.push(CallEvent {
                process,
                file,
                op: kernel::OPS[e.op].1,
                tid: e.tid,
                start_ns: e.start_ns,
                dur_ns: e.dur_ns,
                offset: e.offset,
                result: e.result,
            });
        }
        self.lost.files += k.lost.files;
        self.lost.fds += k.lost.fds;
        self.lost.events += k.lost.events;
        self.lost.ring += k.lost.ring;
        self.sort();
    }

    /// The totals over every process.
    pub fn total(&self) -> IoStats {
        let mut t = IoStats::with_histograms(0);
        for p in &self.processes {
            t.merge(&p.stats);
        }
        t
    }

    /// Each per-call event as a [`FileEvent`] (start on `CLOCK_MONOTONIC`).
    pub fn for_each_event(&self, mut f: impl FnMut(&FileEvent<'_>)) {
        for e in &self.events {
            let p = &self.processes[e.process];
            let ok = e.result >= 0;
            let bytes = matches!(e.op, FileOp::Read | FileOp::Write).then_some(e.result).filter(|_| ok);
            f(&FileEvent {
                op: e.op,
                file: &p.files[e.file].path,
                buffer_size: 0,
                offset: u64::try_from(e.offset).ok(),
                bytes: bytes.map(|b| b as u64),
                start: Duration::from_nanos(e.start_ns),
                duration: Duration::from_nanos(e.dur_ns),
                errno: None,
                origin: Origin { pid: p.pid, tid: e.tid, program: &p.program },
            });
        }
    }

    /// The `--io-summary=json` object: the totals in the form of every
    /// command's summary (same keys, same order), plus `processes` (each of
    /// the same form after its `pid` and `program`, with `calls` and
    /// `files`) and `lost` when non-zero.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self.summary()).unwrap_or_default()
    }

    /// What `Recorded::to_json` serializes, in order.
    pub fn summary(&self) -> JsonSummary<'_> {
        JsonSummary {
            total: self.total(),
            processes: self
                .processes
                .iter()
                .map(|p| ProcessSummary {
                    pid: p.pid,
                    program: &p.program,
                    stats: &p.stats,
                    calls: &p.calls,
                    files: p.files.iter().map(|f| FileSummary { path: &f.path, stats: &f.stats }).collect(),
                })
                .collect(),
            lost: (self.lost != Lost::default()).then_some(LostSummary {
                files: self.lost.files,
                fds: self.lost.fds,
                events: self.lost.events,
                ring: self.lost.ring,
            }),
        }
    }
}

/// The `--io-summary=json` form of a recording.
#[derive(Debug, Serialize)]
pub struct JsonSummary<'a> {
    #[serde(flatten)]
    total: IoStats,
    processes: Vec<ProcessSummary<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lost: Option<LostSummary>,
}

#[derive(Debug, Serialize)]
struct ProcessSummary<'a> {
    pid: u32,
    program: &'a str,
    #[serde(flatten)]
    stats: &'a IoStats,
    calls: &'a BTreeMap<&'static str, u64>,
    files: Vec<FileSummary<'a>>,
}

#[derive(Debug, Serialize)]
struct FileSummary<'a> {
    path: &'a str,
    #[serde(flatten)]
    stats: &'a IoStats,
}

#[derive(Debug, Serialize)]
struct LostSummary {
    files: u64,
    fds: u64,
    events: u64,
    ring: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kbx_record::{decode, Encoder};

    #[test]
    fn sums_images_by_pid_and_maps_ops() {
        let mut a = Encoder::new(10, 1, b"sh", 0);
        a.file(0, b"/h/pubring.kbx");
        a.call(0, Op::Open, 100, 0, false);
        let mut b = Encoder::new(10, 1, b"gpg", 2);
        b.file(0, b"/h/pubring.kbx");
        b.call(0, Op::Read, 2000, 8192, false);
        b.call(0, Op::Pread, 3000, 4096, false);
        b.call(0, Op::Statx, 10, 0, false);
        b.call(0, Op::Fstat, 10, 0, false);
        b.call(0, Op::Mmap, 10, 4096, false);
        b.event(&kbx_record::Event {
            op: Op::Read,
            slot: 0,
            tid: 11,
            start_ns: 5,
            dur_ns: 2,
            fd: 3,
            offset: -1,
            result: 8192,
        });
        let mut c = Encoder::new(12, 10, b"gpg-agent", 0);
        c.file(0, b"pubring.kbx");
        c.call(0, Op::Fopen, 1, 0, false);
        let recs = [a, b, c].iter().map(|e| decode(&e.bytes).unwrap()).collect();
        let r = Recorded::from_records(recs);
        assert_eq!(r.processes.len(), 2);
        let p = &r.processes[0];
        assert_eq!((p.pid, p.program.as_str(), p.images), (10, "gpg", 2));
        assert_eq!(p.stats.count(FileOp::Read), 2);
        assert_eq!(p.stats.bytes_read, 8192 + 4096);
        assert_eq!(p.stats.count(FileOp::Stat), 2);
        assert_eq!(p.stats.count(FileOp::Mmap), 1);
        assert_eq!(p.stats.count(FileOp::Open), 1);
        assert_eq!(p.calls["pread"], 1);
        assert_eq!(p.stats.histograms.as_ref().unwrap().durations[FileOp::Read.index()].count(), 2);
        assert_eq!(r.processes[1].stats.total_events(), 0, "stdio calls are not system calls");
        let json = r.to_json();
        assert_eq!(json["events"]["read"], 2);
        assert_eq!(json["events"]["mmap"], 1);
        assert_eq!(json["events"]["total"], 6);
        assert_eq!(json["processes"][0]["program"], "gpg");
        assert_eq!(json["processes"][1]["calls"]["fopen"], 1);
        assert!(json.get("lost").is_none());
        let mut n = 0;
        r.for_each_event(|e| {
            n += 1;
            assert_eq!((e.origin.pid, e.origin.tid, e.bytes), (10, 11, Some(8192)));
        });
        assert_eq!(n, 1);
    }

    #[test]
    fn a_fork_child_lists_only_the_files_it_used() {
        let mut parent = Encoder::new(20, 1, b"gpg", 0);
        parent.file(0, b"/h/pubring.kbx");
        parent.file(1, b"/h/pubring.kbx.lock");
        parent.call(1, Op::LockWait, 900, 0, false);
        parent.call(0, Op::Read, 10, 8192, false);
        let mut child = Encoder::new(21, 20, b"gpg", 0);
        child.file(0, b"/h/pubring.kbx");
        child.file(1, b"/h/pubring.kbx.lock");
        child.call(0, Op::Close, 5, 0, false);
        let recs = [parent, child].iter().map(|e| decode(&e.bytes).unwrap()).collect();
        let r = Recorded::from_records(recs);
        let paths = |i: usize| r.processes[i].files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>();
        assert_eq!(paths(0), ["/h/pubring.kbx", "/h/pubring.kbx.lock"]);
        assert_eq!(paths(1), ["/h/pubring.kbx"], "the inherited lock path is no file of the child's");
        assert_eq!(r.processes[0].files[1].stats.lock_waits.count, 1);
    }

    #[test]
    fn kernel_cells_join_the_interposers_records() {
        let mut a = Encoder::new(10, 1, b"gpg", 0);
        a.file(0, b"/h/pubring.kbx");
        a.call(0, Op::Read, 2000, 8192, false);
        let mut r = Recorded::from_records(vec![decode(&a.bytes).unwrap()]);
        let cell = |pid, file, op: &str, count| kernel::Cell {
            pid,
            file,
            op: kernel::OPS.iter().position(|(n, _)| *n == op).unwrap(),
            stats: OpStats { count, bytes: 4096 * count, ..OpStats::default() },
        };
        let k = KernelRecording {
            cells: vec![cell(7, 0, "pread64", 3), cell(7, 0, "fcntl_lock", 2), cell(7, 1, "newfstatat", 1)],
            events: vec![kernel::Event {
                pid: 7,
                tid: 8,
                op: 5,
                file: 0,
                start_ns: 1,
                dur_ns: 2,
                fd: 3,
                offset: 0,
                result: 4096,
            }],
            paths: [(0, "/h/public-keys.d/pubring.db".to_string()), (1, "/h/public-keys.d/pubring.db-wal".to_string())]
                .into(),
            programs: [(7, (1, "keyboxd".to_string()))].into(),
            lost: Lost { files: 0, fds: 0, events: 1, ring: 0 },
        };
        r.add_kernel(k);
        assert_eq!(
            r.processes.iter().map(|p| (p.pid, p.program.as_str())).collect::<Vec<_>>(),
            [(7, "keyboxd"), (10, "gpg")]
        );
        let kd = &r.processes[0];
        assert_eq!(
            (kd.stats.count(FileOp::Read), kd.stats.count(FileOp::Lock), kd.stats.count(FileOp::Stat)),
            (3, 2, 1)
        );
        assert_eq!(kd.stats.bytes_read, 3 * 4096);
        assert_eq!((kd.calls["pread64"], kd.calls["fcntl_lock"]), (3, 2));
        assert_eq!(kd.files.len(), 2);
        assert_eq!(r.processes[1].stats.count(FileOp::Read), 1, "the interposer's process keeps its counts");
        assert_eq!(r.lost.events, 1);
        let mut seen = Vec::new();
        r.for_each_event(|e| seen.push((e.origin.pid, e.origin.program.to_string(), e.op, e.bytes)));
        assert_eq!(seen, [(7, "keyboxd".to_string(), FileOp::Read, Some(4096))]);
    }

    #[test]
    fn existing_summaries_keep_their_form() {
        let s = IoStats::new(8192);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"buffer_size":8192,"events":{"open":0,"read":0,"seek":0,"close":0,"stat":0,"total":0},"bytes_read":0,"logical_reads":0,"time_ns":{"open":0,"read":0,"seek":0,"close":0,"stat":0,"total":0}}"#
        );
    }
}
