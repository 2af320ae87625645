//! What `list` shows of an OpenPGP keyblock, decoded with the `pgp` crate.
//!
//! GnuPG stores its ring-trust packets (tag 12) inside the keyblock.
//! `pgp`'s composed parser stops at the first one *without an error* and
//! silently drops every user id and subkey after it, so those packets are
//! filtered out of the packet stream before the key is assembled.
//!
//! Keys, key ids, creation times and algorithm names always come from a
//! plain walk over the packets (`packets`), so a key the `pgp` crate
//! cannot decode (secp256k1, brainpool, Ed448, v5, …) is still listed with
//! everything gpg shows, and plainly, as gpg lists it; only a key with an
//! algorithm neither gpg nor kbxscope names is marked
//! [`OpenPgpKey::undecoded`].

use pgp::composed::{Deserializable, SignedPublicKey};
use pgp::packet::{Packet, PacketParser, Signature};
use pgp::types::{KeyDetails, PublicParams};
use rsa::traits::PublicKeyParts;
use serde::Serialize;

use super::packets::{walk, RawKeyblock, WalkError};
use crate::kbx::dump::hex_upper;
use crate::timefmt::rfc3339;

/// One OpenPGP key as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenPgpKey {
    /// Primary key fingerprint, upper-case hex.
    pub fingerprint: String,
    /// Primary key id (64 bits), upper-case hex.
    pub key_id: String,
    /// Key version (4, 5 or 6).
    pub version: u8,
    /// Creation time, RFC 3339 UTC.
    pub created: String,
    /// Algorithm as gpg names it (`ed25519`, `rsa3072`, `cv25519`, …).
    pub algorithm: String,
    /// Capabilities from the self-signatures, gpg-style letters (`SC`, `E`, …).
    pub usage: String,
    /// User ids (lossy UTF-8).
    pub user_ids: Vec<String>,
    /// Number of user attribute packets (photo ids).
    pub user_attributes: usize,
    /// Subkeys in keyblock order.
    pub subkeys: Vec<OpenPgpSubkey>,
    /// Set when a key of the keyblock has an algorithm neither gpg nor
    /// kbxscope names: what is listed comes from the packet headers alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecoded: Option<String>,
}

/// One subkey as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenPgpSubkey {
    /// Fingerprint, upper-case hex.
    pub fingerprint: String,
    /// Key id, upper-case hex.
    pub key_id: String,
    /// Creation time, RFC 3339 UTC.
    pub created: String,
    /// Algorithm as gpg names it.
    pub algorithm: String,
    /// Capabilities from the binding signature.
    pub usage: String,
}

/// Why a keyblock cannot be listed even from its packets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("keyblock does not decode: {0}")]
pub struct KeyblockError(#[from] pub WalkError);

/// Decode a keyblock image (with GnuPG's trust packets) into a listing.
///
/// # Errors
/// [`KeyblockError`] when the keyblock's packets do not even frame a
/// public key.
pub fn describe(image: &[u8]) -> Result<OpenPgpKey, KeyblockError> {
    let raw = walk(image).map_err(KeyblockError)?;
    let Some(mut key) = decode(image) else { return Ok(from_packets(raw)) };
    // gpg's names and the packet-level facts, in keyblock order.
    if key.subkeys.len() + 1 == raw.keys.len() {
        key.algorithm.clone_from(&raw.keys[0].algorithm);
        for (sub, r) in key.subkeys.iter_mut().zip(&raw.keys[1..]) {
            sub.algorithm.clone_from(&r.algorithm);
        }
    }
    Ok(key)
}

/// A listing from the packet walk alone.
fn from_packets(raw: RawKeyblock) -> OpenPgpKey {
    let unknown = raw.keys.iter().any(|k| k.algorithm.starts_with("unknown_"));
    let mut keys = raw.keys.into_iter();
    let primary = keys.next().expect("walk() returns a primary key");
    OpenPgpKey {
        fingerprint: primary.fingerprint,
        key_id: primary.key_id,
        version: primary.version,
        created: rfc3339(primary.created.into()),
        algorithm: primary.algorithm,
        usage: primary.usage,
        user_ids: raw.user_ids,
        user_attributes: raw.user_attributes,
        subkeys: keys
            .map(|k| OpenPgpSubkey {
                fingerprint: k.fingerprint,
                key_id: k.key_id,
                created: rfc3339(k.created.into()),
                algorithm: k.algorithm,
                usage: k.usage,
            })
            .collect(),
        undecoded: unknown.then(|| "an algorithm of this key is unknown; shown from its packet headers".into()),
    }
}

/// The listing as the `pgp` crate decodes it (`None` if it cannot).
fn decode(image: &[u8]) -> Option<OpenPgpKey> {
    let packets = PacketParser::new(image).filter(|p| !matches!(p, Ok(Packet::Trust(_))));
    let key = SignedPublicKey::from_packets(packets.peekable()).next()?.ok()?;
    let primary = &key.primary_key;
    let self_sigs = key.details.users.iter().flat_map(|u| u.signatures.iter()).chain(&key.details.direct_signatures);
    Some(OpenPgpKey {
        fingerprint: hex_upper(primary.fingerprint().as_bytes()),
        key_id: hex_upper(primary.legacy_key_id().as_ref()),
        version: u8::from(primary.version()),
        created: rfc3339(primary.created_at().as_secs().into()),
        algorithm: algorithm_name(primary.public_params()),
        usage: usage_letters(self_sigs),
        user_ids: key.details.users.iter().map(|u| String::from_utf8_lossy(u.id.id()).into_owned()).collect(),
        user_attributes: key.details.user_attributes.len(),
        subkeys: key
            .public_subkeys
            .iter()
            .map(|s| OpenPgpSubkey {
                fingerprint: hex_upper(s.key.fingerprint().as_bytes()),
                key_id: hex_upper(s.key.legacy_key_id().as_ref()),
                created: rfc3339(s.key.created_at().as_secs().into()),
                algorithm: algorithm_name(s.key.public_params()),
                usage: usage_letters(s.signatures.iter()),
            })
            .collect(),
        undecoded: None,
    })
}

/// gpg's capability letters from the first signature that carries key flags.
fn usage_letters<'a>(mut sigs: impl Iterator<Item = &'a Signature>) -> String {
    let Some(flags) = sigs.find_map(|s| {
        let f = s.key_flags();
        (f.sign() || f.certify() || f.encrypt_comms() || f.encrypt_storage() || f.authentication()).then_some(f)
    }) else {
        return String::new();
    };
    let mut s = String::new();
    for (on, letter) in [
        (flags.sign(), 'S'),
        (flags.certify(), 'C'),
        (flags.encrypt_comms() || flags.encrypt_storage(), 'E'),
        (flags.authentication(), 'A'),
    ] {
        if on {
            s.push(letter);
        }
    }
    s
}

/// The algorithm the way `gpg -k` prints it.
fn algorithm_name(params: &PublicParams) -> String {
    use pgp::types::{EcdhPublicParams as Ecdh, EcdsaPublicParams as Ecdsa};
    match params {
        PublicParams::RSA(p) => format!("rsa{}", p.key.n().bits()),
        PublicParams::DSA(_) => "dsa".into(),
        PublicParams::Elgamal(_) => "elg".into(),
        PublicParams::ECDSA(Ecdsa::P256 { .. }) | PublicParams::ECDH(Ecdh::P256 { .. }) => "nistp256".into(),
        PublicParams::ECDSA(Ecdsa::P384 { .. }) | PublicParams::ECDH(Ecdh::P384 { .. }) => "nistp384".into(),
        PublicParams::ECDSA(Ecdsa::P521 { .. }) | PublicParams::ECDH(Ecdh::P521 { .. }) => "nistp521".into(),
        PublicParams::ECDSA(_) => "ecdsa".into(),
        PublicParams::ECDH(Ecdh::Curve25519Legacy { .. }) | PublicParams::X25519(_) => "cv25519".into(),
        PublicParams::ECDH(_) => "ecdh".into(),
        PublicParams::EdDSALegacy(_) | PublicParams::Ed25519(_) => "ed25519".into(),
        PublicParams::X448(_) => "cv448".into(),
        PublicParams::Ed448(_) => "ed448".into(),
        #[allow(unreachable_patterns)]
        _ => "unknown".into(),
    }
}
