//! An OpenPGP key packet's identity as its bytes say: version, creation
//! time, algorithm, fingerprint and key id (RFC 4880 and LibrePGP), and the
//! framing a fingerprint and a signature digest hash the key under.
//!
//! * v2/v3: the fingerprint is MD5 over the modulus and exponent (their
//!   bytes, without the MPI bit counts), the key id the modulus' low 8
//!   bytes;
//! * v4: SHA-1 over `0x99`, a 2-byte length and the body; the key id is
//!   the fingerprint's last 8 bytes;
//! * v5 (`0x9A`) and v6 (`0x9B`): SHA-256 over the tag byte, a 4-byte
//!   length and the body; the key id is the fingerprint's first 8 bytes.
//!
//! Hashing here is identification, not cryptography: nothing is verified.

use md5::{Digest, Md5};
use sha1::Sha1;
use sha2::Sha256;

/// Why a key packet body cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyPacketError {
    /// The body ends before its fixed fields or its first MPIs.
    #[error("key packet too short")]
    TooShort,
    /// A version this crate does not know.
    #[error("key packet version {0} is unknown")]
    UnknownVersion(u8),
}

/// The identity of a key packet (primary key or subkey).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPacketInfo {
    /// Key packet version (2 to 6).
    pub version: u8,
    /// Creation time, Unix seconds.
    pub created: u32,
    /// Public-key algorithm id.
    pub algo: u8,
    /// The fingerprint (16, 20 or 32 bytes by version).
    pub fingerprint: Vec<u8>,
    /// The 64-bit key id.
    pub key_id: [u8; 8],
    /// Where the algorithm-specific material starts in the body (after the
    /// algorithm id; v2/v3: and the validity days; v5/v6: and the
    /// material's 4-byte length).
    pub material_start: usize,
}

/// Read a key packet body.
///
/// # Errors
/// [`KeyPacketError`] when the body is too short or of an unknown version.
pub fn key_packet(body: &[u8]) -> Result<KeyPacketInfo, KeyPacketError> {
    let version = *body.first().ok_or(KeyPacketError::TooShort)?;
    let created = u32::from_be_bytes(body.get(1..5).ok_or(KeyPacketError::TooShort)?.try_into().expect("4 bytes"));
    let (algo, material_start, fingerprint, key_id) = match version {
        2 | 3 => {
            let material = body.get(8..).ok_or(KeyPacketError::TooShort)?;
            let (n, rest) = mpi(material).ok_or(KeyPacketError::TooShort)?;
            let e = mpi(rest).ok_or(KeyPacketError::TooShort)?.0;
            let fpr = Md5::new().chain_update(n).chain_update(e).finalize().to_vec();
            (body[7], 8, fpr, key_id_of(&n[n.len().saturating_sub(8)..]))
        }
        4 => {
            let algo = *body.get(5).ok_or(KeyPacketError::TooShort)?;
            let fpr = Sha1::digest(framed(version, body)).to_vec();
            let id = key_id_of(&fpr[12..]);
            (algo, 6, fpr, id)
        }
        5 | 6 => {
            let algo = *body.get(5).ok_or(KeyPacketError::TooShort)?;
            if body.len() < 10 {
                return Err(KeyPacketError::TooShort);
            }
            let fpr = Sha256::digest(framed(version, body)).to_vec();
            let id = key_id_of(&fpr);
            (algo, 10, fpr, id)
        }
        v => return Err(KeyPacketError::UnknownVersion(v)),
    };
    Ok(KeyPacketInfo { version, created, algo, fingerprint, key_id, material_start })
}

/// Append the key packet `body` of `version` framed as fingerprints and
/// signature digests hash it: `0x99`, 2-byte length, body (v2 to v4);
/// `0x9A` (v5) or `0x9B` (v6), 4-byte length, body.
pub fn frame_key(out: &mut Vec<u8>, version: u8, body: &[u8]) {
    if version >= 5 {
        out.push(if version == 5 { 0x9A } else { 0x9B });
        out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_be_bytes());
    } else {
        out.push(0x99);
        out.extend_from_slice(&u16::try_from(body.len()).unwrap_or(u16::MAX).to_be_bytes());
    }
    out.extend_from_slice(body);
}

fn framed(version: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    frame_key(&mut out, version, body);
    out
}

/// The first 8 bytes of `b` as a key id (zero-padded when shorter).
pub fn key_id_of(b: &[u8]) -> [u8; 8] {
    let mut id = [0u8; 8];
    let n = b.len().min(8);
    id[..n].copy_from_slice(&b[..n]);
    id
}

/// The MPI at the start of `b` (2-byte bit count, then the bytes): its
/// bytes and the rest.
pub fn mpi(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let bits = usize::from(u16::from_be_bytes(b.get(..2)?.try_into().ok()?));
    let len = bits.div_ceil(8);
    Some((b.get(2..2 + len)?, &b[2 + len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_fingerprint_is_sha1_of_the_framed_body() {
        // version 4, created 1, algo 22 (EdDSA), a few material bytes
        let body = [4u8, 0, 0, 0, 1, 22, 9, 8, 7];
        let k = key_packet(&body).unwrap();
        let mut f = vec![0x99, 0, 9];
        f.extend_from_slice(&body);
        assert_eq!(k.fingerprint, Sha1::digest(&f).to_vec());
        assert_eq!(k.key_id, key_id_of(&k.fingerprint[12..]));
        assert_eq!((k.version, k.created, k.algo, k.material_start), (4, 1, 22, 6));
    }

    #[test]
    fn short_and_unknown_bodies_are_typed_errors() {
        assert_eq!(key_packet(&[]), Err(KeyPacketError::TooShort));
        assert_eq!(key_packet(&[4, 0, 0]), Err(KeyPacketError::TooShort));
        assert_eq!(key_packet(&[7, 0, 0, 0, 0, 1]), Err(KeyPacketError::UnknownVersion(7)));
        assert_eq!(key_packet(&[5, 0, 0, 0, 0, 1, 0]), Err(KeyPacketError::TooShort));
    }
}
