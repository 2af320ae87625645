//! The stdio path: fopen, fopen64, fdopen, freopen, freopen64, fclose,
//! fflush, fread, fread_unlocked, __fread_chk, fgets, fgets_unlocked,
//! __fgets_chk, fgetc, getc, _IO_getc, fgetc_unlocked, getc_unlocked,
//! __uflow, __underflow, getline, getdelim, __getdelim, fseek, fseeko,
//! fseeko64, ftell, ftello, ftello64, rewind.
//!
//! glibc's stdio makes its system calls internally (they never pass our
//! `open`/`read` hooks). A FILE is watched when its `_fileno` is. Each call
//! is counted at the stdio level (`Fopen`, `StdioRead`, ...) and the system
//! calls it made are *inferred* into the syscall columns (`Open`, `Read`,
//! `Fstat`, `Lseek`, `Close`, `Write`) from glibc's public `struct _IO_FILE`
//! fields read before and after the real call, under the FILE lock:
//! - buffer allocation (`_IO_buf_base` NULL → set) is one `fstat`;
//! - a read that may refill (the buffer cannot satisfy it) takes the kernel
//!   offset with a raw `lseek(fd, 0, SEEK_CUR)` before and after: the bytes
//!   the kernel delivered, split into reads by `stdio_model`;
//! - fopen is one open (also when it fails, except EINVAL: bad mode),
//!   fclose one close (plus one write if output was pending);
//! - ftell makes an lseek iff `_offset` is unknown; fseek always one lseek
//!   (a move inside the buffer resyncs the kernel offset), plus a read if it
//!   refilled from a block boundary, plus an fstat for SEEK_END.

#![allow(non_snake_case)]

use std::ptr::addr_of;

use libc::{c_char, c_int, c_long, c_void, off64_t, off_t, size_t, ssize_t, FILE};

use crate::config;
use crate::fdtable::FDS;
use crate::hook::{real_or, track, watched_slot};
use crate::stdio_model::{fread_reads, underflow_reads, End};
use crate::sys::{self, ErrnoGuard};
use crate::writer::{self, Call};
use kbx_record::Op;

/// glibc's public `struct _IO_FILE` (bits/types/struct_FILE.h), x86-64.
#[repr(C)]
struct IoFile {
    flags: c_int,
    read_ptr: *mut u8,
    read_end: *mut u8,
    read_base: *mut u8,
    write_base: *mut u8,
    write_ptr: *mut u8,
    write_end: *mut u8,
    buf_base: *mut u8,
    buf_end: *mut u8,
    save_base: *mut u8,
    backup_base: *mut u8,
    save_end: *mut u8,
    markers: *mut c_void,
    chain: *mut c_void,
    fileno: c_int,
    flags2: c_int,
    old_offset: c_long,
    cur_column: u16,
    vtable_offset: i8,
    shortbuf: [u8; 1],
    lock: *mut c_void,
    offset: i64,
}

const _: () = assert!(std::mem::offset_of!(IoFile, read_ptr) == 8);
const _: () = assert!(std::mem::offset_of!(IoFile, buf_base) == 56);
const _: () = assert!(std::mem::offset_of!(IoFile, fileno) == 112);
const _: () = assert!(std::mem::offset_of!(IoFile, offset) == 144);

const IO_EOF_SEEN: c_int = 0x10;
const IO_ERR_SEEN: c_int = 0x20;
const POS_BAD: i64 = -1;

#[derive(Clone, Copy)]
struct Snap {
    flags: c_int,
    read_ptr: usize,
    read_end: usize,
    buf_base: usize,
    buf_end: usize,
    write_base: usize,
    write_ptr: usize,
    offset: i64,
}

impl Snap {
    fn avail(&self) -> u64 {
        self.read_end.saturating_sub(self.read_ptr) as u64
    }
}

/// The descriptor of a FILE (-1 for NULL).
fn fd_of(fp: *mut FILE) -> c_int {
    if fp.is_null() {
        return -1;
    }
    let f = fp as *const IoFile;
    // SAFETY: fp is a FILE* the host passes to stdio, so it points to a live
    // glibc FILE, whose public prefix is IoFile; `_fileno` only changes in
    // fclose/freopen.
    unsafe { addr_of!((*f).fileno).read_volatile() }
}

fn snap(fp: *mut FILE) -> Snap {
    let f = fp as *const IoFile;
    // SAFETY: as in fd_of; the FILE lock is held (by us or, for _unlocked
    // calls, by the caller), so no other thread changes these fields.
    unsafe {
        Snap {
            flags: addr_of!((*f).flags).read_volatile(),
            read_ptr: addr_of!((*f).read_ptr).read_volatile() as usize,
            read_end: addr_of!((*f).read_end).read_volatile() as usize,
            buf_base: addr_of!((*f).buf_base).read_volatile() as usize,
            buf_end: addr_of!((*f).buf_end).read_volatile() as usize,
            write_base: addr_of!((*f).write_base).read_volatile() as usize,
            write_ptr: addr_of!((*f).write_ptr).read_volatile() as usize,
            offset: addr_of!((*f).offset).read_volatile(),
        }
    }
}

/// Whether the unread buffered bytes contain `c` within the first `limit`.
fn buffered_has(s: &Snap, c: u8, limit: u64) -> bool {
    let n = s.avail().min(limit) as usize;
    if n == 0 {
        return false;
    }
    // SAFETY: [read_ptr, read_end) is the FILE's unread input, readable while
    // the FILE lock is held.
    let buf = unsafe { std::slice::from_raw_parts(s.read_ptr as *const u8, n) };
    buf.contains(&c)
}

extern "C" {
    fn flockfile(fp: *mut FILE);
    fn funlockfile(fp: *mut FILE);
}

struct Locked(*mut FILE, bool);

impl Locked {
    fn new(fp: *mut FILE, lock: bool) -> Locked {
        if lock {
            // SAFETY: fp is a live FILE; flockfile is recursive, so the real
            // call taking the same lock inside cannot deadlock.
            unsafe { flockfile(fp) };
        }
        Locked(fp, lock)
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        if self.1 {
            // SAFETY: we locked it in `new`.
            unsafe { funlockfile(self.0) };
        }
    }
}

/// How a read entry point refills.
#[derive(Clone, Copy)]
enum Kind {
    /// Through `__underflow` only; the call cannot need a refill if the
    /// predicate holds on the state before.
    Underflow(fn(&Snap, u64, u8) -> bool, u64, u8),
    /// `fread` of this many bytes.
    Fread(u64),
}

fn no_refill_getc(s: &Snap, _: u64, _: u8) -> bool {
    s.avail() > 0
}

fn no_refill_line(s: &Snap, limit: u64, delim: u8) -> bool {
    limit <= 1 || s.avail() >= limit - 1 || buffered_has(s, delim, limit - 1)
}

fn no_refill_never(_: &Snap, _: u64, _: u8) -> bool {
    false
}

/// The shared body of the read entry points.
#[inline(always)]
fn stdio_read<R: Copy>(
    fp: *mut FILE,
    lock: bool,
    kind: Kind,
    f: impl FnOnce() -> R,
    out: impl Fn(R) -> (i64, u64, bool),
) -> R {
    let fd = fd_of(fp);
    let slot = FDS.get(fd);
    if slot == 0 {
        return f();
    }
    let guard = Locked::new(fp, lock);
    let s0 = snap(fp);
    let sticky = s0.flags & IO_EOF_SEEN != 0;
    let may_refill = s0.buf_base == 0
        || match kind {
            Kind::Underflow(pred, limit, delim) => !sticky && !pred(&s0, limit, delim),
            Kind::Fread(want) => want > s0.avail(),
        };
    let pos0 = if may_refill { sys::raw_lseek(fd, 0, libc::SEEK_CUR) } else { -1 };
    let t0 = sys::now();
    let r = f();
    let t1 = sys::now();
    let _g = ErrnoGuard::new();
    let s1 = snap(fp);
    let pos1 = if may_refill { sys::raw_lseek(fd, 0, libc::SEEK_CUR) } else { -1 };
    drop(guard);
    let (result, delivered, failed) = out(r);
    writer::call(Call { slot, op: Op::StdioRead, t0, t1, fd, offset: -1, result, bytes: delivered, failed });
    if s0.buf_base == 0 && s1.buf_base != 0 {
        writer::inferred(slot, Op::Fstat, 0, false);
    }
    if !may_refill {
        return r;
    }
    let new = s1.flags & !s0.flags;
    let b = s1.buf_end.saturating_sub(s1.buf_base) as u64;
    let got = if pos0 >= 0 && pos1 >= pos0 {
        (pos1 - pos0) as u64
    } else {
        // Not seekable: assume one refill if the buffer end moved.
        (s1.read_end != s0.read_end) as u64 * s1.read_end.saturating_sub(s1.buf_base) as u64
    };
    let emit = |n: u64, failed: bool| writer::inferred(slot, Op::Read, n, failed);
    match kind {
        Kind::Underflow(..) => {
            let end: End = if new & IO_ERR_SEEN != 0 {
                Some(true)
            } else if new & IO_EOF_SEEN != 0 {
                Some(false)
            } else {
                None
            };
            underflow_reads(b, got, end, emit);
        }
        Kind::Fread(want) => {
            let end: End = if delivered < want { Some(new & IO_ERR_SEEN != 0) } else { None };
            fread_reads(s0.avail(), want, b, got, end, sticky, emit);
        }
    }
    r
}

fn out_size(size: size_t) -> impl Fn(size_t) -> (i64, u64, bool) {
    move |r| (r as i64, (r as u64).saturating_mul(size as u64), r == 0)
}

fn out_int(r: c_int) -> (i64, u64, bool) {
    (r as i64, (r >= 0) as u64, r < 0)
}

fn out_ptr(r: *mut c_char) -> (i64, u64, bool) {
    (if r.is_null() { -1 } else { 0 }, 0, r.is_null())
}

fn out_ssize(r: ssize_t) -> (i64, u64, bool) {
    (r as i64, r.max(0) as u64, r < 0)
}

macro_rules! getc_hook {
    ($name:ident, $lock:expr, $pred:expr) => {
        #[doc = concat!("Interposed `", stringify!($name), "`: `StdioRead` on a watched FILE, refills inferred.")]
        ///
        /// # Safety
        /// Same contract as the libc function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fp: *mut FILE) -> c_int {
            let real = real_or!($name, libc::EOF);
            // SAFETY: the host's argument, passed on unchanged.
            stdio_read(fp, $lock, Kind::Underflow($pred, 0, 0), || unsafe { real(fp) }, out_int)
        }
    };
}

getc_hook!(fgetc, true, no_refill_getc);
getc_hook!(getc, true, no_refill_getc);
getc_hook!(_IO_getc, true, no_refill_getc);
getc_hook!(fgetc_unlocked, false, no_refill_getc);
getc_hook!(getc_unlocked, false, no_refill_getc);
// Called by the inline getc_unlocked / getchar macros when the buffer is empty.
getc_hook!(__uflow, false, no_refill_never);
getc_hook!(__underflow, false, no_refill_never);

/// Interposed `fread`.
///
/// # Safety
/// Same contract as libc's `fread`.
#[no_mangle]
pub unsafe extern "C" fn fread(ptr: *mut c_void, size: size_t, n: size_t, fp: *mut FILE) -> size_t {
    let real = real_or!(fread, 0);
    let want = (size as u64).saturating_mul(n as u64);
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_read(fp, true, Kind::Fread(want), || unsafe { real(ptr, size, n, fp) }, out_size(size))
}

/// Interposed `fread_unlocked`.
///
/// # Safety
/// Same contract as libc's `fread_unlocked`.
#[no_mangle]
pub unsafe extern "C" fn fread_unlocked(ptr: *mut c_void, size: size_t, n: size_t, fp: *mut FILE) -> size_t {
    let real = real_or!(fread_unlocked, 0);
    let want = (size as u64).saturating_mul(n as u64);
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_read(fp, false, Kind::Fread(want), || unsafe { real(ptr, size, n, fp) }, out_size(size))
}

/// Interposed `__fread_chk` (fortified fread).
///
/// # Safety
/// Same contract as glibc's `__fread_chk`.
#[no_mangle]
pub unsafe extern "C" fn __fread_chk(
    ptr: *mut c_void,
    buflen: size_t,
    size: size_t,
    n: size_t,
    fp: *mut FILE,
) -> size_t {
    let real = real_or!(__fread_chk, 0);
    let want = (size as u64).saturating_mul(n as u64);
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_read(fp, true, Kind::Fread(want), || unsafe { real(ptr, buflen, size, n, fp) }, out_size(size))
}

/// Interposed `fgets`.
///
/// # Safety
/// Same contract as libc's `fgets`.
#[no_mangle]
pub unsafe extern "C" fn fgets(s: *mut c_char, n: c_int, fp: *mut FILE) -> *mut c_char {
    let real = real_or!(fgets, std::ptr::null_mut());
    let k = Kind::Underflow(no_refill_line, n.max(0) as u64, b'\n');
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_read(fp, true, k, || unsafe { real(s, n, fp) }, out_ptr)
}

/// Interposed `fgets_unlocked`.
///
/// # Safety
/// Same contract as libc's `fgets_unlocked`.
#[no_mangle]
pub unsafe extern "C" fn fgets_unlocked(s: *mut c_char, n: c_int, fp: *mut FILE) -> *mut c_char {
    let real = real_or!(fgets_unlocked, std::ptr::null_mut());
    let k = Kind::Underflow(no_refill_line, n.max(0) as u64, b'\n');
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_read(fp, false, k, || unsafe { real(s, n, fp) }, out_ptr)
}

/// Interposed `__fgets_chk`.
///
/// # Safety
/// Same contract as glibc's `__fgets_chk`.
#[no_mangle]
pub unsafe extern "C" fn __fgets_chk(s: *mut c_char, size: size_t, n: c_int, fp: *mut FILE) -> *mut c_char {
    let real = real_or!(__fgets_chk, std::ptr::null_mut());
    let k = Kind::Underflow(no_refill_line, n.max(0) as u64, b'\n');
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_read(fp, true, k, || unsafe { real(s, size, n, fp) }, out_ptr)
}

/// Interposed `getline`.
///
/// # Safety
/// Same contract as libc's `getline`.
#[no_mangle]
pub unsafe extern "C" fn getline(line: *mut *mut c_char, cap: *mut size_t, fp: *mut FILE) -> ssize_t {
    let real = real_or!(getline, -1);
    let k = Kind::Underflow(no_refill_line, u64::MAX, b'\n');
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_read(fp, true, k, || unsafe { real(line, cap, fp) }, out_ssize)
}

/// Interposed `getdelim`.
///
/// # Safety
/// Same contract as libc's `getdelim`.
#[no_mangle]
pub unsafe extern "C" fn getdelim(line: *mut *mut c_char, cap: *mut size_t, delim: c_int, fp: *mut FILE) -> ssize_t {
    let real = real_or!(getdelim, -1);
    let k = Kind::Underflow(no_refill_line, u64::MAX, delim as u8);
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_read(fp, true, k, || unsafe { real(line, cap, delim, fp) }, out_ssize)
}

/// Interposed `__getdelim`.
///
/// # Safety
/// Same contract as glibc's `__getdelim`.
#[no_mangle]
pub unsafe extern "C" fn __getdelim(line: *mut *mut c_char, cap: *mut size_t, delim: c_int, fp: *mut FILE) -> ssize_t {
    let real = real_or!(__getdelim, -1);
    let k = Kind::Underflow(no_refill_line, u64::MAX, delim as u8);
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_read(fp, true, k, || unsafe { real(line, cap, delim, fp) }, out_ssize)
}

/// After an fopen-like call on `path`: count it and track the new FILE's fd.
///
/// # Safety
/// `path` is the host's argument to the call that returned `r`.
unsafe fn after_fopen(path: *const c_char, r: *mut FILE, t0: u64, t1: u64) {
    let e = sys::errno();
    let _g = ErrnoGuard::new();
    // SAFETY: forwarded contract.
    match unsafe { watched_slot(libc::AT_FDCWD, path, e, r.is_null()) } {
        Some(slot) => {
            let fd = fd_of(r);
            writer::call(Call {
                slot,
                op: Op::Fopen,
                t0,
                t1,
                fd,
                offset: -1,
                result: fd as i64,
                bytes: 0,
                failed: r.is_null(),
            });
            if !(r.is_null() && e == libc::EINVAL) {
                writer::inferred(slot, Op::Open, 0, r.is_null());
            }
            track(fd, slot);
        }
        None => track(fd_of(r), 0),
    }
}

/// Interposed `fopen`: `Fopen` plus an inferred `Open` on a watched path.
///
/// # Safety
/// Same contract as libc's `fopen`.
#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
    let real = real_or!(fopen, std::ptr::null_mut());
    if !config::enabled() {
        // SAFETY: the host's arguments, passed on unchanged.
        return unsafe { real(path, mode) };
    }
    let t0 = sys::now();
    // SAFETY: as above.
    let r = unsafe { real(path, mode) };
    // SAFETY: path was the argument of that call.
    unsafe { after_fopen(path, r, t0, sys::now()) };
    r
}

/// Interposed `fopen64`: as `fopen`.
///
/// # Safety
/// Same contract as libc's `fopen64`.
#[no_mangle]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE {
    let real = real_or!(fopen64, std::ptr::null_mut());
    if !config::enabled() {
        // SAFETY: the host's arguments, passed on unchanged.
        return unsafe { real(path, mode) };
    }
    let t0 = sys::now();
    // SAFETY: as above.
    let r = unsafe { real(path, mode) };
    // SAFETY: path was the argument of that call.
    unsafe { after_fopen(path, r, t0, sys::now()) };
    r
}

/// Interposed `fdopen`: `Fopen` on a watched fd (its fcntl is not counted).
///
/// # Safety
/// Same contract as libc's `fdopen`.
#[no_mangle]
pub unsafe extern "C" fn fdopen(fd: c_int, mode: *const c_char) -> *mut FILE {
    let real = real_or!(fdopen, std::ptr::null_mut());
    let slot = FDS.get(fd);
    if slot == 0 {
        // SAFETY: the host's arguments, passed on unchanged.
        return unsafe { real(fd, mode) };
    }
    let t0 = sys::now();
    // SAFETY: as above.
    let r = unsafe { real(fd, mode) };
    let t1 = sys::now();
    let _g = ErrnoGuard::new();
    writer::call(Call {
        slot,
        op: Op::Fopen,
        t0,
        t1,
        fd,
        offset: -1,
        result: fd as i64,
        bytes: 0,
        failed: r.is_null(),
    });
    r
}

unsafe fn freopen_body(
    real: unsafe extern "C" fn(*const c_char, *const c_char, *mut FILE) -> *mut FILE,
    path: *const c_char,
    mode: *const c_char,
    fp: *mut FILE,
) -> *mut FILE {
    if !config::enabled() {
        // SAFETY: the host's arguments, passed on unchanged.
        return unsafe { real(path, mode, fp) };
    }
    let oldfd = fd_of(fp);
    let old = FDS.get(oldfd);
    let t0 = sys::now();
    // SAFETY: as above.
    let r = unsafe { real(path, mode, fp) };
    let t1 = sys::now();
    let e = sys::errno();
    let _g = ErrnoGuard::new();
    if old != 0 && !path.is_null() {
        FDS.set(oldfd, 0);
        writer::inferred(old, Op::Close, 0, false);
    }
    if path.is_null() {
        // Same file, new mode: the descriptor keeps its watch.
        if old != 0 {
            writer::call(Call {
                slot: old,
                op: Op::Fopen,
                t0,
                t1,
                fd: oldfd,
                offset: -1,
                result: 0,
                bytes: 0,
                failed: r.is_null(),
            });
            track(fd_of(r), old);
        }
        return r;
    }
    // SAFETY: path was the argument of the call.
    match unsafe { watched_slot(libc::AT_FDCWD, path, e, r.is_null()) } {
        Some(slot) => {
            let fd = fd_of(r);
            writer::call(Call {
                slot,
                op: Op::Fopen,
                t0,
                t1,
                fd,
                offset: -1,
                result: fd as i64,
                bytes: 0,
                failed: r.is_null(),
            });
            writer::inferred(slot, Op::Open, 0, r.is_null());
            track(fd, slot);
        }
        None => track(fd_of(r), 0),
    }
    r
}

/// Interposed `freopen`: the old watched fd's close and the new watched
/// path's open are inferred (approximate: glibc's fd-preserving dup3 is not modelled).
///
/// # Safety
/// Same contract as libc's `freopen`.
#[no_mangle]
pub unsafe extern "C" fn freopen(path: *const c_char, mode: *const c_char, fp: *mut FILE) -> *mut FILE {
    let real = real_or!(freopen, std::ptr::null_mut());
    // SAFETY: the host's arguments.
    unsafe { freopen_body(real, path, mode, fp) }
}

/// Interposed `freopen64`: as `freopen`.
///
/// # Safety
/// Same contract as libc's `freopen64`.
#[no_mangle]
pub unsafe extern "C" fn freopen64(path: *const c_char, mode: *const c_char, fp: *mut FILE) -> *mut FILE {
    let real = real_or!(freopen64, std::ptr::null_mut());
    // SAFETY: the host's arguments.
    unsafe { freopen_body(real, path, mode, fp) }
}

/// Interposed `fclose`: `Fclose`, an inferred `Close` (and `Write` if output
/// was pending) on a watched FILE, whose fd is un-watched.
///
/// # Safety
/// Same contract as libc's `fclose`.
#[no_mangle]
pub unsafe extern "C" fn fclose(fp: *mut FILE) -> c_int {
    let real = real_or!(fclose, libc::EOF);
    let fd = fd_of(fp);
    let slot = FDS.get(fd);
    if slot == 0 {
        // SAFETY: the host's argument, passed on unchanged.
        return unsafe { real(fp) };
    }
    let pending = {
        let _l = Locked::new(fp, true);
        let s = snap(fp);
        s.write_ptr > s.write_base
    };
    FDS.set(fd, 0);
    let t0 = sys::now();
    // SAFETY: as above.
    let r = unsafe { real(fp) };
    let t1 = sys::now();
    let _g = ErrnoGuard::new();
    writer::call(Call { slot, op: Op::Fclose, t0, t1, fd, offset: -1, result: r as i64, bytes: 0, failed: r != 0 });
    if pending {
        writer::inferred(slot, Op::Write, 0, false);
    }
    writer::inferred(slot, Op::Close, 0, false);
    r
}

/// Interposed `fflush`: on a watched FILE, the lseek that gives back unread
/// input (and the write of pending output) are inferred. `fflush(NULL)`
/// only writes output streams and passes through.
///
/// # Safety
/// Same contract as libc's `fflush`.
#[no_mangle]
pub unsafe extern "C" fn fflush(fp: *mut FILE) -> c_int {
    let real = real_or!(fflush, libc::EOF);
    let fd = fd_of(fp);
    let slot = FDS.get(fd);
    if slot == 0 {
        // SAFETY: the host's argument, passed on unchanged.
        return unsafe { real(fp) };
    }
    let l = Locked::new(fp, true);
    let s = snap(fp);
    // SAFETY: as above.
    let r = unsafe { real(fp) };
    drop(l);
    let _g = ErrnoGuard::new();
    if s.write_ptr > s.write_base {
        writer::inferred(slot, Op::Write, 0, false);
    } else if s.read_ptr != s.read_end {
        writer::inferred(slot, Op::Lseek, 0, false);
    }
    r
}

/// The shared body of the seek/tell entry points. `whence` None: a tell.
fn stdio_seek<R: Copy + Into<i64>>(fp: *mut FILE, whence: Option<c_int>, f: impl FnOnce() -> R) -> R {
    let fd = fd_of(fp);
    let slot = FDS.get(fd);
    if slot == 0 {
        return f();
    }
    let l = Locked::new(fp, true);
    let s0 = snap(fp);
    let t0 = sys::now();
    let r = f();
    let t1 = sys::now();
    let e = sys::errno();
    let _g = ErrnoGuard::new();
    let s1 = snap(fp);
    drop(l);
    let res: i64 = r.into();
    writer::call(Call { slot, op: Op::StdioSeek, t0, t1, fd, offset: -1, result: res, bytes: 0, failed: res == -1 });
    match whence {
        None => {
            if s0.offset == POS_BAD {
                writer::inferred(slot, Op::Lseek, 0, res == -1);
            }
        }
        Some(w) => {
            if s0.buf_base == 0 && s1.buf_base != 0 {
                writer::inferred(slot, Op::Fstat, 0, false);
            }
            if w == libc::SEEK_END {
                writer::inferred(slot, Op::Fstat, 0, false);
            }
            if res == -1 && e == libc::EINVAL {
                return r;
            }
            // glibc lseeks on every fseek: a move inside the buffer still
            // resyncs the kernel offset; otherwise it seeks to a block
            // boundary and refills up to the target (one read).
            writer::inferred(slot, Op::Lseek, 0, res == -1);
            let in_buffer = s0.offset != POS_BAD && s1.offset == s0.offset && s1.read_end == s0.read_end;
            if !in_buffer && s1.read_ptr > s1.buf_base && s1.buf_base != 0 {
                let n = s1.read_end.saturating_sub(s1.buf_base) as u64;
                writer::inferred(slot, Op::Read, n, false);
            }
        }
    }
    r
}

/// Interposed `fseek`.
///
/// # Safety
/// Same contract as libc's `fseek`.
#[no_mangle]
pub unsafe extern "C" fn fseek(fp: *mut FILE, off: c_long, whence: c_int) -> c_int {
    let real = real_or!(fseek, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_seek(fp, Some(whence), || unsafe { real(fp, off, whence) })
}

/// Interposed `fseeko`.
///
/// # Safety
/// Same contract as libc's `fseeko`.
#[no_mangle]
pub unsafe extern "C" fn fseeko(fp: *mut FILE, off: off_t, whence: c_int) -> c_int {
    let real = real_or!(fseeko, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_seek(fp, Some(whence), || unsafe { real(fp, off, whence) })
}

/// Interposed `fseeko64`.
///
/// # Safety
/// Same contract as libc's `fseeko64`.
#[no_mangle]
pub unsafe extern "C" fn fseeko64(fp: *mut FILE, off: off64_t, whence: c_int) -> c_int {
    let real = real_or!(fseeko64, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    stdio_seek(fp, Some(whence), || unsafe { real(fp, off, whence) })
}

/// Interposed `ftell`.
///
/// # Safety
/// Same contract as libc's `ftell`.
#[no_mangle]
pub unsafe extern "C" fn ftell(fp: *mut FILE) -> c_long {
    let real = real_or!(ftell, -1);
    // SAFETY: the host's argument, passed on unchanged.
    stdio_seek(fp, None, || unsafe { real(fp) })
}

/// Interposed `ftello`.
///
/// # Safety
/// Same contract as libc's `ftello`.
#[no_mangle]
pub unsafe extern "C" fn ftello(fp: *mut FILE) -> off_t {
    let real = real_or!(ftello, -1);
    // SAFETY: the host's argument, passed on unchanged.
    stdio_seek(fp, None, || unsafe { real(fp) })
}

/// Interposed `ftello64`.
///
/// # Safety
/// Same contract as libc's `ftello64`.
#[no_mangle]
pub unsafe extern "C" fn ftello64(fp: *mut FILE) -> off64_t {
    let real = real_or!(ftello64, -1);
    // SAFETY: the host's argument, passed on unchanged.
    stdio_seek(fp, None, || unsafe { real(fp) })
}

/// Interposed `rewind`: a seek to 0.
///
/// # Safety
/// Same contract as libc's `rewind`.
#[no_mangle]
pub unsafe extern "C" fn rewind(fp: *mut FILE) {
    let real = real_or!(rewind);
    // SAFETY: the host's argument, passed on unchanged.
    stdio_seek(fp, Some(libc::SEEK_SET), || {
        unsafe { real(fp) };
        0i64
    });
}
