//! `list --with-validation`: every certificate with gpgsm's verdict.
//!
//! The listing pass reads the keybox once, like `gpgsm -k`; each listed
//! certificate (ephemeral ones are not listed, as in gpgsm) is validated
//! on the spot with the chosen lookup strategy. With `index`, the listing
//! pass also builds the index and validation happens after it, from
//! memory, so the whole command reads the file exactly once; signature
//! checks start on worker threads while the pass is still reading.

use std::collections::HashMap;

use x509_parser::prelude::{FromDer, X509Certificate};

use super::list::{KeyDetails, ListOutcome, Listed};
use super::places::Ran;
use super::scan::{ContentError, Item, ScanError, ScanErrorKind, Scanner};
use super::startup::{self, Program};
use crate::gnupg_version::GnupgVersion;
use crate::io::sqlite::Database;
use crate::io::{OpenError, Opener};
use crate::kbx::{parse_blob, Blob, BlobType};
use crate::keyboxd::server::{Client, Server};
use crate::keyboxd::{Filter, KeyboxImage, KeyboxdError, ListingOpener, RowMap};
use crate::lookup::{LookupError, SearchLock, Strategy};
use crate::store::{Store, StoreError};
use crate::x509::lookup as issuers;
use crate::x509::{describe_decoded, Cert, CertInfo, CheckPool, IssuerLookup, KeyboxdIssuers, TrustList, Validator};
use std::rc::Rc;

/// List and validate every certificate of `store` with the `lookup`
/// strategy, trusting the roots of `trust`, at time `at` (Unix seconds);
/// with `searches_lock` and the `gnupg` strategy on a keybox, taking the
/// keybox's lock around the searches as gpgsm 2.2 does (2.4 does not);
/// gpgsm's start as `version`'s.
///
/// # Errors
/// The store cannot be read before the listing starts; later problems
/// are in the outcome.
pub fn run(
    store: &Store,
    lookup: Strategy,
    trust: &TrustList,
    at: i64,
    version: GnupgVersion,
    searches_lock: bool,
    emit: impl FnMut(Listed),
) -> Result<Ran<ListOutcome>, StoreError> {
    match store {
        Store::Keybox { opener, .. } if lookup == Strategy::Gnupg => {
            let started = startup::reading(opener, at, Program::Gpgsm, version)?;
            let lock = searches_lock.then(|| started.search_lock());
            // gpgsm 2.4 seeks at each of its resets at once.
            let eager = version == GnupgVersion::V2_4;
            let outcome = on_keybox_with(&started.opener(opener), lookup, trust, at, lock, eager, emit);
            started.finish();
            Ok(Ran::keybox(outcome?))
        }
        Store::Keybox { opener, .. } => Ok(Ran::keybox(on_keybox(opener, lookup, trust, at, emit)?)),
        Store::Keyboxd { db, .. } => {
            let (outcome, map) = on_database(db, lookup, trust, at, emit)?;
            Ok(Ran::rows(outcome, map))
        }
    }
}

/// List and validate every certificate of a keybox (or of blobs in memory).
///
/// # Errors
/// [`OpenError`] if the listing handle cannot be opened; later problems
/// are in the outcome.
pub fn on_keybox<O: Opener + Clone>(
    opener: &O,
    lookup: Strategy,
    trust: &TrustList,
    at: i64,
    emit: impl FnMut(Listed),
) -> Result<ListOutcome, OpenError> {
    on_keybox_with(opener, lookup, trust, at, None, false, emit)
}

/// [`on_keybox`], with gpgsm 2.2's lock around the `gnupg` strategy's
/// searches when `lock` is given: taken by the listing's search for each
/// certificate (and the last one, which finds none) and by every lookup,
/// let go as each validation's handle and the listing's are released;
/// with `eager_resets`, each of gpgsm's resets an `lseek` at once (2.4).
fn on_keybox_with<O: Opener + Clone>(
    opener: &O,
    lookup: Strategy,
    trust: &TrustList,
    at: i64,
    lock: Option<Rc<dyn SearchLock>>,
    eager_resets: bool,
    mut emit: impl FnMut(Listed),
) -> Result<ListOutcome, OpenError> {
    let mut validator = Validator::new(trust, at);
    let mut out = ListOutcome::default();
    let mut handle = opener.open()?;
    match lookup {
        Strategy::Gnupg => {
            let mut issuers = match &lock {
                Some(l) => issuers::Gnupg::locking(opener.clone(), l.clone()),
                None => issuers::Gnupg::new(opener.clone()),
            }
            .eager_resets(eager_resets);
            let listing = lock.as_deref();
            if let Some(l) = listing {
                l.take();
            }
            validating_pass(&mut handle, &mut out, &mut validator, &mut issuers, listing, &mut emit);
            if let Some(l) = listing {
                l.release();
            }
        }
        Strategy::Scan => {
            let issuers = &mut issuers::Scan::new(opener.clone());
            validating_pass(&mut handle, &mut out, &mut validator, issuers, None, &mut emit)
        }
        Strategy::Index => {
            let mut index = issuers::Index::default();
            let pool = CheckPool::beside_caller();
            let pending = index_pass(&mut handle, &mut out, &mut validator, &mut index, &pool);
            drop(handle);
            let certs: Vec<Cert> = pending.iter().map(|(c, _)| c.clone()).collect();
            if let Err(e) = validator.prefetch(&certs, &mut index, pool) {
                out.fatal = Some(lookup_error(0, 0, e));
                return Ok(out);
            }
            for (cert, listed) in pending {
                match validate_one(&mut validator, &mut index, &cert, listed) {
                    Ok(Some(l)) => emit(l),
                    Ok(None) => {}
                    Err(e) => {
                        out.fatal = Some(e);
                        break;
                    }
                }
            }
        }
    }
    Ok(out)
}

/// List and validate every certificate of a keyboxd database. `gnupg`
/// replays gpgsm through keyboxd: the listing a `SEARCH` and a `NEXT` per
/// certificate, every issuer lookup keyboxd's searches
/// ([`crate::keyboxd::server`]), on one connection as keyboxd keeps it.
/// `index` and `scan` read the certificates once (one `SELECT`) and search
/// them in memory (no further file events). Returns the outcome and the
/// rows behind the blobs (to name them in messages).
///
/// # Errors
/// SQLite's error before the listing starts; later ones are in the outcome.
fn on_database(
    db: &Database,
    lookup: Strategy,
    trust: &TrustList,
    at: i64,
    mut emit: impl FnMut(Listed),
) -> Result<(ListOutcome, RowMap), KeyboxdError> {
    if lookup != Strategy::Gnupg {
        let image = KeyboxImage::read(db, Filter::X509)?;
        let outcome = on_keybox(&image.opener(), lookup, trust, at, emit)?;
        return Ok((outcome, image.map));
    }
    let server = Server::start(db, Client::Gpgsm)?;
    let listings = ListingOpener::new(&server);
    let mut validator = Validator::new(trust, at);
    let mut out = ListOutcome::default();
    let mut handle = listings.open()?;
    let mut issuers = KeyboxdIssuers::new(&server);
    validating_pass(&mut handle, &mut out, &mut validator, &mut issuers, None, &mut emit);
    drop(handle);
    Ok((out, listings.map()))
}

/// The `index` strategy's single pass. Only X.509 blobs are read; others
/// are passed over (in the buffer, or with a seek past a long one). Every
/// certificate goes into the index (ephemeral ones too: lookups fall back
/// to them, as GnuPG's do); listed ones are kept for validation, and the
/// signature check of each whose issuer is indexed already is queued on
/// `pool` at once. One read before its issuer waits until a certificate
/// with its issuer's name arrives; what is still unchecked at the end is
/// left to [`Validator::prefetch`].
fn index_pass<F: crate::io::RawRead>(
    reader: &mut crate::io::BufferedReader<F>,
    out: &mut ListOutcome,
    validator: &mut Validator<'_>,
    index: &mut issuers::Index,
    pool: &CheckPool,
) -> Vec<(Cert, Listed)> {
    let mut pending = Vec::new();
    let mut waiting: HashMap<Vec<u8>, Vec<Cert>> = HashMap::new();
    listing_pass(
        Scanner::only(reader, BlobType::X509),
        out,
        |blob_index, cert, decoded| {
            index.add(cert.clone());
            let mut ready = waiting.remove(&cert.subject).unwrap_or_default();
            if let Some((info, listed)) = decoded {
                validator.learn(cert, Ok(info));
                pending.push((cert.clone(), listed));
                ready.push(cert.clone());
            }
            for c in ready {
                let found =
                    validator.queue_check(&c, index, pool).map_err(|e| lookup_error(blob_index, cert.offset, e))?;
                if !found {
                    waiting.entry(c.issuer.clone()).or_default().push(c);
                }
            }
            Ok(None)
        },
        &mut |_| {},
    );
    pending
}

/// The listing pass, validating each certificate on the spot with `search`.
fn validating_pass<F: crate::io::RawRead>(
    reader: &mut crate::io::BufferedReader<F>,
    out: &mut ListOutcome,
    validator: &mut Validator<'_>,
    search: &mut impl IssuerLookup,
    listing_lock: Option<&dyn SearchLock>,
    emit: &mut impl FnMut(Listed),
) {
    listing_pass(
        Scanner::new(reader),
        out,
        |_, cert, decoded| {
            let Some((info, listed)) = decoded else { return Ok(None) };
            validator.learn(cert, Ok(info));
            let validated = validate_one(validator, search, cert, listed);
            // The listing's search for the next certificate.
            if let Some(l) = listing_lock {
                l.take();
            }
            validated
        },
        emit,
    );
}

fn validate_one(
    validator: &mut Validator<'_>,
    search: &mut impl IssuerLookup,
    cert: &Cert,
    mut listed: Listed,
) -> Result<Option<Listed>, ScanError> {
    let v = validator.validate(cert, search).map_err(|e| lookup_error(listed.blob_index, listed.offset, e))?;
    crate::telemetry::certificate_validated(v.is_good());
    listed.validation = Some(v);
    Ok(Some(listed))
}

/// The listing pass: every certificate goes to `each` with its blob index;
/// a listed one (not ephemeral, and decoding) comes with its decoded parts
/// and listing, and the listing `each` returns (if any) is emitted. Ones
/// that do not decode are also reported as problems.
fn listing_pass<F: crate::io::RawRead>(
    mut scan: Scanner<'_, F>,
    out: &mut ListOutcome,
    mut each: impl FnMut(u64, &Cert, Option<(CertInfo, Listed)>) -> Result<Option<Listed>, ScanError>,
    emit: &mut impl FnMut(Listed),
) {
    loop {
        let (index, offset) = match scan.next_item() {
            Ok(None) => return,
            Ok(Some(Item::TooLarge { .. })) => continue,
            Ok(Some(Item::Blob { index, offset, .. })) => (index, offset),
            Err(e) => {
                out.fatal = Some(e);
                return;
            }
        };
        if scan.image().get(4).copied().map(BlobType::from_byte) != Some(BlobType::X509) {
            continue;
        }
        let blob = match parse_blob(scan.image()) {
            Ok(Blob::Key(b)) => b,
            Ok(_) => continue,
            Err(e) => {
                out.problems.push(ScanError::parse(index, offset, e));
                continue;
            }
        };
        let Some(cert) = Cert::from_blob(&blob, offset) else {
            out.problems.push(ScanError::content(index, offset, ContentError::Certificate(None)));
            continue;
        };
        let decoded = if blob.is_ephemeral() {
            None
        } else if let Ok((_, x509)) = X509Certificate::from_der(blob.data()) {
            let listed = Listed {
                blob_index: index,
                offset,
                ephemeral: false,
                key: KeyDetails::X509(describe_decoded(&blob, &x509)),
                validation: None,
            };
            Some((CertInfo::of(&x509), listed))
        } else {
            out.problems.push(ScanError::content(index, offset, ContentError::Certificate(None)));
            None
        };
        let is_listed = decoded.is_some();
        match each(index, &cert, decoded) {
            Ok(Some(l)) => {
                out.listed += 1;
                emit(l);
            }
            Ok(None) => out.listed += u64::from(is_listed),
            Err(e) => {
                out.fatal = Some(e);
                return;
            }
        }
    }
}

/// A lookup's error, located: a blob the lookup could not read is
/// reported as the listing would report it (its own index and offset);
/// any other failure at the certificate being validated.
fn lookup_error(index: u64, offset: u64, e: LookupError) -> ScanError {
    match e {
        LookupError::Blob { index: Some(index), source, .. } => {
            ScanError { index, offset: source.offset(), kind: ScanErrorKind::Read(source) }
        }
        other => ScanError::content(index, offset, other),
    }
}
