//! What the buffer reads from: [`RawRead`], a file or bytes in memory,
//! read one call at a time.
//!
//! On Unix a real file's `read(2)` is made right where the buffer wants it
//! (the system call inlined into the buffer's loop, by rustix: `sys/unix.rs`), not through
//! `File::read` and libc's `read`: on this kind of machine the kernel
//! refills the CPU's return-address predictor on its way back from every
//! system call, so each function return between `read(2)` and the
//! buffer's loop costs a misprediction. Replaying gpgsm's 20 M reads, the
//! returns of libc's `read`, `File::read` and a separate counting function
//! were a third of kbxscope's user time (BENCHMARKS, "The replay's CPU").
//! A process with a preloaded library reads through libc instead, so that
//! an interposer such as `record`'s sees every read.

use std::io::{self, Cursor, Read, Seek};

/// Anything the buffered reader reads and seeks: a keybox file, or bytes
/// in memory (a database's blobs, tests, fuzzing).
pub trait RawRead: Read + Seek {
    /// One read: at most `into.len()` bytes, fewer only at the end or as
    /// the system hands them out; for a file, exactly one `read(2)`.
    ///
    /// # Errors
    /// The operating system's error.
    #[inline(always)]
    fn read_once(&mut self, into: &mut [u8]) -> io::Result<usize> {
        self.read(into)
    }
}

impl<T: AsRef<[u8]>> RawRead for Cursor<T> {}
