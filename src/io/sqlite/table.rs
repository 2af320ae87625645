//! SQLite's table of system calls (`xGetSystemCall`/`xSetSystemCall`) on
//! its default VFS, the same on every system: its originals taken and its
//! entries pointed at hooks, once per process, before the first database
//! is opened. Which entries and which hooks is each system's own
//! (`syscalls` for the unix VFS, `win32` for Windows').

#![allow(unsafe_code)]

use std::ffi::CStr;

use rusqlite::ffi;

/// An entry of the table, as SQLite keeps it (a function of no fixed type).
pub(super) type Syscall = unsafe extern "C" fn();

/// Why SQLite's system calls could not be hooked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// SQLite has no default VFS.
    #[error("SQLite has no default VFS")]
    NoDefaultVfs,
    /// The default VFS is not one with a system-call table.
    #[error("SQLite's default VFS has no system-call table")]
    NoSystemCallTable,
    /// An entry the hooks need is not in the table.
    #[error("SQLite's VFS has no \"{0}\" entry")]
    MissingEntry(String),
    /// The hooks were installed twice.
    #[error("SQLite's system calls were hooked twice")]
    Twice,
    /// The VFS refused to take a hook.
    #[error("SQLite's VFS refused a hook for \"{name}\" (code {code})")]
    Refused {
        /// The entry.
        name: String,
        /// SQLite's result code.
        code: std::ffi::c_int,
    },
}

/// The default VFS's table.
pub(super) struct Table {
    vfs: *mut ffi::sqlite3_vfs,
    get: unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *const std::ffi::c_char) -> Option<Syscall>,
    set: unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *const std::ffi::c_char, Option<Syscall>) -> std::ffi::c_int,
}

impl Table {
    /// The default VFS's table.
    ///
    /// # Errors
    /// No default VFS, or one without a table.
    pub(super) fn of_default_vfs() -> Result<Self, HookError> {
        // SAFETY: sqlite3_vfs_find with NULL returns the default VFS (the
        // library initializes itself first), valid for the process's life.
        let vfs = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
        if vfs.is_null() {
            return Err(HookError::NoDefaultVfs);
        }
        // SAFETY: vfs is valid (above).
        let (get, set) = unsafe { ((*vfs).xGetSystemCall, (*vfs).xSetSystemCall) };
        let (Some(get), Some(set)) = (get, set) else {
            return Err(HookError::NoSystemCallTable);
        };
        Ok(Self { vfs, get, set })
    }

    /// The entry `name` (SQLite's original while no hook is set).
    ///
    /// # Errors
    /// The table has no such entry, or leaves it empty.
    pub(super) fn original(&self, name: &CStr) -> Result<Syscall, HookError> {
        // SAFETY: vfs is valid and name NUL-terminated.
        unsafe { (self.get)(self.vfs, name.as_ptr()) }
            .ok_or_else(|| HookError::MissingEntry(name.to_string_lossy().into_owned()))
    }

    /// Point each entry of `hooks` that SQLite fills at its hook; an entry
    /// SQLite leaves empty is never called and stays empty.
    ///
    /// # Safety
    /// Each hook has the C signature SQLite calls its entry with, and every
    /// original a hook calls is saved where the hook finds it.
    ///
    /// # Errors
    /// SQLite refused an entry.
    pub(super) unsafe fn hook(&self, hooks: &[(&CStr, *const ())]) -> Result<(), HookError> {
        for (name, f) in hooks {
            if self.original(name).is_err() {
                continue;
            }
            // SAFETY: vfs is valid; f has the signature SQLite calls the
            // entry `name` with (the caller's promise).
            let rc =
                unsafe { (self.set)(self.vfs, name.as_ptr(), Some(std::mem::transmute::<*const (), Syscall>(*f))) };
            if rc != ffi::SQLITE_OK {
                return Err(HookError::Refused { name: name.to_string_lossy().into_owned(), code: rc });
            }
        }
        Ok(())
    }
}
