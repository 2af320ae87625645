//! Who made a signature, as gpg reads it from the signature's subpackets.

use pgp::packet::Signature;

use crate::kbx::keypacket::key_id_of;

/// The signer's key id as gpg reads it: the issuer subpacket, else the
/// issuer fingerprint's key id (last 8 bytes of a v4 fingerprint, first 8
/// of a v5/v6 one).
pub(super) fn issuer_key_id(s: &Signature) -> Option<[u8; 8]> {
    if let Some(id) = s.issuer_key_id().first() {
        return Some(key_id_of(id.as_ref()));
    }
    let fpr = s.issuer_fingerprint().into_iter().next()?;
    let b = fpr.as_bytes();
    Some(if b.len() == 20 { key_id_of(&b[12..]) } else { key_id_of(b) })
}

/// The signer's fingerprint from the issuer-fingerprint subpacket.
pub(super) fn issuer_fpr(s: &Signature) -> Option<Vec<u8>> {
    s.issuer_fingerprint().into_iter().next().map(|f| f.as_bytes().to_vec())
}
