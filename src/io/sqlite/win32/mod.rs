//! SQLite's calls on Windows, counted: the win32 VFS's own table of
//! system calls (`xSetSystemCall`, as on Unix) points at the hooks here,
//! so that every call SQLite makes on a file — `CreateFileW`, `ReadFile`,
//! `GetFileSize`, `LockFileEx`/`UnlockFileEx` (`LockFile`/`UnlockFile`
//! where Windows lacks them), `GetFileAttributesExW`/`GetFileAttributesW`
//! (its `xAccess`, and the directory check of each open), `SetFilePointer`
//! and `CloseHandle` — is one file event, timed, counted per file and
//! traced like the keybox layer's. The win32 VFS reads with `ReadFile` at
//! an offset (an `OVERLAPPED`), Windows' `pread`: one event per read, as
//! on Unix. Its retries (after a sharing violation, say) are calls of
//! their own, each counted.
//!
//! Operations: `CreateFileW` is an open, `ReadFile` a read, `GetFileSize`
//! a stat, the lock calls locks, the attribute queries stats (a stat by
//! path, as the unix VFS's `stat` for the same questions: does the journal
//! exist, is the database a directory), `SetFilePointer` a seek and
//! `CloseHandle` a close (of a handle opened while the database was open;
//! SQLite closes no other handle through the table while one is).
//!
//! Nothing is ever written beside a database kbxscope reads: while one is
//! open on the thread, `WriteFile`, `SetEndOfFile`, `FlushFileBuffers`,
//! `DeleteFileW` and a `CreateFileW` that asks for write access, or
//! would create or truncate, are refused with `ERROR_WRITE_PROTECT`
//! (SQLite retries `ERROR_ACCESS_DENIED` for a while: an anti-virus
//! program may hold the file) before they reach the system; a private
//! copy's are made and counted (writes, truncations, syncs, deletions).
//! With no database of kbxscope's open on the thread, a call passes on to
//! the original, uncounted.

#![allow(unsafe_code)]

use std::ffi::{c_void, CStr};
use std::sync::OnceLock;

use windows_sys::core::BOOL;
use windows_sys::Win32::Foundation::{
    ERROR_HANDLE_EOF, ERROR_WRITE_PROTECT, GENERIC_ALL, GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE, NO_ERROR,
};
use windows_sys::Win32::Storage::FileSystem::{
    DELETE, FILE_APPEND_DATA, FILE_FLAG_DELETE_ON_CLOSE, FILE_WRITE_ATTRIBUTES, FILE_WRITE_DATA, FILE_WRITE_EA,
    INVALID_FILE_ATTRIBUTES, OPEN_EXISTING,
};
use windows_sys::Win32::System::IO::OVERLAPPED;

use super::sink::{counted, errno, knows, note_refused, set_errno, write_rule, Outcome, Target, WriteRule};
use super::table::{HookError, Syscall, Table};
use crate::events::FileOp;
use originals::{originals, ORIGINALS};

mod originals;

/// SQLite's own VFS here; a private copy is opened on it too (its syncs
/// are `FlushFileBuffers`, in the table).
pub(super) const VFS_NAME: &CStr = c"win32";

/// Whether the hooks are installed (once per process).
static INSTALLED: OnceLock<Result<(), HookError>> = OnceLock::new();

/// The access rights that let a handle change its file.
const WRITE_ACCESS: u32 =
    GENERIC_WRITE | GENERIC_ALL | FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_ATTRIBUTES | FILE_WRITE_EA | DELETE;

fn on(h: HANDLE) -> Target {
    Target::Fd(h as isize)
}

fn ok_if(r: BOOL) -> Outcome {
    Outcome::ok_if(r != 0)
}

/// A call's result with the last error it left (read at once, before any
/// bookkeeping).
fn with_error<T>(call: impl FnOnce() -> T) -> (T, u32) {
    let r = call();
    (r, errno().cast_unsigned())
}

/// The offset an `OVERLAPPED` gives a read or a lock, if any.
///
/// # Safety
/// `ov` is null or points at a valid `OVERLAPPED`.
unsafe fn offset_of(ov: *const OVERLAPPED) -> Option<u64> {
    // SAFETY: the caller's promise; a file's offset is in the struct's
    // Offset/OffsetHigh form of its union (SQLite sets it so).
    let o = unsafe { ov.as_ref() }?;
    let at = unsafe { o.Anonymous.Anonymous };
    Some(u64::from(at.Offset) | (u64::from(at.OffsetHigh) << 32))
}

/// Refuse a call that would write: nothing reaches the system, the last
/// error is `ERROR_WRITE_PROTECT`, and the sink remembers the first one.
fn refuse(what: &str, target: Target) {
    note_refused(what, target);
    set_errno(ERROR_WRITE_PROTECT.cast_signed());
}

/// One call that would write, as [`write_rule`] says: made (and counted as
/// `op` for a private copy), or refused with `refused` returned.
fn guarded<T: Copy + Into<i64>>(what: &str, op: FileOp, target: Target, call: impl FnOnce() -> T, refused: T) -> T {
    match write_rule() {
        WriteRule::Pass => call(),
        WriteRule::Refuse => {
            refuse(what, target);
            refused
        }
        WriteRule::Count => counted(op, target, None, call, |r| Outcome::ok_if(r.into() != 0)),
    }
}

// SAFETY (every hook below): SQLite calls each entry with the arguments of
// the Win32 function it names; the original is SQLite's own entry for it,
// taken from its table with this signature, and the arguments are passed
// on unchanged.

unsafe extern "system" fn hook_create_file_w(
    name: *const u16,
    access: u32,
    share: u32,
    security: *const c_void,
    disposition: u32,
    flags: u32,
    template: HANDLE,
) -> HANDLE {
    let writes = access & WRITE_ACCESS != 0 || disposition != OPEN_EXISTING || flags & FILE_FLAG_DELETE_ON_CLOSE != 0;
    if writes && write_rule() == WriteRule::Refuse {
        refuse("open for writing", Target::Path(name));
        return INVALID_HANDLE_VALUE;
    }
    let f = originals().create_file_w;
    counted(
        FileOp::Open,
        Target::Opened(name),
        None,
        || unsafe { f(name, access, share, security, disposition, flags, template) },
        |h| {
            let failed = h == INVALID_HANDLE_VALUE;
            Outcome { failed, bytes: None, written: None, fd: (!failed).then_some(h as isize) }
        },
    )
}

unsafe extern "system" fn hook_close_handle(h: HANDLE) -> BOOL {
    let f = originals().close_handle;
    if !knows(h as isize) {
        return unsafe { f(h) };
    }
    counted(FileOp::Close, on(h), None, || unsafe { f(h) }, ok_if)
}

unsafe extern "system" fn hook_read_file(
    h: HANDLE,
    buf: *mut c_void,
    n: u32,
    read: *mut u32,
    ov: *mut OVERLAPPED,
) -> BOOL {
    let f = originals().read_file;
    let offset = unsafe { offset_of(ov) };
    let call = || with_error(|| unsafe { f(h, buf, n, read, ov) });
    let (r, _) = counted(FileOp::Read, on(h), offset, call, |(r, e)| {
        // At the end of the file a read at an offset fails with
        // ERROR_HANDLE_EOF: a read of no bytes, as pread's 0 on Unix.
        let failed = r == 0 && e != ERROR_HANDLE_EOF;
        // SAFETY: SQLite passes a valid count pointer, set by the call.
        let got = if failed { None } else { unsafe { read.as_ref() }.map(|n| u64::from(*n)) };
        Outcome { failed, bytes: got, written: None, fd: None }
    });
    r
}

unsafe extern "system" fn hook_get_file_size(h: HANDLE, high: *mut u32) -> u32 {
    let f = originals().get_file_size;
    let call = || with_error(|| unsafe { f(h, high) });
    let (r, _) = counted(FileOp::Stat, on(h), None, call, |(r, e)| Outcome::ok_if(r != u32::MAX || e == NO_ERROR));
    r
}

unsafe extern "system" fn hook_set_file_pointer(h: HANDLE, low: i32, high: *mut i32, method: u32) -> u32 {
    let f = originals().set_file_pointer;
    let call = || with_error(|| unsafe { f(h, low, high, method) });
    let (r, _) = counted(FileOp::Seek, on(h), None, call, |(r, e)| Outcome::ok_if(r != u32::MAX || e == NO_ERROR));
    r
}

unsafe extern "system" fn hook_lock_file_ex(
    h: HANDLE,
    flags: u32,
    reserved: u32,
    low: u32,
    high: u32,
    ov: *mut OVERLAPPED,
) -> BOOL {
    let f = originals().lock_file_ex;
    let offset = unsafe { offset_of(ov) };
    counted(FileOp::Lock, on(h), offset, || unsafe { f(h, flags, reserved, low, high, ov) }, ok_if)
}

unsafe extern "system" fn hook_unlock_file_ex(
    h: HANDLE,
    reserved: u32,
    low: u32,
    high: u32,
    ov: *mut OVERLAPPED,
) -> BOOL {
    let f = originals().unlock_file_ex;
    let offset = unsafe { offset_of(ov) };
    counted(FileOp::Lock, on(h), offset, || unsafe { f(h, reserved, low, high, ov) }, ok_if)
}

unsafe extern "system" fn hook_lock_file(h: HANDLE, at_low: u32, at_high: u32, low: u32, high: u32) -> BOOL {
    let f = originals().lock_file;
    let offset = Some(u64::from(at_low) | (u64::from(at_high) << 32));
    counted(FileOp::Lock, on(h), offset, || unsafe { f(h, at_low, at_high, low, high) }, ok_if)
}

unsafe extern "system" fn hook_unlock_file(h: HANDLE, at_low: u32, at_high: u32, low: u32, high: u32) -> BOOL {
    let f = originals().unlock_file;
    let offset = Some(u64::from(at_low) | (u64::from(at_high) << 32));
    counted(FileOp::Lock, on(h), offset, || unsafe { f(h, at_low, at_high, low, high) }, ok_if)
}

unsafe extern "system" fn hook_get_file_attributes_ex_w(name: *const u16, level: i32, info: *mut c_void) -> BOOL {
    let f = originals().get_file_attributes_ex_w;
    counted(FileOp::Stat, Target::Path(name), None, || unsafe { f(name, level, info) }, ok_if)
}

unsafe extern "system" fn hook_get_file_attributes_w(name: *const u16) -> u32 {
    let f = originals().get_file_attributes_w;
    counted(
        FileOp::Stat,
        Target::Path(name),
        None,
        || unsafe { f(name) },
        |r| Outcome::ok_if(r != INVALID_FILE_ATTRIBUTES),
    )
}

unsafe extern "system" fn hook_write_file(
    h: HANDLE,
    buf: *const c_void,
    n: u32,
    written: *mut u32,
    ov: *mut OVERLAPPED,
) -> BOOL {
    let f = originals().write_file;
    let call = || unsafe { f(h, buf, n, written, ov) };
    match write_rule() {
        WriteRule::Pass => call(),
        WriteRule::Refuse => {
            refuse("write", on(h));
            0
        }
        WriteRule::Count => {
            let offset = unsafe { offset_of(ov) };
            counted(FileOp::Write, on(h), offset, call, |r| {
                // SAFETY: SQLite passes a valid count pointer, set by the call.
                let n = if r == 0 { None } else { unsafe { written.as_ref() }.map(|n| u64::from(*n)) };
                Outcome { failed: r == 0, bytes: None, written: n, fd: None }
            })
        }
    }
}

unsafe extern "system" fn hook_set_end_of_file(h: HANDLE) -> BOOL {
    let f = originals().set_end_of_file;
    guarded("truncate", FileOp::Truncate, on(h), || unsafe { f(h) }, 0)
}

unsafe extern "system" fn hook_flush_file_buffers(h: HANDLE) -> BOOL {
    let f = originals().flush_file_buffers;
    guarded("sync", FileOp::Sync, on(h), || unsafe { f(h) }, 0)
}

unsafe extern "system" fn hook_delete_file_w(name: *const u16) -> BOOL {
    let f = originals().delete_file_w;
    guarded("delete", FileOp::Unlink, Target::Path(name), || unsafe { f(name) }, 0)
}

/// Point SQLite's win32 VFS at the hooks, once per process, before the
/// first database is opened.
///
/// # Errors
/// The default VFS has no system-call table, or an entry is missing.
pub(super) fn install() -> Result<(), HookError> {
    INSTALLED.get_or_init(install_now).clone()
}

fn install_now() -> Result<(), HookError> {
    let table = Table::of_default_vfs()?;
    let original = |name: &CStr| table.original(name);
    // SAFETY: each entry holds the Win32 function it is named after, with
    // that function's signature; the transmutes restore it.
    let o = unsafe {
        use originals::*;
        Originals {
            create_file_w: std::mem::transmute::<Syscall, CreateFileWFn>(original(c"CreateFileW")?),
            close_handle: std::mem::transmute::<Syscall, HandleFn>(original(c"CloseHandle")?),
            read_file: std::mem::transmute::<Syscall, ReadFileFn>(original(c"ReadFile")?),
            get_file_size: std::mem::transmute::<Syscall, GetFileSizeFn>(original(c"GetFileSize")?),
            set_file_pointer: std::mem::transmute::<Syscall, SetFilePointerFn>(original(c"SetFilePointer")?),
            lock_file_ex: std::mem::transmute::<Syscall, LockFileExFn>(original(c"LockFileEx")?),
            unlock_file_ex: std::mem::transmute::<Syscall, UnlockFileExFn>(original(c"UnlockFileEx")?),
            lock_file: std::mem::transmute::<Syscall, LockFileFn>(original(c"LockFile")?),
            unlock_file: std::mem::transmute::<Syscall, LockFileFn>(original(c"UnlockFile")?),
            get_file_attributes_ex_w: std::mem::transmute::<Syscall, GetFileAttributesExWFn>(original(
                c"GetFileAttributesExW",
            )?),
            get_file_attributes_w: std::mem::transmute::<Syscall, GetFileAttributesWFn>(original(
                c"GetFileAttributesW",
            )?),
            write_file: std::mem::transmute::<Syscall, WriteFileFn>(original(c"WriteFile")?),
            set_end_of_file: std::mem::transmute::<Syscall, HandleFn>(original(c"SetEndOfFile")?),
            flush_file_buffers: std::mem::transmute::<Syscall, HandleFn>(original(c"FlushFileBuffers")?),
            delete_file_w: std::mem::transmute::<Syscall, DeleteFileWFn>(original(c"DeleteFileW")?),
        }
    };
    macro_rules! hooks {
        ($($name:literal => $f:expr),* $(,)?) => {[$(($name, $f as *const ())),*]};
    }
    let hooks: [(&CStr, *const ()); 15] = hooks![
        c"CreateFileW" => hook_create_file_w as originals::CreateFileWFn,
        c"CloseHandle" => hook_close_handle as originals::HandleFn,
        c"ReadFile" => hook_read_file as originals::ReadFileFn,
        c"GetFileSize" => hook_get_file_size as originals::GetFileSizeFn,
        c"SetFilePointer" => hook_set_file_pointer as originals::SetFilePointerFn,
        c"LockFileEx" => hook_lock_file_ex as originals::LockFileExFn,
        c"UnlockFileEx" => hook_unlock_file_ex as originals::UnlockFileExFn,
        c"LockFile" => hook_lock_file as originals::LockFileFn,
        c"UnlockFile" => hook_unlock_file as originals::LockFileFn,
        c"GetFileAttributesExW" => hook_get_file_attributes_ex_w as originals::GetFileAttributesExWFn,
        c"GetFileAttributesW" => hook_get_file_attributes_w as originals::GetFileAttributesWFn,
        c"WriteFile" => hook_write_file as originals::WriteFileFn,
        c"SetEndOfFile" => hook_set_end_of_file as originals::HandleFn,
        c"FlushFileBuffers" => hook_flush_file_buffers as originals::HandleFn,
        c"DeleteFileW" => hook_delete_file_w as originals::DeleteFileWFn,
    ];
    // The originals must be in place before the first hook can run.
    if ORIGINALS.set(o).is_err() {
        return Err(HookError::Twice);
    }
    // SAFETY: each hook has the signature SQLite calls its entry with (the
    // casts above), and ORIGINALS holds every original they call.
    unsafe { table.hook(&hooks) }
}
