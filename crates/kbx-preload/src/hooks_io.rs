//! read, __read_chk, pread, pread64, __pread_chk, __pread64_chk, readv,
//! preadv, preadv64, write, pwrite, pwrite64, writev, lseek, lseek64.
//! Writes are counted to show that nothing writes the watched files.

use libc::{c_int, c_void, iovec, off64_t, off_t, size_t, ssize_t};

use crate::hook::{fd_hook, no_bytes, pos_bytes};
use kbx_record::Op;

fd_hook!(read(fd, buf: *mut c_void, n: size_t) -> ssize_t, Op::Read, off = -1, bytes = pos_bytes, fail = -1);
fd_hook!(__read_chk(fd, buf: *mut c_void, n: size_t, buflen: size_t) -> ssize_t, Op::Read, off = -1, bytes = pos_bytes, fail = -1);
fd_hook!(pread(fd, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t, Op::Pread, off = off, bytes = pos_bytes, fail = -1);
fd_hook!(pread64(fd, buf: *mut c_void, n: size_t, off: off64_t) -> ssize_t, Op::Pread, off = off, bytes = pos_bytes, fail = -1);
fd_hook!(__pread_chk(fd, buf: *mut c_void, n: size_t, off: off_t, buflen: size_t) -> ssize_t, Op::Pread, off = off, bytes = pos_bytes, fail = -1);
fd_hook!(__pread64_chk(fd, buf: *mut c_void, n: size_t, off: off64_t, buflen: size_t) -> ssize_t, Op::Pread, off = off, bytes = pos_bytes, fail = -1);
fd_hook!(readv(fd, iov: *const iovec, cnt: c_int) -> ssize_t, Op::Readv, off = -1, bytes = pos_bytes, fail = -1);
fd_hook!(preadv(fd, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t, Op::Preadv, off = off, bytes = pos_bytes, fail = -1);
fd_hook!(preadv64(fd, iov: *const iovec, cnt: c_int, off: off64_t) -> ssize_t, Op::Preadv, off = off, bytes = pos_bytes, fail = -1);
fd_hook!(write(fd, buf: *const c_void, n: size_t) -> ssize_t, Op::Write, off = -1, bytes = pos_bytes, fail = -1);
fd_hook!(pwrite(fd, buf: *const c_void, n: size_t, off: off_t) -> ssize_t, Op::Pwrite, off = off, bytes = pos_bytes, fail = -1);
fd_hook!(pwrite64(fd, buf: *const c_void, n: size_t, off: off64_t) -> ssize_t, Op::Pwrite, off = off, bytes = pos_bytes, fail = -1);
fd_hook!(writev(fd, iov: *const iovec, cnt: c_int) -> ssize_t, Op::Writev, off = -1, bytes = pos_bytes, fail = -1);
fd_hook!(lseek(fd, off: off_t, whence: c_int) -> off_t, Op::Lseek, off = off, bytes = no_bytes, fail = -1);
fd_hook!(lseek64(fd, off: off64_t, whence: c_int) -> off64_t, Op::Lseek, off = off, bytes = no_bytes, fail = -1);
fd_hook!(ftruncate(fd, len: off_t) -> c_int, Op::Ftruncate, off = len, bytes = no_bytes, fail = -1);
fd_hook!(ftruncate64(fd, len: off64_t) -> c_int, Op::Ftruncate, off = len, bytes = no_bytes, fail = -1);
fd_hook!(fsync(fd) -> c_int, Op::Fsync, off = -1, bytes = no_bytes, fail = -1);
fd_hook!(fdatasync(fd) -> c_int, Op::Fdatasync, off = -1, bytes = no_bytes, fail = -1);
