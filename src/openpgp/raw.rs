//! Key signatures read from their packets' bytes, for what the `pgp` crate
//! cannot decode: v5 keys and v5 signatures (GnuPG 2.4's Ed448 keys), and
//! certifications over such keys. No I/O.
//!
//! A key signature's digest covers, in this order (RFC 4880 §5.2.4 and
//! LibrePGP's v5 additions, as gpg's `hash_public_key`, `hash_uid_node`
//! and `hash_sigversion_to_magic` feed it):
//!
//! * the primary key packet: `0x99`, a 2-byte length and the body for a
//!   v3/v4 key; `0x9A`, a 4-byte length and the body for a v5 key;
//! * for a subkey binding or revocation (class `0x18`, `0x28`) the subkey
//!   the same way;
//! * for a certification (`0x10`–`0x13`, `0x30`) the user id (`0xB4`) or
//!   user attribute (`0xD1`), a 4-byte length and the body;
//! * the signature's hashed part: from its version byte through the hashed
//!   subpackets (a v3 signature: its class and creation time only);
//! * a v4 signature's trailer `0x04 0xFF` and the hashed part's length in
//!   4 bytes, a v5 signature's `0x05 0xFF` and the length in 8 bytes.
//!
//! The digest's first two bytes must equal the two the signature carries.

use pgp::crypto::public_key::PublicKeyAlgorithm;
use pgp::types::{Mpi, PublicParams, SignatureBytes};

use crate::crypto::Hash;
use crate::kbx::keypacket::{frame_key, key_id_of, key_packet, mpi, KeyPacketError, KeyPacketInfo};

/// A key packet (primary key or subkey) as its bytes say: its identity
/// (version, creation time, algorithm, fingerprint, key id) as the format
/// crate reads it, reached through `Deref`, and its material.
#[derive(Debug, Clone)]
pub struct KeyPacket {
    info: KeyPacketInfo,
    /// The key material, decoded with the `pgp` crate's parameter parser
    /// (which takes curves it has no arithmetic for as opaque bytes);
    /// `None` for an algorithm it does not know.
    pub params: Option<PublicParams>,
    body: Vec<u8>,
}

impl std::ops::Deref for KeyPacket {
    type Target = KeyPacketInfo;

    fn deref(&self) -> &KeyPacketInfo {
        &self.info
    }
}

impl KeyPacket {
    /// Read a key packet body: its identity from the format crate
    /// ([`crate::kbx::keypacket`]), its material with the `pgp` crate.
    ///
    /// # Errors
    /// [`KeyPacketError`] when the body is too short or of an unknown version.
    pub fn parse(body: &[u8]) -> Result<Self, KeyPacketError> {
        let info = key_packet(body)?;
        let material = &body[info.material_start..];
        let params = PublicParams::try_from_reader(PublicKeyAlgorithm::from(info.algo), None, material).ok();
        Ok(Self { info, params, body: body.to_vec() })
    }

    /// An RSA key's modulus and exponent as the packet holds them (also
    /// where the `pgp` crate would not take the key: larger than 4096
    /// bits); `None` for other algorithms.
    pub(crate) fn rsa_material(&self) -> Option<(&[u8], &[u8])> {
        if !matches!(self.algo, 1..=3) {
            return None;
        }
        let (n, rest) = mpi(self.body.get(self.material_start..)?)?;
        let (e, _) = mpi(rest)?;
        Some((n, e))
    }

    /// Append the key as a signature's digest takes it.
    fn hash_into(&self, out: &mut Vec<u8>) {
        frame_key(out, self.version, &self.body);
    }
}

/// Why a signature packet body cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SigPacketError {
    /// The body ends before a field it announces.
    #[error("signature packet too short")]
    TooShort,
    /// A v3 signature whose hashed part is not 5 bytes.
    #[error("v3 signature with a hashed length other than 5")]
    V3HashedLength,
    /// A version this reader does not take.
    #[error("signature packet version {0} is not read")]
    Version(u8),
    /// A subpacket's length runs past its area.
    #[error("a signature subpacket runs past its area")]
    SubpacketRunsPast,
    /// A signature value's MPI runs past the packet.
    #[error("a signature value runs past the packet")]
    ValueRunsPast,
}

/// A signature packet (v3, v4 or v5) as its bytes say.
#[derive(Debug, Clone)]
pub struct SigPacket {
    /// Signature version.
    pub version: u8,
    /// Signature class.
    pub class: u8,
    /// Public-key algorithm id.
    pub pub_alg: u8,
    /// Hash algorithm id.
    pub hash_alg: u8,
    /// Creation time, Unix seconds.
    pub created: Option<u32>,
    /// The issuer's key id: the issuer subpacket, else from the issuer
    /// fingerprint (v3: the key id field).
    pub issuer: Option<[u8; 8]>,
    /// The issuer fingerprint subpacket's fingerprint.
    pub issuer_fpr: Option<Vec<u8>>,
    /// Whether it is exportable (no hashed "exportable: no" subpacket).
    pub exportable: bool,
    /// The code of a hashed reason-for-revocation subpacket.
    pub revocation_reason: Option<u8>,
    /// The hashed part: what the digest takes of the signature itself.
    hashed: Vec<u8>,
    /// The digest's first two bytes as the signature carries them.
    left16: [u8; 2],
    /// The signature values.
    values: Vec<Vec<u8>>,
}

impl SigPacket {
    /// Read a signature packet body.
    ///
    /// # Errors
    /// [`SigPacketError`] when the body is truncated or of a version not read.
    pub fn parse(body: &[u8]) -> Result<Self, SigPacketError> {
        let short = || SigPacketError::TooShort;
        let version = *body.first().ok_or_else(short)?;
        let mut sig = Self {
            version,
            class: 0,
            pub_alg: 0,
            hash_alg: 0,
            created: None,
            issuer: None,
            issuer_fpr: None,
            exportable: true,
            revocation_reason: None,
            hashed: Vec::new(),
            left16: [0; 2],
            values: Vec::new(),
        };
        let rest = match version {
            2 | 3 => {
                let b = body.get(..19).ok_or_else(short)?;
                if b[1] != 5 {
                    return Err(SigPacketError::V3HashedLength);
                }
                sig.class = b[2];
                sig.created = Some(u32::from_be_bytes(b[3..7].try_into().expect("4 bytes")));
                sig.issuer = Some(b[7..15].try_into().expect("8 bytes"));
                (sig.pub_alg, sig.hash_alg) = (b[15], b[16]);
                sig.hashed = b[2..7].to_vec();
                sig.left16 = [b[17], b[18]];
                &body[19..]
            }
            4 | 5 => {
                let head = body.get(..6).ok_or_else(short)?;
                (sig.class, sig.pub_alg, sig.hash_alg) = (head[1], head[2], head[3]);
                let hashed_len = u16::from_be_bytes([head[4], head[5]]) as usize;
                let hashed_end = 6 + hashed_len;
                let hashed = body.get(6..hashed_end).ok_or_else(short)?;
                let len = body.get(hashed_end..hashed_end + 2).ok_or_else(short)?;
                let unhashed_end = hashed_end + 2 + u16::from_be_bytes([len[0], len[1]]) as usize;
                let unhashed = body.get(hashed_end + 2..unhashed_end).ok_or_else(short)?;
                sig.read_subpackets(hashed, true)?;
                sig.read_subpackets(unhashed, false)?;
                if sig.issuer.is_none() {
                    sig.issuer = sig.issuer_fpr.as_deref().map(|f| key_id_of(if f.len() == 20 { &f[12..] } else { f }));
                }
                sig.hashed = body[..hashed_end].to_vec();
                let left = body.get(unhashed_end..unhashed_end + 2).ok_or_else(short)?;
                sig.left16 = [left[0], left[1]];
                &body[unhashed_end + 2..]
            }
            v => return Err(SigPacketError::Version(v)),
        };
        let mut rest = rest;
        while !rest.is_empty() {
            let (value, next) = mpi(rest).ok_or(SigPacketError::ValueRunsPast)?;
            sig.values.push(value.to_vec());
            rest = next;
        }
        Ok(sig)
    }

    /// The subpackets gpg reads for a listing: creation time (2),
    /// exportable (4, hashed only), issuer (16), reason for revocation
    /// (29, hashed only), issuer fingerprint (33).
    fn read_subpackets(&mut self, mut b: &[u8], hashed: bool) -> Result<(), SigPacketError> {
        let bad = || SigPacketError::SubpacketRunsPast;
        while let Some((&l0, rest)) = b.split_first() {
            let (len, rest) = match l0 {
                0..192 => (usize::from(l0), rest),
                192..255 => {
                    let l1 = *rest.first().ok_or_else(bad)?;
                    (((usize::from(l0) - 192) << 8) + usize::from(l1) + 192, &rest[1..])
                }
                255 => (u32::from_be_bytes(rest.get(..4).ok_or_else(bad)?.try_into().expect("4")) as usize, &rest[4..]),
            };
            let sub = rest.get(..len).ok_or_else(bad)?;
            b = &rest[len..];
            let Some((&ty, data)) = sub.split_first() else { continue };
            match (ty & 0x7f, data.len()) {
                (2, 4) if self.created.is_none() => {
                    self.created = Some(u32::from_be_bytes(data.try_into().expect("4 bytes")));
                }
                (4, 1) if hashed => self.exportable = data[0] != 0,
                (16, 8) if self.issuer.is_none() => self.issuer = Some(data.try_into().expect("8 bytes")),
                (29, 1..) if hashed && self.revocation_reason.is_none() => self.revocation_reason = Some(data[0]),
                (33, 21 | 33) if self.issuer_fpr.is_none() => self.issuer_fpr = Some(data[1..].to_vec()),
                _ => {}
            }
        }
        Ok(())
    }

    /// The signature values as the `pgp` crate's verifiers take them.
    pub fn bytes(&self) -> SignatureBytes {
        SignatureBytes::Mpis(self.values.iter().map(|v| Mpi::from_slice(v)).collect())
    }
}

/// What a key signature covers besides the primary key.
#[derive(Debug, Clone, Copy)]
pub(super) enum Signed<'a> {
    /// The primary key alone (direct-key signatures, key revocations).
    Key,
    /// A user id's bytes.
    Uid(&'a [u8]),
    /// A user attribute's bytes.
    Uat(&'a [u8]),
    /// A subkey (bindings, subkey revocations).
    Subkey(&'a KeyPacket),
}

/// Why a digest cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DigestError {
    /// A hash algorithm gpg does not verify with (MD5 among them: gpg
    /// rejects it as weak) or does not know.
    Algorithm,
    /// The digest does not start with the two bytes the signature carries.
    Left16,
}

/// The OpenPGP hash algorithm ids gpg verifies key signatures with.
fn hash_of(id: u8) -> Option<(Hash, pgp::crypto::hash::HashAlgorithm)> {
    use pgp::crypto::hash::HashAlgorithm as H;
    Some(match id {
        2 => (Hash::Sha1, H::Sha1),
        3 => (Hash::Ripemd160, H::Ripemd160),
        8 => (Hash::Sha256, H::Sha256),
        9 => (Hash::Sha384, H::Sha384),
        10 => (Hash::Sha512, H::Sha512),
        11 => (Hash::Sha224, H::Sha224),
        _ => return None,
    })
}

/// The digest `sig` signs, over `primary` and `signed`, and its hash as
/// the `pgp` crate's verifiers name it.
///
/// # Errors
/// [`DigestError`]: an algorithm gpg does not take, or a digest whose
/// first two bytes differ from the signature's.
pub(super) fn digest(
    sig: &SigPacket,
    primary: &KeyPacket,
    signed: Signed<'_>,
) -> Result<(Vec<u8>, pgp::crypto::hash::HashAlgorithm), DigestError> {
    let (hash, algorithm) = hash_of(sig.hash_alg).ok_or(DigestError::Algorithm)?;
    let mut data = Vec::with_capacity(512);
    primary.hash_into(&mut data);
    match signed {
        Signed::Key => {}
        Signed::Subkey(k) => k.hash_into(&mut data),
        Signed::Uid(b) | Signed::Uat(b) => {
            data.push(if matches!(signed, Signed::Uid(_)) { 0xB4 } else { 0xD1 });
            data.extend_from_slice(&(b.len() as u32).to_be_bytes());
            data.extend_from_slice(b);
        }
    }
    data.extend_from_slice(&sig.hashed);
    match sig.version {
        4 => {
            data.extend_from_slice(&[4, 0xFF]);
            data.extend_from_slice(&(sig.hashed.len() as u32).to_be_bytes());
        }
        5 => {
            data.extend_from_slice(&[5, 0xFF]);
            data.extend_from_slice(&(sig.hashed.len() as u64).to_be_bytes());
        }
        _ => {}
    }
    let digest = hash.digest(&data);
    if digest[..2] != sig.left16 {
        return Err(DigestError::Left16);
    }
    Ok((digest, algorithm))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4_sig(hashed_subs: &[u8], unhashed_subs: &[u8], values: &[&[u8]]) -> Vec<u8> {
        let mut b = vec![4, 0x10, 22, 10];
        b.extend((hashed_subs.len() as u16).to_be_bytes());
        b.extend_from_slice(hashed_subs);
        b.extend((unhashed_subs.len() as u16).to_be_bytes());
        b.extend_from_slice(unhashed_subs);
        b.extend([0xAB, 0xCD]);
        for v in values {
            b.extend(((v.len() * 8) as u16).to_be_bytes());
            b.extend_from_slice(v);
        }
        b
    }

    #[test]
    fn a_signature_packet_gives_what_gpg_lists() {
        let mut hashed = vec![5, 2];
        hashed.extend(1_700_000_000u32.to_be_bytes());
        hashed.extend([2, 4, 0]); // exportable: no
        let mut unhashed = vec![9, 16];
        unhashed.extend([1, 2, 3, 4, 5, 6, 7, 8]);
        let s = SigPacket::parse(&v4_sig(&hashed, &unhashed, &[&[0x80; 57], &[0x81; 57]])).unwrap();
        assert_eq!((s.version, s.class, s.pub_alg, s.hash_alg), (4, 0x10, 22, 10));
        assert_eq!((s.created, s.issuer, s.exportable), (Some(1_700_000_000), Some([1, 2, 3, 4, 5, 6, 7, 8]), false));
        assert_eq!(s.values.len(), 2);
        assert_eq!(s.hashed.len(), 6 + hashed.len());
        // The issuer from a v5 issuer fingerprint: its first 8 bytes.
        let mut fpr = vec![34, 33, 5];
        fpr.extend(0u8..32);
        let s = SigPacket::parse(&v4_sig(&fpr, &[], &[&[1]])).unwrap();
        assert_eq!(s.issuer, Some([0, 1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(s.issuer_fpr.as_deref().map(<[u8]>::len), Some(32));
    }

    #[test]
    fn truncated_packets_are_errors_not_panics() {
        let whole = v4_sig(&[5, 2, 0, 0, 0, 1], &[], &[&[1, 2, 3]]);
        for cut in 0..whole.len() {
            let _ = SigPacket::parse(&whole[..cut]);
        }
        assert!(SigPacket::parse(&whole[..whole.len() - 1]).is_err());
        assert!(SigPacket::parse(&[4, 0x10, 1, 8, 0xFF, 0xFF]).is_err());
        for cut in 0..12 {
            assert!(KeyPacket::parse(&[5, 0, 0, 0, 1, 22, 0, 0, 0, 2, 1, 2][..cut]).is_err() || cut >= 10);
        }
    }

    #[test]
    fn v5_keys_are_framed_with_0x9a_and_four_length_bytes() {
        let mut body = vec![5u8];
        body.extend(1_700_000_000u32.to_be_bytes());
        body.push(22);
        body.extend(62u32.to_be_bytes());
        body.extend([3, 0x2B, 0x65, 0x71]);
        body.extend([0x01, 0xC8]);
        body.extend([0x42; 57]);
        let k = KeyPacket::parse(&body).unwrap();
        let mut framed = vec![0x9A];
        framed.extend((body.len() as u32).to_be_bytes());
        framed.extend(&body);
        assert_eq!(k.key_id[..], <sha2::Sha256 as sha2::Digest>::digest(&framed)[..8]);
        let mut out = Vec::new();
        k.hash_into(&mut out);
        assert_eq!(out, framed);
    }
}
