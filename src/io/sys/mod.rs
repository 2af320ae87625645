//! The operating system's calls on a keybox: open read-only, read, seek,
//! stat, close, one module per system ([`FileApi`] chooses among the
//! calls a system has). Only [`super::keybox_file`] and the buffer call
//! them; the rest of the house does not know which system it runs on.
//!
//! * Unix: `openat`, `read` (the system call itself, see `unix.rs`),
//!   `lseek`, `fstat`/`statx`, `close`.
//! * Windows, as GnuPG can: Win32 (`CreateFileW`, `ReadFile`,
//!   `SetFilePointerEx`, `GetFileInformationByHandle`, `CloseHandle`, its
//!   keybox default) or the C runtime (`_wopen`, `_read`, `_lseeki64`,
//!   `_close`; the stat is the handle's, as for Win32).

use std::sync::atomic::{AtomicU8, Ordering};

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

pub use imp::SysFile;
pub(super) use imp::{open_read_only, retry_plain, GNUPG_KBX_BUFFER_KIB};

/// Which of the system's file APIs opens, reads, seeks and closes a
/// keybox (`--file-api`). Each system has its own; the others are refused
/// there with [`FileApi::available`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileApi {
    /// Unix: `openat`, `read`, `lseek`, `fstat`, `close`.
    Posix,
    /// Windows' own calls: `CreateFileW`, `ReadFile`, `SetFilePointerEx`,
    /// `GetFileInformationByHandle`, `CloseHandle` (GnuPG's keybox code on
    /// Windows, "sysopen").
    Win32,
    /// Windows' C runtime: `_wopen`, `_read`, `_lseeki64`, `_close`
    /// (the stat through the descriptor's handle).
    Crt,
}

impl FileApi {
    /// Every file API, on every system.
    pub const ALL: [FileApi; 3] = [FileApi::Posix, FileApi::Win32, FileApi::Crt];

    /// The API's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            FileApi::Posix => "posix",
            FileApi::Win32 => "win32",
            FileApi::Crt => "crt",
        }
    }

    /// The API called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether this system has the API.
    pub fn available(self) -> bool {
        imp::APIS.contains(&self)
    }

    /// The APIs this system has, its default first.
    pub fn on_this_system() -> &'static [FileApi] {
        imp::APIS
    }

    /// The API used unless another is asked for: the process's choice
    /// ([`FileApi::set_default`]), else the system's first.
    pub fn current() -> Self {
        match CHOSEN.load(Ordering::Relaxed) {
            0 => imp::APIS[0],
            n => Self::ALL[usize::from(n - 1)],
        }
    }

    /// Make `self` the API of every tally made from now on (the command
    /// line's `--file-api`).
    ///
    /// # Errors
    /// The API is not one of this system's.
    pub fn set_default(self) -> Result<(), UnavailableApi> {
        if !self.available() {
            return Err(UnavailableApi(self));
        }
        let n = Self::ALL.iter().position(|a| *a == self).unwrap_or(0);
        CHOSEN.store(n as u8 + 1, Ordering::Relaxed);
        Ok(())
    }
}

impl std::fmt::Display for FileApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An API this system does not have was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the {0} file API is not available on {os} (this system has: {list})", os = std::env::consts::OS, list = names(FileApi::on_this_system()))]
pub struct UnavailableApi(pub FileApi);

fn names(apis: &[FileApi]) -> String {
    apis.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
}

/// The process's `--file-api`: 0 for the system's default, else 1 + its
/// index in [`FileApi::ALL`].
static CHOSEN: AtomicU8 = AtomicU8::new(0);

/// What a file is, from its stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileKind {
    /// A regular file: a keybox can be one.
    Regular,
    /// Anything else, named (`directory`, `FIFO`, …).
    Other(&'static str),
}

/// What the stat of an open file says.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stat {
    /// Regular or not.
    pub(super) kind: FileKind,
    /// Device, file number, size, modification time.
    pub(super) identity: super::change::FileIdentity,
}

/// How an update opens a file of its own for writing (GnuPG's modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteMode {
    /// `O_CREAT|O_TRUNC` with this permission mode (Unix; Windows has
    /// none): a new keybox, a temporary file.
    Truncate(u32),
    /// `O_CREAT|O_EXCL` with this mode: a lock file that must not exist.
    Exclusive(u32),
    /// Read and write an existing file (`r+`).
    ReadWrite,
}

/// What an access check asks (`access(2)`'s mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// `F_OK`: the file exists.
    Exists,
    /// `R_OK`: the file may be read.
    Readable,
    /// `W_OK`: the file may be written.
    Writable,
}

/// Whose CPU time ([`cpu_times`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuOf {
    /// This process.
    Myself,
    /// Its waited-for children (Unix; Windows keeps no such sum: zero).
    Children,
}

pub(crate) use imp::{access, close_file, create_private, make_stand_in, open_for_update, process_alive};
pub use imp::{cpu_times, monotonic_ns, watch_stops};

/// The GnuPG home of this user: `$GNUPGHOME`, else where GnuPG keeps it on
/// this system (`~/.gnupg`; Gpg4win's `%APPDATA%\gnupg` on Windows).
pub fn gnupg_home() -> Option<std::path::PathBuf> {
    std::env::var_os("GNUPGHOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(imp::default_gnupg_home)
}

/// A request from outside to stop: Ctrl-C, or the system's termination
/// request (SIGTERM; on Windows the console closing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// Its name, for a message: `SIGINT`, `SIGTERM`, `Ctrl-C`, …
    pub name: &'static str,
    /// The exit status a shell expects after it (128 + the signal's
    /// number: 130, 143).
    pub exit_code: i32,
}
