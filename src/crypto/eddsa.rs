//! EdDSA on Ed448 over the digest of any hash, as gpg takes it (GnuPG
//! 2.4 makes and verifies Ed448 signatures over SHA-256 too): `cx448`,
//! the build of RustCrypto's `ed448-goldilocks` the `pgp` crate already
//! uses. Ed25519 goes through the `pgp` crate.

/// Whether `(r, s)` (each 57 bytes, big-endian as OpenPGP stores them,
/// shorter values padded) verifies over `digest` with the 57-byte point.
/// `None` when the point or the values do not have Ed448's sizes.
pub(crate) fn verify_ed448(point: &[u8], r: &[u8], s: &[u8], digest: &[u8]) -> Option<bool> {
    let point: [u8; 57] = super::fit_left(point, 57)?.try_into().ok()?;
    let sig: [u8; 114] = [super::fit_left(r, 57)?, super::fit_left(s, 57)?].concat().try_into().ok()?;
    let (Ok(key), Ok(sig)) = (cx448::VerifyingKey::from_bytes(&point), cx448::Signature::from_bytes(&sig)) else {
        return Some(false);
    };
    Some(key.verify_raw(&sig, digest).is_ok())
}
