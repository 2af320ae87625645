//! What every hook shares: the unwatched fast path, timing, errno
//! preservation and recording.

use std::sync::atomic::{AtomicU64, Ordering};

use libc::{c_char, c_int, c_void};

use crate::config;
use crate::fdtable::FDS;
use crate::sys::{self, ErrnoGuard};
use crate::writer::{self, Call};
use kbx_record::Op;

/// Fetch a real function or fail the call with ENOSYS.
macro_rules! real_or {
    ($f:ident) => {
        match $crate::real::$f() {
            Some(f) => f,
            None => {
                $crate::sys::set_errno(libc::ENOSYS);
                return;
            }
        }
    };
    ($f:ident, $fail:expr) => {
        match $crate::real::$f() {
            Some(f) => f,
            None => {
                $crate::sys::set_errno(libc::ENOSYS);
                return $fail;
            }
        }
    };
}
pub(crate) use real_or;

/// A return value: how to log it and whether it means failure.
pub trait Ret: Copy {
    /// As a signed 64-bit value.
    fn as_i64(self) -> i64;
    /// Whether the call failed.
    fn failed(self) -> bool {
        self.as_i64() == -1
    }
}

impl Ret for c_int {
    fn as_i64(self) -> i64 {
        self as i64
    }
}

impl Ret for isize {
    fn as_i64(self) -> i64 {
        self as i64
    }
}

impl Ret for i64 {
    fn as_i64(self) -> i64 {
        self
    }
}

impl Ret for *mut c_void {
    fn as_i64(self) -> i64 {
        self as i64
    }
    fn failed(self) -> bool {
        self == libc::MAP_FAILED
    }
}

/// Bytes from a size-returning call: the positive result.
pub fn pos_bytes<R: Ret>(r: R) -> u64 {
    let v = r.as_i64();
    if v > 0 {
        v as u64
    } else {
        0
    }
}

/// No byte count.
pub fn no_bytes<R: Ret>(_: R) -> u64 {
    0
}

/// A call on descriptor `fd`: if it is not watched, one load and a branch,
/// then the real call; otherwise timed and recorded, errno preserved.
#[inline(always)]
pub fn on_fd<R: Ret>(fd: c_int, op: Op, offset: i64, bytes: fn(R) -> u64, f: impl FnOnce() -> R) -> R {
    let slot = FDS.get(fd);
    if slot == 0 {
        return f();
    }
    let t0 = sys::now();
    let r = f();
    let t1 = sys::now();
    let _g = ErrnoGuard::new();
    writer::call(Call { slot, op, t0, t1, fd, offset, result: r.as_i64(), bytes: bytes(r), failed: r.failed() });
    r
}

/// The path argument as bytes, unless it cannot be read: NULL, no NUL within
/// PATH_MAX, or the call failed with EFAULT (the pointer is bad).
///
/// # Safety
/// `path` is the pointer the host passed to a path-taking libc function that
/// did not fail with EFAULT, so it points to a readable C string.
pub unsafe fn path_bytes<'a>(path: *const c_char, errno_after: c_int, failed: bool) -> Option<&'a [u8]> {
    if failed && errno_after == libc::EFAULT {
        return None;
    }
    // SAFETY: per the function contract.
    let n = unsafe { sys::cstr_len(path, libc::PATH_MAX as usize) }?;
    // SAFETY: n readable bytes, just measured.
    Some(unsafe { std::slice::from_raw_parts(path as *const u8, n) })
}

/// The local slot of a watched path (None: not watched, or no room).
///
/// # Safety
/// As for [`path_bytes`].
pub unsafe fn watched_slot(dirfd: c_int, path: *const c_char, errno_after: c_int, failed: bool) -> Option<u16> {
    // SAFETY: forwarded contract.
    let p = unsafe { path_bytes(path, errno_after, failed) }?;
    if !config::watched(dirfd, p) {
        return None;
    }
    writer::slot_for_path(p)
}

/// Make `fd` watched with `slot`, or clear it (slot 0); counts a full table.
pub fn track(fd: c_int, slot: u16) {
    if fd >= 0 && !FDS.set(fd, slot) {
        writer::lost_fd();
    }
}

/// A call that opens `path` relative to `dirfd` and returns a descriptor.
///
/// # Safety
/// `path` is the host's argument to an open-like libc function.
#[inline(always)]
pub unsafe fn on_open(dirfd: c_int, path: *const c_char, f: impl FnOnce() -> c_int) -> c_int {
    if !config::enabled() {
        return f();
    }
    let t0 = sys::now();
    let r = f();
    let t1 = sys::now();
    let g = ErrnoGuard::new();
    let e = sys::errno();
    // SAFETY: path is the argument the real call just accepted.
    match unsafe { watched_slot(dirfd, path, e, r < 0) } {
        Some(slot) => {
            let c = Call { slot, op: Op::Open, t0, t1, fd: r, offset: -1, result: r as i64, bytes: 0, failed: r < 0 };
            writer::call(c);
            track(r, slot);
        }
        // A descriptor number can come back after a close we could not see
        // (inside glibc): make sure it is not taken for a watched one.
        None => track(r, 0),
    }
    drop(g);
    r
}

/// A call on a path (stat, access, ...): recorded if the path is watched.
///
/// # Safety
/// As for [`on_open`].
#[inline(always)]
pub unsafe fn on_path(dirfd: c_int, path: *const c_char, op: Op, f: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { on_path_then(dirfd, path, op, f, |_, _, _, _| {}) }
}

/// [`on_path`], then `then(slot, t1, result, errno)` for a watched path.
///
/// # Safety
/// As for [`on_open`].
#[inline(always)]
unsafe fn on_path_then(
    dirfd: c_int,
    path: *const c_char,
    op: Op,
    f: impl FnOnce() -> c_int,
    then: impl FnOnce(u16, u64, c_int, c_int),
) -> c_int {
    if !config::enabled() {
        return f();
    }
    let t0 = sys::now();
    let r = f();
    let t1 = sys::now();
    let _g = ErrnoGuard::new();
    let e = sys::errno();
    // SAFETY: path is the argument the real call just accepted.
    if let Some(slot) = unsafe { watched_slot(dirfd, path, e, r < 0) } {
        writer::call(Call { slot, op, t0, t1, fd: dirfd, offset: -1, result: r as i64, bytes: 0, failed: r < 0 });
        then(slot, t1, r, e);
    }
    r
}

/// Per file slot: when the first `link` to it that found the name taken
/// (`EEXIST`) started, CLOCK_MONOTONIC ns; 0 when no wait is open.
static WAIT_SINCE: [AtomicU64; kbx_record::FILE_SLOTS + 1] = [const { AtomicU64::new(0) }; kbx_record::FILE_SLOTS + 1];

/// Forget open waits (a fork's child: its parent waits, not it).
pub fn forget_waits() {
    for w in &WAIT_SINCE {
        w.store(0, Ordering::Relaxed);
    }
}

/// [`on_path`] for `link`: `Link` on a watched new name, and a lock
/// wait: a `link` that found the name taken (`EEXIST`, another process
/// holds the lock GnuPG takes so) opens one, the next that succeeds
/// closes it and records `LockWait` with the time between.
///
/// # Safety
/// As for [`on_open`].
#[inline(always)]
pub unsafe fn on_link(dirfd: c_int, path: *const c_char, f: impl FnOnce() -> c_int) -> c_int {
    if !config::enabled() {
        return f();
    }
    let t0 = sys::now();
    let wait = |slot: u16, t1: u64, r: c_int, e: c_int| {
        let Some(since) = WAIT_SINCE.get(usize::from(slot)) else { return };
        if r < 0 && e == libc::EEXIST {
            let _ = since.compare_exchange(0, t0, Ordering::Relaxed, Ordering::Relaxed);
        } else if r == 0 {
            let began = since.swap(0, Ordering::Relaxed);
            if began != 0 {
                let op = Op::LockWait;
                writer::call(Call {
                    slot,
                    op,
                    t0: began,
                    t1,
                    fd: dirfd,
                    offset: -1,
                    result: 0,
                    bytes: 0,
                    failed: false,
                });
            }
        }
    };
    // SAFETY: forwarded contract.
    unsafe { on_path_then(dirfd, path, Op::Link, f, wait) }
}

/// Whether a `*at` call with `flags` and `path` addresses `dirfd` itself.
///
/// # Safety
/// `path` is NULL or a readable C string.
pub unsafe fn is_empty_path(path: *const c_char, flags: c_int) -> bool {
    // SAFETY: per the contract; only the first byte is read.
    flags & libc::AT_EMPTY_PATH != 0 && (path.is_null() || unsafe { *path } == 0)
}

/// Define an interposer for a call whose first argument is a descriptor.
macro_rules! fd_hook {
    ($name:ident ( $fd:ident $(, $a:ident : $t:ty)* ) -> $ret:ty, $op:expr, off = $off:expr, bytes = $bytes:expr, fail = $fail:expr) => {
        #[doc = concat!("Interposed `", stringify!($name), "`: counted as `", stringify!($op), "` on a watched fd.")]
        ///
        /// # Safety
        /// Same contract as the libc function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($fd: libc::c_int $(, $a: $t)*) -> $ret {
            let real = $crate::hook::real_or!($name, $fail);
            // SAFETY: the host's arguments, passed on unchanged.
            $crate::hook::on_fd($fd, $op, $off, $bytes, || unsafe { real($fd $(, $a)*) })
        }
    };
}
pub(crate) use fd_hook;

/// A `*at` call that addresses `dirfd` itself with an empty path and
/// AT_EMPTY_PATH (counted as `op_fd` if dirfd is watched) or a path
/// (counted as `op_path` if the path is watched).
///
/// # Safety
/// `path` is the host's argument to a `*at` libc function.
#[inline(always)]
pub unsafe fn on_at(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    ops: (Op, Op),
    f: impl FnOnce() -> c_int,
) -> c_int {
    if !config::enabled() {
        return f();
    }
    let t0 = sys::now();
    let r = f();
    let t1 = sys::now();
    let _g = ErrnoGuard::new();
    let e = sys::errno();
    if r < 0 && e == libc::EFAULT {
        return r;
    }
    let (op_fd, op_path) = ops;
    // SAFETY: the call did not fail with EFAULT, so path is NULL or readable.
    let slot = if unsafe { is_empty_path(path, flags) } {
        Some(FDS.get(dirfd)).filter(|&s| s != 0).map(|s| (s, op_fd))
    } else {
        // SAFETY: as above.
        unsafe { watched_slot(dirfd, path, e, r < 0) }.map(|s| (s, op_path))
    };
    if let Some((slot, op)) = slot {
        writer::call(Call { slot, op, t0, t1, fd: dirfd, offset: -1, result: r as i64, bytes: 0, failed: r < 0 });
    }
    r
}
