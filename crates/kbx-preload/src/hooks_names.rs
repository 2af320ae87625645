//! Interposers of the calls that name files: `rename*` (counted on the
//! old name), `unlink*`, `remove` and `link*` (counted on the new name, the lock
//! file GnuPG takes by linking). They are how GnuPG updates a keybox (a
//! copy renamed into place, the old file renamed to `~`) and takes and
//! releases its lock files. A `link` that finds the lock taken opens a
//! lock wait, which the next successful one closes (`LockWait`).

use kbx_record::Op;
use libc::{c_char, c_int, c_uint};

use crate::hook::{on_link, on_path, real_or};

/// Interposed `rename`: `Rename` on a watched old name.
///
/// # Safety
/// Same contract as libc's `rename`.
#[no_mangle]
pub unsafe extern "C" fn rename(old: *const c_char, new: *const c_char) -> c_int {
    let real = real_or!(rename, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_path(libc::AT_FDCWD, old, Op::Rename, || real(old, new)) }
}

/// Interposed `renameat`: `Rename` on a watched old name.
///
/// # Safety
/// Same contract as libc's `renameat`.
#[no_mangle]
pub unsafe extern "C" fn renameat(olddir: c_int, old: *const c_char, newdir: c_int, new: *const c_char) -> c_int {
    let real = real_or!(renameat, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_path(olddir, old, Op::Rename, || real(olddir, old, newdir, new)) }
}

/// Interposed `renameat2`: `Rename` on a watched old name.
///
/// # Safety
/// Same contract as libc's `renameat2`.
#[no_mangle]
pub unsafe extern "C" fn renameat2(
    olddir: c_int,
    old: *const c_char,
    newdir: c_int,
    new: *const c_char,
    flags: c_uint,
) -> c_int {
    let real = real_or!(renameat2, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_path(olddir, old, Op::Rename, || real(olddir, old, newdir, new, flags)) }
}

/// Interposed `unlink`: `Unlink` on a watched path.
///
/// # Safety
/// Same contract as libc's `unlink`.
#[no_mangle]
pub unsafe extern "C" fn unlink(path: *const c_char) -> c_int {
    let real = real_or!(unlink, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_path(libc::AT_FDCWD, path, Op::Unlink, || real(path)) }
}

/// Interposed `remove` (glibc's calls `unlink` inside, past the hooks):
/// `Unlink` on a watched path. GnuPG removes files with it.
///
/// # Safety
/// Same contract as libc's `remove`.
#[no_mangle]
pub unsafe extern "C" fn remove(path: *const c_char) -> c_int {
    let real = real_or!(remove, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_path(libc::AT_FDCWD, path, Op::Unlink, || real(path)) }
}

/// Interposed `unlinkat`: `Unlink` on a watched path.
///
/// # Safety
/// Same contract as libc's `unlinkat`.
#[no_mangle]
pub unsafe extern "C" fn unlinkat(dir: c_int, path: *const c_char, flags: c_int) -> c_int {
    let real = real_or!(unlinkat, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_path(dir, path, Op::Unlink, || real(dir, path, flags)) }
}

/// Interposed `link`: `Link` on a watched new name.
///
/// # Safety
/// Same contract as libc's `link`.
#[no_mangle]
pub unsafe extern "C" fn link(old: *const c_char, new: *const c_char) -> c_int {
    let real = real_or!(link, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_link(libc::AT_FDCWD, new, || real(old, new)) }
}

/// Interposed `linkat`: `Link` on a watched new name.
///
/// # Safety
/// Same contract as libc's `linkat`.
#[no_mangle]
pub unsafe extern "C" fn linkat(
    olddir: c_int,
    old: *const c_char,
    newdir: c_int,
    new: *const c_char,
    flags: c_int,
) -> c_int {
    let real = real_or!(linkat, -1);
    // SAFETY: the host's arguments, passed on unchanged.
    unsafe { on_link(newdir, new, || real(olddir, old, newdir, new, flags)) }
}
