//! `list --with-validation`: every certificate with gpgsm's verdict.
//!
//! The listing pass reads the keybox once, like `gpgsm -k`; each listed
//! certificate (ephemeral ones are not listed, as in gpgsm) is validated
//! on the spot with the chosen lookup strategy. With `index`, the listing
//! pass also builds the index and validation happens after it, from
//! memory, so the whole command reads the file exactly once.

use super::list::{describe, ListOutcome, Listed};
use super::scan::{Item, ScanError, Scanner};
use crate::io::{OpenError, Opener};
use crate::kbx::{parse_blob, Blob, BlobType};
use crate::validate::{Cert, GnupgSearch, IndexSearch, IssuerSearch, Lookup, ScanSearch, TrustList, Validator};

/// List and validate every certificate.
///
/// # Errors
/// [`OpenError`] if the listing handle cannot be opened; later problems
/// are in the outcome.
pub fn run<O: Opener + Clone>(
    opener: &O,
    lookup: Lookup,
    trust: &TrustList,
    at: i64,
    mut emit: impl FnMut(Listed),
) -> Result<ListOutcome, OpenError> {
    let mut validator = Validator::new(trust, at);
    let mut out = ListOutcome::default();
    let mut handle = opener.open()?;
    match lookup {
        Lookup::Gnupg => {
            validating_pass(&mut handle, &mut out, &mut validator, &mut GnupgSearch::new(opener.clone()), &mut emit)
        }
        Lookup::Scan => {
            validating_pass(&mut handle, &mut out, &mut validator, &mut ScanSearch::new(opener.clone()), &mut emit)
        }
        Lookup::Index => {
            let mut index = IndexSearch::default();
            let mut pending = Vec::new();
            listing_pass(
                &mut handle,
                &mut out,
                |cert, listed| {
                    index.add(cert.clone());
                    pending.push((cert.clone(), listed));
                    Ok(None)
                },
                &mut |_| {},
            );
            drop(handle);
            let certs: Vec<Cert> = pending.iter().map(|(c, _)| c.clone()).collect();
            if let Err(e) = validator.prefetch(&certs, &mut index) {
                out.fatal = Some(ScanError::content(0, 0, e.to_string()));
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
            return Ok(out);
        }
    }
    Ok(out)
}

/// The listing pass, validating each certificate on the spot with `search`.
fn validating_pass<F: std::io::Read + std::io::Seek>(
    reader: &mut crate::io::BufferedReader<F>,
    out: &mut ListOutcome,
    validator: &mut Validator<'_>,
    search: &mut impl IssuerSearch,
    emit: &mut impl FnMut(Listed),
) {
    listing_pass(reader, out, |cert, listed| validate_one(validator, search, cert, listed), emit);
}

fn validate_one(
    validator: &mut Validator<'_>,
    search: &mut impl IssuerSearch,
    cert: &Cert,
    mut listed: Listed,
) -> Result<Option<Listed>, ScanError> {
    let v = validator
        .validate(cert, search)
        .map_err(|e| ScanError::content(listed.blob_index, listed.offset, e.to_string()))?;
    crate::telemetry::certificate_validated(v.is_good());
    listed.validation = Some(v);
    Ok(Some(listed))
}

/// The listing pass: every non-ephemeral certificate goes to `each`, whose
/// result (if any) is emitted.
fn listing_pass<F: std::io::Read + std::io::Seek>(
    reader: &mut crate::io::BufferedReader<F>,
    out: &mut ListOutcome,
    mut each: impl FnMut(&Cert, Listed) -> Result<Option<Listed>, ScanError>,
    emit: &mut impl FnMut(Listed),
) {
    let mut scan = Scanner::new(reader);
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
        if blob.is_ephemeral() {
            continue;
        }
        let (Some(cert), Ok(listed)) = (Cert::from_blob(&blob, offset), describe(index, offset, &blob)) else {
            out.problems.push(ScanError::content(index, offset, "certificate does not decode"));
            continue;
        };
        match each(&cert, listed) {
            Ok(Some(l)) => {
                out.listed += 1;
                emit(l);
            }
            Ok(None) => out.listed += 1,
            Err(e) => {
                out.fatal = Some(e);
                return;
            }
        }
    }
}
