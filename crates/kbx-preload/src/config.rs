//! The environment, read once per process image (at load, or at the first
//! hook if that comes first) into static buffers, and the watch decision.
//!
//! `KBXSCOPE_RECORD` absent: disabled, every hook is a pass-through.
//! `KBXSCOPE_WATCH`: `:`-separated globs (see `glob.rs`); a pattern without
//! `/` matches the basename of the path as given, one with `/` the absolute
//! path. `KBXSCOPE_RECORD_EVENTS`: event capacity (default 0).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::glob::{basename, glob_match, patterns};
use crate::sys;

/// The default watch list.
pub const DEFAULT_WATCH: &[u8] = b"pubring.kbx:pubring.db:pubring.db-journal:pubring.db-wal:pubring.db-shm";
/// Capacity of the record directory buffer (longer: recording fails).
pub const DIR_MAX: usize = 4096;
/// Capacity of the watch list buffer (longer lists are truncated).
pub const WATCH_MAX: usize = 4096;
/// Largest accepted `KBXSCOPE_RECORD_EVENTS`.
pub const EVENTS_MAX: u64 = 1 << 24;
/// Largest stack sampling interval.
pub const STACK_EVERY_MAX: u64 = 1 << 32;

/// A byte buffer written once by the initialising thread, before `STATE`
/// becomes `READY` (release), and only read after observing `READY` (acquire).
struct OnceBuf<const N: usize> {
    data: UnsafeCell<[u8; N]>,
    len: AtomicUsize,
}

// SAFETY: see the type's doc: writes happen-before every read via STATE.
unsafe impl<const N: usize> Sync for OnceBuf<N> {}

impl<const N: usize> OnceBuf<N> {
    const fn new() -> Self {
        OnceBuf { data: UnsafeCell::new([0; N]), len: AtomicUsize::new(0) }
    }

    /// Only called by the thread that won the UNINIT → INIT transition.
    fn fill(&self, s: &[u8]) -> bool {
        let n = s.len().min(N - 1);
        // SAFETY: only the initialising thread writes, before STATE = READY;
        // no reader looks at the buffer before that.
        let d = unsafe { &mut *self.data.get() };
        d[..n].copy_from_slice(&s[..n]);
        d[n] = 0;
        self.len.store(n, Ordering::Relaxed);
        n == s.len()
    }

    /// Only called after STATE == READY was observed.
    fn get(&self) -> &[u8] {
        // SAFETY: the buffer is no longer written once STATE is READY.
        let d = unsafe { &*self.data.get() };
        &d[..self.len.load(Ordering::Relaxed).min(N)]
    }
}

const UNINIT: u32 = 0;
const INIT: u32 = 1;
const READY: u32 = 2;

static STATE: AtomicU32 = AtomicU32::new(UNINIT);
static ENABLED: AtomicBool = AtomicBool::new(false);
static DIR_OK: AtomicBool = AtomicBool::new(false);
static HAS_ABS: AtomicBool = AtomicBool::new(false);
static EVENTS: AtomicUsize = AtomicUsize::new(0);
static MONOTONIC: AtomicBool = AtomicBool::new(false);
static STACK_EVERY: AtomicU64 = AtomicU64::new(0);
static DIR: OnceBuf<DIR_MAX> = OnceBuf::new();
static WATCH: OnceBuf<WATCH_MAX> = OnceBuf::new();

fn env(name: &[u8]) -> Option<&'static [u8]> {
    // SAFETY: name is NUL-terminated; getenv only scans environ (no locks, no
    // allocation). The returned string is copied at once.
    let p = unsafe { libc::getenv(name.as_ptr().cast()) };
    // SAFETY: getenv returns NULL or a NUL-terminated string.
    let n = unsafe { sys::cstr_len(p, 1 << 20) }?;
    // SAFETY: p is valid for n bytes (just measured).
    Some(unsafe { std::slice::from_raw_parts(p as *const u8, n) })
}

fn parse_dec(s: &[u8]) -> u64 {
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return 0;
        }
        v = v.saturating_mul(10).saturating_add((b - b'0') as u64);
    }
    v
}

/// Read the environment once. Safe to call from anywhere, any number of times.
pub fn init() {
    if STATE.load(Ordering::Acquire) == READY {
        return;
    }
    if STATE.compare_exchange(UNINIT, INIT, Ordering::Acquire, Ordering::Acquire).is_err() {
        // Another thread (or an interrupted frame of this one) is reading the
        // environment: wait a bounded time, then go on disabled for this call.
        for _ in 0..10_000 {
            if STATE.load(Ordering::Acquire) == READY {
                return;
            }
            sys::raw_yield();
        }
        return;
    }
    let _g = sys::ErrnoGuard::new();
    if let Some(dir) = env(b"KBXSCOPE_RECORD\0") {
        DIR_OK.store(!dir.is_empty() && DIR.fill(dir), Ordering::Relaxed);
        let watch = env(b"KBXSCOPE_WATCH\0").unwrap_or(DEFAULT_WATCH);
        WATCH.fill(watch);
        HAS_ABS.store(patterns(WATCH.get()).any(|p| p.contains(&b'/')), Ordering::Relaxed);
        let ev = env(b"KBXSCOPE_RECORD_EVENTS\0").map_or(0, parse_dec).min(EVENTS_MAX);
        EVENTS.store(ev as usize, Ordering::Relaxed);
        MONOTONIC.store(env(b"KBXSCOPE_RECORD_CLOCK\0") == Some(b"monotonic"), Ordering::Relaxed);
        STACK_EVERY
            .store(env(b"KBXSCOPE_RECORD_STACKS\0").map_or(0, parse_dec).min(STACK_EVERY_MAX), Ordering::Relaxed);
        ENABLED.store(true, Ordering::Relaxed);
    }
    STATE.store(READY, Ordering::Release);
}

/// Whether recording is on (`KBXSCOPE_RECORD` set). One load once initialised.
#[inline(always)]
pub fn enabled() -> bool {
    if STATE.load(Ordering::Acquire) != READY {
        init();
        if STATE.load(Ordering::Acquire) != READY {
            return false;
        }
    }
    ENABLED.load(Ordering::Relaxed)
}

/// The record directory, if usable.
pub fn record_dir() -> Option<&'static [u8]> {
    if enabled() && DIR_OK.load(Ordering::Relaxed) {
        Some(DIR.get())
    } else {
        None
    }
}

/// Whether `KBXSCOPE_RECORD_CLOCK=monotonic` asks for the kernel's clock
/// on every read (see [`crate::clock`]).
pub fn clock_forced_monotonic() -> bool {
    MONOTONIC.load(Ordering::Relaxed)
}

/// `KBXSCOPE_RECORD_STACKS`: sample the stack of every Nth watched call
/// (0: no stacks, no stack region).
pub fn stack_every() -> u64 {
    STACK_EVERY.load(Ordering::Relaxed)
}

/// Event capacity.
pub fn event_capacity() -> usize {
    EVENTS.load(Ordering::Relaxed)
}

/// Whether `path` (as given to a call relative to `dirfd`) is watched.
/// Needs `enabled()` to have returned true. A basename pattern costs no
/// system call; an absolute-path pattern against a relative path costs one
/// raw `getcwd` (dirfd == AT_FDCWD) or one raw `readlinkat` of
/// `/proc/self/fd/N`. errno is preserved.
pub fn watched(dirfd: libc::c_int, path: &[u8]) -> bool {
    watched_in(WATCH.get(), HAS_ABS.load(Ordering::Relaxed), dirfd, path)
}

fn watched_in(list: &[u8], has_abs: bool, dirfd: libc::c_int, path: &[u8]) -> bool {
    let base = basename(path);
    if patterns(list).any(|p| !p.contains(&b'/') && glob_match(p, base)) {
        return true;
    }
    if !has_abs {
        return false;
    }
    if path.first() == Some(&b'/') {
        return patterns(list).any(|p| p.contains(&b'/') && glob_match(p, path));
    }
    let _g = sys::ErrnoGuard::new();
    let mut buf = [0u8; 4096];
    let n = if dirfd == libc::AT_FDCWD {
        let r = sys::raw_getcwd(&mut buf);
        if r <= 0 {
            return false;
        }
        r as usize - 1 // getcwd counts the NUL
    } else {
        let mut link = [0u8; 32];
        let mut p = 0;
        sys::push(&mut link, &mut p, b"/proc/self/fd/");
        sys::push_dec(&mut link, &mut p, dirfd as u64);
        sys::push(&mut link, &mut p, b"\0");
        let r = sys::raw_readlinkat(libc::AT_FDCWD, &link[..p], &mut buf);
        if r <= 0 {
            return false;
        }
        r as usize
    };
    let mut pos = n.min(buf.len());
    sys::push(&mut buf, &mut pos, b"/");
    let before = pos;
    sys::push(&mut buf, &mut pos, path);
    if pos - before != path.len() {
        return false; // too long to resolve
    }
    let abs = &buf[..pos];
    patterns(list).any(|p| p.contains(&b'/') && glob_match(p, abs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basename_patterns() {
        assert!(watched_in(DEFAULT_WATCH, false, libc::AT_FDCWD, b"/h/pubring.kbx"));
        assert!(watched_in(DEFAULT_WATCH, false, libc::AT_FDCWD, b"pubring.kbx"));
        assert!(watched_in(DEFAULT_WATCH, false, 5, b"public-keys.d/pubring.db-wal"));
        assert!(!watched_in(DEFAULT_WATCH, false, libc::AT_FDCWD, b"/h/pubring.kbx.lock"));
        assert!(!watched_in(DEFAULT_WATCH, false, libc::AT_FDCWD, b"/h/pubring.kbx~"));
    }

    #[test]
    fn absolute_patterns_resolve_relative_paths() {
        let cwd = std::env::current_dir().unwrap();
        let pat = format!("{}/*.kbx", cwd.display());
        assert!(watched_in(pat.as_bytes(), true, libc::AT_FDCWD, b"x.kbx"));
        assert!(watched_in(pat.as_bytes(), true, libc::AT_FDCWD, format!("{}/y.kbx", cwd.display()).as_bytes()));
        assert!(!watched_in(pat.as_bytes(), true, libc::AT_FDCWD, b"x.kbx.lock"));
        assert!(!watched_in(b"/nowhere/*.kbx", true, libc::AT_FDCWD, b"x.kbx"));
        // dirfd resolution through /proc/self/fd
        let d = std::fs::File::open("/tmp").unwrap();
        use std::os::fd::AsRawFd;
        sys::set_errno(libc::EXDEV);
        assert!(watched_in(b"/tmp/*.kbx", true, d.as_raw_fd(), b"a.kbx"));
        assert_eq!(sys::errno(), libc::EXDEV);
        assert!(!watched_in(b"/tmp/*.kbx", true, 9999, b"a.kbx"));
    }

    #[test]
    fn dec() {
        assert_eq!(parse_dec(b"1000"), 1000);
        assert_eq!(parse_dec(b"x"), 0);
        assert_eq!(parse_dec(b""), 0);
    }
}
