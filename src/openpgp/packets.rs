//! A plain walk over the packets of an OpenPGP keyblock: what `gpg -k`
//! shows of every key (fingerprint, key id, creation, algorithm as gpg
//! names it, capabilities) and the user ids, for keys the `pgp` crate
//! cannot decode (secp256k1, brainpool, Ed448/X448, v5 keys, unknown
//! algorithms). It reads framing and key headers only; it checks no
//! signature.

use crate::kbx::dump::hex_upper;
use crate::kbx::keyblock::{split_packets, FramingError, Packet};
use crate::kbx::keypacket::KeyPacketError;

/// One key packet (primary or subkey) as gpg lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawKey {
    /// Whether it is a subkey (tag 14).
    pub subkey: bool,
    /// Key packet version.
    pub version: u8,
    /// Fingerprint, upper-case hex.
    pub fingerprint: String,
    /// Key id (64 bits), upper-case hex.
    pub key_id: String,
    /// Creation time (Unix seconds).
    pub created: u32,
    /// Algorithm as gpg names it (`rsa2048`, `secp256k1`, `ed448`, …).
    pub algorithm: String,
    /// Capabilities from the first following signature with key flags.
    pub usage: String,
}

/// A walked keyblock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct RawKeyblock {
    /// Primary key first, then subkeys in keyblock order.
    pub keys: Vec<RawKey>,
    /// User ids (lossy UTF-8).
    pub user_ids: Vec<String>,
    /// The same user ids' bytes.
    pub user_id_bytes: Vec<Vec<u8>>,
    /// User attribute packets.
    pub user_attributes: usize,
    /// Their names as gpg gives them and their name hashes, in keyblock order.
    pub user_attribute_names: Vec<(String, [u8; 20])>,
}

/// Why a keyblock's packets do not frame a public key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WalkError {
    /// The packet framing is broken.
    #[error(transparent)]
    Framing(#[from] FramingError),
    /// A key packet does not read.
    #[error(transparent)]
    Key(#[from] KeyPacketError),
    /// A subkey comes before the primary key, or a second primary key follows.
    #[error("the keyblock does not start with one primary key")]
    PrimaryNotFirst,
    /// No key packet at all.
    #[error("keyblock holds no public key")]
    NoKey,
}

/// The bit length of the MPI at the start of `b`.
fn mpi_bits(b: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(..2)?.try_into().ok()?))
}

/// gpg's name of an ECC curve given as OpenPGP OID bytes.
fn curve_name(oid: &[u8]) -> String {
    let name = match oid {
        [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07] => "nistp256",
        [0x2B, 0x81, 0x04, 0x00, 0x22] => "nistp384",
        [0x2B, 0x81, 0x04, 0x00, 0x23] => "nistp521",
        [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07] => "brainpoolP256r1",
        [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0B] => "brainpoolP384r1",
        [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0D] => "brainpoolP512r1",
        [0x2B, 0x81, 0x04, 0x00, 0x0A] => "secp256k1",
        [0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x01] => "ed25519",
        [0x2B, 0x06, 0x01, 0x04, 0x01, 0x97, 0x55, 0x01, 0x05, 0x01] => "cv25519",
        [0x2B, 0x65, 0x71] => "ed448",
        [0x2B, 0x65, 0x6F] => "cv448",
        _ => return format!("E_{}", oid_string(oid)),
    };
    name.into()
}

/// Dotted form of DER OID content bytes.
fn oid_string(oid: &[u8]) -> String {
    let Some((&first, rest)) = oid.split_first() else { return "error".into() };
    let mut arcs = vec![u64::from(first / 40), u64::from(first % 40)];
    let mut acc = 0u64;
    for &b in rest {
        acc = (acc << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            arcs.push(acc);
            acc = 0;
        }
    }
    arcs.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

/// gpg's algorithm string for a key's algorithm id and key material.
fn algorithm_name(algo: u8, material: &[u8]) -> String {
    let bits = || mpi_bits(material).map_or_else(String::new, |b| b.to_string());
    match algo {
        1..=3 => format!("rsa{}", bits()),
        16 | 20 => format!("elg{}", bits()),
        17 => format!("dsa{}", bits()),
        18 | 19 | 22 => match material.split_first() {
            Some((&len, rest)) if (1..0xff).contains(&len) && rest.len() >= len as usize => {
                curve_name(&rest[..len as usize])
            }
            _ => "E_error".into(),
        },
        25 => "cv25519".into(),
        26 => "cv448".into(),
        27 => "ed25519".into(),
        28 => "ed448".into(),
        other => format!("unknown_{other}"),
    }
}

/// A key packet's listing (usage filled in later).
fn key(body: &[u8], subkey: bool) -> Result<RawKey, KeyPacketError> {
    // The header and where the material starts: the material itself is
    // not decoded for a listing.
    let k = crate::kbx::keypacket::key_packet(body)?;
    let material = &body[k.material_start..];
    Ok(RawKey {
        subkey,
        version: k.version,
        fingerprint: hex_upper(&k.fingerprint),
        key_id: hex_upper(&k.key_id),
        created: k.created,
        algorithm: algorithm_name(k.algo, material),
        usage: String::new(),
    })
}

/// The key flags of a v4/v5/v6 signature's hashed subpackets, as gpg's
/// letters (`S`, `C`, `E`, `A`); `None` without a key-flags subpacket.
fn key_flags(sig: &[u8]) -> Option<String> {
    let version = *sig.first()?;
    let (hashed, _) = match version {
        // v5 (LibrePGP, GnuPG 2.4) keeps v4's 2-byte count; v6 has 4 bytes.
        4 | 5 => {
            let len = u16::from_be_bytes(sig.get(4..6)?.try_into().ok()?) as usize;
            (sig.get(6..6 + len)?, ())
        }
        6 => {
            let len = u32::from_be_bytes(sig.get(4..8)?.try_into().ok()?) as usize;
            (sig.get(8..8 + len)?, ())
        }
        _ => return None,
    };
    let mut b = hashed;
    while let Some((&l0, rest)) = b.split_first() {
        let (len, rest) = match l0 {
            0..192 => (l0 as usize, rest),
            192..255 => (((l0 as usize - 192) << 8) + *rest.first()? as usize + 192, rest.get(1..)?),
            255 => (u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize, rest.get(4..)?),
        };
        let sub = rest.get(..len)?;
        b = &rest[len..];
        if let Some((&ty, data)) = sub.split_first() {
            if ty & 0x7f == 27 {
                let f = *data.first().unwrap_or(&0);
                let mut s = String::new();
                for (mask, letter) in [(0x02, 'S'), (0x01, 'C'), (0x0C, 'E'), (0x20, 'A')] {
                    if f & mask != 0 {
                        s.push(letter);
                    }
                }
                return Some(s);
            }
        }
    }
    None
}

/// Walk a keyblock image (GnuPG's trust packets included).
///
/// # Errors
/// [`WalkError`] when the framing is broken or there is no primary key.
pub(super) fn walk(image: &[u8]) -> Result<RawKeyblock, WalkError> {
    let mut out = RawKeyblock::default();
    // Whether the current key still wants its capabilities.
    let mut wants_usage = false;
    for Packet { tag, body } in split_packets(image)? {
        match tag {
            6 | 14 => {
                if (tag == 6) != out.keys.is_empty() {
                    return Err(WalkError::PrimaryNotFirst);
                }
                out.keys.push(key(body, tag == 14)?);
                wants_usage = true;
            }
            13 => {
                out.user_ids.push(String::from_utf8_lossy(body).into_owned());
                out.user_id_bytes.push(body.to_vec());
            }
            17 => {
                out.user_attributes += 1;
                out.user_attribute_names.push((super::attribute_name(body), super::name_hash(body)));
            }
            2 if wants_usage => {
                if let (Some(flags), Some(k)) = (key_flags(body), out.keys.last_mut()) {
                    k.usage = flags;
                    wants_usage = false;
                }
            }
            _ => {}
        }
    }
    if out.keys.is_empty() {
        return Err(WalkError::NoKey);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    /// A new-format packet.
    fn pkt(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![0xC0 | tag, 0xFF];
        v.extend((body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn v5_ed448_key_fingerprint_and_key_id_come_from_sha256() {
        let mut body = vec![5u8];
        body.extend(1_700_000_000u32.to_be_bytes());
        body.push(28); // Ed448
        body.extend(57u32.to_be_bytes());
        body.extend([0x42u8; 57]);
        let mut sub = vec![5u8];
        sub.extend(1_700_000_001u32.to_be_bytes());
        sub.push(26); // X448
        sub.extend(56u32.to_be_bytes());
        sub.extend([0x24u8; 56]);
        let image = [pkt(6, &body), pkt(13, b"Ed <ed448@example.org>"), pkt(14, &sub)].concat();
        let k = walk(&image).unwrap();
        let mut h = Sha256::new();
        h.update([0x9A]);
        h.update((body.len() as u32).to_be_bytes());
        h.update(&body);
        let fpr = hex_upper(&h.finalize());
        assert_eq!(k.keys[0].fingerprint, fpr);
        assert_eq!(k.keys[0].key_id, fpr[..16]);
        assert_eq!((k.keys[0].algorithm.as_str(), k.keys[1].algorithm.as_str()), ("ed448", "cv448"));
        assert_eq!(k.user_ids, ["Ed <ed448@example.org>"]);
        assert!(k.keys[1].subkey && k.keys[0].version == 5);
    }

    #[test]
    fn curves_and_algorithms_are_named_as_gpg_names_them() {
        let ecc = |algo: u8, oid: &[u8]| {
            let mut m = vec![oid.len() as u8];
            m.extend_from_slice(oid);
            algorithm_name(algo, &m)
        };
        assert_eq!(ecc(19, &[0x2B, 0x81, 0x04, 0x00, 0x0A]), "secp256k1");
        assert_eq!(ecc(18, &[0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0D]), "brainpoolP512r1");
        assert_eq!(ecc(22, &[0x2B, 0x65, 0x71]), "ed448");
        assert_eq!(ecc(19, &[0x2A, 0x03]), "E_1.2.3");
        assert_eq!(algorithm_name(17, &[0x08, 0x00]), "dsa2048");
        assert_eq!(algorithm_name(99, &[]), "unknown_99");
    }

    #[test]
    fn broken_framing_is_an_error_not_a_panic() {
        assert!(walk(&[0x99, 0x01]).is_err());
        assert!(walk(&[0x12]).is_err());
        assert!(walk(&pkt(13, b"uid only")).is_err());
        assert!(walk(&[0xC6, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]).is_err());
    }
}
