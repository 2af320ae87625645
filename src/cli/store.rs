//! Which store a command reads: a keybox or keyboxd's database, told apart
//! by their first bytes; a GnuPG home directory resolved to its store as
//! gpg resolves it.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};

use super::keybox;
use super::textfile::{is_file, read_text};
use kbxscope::io::sqlite::Database;
use kbxscope::io::{IoTally, KeyboxFile, OpenError, PathOpener};
use kbxscope::kbx::blob::BLOB_PREFIX_LEN;
use kbxscope::keyboxd::{self, RowMap};
use kbxscope::workload::ScanError;

/// An opened store.
pub enum Store {
    /// A keybox, opened, its first bytes buffered (no event more than its
    /// first pass makes).
    Keybox {
        /// The file.
        path: PathBuf,
        /// The open handle.
        file: Box<KeyboxFile>,
    },
    /// keyboxd's database, opened read-only.
    Keyboxd {
        /// The file.
        path: PathBuf,
        /// The connection.
        db: Database,
    },
}

/// Whether a GnuPG `common.conf` says `use-keyboxd` (the last of
/// `use-keyboxd` and `no-use-keyboxd` wins; `#` starts a comment line).
fn uses_keyboxd(conf: &str) -> bool {
    let mut on = false;
    for line in conf.lines() {
        let line = line.trim();
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
pub fn home_store(path: &Path) -> Result<PathBuf> {
    let conf = path.join("common.conf");
    let keyboxd = is_file(&conf) && uses_keyboxd(&read_text(&conf, 1 << 20)?);
    Ok(if keyboxd { path.join("public-keys.d").join("pubring.db") } else { path.join("pubring.kbx") })
}

/// Open the store the user named (a keybox, a database, a GnuPG home), or
/// the built-in keybox. A directory is a GnuPG home, found out by opening
/// it (its open, `fstat` and close are counted): its store is opened
/// instead ([`home_store`]). A file is a database when it starts with
/// SQLite's header; then the handle that looked is closed (its open,
/// `fstat`, read and close are counted with SQLite's events) and SQLite
/// opens it.
///
/// # Errors
/// The file cannot be opened or read, or is a database SQLite or the
/// schema check refuses.
pub fn open(file: Option<&Path>, tally: &IoTally) -> Result<Store> {
    let (path, mut f) = match keybox::open(file, tally) {
        Err(e) if is_directory(&e) => {
            let dir = file.unwrap_or(Path::new("."));
            let store = home_store(dir)?;
            match keybox::open(Some(&store), tally) {
                Err(missing) if is_missing(&missing) => {
                    return Err(e.context(format!("and no GnuPG home either: there is no {}", store.display())));
                }
                other => other?,
            }
        }
        other => other?,
    };
    // As many bytes as a keybox pass reads first (the first blob's
    // prefix): no event more than that pass makes, buffered or not.
    let head = f.peek_start(BLOB_PREFIX_LEN).map_err(|e| anyhow!("cannot read '{}': {e}", path.display()))?;
    if !keyboxd::is_sqlite(&head) {
        return Ok(Store::Keybox { path, file: Box::new(f) });
    }
    drop(f);
    let db = keyboxd::open(&path, tally)?;
    Ok(Store::Keyboxd { path, db })
}

/// Whether opening failed because the file does not exist.
fn is_missing(e: &anyhow::Error) -> bool {
    matches!(e.downcast_ref::<OpenError>(), Some(OpenError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound)
}

/// Whether opening failed because the path is a directory.
fn is_directory(e: &anyhow::Error) -> bool {
    matches!(e.downcast_ref::<OpenError>(), Some(OpenError::NotRegular { kind: "directory", .. }))
}

/// An opened store for a workload that opens the store several times: a
/// keybox's [`PathOpener`] (its first handle the one opened to look), or
/// a database's connection.
pub enum Source {
    /// A keybox.
    Keybox(PathOpener),
    /// A database.
    Keyboxd(Database),
}

impl Store {
    /// The store as a [`Source`].
    pub fn into_source(self, tally: &IoTally) -> (PathBuf, Source) {
        match self {
            Store::Keybox { path, file } => {
                (path.clone(), Source::Keybox(PathOpener::with_first(path, tally.clone(), *file)))
            }
            Store::Keyboxd { path, db } => (path, Source::Keyboxd(db)),
        }
    }
}

/// Where an error of a pass is: a keybox's blob and byte offset, or the
/// database row its blob was made from.
#[derive(Clone, Copy)]
pub enum Places<'a> {
    /// In a keybox.
    Keybox,
    /// In a database, its rows as the pass met them.
    Rows(&'a RowMap),
}

impl Places<'_> {
    /// The error, located.
    pub fn describe(self, e: &ScanError) -> String {
        match self {
            Places::Keybox => e.to_string(),
            Places::Rows(map) => format!("{}: {}", map.row_name(e.index), e.what()),
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
