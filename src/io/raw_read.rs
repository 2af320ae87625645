//! What the buffer reads from: [`RawRead`], a file or bytes in memory,
//! read one call at a time.
//!
//! A real file's `read(2)` is made right where the buffer wants it (the
//! system call inlined into the buffer's loop, by rustix), not through
//! `File::read` and libc's `read`: on this kind of machine the kernel
//! refills the CPU's return-address predictor on its way back from every
//! system call, so each function return between `read(2)` and the
//! buffer's loop costs a misprediction. Replaying gpgsm's 20 M reads, the
//! returns of libc's `read`, `File::read` and a separate counting function
//! were a third of kbxscope's user time (BENCHMARKS, "The replay's CPU").
//! A process with a preloaded library reads through libc instead, so that
//! an interposer such as `record`'s sees every read.

use std::fs::File;
use std::io::{self, Cursor, Read, Seek};
use std::sync::OnceLock;

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

impl RawRead for File {
    /// rustix's `read(2)`: on Linux the system call itself, inlined here,
    /// with no libc function to return from. Except when a library is
    /// preloaded (`LD_PRELOAD` set): then `File::read`, through libc.
    #[inline(always)]
    fn read_once(&mut self, into: &mut [u8]) -> io::Result<usize> {
        if through_libc() {
            return self.read(into);
        }
        // As `File::read` does: no more than `isize::MAX` bytes at once.
        let len = into.len().min(isize::MAX as usize);
        rustix::io::read(&*self, &mut into[..len]).map_err(io::Error::from)
    }
}

/// Whether a library is preloaded into this process (`LD_PRELOAD` is set):
/// then reads go through libc's `read`, where the library can see them
/// (kbxscope's own `record`, Darshan, any other interposer), as it cannot
/// see a system call made directly. Asked once.
fn through_libc() -> bool {
    static PRELOADED: OnceLock<bool> = OnceLock::new();
    *PRELOADED.get_or_init(|| std::env::var_os("LD_PRELOAD").is_some_and(|v| !v.is_empty()))
}

impl<T: AsRef<[u8]>> RawRead for Cursor<T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_reads_what_file_read_reads() {
        let mut tmp = tempfile::tempfile().unwrap();
        tmp.write_all(b"keybox bytes").unwrap();
        tmp.rewind().unwrap();
        let mut buf = [0u8; 7];
        assert_eq!(tmp.read_once(&mut buf).unwrap(), 7);
        assert_eq!(&buf, b"keybox ");
        assert_eq!(tmp.read_once(&mut buf).unwrap(), 5);
        assert_eq!(tmp.read_once(&mut buf).unwrap(), 0);
    }

    #[test]
    fn a_bad_descriptor_is_the_system_error() {
        // A file opened for writing only: read(2) fails with EBADF.
        let dir = tempfile::tempdir().unwrap();
        let mut f = File::create(dir.path().join("w")).unwrap();
        let e = f.read_once(&mut [0u8; 4]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }
}
