//! The writer: this process's record file, created lazily at the first
//! watched event with raw system calls, mapped MAP_SHARED, its descriptor
//! closed at once. All updates are relaxed atomic adds on the mapping, so
//! nothing is buffered: an `_exit`, a crash or a dead collector loses nothing
//! and costs the host nothing.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crate::{config, paths, sys};
use kbx_record::{self as p, hdr, Op};

const UNINIT: u32 = 0;
const CREATING: u32 = 1;
const READY: u32 = 2;
const FAILED: u32 = 3;

static STATE: AtomicU32 = AtomicU32::new(UNINIT);
static BASE: AtomicUsize = AtomicUsize::new(0);
static SIZE: AtomicUsize = AtomicUsize::new(0);
static EVENT_CAP: AtomicUsize = AtomicUsize::new(0);

/// Called in a fork child (pthread_atfork handler): only atomic stores. The
/// parent's mapping stays mapped but is never written again; the child
/// creates its own file at its first watched event.
pub fn after_fork_child() {
    BASE.store(0, Ordering::Relaxed);
    STATE.store(UNINIT, Ordering::Release);
    sys::reset_tid();
}

fn word(base: usize, off: usize) -> &'static AtomicU64 {
    // SAFETY: base is a live, never-unmapped, page-aligned MAP_SHARED mapping
    // of SIZE bytes; every caller passes an 8-aligned offset inside the fixed
    // layout (< EVENTS_OFFSET, an event index checked against capacity, or
    // a stack-region offset, used only when the region exists).
    unsafe { &*((base + off) as *const AtomicU64) }
}

fn byte(base: usize, off: usize) -> &'static AtomicU8 {
    // SAFETY: as in `word`, for a single byte inside the header or file table.
    unsafe { &*((base + off) as *const AtomicU8) }
}

/// The mapping's address, creating the file if this is the first event.
fn base() -> Option<usize> {
    match STATE.load(Ordering::Acquire) {
        READY => return Some(BASE.load(Ordering::Relaxed)),
        FAILED => return None,
        _ => {}
    }
    if STATE.compare_exchange(UNINIT, CREATING, Ordering::Acquire, Ordering::Acquire).is_ok() {
        return match create() {
            Some(b) => {
                BASE.store(b, Ordering::Relaxed);
                STATE.store(READY, Ordering::Release);
                for i in 0..p::FILE_SLOTS {
                    publish_slot_at(b, i);
                }
                Some(b)
            }
            None => {
                STATE.store(FAILED, Ordering::Release);
                None
            }
        };
    }
    // Another thread is creating it: wait a bounded time (a signal handler
    // interrupting the creator on its own thread must not spin forever).
    for _ in 0..10_000 {
        match STATE.load(Ordering::Acquire) {
            READY => return Some(BASE.load(Ordering::Relaxed)),
            CREATING => sys::raw_yield(),
            _ => return None,
        }
    }
    None
}

fn create() -> Option<usize> {
    let dir = config::record_dir()?;
    let pid = sys::raw_getpid();
    let cap = config::event_capacity();
    let every = config::stack_every();
    let size = p::total_size(cap) + if every > 0 { p::stacks::STACKS_SIZE } else { 0 };
    let mut name = [0u8; config::DIR_MAX + 96];
    let mut fd = -1;
    for attempt in 0..8u64 {
        let mut pos = 0;
        sys::push(&mut name, &mut pos, dir);
        sys::push(&mut name, &mut pos, b"/");
        sys::push_dec(&mut name, &mut pos, pid as u64);
        sys::push(&mut name, &mut pos, b"-");
        sys::push_dec(&mut name, &mut pos, sys::now() + attempt);
        sys::push(&mut name, &mut pos, b"-");
        sys::push_dec(&mut name, &mut pos, sys::tid() as u64);
        sys::push(&mut name, &mut pos, b".kbxrec\0");
        if pos > name.len() - 1 {
            return None;
        }
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        fd = sys::raw_openat(libc::AT_FDCWD, &name[..pos], flags, 0o644) as i64;
        if fd >= 0 || sys::errno() != libc::EEXIST {
            break;
        }
    }
    if fd < 0 {
        return None;
    }
    // SAFETY: plain syscalls on the descriptor just opened; mmap returns a
    // fresh mapping or MAP_FAILED, checked below.
    let addr = unsafe {
        if libc::syscall(libc::SYS_ftruncate, fd, size as libc::c_long) != 0 {
            sys::raw_close(fd);
            return None;
        }
        libc::syscall(
            libc::SYS_mmap,
            0usize,
            size,
            (libc::PROT_READ | libc::PROT_WRITE) as libc::c_long,
            libc::MAP_SHARED as libc::c_long,
            fd,
            0usize,
        )
    };
    sys::raw_close(fd);
    if addr == -1 || addr == 0 {
        return None;
    }
    let b = addr as usize;
    SIZE.store(size, Ordering::Relaxed);
    EVENT_CAP.store(cap, Ordering::Relaxed);
    let w = |off: usize, v: u64| word(b, off).store(v, Ordering::Relaxed);
    w(hdr::VERSION, p::VERSION);
    w(hdr::TOTAL_SIZE, size as u64);
    w(hdr::HEADER_SIZE, p::HEADER_SIZE as u64);
    w(hdr::SLOTS_OPS, p::FILE_SLOTS as u64 | (p::NUM_OPS as u64) << 32);
    w(hdr::BUCKETS, p::LAT_BUCKETS as u64 | (p::SIZE_BUCKETS as u64) << 32);
    w(hdr::EVENT_CAP, cap as u64);
    w(hdr::PID, pid as u64);
    w(hdr::PPID, sys::raw_getppid() as u64);
    w(hdr::MONO_NS, sys::monotonic());
    w(hdr::REAL_NS, sys::realtime());
    let mut exe = [0u8; 4096];
    let n = sys::raw_readlinkat(libc::AT_FDCWD, b"/proc/self/exe\0", &mut exe);
    let prog: &[u8] = if n > 0 { crate::glob::basename(&exe[..n as usize]) } else { b"?" };
    let prog = &prog[..prog.len().min(hdr::PROG_MAX)];
    for (i, c) in prog.iter().enumerate() {
        byte(b, hdr::PROG + i).store(*c, Ordering::Relaxed);
    }
    w(hdr::PROG_LEN, prog.len() as u64);
    if every > 0 {
        w(hdr::STACK_EVERY, every);
        w(hdr::MAPS_LEN, copy_maps(b + p::stacks::region_offset(cap)) as u64);
        w(hdr::STACK_SLOTS, p::stacks::STACK_SLOTS as u64);
    }
    let magic = u64::from_le_bytes(p::MAGIC);
    word(b, hdr::MAGIC).store(magic, Ordering::Release);
    Some(b)
}

/// Copy `/proc/self/maps` (at most MAPS_MAX bytes) to `dst` in the
/// mapping with raw system calls; the bytes copied.
fn copy_maps(dst: usize) -> usize {
    let fd = sys::raw_openat(libc::AT_FDCWD, b"/proc/self/maps\0", libc::O_RDONLY | libc::O_CLOEXEC, 0);
    if fd < 0 {
        return 0;
    }
    let mut done = 0;
    while done < p::stacks::MAPS_MAX {
        // SAFETY: dst + done .. dst + MAPS_MAX lies inside the stack region
        // of the mapping just created (STACKS_SIZE > MAPS_MAX), which only
        // this thread writes until the magic is stored.
        let buf = unsafe { std::slice::from_raw_parts_mut((dst + done) as *mut u8, p::stacks::MAPS_MAX - done) };
        let n = sys::raw_read(fd as libc::c_int, buf);
        if n <= 0 {
            break;
        }
        done += n as usize;
    }
    sys::raw_close(fd);
    // Only whole lines: a line cut at MAPS_MAX is dropped.
    // SAFETY: as above, the bytes just written.
    let text = unsafe { std::slice::from_raw_parts(dst as *const u8, done) };
    text.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1)
}

fn publish_slot_at(b: usize, i: usize) {
    let off = p::file_slot_offset(i);
    paths::copy_slot(
        i,
        |k, c| byte(b, off + 16 + k).store(c, Ordering::Relaxed),
        |n| {
            word(b, off + 8).store(n, Ordering::Relaxed);
            word(b, off).store(p::SLOT_READY, Ordering::Release);
        },
    );
}

/// The local slot (1-based) of a watched path, creating the record file and
/// the file slot as needed. None (and the loss counted) if the table is full.
pub fn slot_for_path(path: &[u8]) -> Option<u16> {
    let b = base()?;
    let s = paths::slot_for(path, |i| publish_slot_at(b, i));
    if s.is_none() {
        word(b, hdr::LOST_FILES).fetch_add(1, Ordering::Relaxed);
    }
    s
}

/// Count a watched fd that found no fd-table entry.
pub fn lost_fd() {
    if let Some(b) = base() {
        word(b, hdr::LOST_FDS).fetch_add(1, Ordering::Relaxed);
    }
}

/// One measured call.
#[derive(Clone, Copy)]
pub struct Call {
    /// Local slot, 1-based.
    pub slot: u16,
    /// Operation.
    pub op: Op,
    /// Start, CLOCK_MONOTONIC ns.
    pub t0: u64,
    /// End, CLOCK_MONOTONIC ns.
    pub t1: u64,
    /// Descriptor.
    pub fd: i32,
    /// Offset argument or -1.
    pub offset: i64,
    /// Return value.
    pub result: i64,
    /// Bytes transferred (size histogram).
    pub bytes: u64,
    /// Whether it failed.
    pub failed: bool,
}

fn cell(b: usize, slot: u16, op: Op, i: usize) -> Option<&'static AtomicU64> {
    let s = (slot as usize).checked_sub(1)?;
    if s >= p::FILE_SLOTS || op.index() >= p::NUM_OPS || i >= p::CELL_WORDS {
        return None;
    }
    Some(word(b, p::cell_offset(s, op.index()) + i * 8))
}

/// Add `v` to word `i` of the cell of `(slot, op)`, if there is one.
fn add(b: usize, slot: u16, op: Op, i: usize, v: u64) {
    if let Some(a) = cell(b, slot, op, i) {
        a.fetch_add(v, Ordering::Relaxed);
    }
}

/// What every call adds to its cell: one call, an error if it failed, its
/// bytes and their size bucket.
fn count(b: usize, slot: u16, op: Op, bytes: u64, failed: bool) {
    add(b, slot, op, p::CELL_COUNT, 1);
    if failed {
        add(b, slot, op, p::CELL_ERRORS, 1);
    }
    if bytes > 0 {
        add(b, slot, op, p::CELL_BYTES, bytes);
    }
    add(b, slot, op, p::CELL_SIZE0 + p::size_bucket(bytes), 1);
}

/// Record one measured call (and its event, if events are on).
pub fn call(c: Call) {
    let Some(b) = base() else { return };
    let ns = c.t1.saturating_sub(c.t0);
    count(b, c.slot, c.op, c.bytes, c.failed);
    add(b, c.slot, c.op, p::CELL_TOTAL_NS, ns);
    // Read first: a new minimum or maximum is rare, and fetch_max is a
    // compare-and-swap loop.
    if let Some(a) = cell(b, c.slot, c.op, p::CELL_MIN_INV) {
        if u64::MAX - ns > a.load(Ordering::Relaxed) {
            a.fetch_max(u64::MAX - ns, Ordering::Relaxed);
        }
    }
    if let Some(a) = cell(b, c.slot, c.op, p::CELL_MAX_NS) {
        if ns > a.load(Ordering::Relaxed) {
            a.fetch_max(ns, Ordering::Relaxed);
        }
    }
    add(b, c.slot, c.op, p::CELL_LAT0 + p::lat_bucket(ns), 1);
    let event = || [c.t0, ns, c.fd as i64 as u64, c.offset as u64, c.result as u64];
    sample_and_push(b, (c.slot, c.op), c.bytes, ns, event);
}

/// Record one inferred call (a system call stdio made inside glibc): counted,
/// with its byte count and size bucket, but no latency.
pub fn inferred(slot: u16, op: Op, bytes: u64, failed: bool) {
    let Some(b) = base() else { return };
    add(b, slot, op, p::CELL_INFERRED, 1);
    count(b, slot, op, bytes, failed);
    // Inferred events: duration 0, fd -1, result = bytes (or -1 if failed).
    let event = || [sys::now(), 0, u64::MAX, u64::MAX, if failed { u64::MAX } else { bytes }];
    sample_and_push(b, (slot, op), bytes, 0, event);
}

/// The stack sample of a call that took `ns` (when stacks are on), then
/// its event (when events are on, and only then made): start, duration,
/// descriptor, offset and result, in the next slot of the event area, its
/// tag stored last (`Release`) so a reader sees the event whole; past the
/// area's end, a lost event counted.
fn sample_and_push(b: usize, (slot, op): (u16, Op), bytes: u64, ns: u64, event: impl FnOnce() -> [u64; 5]) {
    let cap = EVENT_CAP.load(Ordering::Relaxed);
    sample_stack(b, cap, op, bytes, ns);
    if cap == 0 {
        return;
    }
    let i = word(b, hdr::EVENT_NEXT).fetch_add(1, Ordering::Relaxed) as usize;
    if i >= cap {
        word(b, hdr::LOST_EVENTS).fetch_add(1, Ordering::Relaxed);
        return;
    }
    let off = p::event_offset(i);
    for (k, v) in event().into_iter().enumerate() {
        word(b, off + 8 + 8 * k).store(v, Ordering::Relaxed);
    }
    let tag = p::event_tag(op.index(), (slot as usize).saturating_sub(1), sys::tid());
    word(b, off).store(tag, Ordering::Release);
}

/// With stacks on, every Nth call's stack (one relaxed load when off).
#[inline(always)]
fn sample_stack(b: usize, cap: usize, op: Op, bytes: u64, ns: u64) {
    if crate::stack_sampler::due(config::stack_every()) && word(b, hdr::STACK_SLOTS).load(Ordering::Relaxed) != 0 {
        crate::stack_sampler::sample(|off| word(b, off), cap, op, bytes, ns);
    }
}
