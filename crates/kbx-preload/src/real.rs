//! Lazy, race-safe resolution of the real functions with
//! `dlsym(RTLD_NEXT, name)`: one `AtomicPtr` per function, filled at first
//! use by whichever thread gets there (two threads may both call dlsym and
//! store the same address). A hook may run before our constructor.
//!
//! If dlsym finds nothing the hook returns -1 with errno ENOSYS (NULL/EOF
//! for the stdio ones), see `crates/kbx-record/PROTOCOL.md`.

#![allow(missing_docs, non_snake_case)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

use libc::{c_char, c_int, c_long, c_uint, iovec, mode_t, off64_t, off_t, size_t, ssize_t, FILE};

/// Look up `name` (NUL-terminated) in the objects after this one.
pub fn resolve(slot: &AtomicPtr<c_void>, name: &[u8]) -> *mut c_void {
    let p = slot.load(Ordering::Relaxed);
    if !p.is_null() {
        return p;
    }
    // SAFETY: name is NUL-terminated; dlsym is thread-safe. It may allocate,
    // and we interpose no allocator, so it cannot re-enter us.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) };
    if !p.is_null() {
        slot.store(p, Ordering::Relaxed);
    }
    p
}

macro_rules! real {
    ($($fname:ident : $ty:ty;)*) => {$(
        #[inline(always)]
        pub fn $fname() -> Option<$ty> {
            static P: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
            let p = resolve(&P, concat!(stringify!($fname), "\0").as_bytes());
            if p.is_null() {
                None
            } else {
                // SAFETY: dlsym returned the address of the libc function of
                // this name, whose C signature is $ty.
                Some(unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
            }
        }
    )*};
}

pub type Stat = libc::stat;
pub type Stat64 = libc::stat64;

real! {
    open: unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
    open64: unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
    __open_2: unsafe extern "C" fn(*const c_char, c_int) -> c_int;
    __open64_2: unsafe extern "C" fn(*const c_char, c_int) -> c_int;
    openat: unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
    openat64: unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
    __openat_2: unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
    __openat64_2: unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
    creat: unsafe extern "C" fn(*const c_char, mode_t) -> c_int;
    creat64: unsafe extern "C" fn(*const c_char, mode_t) -> c_int;
    read: unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t;
    __read_chk: unsafe extern "C" fn(c_int, *mut c_void, size_t, size_t) -> ssize_t;
    pread: unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t) -> ssize_t;
    pread64: unsafe extern "C" fn(c_int, *mut c_void, size_t, off64_t) -> ssize_t;
    __pread_chk: unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t, size_t) -> ssize_t;
    __pread64_chk: unsafe extern "C" fn(c_int, *mut c_void, size_t, off64_t, size_t) -> ssize_t;
    readv: unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t;
    preadv: unsafe extern "C" fn(c_int, *const iovec, c_int, off_t) -> ssize_t;
    preadv64: unsafe extern "C" fn(c_int, *const iovec, c_int, off64_t) -> ssize_t;
    write: unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t;
    pwrite: unsafe extern "C" fn(c_int, *const c_void, size_t, off_t) -> ssize_t;
    pwrite64: unsafe extern "C" fn(c_int, *const c_void, size_t, off64_t) -> ssize_t;
    writev: unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t;
    lseek: unsafe extern "C" fn(c_int, off_t, c_int) -> off_t;
    lseek64: unsafe extern "C" fn(c_int, off64_t, c_int) -> off64_t;
    fstat: unsafe extern "C" fn(c_int, *mut Stat) -> c_int;
    fstat64: unsafe extern "C" fn(c_int, *mut Stat64) -> c_int;
    stat: unsafe extern "C" fn(*const c_char, *mut Stat) -> c_int;
    stat64: unsafe extern "C" fn(*const c_char, *mut Stat64) -> c_int;
    lstat: unsafe extern "C" fn(*const c_char, *mut Stat) -> c_int;
    lstat64: unsafe extern "C" fn(*const c_char, *mut Stat64) -> c_int;
    fstatat: unsafe extern "C" fn(c_int, *const c_char, *mut Stat, c_int) -> c_int;
    fstatat64: unsafe extern "C" fn(c_int, *const c_char, *mut Stat64, c_int) -> c_int;
    statx: unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint, *mut c_void) -> c_int;
    __fxstat: unsafe extern "C" fn(c_int, c_int, *mut Stat) -> c_int;
    __fxstat64: unsafe extern "C" fn(c_int, c_int, *mut Stat64) -> c_int;
    __xstat: unsafe extern "C" fn(c_int, *const c_char, *mut Stat) -> c_int;
    __xstat64: unsafe extern "C" fn(c_int, *const c_char, *mut Stat64) -> c_int;
    __lxstat: unsafe extern "C" fn(c_int, *const c_char, *mut Stat) -> c_int;
    __lxstat64: unsafe extern "C" fn(c_int, *const c_char, *mut Stat64) -> c_int;
    __fxstatat: unsafe extern "C" fn(c_int, c_int, *const c_char, *mut Stat, c_int) -> c_int;
    __fxstatat64: unsafe extern "C" fn(c_int, c_int, *const c_char, *mut Stat64, c_int) -> c_int;
    access: unsafe extern "C" fn(*const c_char, c_int) -> c_int;
    euidaccess: unsafe extern "C" fn(*const c_char, c_int) -> c_int;
    faccessat: unsafe extern "C" fn(c_int, *const c_char, c_int, c_int) -> c_int;
    rename: unsafe extern "C" fn(*const c_char, *const c_char) -> c_int;
    renameat: unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char) -> c_int;
    renameat2: unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int;
    unlink: unsafe extern "C" fn(*const c_char) -> c_int;
    remove: unsafe extern "C" fn(*const c_char) -> c_int;
    unlinkat: unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
    link: unsafe extern "C" fn(*const c_char, *const c_char) -> c_int;
    linkat: unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char, c_int) -> c_int;
    mmap: unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;
    mmap64: unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off64_t) -> *mut c_void;
    dup: unsafe extern "C" fn(c_int) -> c_int;
    dup2: unsafe extern "C" fn(c_int, c_int) -> c_int;
    dup3: unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
    fcntl: unsafe extern "C" fn(c_int, c_int, ...) -> c_int;
    fcntl64: unsafe extern "C" fn(c_int, c_int, ...) -> c_int;
    close: unsafe extern "C" fn(c_int) -> c_int;
    close_range: unsafe extern "C" fn(c_uint, c_uint, c_int) -> c_int;
    closefrom: unsafe extern "C" fn(c_int);
    ftruncate: unsafe extern "C" fn(c_int, off_t) -> c_int;
    ftruncate64: unsafe extern "C" fn(c_int, off64_t) -> c_int;
    fsync: unsafe extern "C" fn(c_int) -> c_int;
    fdatasync: unsafe extern "C" fn(c_int) -> c_int;
    fopen: unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE;
    fopen64: unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE;
    fdopen: unsafe extern "C" fn(c_int, *const c_char) -> *mut FILE;
    freopen: unsafe extern "C" fn(*const c_char, *const c_char, *mut FILE) -> *mut FILE;
    freopen64: unsafe extern "C" fn(*const c_char, *const c_char, *mut FILE) -> *mut FILE;
    fclose: unsafe extern "C" fn(*mut FILE) -> c_int;
    fflush: unsafe extern "C" fn(*mut FILE) -> c_int;
    fread: unsafe extern "C" fn(*mut c_void, size_t, size_t, *mut FILE) -> size_t;
    fread_unlocked: unsafe extern "C" fn(*mut c_void, size_t, size_t, *mut FILE) -> size_t;
    __fread_chk: unsafe extern "C" fn(*mut c_void, size_t, size_t, size_t, *mut FILE) -> size_t;
    fgets: unsafe extern "C" fn(*mut c_char, c_int, *mut FILE) -> *mut c_char;
    fgets_unlocked: unsafe extern "C" fn(*mut c_char, c_int, *mut FILE) -> *mut c_char;
    __fgets_chk: unsafe extern "C" fn(*mut c_char, size_t, c_int, *mut FILE) -> *mut c_char;
    fgetc: unsafe extern "C" fn(*mut FILE) -> c_int;
    getc: unsafe extern "C" fn(*mut FILE) -> c_int;
    _IO_getc: unsafe extern "C" fn(*mut FILE) -> c_int;
    fgetc_unlocked: unsafe extern "C" fn(*mut FILE) -> c_int;
    getc_unlocked: unsafe extern "C" fn(*mut FILE) -> c_int;
    __uflow: unsafe extern "C" fn(*mut FILE) -> c_int;
    __underflow: unsafe extern "C" fn(*mut FILE) -> c_int;
    getline: unsafe extern "C" fn(*mut *mut c_char, *mut size_t, *mut FILE) -> ssize_t;
    getdelim: unsafe extern "C" fn(*mut *mut c_char, *mut size_t, c_int, *mut FILE) -> ssize_t;
    __getdelim: unsafe extern "C" fn(*mut *mut c_char, *mut size_t, c_int, *mut FILE) -> ssize_t;
    fseek: unsafe extern "C" fn(*mut FILE, c_long, c_int) -> c_int;
    fseeko: unsafe extern "C" fn(*mut FILE, off_t, c_int) -> c_int;
    fseeko64: unsafe extern "C" fn(*mut FILE, off64_t, c_int) -> c_int;
    ftell: unsafe extern "C" fn(*mut FILE) -> c_long;
    ftello: unsafe extern "C" fn(*mut FILE) -> off_t;
    ftello64: unsafe extern "C" fn(*mut FILE) -> off64_t;
    rewind: unsafe extern "C" fn(*mut FILE);
}
