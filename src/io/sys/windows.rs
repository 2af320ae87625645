//! Windows: the keybox through Win32 (`CreateFileW`, `ReadFile`,
//! `SetFilePointerEx`, `GetFileInformationByHandle`, `CloseHandle`) or
//! through the C runtime (`_wopen`, `_read`, `_lseeki64`, `_close`), as
//! GnuPG's keybox code can do either. Opened for reading only, sharing
//! reading, writing and deletion with everyone else, so that GnuPG can
//! still write and rename its keybox while kbxscope reads it. The CRT
//! opens in binary mode (no CR/LF translation, as GnuPG opens it).

// The Win32 and C runtime calls are foreign functions: each `unsafe`
// block below says why its call is sound.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::windows::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use windows_sys::Win32::Foundation::{CloseHandle, GENERIC_READ, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, GetFileInformationByHandle, ReadFile, SetFilePointerEx, BY_HANDLE_FILE_INFORMATION,
    FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_NORMAL, FILE_BEGIN, FILE_CURRENT, FILE_END, FILE_FLAG_BACKUP_SEMANTICS,
    FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_EXISTING,
};

use super::{Access, CpuOf, FileApi, FileKind, Stat, Stop, WriteMode};
use crate::io::change::FileIdentity;
use crate::io::RawRead;

/// GnuPG 2.4's default keybox buffer here, in KiB.
pub(in crate::io) const GNUPG_KBX_BUFFER_KIB: usize = 128;

/// The file APIs this system has, GnuPG's keybox default first.
pub(super) const APIS: &[FileApi] = &[FileApi::Win32, FileApi::Crt];

/// An open keybox: a Win32 handle, or a C runtime descriptor.
#[derive(Debug)]
pub struct SysFile(Raw);

#[derive(Debug, Clone, Copy)]
enum Raw {
    /// From `CreateFileW`.
    Win32(HANDLE),
    /// From `_wopen`.
    Crt(libc::c_int),
}

/// The path as Windows wants it: UTF-16, NUL-terminated.
fn wide(path: &Path) -> io::Result<Vec<u16>> {
    let w: Vec<u16> = path.as_os_str().encode_wide().collect();
    if w.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL character"));
    }
    Ok(w.into_iter().chain(Some(0)).collect())
}

/// Open `path` for reading with `api`: one `CreateFileW` or one `_wopen`.
/// (`noatime` is Unix's: Windows has no such flag.)
pub(in crate::io) fn open_read_only(path: &Path, api: FileApi, _noatime: bool) -> io::Result<SysFile> {
    let w = wide(path)?;
    match api {
        FileApi::Crt => {
            // SAFETY: `w` is a NUL-terminated UTF-16 string that outlives
            // the call; `_wopen` reads it and keeps nothing.
            let fd = unsafe { libc::wopen(w.as_ptr(), libc::O_RDONLY | libc::O_BINARY) };
            if fd < 0 {
                let error = io::Error::last_os_error();
                // The C runtime cannot open a directory (EACCES): say what
                // it is, as the stat after an open says on Unix and Win32.
                if path.is_dir() {
                    return Err(io::ErrorKind::IsADirectory.into());
                }
                Err(error)
            } else {
                Ok(SysFile(Raw::Crt(fd)))
            }
        }
        _ => {
            let share = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;
            // SAFETY: `w` is a NUL-terminated UTF-16 string that outlives
            // the call; no security attributes and no template handle.
            let h = unsafe {
                CreateFileW(
                    w.as_ptr(),
                    GENERIC_READ,
                    share,
                    std::ptr::null(),
                    OPEN_EXISTING,
                    // Backup semantics: a directory opens too (its stat
                    // then says what it is, as on Unix); a file is
                    // opened as without it.
                    FILE_ATTRIBUTE_NORMAL | FILE_FLAG_BACKUP_SEMANTICS,
                    std::ptr::null_mut(),
                )
            };
            if h == INVALID_HANDLE_VALUE {
                Err(io::Error::last_os_error())
            } else {
                Ok(SysFile(Raw::Win32(h)))
            }
        }
    }
}

/// Windows has no `O_NOATIME` to retry without.
pub(in crate::io) fn retry_plain(_error: &io::Error) -> bool {
    false
}

/// 100 ns intervals between 1601-01-01 (Windows' epoch) and 1970-01-01.
const EPOCH_DIFF_100NS: i128 = 116_444_736_000_000_000;

impl SysFile {
    /// The Win32 handle of the file (the C runtime's descriptor's own).
    fn handle(&self) -> HANDLE {
        match self.0 {
            Raw::Win32(h) => h,
            // SAFETY: `fd` is an open descriptor of this process (from a
            // successful `_wopen`, not yet closed); `_get_osfhandle` only
            // looks it up in the runtime's table (no system call).
            Raw::Crt(fd) => unsafe { libc::get_osfhandle(fd) as HANDLE },
        }
    }

    /// One `GetFileInformationByHandle`: volume, file index, size and
    /// last write time (for the C runtime too: its `_fstat` has no file
    /// index to tell a replaced file by).
    pub(in crate::io) fn stat(&self) -> io::Result<Stat> {
        // SAFETY: all-zero bytes are a valid BY_HANDLE_FILE_INFORMATION
        // (integers and FILETIMEs), which the call then fills in.
        let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the handle is open; `info` is a valid, writable struct.
        if unsafe { GetFileInformationByHandle(self.handle(), &mut info) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let kind = if info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
            FileKind::Other("directory")
        } else {
            FileKind::Regular
        };
        let write =
            (u64::from(info.ftLastWriteTime.dwHighDateTime) << 32) | u64::from(info.ftLastWriteTime.dwLowDateTime);
        let identity = FileIdentity {
            dev: u64::from(info.dwVolumeSerialNumber),
            ino: (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
            len: (u64::from(info.nFileSizeHigh) << 32) | u64::from(info.nFileSizeLow),
            mtime_ns: (i128::from(write) - EPOCH_DIFF_100NS) * 100,
        };
        Ok(Stat { kind, identity })
    }

    /// Exactly one `CloseHandle` or `_close`.
    pub(in crate::io) fn close(self) -> io::Result<()> {
        let ok = match self.0 {
            // SAFETY: the handle came from a successful `CreateFileW` and
            // is closed here exactly once (`self` is consumed).
            Raw::Win32(h) => unsafe { CloseHandle(h) != 0 },
            // SAFETY: the descriptor came from a successful `_wopen` and is
            // closed here exactly once (`self` is consumed).
            Raw::Crt(fd) => unsafe { libc::close(fd) == 0 },
        };
        if ok {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

impl Read for SysFile {
    /// One `ReadFile` or one `_read`: at most 2 GiB - 1 bytes at once (the
    /// largest both take).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let len = buf.len().min(i32::MAX as usize);
        match self.0 {
            Raw::Win32(h) => {
                let mut got: u32 = 0;
                // SAFETY: `buf` is writable for `len` bytes, `got` is a
                // valid out-parameter, no OVERLAPPED (synchronous handle).
                let ok = unsafe { ReadFile(h, buf.as_mut_ptr(), len as u32, &mut got, std::ptr::null_mut()) };
                if ok == 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(got as usize)
                }
            }
            Raw::Crt(fd) => {
                // SAFETY: `buf` is writable for `len` bytes; `fd` is open.
                let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), len as libc::c_uint) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            }
        }
    }
}

impl Seek for SysFile {
    /// One `SetFilePointerEx` or one `_lseeki64`.
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let (offset, method) = match pos {
            SeekFrom::Start(n) => (
                i64::try_from(n).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset too large"))?,
                FILE_BEGIN,
            ),
            SeekFrom::Current(n) => (n, FILE_CURRENT),
            SeekFrom::End(n) => (n, FILE_END),
        };
        let at = match self.0 {
            Raw::Win32(h) => {
                let mut at: i64 = 0;
                // SAFETY: the handle is open; `at` is a valid out-parameter.
                if unsafe { SetFilePointerEx(h, offset, &mut at, method) } == 0 {
                    return Err(io::Error::last_os_error());
                }
                at
            }
            Raw::Crt(fd) => {
                // FILE_BEGIN, FILE_CURRENT and FILE_END are SEEK_SET,
                // SEEK_CUR and SEEK_END (0, 1, 2).
                // SAFETY: `fd` is open; the call takes plain integers.
                let at = unsafe { libc::lseek64(fd, offset, method as libc::c_int) };
                if at < 0 {
                    return Err(io::Error::last_os_error());
                }
                at
            }
        };
        Ok(at as u64)
    }
}

impl RawRead for SysFile {}

/// Open a file of an update's: read-only, or for writing as `write` says
/// (Windows has no permission modes to give; std's `CreateFileW` shares
/// reading, writing and deletion).
pub(crate) fn open_for_update(path: &Path, write: Option<WriteMode>, _noatime: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    match write {
        None => o.read(true),
        Some(WriteMode::ReadWrite) => o.read(true).write(true),
        Some(WriteMode::Truncate(_)) => o.write(true).create(true).truncate(true),
        Some(WriteMode::Exclusive(_)) => o.write(true).create_new(true),
    };
    o.open(path)
}

/// Exactly one `CloseHandle`, whose error is the caller's.
pub(crate) fn close_file(file: File) -> io::Result<()> {
    use std::os::windows::io::IntoRawHandle;
    let h = file.into_raw_handle();
    // SAFETY: `into_raw_handle` handed over sole ownership of an open
    // handle, closed here exactly once.
    if unsafe { CloseHandle(h) } == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Windows' `access`: the file's attributes (one `GetFileAttributesExW`);
/// writable unless read-only.
pub(crate) fn access(path: &Path, how: Access) -> io::Result<()> {
    let m = std::fs::metadata(path)?;
    if how == Access::Writable && m.permissions().readonly() {
        return Err(io::ErrorKind::PermissionDenied.into());
    }
    Ok(())
}

/// An empty file at `path`, to be renamed in the user's keybox's stead.
pub(crate) fn make_stand_in(path: &Path) -> io::Result<()> {
    close_file(OpenOptions::new().write(true).create_new(true).open(path)?)
}

/// A new file, which must not exist yet (in kbxscope's private directory,
/// which only its user can reach).
pub(crate) fn create_private(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

/// Whether process `pid` is running (`OpenProcess`, `GetExitCodeProcess`).
pub(crate) fn process_alive(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::STILL_ACTIVE;
    use windows_sys::Win32::System::Threading::{GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};
    // SAFETY: plain integers in; a handle or NULL out.
    let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if h.is_null() {
        // Access denied: it exists, owned by another user.
        return io::Error::last_os_error().kind() == io::ErrorKind::PermissionDenied;
    }
    let mut code = 0u32;
    // SAFETY: `h` is a process handle we own; `code` a valid out-parameter.
    let ok = unsafe { GetExitCodeProcess(h, &mut code) } != 0;
    // SAFETY: `h` is ours, closed once.
    unsafe { CloseHandle(h) };
    ok && code == STILL_ACTIVE as u32
}

/// Where Gpg4win keeps a user's home unless `GNUPGHOME` says otherwise:
/// `%APPDATA%\gnupg`.
pub(super) fn default_gnupg_home() -> Option<std::path::PathBuf> {
    std::env::var_os("APPDATA").filter(|h| !h.is_empty()).map(|h| std::path::PathBuf::from(h).join("gnupg"))
}

/// User and system CPU time used so far by this process
/// (`GetProcessTimes`); Windows keeps no sum for waited-for children:
/// zero.
pub fn cpu_times(of: CpuOf) -> (Duration, Duration) {
    use windows_sys::Win32::Foundation::FILETIME;
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, GetProcessTimes};
    if of == CpuOf::Children {
        return (Duration::ZERO, Duration::ZERO);
    }
    let zero = FILETIME { dwLowDateTime: 0, dwHighDateTime: 0 };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: the pseudo-handle of this process; four valid out-parameters.
    let ok = unsafe { GetProcessTimes(GetCurrentProcess(), &mut created, &mut exited, &mut kernel, &mut user) };
    if ok == 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let d =
        |t: FILETIME| Duration::from_nanos(((u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)) * 100);
    (d(user), d(kernel))
}

/// A monotonic clock in ns, from the first time it is asked (Windows has
/// no interposer's clock to agree with).
pub fn monotonic_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

type StopHandler = Box<dyn FnMut(Stop) + Send>;

/// Who [`console_event`] calls.
static STOPS: std::sync::Mutex<Option<StopHandler>> = std::sync::Mutex::new(None);

/// The console's handler (`SetConsoleCtrlHandler`), on a thread Windows
/// makes for it.
unsafe extern "system" fn console_event(kind: u32) -> windows_sys::core::BOOL {
    use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, CTRL_C_EVENT};
    let stop = match kind {
        CTRL_C_EVENT => Stop { name: "Ctrl-C", exit_code: 130 },
        CTRL_BREAK_EVENT => Stop { name: "Ctrl-Break", exit_code: 131 },
        _ => Stop { name: "console closed", exit_code: 143 },
    };
    let mut stops = STOPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match stops.as_mut() {
        Some(each) => {
            each(stop);
            1
        }
        // Not handled: the default (the process ends).
        None => 0,
    }
}

/// Call `each` for every Ctrl-C, Ctrl-Break and console close from now on
/// (`SetConsoleCtrlHandler`). False if the handler cannot be set (then
/// nothing changes).
pub fn watch_stops(each: impl FnMut(Stop) + Send + 'static) -> bool {
    use windows_sys::Win32::System::Console::SetConsoleCtrlHandler;
    *STOPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Box::new(each));
    // SAFETY: `console_event` has the signature Windows calls a handler
    // with and lives for the process's life.
    unsafe { SetConsoleCtrlHandler(Some(console_event), 1) != 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(dir: &Path) -> std::path::PathBuf {
        // A non-ASCII name, as a user's home may have.
        let path = dir.join("schlüssel-ключ.kbx");
        std::fs::write(&path, b"keybox bytes\r\nmore").unwrap();
        path
    }

    #[test]
    fn both_apis_read_seek_and_stat_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path());
        for api in [FileApi::Win32, FileApi::Crt] {
            let mut f = open_read_only(&path, api, false).unwrap();
            let mut buf = [0u8; 64];
            assert_eq!(f.read(&mut buf[..7]).unwrap(), 7, "{api}");
            assert_eq!(&buf[..7], b"keybox ");
            assert_eq!(f.seek(SeekFrom::Start(12)).unwrap(), 12);
            // Binary mode: the CR/LF comes back as it is.
            assert_eq!(f.read(&mut buf).unwrap(), 6, "{api}");
            assert_eq!(&buf[..6], b"\r\nmore");
            assert_eq!(f.read(&mut buf).unwrap(), 0);
            let st = f.stat().unwrap();
            assert_eq!((st.kind, st.identity.len), (FileKind::Regular, 18));
            f.close().unwrap();
        }
    }

    #[test]
    fn a_missing_file_is_not_found_with_either_api() {
        let dir = tempfile::tempdir().unwrap();
        for api in [FileApi::Win32, FileApi::Crt] {
            let e = open_read_only(&dir.path().join("none.kbx"), api, false).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::NotFound, "{api}: {e}");
        }
    }
}
