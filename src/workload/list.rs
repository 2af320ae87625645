//! `list`: every key and certificate, like `gpg -k` and `gpgsm -k`.

use crate::io::{Opener, RawRead};

use serde::Serialize;

use super::places::Ran;
use super::scan::{ContentError, Item, ScanError, Scanner};
use super::startup::{self, Program};
use crate::gnupg_version::GnupgVersion;
use crate::io::BufferedReader;
use crate::kbx::{parse_blob, Blob, BlobType, KeyBlob};
use crate::keyboxd::{Filter, KeyboxImage};
use crate::openpgp::{self, OpenPgpKey};
use crate::store::{Store, StoreError};
use crate::x509::{self, X509Cert};

/// Which blobs to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TypeFilter {
    /// OpenPGP keys only.
    OpenPgp,
    /// X.509 certificates only.
    X509,
    /// Both.
    #[default]
    All,
}

impl TypeFilter {
    /// Whether blobs of `t` pass.
    pub fn admits(self, t: BlobType) -> bool {
        matches!(
            (self, t),
            (Self::All, BlobType::OpenPgp | BlobType::X509)
                | (Self::OpenPgp, BlobType::OpenPgp)
                | (Self::X509, BlobType::X509)
        )
    }
}

/// The decoded contents of a key blob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum KeyDetails {
    /// An OpenPGP key.
    Openpgp(OpenPgpKey),
    /// An X.509 certificate.
    X509(X509Cert),
}

/// One listed key, with where it is in the file.
///
/// Serialized (`--json`) as one object with the fields of this struct and
/// of the [`KeyDetails`] variant, plus `"type": "openpgp"|"x509"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// Physical blob index (0 = first blob of the file).
    pub blob_index: u64,
    /// File offset of the blob.
    pub offset: u64,
    /// Whether the blob carries the ephemeral flag.
    pub ephemeral: bool,
    /// The key or certificate.
    #[serde(flatten)]
    pub key: KeyDetails,
    /// gpgsm's verdict (`list --with-validation` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation: Option<crate::x509::Validation>,
}

/// How a listing pass ended.
#[derive(Debug, Default)]
pub struct ListOutcome {
    /// Keys handed to the caller.
    pub listed: u64,
    /// Blobs whose contents did not decode; the pass went on after each.
    pub problems: Vec<ScanError>,
    /// The framing error that ended the pass early.
    pub fatal: Option<ScanError>,
}

impl ListOutcome {
    /// Whether anything went wrong.
    #[cfg(test)]
    pub(crate) fn is_clean(&self) -> bool {
        self.problems.is_empty() && self.fatal.is_none()
    }
}

/// Decode a key blob's keyblock or certificate.
///
/// # Errors
/// A [`ScanError`] located at the blob.
pub fn describe(index: u64, offset: u64, blob: &KeyBlob<'_>) -> Result<Listed, ScanError> {
    let key = match blob.blob_type {
        BlobType::X509 => x509::describe(blob).map(KeyDetails::X509).map_err(|e| ContentError::Certificate(Some(e))),
        _ => openpgp::describe(blob.data()).map(KeyDetails::Openpgp).map_err(ContentError::Keyblock),
    }
    .map_err(|e| ScanError::content(index, offset + u64::from(blob.data_offset), e))?;
    Ok(Listed { blob_index: index, offset, ephemeral: blob.is_ephemeral(), key, validation: None })
}

/// Parse the blob image if it is a key blob admitted by `filter`.
pub(super) fn key_blob(image: &[u8], filter: TypeFilter) -> Option<Result<KeyBlob<'_>, crate::kbx::ParseError>> {
    let ty = BlobType::from_byte(*image.get(4)?);
    if !filter.admits(ty) {
        return None;
    }
    Some(parse_blob(image).map(|b| match b {
        Blob::Key(k) => k,
        // admits() only passes types 2 and 3, which parse to Blob::Key.
        _ => unreachable!("type {ty:?} parsed to a non-key blob"),
    }))
}

/// List every key blob of `store` admitted by `filter`, in file order (a
/// database's rows in `ubid` order, as keyboxd lists them).
///
/// # Errors
/// The store cannot be read; later problems are in the outcome.
pub fn run(store: &Store, filter: TypeFilter, emit: impl FnMut(Listed)) -> Result<Ran<ListOutcome>, StoreError> {
    match store {
        Store::Keybox { opener, .. } => Ok(Ran::keybox(pass(&mut *opener.open()?, filter, emit))),
        Store::Keyboxd { db, .. } => {
            let image = KeyboxImage::read(db, Filter::All)?;
            let outcome = pass(&mut *image.opener().open()?, filter, emit);
            Ok(Ran::rows(outcome, image.map))
        }
    }
}

/// `gpg -k` as gpg runs it on a keybox: GnuPG's start (its look at the
/// keybox, its lock and, when the stamp at `now` is three hours old, its
/// maintenance pass; see `startup`), then the OpenPGP keys listed in file
/// order. On keyboxd's database (no start to make) the listing alone.
///
/// # Errors
/// The store cannot be read; later problems are in the outcome.
pub fn as_gpg(
    store: &Store,
    version: GnupgVersion,
    now: i64,
    emit: impl FnMut(Listed),
) -> Result<Ran<ListOutcome>, StoreError> {
    match store {
        Store::Keybox { opener, .. } => {
            let started = startup::reading(opener, now, Program::Gpg, version)?;
            let outcome = pass(&mut *started.opener(opener).open()?, TypeFilter::OpenPgp, emit);
            started.finish();
            Ok(Ran::keybox(outcome))
        }
        Store::Keyboxd { .. } => run(store, TypeFilter::OpenPgp, emit),
    }
}

/// List every key blob of one reader admitted by `filter`, in file order.
pub fn pass<F: RawRead>(
    reader: &mut BufferedReader<F>,
    filter: TypeFilter,
    mut emit: impl FnMut(Listed),
) -> ListOutcome {
    let mut out = ListOutcome::default();
    let mut scan = Scanner::new(reader);
    loop {
        match scan.next_item() {
            Ok(None) => break,
            Ok(Some(Item::TooLarge { .. })) => {}
            Ok(Some(Item::Blob { index, offset, .. })) => match key_blob(scan.image(), filter) {
                None => {}
                Some(Err(e)) => out.problems.push(ScanError::parse(index, offset, e)),
                Some(Ok(blob)) => match describe(index, offset, &blob) {
                    Ok(listed) => {
                        out.listed += 1;
                        emit(listed);
                    }
                    Err(e) => out.problems.push(e),
                },
            },
            Err(e) => {
                out.fatal = Some(e);
                break;
            }
        }
    }
    out
}
