//! SQLite's own entries of its system-call table, taken before the hooks
//! replace them, with their C signatures.

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use libc::{mode_t, off_t, size_t, ssize_t};

/// The C signatures of the entries the hooks wrap.
pub(super) type OpenFn = unsafe extern "C" fn(*const c_char, c_int, mode_t) -> c_int;
pub(super) type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
pub(super) type AccessFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
pub(super) type StatFn = unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int;
pub(super) type FstatFn = unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int;
pub(super) type FcntlFn = unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int;
pub(super) type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t;
pub(super) type PreadFn = unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t) -> ssize_t;
pub(super) type ReadlinkFn = unsafe extern "C" fn(*const c_char, *mut c_char, size_t) -> ssize_t;
pub(super) type MmapFn = unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;
pub(super) type WriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t;
pub(super) type PwriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t, off_t) -> ssize_t;
pub(super) type FtruncateFn = unsafe extern "C" fn(c_int, off_t) -> c_int;
pub(super) type FchmodFn = unsafe extern "C" fn(c_int, mode_t) -> c_int;
pub(super) type FchownFn = unsafe extern "C" fn(c_int, libc::uid_t, libc::gid_t) -> c_int;
pub(super) type FallocateFn = unsafe extern "C" fn(c_int, off_t, off_t) -> c_int;
pub(super) type PathFn = unsafe extern "C" fn(*const c_char) -> c_int;
pub(super) type MkdirFn = unsafe extern "C" fn(*const c_char, mode_t) -> c_int;

/// The unix VFS's own entries, saved before ours replaced them.
pub(super) struct Originals {
    pub(super) open: OpenFn,
    pub(super) close: CloseFn,
    pub(super) access: AccessFn,
    pub(super) stat: StatFn,
    pub(super) lstat: StatFn,
    pub(super) fstat: FstatFn,
    pub(super) fcntl: FcntlFn,
    pub(super) read: ReadFn,
    pub(super) pread: PreadFn,
    /// Absent where SQLite reads with `pread` (Linux builds).
    pub(super) pread64: Option<PreadFn>,
    pub(super) readlink: ReadlinkFn,
    pub(super) mmap: MmapFn,
    // The calls that write: refused while a database of kbxscope's is
    // open on the thread, passed on otherwise.
    pub(super) write: Option<WriteFn>,
    pub(super) pwrite: Option<PwriteFn>,
    pub(super) ftruncate: Option<FtruncateFn>,
    pub(super) fchmod: Option<FchmodFn>,
    pub(super) fchown: Option<FchownFn>,
    pub(super) fallocate: Option<FallocateFn>,
    pub(super) unlink: Option<PathFn>,
    pub(super) mkdir: Option<MkdirFn>,
    pub(super) rmdir: Option<PathFn>,
}

/// The originals, set before the first hook is installed.
pub(super) static ORIGINALS: OnceLock<Originals> = OnceLock::new();

pub(super) fn originals() -> &'static Originals {
    match ORIGINALS.get() {
        Some(o) => o,
        // The table points at a hook only after ORIGINALS holds the originals.
        None => unreachable!("SQLite's system calls hooked without their originals"),
    }
}
