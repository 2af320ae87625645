//! Keys and certificates encoded as GnuPG's keybox blobs.

use sha1::{Digest, Sha1};

use super::error::GenError;
use super::openpgp::BuiltKey;
use super::x509::IssuedCert;
use crate::kbx::encode::{encode_key_blob, KeyBlobSpec, UidSource};
use crate::kbx::BlobType;

/// The X.509 blob of a certificate, imported at `when`.
pub fn cert_blob(c: &IssuedCert, when: u32) -> Vec<u8> {
    let mut uids =
        vec![UidSource::Stored(c.issuer_dn.clone().into_bytes()), UidSource::Stored(c.subject_dn.clone().into_bytes())];
    uids.extend(c.mails.iter().map(|m| UidSource::Stored(format!("<{m}>").into_bytes())));
    encode_key_blob(&KeyBlobSpec {
        blob_type: BlobType::X509,
        ephemeral: false,
        fingerprints: vec![Sha1::digest(&c.der).to_vec()],
        serial: c.serial.clone(),
        uids,
        sig_count: 1,
        validity: 0,
        created_at: when,
        data: c.der.clone(),
    })
}

/// The OpenPGP blob of a key, imported at `when`.
pub(super) fn key_blob(k: &BuiltKey, when: u32) -> Result<Vec<u8>, GenError> {
    let (block, fingerprints) = k.keyblock()?;
    Ok(encode_key_blob(&KeyBlobSpec {
        blob_type: BlobType::OpenPgp,
        ephemeral: false,
        fingerprints,
        serial: Vec::new(),
        uids: block.user_ids.iter().map(|&(offset, length)| UidSource::InData { offset, length }).collect(),
        sig_count: block.signatures,
        validity: 0,
        created_at: when,
        data: block.bytes,
    }))
}

/// A certificate's SHA-1 fingerprint in hex.
pub(super) fn fpr_hex(der: &[u8]) -> String {
    crate::kbx::dump::hex_upper(&Sha1::digest(der))
}
