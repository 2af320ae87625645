//! SQLite's system calls, counted: the unix VFS's own table of system
//! calls (`xSetSystemCall`) points at the hooks here, so that every call
//! SQLite makes on a file — `open`, `pread`, `fstat`, `stat`, `lstat`,
//! `access`, `fcntl` locks, `readlink`, `close`, `mmap` — is one file event,
//! timed, counted per file and traced like the keybox layer's, and equal
//! to what `strace` sees (SQLite makes no file system call outside that
//! table but `fsync`, which a reader never reaches).
//!
//! Nothing is ever written beside a database kbxscope reads: while one is
//! open on the thread, the calls that would change a file (`write`,
//! `pwrite`, `ftruncate`, `fchmod`, `fchown`, `fallocate`, `unlink`,
//! `mkdir`, `rmdir`, `open` with a write or create flag, a shared writable
//! `mmap`) are refused here with `EACCES` before they reach the kernel, and
//! the refusal is remembered so that the caller can say what SQLite wanted.
//! (SQLite opens kbxscope's databases read-only, so it has no reason to
//! try; this makes sure.)
//!
//! The table is process-wide and its entries take no context, so events go
//! to the calling thread's [`Sink`], armed by [`Armed`] while a database
//! is open on that thread. A call while none is armed (no database of
//! kbxscope's open on the thread: SQLite used otherwise in the process)
//! passes through to the original, uncounted and unrefused.

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::rc::Rc;
use std::sync::OnceLock;

use libc::{mode_t, off_t, size_t, ssize_t};
use rusqlite::ffi;

use crate::events::{FileOp, IoStats};
use writes::{
    hook_fallocate, hook_fchmod, hook_fchown, hook_ftruncate, hook_mkdir, hook_pwrite, hook_rmdir, hook_unlink,
    hook_write, refuse,
};

mod writes;

/// Where the calling thread's events go while a database is open on it.
#[derive(Debug, Default)]
pub(super) struct Sink {
    /// Open descriptors and the files they are on.
    fds: Vec<(c_int, Rc<str>)>,
    /// Per file, in the order first touched.
    pub(super) files: Vec<(Rc<str>, IoStats)>,
    /// A fresh `IoStats` for a new file (histograms or not, buffer size).
    template: IoStats,
    /// Whether event spans are wanted.
    trace: bool,
    /// The first call refused because it would have written: what and on what.
    pub(super) refused: Option<String>,
}

impl Sink {
    pub(super) fn new(template: IoStats, trace: bool) -> Self {
        Self { template, trace, ..Self::default() }
    }

    fn name_of_fd(&self, fd: c_int) -> Option<Rc<str>> {
        self.fds.iter().rev().find(|(f, _)| *f == fd).map(|(_, n)| n.clone())
    }

    fn stats_of(&mut self, name: &Rc<str>) -> &mut IoStats {
        let i = match self.files.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                self.files.push((name.clone(), self.template.clone()));
                self.files.len() - 1
            }
        };
        &mut self.files[i].1
    }
}

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// A sink armed on this thread; disarmed (and handed back) by [`Armed::disarm`].
pub(super) struct Armed(());

impl Armed {
    /// Arm `sink` on this thread. `None` if one is armed already (one
    /// database at a time per thread).
    pub(super) fn arm(sink: Sink) -> Option<Armed> {
        SINK.with(|s| {
            let mut s = s.borrow_mut();
            if s.is_some() {
                return None;
            }
            *s = Some(sink);
            Some(Armed(()))
        })
    }

    /// Look at the sink (the refusal so far, say).
    pub(super) fn with<R>(&self, f: impl FnOnce(&Sink) -> R) -> R {
        SINK.with(|s| f(s.borrow().as_ref().expect("armed")))
    }

    /// Disarm: the sink with everything counted.
    pub(super) fn disarm(self) -> Sink {
        SINK.with(|s| s.borrow_mut().take().expect("armed"))
    }
}

/// What one call touched, for the books.
#[derive(Clone, Copy)]
enum Target {
    /// A descriptor.
    Fd(c_int),
    /// A path.
    Path(*const c_char),
    /// A path being opened: the descriptor is the call's result.
    Opened(*const c_char),
}

/// How one call ended.
struct Outcome {
    failed: bool,
    /// For reads, the bytes returned.
    bytes: Option<u64>,
    /// For opens, the new descriptor.
    fd: Option<c_int>,
}

impl Outcome {
    fn ok_if(ok: bool) -> Self {
        Self { failed: !ok, bytes: None, fd: None }
    }
}

fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() }
}

fn set_errno(e: c_int) {
    // SAFETY: as in errno().
    unsafe { *libc::__errno_location() = e }
}

fn path_name(p: *const c_char) -> Rc<str> {
    if p.is_null() {
        return Rc::from("(null)");
    }
    // SAFETY: SQLite passes NUL-terminated paths that live for the call.
    Rc::from(unsafe { CStr::from_ptr(p) }.to_string_lossy().as_ref())
}

/// Run `call` (one system call) as `op` on `target`, counting it in the
/// armed sink, if any. `result` says whether it failed and, for reads, how
/// many bytes it returned. errno is what the call left.
fn counted<T: Copy>(
    op: FileOp,
    target: Target,
    offset: Option<u64>,
    call: impl FnOnce() -> T,
    result: impl Fn(T) -> Outcome,
) -> T {
    let armed =
        SINK.try_with(|s| s.try_borrow().ok().and_then(|s| s.as_ref().map(|s| (s.trace, s.template.buffer_size))));
    let Ok(Some((trace, buffer_size))) = armed else {
        return call();
    };
    let span = trace.then(|| crate::io::event::event_span(op, buffer_size, offset));
    let entered = span.as_ref().map(tracing::Span::enter);
    let watch = crate::io::event::Stopwatch::start();
    let r = call();
    let took = watch.map_or(std::time::Duration::ZERO, |w| w.elapsed());
    let saved = errno();
    let Outcome { failed, bytes, fd: opened } = result(r);
    let _ = SINK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else { return };
        let Some(sink) = s.as_mut() else { return };
        let name = match target {
            Target::Fd(fd) => sink.name_of_fd(fd).unwrap_or_else(|| Rc::from(format!("fd {fd}").as_str())),
            Target::Path(p) => path_name(p),
            Target::Opened(p) => {
                let name = path_name(p);
                if let (Some(fd), false) = (opened, failed) {
                    sink.fds.push((fd, name.clone()));
                }
                name
            }
        };
        if let Some(span) = &span {
            span.record("file", tracing::field::display(name.as_ref()));
        }
        let stats = sink.stats_of(&name);
        stats.record(op, took);
        if let (Some(n), false) = (bytes, failed) {
            stats.record_read(usize::try_from(n).unwrap_or(usize::MAX));
            if let Some(span) = &span {
                span.record("bytes", n);
            }
        }
        if failed {
            if let Some(span) = &span {
                span.record("error", tracing::field::display(std::io::Error::from_raw_os_error(saved)));
            }
        }
        if op == FileOp::Close && !failed {
            if let Target::Fd(fd) = target {
                if let Some(i) = sink.fds.iter().rposition(|(f, _)| *f == fd) {
                    sink.fds.remove(i);
                }
            }
        }
    });
    drop(entered);
    set_errno(saved);
    r
}

/// Whether a database of kbxscope's is open on this thread (its calls are
/// counted, and those that would write refused).
fn armed() -> bool {
    SINK.try_with(|s| s.try_borrow().map_or(true, |s| s.is_some())).unwrap_or(false)
}

/// The C signatures of the entries the hooks wrap.
type OpenFn = unsafe extern "C" fn(*const c_char, c_int, mode_t) -> c_int;
type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
type AccessFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type StatFn = unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int;
type FstatFn = unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int;
type FcntlFn = unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int;
type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t;
type PreadFn = unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t) -> ssize_t;
type ReadlinkFn = unsafe extern "C" fn(*const c_char, *mut c_char, size_t) -> ssize_t;
type MmapFn = unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;
type WriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t;
type PwriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t, off_t) -> ssize_t;
type FtruncateFn = unsafe extern "C" fn(c_int, off_t) -> c_int;
type FchmodFn = unsafe extern "C" fn(c_int, mode_t) -> c_int;
type FchownFn = unsafe extern "C" fn(c_int, libc::uid_t, libc::gid_t) -> c_int;
type FallocateFn = unsafe extern "C" fn(c_int, off_t, off_t) -> c_int;
type PathFn = unsafe extern "C" fn(*const c_char) -> c_int;
type MkdirFn = unsafe extern "C" fn(*const c_char, mode_t) -> c_int;

/// The unix VFS's own entries, saved before ours replaced them.
struct Originals {
    open: OpenFn,
    close: CloseFn,
    access: AccessFn,
    stat: StatFn,
    lstat: StatFn,
    fstat: FstatFn,
    fcntl: FcntlFn,
    read: ReadFn,
    pread: PreadFn,
    /// Absent where SQLite reads with `pread` (Linux builds).
    pread64: Option<PreadFn>,
    readlink: ReadlinkFn,
    mmap: MmapFn,
    // The calls that write: refused while a database of kbxscope's is
    // open on the thread, passed on otherwise.
    write: Option<WriteFn>,
    pwrite: Option<PwriteFn>,
    ftruncate: Option<FtruncateFn>,
    fchmod: Option<FchmodFn>,
    fchown: Option<FchownFn>,
    fallocate: Option<FallocateFn>,
    unlink: Option<PathFn>,
    mkdir: Option<MkdirFn>,
    rmdir: Option<PathFn>,
}

/// The originals, set before the first hook is installed.
static ORIGINALS: OnceLock<Originals> = OnceLock::new();

/// Whether the hooks are installed (once per process).
static INSTALLED: OnceLock<Result<(), HookError>> = OnceLock::new();

fn originals() -> &'static Originals {
    match ORIGINALS.get() {
        Some(o) => o,
        // The table points at a hook only after ORIGINALS holds the originals.
        None => unreachable!("SQLite's system calls hooked without their originals"),
    }
}

const WRITE_FLAGS: c_int = libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND;

unsafe extern "C" fn hook_open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    if flags & WRITE_FLAGS != 0 && armed() {
        return refuse("open for writing", Target::Path(path));
    }
    // SAFETY (all hooks): SQLite calls each entry with the arguments of the
    // system call it names, and the original is that call's own function.
    counted(
        FileOp::Open,
        Target::Opened(path),
        None,
        || unsafe { (originals().open)(path, flags, mode) },
        |r| Outcome { failed: r < 0, bytes: None, fd: Some(r) },
    )
}

unsafe extern "C" fn hook_close(fd: c_int) -> c_int {
    counted(FileOp::Close, Target::Fd(fd), None, || unsafe { (originals().close)(fd) }, |r| Outcome::ok_if(r == 0))
}

unsafe extern "C" fn hook_access(path: *const c_char, mode: c_int) -> c_int {
    counted(
        FileOp::Access,
        Target::Path(path),
        None,
        || unsafe { (originals().access)(path, mode) },
        |r| Outcome::ok_if(r == 0),
    )
}

unsafe extern "C" fn hook_stat(path: *const c_char, buf: *mut libc::stat) -> c_int {
    counted(
        FileOp::Stat,
        Target::Path(path),
        None,
        || unsafe { (originals().stat)(path, buf) },
        |r| Outcome::ok_if(r == 0),
    )
}

unsafe extern "C" fn hook_lstat(path: *const c_char, buf: *mut libc::stat) -> c_int {
    counted(
        FileOp::Stat,
        Target::Path(path),
        None,
        || unsafe { (originals().lstat)(path, buf) },
        |r| Outcome::ok_if(r == 0),
    )
}

unsafe extern "C" fn hook_fstat(fd: c_int, buf: *mut libc::stat) -> c_int {
    counted(FileOp::Stat, Target::Fd(fd), None, || unsafe { (originals().fstat)(fd, buf) }, |r| Outcome::ok_if(r == 0))
}

/// SQLite calls its `fcntl` entry as the variadic `fcntl(fd, cmd, ...)`
/// with exactly one pointer argument (a `struct flock *`, or an int for
/// `F_SETFD`); on the Linux ABIs Rust targets a variadic call passes that
/// argument where a three-argument function reads it.
unsafe extern "C" fn hook_fcntl(fd: c_int, cmd: c_int, arg: *mut c_void) -> c_int {
    let op = match cmd {
        libc::F_SETLK | libc::F_SETLKW | libc::F_GETLK => FileOp::Lock,
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => FileOp::Dup,
        _ => FileOp::Stat,
    };
    counted(op, Target::Fd(fd), None, || unsafe { (originals().fcntl)(fd, cmd, arg) }, |r| Outcome::ok_if(r != -1))
}

fn read_result(r: ssize_t) -> Outcome {
    Outcome { failed: r < 0, bytes: u64::try_from(r).ok(), fd: None }
}

unsafe extern "C" fn hook_read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    counted(FileOp::Read, Target::Fd(fd), None, || unsafe { (originals().read)(fd, buf, n) }, read_result)
}

unsafe extern "C" fn hook_pread(fd: c_int, buf: *mut c_void, n: size_t, at: off_t) -> ssize_t {
    let offset = u64::try_from(at).ok();
    counted(FileOp::Read, Target::Fd(fd), offset, || unsafe { (originals().pread)(fd, buf, n, at) }, read_result)
}

unsafe extern "C" fn hook_pread64(fd: c_int, buf: *mut c_void, n: size_t, at: off_t) -> ssize_t {
    let offset = u64::try_from(at).ok();
    let Some(pread64) = originals().pread64 else {
        // Installed only where the entry has an original.
        set_errno(libc::ENOSYS);
        return -1;
    };
    counted(FileOp::Read, Target::Fd(fd), offset, || unsafe { pread64(fd, buf, n, at) }, read_result)
}

unsafe extern "C" fn hook_readlink(path: *const c_char, buf: *mut c_char, n: size_t) -> ssize_t {
    counted(
        FileOp::Stat,
        Target::Path(path),
        None,
        || unsafe { (originals().readlink)(path, buf, n) },
        |r| Outcome::ok_if(r >= 0),
    )
}

unsafe extern "C" fn hook_mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    at: off_t,
) -> *mut c_void {
    if prot & libc::PROT_WRITE != 0 && flags & libc::MAP_SHARED != 0 && armed() {
        refuse("map for writing", Target::Fd(fd));
        return libc::MAP_FAILED;
    }
    let offset = u64::try_from(at).ok();
    counted(
        FileOp::Mmap,
        Target::Fd(fd),
        offset,
        || unsafe { (originals().mmap)(addr, len, prot, flags, fd, at) },
        |r| Outcome::ok_if(r != libc::MAP_FAILED),
    )
}

/// Point SQLite's unix VFS at the hooks, once per process, before the
/// first database is opened.
///
/// # Errors
/// The default VFS has no system-call table (not the unix VFS), or an
/// entry is missing.
pub(super) fn install() -> Result<(), HookError> {
    INSTALLED.get_or_init(install_now).clone()
}

type Syscall = unsafe extern "C" fn();

/// Why SQLite's system calls could not be hooked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// SQLite has no default VFS.
    #[error("SQLite has no default VFS")]
    NoDefaultVfs,
    /// The default VFS is not one with a system-call table (not unix).
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

fn install_now() -> Result<(), HookError> {
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
    let original = |name: &CStr| -> Result<Syscall, HookError> {
        // SAFETY: vfs is valid and name NUL-terminated.
        unsafe { get(vfs, name.as_ptr()) }.ok_or_else(|| HookError::MissingEntry(name.to_string_lossy().into_owned()))
    };
    // SAFETY: each entry holds the function of the system call it is named
    // after, with that call's C signature; the transmutes restore it.
    let o = unsafe {
        Originals {
            open: std::mem::transmute::<Syscall, OpenFn>(original(c"open")?),
            close: std::mem::transmute::<Syscall, CloseFn>(original(c"close")?),
            access: std::mem::transmute::<Syscall, AccessFn>(original(c"access")?),
            stat: std::mem::transmute::<Syscall, StatFn>(original(c"stat")?),
            lstat: std::mem::transmute::<Syscall, StatFn>(original(c"lstat")?),
            fstat: std::mem::transmute::<Syscall, FstatFn>(original(c"fstat")?),
            fcntl: std::mem::transmute::<Syscall, FcntlFn>(original(c"fcntl")?),
            read: std::mem::transmute::<Syscall, ReadFn>(original(c"read")?),
            pread: std::mem::transmute::<Syscall, PreadFn>(original(c"pread")?),
            pread64: original(c"pread64").ok().map(|f| std::mem::transmute::<Syscall, PreadFn>(f)),
            readlink: std::mem::transmute::<Syscall, ReadlinkFn>(original(c"readlink")?),
            mmap: std::mem::transmute::<Syscall, MmapFn>(original(c"mmap")?),
            write: original(c"write").ok().map(|f| std::mem::transmute::<Syscall, WriteFn>(f)),
            pwrite: original(c"pwrite").ok().map(|f| std::mem::transmute::<Syscall, PwriteFn>(f)),
            ftruncate: original(c"ftruncate").ok().map(|f| std::mem::transmute::<Syscall, FtruncateFn>(f)),
            fchmod: original(c"fchmod").ok().map(|f| std::mem::transmute::<Syscall, FchmodFn>(f)),
            fchown: original(c"fchown").ok().map(|f| std::mem::transmute::<Syscall, FchownFn>(f)),
            fallocate: original(c"fallocate").ok().map(|f| std::mem::transmute::<Syscall, FallocateFn>(f)),
            unlink: original(c"unlink").ok().map(|f| std::mem::transmute::<Syscall, PathFn>(f)),
            mkdir: original(c"mkdir").ok().map(|f| std::mem::transmute::<Syscall, MkdirFn>(f)),
            rmdir: original(c"rmdir").ok().map(|f| std::mem::transmute::<Syscall, PathFn>(f)),
        }
    };
    macro_rules! hooks {
        ($($name:literal => $f:expr),* $(,)?) => {[$(($name, $f as *const ())),*]};
    }
    let table: [(&CStr, *const ()); 21] = hooks![
        c"open" => hook_open as unsafe extern "C" fn(*const c_char, c_int, mode_t) -> c_int,
        c"close" => hook_close as unsafe extern "C" fn(c_int) -> c_int,
        c"access" => hook_access as unsafe extern "C" fn(*const c_char, c_int) -> c_int,
        c"stat" => hook_stat as unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int,
        c"lstat" => hook_lstat as unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int,
        c"fstat" => hook_fstat as unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int,
        c"fcntl" => hook_fcntl as unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int,
        c"read" => hook_read as unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t,
        c"pread" => hook_pread as unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t) -> ssize_t,
        c"pread64" => hook_pread64 as unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t) -> ssize_t,
        c"readlink" => hook_readlink as unsafe extern "C" fn(*const c_char, *mut c_char, size_t) -> ssize_t,
        c"mmap" => hook_mmap as unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void,
        c"write" => hook_write as unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t,
        c"pwrite" => hook_pwrite as unsafe extern "C" fn(c_int, *const c_void, size_t, off_t) -> ssize_t,
        c"ftruncate" => hook_ftruncate as unsafe extern "C" fn(c_int, off_t) -> c_int,
        c"fchmod" => hook_fchmod as unsafe extern "C" fn(c_int, mode_t) -> c_int,
        c"fchown" => hook_fchown as unsafe extern "C" fn(c_int, libc::uid_t, libc::gid_t) -> c_int,
        c"fallocate" => hook_fallocate as unsafe extern "C" fn(c_int, off_t, off_t) -> c_int,
        c"unlink" => hook_unlink as unsafe extern "C" fn(*const c_char) -> c_int,
        c"mkdir" => hook_mkdir as unsafe extern "C" fn(*const c_char, mode_t) -> c_int,
        c"rmdir" => hook_rmdir as unsafe extern "C" fn(*const c_char) -> c_int,
    ];
    // The originals must be in place before the first hook can run; the
    // table is set while no database is open (INSTALLED runs this once,
    // and every open waits for it).
    if ORIGINALS.set(o).is_err() {
        return Err(HookError::Twice);
    }
    for (name, f) in table {
        // An entry SQLite leaves empty (pread64, pwrite64 where it uses
        // pread/pwrite) is never called: leave it empty.
        if original(name).is_err() {
            continue;
        }
        // SAFETY: vfs is valid; f is a function with the signature SQLite
        // calls the entry `name` with.
        let rc = unsafe { set(vfs, name.as_ptr(), Some(std::mem::transmute::<*const (), Syscall>(f))) };
        if rc != ffi::SQLITE_OK {
            return Err(HookError::Refused { name: name.to_string_lossy().into_owned(), code: rc });
        }
    }
    Ok(())
}
