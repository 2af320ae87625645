//! Unix: the keybox opened with `openat(O_RDONLY|O_NONBLOCK|O_NOATIME)`
//! (`O_NOATIME` so that reading does not even change the access time;
//! the kernel allows it only to the file's owner, so on `EPERM` the caller
//! retries without it), read with `read(2)`, stat with `statx`, closed
//! with one `close(2)`.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::IntoRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use super::{Access, CpuOf, FileApi, FileKind, Stat, Stop, WriteMode};
use crate::io::change::FileIdentity;
use crate::io::RawRead;

/// GnuPG 2.4's default keybox buffer here, in KiB.
pub(in crate::io) const GNUPG_KBX_BUFFER_KIB: usize = 64;

/// The file APIs this system has.
pub(super) const APIS: &[FileApi] = &[FileApi::Posix];

/// An open keybox: a read-only descriptor.
#[derive(Debug)]
pub struct SysFile(File);

/// One open attempt: `noatime` adds `O_NOATIME`.
pub(in crate::io) fn open_read_only(path: &Path, _api: FileApi, noatime: bool) -> io::Result<SysFile> {
    let flags = libc::O_NONBLOCK | if noatime { libc::O_NOATIME } else { 0 };
    OpenOptions::new().read(true).custom_flags(flags).open(path).map(SysFile)
}

/// Whether a first attempt's error means: try again without `O_NOATIME`
/// (the file is not the caller's own).
pub(in crate::io) fn retry_plain(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::EPERM)
}

impl SysFile {
    /// One `fstat` (`statx`).
    pub(in crate::io) fn stat(&self) -> io::Result<Stat> {
        let m = self.0.metadata()?;
        let ft = m.file_type();
        let kind = if ft.is_file() {
            FileKind::Regular
        } else if ft.is_dir() {
            FileKind::Other("directory")
        } else if ft.is_fifo() {
            FileKind::Other("FIFO")
        } else if ft.is_char_device() {
            FileKind::Other("character device")
        } else if ft.is_block_device() {
            FileKind::Other("block device")
        } else if ft.is_socket() {
            FileKind::Other("socket")
        } else {
            FileKind::Other("special file")
        };
        let mtime_ns = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
        Ok(Stat { kind, identity: FileIdentity { dev: m.dev(), ino: m.ino(), len: m.len(), mtime_ns } })
    }

    /// Exactly one `close(2)`.
    ///
    /// Dropping a `File` would do the same in release builds, but debug
    /// builds of the standard library first call `fcntl(fd, F_GETFD)` to
    /// check that the descriptor is still open: an extra system call on the
    /// keybox that the counts would have to leave out. So the descriptor is
    /// closed by hand.
    pub(in crate::io) fn close(self) -> io::Result<()> {
        let fd = self.0.into_raw_fd();
        // SAFETY: `into_raw_fd` handed us sole ownership of `fd`, which is
        // open (it came from a successful open) and is closed here exactly
        // once; nothing else refers to it afterwards.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::close(fd) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

impl Read for SysFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Seek for SysFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.0.seek(pos)
    }
}

impl RawRead for SysFile {
    /// rustix's `read(2)`: on Linux the system call itself, inlined here,
    /// with no libc function to return from (see `raw_read.rs`). Except
    /// when a library is preloaded (`LD_PRELOAD` set): then `File::read`,
    /// through libc.
    #[inline(always)]
    fn read_once(&mut self, into: &mut [u8]) -> io::Result<usize> {
        if through_libc() {
            return self.0.read(into);
        }
        // As `File::read` does: no more than `isize::MAX` bytes at once.
        let len = into.len().min(isize::MAX as usize);
        rustix::io::read(&self.0, &mut into[..len]).map_err(io::Error::from)
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

/// Open a file of an update's: read-only (`noatime` adds `O_NOATIME`),
/// or for writing as `write` says.
pub(crate) fn open_for_update(path: &Path, write: Option<WriteMode>, noatime: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    match write {
        None if noatime => o.read(true).custom_flags(libc::O_NOATIME),
        None => o.read(true),
        Some(WriteMode::ReadWrite) => o.read(true).write(true),
        Some(WriteMode::Truncate(mode)) => o.write(true).custom_flags(libc::O_CREAT | libc::O_TRUNC).mode(mode),
        Some(WriteMode::Exclusive(mode)) => o.write(true).custom_flags(libc::O_CREAT | libc::O_EXCL).mode(mode),
    };
    o.open(path)
}

/// Exactly one `close(2)`, whose error (a delayed write error: a full
/// disk) is the caller's.
pub(crate) fn close_file(file: File) -> io::Result<()> {
    SysFile(file).close()
}

/// `access(2)` through libc, as GnuPG calls it (an interposer such as
/// `record`'s sees it).
pub(crate) fn access(path: &Path, how: Access) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let mode = match how {
        Access::Exists => libc::F_OK,
        Access::Readable => libc::R_OK,
        Access::Writable => libc::W_OK,
    };
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: `c` is a NUL-terminated path alive for the call, which only
    // reads it.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::access(c.as_ptr(), mode) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An empty file at `path` (one `mknod`), to be renamed in the user's
/// keybox's stead.
pub(crate) fn make_stand_in(path: &Path) -> io::Result<()> {
    use rustix::fs::{FileType, Mode, CWD};
    rustix::fs::mknodat(CWD, path, FileType::RegularFile, Mode::RUSR | Mode::WUSR, 0).map_err(io::Error::from)
}

/// A new file only its owner may read and write (`0600`), which must not
/// exist yet.
pub(crate) fn create_private(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}

/// Whether process `pid` exists (`kill(pid, 0)`: no signal is sent).
pub(crate) fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    match rustix::process::Pid::from_raw(pid) {
        // EPERM: it exists, owned by another user.
        Some(p) => !matches!(rustix::process::test_kill_process(p), Err(rustix::io::Errno::SRCH)),
        None => false,
    }
}

/// Where GnuPG keeps a user's home unless `GNUPGHOME` says otherwise:
/// `~/.gnupg`.
pub(super) fn default_gnupg_home() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| std::path::PathBuf::from(h).join(".gnupg"))
}

/// User and system CPU time used so far by this process or by its
/// waited-for children (`getrusage`).
pub fn cpu_times(of: CpuOf) -> (Duration, Duration) {
    let who = match of {
        CpuOf::Myself => libc::RUSAGE_SELF,
        CpuOf::Children => libc::RUSAGE_CHILDREN,
    };
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a complete `rusage` into the pointer we pass,
    // which points at properly sized and aligned (zeroed) memory we own;
    // both values of `who` are valid. On failure we keep the zeroes.
    #[allow(unsafe_code)]
    let usage = unsafe {
        libc::getrusage(who, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000);
    (tv(usage.ru_utime), tv(usage.ru_stime))
}

/// `CLOCK_MONOTONIC` now, in ns (the clock the interposer stamps calls
/// with; `Instant` reads it too but does not show its value).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// Call `each` on a thread of its own for every SIGINT and SIGTERM from
/// now on (signal-hook: the signals' default action, ending the process,
/// is replaced). False if the signals cannot be watched (then nothing
/// changes).
pub fn watch_stops(mut each: impl FnMut(Stop) + Send + 'static) -> bool {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else { return false };
    let watcher = std::thread::Builder::new().name("signals".into()).spawn(move || {
        for signal in signals.forever() {
            let name = if signal == SIGINT { "SIGINT" } else { "SIGTERM" };
            each(Stop { name, exit_code: 128 + signal });
        }
    });
    watcher.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_reads_what_file_read_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        std::fs::File::create(&path).unwrap().write_all(b"keybox bytes").unwrap();
        let mut f = open_read_only(&path, FileApi::Posix, true).unwrap();
        let mut buf = [0u8; 7];
        assert_eq!(f.read_once(&mut buf).unwrap(), 7);
        assert_eq!(&buf, b"keybox ");
        assert_eq!(f.read_once(&mut buf).unwrap(), 5);
        assert_eq!(f.read_once(&mut buf).unwrap(), 0);
        assert_eq!(f.stat().unwrap().identity.len, 12);
        f.close().unwrap();
    }

    #[test]
    fn cpu_time_grows() {
        let (u0, _) = cpu_times(CpuOf::Myself);
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (u1, _) = cpu_times(CpuOf::Myself);
        assert!(u1 > u0);
    }

    #[test]
    fn a_directory_is_not_regular() {
        let dir = tempfile::tempdir().unwrap();
        let f = open_read_only(dir.path(), FileApi::Posix, false).unwrap();
        assert_eq!(f.stat().unwrap().kind, FileKind::Other("directory"));
    }
}
