//! SQLite's system calls, counted: the unix VFS's own table of system
//! calls (`xSetSystemCall`) points at the hooks here, so that every call
//! SQLite makes on a file — `open`, `pread`, `fstat`, `stat`, `lstat`,
//! `access`, `fcntl` locks, `readlink`, `close`, `mmap` — is one file event,
//! timed, counted per file and traced like the keybox layer's, and equal
//! to what `strace` sees (SQLite makes no file system call outside that
//! table but `fsync`/`fdatasync`, which a reader never reaches; a private
//! copy's syncs are counted by the VFS wrapper of [`sync`]).
//!
//! Nothing is ever written beside a database kbxscope reads: while one is
//! open on the thread, the calls that would change a file (`write`,
//! `pwrite`, `ftruncate`, `fchmod`, `fchown`, `fallocate`, `unlink`,
//! `mkdir`, `rmdir`, `open` with a write or create flag, a shared writable
//! `mmap`) are refused here with `EACCES` before they reach the kernel, and
//! the refusal is remembered so that the caller can say what SQLite wanted.
//! (SQLite opens kbxscope's databases read-only, so it has no reason to
//! try; this makes sure.) A private copy a write replay opens
//! (`Database::open_private`) is the one exception: there the same calls
//! are made and counted (`write`, `truncate`, `unlink`, … per file).
//!
//! The table is process-wide and its entries take no context, so events go
//! to the calling thread's [`Sink`], armed by [`Armed`] while a database
//! is open on that thread. A call while none is armed (no database of
//! kbxscope's open on the thread: SQLite used otherwise in the process)
//! passes through to the original, uncounted and unrefused.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use libc::{mode_t, off_t, size_t, ssize_t};

use super::sink::{counted, on_fd, set_errno, write_rule, Outcome, Target, WriteRule};
use super::table::{HookError, Syscall, Table};
use crate::events::FileOp;
use originals::*;
use writes::{
    hook_fallocate, hook_fchmod, hook_fchown, hook_ftruncate, hook_mkdir, hook_pwrite, hook_rmdir, hook_unlink,
    hook_write, refuse,
};

mod originals;
mod sync;
mod writes;

pub(super) use sync::VFS_NAME;

/// Whether the hooks are installed (once per process).
static INSTALLED: OnceLock<Result<(), HookError>> = OnceLock::new();

const WRITE_FLAGS: c_int = libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND;

unsafe extern "C" fn hook_open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    if flags & WRITE_FLAGS != 0 && write_rule() == WriteRule::Refuse {
        return refuse("open for writing", Target::Path(path));
    }
    // SAFETY (all hooks): SQLite calls each entry with the arguments of the
    // system call it names, and the original is that call's own function.
    counted(
        FileOp::Open,
        Target::Opened(path),
        None,
        || unsafe { (originals().open)(path, flags, mode) },
        |r| Outcome { failed: r < 0, bytes: None, written: None, fd: Some(r as isize) },
    )
}

unsafe extern "C" fn hook_close(fd: c_int) -> c_int {
    counted(FileOp::Close, on_fd(fd), None, || unsafe { (originals().close)(fd) }, |r| Outcome::ok_if(r == 0))
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
    counted(FileOp::Stat, on_fd(fd), None, || unsafe { (originals().fstat)(fd, buf) }, |r| Outcome::ok_if(r == 0))
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
    counted(op, on_fd(fd), None, || unsafe { (originals().fcntl)(fd, cmd, arg) }, |r| Outcome::ok_if(r != -1))
}

fn read_result(r: ssize_t) -> Outcome {
    Outcome { failed: r < 0, bytes: u64::try_from(r).ok(), written: None, fd: None }
}

unsafe extern "C" fn hook_read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    counted(FileOp::Read, on_fd(fd), None, || unsafe { (originals().read)(fd, buf, n) }, read_result)
}

unsafe extern "C" fn hook_pread(fd: c_int, buf: *mut c_void, n: size_t, at: off_t) -> ssize_t {
    let offset = u64::try_from(at).ok();
    counted(FileOp::Read, on_fd(fd), offset, || unsafe { (originals().pread)(fd, buf, n, at) }, read_result)
}

unsafe extern "C" fn hook_pread64(fd: c_int, buf: *mut c_void, n: size_t, at: off_t) -> ssize_t {
    let offset = u64::try_from(at).ok();
    let Some(pread64) = originals().pread64 else {
        // Installed only where the entry has an original.
        set_errno(libc::ENOSYS);
        return -1;
    };
    counted(FileOp::Read, on_fd(fd), offset, || unsafe { pread64(fd, buf, n, at) }, read_result)
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
    if prot & libc::PROT_WRITE != 0 && flags & libc::MAP_SHARED != 0 && write_rule() == WriteRule::Refuse {
        refuse("map for writing", on_fd(fd));
        return libc::MAP_FAILED;
    }
    let offset = u64::try_from(at).ok();
    counted(
        FileOp::Mmap,
        on_fd(fd),
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
    INSTALLED.get_or_init(|| install_now().and_then(|()| sync::register())).clone()
}

fn install_now() -> Result<(), HookError> {
    let table = Table::of_default_vfs()?;
    let original = |name: &CStr| table.original(name);
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
    let hooks: [(&CStr, *const ()); 21] = hooks![
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
    // SAFETY: each hook has the signature SQLite calls its entry with (the
    // casts above), and ORIGINALS holds every original they call.
    unsafe { table.hook(&hooks) }
}
