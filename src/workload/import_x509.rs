//! `import FILE…` of X.509 certificates: gpgsm's import into a keybox,
//! 2.2's or 2.4's, replayed on a private copy with the reads and writes
//! gpgsm makes (read in GnuPG's `sm/import.c`, `sm/keydb.c`,
//! `sm/certchain.c` and `kbx/keybox-update.c`; checked under strace):
//!
//! * **Start**: a keybox that does not exist is made under the lock
//!   (opened once, its header written); the lock's own file goes and is
//!   made again; then, under the lock, GnuPG's maintenance pass. On a
//!   keybox that exists, the start every gpgsm command makes.
//! * **Each certificate** (`check_and_store`): the basic check — a root's
//!   self-signature is verified, any other certificate's issuer looked up
//!   as chain validation looks it up (`find_up`, on a new handle) and its
//!   signature verified; a missing issuer does not stop the import, a bad
//!   signature does. Then the store (`keydb_store_cert`): under the lock, a
//!   fingerprint search over every certificate, ephemeral ones too, on a
//!   new handle. A new certificate: the handle rewound, `access(W_OK)`,
//!   its file closed, the blob appended through a full copy of the keybox,
//!   the lock released. A certificate already there: the handle released
//!   (and the lock), then the search again under the lock on another
//!   handle (`keydb_set_cert_flags`), its ephemeral flag cleared in place
//!   if it had one. Then the issuer looked up once more (`find_up` on a new
//!   handle) and, when found, checked and stored the same way, up to a
//!   root or a missing issuer (at most 50 deep).
//! * gpgsm 2.2 takes the lock at every search when it is not held and
//!   lets it go as the handle is released; 2.4 searches without it.
//!
//! gpgsm asks dirmngr for issuers it cannot find; the replay is gpgsm
//! whose dirmngr finds nothing (`--disable-dirmngr`, or offline with an
//! empty cache), which changes nothing on the keybox.

use std::path::Path;
use std::rc::Rc;

use super::import::ImportError;
use super::startup::Dotlock;
use crate::gnupg_version::GnupgVersion;
use crate::io::update::{KeyboxWriter, Role};
use crate::io::{IoTally, PathOpener};
use crate::kbx::encode::{encode_header, HeaderSpec};
use crate::lookup::SearchLock as _;
use crate::openpgp::lookup::Gnupg as GpgLookups;
use crate::x509::incoming::IncomingCert;
use crate::x509::lookup::Gnupg;
use crate::x509::{Cert, IssuerLookup, TrustList, Validator};

/// gpgsm's longest chain of issuers walked on import.
const MAX_DEPTH: usize = 50;

/// Offset of a blob's 16-bit flags, and their value once the ephemeral
/// flag is cleared (gpgsm's certificate blobs carry no other flag).
const BLOB_FLAGS_AT: u64 = 6;
const FLAGS_STORED: u16 = 0;

/// What gpgsm prints at the end of an import (`print_imported_summary`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CertSummary {
    /// Certificates read.
    pub processed: u64,
    /// New certificates.
    pub imported: u64,
    /// Certificates already there.
    pub unchanged: u64,
    /// Certificates refused (bad signature, chain too long).
    pub not_imported: u64,
}

/// What happened to one certificate.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum CertOutcome {
    /// A new certificate.
    Imported,
    /// Already there.
    Unchanged,
    /// Refused.
    NotImported {
        /// gpgsm's words.
        reason: &'static str,
    },
}

/// One certificate of the import.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CertImported {
    /// Its SHA-1 fingerprint, upper-case hex.
    pub fingerprint: String,
    /// Its subject.
    pub subject: String,
    /// Whether its issuer was found (gpgsm imports it either way).
    pub issuer_found: bool,
    /// What happened.
    #[serde(flatten)]
    pub outcome: CertOutcome,
}

/// The outcome of gpgsm's basic check.
enum Basic {
    /// A root with a good self-signature, or a certificate its issuer signed.
    Good,
    /// The issuer is not in the keybox: imported all the same.
    NoIssuer,
    /// Refused, with gpgsm's reason.
    Bad(&'static str),
}

/// Import `certs` into the keybox at `store` (a private copy; made if it
/// does not exist) as `version`'s gpgsm would at `at` (Unix seconds), its
/// events counted in `tally`; each certificate's outcome handed to `emit`.
///
/// # Errors
/// The first write or search that failed.
pub fn into_keybox(
    store: &Path,
    tally: &IoTally,
    certs: &[IncomingCert],
    at: i64,
    version: GnupgVersion,
    mut emit: impl FnMut(&CertImported),
) -> Result<CertSummary, ImportError> {
    let _cmd = tracing::info_span!(target: "kbx::lookup", "import", certificates = certs.len()).entered();
    gpgsm_run(store, tally, at, version, |run| import_all(run, certs, &mut emit))
}

/// gpgsm's import of `certs` in `run`, each certificate's outcome handed
/// to `emit`; what gpgsm prints at the end.
///
/// # Errors
/// The first write or search that failed.
pub(super) fn import_all<L: IssuerLookup, W: CertWrites<L>>(
    run: &mut Gpgsm<'_, L, W>,
    certs: &[IncomingCert],
    emit: &mut impl FnMut(&CertImported),
) -> Result<CertSummary, ImportError> {
    let mut summary = CertSummary::default();
    for c in certs {
        let done = run.check_and_store(&c.cert)?;
        summary.processed += 1;
        match done.outcome {
            CertOutcome::Imported => summary.imported += 1,
            CertOutcome::Unchanged => summary.unchanged += 1,
            CertOutcome::NotImported { .. } => summary.not_imported += 1,
        }
        emit(&done);
    }
    Ok(summary)
}

/// One gpgsm run that writes the keybox at `store` (made if it does not
/// exist), as `version`'s gpgsm at `at`: its start, then `body`; then the
/// lock's own file removed and the writer's counters handed to `tally`,
/// whatever `body` came to.
///
/// # Errors
/// The first write or search that failed.
pub(super) fn gpgsm_run<T>(
    store: &Path,
    tally: &IoTally,
    at: i64,
    version: GnupgVersion,
    body: impl FnOnce(&mut Gpgsm<'_, Gnupg<PathOpener>, KeyboxCerts>) -> Result<T, ImportError>,
) -> Result<T, ImportError> {
    let now = u32::try_from(at.max(0)).unwrap_or(u32::MAX);
    let header = encode_header(&HeaderSpec { openpgp: false, created_at: now, last_maintenance: now });
    let mut w = KeyboxWriter::new(store, tally);
    if let Err(e) = start(&mut w, store, tally, &header) {
        let _ = w.finish();
        w.settle();
        return Err(e);
    }
    let lock = Rc::new(match version {
        GnupgVersion::V2_2 => Dotlock::new(w),
        GnupgVersion::V2_4 => Dotlock::checked(w),
    });
    let opener = PathOpener::new(store.to_path_buf(), tally.clone());
    let lookups = match version {
        GnupgVersion::V2_2 => Gnupg::locking(opener, lock.clone()),
        GnupgVersion::V2_4 => Gnupg::new(opener).eager_resets(true),
    };
    let trust = TrustList::default();
    let writes = KeyboxCerts { lock: lock.clone(), now, header };
    let mut run = Gpgsm::new(lookups, writes, &trust, at);
    let result = maintain(&lock, now).and_then(|()| body(&mut run));
    drop(run);
    let Ok(lock) = Rc::try_unwrap(lock) else {
        debug_assert!(false, "a lookup outlived the run");
        return result;
    };
    let mut w = lock.into_writer();
    let finished = w.finish();
    w.settle();
    let value = result?;
    finished?;
    Ok(value)
}

/// gpgsm's start on the keybox it imports into, up to its maintenance
/// pass ([`maintain`]).
fn start(w: &mut KeyboxWriter, store: &Path, tally: &IoTally, header: &[u8]) -> Result<(), ImportError> {
    if store.exists() {
        GpgLookups::new(PathOpener::new(store.to_path_buf(), tally.clone())).probe()?;
        w.exists(Role::Store);
        w.readable();
    } else {
        // The probe's open fails; gpgsm makes the file under a lock of
        // its own, which it then destroys.
        let _ = crate::io::KeyboxFile::open(store, tally);
        w.exists(Role::Store);
        w.lock()?;
        w.exists(Role::Store);
        w.create_once(header)?;
        w.unlock()?;
        w.finish()?;
    }
    Ok(())
}

/// GnuPG's maintenance pass at gpgsm's start, under the lock (gpgsm goes
/// on when it cannot have the lock).
fn maintain(lock: &Dotlock, now: u32) -> Result<(), ImportError> {
    lock.take();
    let done = lock.writer().compress(now, false);
    lock.release();
    done?;
    Ok(())
}

/// Where a gpgsm run keeps its certificates, with the lookups `L` it
/// searches them by: a keybox ([`KeyboxCerts`]) or keyboxd
/// (`super::keyboxd_x509`).
pub(super) trait CertWrites<L: IssuerLookup> {
    /// gpgsm's `keydb_store_cert` of `cert`: whether it was there.
    ///
    /// # Errors
    /// The first write or search that failed.
    fn store(&mut self, lookups: &mut L, cert: &Cert) -> Result<bool, ImportError>;

    /// gpgsm's `delete_one` of the certificate with fingerprint `fpr`:
    /// whether it was there.
    ///
    /// # Errors
    /// The first write or search that failed.
    fn delete(&mut self, lookups: &mut L, fpr: &[u8; 20]) -> Result<bool, ImportError>;
}

/// One gpgsm run: its lookups, where it writes, its checks.
pub(super) struct Gpgsm<'t, L, W> {
    lookups: L,
    writes: W,
    validator: Validator<'t>,
}

impl<'t, L: IssuerLookup, W: CertWrites<L>> Gpgsm<'t, L, W> {
    /// A run at `at` (Unix seconds) with `trust`'s roots.
    pub(super) fn new(lookups: L, writes: W, trust: &'t TrustList, at: i64) -> Self {
        Self { lookups, writes, validator: Validator::new(trust, at) }
    }

    /// gpgsm's `check_and_store` of a certificate read from the input,
    /// and of the issuers above it.
    fn check_and_store(&mut self, cert: &Cert) -> Result<CertImported, ImportError> {
        let basic = self.basic_check(cert)?;
        let issuer_found = !matches!(basic, Basic::NoIssuer);
        let described = |outcome| CertImported {
            fingerprint: crate::kbx::dump::hex_upper(&cert.fpr),
            subject: String::from_utf8_lossy(&cert.subject).into_owned(),
            issuer_found,
            outcome,
        };
        if let Basic::Bad(reason) = basic {
            return Ok(described(CertOutcome::NotImported { reason }));
        }
        let outcome = if self.store(cert)? { CertOutcome::Unchanged } else { CertOutcome::Imported };
        // Up the chain: each issuer found is checked and stored again
        // (gpgsm's recursion, not counted in its statistics).
        let mut at = cert.clone();
        for _ in 1..MAX_DEPTH {
            let Some(next) = self.walk(&at)? else { break };
            if let Basic::Bad(_) = self.basic_check(&next)? {
                break;
            }
            self.store(&next)?;
            at = next;
        }
        Ok(described(outcome))
    }

    /// gpgsm's `gpgsm_basic_cert_check`.
    fn basic_check(&mut self, cert: &Cert) -> Result<Basic, ImportError> {
        let _span = tracing::info_span!(target: "kbx::lookup", "basic_check").entered();
        if self.validator.is_root(cert) {
            return Ok(if self.validator.signed_by(cert, cert) { Basic::Good } else { Basic::Bad("bad certificate") });
        }
        let issuer = self.on_new_handle(|v, l| v.find_up(cert, l))?;
        Ok(match issuer {
            None => Basic::NoIssuer,
            Some(i) if self.validator.signed_by(cert, &i) => Basic::Good,
            Some(_) => Basic::Bad("bad signature"),
        })
    }

    /// gpgsm's `gpgsm_walk_cert_chain`: the issuer of a certificate that
    /// is not a root, looked up on a new handle.
    fn walk(&mut self, cert: &Cert) -> Result<Option<Cert>, ImportError> {
        if self.validator.is_root(cert) {
            return Ok(None);
        }
        let _span = tracing::info_span!(target: "kbx::lookup", "walk_chain").entered();
        self.on_new_handle(|v, l| v.find_up(cert, l))
    }

    /// `look` on a new handle, released after (and with it gpgsm 2.2's
    /// lock, when a search took it).
    fn on_new_handle<T>(
        &mut self,
        look: impl FnOnce(&mut Validator<'_>, &mut L) -> Result<T, crate::lookup::LookupError>,
    ) -> Result<T, ImportError> {
        self.lookups.begin_cert();
        let found = look(&mut self.validator, &mut self.lookups);
        self.lookups.end_cert();
        Ok(found?)
    }

    /// gpgsm's `keydb_store_cert`: whether the certificate was there.
    fn store(&mut self, cert: &Cert) -> Result<bool, ImportError> {
        let _span = tracing::info_span!(target: "kbx::lookup", "store").entered();
        self.writes.store(&mut self.lookups, cert)
    }

    /// gpgsm's `delete_one` of the certificate with fingerprint `fpr`:
    /// whether it was there.
    pub(super) fn delete(&mut self, fpr: &[u8; 20]) -> Result<bool, ImportError> {
        let _span = tracing::info_span!(target: "kbx::lookup", "delete").entered();
        self.writes.delete(&mut self.lookups, fpr)
    }
}

/// A keybox's side of a gpgsm run: the lock, and what a new blob is made
/// with.
pub(super) struct KeyboxCerts {
    lock: Rc<Dotlock>,
    now: u32,
    header: Vec<u8>,
}

impl CertWrites<Gnupg<PathOpener>> for KeyboxCerts {
    /// Under the lock, a fingerprint search over every certificate on a
    /// new handle; a new certificate appended through a full copy (see
    /// the module docs), one there has its ephemeral flag cleared.
    fn store(&mut self, lookups: &mut Gnupg<PathOpener>, cert: &Cert) -> Result<bool, ImportError> {
        lookups.begin_cert();
        self.lock.take();
        let found = match lookups.by_fingerprint(&cert.fpr) {
            Ok(f) => f,
            Err(e) => return Err(self.released(lookups, e.into())),
        };
        if found.is_some() {
            self.release(lookups);
            self.clear_ephemeral(lookups, cert)?;
            return Ok(true);
        }
        // `keydb_locate_writable`, then `keybox_insert_cert`.
        let blob = crate::x509::incoming::stored_blob(&cert.der, self.now)
            .map_err(|e| ImportError::Key { key_id: crate::kbx::dump::hex_upper(&cert.fpr), why: e.to_string() });
        let written = blob.and_then(|blob| {
            lookups.reset_now()?;
            let mut w = self.lock.writer();
            w.check_writable()?;
            lookups.close();
            w.insert_cert(&blob, &self.header)?;
            Ok(())
        });
        self.release(lookups);
        written.map(|()| false)
    }

    /// Searched for on a new handle (every certificate, ephemeral ones
    /// too); if there, the lock taken, the handle rewound, the search made
    /// again, the handle's file closed and the blob marked deleted in
    /// place; the lock released.
    fn delete(&mut self, lookups: &mut Gnupg<PathOpener>, fpr: &[u8; 20]) -> Result<bool, ImportError> {
        lookups.begin_cert();
        let found = match lookups.by_fingerprint(fpr) {
            Ok(f) => f,
            Err(e) => return Err(self.released(lookups, e.into())),
        };
        if found.is_none() {
            self.release(lookups);
            return Ok(false);
        }
        self.lock.take();
        let again = lookups.reset_now().and_then(|()| lookups.by_fingerprint(fpr));
        let written = match again {
            Ok(Some(c)) => {
                lookups.close();
                self.lock.writer().delete(c.offset).map_err(ImportError::from)
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e.into()),
        };
        self.release(lookups);
        written.map(|()| true)
    }
}

impl KeyboxCerts {
    /// gpgsm's `keydb_set_cert_flags` clearing the ephemeral flag of a
    /// certificate that is there: searched for again under the lock on a
    /// new handle, the flag written in place if it was set.
    fn clear_ephemeral(&mut self, lookups: &mut Gnupg<PathOpener>, cert: &Cert) -> Result<(), ImportError> {
        lookups.begin_cert();
        self.lock.take();
        let found = match lookups.by_fingerprint(&cert.fpr) {
            Ok(f) => f,
            Err(e) => return Err(self.released(lookups, e.into())),
        };
        let written = match found {
            Some(stored) if stored.ephemeral => {
                lookups.close();
                let flags = FLAGS_STORED.to_be_bytes();
                self.lock.writer().write_in_place(stored.offset + BLOB_FLAGS_AT, &flags).map_err(ImportError::from)
            }
            _ => Ok(()),
        };
        self.release(lookups);
        written
    }

    /// The handle released, and the lock with it.
    fn release(&mut self, lookups: &mut Gnupg<PathOpener>) {
        lookups.end_cert();
        self.lock.release();
    }

    /// `e`, once the handle and the lock are released.
    fn released(&mut self, lookups: &mut Gnupg<PathOpener>, e: ImportError) -> ImportError {
        self.release(lookups);
        e
    }
}
