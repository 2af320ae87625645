//! One lookup framework for both protocols: the strategy behind
//! `--lookup`, the handle every strategy searches on, and the one error.
//!
//! A lookup finds what a check needs in the keybox: an issuer for an
//! X.509 chain (`crate::x509::IssuerLookup`), a signer for an OpenPGP
//! signature (`crate::openpgp::SignerLookup`). Each protocol has one trait,
//! implemented once per [`Strategy`] and named alike (`Gnupg`, `Scan`,
//! `Index`). On a keyboxd database, `gnupg` is the pattern gpg and gpgsm
//! follow through keyboxd: the same decisions (and gpg's caches), each
//! search a request to the replayed keyboxd (`x509::keyboxd`,
//! `openpgp::lookup::keyboxd`, `crate::keyboxd::server`). A further
//! program's access pattern is one more implementation of each trait and
//! one more variant here.
//!
//! * [`Strategy`] — `gnupg` (the GnuPG program's own access pattern),
//!   `scan` (one rescan per lookup) or `index` (one pass, then memory);
//!   [`Strategy::name`] is the one name the CLI, the sweep's exports and
//!   the telemetry labels use.
//! * `Handle` — a keybox handle opened by its first search, as GnuPG's
//!   are, rewound before a search and closed when dropped.
//! * [`LookupError`] — what can go wrong, with [`Sought`] saying which
//!   kind of lookup it was.
//! * `SearchLock` — GnuPG 2.2's keybox lock around gpgsm's searches, for
//!   a strategy that replays them.

mod handle;

pub(crate) use handle::Handle;

/// gpgsm 2.2's keybox lock around its searches (`keydb_search` takes the
/// dotlock when it is not held, `keydb_release` lets it go whichever handle
/// took it). The workload that replays GnuPG's start holds the lock's
/// files.
pub(crate) trait SearchLock {
    /// A search begins: the lock taken, unless held.
    fn take(&self);
    /// A handle is released: the lock let go, if held.
    fn release(&self);
}

use crate::io::{OpenError, ReadBlobError};

/// Which lookup strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// The GnuPG program's own access pattern (gpgsm's for issuers, gpg's
    /// for signers).
    Gnupg,
    /// One rescan per lookup.
    Scan,
    /// One pass, then memory.
    Index,
}

impl Strategy {
    /// Every strategy, in the order the help lists them.
    pub const ALL: [Strategy; 3] = [Strategy::Gnupg, Strategy::Scan, Strategy::Index];

    /// The strategy's name (`gnupg`, `scan`, `index`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Gnupg => "gnupg",
            Self::Scan => "scan",
            Self::Index => "index",
        }
    }
}

/// What a lookup was looking for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sought {
    /// An X.509 certificate's issuer.
    Issuer,
    /// An OpenPGP signature's signer.
    Signer,
}

impl Sought {
    fn article(self) -> &'static str {
        match self {
            Sought::Issuer => "an issuer",
            Sought::Signer => "a signer",
        }
    }
}

/// Errors of a lookup.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// A handle could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A rewind failed.
    #[error("keybox seek error during {} lookup: {source}", sought.article())]
    Seek {
        /// What the lookup looked for.
        sought: Sought,
        /// The error from `lseek(2)`.
        source: std::io::Error,
    },
    /// A search of keyboxd's database failed.
    #[error("during {} lookup: {source}", sought.article())]
    Keyboxd {
        /// What the lookup looked for.
        sought: Sought,
        /// SQLite's error.
        source: Box<crate::io::sqlite::DbError>,
    },
    /// A blob met during a lookup could not be read: a system error or
    /// broken framing, located like the listing's errors.
    #[error("during {} lookup, blob {}at byte offset {}: {source}", sought.article(),
            index.map(|i| format!("{i} ")).unwrap_or_default(), source.offset())]
    Blob {
        /// What the lookup looked for.
        sought: Sought,
        /// Physical index of the blob (0 = the first blob of the file),
        /// where the search counts them.
        index: Option<u64>,
        /// What went wrong.
        source: ReadBlobError,
    },
}
