//! What a GnuPG home's directory says of itself, for `doctor`: its
//! entries' kinds, sizes, modes, owners and times, small files read whole
//! (configuration, lock files), the file system it lies on and this host's
//! name. Only read: nothing is opened for writing, no time is changed
//! (`stat` and `readdir` change none; small files are opened with
//! `O_NOATIME` where the system allows it). Not counted: these are no
//! keybox.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// At most this many entries are listed from one directory.
pub const MAX_ENTRIES: usize = 10_000;

/// What kind of thing an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link, with what it points at (`None`: dangling or a loop).
    Symlink(Option<Box<EntryKind>>),
    /// Anything else (socket, FIFO, device).
    Other,
}

/// One entry of a home, as `lstat` (and, for a link, `stat`) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path.
    pub path: PathBuf,
    /// Its kind.
    pub kind: EntryKind,
    /// Its size in bytes (of what a link points at).
    pub size: u64,
    /// Permission bits (Unix).
    pub mode: Option<u32>,
    /// Owner (Unix).
    pub uid: Option<u32>,
    /// Hard links (Unix).
    pub nlink: Option<u64>,
    /// Last change of its contents, Unix seconds.
    pub mtime: Option<i64>,
}

impl Entry {
    /// The entry's file name.
    pub fn name(&self) -> String {
        self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// Whether it is a regular file, or a link to one.
    pub fn is_file(&self) -> bool {
        match &self.kind {
            EntryKind::File => true,
            EntryKind::Symlink(Some(k)) => **k == EntryKind::File,
            _ => false,
        }
    }

    /// Whether it is a directory, or a link to one.
    pub fn is_dir(&self) -> bool {
        match &self.kind {
            EntryKind::Dir => true,
            EntryKind::Symlink(Some(k)) => **k == EntryKind::Dir,
            _ => false,
        }
    }
}

fn kind_of(t: std::fs::FileType) -> EntryKind {
    if t.is_file() {
        EntryKind::File
    } else if t.is_dir() {
        EntryKind::Dir
    } else {
        EntryKind::Other
    }
}

/// Look at `path` without following it; a link is also followed once to
/// say what it points at.
///
/// # Errors
/// The path does not exist or cannot be looked at.
pub fn look(path: &Path) -> io::Result<Entry> {
    let m = std::fs::symlink_metadata(path)?;
    let (kind, target) = if m.file_type().is_symlink() {
        let target = std::fs::metadata(path).ok();
        (EntryKind::Symlink(target.as_ref().map(|t| Box::new(kind_of(t.file_type())))), target)
    } else {
        (kind_of(m.file_type()), None)
    };
    let m = target.unwrap_or(m);
    Ok(Entry {
        path: path.to_path_buf(),
        kind,
        size: m.len(),
        mode: unix::mode(&m),
        uid: unix::uid(&m),
        nlink: unix::nlink(&m),
        mtime: m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_secs() as i64),
    })
}

/// The entries of directory `dir` (not `.` and `..`), by name, at most
/// [`MAX_ENTRIES`]; entries that vanish while listed are left out.
///
/// # Errors
/// The directory cannot be read.
pub fn list(dir: &Path) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)?.take(MAX_ENTRIES) {
        if let Ok(entry) = look(&e?.path()) {
            out.push(entry);
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The first `max` bytes of a small file (a lock file, a configuration
/// file), and whether there were more.
///
/// # Errors
/// The file cannot be opened or read.
pub fn read_head(path: &Path, max: u64) -> io::Result<(Vec<u8>, bool)> {
    let f = unix::open_quietly(path)?;
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes)?;
    let more = bytes.len() as u64 > max;
    bytes.truncate(max as usize);
    Ok((bytes, more))
}

/// The file system a path lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSystem {
    /// Mounted read-only.
    pub read_only: bool,
    /// A network file system (NFS, SMB/CIFS, 9p, a FUSE mount): other
    /// hosts may share it.
    pub network: bool,
}

/// The file system `path` lies on (`None` where the system does not say).
pub fn file_system(path: &Path) -> Option<FileSystem> {
    unix::file_system(path)
}

/// This host's name, as GnuPG writes it into its lock files.
pub fn host_name() -> String {
    unix::host_name()
}

/// The user this process runs as (Unix).
pub fn own_uid() -> Option<u32> {
    unix::own_uid()
}

#[cfg(unix)]
mod unix {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::path::Path;

    pub(super) fn mode(m: &std::fs::Metadata) -> Option<u32> {
        Some(m.mode() & 0o7777)
    }

    pub(super) fn uid(m: &std::fs::Metadata) -> Option<u32> {
        Some(m.uid())
    }

    pub(super) fn nlink(m: &std::fs::Metadata) -> Option<u64> {
        Some(m.nlink())
    }

    /// Opened read-only, without changing its access time where the
    /// kernel lets us (the owner's files).
    pub(super) fn open_quietly(path: &Path) -> std::io::Result<std::fs::File> {
        let open = |flags| std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path);
        match open(libc::O_NOATIME | libc::O_NONBLOCK) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(libc::O_NONBLOCK),
            other => other,
        }
    }

    pub(super) fn file_system(path: &Path) -> Option<super::FileSystem> {
        let vfs = rustix::fs::statvfs(path).ok()?;
        let fs = rustix::fs::statfs(path).ok()?;
        // The kernel's magic numbers of file systems other hosts share.
        const NETWORK: [i64; 6] = [
            0x6969,      // NFS
            0xff53_4d42, // CIFS
            0xfe53_4d42, // SMB2
            0x0102_1997, // 9p
            0x6573_5546, // FUSE
            0x517b,      // SMB
        ];
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        let magic = fs.f_type as i64;
        Some(super::FileSystem {
            read_only: vfs.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY),
            network: NETWORK.contains(&magic),
        })
    }

    pub(super) fn host_name() -> String {
        rustix::system::uname().nodename().to_string_lossy().into_owned()
    }

    pub(super) fn own_uid() -> Option<u32> {
        Some(rustix::process::getuid().as_raw())
    }
}

#[cfg(not(unix))]
mod unix {
    use std::path::Path;

    pub(super) fn mode(_: &std::fs::Metadata) -> Option<u32> {
        None
    }

    pub(super) fn uid(_: &std::fs::Metadata) -> Option<u32> {
        None
    }

    pub(super) fn nlink(_: &std::fs::Metadata) -> Option<u64> {
        None
    }

    pub(super) fn open_quietly(path: &Path) -> std::io::Result<std::fs::File> {
        std::fs::File::open(path)
    }

    pub(super) fn file_system(_: &Path) -> Option<super::FileSystem> {
        None
    }

    pub(super) fn host_name() -> String {
        std::env::var("COMPUTERNAME").unwrap_or_default()
    }

    pub(super) fn own_uid() -> Option<u32> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_a_file_and_a_dangling_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.conf"), b"hello\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("dangling")).unwrap();
        let entries = list(dir.path()).unwrap();
        let file = entries.iter().find(|e| e.name() == "a.conf").unwrap();
        assert!(file.is_file() && file.size == 6);
        #[cfg(unix)]
        {
            let link = entries.iter().find(|e| e.name() == "dangling").unwrap();
            assert_eq!(link.kind, EntryKind::Symlink(None));
        }
        assert_eq!(read_head(&dir.path().join("a.conf"), 3).unwrap(), (b"hel".to_vec(), true));
        assert!(look(dir.path()).unwrap().is_dir());
        assert!(!host_name().is_empty());
    }
}
