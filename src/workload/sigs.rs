//! `list --with-sigs` / `list --check-sigs`: every OpenPGP key with its
//! signatures, as `gpg --list-sigs` / `gpg --check-sigs` show them.
//!
//! With `--lookup gnupg` the passes are gpg's (see `openpgp::lookup`):
//! its startup probe and compress check, then a listing handle reading
//! every blob while signers are looked up on other handles. With `scan`,
//! the listing pass and one rescan per lookup. With `index`, the listing
//! pass is the only one: it indexes every keyblock, and the signatures are
//! walked from memory afterwards.

use std::sync::Arc;

use serde::Serialize;

use super::cores;
use super::places::Ran;
use super::scan::{Item, ScanError, Scanner};
use super::startup::{self, Program};
use crate::io::sqlite::Database;
use crate::io::{OpenError, Opener};
use crate::kbx::dump::hex_upper;
use crate::kbx::{parse_blob, Blob, BlobType, KeyBlob};
use crate::keyboxd::server::{Client, Server};
use crate::keyboxd::{Filter, KeyboxImage, KeyboxdError, ListingOpener, RowMap};
use crate::lookup::Strategy;
use crate::openpgp::lookup as signers;
use crate::openpgp::{
    self, check_keyblock, Judge, KeyLife, Mode, OpenPgpKey, SigCounts, SigGroup, Signer, SignerLookup,
};
use crate::store::{Store, StoreError};
use crate::timefmt::rfc3339;

/// One key with its signatures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeySigs {
    /// Physical blob index.
    pub blob_index: u64,
    /// File offset of the blob.
    pub offset: u64,
    /// The key as `list` shows it; for a key the `pgp` crate cannot
    /// decode, what the blob's key table says (algorithm `unknown`).
    #[serde(flatten)]
    pub key: OpenPgpKey,
    /// Why the key did not decode, if it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Its components and their signatures, in keyblock order.
    pub signatures: Vec<SigGroup>,
}

/// How the listing ended.
#[derive(Debug, Default)]
pub struct SigsOutcome {
    /// Keys listed.
    pub listed: u64,
    /// Signature statuses.
    pub counts: SigCounts,
    /// The error that ended the listing early.
    pub fatal: Option<ScanError>,
}

/// List every OpenPGP key of `store` with its signatures (`mode`: listed
/// or checked), signers looked up with `lookup`, judged by `judge` (a
/// GnuPG version's rules, at a time).
///
/// # Errors
/// The store cannot be read before the listing starts; later problems
/// are in the outcome.
pub fn run(
    store: &Store,
    mode: Mode,
    lookup: Strategy,
    judge: Judge,
    emit: impl FnMut(KeySigs),
) -> Result<Ran<SigsOutcome>, StoreError> {
    match store {
        Store::Keybox { opener, .. } if lookup == Strategy::Gnupg => {
            let started = startup::reading(opener, judge.now, Program::Gpg, judge.version)?;
            let outcome = on_keybox(&started.opener(opener), mode, lookup, judge, emit);
            started.finish();
            Ok(Ran::keybox(outcome?))
        }
        Store::Keybox { opener, .. } => Ok(Ran::keybox(on_keybox(opener, mode, lookup, judge, emit)?)),
        Store::Keyboxd { db, .. } => {
            let (outcome, map) = on_database(db, mode, lookup, judge, emit)?;
            Ok(Ran::rows(outcome, map))
        }
    }
}

/// List every OpenPGP key of a keyboxd database with its signatures.
/// `gnupg` replays gpg through keyboxd: the listing a `SEARCH` and a
/// `NEXT` per key, every signer lookup behind gpg's caches keyboxd's
/// searches ([`crate::keyboxd::server`]), on one connection as keyboxd
/// keeps it (gpg 2.4 with keyboxd makes no startup passes). `index` and
/// `scan` read the keys once (one `SELECT`) and search them in memory (no
/// further file events). Returns the outcome and the rows behind the
/// blobs (to name them in messages).
///
/// # Errors
/// SQLite's error before the listing starts; later ones are in the outcome.
fn on_database(
    db: &Database,
    mode: Mode,
    lookup: Strategy,
    judge: Judge,
    mut emit: impl FnMut(KeySigs),
) -> Result<(SigsOutcome, RowMap), KeyboxdError> {
    if lookup != Strategy::Gnupg {
        let image = KeyboxImage::read(db, Filter::OpenPgp)?;
        let outcome = on_keybox(&image.opener(), mode, lookup, judge, emit)?;
        return Ok((outcome, image.map));
    }
    let server = Server::start(db, Client::Gpg)?;
    let listings = ListingOpener::new(&server);
    let mut out = SigsOutcome::default();
    let _cmd = tracing::info_span!(target: "kbx::lookup", "sigs", lookup = %lookup.name()).entered();
    let mut g = signers::Gnupg::with(signers::KeyboxdSearches::new(&server));
    listing_pass(&listings, &mut out, |k, signer, out| walk(k, signer, mode, judge, &mut g, out, &mut emit))?;
    Ok((out, listings.map()))
}

/// List every OpenPGP key (ephemeral ones are not listed, as in gpg)
/// with its signatures, judged by `judge`, whose time (Unix seconds, as
/// for `workload::validate::run`) gpg's compress check (`--lookup gnupg`)
/// compares the header's maintenance time with, and time conflicts and
/// expiry are judged against.
///
/// # Errors
/// [`OpenError`] if the first handle cannot be opened; later problems are
/// in the outcome.
pub fn on_keybox<O: Opener + Clone>(
    opener: &O,
    mode: Mode,
    lookup: Strategy,
    judge: Judge,
    mut emit: impl FnMut(KeySigs),
) -> Result<SigsOutcome, OpenError> {
    let mut out = SigsOutcome::default();
    let _cmd = tracing::info_span!(target: "kbx::lookup", "sigs", lookup = %lookup.name()).entered();
    match lookup {
        Strategy::Gnupg => {
            let mut g = signers::Gnupg::new(opener.clone());
            listing_pass(opener, &mut out, |k, signer, out| walk(k, signer, mode, judge, &mut g, out, &mut emit))?;
        }
        Strategy::Scan => {
            let mut s = signers::Scan::new(opener.clone());
            listing_pass(opener, &mut out, |k, signer, out| walk(k, signer, mode, judge, &mut s, out, &mut emit))?;
        }
        Strategy::Index => {
            // The pass only copies the blobs; the other cores decode them
            // (the pgp crate's work) as they come. Then every core checks
            // keys against the finished index while this thread prints
            // them, in order.
            // The blob's bytes are handed over, not copied: the keyblock
            // is decoded in them and keeps them.
            let decode = |(index, offset, image): (u64, u64, Vec<u8>)| {
                let mut signer = Signer::from_image(image, offset).expect("the pass hands on only key blobs");
                let Ok(Blob::Key(blob)) = parse_blob(signer.keyblock.held_bytes()) else {
                    unreachable!("the same bytes parsed in the pass");
                };
                let key = listing(index, offset, &blob, &signer);
                signer.keyblock.let_go_of_photos();
                (key, Arc::new(signer))
            };
            let (pending, opened) = cores::as_made(
                |send| {
                    blob_pass(opener, &mut out, |index, offset, scan, _| {
                        send((index, offset, scan.take_image()));
                        Ok(())
                    })
                },
                decode,
            );
            opened?;
            let mut index = signers::Index::default();
            for (_, signer) in &pending {
                index.insert(signer);
            }
            let blob_indexes: Vec<u64> = pending.iter().map(|(k, _)| k.blob_index).collect();
            let (mut keys, signers): (Vec<_>, Vec<_>) = pending.into_iter().map(|(k, s)| (Some(k), s)).unzip();
            let fatal = out.fatal.take();
            // A verdict depends only on the keyblock and its signer, so the
            // threads change no status.
            let check = |i: usize| check_key(blob_indexes[i], &signers[i], mode, judge, &mut { &index });
            cores::in_order(signers.len(), check, |i, groups| {
                let Some(mut k) = keys[i].take() else { return false };
                match groups {
                    Ok(groups) => {
                        k.signatures = groups;
                        finish(k, &mut out, &mut emit);
                        true
                    }
                    Err(e) => {
                        out.fatal = Some(ScanError::content(k.blob_index, k.offset, e));
                        false
                    }
                }
            });
            out.fatal = out.fatal.take().or(fatal);
            // Every keyblock, freed while the listing ends (on seed-gm,
            // 15 ms of one core, after everything else).
            cores::free_aside((signers, index));
        }
    }
    Ok(out)
}

/// The listing handle's pass: every OpenPGP blob not flagged ephemeral is
/// decoded and handed to `f` (with its blob index and offset).
fn listing_pass<O: Opener>(
    opener: &O,
    out: &mut SigsOutcome,
    mut f: impl FnMut(KeySigs, Arc<Signer>, &mut SigsOutcome) -> Result<(), ScanError>,
) -> Result<(), OpenError> {
    blob_pass(opener, out, |index, offset, scan, out| {
        let Ok(Blob::Key(blob)) = parse_blob(scan.image()) else { return Ok(()) };
        let signer = Signer::from_blob(&blob, offset);
        let key = listing(index, offset, &blob, &signer);
        f(key, Arc::new(signer), out)
    })
}

/// One pass over the file: every OpenPGP blob that parses and is not
/// flagged ephemeral is handed to `f` (blob index, offset, the scanner
/// holding it, and the outcome). The first error (of the file, of a blob,
/// or of `f`) ends it in `out.fatal`.
fn blob_pass<O: Opener>(
    opener: &O,
    out: &mut SigsOutcome,
    mut f: impl FnMut(u64, u64, &mut Scanner<'_, O::File>, &mut SigsOutcome) -> Result<(), ScanError>,
) -> Result<(), OpenError> {
    let mut handle = opener.open()?;
    let mut scan = Scanner::new(&mut handle);
    loop {
        match scan.next_item() {
            Ok(None) => break,
            Ok(Some(Item::TooLarge { .. })) => {}
            Ok(Some(Item::Blob { index, offset, .. })) => {
                let Some(ty) = scan.image().get(4).map(|b| BlobType::from_byte(*b)) else { continue };
                if ty != BlobType::OpenPgp {
                    continue;
                }
                match parse_blob(scan.image()) {
                    Ok(Blob::Key(b)) if !b.is_ephemeral() => {}
                    Ok(_) => continue,
                    Err(e) => {
                        out.fatal = Some(ScanError::parse(index, offset, e));
                        break;
                    }
                }
                if let Err(e) = f(index, offset, &mut scan, out) {
                    out.fatal = Some(e);
                    break;
                }
            }
            Err(e) => {
                out.fatal = Some(e);
                break;
            }
        }
    }
    Ok(())
}

/// The listing entry of a blob, decoded as `signer`.
fn listing(index: u64, offset: u64, blob: &KeyBlob<'_>, signer: &Signer) -> KeySigs {
    let (key, problem) = match openpgp::describe_keyblock(blob.data(), &signer.keyblock) {
        Ok(k) => (k, None),
        Err(why) => {
            let why = why.to_string();
            let first = blob.keys().next();
            let fpr = first.map(|k| hex_upper(k.fingerprint)).unwrap_or_default();
            let kid = first.map(|k| hex_upper(crate::kbx::search::derived_key_id(&k))).unwrap_or_default();
            let key = OpenPgpKey {
                fingerprint: fpr,
                key_id: kid,
                version: if first.is_some_and(|k| k.fingerprint.len() == 32) { 5 } else { 4 },
                created: rfc3339(0),
                algorithm: "unknown".into(),
                usage: String::new(),
                user_ids: blob.uids().map(|u| String::from_utf8_lossy(u.name).into_owned()).collect(),
                user_id_bytes: blob.uids().map(|u| u.name.to_vec()).collect(),
                user_attributes: 0,
                user_attribute_names: Vec::new(),
                subkeys: Vec::new(),
                undecoded: Some(why.clone()),
                life: KeyLife::default(),
                user_id_lives: Vec::new(),
            };
            (key, Some(why))
        }
    };
    KeySigs { blob_index: index, offset, key, problem, signatures: Vec::new() }
}

/// Count a key's statuses and hand it on.
fn finish(k: KeySigs, out: &mut SigsOutcome, emit: &mut impl FnMut(KeySigs)) {
    for s in k.signatures.iter().flat_map(|g| &g.sigs) {
        out.counts.add(s.status);
    }
    out.listed += 1;
    emit(k);
}

/// One key's signatures, in a `key` span (target `kbx::lookup`).
fn check_key(
    blob_index: u64,
    signer: &Signer,
    mode: Mode,
    judge: Judge,
    lookup: &mut impl SignerLookup,
) -> Result<Vec<SigGroup>, crate::lookup::LookupError> {
    let _key = tracing::info_span!(target: "kbx::lookup", "key", blob = blob_index).entered();
    check_keyblock(signer, mode, judge, lookup)
}

fn walk(
    mut k: KeySigs,
    signer: Arc<Signer>,
    mode: Mode,
    judge: Judge,
    lookup: &mut impl SignerLookup,
    out: &mut SigsOutcome,
    emit: &mut impl FnMut(KeySigs),
) -> Result<(), ScanError> {
    k.signatures = check_key(k.blob_index, &signer, mode, judge, lookup)
        .map_err(|e| ScanError::content(k.blob_index, k.offset, e))?;
    finish(k, out, emit);
    Ok(())
}
