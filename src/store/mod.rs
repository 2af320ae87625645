//! The store a command reads: a keybox (`pubring.kbx`) or keyboxd's
//! database (`public-keys.d/pubring.db`), told apart by their first bytes,
//! or a GnuPG home resolved to its store as gpg resolves it.
//!
//! This is the one place that tells the two stores apart: every workload
//! takes a [`Store`] and has one entry point for both
//! ([`crate::workload`]). A new store, or writes to both, is one change
//! here and one arm in each workload's entry point.

use std::path::{Path, PathBuf};

use crate::io::sqlite::Database;
use crate::io::{is_file, read_text, IoTally, KeyboxFile, OpenError, PathOpener, ReadTextError};
use crate::kbx::blob::BLOB_PREFIX_LEN;
use crate::keyboxd::{self, KeyboxdError};

/// An opened store.
pub enum Store {
    /// A keybox: handles are opened as a workload asks for them; after
    /// [`Store::open`], the first one is the handle that looked at the
    /// file (its first bytes buffered: no event more than a pass makes).
    Keybox {
        /// The file.
        path: PathBuf,
        /// Its handles.
        opener: PathOpener,
    },
    /// keyboxd's database, opened read-only.
    Keyboxd {
        /// The file.
        path: PathBuf,
        /// The connection.
        db: Database,
    },
}

/// Which store a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// A keybox.
    Keybox,
    /// keyboxd's database.
    Keyboxd,
}

/// Why a store could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file cannot be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The file cannot be read.
    #[error("cannot read '{}': {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// A directory that is no GnuPG home: its store is missing.
    #[error("and no GnuPG home either: there is no {}: {directory}", store.display())]
    NoHome {
        /// What opening the directory as a keybox said.
        directory: OpenError,
        /// The store the home would have.
        store: PathBuf,
    },
    /// The home's `common.conf` cannot be read.
    #[error(transparent)]
    Conf(#[from] ReadTextError),
    /// The database cannot be read, or is not keyboxd's.
    #[error(transparent)]
    Keyboxd(Box<KeyboxdError>),
    /// No private directory could be made for what GnuPG writes beside
    /// the keybox it reads (its lock, its maintenance pass).
    #[error("cannot make a private directory for GnuPG's lock and maintenance pass: {error}")]
    Private {
        /// What the system said.
        error: std::io::Error,
    },
    /// A keybox was wanted, and this is keyboxd's database.
    #[error("'{}' is keyboxd's database already", path.display())]
    NotAKeybox {
        /// The database.
        path: PathBuf,
    },
}

impl From<KeyboxdError> for StoreError {
    fn from(e: KeyboxdError) -> Self {
        Self::Keyboxd(Box::new(e))
    }
}

impl StoreError {
    /// Whether the store's file does not exist.
    pub fn is_missing(&self) -> bool {
        matches!(self, StoreError::Open(OpenError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Whether a GnuPG `common.conf` says `use-keyboxd` (the last of
/// `use-keyboxd` and `no-use-keyboxd` wins; `#` starts a comment line).
fn uses_keyboxd(conf: &str) -> bool {
    let mut on = false;
    for line in conf.lines() {
        match line.split_whitespace().next() {
            Some("use-keyboxd") => on = true,
            Some("no-use-keyboxd") => on = false,
            _ => {}
        }
    }
    on
}

/// The store of the GnuPG home `path`: `public-keys.d/pubring.db` when its
/// `common.conf` says `use-keyboxd`, else `pubring.kbx`.
///
/// # Errors
/// An unreadable `common.conf`.
pub(crate) fn home_store(path: &Path) -> Result<PathBuf, StoreError> {
    let conf = path.join("common.conf");
    let keyboxd = is_file(&conf) && uses_keyboxd(&read_text(&conf, 1 << 20)?);
    Ok(if keyboxd { path.join("public-keys.d").join("pubring.db") } else { path.join("pubring.kbx") })
}

impl Store {
    /// Open the store at `path` (a keybox, a database, a GnuPG home). A
    /// directory is a GnuPG home, found out by opening it (its open,
    /// `fstat` and close are counted): its store is opened instead
    /// (`home_store`). A file is a database when it starts with SQLite's
    /// header; then the handle that looked is closed (its open, `fstat`,
    /// read and close are counted with SQLite's events) and SQLite opens it.
    ///
    /// # Errors
    /// The file cannot be opened or read, or is a database SQLite or the
    /// schema check refuses.
    pub fn open(path: &Path, tally: &IoTally) -> Result<Store, StoreError> {
        let (path, mut f) = match KeyboxFile::open(path, tally) {
            Err(e @ OpenError::NotRegular { kind: "directory", .. }) => {
                let store = home_store(path)?;
                match KeyboxFile::open(&store, tally) {
                    Err(OpenError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
                        return Err(StoreError::NoHome { directory: e, store });
                    }
                    other => (store, other?),
                }
            }
            other => (path.to_path_buf(), other?),
        };
        // As many bytes as a keybox pass reads first (the first blob's
        // prefix): no event more than that pass makes, buffered or not.
        let head = f.peek_start(BLOB_PREFIX_LEN).map_err(|error| StoreError::Read { path: path.clone(), error })?;
        if !keyboxd::is_sqlite(&head) {
            return Ok(Store::Keybox { opener: PathOpener::with_first(path.clone(), tally.clone(), f), path });
        }
        drop(f);
        let db = keyboxd::open(&path, tally)?;
        Ok(Store::Keyboxd { path, db })
    }

    /// Open `path` as the store it is known to be, without looking at it
    /// first (a sweep's runs, after one look): a keybox's handles open as
    /// workloads ask for them; a database with SQLite's page cache at
    /// `cache_kib` KiB (`None`: SQLite's default, keyboxd's).
    ///
    /// # Errors
    /// The database cannot be opened or is not keyboxd's.
    pub fn open_as(path: &Path, kind: StoreKind, tally: &IoTally, cache_kib: Option<u64>) -> Result<Store, StoreError> {
        Ok(match kind {
            StoreKind::Keybox => {
                Store::Keybox { path: path.to_path_buf(), opener: PathOpener::new(path.to_path_buf(), tally.clone()) }
            }
            StoreKind::Keyboxd => {
                Store::Keyboxd { path: path.to_path_buf(), db: keyboxd::open_with_cache(path, tally, cache_kib)? }
            }
        })
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        match self {
            Store::Keybox { path, .. } | Store::Keyboxd { path, .. } => path,
        }
    }

    /// Which store it is.
    pub fn kind(&self) -> StoreKind {
        match self {
            Store::Keybox { .. } => StoreKind::Keybox,
            Store::Keyboxd { .. } => StoreKind::Keyboxd,
        }
    }

    /// Every byte of a keybox, through one handle and its buffer (64 KiB
    /// at a time); the handle is closed after.
    ///
    /// # Errors
    /// [`StoreError::NotAKeybox`] for a database; a failed open or `read(2)`.
    pub fn read_keybox(&self) -> Result<Vec<u8>, StoreError> {
        use crate::io::Opener;
        let (path, opener) = match self {
            Store::Keybox { path, opener } => (path, opener),
            Store::Keyboxd { path, .. } => return Err(StoreError::NotAKeybox { path: path.clone() }),
        };
        let mut file = opener.open()?;
        let mut keybox = Vec::new();
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            let n = file.read(&mut chunk).map_err(|error| StoreError::Read { path: path.clone(), error })?;
            if n == 0 {
                return Ok(keybox);
            }
            keybox.extend_from_slice(&chunk[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::uses_keyboxd;

    #[test]
    fn common_conf() {
        assert!(uses_keyboxd("use-keyboxd\n"));
        assert!(uses_keyboxd("# x\n  use-keyboxd  \n"));
        assert!(!uses_keyboxd("#use-keyboxd\n"));
        assert!(!uses_keyboxd("use-keyboxd\nno-use-keyboxd\n"));
        assert!(!uses_keyboxd(""));
    }
}
