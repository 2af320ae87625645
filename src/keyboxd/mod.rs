//! keyboxd's store: `public-keys.d/pubring.db`, the SQLite database GnuPG
//! 2.4's keyboxd keeps keys and certificates in, read through the counting
//! layer ([`crate::io::sqlite`]).
//!
//! The schema (GnuPG's `kbx/backend-sqlite.c`, facts only): `pubkey(ubid,
//! type, ephemeral, revoked, keyblob)` — one row per key or certificate,
//! `ubid` the first 20 bytes of the primary fingerprint, `type` 1 for
//! OpenPGP and 2 for X.509, `keyblob` the keyblock or DER certificate —
//! beside the search tables `fingerprint(fpr, kid, keygrip, subkey, ubid)`,
//! `userid(uid, addrspec, type, uidno, ubid)`, `issuer(sn, dn, ubid)` and
//! `config(name, value)`.
//!
//! * [`open`] opens a database and checks that it is keyboxd's;
//! * `PubkeyRow` is one row of `pubkey`, read with every length capped;
//! * `KeyboxImage` is the database as the keybox GnuPG would have written for
//!   the same keys: each row, in `ubid` order (keyboxd's listing order),
//!   becomes the blob GnuPG's keybox writer makes for its keyblob
//!   ([`crate::kbx::create`]), so every workload runs on a database as on
//!   a keybox, over readers in memory (`KeyboxImage::opener`).
//! * `server` replays keyboxd itself (the SQL it runs for each request
//!   gpg and gpgsm send) for the `gnupg` lookup strategy on a database,
//!   and `Listing` is a client's `SEARCH`/`NEXT` listing read as blobs.
//! * [`write`](mod@write) makes a database from a keybox's keys (in memory; the
//!   caller writes the bytes).

mod curves;
mod image;
mod keygrip;
mod listing;
mod rows;
mod schema;
pub(crate) mod server;
pub(crate) mod store;
pub mod write;

pub(crate) use image::{Filter, KeyboxImage};

pub use image::RowMap;
pub(crate) use listing::ListingOpener;
pub use rows::RowFault;
pub use rows::RowProblem;
pub(crate) use rows::{PubkeyRow, ROW_COLUMNS};

use std::path::{Path, PathBuf};

use crate::io::sqlite::{Database, DbError};
use crate::io::IoTally;

/// What can go wrong with a keyboxd database.
#[derive(Debug, thiserror::Error)]
pub enum KeyboxdError {
    /// SQLite's error, or a refused write.
    #[error(transparent)]
    Db(#[from] DbError),
    /// An SQLite database, but not keyboxd's.
    #[error("'{}' is an SQLite database but not keyboxd's: {why}", path.display())]
    NotKeyboxd {
        /// The database.
        path: PathBuf,
        /// What is missing.
        why: String,
    },
    /// A handle could not be opened (never for a database's handles,
    /// which are in memory or requests to the replayed keyboxd).
    #[error(transparent)]
    Open(#[from] crate::io::OpenError),
    /// A row that cannot be read.
    #[error("'{}': {problem}", path.display())]
    Row {
        /// The database.
        path: PathBuf,
        /// The row and what is wrong with it.
        problem: RowProblem,
    },
}

/// The 16 bytes every SQLite database starts with.
pub(crate) const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether `head` (a file's first bytes, at least 4) begins like an SQLite
/// database. Four bytes tell it from a keybox: read as a keybox's first
/// blob length, "SQLi" would be 1.4 GB, far past the 5 MiB a blob may
/// have; SQLite checks the rest of its header when it opens the file.
pub(crate) fn is_sqlite(head: &[u8]) -> bool {
    head.len() >= 4 && SQLITE_MAGIC.starts_with(&head[..head.len().min(SQLITE_MAGIC.len())])
}

/// Open the keyboxd database `path` read-only (its events go to `tally`
/// when it is dropped) and check its schema.
///
/// # Errors
/// [`KeyboxdError`]: SQLite's error, or another schema.
pub fn open(path: &Path, tally: &IoTally) -> Result<Database, KeyboxdError> {
    open_with_cache(path, tally, None)
}

/// [`open`] with SQLite's page cache at `cache_kib` KiB (`PRAGMA
/// cache_size = -N`; `None`: SQLite's default, 2000 KiB, keyboxd's).
///
/// # Errors
/// As [`open`].
pub(crate) fn open_with_cache(path: &Path, tally: &IoTally, cache_kib: Option<u64>) -> Result<Database, KeyboxdError> {
    let db = Database::open(path, tally)?;
    if let Some(kib) = cache_kib {
        db.set_cache_kib(kib)?;
    }
    schema::check(&db)?;
    Ok(db)
}
