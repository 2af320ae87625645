//! The hooks of the calls that would change a file. What becomes of one
//! depends on the database open on the calling thread ([`write_rule`]):
//! one kbxscope only reads gets `EACCES`, nothing sent to the kernel (the
//! refusal remembered for the error message); a private copy kbxscope
//! writes (a replayed import) gets the call made and counted like any
//! other; with none open the call passes on to SQLite's original.

use std::ffi::{c_char, c_int, c_void};

use libc::{mode_t, off_t, size_t, ssize_t};

use super::originals::originals;
use crate::events::FileOp;
use crate::io::sqlite::sink::{counted, note_refused, on_fd, set_errno, write_rule, Outcome, Target, WriteRule};

/// Refuse a call that would write: nothing reaches the kernel, errno is
/// `EACCES`, and the sink remembers the first such call.
pub(super) fn refuse(what: &str, target: Target) -> c_int {
    note_refused(what, target);
    set_errno(libc::EACCES);
    -1
}

/// One call that would write, as [`write_rule`] says: `call` with SQLite's
/// original (`None` where SQLite left the entry empty: never installed),
/// counted as `op` on `target` when the thread's database is a private
/// copy, refused (`refused` returned) when it is only read.
fn guarded<F: Copy, T: Copy>(
    what: &str,
    op: FileOp,
    target: Target,
    original: Option<F>,
    call: impl FnOnce(F) -> T,
    refused: T,
    result: impl Fn(T) -> Outcome,
) -> T {
    let Some(f) = original else {
        set_errno(libc::ENOSYS);
        return refused;
    };
    match write_rule() {
        WriteRule::Pass => call(f),
        WriteRule::Refuse => {
            refuse(what, target);
            refused
        }
        WriteRule::Count => counted(op, target, None, || call(f), result),
    }
}

fn ok_if_zero(r: c_int) -> Outcome {
    Outcome::ok_if(r == 0)
}

fn written(r: ssize_t) -> Outcome {
    Outcome { failed: r < 0, bytes: None, written: u64::try_from(r).ok(), fd: None }
}

// SAFETY (every hook below): SQLite calls each entry with the arguments of
// the system call it names; the original is SQLite's own entry for that
// call, taken from its table with this signature, and the arguments are
// passed on unchanged.

/// SQLite's `write` (see [`guarded`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    let call = |f: super::originals::WriteFn| unsafe { f(fd, buf, n) };
    guarded("write", FileOp::Write, on_fd(fd), originals().write, call, -1, written)
}

/// SQLite's `pwrite` (see [`guarded`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_pwrite(fd: c_int, buf: *const c_void, n: size_t, at: off_t) -> ssize_t {
    let call = |f: super::originals::PwriteFn| unsafe { f(fd, buf, n, at) };
    guarded("write", FileOp::Write, on_fd(fd), originals().pwrite, call, -1, written)
}

/// SQLite's `ftruncate` (see [`guarded`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_ftruncate(fd: c_int, len: off_t) -> c_int {
    let call = |f: super::originals::FtruncateFn| unsafe { f(fd, len) };
    guarded("truncate", FileOp::Truncate, on_fd(fd), originals().ftruncate, call, -1, ok_if_zero)
}

/// SQLite's `fchmod`, a change of the file's metadata (see [`guarded`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_fchmod(fd: c_int, mode: mode_t) -> c_int {
    let call = |f: super::originals::FchmodFn| unsafe { f(fd, mode) };
    guarded("chmod", FileOp::Stat, on_fd(fd), originals().fchmod, call, -1, ok_if_zero)
}

/// SQLite's `fchown` (run as root, it gives a new journal the database's
/// owner): a change of the file's metadata (see [`guarded`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_fchown(fd: c_int, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    let call = |f: super::originals::FchownFn| unsafe { f(fd, uid, gid) };
    guarded("chown", FileOp::Stat, on_fd(fd), originals().fchown, call, -1, ok_if_zero)
}

/// SQLite's `posix_fallocate`, which returns the error instead of setting
/// errno (see [`guarded`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_fallocate(fd: c_int, at: off_t, len: off_t) -> c_int {
    let call = |f: super::originals::FallocateFn| unsafe { f(fd, at, len) };
    guarded("allocate", FileOp::Truncate, on_fd(fd), originals().fallocate, call, libc::EACCES, ok_if_zero)
}

/// SQLite's `unlink` (a journal removed at a commit; see [`guarded`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_unlink(path: *const c_char) -> c_int {
    let call = |f: super::originals::PathFn| unsafe { f(path) };
    guarded("delete", FileOp::Unlink, Target::Path(path), originals().unlink, call, -1, ok_if_zero)
}

/// SQLite's `mkdir` (see [`guarded`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_mkdir(path: *const c_char, mode: mode_t) -> c_int {
    let call = |f: super::originals::MkdirFn| unsafe { f(path, mode) };
    guarded("mkdir", FileOp::Stat, Target::Path(path), originals().mkdir, call, -1, ok_if_zero)
}

/// SQLite's `rmdir` (see [`guarded`]).
///
/// # Safety
/// The arguments are as the C call takes them (SQLite is the only caller).
pub(super) unsafe extern "C" fn hook_rmdir(path: *const c_char) -> c_int {
    let call = |f: super::originals::PathFn| unsafe { f(path) };
    guarded("rmdir", FileOp::Unlink, Target::Path(path), originals().rmdir, call, -1, ok_if_zero)
}
