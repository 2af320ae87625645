//! open, open64, __open_2, __open64_2, openat, openat64, __openat_2,
//! __openat64_2, creat, creat64.
//!
//! `open`'s mode is variadic. Stable Rust cannot define a C-variadic
//! function, so the hooks take a fixed third `mode` argument. On x86-64 the
//! SysV ABI passes the first six integer arguments in registers whether the
//! call is variadic or not, so `mode` is the caller's `%edx` (`%ecx` for
//! openat): the value the caller passed, or an unspecified register content
//! when it passed none. We hand it on unchanged to the real (variadic)
//! function, which reads it only for O_CREAT / O_TMPFILE, exactly as it
//! would have without us.

use libc::{c_char, c_int, mode_t};

use crate::hook::{on_open, real_or};

/// Interposed `open`.
///
/// # Safety
/// Same contract as libc's `open`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    let real = real_or!(open, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(libc::AT_FDCWD, path, || real(path, flags, mode)) }
}

/// Interposed `open64`.
///
/// # Safety
/// Same contract as libc's `open64`.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    let real = real_or!(open64, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(libc::AT_FDCWD, path, || real(path, flags, mode)) }
}

/// Interposed `__open_2` (fortified open without mode).
///
/// # Safety
/// Same contract as glibc's `__open_2`.
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    let real = real_or!(__open_2, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(libc::AT_FDCWD, path, || real(path, flags)) }
}

/// Interposed `__open64_2`.
///
/// # Safety
/// Same contract as glibc's `__open64_2`.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    let real = real_or!(__open64_2, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(libc::AT_FDCWD, path, || real(path, flags)) }
}

/// Interposed `openat`.
///
/// # Safety
/// Same contract as libc's `openat`.
#[no_mangle]
pub unsafe extern "C" fn openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    let real = real_or!(openat, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(dirfd, path, || real(dirfd, path, flags, mode)) }
}

/// Interposed `openat64`.
///
/// # Safety
/// Same contract as libc's `openat64`.
#[no_mangle]
pub unsafe extern "C" fn openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    let real = real_or!(openat64, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(dirfd, path, || real(dirfd, path, flags, mode)) }
}

/// Interposed `__openat_2`.
///
/// # Safety
/// Same contract as glibc's `__openat_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    let real = real_or!(__openat_2, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(dirfd, path, || real(dirfd, path, flags)) }
}

/// Interposed `__openat64_2`.
///
/// # Safety
/// Same contract as glibc's `__openat64_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    let real = real_or!(__openat64_2, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(dirfd, path, || real(dirfd, path, flags)) }
}

/// Interposed `creat`.
///
/// # Safety
/// Same contract as libc's `creat`.
#[no_mangle]
pub unsafe extern "C" fn creat(path: *const c_char, mode: mode_t) -> c_int {
    let real = real_or!(creat, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(libc::AT_FDCWD, path, || real(path, mode)) }
}

/// Interposed `creat64`.
///
/// # Safety
/// Same contract as libc's `creat64`.
#[no_mangle]
pub unsafe extern "C" fn creat64(path: *const c_char, mode: mode_t) -> c_int {
    let real = real_or!(creat64, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_open(libc::AT_FDCWD, path, || real(path, mode)) }
}
