//! `import CERTS… --onto DATABASE` and `delete --gpgsm --onto DATABASE`:
//! gpgsm 2.4's import and deletion of certificates with `use-keyboxd`,
//! replayed on a private copy of keyboxd's database: the requests gpgsm
//! sends keyboxd (read in GnuPG's `sm/keydb.c`, `sm/import.c`,
//! `sm/delete.c`; checked against keyboxd's `debug ipc` log) and the SQL
//! keyboxd runs for each (`keyboxd::server`,
//! `keyboxd::store`), every call SQLite makes counted per file.
//!
//! * **One connection**: gpgsm's handles take an idle connection before
//!   opening another, and its import and delete never hold two handles at
//!   once, so every request goes over one.
//! * **Each certificate imported**: the basic check and the walk up the
//!   chain as for a keybox ([`super::import_x509`]), their issuer lookups
//!   sent as `SEARCH --x509` requests (`x509::keyboxd`); the
//!   store: a `SEARCH` for the fingerprint, then `STORE --insert` (one
//!   transaction: the certificate, its fingerprint, issuer and subjects),
//!   or, for a certificate there, the same `SEARCH` once more (gpgsm's
//!   `keydb_set_cert_flags`, whose flags keyboxd does not keep: nothing is
//!   written).
//! * **Each certificate deleted** (by fingerprint, last first, up to one
//!   not found): a `SEARCH` for it; if there, the same `SEARCH` again
//!   (gpgsm rewinds its handle) and `DELETE` of its `ubid`: one
//!   transaction.
//! * There is no keybox maintenance pass and no lock file of gpgsm's:
//!   keyboxd's start and exit hold its own lock.

use std::path::Path;

use super::delete::KeyDeleted;
use super::delete_x509::delete_all;
use super::import::ImportError;
use super::import_x509::{import_all, CertImported, CertSummary, CertWrites, Gpgsm};
use super::keyboxd_import::{serve, store_image};
use crate::keyboxd::server::{Client, Search};
use crate::keyboxd::store::StoreMode;
use crate::x509::incoming::IncomingCert;
use crate::x509::KeyboxdIssuers as Keyboxd;
use crate::x509::{Cert, TrustList};

/// Import `certs` into keyboxd's database at `db` (a private copy; made if
/// it does not exist) as gpgsm 2.4 with keyboxd would at `at` (Unix
/// seconds), with SQLite's page cache `cache_kib` (keyboxd's own when
/// `None`), its events counted in `tally`; each certificate's outcome
/// handed to `emit`.
///
/// # Errors
/// The first request that failed.
pub fn into_keyboxd(
    db: &Path,
    tally: &crate::io::IoTally,
    certs: &[IncomingCert],
    at: i64,
    cache_kib: Option<u64>,
    mut emit: impl FnMut(&CertImported),
) -> Result<CertSummary, ImportError> {
    let _cmd =
        tracing::info_span!(target: "kbx::lookup", "import", certificates = certs.len(), store = "keyboxd").entered();
    let now = u32::try_from(at.max(0)).unwrap_or(u32::MAX);
    serve(db, tally, now, cache_kib, Client::Gpgsm, |server| {
        let trust = TrustList::default();
        let mut run = Gpgsm::new(Keyboxd::new(server), KeyboxdCerts { now }, &trust, at);
        import_all(&mut run, certs, &mut emit)
    })
}

/// Delete the certificates with `fingerprints` (SHA-1) from keyboxd's
/// database at `db` (a private copy) as gpgsm 2.4 with keyboxd would at
/// `at`, its events counted in `tally`; each outcome handed to `emit`, in
/// gpgsm's order, up to the first certificate not found.
///
/// # Errors
/// The first request that failed.
pub fn from_keyboxd(
    db: &Path,
    tally: &crate::io::IoTally,
    fingerprints: &[[u8; 20]],
    at: i64,
    mut emit: impl FnMut(&KeyDeleted),
) -> Result<u64, ImportError> {
    let _cmd =
        tracing::info_span!(target: "kbx::lookup", "delete", certificates = fingerprints.len(), store = "keyboxd")
            .entered();
    let now = u32::try_from(at.max(0)).unwrap_or(u32::MAX);
    serve(db, tally, now, None, Client::Gpgsm, |server| {
        let trust = TrustList::default();
        let mut run = Gpgsm::new(Keyboxd::new(server), KeyboxdCerts { now }, &trust, at);
        delete_all(&mut run, fingerprints, &mut emit)
    })
}

/// keyboxd's side of a gpgsm run: what a certificate's blob is made with.
struct KeyboxdCerts {
    now: u32,
}

impl KeyboxdCerts {
    /// Whether a `SEARCH` for `fpr` found a certificate; its `ubid`.
    fn search(lookups: &Keyboxd<'_, '_>, fpr: &[u8]) -> Result<Option<Vec<u8>>, ImportError> {
        let found = lookups.server().search(lookups.session(), &Search::Fpr(fpr.to_vec()))?;
        Ok(found.map(|f| f.row.ubid))
    }
}

impl CertWrites<Keyboxd<'_, '_>> for KeyboxdCerts {
    fn store(&mut self, lookups: &mut Keyboxd<'_, '_>, cert: &Cert) -> Result<bool, ImportError> {
        if Self::search(lookups, &cert.fpr)?.is_some() {
            // `keydb_set_cert_flags`: searched for again, nothing written.
            Self::search(lookups, &cert.fpr)?;
            return Ok(true);
        }
        let image = crate::x509::incoming::stored_blob(&cert.der, self.now)
            .map_err(|e| ImportError::Key { key_id: crate::kbx::dump::hex_upper(&cert.fpr), why: e.to_string() })?;
        store_image(lookups.server(), &image, &cert.fpr, StoreMode::Insert)?;
        Ok(false)
    }

    fn delete(&mut self, lookups: &mut Keyboxd<'_, '_>, fpr: &[u8; 20]) -> Result<bool, ImportError> {
        if Self::search(lookups, fpr)?.is_none() {
            return Ok(false);
        }
        // gpgsm's handle rewound: the search again, then `DELETE`.
        let Some(ubid) = Self::search(lookups, fpr)? else { return Ok(false) };
        lookups.server().delete(&ubid)?;
        Ok(true)
    }
}
