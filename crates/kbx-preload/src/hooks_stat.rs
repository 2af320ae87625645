//! fstat, fstat64, stat, stat64, lstat, lstat64, fstatat, fstatat64, statx,
//! __fxstat, __fxstat64, __xstat, __xstat64, __lxstat, __lxstat64,
//! __fxstatat, __fxstatat64, access, euidaccess, faccessat.
//! (glibc exports no `newfstatat`: it is only the kernel's name.)

use libc::{c_char, c_int, c_uint, c_void};

use crate::hook::{fd_hook, no_bytes, on_at, on_fd, on_path, real_or};
use crate::real::{Stat, Stat64};
use kbx_record::Op;

fd_hook!(fstat(fd, buf: *mut Stat) -> c_int, Op::Fstat, off = -1, bytes = no_bytes, fail = -1);
fd_hook!(fstat64(fd, buf: *mut Stat64) -> c_int, Op::Fstat, off = -1, bytes = no_bytes, fail = -1);

macro_rules! path_hook {
    ($name:ident ( $($pre:ident : $pt:ty),* ; path $(, $a:ident : $t:ty)* ), $op:expr) => {
        #[doc = concat!("Interposed `", stringify!($name), "`: counted as `", stringify!($op), "` on a watched path.")]
        ///
        /// # Safety
        /// Same contract as the libc function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($pre: $pt,)* path: *const c_char $(, $a: $t)*) -> c_int {
            let real = real_or!($name, -1);
            // SAFETY: the host's arguments, passed on unchanged.
            unsafe { on_path(libc::AT_FDCWD, path, $op, || real($($pre,)* path $(, $a)*)) }
        }
    };
}

path_hook!(stat(; path, buf: *mut Stat), Op::Stat);
path_hook!(stat64(; path, buf: *mut Stat64), Op::Stat);
path_hook!(lstat(; path, buf: *mut Stat), Op::Stat);
path_hook!(lstat64(; path, buf: *mut Stat64), Op::Stat);
path_hook!(__xstat(ver: c_int; path, buf: *mut Stat), Op::Stat);
path_hook!(__xstat64(ver: c_int; path, buf: *mut Stat64), Op::Stat);
path_hook!(__lxstat(ver: c_int; path, buf: *mut Stat), Op::Stat);
path_hook!(__lxstat64(ver: c_int; path, buf: *mut Stat64), Op::Stat);
path_hook!(access(; path, mode: c_int), Op::Access);
path_hook!(euidaccess(; path, mode: c_int), Op::Access);

/// Interposed `__fxstat` (pre-2.33 ABI): counted as `Fstat`.
///
/// # Safety
/// Same contract as glibc's `__fxstat`.
#[no_mangle]
pub unsafe extern "C" fn __fxstat(ver: c_int, fd: c_int, buf: *mut Stat) -> c_int {
    let real = real_or!(__fxstat, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    on_fd(fd, Op::Fstat, -1, no_bytes, || unsafe { real(ver, fd, buf) })
}

/// Interposed `__fxstat64`: counted as `Fstat`.
///
/// # Safety
/// Same contract as glibc's `__fxstat64`.
#[no_mangle]
pub unsafe extern "C" fn __fxstat64(ver: c_int, fd: c_int, buf: *mut Stat64) -> c_int {
    let real = real_or!(__fxstat64, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    on_fd(fd, Op::Fstat, -1, no_bytes, || unsafe { real(ver, fd, buf) })
}

/// Interposed `fstatat`: `Fstat` for (watched fd, "", AT_EMPTY_PATH), else `Stat` on a watched path.
///
/// # Safety
/// Same contract as libc's `fstatat`.
#[no_mangle]
pub unsafe extern "C" fn fstatat(dirfd: c_int, path: *const c_char, buf: *mut Stat, flags: c_int) -> c_int {
    let real = real_or!(fstatat, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_at(dirfd, path, flags, (Op::Fstat, Op::Stat), || real(dirfd, path, buf, flags)) }
}

/// Interposed `fstatat64`: as `fstatat`.
///
/// # Safety
/// Same contract as libc's `fstatat64`.
#[no_mangle]
pub unsafe extern "C" fn fstatat64(dirfd: c_int, path: *const c_char, buf: *mut Stat64, flags: c_int) -> c_int {
    let real = real_or!(fstatat64, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_at(dirfd, path, flags, (Op::Fstat, Op::Stat), || real(dirfd, path, buf, flags)) }
}

/// Interposed `__fxstatat`: as `fstatat`.
///
/// # Safety
/// Same contract as glibc's `__fxstatat`.
#[no_mangle]
pub unsafe extern "C" fn __fxstatat(
    ver: c_int,
    dirfd: c_int,
    path: *const c_char,
    buf: *mut Stat,
    flags: c_int,
) -> c_int {
    let real = real_or!(__fxstatat, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_at(dirfd, path, flags, (Op::Fstat, Op::Stat), || real(ver, dirfd, path, buf, flags)) }
}

/// Interposed `__fxstatat64`: as `fstatat`.
///
/// # Safety
/// Same contract as glibc's `__fxstatat64`.
#[no_mangle]
pub unsafe extern "C" fn __fxstatat64(
    ver: c_int,
    dirfd: c_int,
    path: *const c_char,
    buf: *mut Stat64,
    flags: c_int,
) -> c_int {
    let real = real_or!(__fxstatat64, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_at(dirfd, path, flags, (Op::Fstat, Op::Stat), || real(ver, dirfd, path, buf, flags)) }
}

/// Interposed `statx`: `Statx`, by watched fd (AT_EMPTY_PATH) or watched path.
///
/// # Safety
/// Same contract as libc's `statx`.
#[no_mangle]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut c_void,
) -> c_int {
    let real = real_or!(statx, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_at(dirfd, path, flags, (Op::Statx, Op::Statx), || real(dirfd, path, flags, mask, buf)) }
}

/// Interposed `faccessat`: `Access` on a watched path.
///
/// # Safety
/// Same contract as libc's `faccessat`.
#[no_mangle]
pub unsafe extern "C" fn faccessat(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int {
    let real = real_or!(faccessat, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_at(dirfd, path, flags, (Op::Access, Op::Access), || real(dirfd, path, mode, flags)) }
}
