//! SQLite's `fsync`s, counted. The unix VFS calls `fsync` (or
//! `fdatasync`) directly, outside its table of system calls, so the table's
//! hooks cannot see it; a VFS of kbxscope's own ([`VFS_NAME`]) is the
//! default unix VFS with one change: the files it opens have the unix
//! VFS's own methods but for `xSync`, which counts the call around
//! SQLite's own. Each `xSync` is one `fsync` of the file, and, for a
//! journal SQLite has just made, an `open`, `fsync` and `close` of its
//! directory (the open and close counted by the table's hooks, the
//! directory's `fsync` between them here). Only private copies that
//! kbxscope writes are opened on this VFS.

use std::ffi::{c_char, c_int, CStr};
use std::rc::Rc;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rusqlite::ffi;

use crate::events::FileOp;
use crate::io::event::Stopwatch;
use crate::io::sqlite::sink::{path_name, SyncWatch, SINK};
use crate::io::sqlite::table::HookError;

/// The name of kbxscope's VFS (the unix VFS with its syncs counted).
pub(in crate::io::sqlite) const VFS_NAME: &CStr = c"kbxscope-unix";

/// The unix VFS, and the method tables of the files kbxscope's VFS opened.
struct Shim {
    unix: *mut ffi::sqlite3_vfs,
    /// Each of the unix VFS's method tables met (a database's, a
    /// journal's without locking), by address, with its copy whose `xSync`
    /// is counted.
    tables: Mutex<Vec<(usize, &'static ffi::sqlite3_io_methods)>>,
}

// SAFETY: the pointers are SQLite's own static tables and VFS, valid for
// the process's life and only read; the list is behind a mutex.
unsafe impl Send for Shim {}
// SAFETY: as above.
unsafe impl Sync for Shim {}

static SHIM: OnceLock<Shim> = OnceLock::new();
static REGISTERED: OnceLock<Result<(), HookError>> = OnceLock::new();

/// Register kbxscope's VFS, once per process (after the table's hooks).
///
/// # Errors
/// No default VFS, or SQLite refused the registration.
pub(in crate::io::sqlite) fn register() -> Result<(), HookError> {
    REGISTERED.get_or_init(register_now).clone()
}

fn register_now() -> Result<(), HookError> {
    // SAFETY: NULL asks for the default VFS, valid for the process's life.
    let unix = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
    if unix.is_null() {
        return Err(HookError::NoDefaultVfs);
    }
    if SHIM.set(Shim { unix, tables: Mutex::new(Vec::new()) }).is_err() {
        return Err(HookError::Twice);
    }
    // SAFETY: `unix` is valid (above); the copy keeps every method of the
    // unix VFS (none of which but xOpen looks at its VFS argument beyond
    // what the copy holds) and replaces xOpen and the name.
    let mut ours: ffi::sqlite3_vfs = unsafe { *unix };
    ours.pNext = std::ptr::null_mut();
    ours.zName = VFS_NAME.as_ptr();
    ours.xOpen = Some(open);
    // SQLite keeps the pointer for the process's life: leaked on purpose.
    let ours = Box::leak(Box::new(ours));
    // SAFETY: `ours` lives forever and is a complete VFS; 0: not the default.
    let rc = unsafe { ffi::sqlite3_vfs_register(ours, 0) };
    if rc != ffi::SQLITE_OK {
        return Err(HookError::Refused { name: "vfs".into(), code: rc });
    }
    Ok(())
}

thread_local! {
    /// The files open on this thread through kbxscope's VFS, by their
    /// `sqlite3_file` address, with their names.
    static NAMES: std::cell::RefCell<Vec<(usize, Rc<str>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The unix VFS's `xOpen`, then the file's methods swapped for the copy
/// whose `xSync` is counted.
unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let shim = SHIM.get().expect("registered before use");
    // SAFETY: the unix VFS is valid; SQLite passes a file of szOsFile bytes
    // (the unix VFS's size, which the copy keeps) and the other arguments
    // as for any xOpen.
    let rc = unsafe {
        let Some(x_open) = (*shim.unix).xOpen else { return ffi::SQLITE_CANTOPEN };
        x_open(shim.unix, name, file, flags, out_flags)
    };
    // SAFETY: after a successful open `file` is the unix VFS's file.
    let methods = unsafe { (*file).pMethods };
    if rc != ffi::SQLITE_OK || methods.is_null() {
        return rc;
    }
    let counted: &'static ffi::sqlite3_io_methods = {
        let mut tables = shim.tables.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match tables.iter().find(|(o, _)| *o == methods as usize) {
            Some((_, c)) => c,
            None => {
                // SAFETY: `methods` points at one of the unix VFS's static
                // method tables; the copy lives for the process's life.
                let mut m = unsafe { *methods };
                m.xSync = Some(sync);
                let c: &'static ffi::sqlite3_io_methods = Box::leak(Box::new(m));
                tables.push((methods as usize, c));
                c
            }
        }
    };
    // SAFETY: the copy lives forever and calls the same methods on the
    // same file but for xSync, which calls the original's own.
    unsafe { (*file).pMethods = counted };
    if !name.is_null() {
        let n = path_name(name as *const c_char);
        let _ = NAMES.try_with(|names| {
            let Ok(mut names) = names.try_borrow_mut() else { return };
            names.retain(|(f, _)| *f != file as usize);
            names.push((file as usize, n));
        });
    }
    rc
}

/// The unix VFS's `xSync`, counted: one `fsync` of the file, and of the
/// directory SQLite opened and closed meanwhile, if any.
unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let shim = SHIM.get().expect("registered before use");
    // SAFETY: SQLite calls xSync on a file it opened, whose methods are
    // one of the copies made at its open.
    let methods = unsafe { (*file).pMethods } as usize;
    let original = {
        let tables = shim.tables.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        tables.iter().find(|(_, c)| std::ptr::from_ref(*c) as usize == methods).map(|(o, _)| *o)
    }
    .and_then(|o| {
        // SAFETY: the address is one of the unix VFS's static method tables.
        unsafe { (*(o as *const ffi::sqlite3_io_methods)).xSync }
    });
    let Some(original) = original else { return ffi::SQLITE_IOERR_FSYNC };
    let name = NAMES
        .try_with(|n| n.try_borrow().ok()?.iter().rev().find(|(f, _)| *f == file as usize).map(|(_, n)| n.clone()))
        .ok()
        .flatten();
    // As every hook: a sink that cannot be had (thread ending, borrowed)
    // leaves the call uncounted, never fails it.
    let armed = SINK.try_with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        let sink = s.as_mut()?;
        sink.syncing = Some(SyncWatch::default());
        Some((sink.trace, sink.template_buffer_size()))
    });
    let Ok(Some((trace, buffer_size))) = armed else {
        // SAFETY: SQLite's own method on its own file.
        return unsafe { original(file, flags) };
    };
    let span = trace.then(|| crate::io::event::event_span(FileOp::Sync, buffer_size, None));
    if let (Some(span), Some(n)) = (&span, &name) {
        span.record("file", tracing::field::display(n.as_ref()));
    }
    let entered = span.as_ref().map(tracing::Span::enter);
    let watch = Stopwatch::start();
    // SAFETY: SQLite's own method on its own file, with SQLite's arguments.
    let rc = unsafe { original(file, flags) };
    let took = watch.map_or(Duration::ZERO, |w| w.elapsed());
    drop(entered);
    let _ = SINK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else { return };
        let Some(sink) = s.as_mut() else { return };
        let w = sink.syncing.take().unwrap_or_default();
        let mut own = took.saturating_sub(w.around);
        if let Some((dir, t)) = w.dir_synced {
            own = own.saturating_sub(t);
            sink.stats_of(&dir).record(FileOp::Sync, t);
        }
        let file_name = name.unwrap_or_else(|| Rc::from("(unnamed)"));
        sink.stats_of(&file_name).record(FileOp::Sync, own);
    });
    rc
}
