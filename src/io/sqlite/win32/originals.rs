//! The win32 VFS's own entries of its system-call table, taken before the
//! hooks replace them, with their signatures (`WINAPI`, which is the C
//! calling convention on x86-64).

use std::ffi::c_void;
use std::sync::OnceLock;

use windows_sys::core::BOOL;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::IO::OVERLAPPED;

/// `CreateFileW`.
pub(super) type CreateFileWFn =
    unsafe extern "system" fn(*const u16, u32, u32, *const c_void, u32, u32, HANDLE) -> HANDLE;
/// `CloseHandle`, `FlushFileBuffers`, `SetEndOfFile`.
pub(super) type HandleFn = unsafe extern "system" fn(HANDLE) -> BOOL;
/// `ReadFile`.
pub(super) type ReadFileFn = unsafe extern "system" fn(HANDLE, *mut c_void, u32, *mut u32, *mut OVERLAPPED) -> BOOL;
/// `WriteFile`.
pub(super) type WriteFileFn = unsafe extern "system" fn(HANDLE, *const c_void, u32, *mut u32, *mut OVERLAPPED) -> BOOL;
/// `GetFileSize`.
pub(super) type GetFileSizeFn = unsafe extern "system" fn(HANDLE, *mut u32) -> u32;
/// `SetFilePointer`.
pub(super) type SetFilePointerFn = unsafe extern "system" fn(HANDLE, i32, *mut i32, u32) -> u32;
/// `LockFileEx`.
pub(super) type LockFileExFn = unsafe extern "system" fn(HANDLE, u32, u32, u32, u32, *mut OVERLAPPED) -> BOOL;
/// `UnlockFileEx`.
pub(super) type UnlockFileExFn = unsafe extern "system" fn(HANDLE, u32, u32, u32, *mut OVERLAPPED) -> BOOL;
/// `LockFile`, `UnlockFile`.
pub(super) type LockFileFn = unsafe extern "system" fn(HANDLE, u32, u32, u32, u32) -> BOOL;
/// `GetFileAttributesExW`.
pub(super) type GetFileAttributesExWFn = unsafe extern "system" fn(*const u16, i32, *mut c_void) -> BOOL;
/// `GetFileAttributesW`.
pub(super) type GetFileAttributesWFn = unsafe extern "system" fn(*const u16) -> u32;
/// `DeleteFileW`.
pub(super) type DeleteFileWFn = unsafe extern "system" fn(*const u16) -> BOOL;

/// The win32 VFS's own entries, saved before ours replaced them.
pub(super) struct Originals {
    pub(super) create_file_w: CreateFileWFn,
    pub(super) close_handle: HandleFn,
    pub(super) read_file: ReadFileFn,
    pub(super) get_file_size: GetFileSizeFn,
    pub(super) set_file_pointer: SetFilePointerFn,
    pub(super) lock_file_ex: LockFileExFn,
    pub(super) unlock_file_ex: UnlockFileExFn,
    pub(super) lock_file: LockFileFn,
    pub(super) unlock_file: LockFileFn,
    pub(super) get_file_attributes_ex_w: GetFileAttributesExWFn,
    pub(super) get_file_attributes_w: GetFileAttributesWFn,
    // The calls that write: refused while a database kbxscope only reads
    // is open on the thread, made and counted for a private copy, passed
    // on otherwise.
    pub(super) write_file: WriteFileFn,
    pub(super) set_end_of_file: HandleFn,
    pub(super) flush_file_buffers: HandleFn,
    pub(super) delete_file_w: DeleteFileWFn,
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
