//! Raw system calls, errno, clocks and the cached thread id.
//!
//! Everything the library itself does to the outside world goes through
//! `libc::syscall`, never through the libc wrappers we interpose, so a hook
//! can never re-enter itself or another hook.

use std::cell::Cell;

use libc::{c_int, c_long};

/// The calling thread's errno.
#[inline(always)]
pub fn errno() -> c_int {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    unsafe { *libc::__errno_location() }
}

/// Set the calling thread's errno.
#[inline(always)]
pub fn set_errno(e: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = e }
}

/// Saves errno when made and restores it when dropped: wrap all bookkeeping
/// that follows a real call in one of these.
pub struct ErrnoGuard(c_int);

impl ErrnoGuard {
    /// Save the current errno.
    #[inline(always)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> ErrnoGuard {
        ErrnoGuard(errno())
    }
}

impl Drop for ErrnoGuard {
    #[inline(always)]
    fn drop(&mut self) {
        set_errno(self.0)
    }
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec. glibc's clock_gettime uses the
    // vDSO and is async-signal-safe; we do not interpose it.
    unsafe { libc::clock_gettime(id, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// CLOCK_MONOTONIC in ns, as the hooks read it (see [`crate::clock`]).
#[inline(always)]
pub fn now() -> u64 {
    crate::clock::now()
}

/// CLOCK_MONOTONIC in ns from the kernel (the vDSO).
pub fn monotonic() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in ns.
pub fn realtime() -> u64 {
    clock(libc::CLOCK_REALTIME)
}

thread_local! {
    // Copy type with a const initializer: no lazy registration, no destructor,
    // no allocation, usable at any time including exit and signal handlers.
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// The kernel thread id, cached per thread.
pub fn tid() -> u32 {
    TID.with(|t| {
        let v = t.get();
        if v != 0 {
            return v;
        }
        // SAFETY: gettid takes no arguments and cannot fail.
        let v = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
        t.set(v);
        v
    })
}

/// Forget the cached thread id (in a fork child the thread id changes).
pub fn reset_tid() {
    TID.with(|t| t.set(0));
}

/// Raw openat of a NUL-terminated path (-1 without a NUL). Raw syscall
/// results: -1 means failure (errno set; callers restore it).
pub fn raw_openat(dirfd: c_int, path: &[u8], flags: c_int, mode: c_int) -> c_long {
    if !path.contains(&0) {
        return -1;
    }
    // SAFETY: path is NUL-terminated within the slice.
    unsafe { libc::syscall(libc::SYS_openat, dirfd as c_long, path.as_ptr(), flags as c_long, mode as c_long) }
}

/// Raw close.
pub fn raw_close(fd: c_long) {
    // SAFETY: closes a descriptor this library opened itself.
    unsafe { libc::syscall(libc::SYS_close, fd) };
}

/// Raw read into `buf`; the length or -1.
pub fn raw_read(fd: c_int, buf: &mut [u8]) -> c_long {
    // SAFETY: buf is writable for buf.len() bytes.
    unsafe { libc::syscall(libc::SYS_read, fd as c_long, buf.as_mut_ptr(), buf.len()) }
}

/// Raw lseek; returns the new offset or -1.
pub fn raw_lseek(fd: c_int, off: i64, whence: c_int) -> i64 {
    // SAFETY: lseek has no memory arguments.
    unsafe { libc::syscall(libc::SYS_lseek, fd as c_long, off as c_long, whence as c_long) as i64 }
}

/// Raw readlinkat of a NUL-terminated path into `buf`; the length or -1.
pub fn raw_readlinkat(dirfd: c_int, path: &[u8], buf: &mut [u8]) -> c_long {
    if !path.contains(&0) {
        return -1;
    }
    // SAFETY: path is NUL-terminated within the slice, buf is writable for
    // buf.len() bytes.
    unsafe { libc::syscall(libc::SYS_readlinkat, dirfd as c_long, path.as_ptr(), buf.as_mut_ptr(), buf.len()) }
}

/// Raw getcwd into `buf`; returns the length including the NUL, or -1.
pub fn raw_getcwd(buf: &mut [u8]) -> c_long {
    // SAFETY: buf is writable for buf.len() bytes.
    unsafe { libc::syscall(libc::SYS_getcwd, buf.as_mut_ptr(), buf.len()) }
}

/// Raw getpid.
pub fn raw_getpid() -> u32 {
    // SAFETY: no arguments.
    unsafe { libc::syscall(libc::SYS_getpid) as u32 }
}

/// Raw getppid.
pub fn raw_getppid() -> u32 {
    // SAFETY: no arguments.
    unsafe { libc::syscall(libc::SYS_getppid) as u32 }
}

/// Raw sched_yield.
pub fn raw_yield() {
    // SAFETY: no arguments.
    unsafe { libc::syscall(libc::SYS_sched_yield) };
}

/// Length of a NUL-terminated C string, bounded by `max` (None: no NUL within `max`).
///
/// # Safety
/// `p` must be readable up to its NUL or `max` bytes, whichever comes first.
pub unsafe fn cstr_len(p: *const libc::c_char, max: usize) -> Option<usize> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller guarantees bytes up to the NUL are readable.
    (0..max).find(|&i| unsafe { *p.add(i) } == 0)
}

/// Write the decimal digits of `v` to `out` at `*pos`, advancing it.
pub fn push_dec(out: &mut [u8], pos: &mut usize, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut n = 0;
    loop {
        tmp[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while n > 0 {
        n -= 1;
        push(out, pos, &[tmp[n]]);
    }
}

/// Append bytes to `out` at `*pos` (silently truncating at the end).
pub fn push(out: &mut [u8], pos: &mut usize, s: &[u8]) {
    for &b in s {
        if let Some(slot) = out.get_mut(*pos) {
            *slot = b;
            *pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dec_and_push() {
        let mut b = [0u8; 8];
        let mut p = 0;
        push_dec(&mut b, &mut p, 0);
        push(&mut b, &mut p, b"-");
        push_dec(&mut b, &mut p, 1234567);
        assert_eq!(&b[..p], b"0-123456");
        assert_eq!(p, 8);
    }

    #[test]
    fn errno_guard_restores() {
        set_errno(libc::ENOENT);
        {
            let _g = ErrnoGuard::new();
            set_errno(libc::EBADF);
        }
        assert_eq!(errno(), libc::ENOENT);
    }
}
