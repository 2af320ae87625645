//! close, close_range, closefrom, dup, dup2, dup3, fcntl, fcntl64, mmap,
//! mmap64: the calls that end, copy or map a descriptor.

use libc::{c_int, c_long, c_uint, c_void, off64_t, off_t, size_t};

use crate::config;
use crate::fdtable::FDS;
use crate::hook::{real_or, track};
use crate::sys::{self, ErrnoGuard};
use crate::writer::{self, Call};
use kbx_record::Op;

fn rec(slot: u16, op: Op, t0: u64, t1: u64, fd: c_int, result: i64, bytes: u64) {
    writer::call(Call { slot, op, t0, t1, fd, offset: -1, result, bytes, failed: result == -1 });
}

/// Interposed `close`: a watched fd is un-watched (before the real call, so
/// that a concurrent open reusing the number is not clobbered) and counted.
///
/// # Safety
/// Same contract as libc's `close`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let real = real_or!(close, -1);
    let slot = FDS.get(fd);
    if slot == 0 {
        // SAFETY: the host's argument, passed on unchanged.
        return unsafe { real(fd) };
    }
    FDS.set(fd, 0);
    let t0 = sys::now();
    // SAFETY: as above.
    let r = unsafe { real(fd) };
    let t1 = sys::now();
    let _g = ErrnoGuard::new();
    rec(slot, Op::Close, t0, t1, fd, r as i64, 0);
    r
}

/// After a successful dup-like call: the new fd inherits the old fd's
/// watch (or loses a stale one); counted as `op` if the old fd is watched.
fn after_dup(slot: u16, op: Op, t0: u64, t1: u64, oldfd: c_int, r: c_int) {
    let _g = ErrnoGuard::new();
    if slot != 0 {
        rec(slot, op, t0, t1, oldfd, r as i64, 0);
    }
    if r >= 0 && r != oldfd && (slot != 0 || FDS.get(r) != 0) {
        track(r, slot);
    }
}

/// Interposed `dup`.
///
/// # Safety
/// Same contract as libc's `dup`.
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    let real = real_or!(dup, -1);
    let slot = FDS.get(fd);
    let t0 = if slot != 0 { sys::now() } else { 0 };
    // SAFETY: the host's argument, passed on unchanged.
    let r = unsafe { real(fd) };
    if slot != 0 || (r >= 0 && FDS.get(r) != 0) {
        after_dup(slot, Op::Dup, t0, sys::now(), fd, r);
    }
    r
}

/// Interposed `dup2`.
///
/// # Safety
/// Same contract as libc's `dup2`.
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let real = real_or!(dup2, -1);
    let slot = FDS.get(old);
    let t0 = if slot != 0 { sys::now() } else { 0 };
    // SAFETY: the host's arguments, passed on unchanged.
    let r = unsafe { real(old, new) };
    if slot != 0 || (r >= 0 && FDS.get(r) != 0) {
        after_dup(slot, Op::Dup, t0, sys::now(), old, r);
    }
    r
}

/// Interposed `dup3`.
///
/// # Safety
/// Same contract as libc's `dup3`.
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let real = real_or!(dup3, -1);
    let slot = FDS.get(old);
    let t0 = if slot != 0 { sys::now() } else { 0 };
    // SAFETY: the host's arguments, passed on unchanged.
    let r = unsafe { real(old, new, flags) };
    if slot != 0 || (r >= 0 && FDS.get(r) != 0) {
        after_dup(slot, Op::Dup, t0, sys::now(), old, r);
    }
    r
}

/// The shared body of fcntl / fcntl64. The third argument is variadic in C;
/// on x86-64 it arrives in `%rdx` whatever its type (int, long, pointer), so
/// we take the whole register as a `c_long` and pass it on unchanged to the
/// real variadic function, which reads from it the type the command needs.
/// Only F_DUPFD / F_DUPFD_CLOEXEC are looked at; every other command is a
/// plain pass-through.
#[inline(always)]
fn fcntl_body(real: unsafe extern "C" fn(c_int, c_int, ...) -> c_int, fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    if cmd != libc::F_DUPFD && cmd != libc::F_DUPFD_CLOEXEC {
        // SAFETY: the host's arguments, passed on unchanged.
        return unsafe { real(fd, cmd, arg) };
    }
    let slot = FDS.get(fd);
    let t0 = if slot != 0 { sys::now() } else { 0 };
    // SAFETY: as above.
    let r = unsafe { real(fd, cmd, arg) };
    if slot != 0 || (r >= 0 && FDS.get(r) != 0) {
        after_dup(slot, Op::FcntlDup, t0, sys::now(), fd, r);
    }
    r
}

/// Interposed `fcntl` (see `fcntl_body` for the variadic argument).
///
/// # Safety
/// Same contract as libc's `fcntl`.
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    let real = real_or!(fcntl, -1);
    fcntl_body(real, fd, cmd, arg)
}

/// Interposed `fcntl64` (glibc ≥ 2.28).
///
/// # Safety
/// Same contract as libc's `fcntl64`.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    let real = real_or!(fcntl64, -1);
    fcntl_body(real, fd, cmd, arg)
}

fn clear_range(lo: c_uint, hi: c_uint, t0: u64, t1: u64) {
    let _g = ErrnoGuard::new();
    FDS.clear_range(lo, hi, |fd, slot| rec(slot, Op::CloseRange, t0, t1, fd, 0, 0));
}

/// Interposed `close_range`: after success (without CLOSE_RANGE_CLOEXEC)
/// every watched fd in the range is un-watched and counted as `CloseRange`.
///
/// # Safety
/// Same contract as libc's `close_range`.
#[no_mangle]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    let real = real_or!(close_range, -1);
    if !config::enabled() {
        // SAFETY: the host's arguments, passed on unchanged.
        return unsafe { real(first, last, flags) };
    }
    let t0 = sys::now();
    // SAFETY: as above.
    let r = unsafe { real(first, last, flags) };
    if r == 0 && (flags as c_uint & libc::CLOSE_RANGE_CLOEXEC) == 0 {
        clear_range(first, last, t0, sys::now());
    }
    r
}

/// Interposed `closefrom`: every watched fd ≥ `low` is un-watched and
/// counted as `CloseRange`.
///
/// # Safety
/// Same contract as glibc's `closefrom`.
#[no_mangle]
pub unsafe extern "C" fn closefrom(low: c_int) {
    let real = real_or!(closefrom);
    let t0 = sys::now();
    // SAFETY: the host's argument, passed on unchanged.
    unsafe { real(low) };
    if config::enabled() && low >= 0 {
        clear_range(low as c_uint, c_uint::MAX, t0, sys::now());
    }
}

#[inline(always)]
fn mmap_body(fd: c_int, flags: c_int, len: size_t, off: i64, f: impl FnOnce() -> *mut c_void) -> *mut c_void {
    let slot = FDS.get(fd);
    if slot == 0 || flags & libc::MAP_ANONYMOUS != 0 {
        return f();
    }
    let t0 = sys::now();
    let r = f();
    let t1 = sys::now();
    let _g = ErrnoGuard::new();
    let failed = r == libc::MAP_FAILED;
    let c = Call {
        slot,
        op: Op::Mmap,
        t0,
        t1,
        fd,
        offset: off,
        result: if failed { -1 } else { len as i64 },
        bytes: len as u64,
        failed,
    };
    writer::call(c);
    r
}

/// Interposed `mmap`: counted as `Mmap` (bytes: length) for a watched fd.
/// Page faults on the mapping are not calls and are not counted.
///
/// # Safety
/// Same contract as libc's `mmap`.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    let real = real_or!(mmap, libc::MAP_FAILED);
    // SAFETY: the host's arguments, passed on unchanged.
    mmap_body(fd, flags, len, off, || unsafe { real(addr, len, prot, flags, fd, off) })
}

/// Interposed `mmap64`: as `mmap`.
///
/// # Safety
/// Same contract as libc's `mmap64`.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off64_t,
) -> *mut c_void {
    let real = real_or!(mmap64, libc::MAP_FAILED);
    // SAFETY: the host's arguments, passed on unchanged.
    mmap_body(fd, flags, len, off, || unsafe { real(addr, len, prot, flags, fd, off) })
}
