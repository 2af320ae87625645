//! The hooks of the calls that would change a file: refused, with
//! `EACCES` and nothing sent to the kernel, while a database of kbxscope's
//! is open on the thread (the refusal remembered for the error message);
//! passed on to SQLite's originals otherwise.

use std::ffi::{c_char, c_int, c_void};

use libc::{mode_t, off_t, size_t, ssize_t};

use super::originals::originals;
use super::sink::{armed, path_name, set_errno, Target, SINK};

/// Refuse a call that would write: nothing reaches the kernel, errno is
/// `EACCES`, and the sink remembers the first such call.
pub(super) fn refuse(what: &str, target: Target) -> c_int {
    let _ = SINK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else { return };
        let Some(sink) = s.as_mut() else { return };
        if sink.refused.is_none() {
            let name = match target {
                Target::Fd(fd) => sink.name_of_fd(fd).map_or_else(|| format!("fd {fd}"), |n| n.to_string()),
                Target::Path(p) | Target::Opened(p) => path_name(p).to_string(),
            };
            sink.refused = Some(format!("{what} {name}"));
        }
    });
    set_errno(libc::EACCES);
    -1
}

/// The answer for an entry SQLite left empty (never installed: the table
/// keeps empty entries empty).
fn missing<T: From<i8>>() -> T {
    set_errno(libc::ENOSYS);
    T::from(-1)
}

/// SQLite's call, refused while armed (see [`refuse`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    if !armed() {
        return match originals().write {
            // SAFETY: `f` is SQLite's own entry for this call, taken from its
            // system-call table with this signature, and the arguments are the
            // caller's, passed on unchanged.
            Some(f) => unsafe { f(fd, buf, n) },
            None => missing(),
        };
    }
    refuse("write", Target::Fd(fd)) as ssize_t
}

/// SQLite's call, refused while armed (see [`refuse`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_pwrite(fd: c_int, buf: *const c_void, n: size_t, at: off_t) -> ssize_t {
    if !armed() {
        return match originals().pwrite {
            // SAFETY: `f` is SQLite's own entry for this call, taken from its
            // system-call table with this signature, and the arguments are the
            // caller's, passed on unchanged.
            Some(f) => unsafe { f(fd, buf, n, at) },
            None => missing(),
        };
    }
    refuse("write", Target::Fd(fd)) as ssize_t
}

/// SQLite's call, refused while armed (see [`refuse`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_ftruncate(fd: c_int, len: off_t) -> c_int {
    if !armed() {
        return match originals().ftruncate {
            // SAFETY: `f` is SQLite's own entry for this call, taken from its
            // system-call table with this signature, and the arguments are the
            // caller's, passed on unchanged.
            Some(f) => unsafe { f(fd, len) },
            None => missing(),
        };
    }
    refuse("truncate", Target::Fd(fd))
}

/// SQLite's call, refused while armed (see [`refuse`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_fchmod(fd: c_int, mode: mode_t) -> c_int {
    if !armed() {
        return match originals().fchmod {
            // SAFETY: `f` is SQLite's own entry for this call, taken from its
            // system-call table with this signature, and the arguments are the
            // caller's, passed on unchanged.
            Some(f) => unsafe { f(fd, mode) },
            None => missing(),
        };
    }
    refuse("chmod", Target::Fd(fd))
}

/// SQLite's call, refused while armed (see [`refuse`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_fchown(fd: c_int, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    if !armed() {
        return match originals().fchown {
            // SAFETY: `f` is SQLite's own entry for this call, taken from its
            // system-call table with this signature, and the arguments are the
            // caller's, passed on unchanged.
            Some(f) => unsafe { f(fd, uid, gid) },
            None => missing(),
        };
    }
    refuse("chown", Target::Fd(fd))
}

/// SQLite's call, refused while armed (see [`refuse`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_fallocate(fd: c_int, at: off_t, len: off_t) -> c_int {
    if !armed() {
        return match originals().fallocate {
            // SAFETY: `f` is SQLite's own entry for this call, taken from its
            // system-call table with this signature, and the arguments are the
            // caller's, passed on unchanged.
            Some(f) => unsafe { f(fd, at, len) },
            None => missing(),
        };
    }
    // posix_fallocate returns the error instead of setting errno.
    refuse("allocate", Target::Fd(fd));
    libc::EACCES
}

/// SQLite's call, refused while armed (see [`refuse`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_unlink(path: *const c_char) -> c_int {
    if !armed() {
        return match originals().unlink {
            // SAFETY: `f` is SQLite's own entry for this call, taken from its
            // system-call table with this signature, and the arguments are the
            // caller's, passed on unchanged.
            Some(f) => unsafe { f(path) },
            None => missing(),
        };
    }
    refuse("delete", Target::Path(path))
}

/// SQLite's call, refused while armed (see [`refuse`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_mkdir(path: *const c_char, mode: mode_t) -> c_int {
    if !armed() {
        return match originals().mkdir {
            // SAFETY: `f` is SQLite's own entry for this call, taken from its
            // system-call table with this signature, and the arguments are the
            // caller's, passed on unchanged.
            Some(f) => unsafe { f(path, mode) },
            None => missing(),
        };
    }
    refuse("mkdir", Target::Path(path))
}

/// SQLite's call, refused while armed (see [`refuse`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_rmdir(path: *const c_char) -> c_int {
    if !armed() {
        return match originals().rmdir {
            // SAFETY: `f` is SQLite's own entry for this call, taken from its
            // system-call table with this signature, and the arguments are the
            // caller's, passed on unchanged.
            Some(f) => unsafe { f(path) },
            None => missing(),
        };
    }
    refuse("rmdir", Target::Path(path))
}
