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
use pgp::packet::{Packet, PacketParser, PublicKey, PublicSubkey, Signature, SignatureType};
use pgp::types::{KeyDetails, PublicParams};
use rsa::traits::PublicKeyParts;
use serde::Serialize;

use super::expiry::{KeyLife, UidLife};
use super::keyblock::{Component, DecodedKey, Group, Keyblock};
use super::packets::{walk, RawKeyblock, WalkError};
use super::primary::{primary_user, to_front};
use crate::kbx::dump::hex_upper;
use crate::kbx::keypacket::key_id_of;
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
    /// The same user ids' bytes (what gpg's trust database files their
    /// validity under), in the same order.
    #[serde(skip)]
    pub user_id_bytes: Vec<Vec<u8>>,
    /// Number of user attribute packets (photo ids).
    pub user_attributes: usize,
    /// Their names as gpg prints them (`[jpeg image of size N]`) and the
    /// name hashes gpg files their validity under, in keyblock order
    /// (empty where the keyblock was not walked).
    #[serde(skip)]
    pub user_attribute_names: Vec<(String, [u8; 20])>,
    /// Subkeys in keyblock order.
    pub subkeys: Vec<OpenPgpSubkey>,
    /// Set when a key of the keyblock has an algorithm neither gpg nor
    /// kbxscope names: what is listed comes from the packet headers alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecoded: Option<String>,
    /// When the key expires and whether it revoked itself (JSON:
    /// `expires`, `revoked`); `gpg -k` notes them, and leaves out an
    /// unusable key's subkeys.
    #[serde(flatten)]
    pub life: KeyLife,
    /// What decides whether `gpg -k` shows each of `user_ids` (the same
    /// order); empty where the key was read from its packet headers.
    #[serde(skip)]
    pub user_id_lives: Vec<UidLife>,
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
    /// When the subkey expires and whether the key revoked it (JSON:
    /// `expires`, `revoked`).
    #[serde(flatten)]
    pub life: KeyLife,
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
    Ok(match decode(image) {
        Some(key) => with_packet_facts(Some(key), raw),
        None => primary_first(from_packets(raw), &Keyblock::parse(image)),
    })
}

/// A listing from the packet walk with the primary user id moved to the
/// front, as gpg lists it (the keyblock decoded packet by packet tells
/// which one it is).
fn primary_first(mut key: OpenPgpKey, kb: &Keyblock) -> OpenPgpKey {
    if let Some(Component::Uid(u)) = kb.primary_uid_group().map(|i| &kb.groups[i].component) {
        let id = String::from_utf8_lossy(u.id());
        let at = key.user_ids.iter().position(|x| *x == id);
        to_front(&mut key.user_ids, at);
        to_front(&mut key.user_id_bytes, at);
    }
    with_lives(key, kb)
}

/// A listing from the packet walk with what the keyblock decoded packet
/// by packet says of its keys' and user ids' lives.
fn with_lives(mut key: OpenPgpKey, kb: &Keyblock) -> OpenPgpKey {
    let Some(own) = kb.key_id() else { return key };
    key.life = KeyLife::of(kb);
    let sigs = |i: usize| kb.groups[i].sigs.iter().filter_map(|p| p.decoded.as_deref().ok()).collect::<Vec<_>>();
    key.user_id_lives = key
        .user_ids
        .iter()
        .map(|id| {
            let group = kb
                .groups
                .iter()
                .position(|g| matches!(&g.component, Component::Uid(u) if String::from_utf8_lossy(u.id()) == *id));
            group.map(|i| UidLife::from_sigs(own, &sigs(i))).unwrap_or_default()
        })
        .collect();
    let subkeys = kb.groups.iter().enumerate().filter(|(_, g)| matches!(g.component, Component::Subkey(_)));
    for (sub, (i, _)) in key.subkeys.iter_mut().zip(subkeys) {
        sub.life = KeyLife::of_subkey(kb, i);
    }
    key
}

/// The same listing as [`describe`] for a keyblock image already decoded
/// into `kb` (`Keyblock::parse(image)`): where the crate's composed-key
/// parser would read the packets `kb` holds just as they are, the listing
/// is made from them instead of decoding the keyblock a second time.
///
/// # Errors
/// As [`describe`].
pub(crate) fn describe_keyblock(image: &[u8], kb: &Keyblock) -> Result<OpenPgpKey, KeyblockError> {
    let raw = walk(image).map_err(KeyblockError)?;
    let key = match Composed::from_keyblock(kb) {
        Some(c) => Some(c.listing()),
        None => decode(image),
    };
    Ok(match key {
        Some(key) => with_packet_facts(Some(key), raw),
        None => primary_first(from_packets(raw), kb),
    })
}

/// The crate's listing with gpg's algorithm names from the packet walk,
/// in keyblock order; the walk's listing alone if the crate had none.
fn with_packet_facts(key: Option<OpenPgpKey>, raw: RawKeyblock) -> OpenPgpKey {
    let Some(mut key) = key else { return from_packets(raw) };
    key.user_attribute_names = raw.user_attribute_names;
    // gpg's names and the packet-level facts, in keyblock order.
    if key.subkeys.len() + 1 == raw.keys.len() {
        key.algorithm.clone_from(&raw.keys[0].algorithm);
        for (sub, r) in key.subkeys.iter_mut().zip(&raw.keys[1..]) {
            sub.algorithm.clone_from(&r.algorithm);
        }
    }
    key
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
        user_id_bytes: raw.user_id_bytes,
        user_attributes: raw.user_attributes,
        user_attribute_names: raw.user_attribute_names,
        subkeys: keys
            .map(|k| OpenPgpSubkey {
                fingerprint: k.fingerprint,
                key_id: k.key_id,
                created: rfc3339(k.created.into()),
                algorithm: k.algorithm,
                usage: k.usage,
                life: KeyLife::default(),
            })
            .collect(),
        undecoded: unknown.then(|| "an algorithm of this key is unknown; shown from its packet headers".into()),
        life: KeyLife::default(),
        user_id_lives: Vec::new(),
    }
}

/// What a listing takes from a key the `pgp` crate composed: the primary
/// key; the user ids, photo ids and subkeys that have signatures (the
/// composed parser drops the others); and the direct-key signatures (the
/// key's own revocations not among them).
struct Composed<'a> {
    primary: (&'a PublicKey, Option<&'a DecodedKey>),
    direct: Vec<&'a Signature>,
    /// The key's revocations.
    revocations: Vec<&'a Signature>,
    users: Vec<(&'a [u8], Vec<&'a Signature>)>,
    /// Which of `users` gpg takes as primary (listed first).
    primary_user: Option<usize>,
    user_attributes: usize,
    subkeys: Vec<(&'a PublicSubkey, Option<&'a DecodedKey>, Vec<&'a Signature>)>,
}

impl<'a> Composed<'a> {
    /// From the crate's composed key.
    fn from_signed(key: &'a SignedPublicKey) -> Self {
        Composed {
            primary: (&key.primary_key, None),
            direct: key.details.direct_signatures.iter().collect(),
            revocations: key.details.revocation_signatures.iter().collect(),
            users: key.details.users.iter().map(|u| (u.id.id(), u.signatures.iter().collect())).collect(),
            primary_user: primary_user(
                key_id_of(key.primary_key.legacy_key_id().as_ref()),
                key.details.users.iter().map(|u| (u.id.id(), u.signatures.iter())),
            ),
            user_attributes: key.details.user_attributes.len(),
            subkeys: key.public_subkeys.iter().map(|s| (&s.key, None, s.signatures.iter().collect())).collect(),
        }
    }

    /// From a keyblock decoded packet by packet, when the composed parser
    /// would read its packets as they are ([`Keyblock::as_composed`]): the
    /// same parts, by the same rules (a user id or photo id keeps only its
    /// certifications, a subkey only its bindings and revocations; one
    /// left without signatures is dropped).
    fn from_keyblock(kb: &'a Keyblock) -> Option<Self> {
        if !kb.as_composed() {
            return None;
        }
        let sigs = |g: &'a Group, keep: fn(&Signature) -> bool| -> Vec<&'a Signature> {
            g.sigs.iter().filter_map(|p| p.decoded.as_deref().ok()).filter(|s| keep(s)).collect()
        };
        let certification = |s: &Signature| s.is_certification();
        let binding =
            |s: &Signature| matches!(s.typ(), Some(SignatureType::SubkeyBinding | SignatureType::SubkeyRevocation));
        let mut c = Composed {
            primary: (kb.primary.as_deref()?, kb.decoded_key(None)),
            direct: Vec::new(),
            revocations: Vec::new(),
            users: Vec::new(),
            primary_user: None,
            user_attributes: 0,
            subkeys: Vec::new(),
        };
        let primary_group = kb.primary_uid_group();
        for (i, g) in kb.groups.iter().enumerate() {
            match &g.component {
                Component::Key => {
                    c.direct = sigs(g, |s| s.typ() != Some(SignatureType::KeyRevocation));
                    c.revocations = sigs(g, |s| s.typ() == Some(SignatureType::KeyRevocation));
                }
                Component::Uid(u) => {
                    let certifications = sigs(g, certification);
                    if !certifications.is_empty() {
                        if primary_group == Some(i) {
                            c.primary_user = Some(c.users.len());
                        }
                        c.users.push((u.id(), certifications));
                    }
                }
                Component::Uat(_) => c.user_attributes += usize::from(!sigs(g, certification).is_empty()),
                Component::Subkey(Some(k)) => {
                    let bindings = sigs(g, binding);
                    if !bindings.is_empty() {
                        c.subkeys.push((k, kb.decoded_key(Some(i)), bindings));
                    }
                }
                Component::Subkey(None) => return None,
            }
        }
        Some(c)
    }

    /// The listing.
    fn listing(&self) -> OpenPgpKey {
        let (primary, made) = self.primary;
        let (fingerprint, key_id) = ids(primary, made);
        let self_sigs = self.users.iter().flat_map(|(_, sigs)| sigs.iter().copied()).chain(self.direct.iter().copied());
        let mut user_ids: Vec<String> =
            self.users.iter().map(|(id, _)| String::from_utf8_lossy(id).into_owned()).collect();
        to_front(&mut user_ids, self.primary_user);
        let mut user_id_bytes: Vec<Vec<u8>> = self.users.iter().map(|(id, _)| id.to_vec()).collect();
        to_front(&mut user_id_bytes, self.primary_user);
        let own = made.map_or_else(|| key_id_of(primary.legacy_key_id().as_ref()), |m| m.id);
        let created = i64::from(primary.created_at().as_secs());
        let on_key: Vec<&Signature> = self.direct.iter().chain(&self.revocations).copied().collect();
        let uids = self.users.iter().map(|(_, sigs)| sigs.as_slice());
        let life = KeyLife::from_sigs(own, created, primary.legacy_v3_expiration_days(), &on_key, uids);
        let mut user_id_lives: Vec<UidLife> =
            self.users.iter().map(|(_, sigs)| UidLife::from_sigs(own, sigs)).collect();
        to_front(&mut user_id_lives, self.primary_user);
        OpenPgpKey {
            fingerprint,
            key_id,
            version: u8::from(primary.version()),
            created: rfc3339(primary.created_at().as_secs().into()),
            algorithm: algorithm_name(primary.public_params()),
            usage: usage_letters(self_sigs),
            user_ids,
            user_id_bytes,
            user_attributes: self.user_attributes,
            user_attribute_names: Vec::new(),
            subkeys: self
                .subkeys
                .iter()
                .map(|(key, made, sigs)| {
                    let (fingerprint, key_id) = ids(*key, *made);
                    let sub_life = KeyLife::of_subkey_sigs(own, i64::from(key.created_at().as_secs()), sigs);
                    OpenPgpSubkey {
                        fingerprint,
                        key_id,
                        created: rfc3339(key.created_at().as_secs().into()),
                        algorithm: algorithm_name(key.public_params()),
                        usage: usage_letters(sigs.iter().copied()),
                        life: sub_life,
                    }
                })
                .collect(),
            undecoded: None,
            life,
            user_id_lives,
        }
    }
}

/// A key's fingerprint and key id in upper-case hex: as the keyblock made
/// them once ([`DecodedKey`]), else made here.
fn ids(key: &impl KeyDetails, made: Option<&DecodedKey>) -> (String, String) {
    match made {
        Some(m) => (hex_upper(m.fingerprint.as_bytes()), hex_upper(&m.id)),
        None => (hex_upper(key.fingerprint().as_bytes()), hex_upper(key.legacy_key_id().as_ref())),
    }
}

/// The listing as the `pgp` crate decodes it (`None` if it cannot).
fn decode(image: &[u8]) -> Option<OpenPgpKey> {
    let packets = PacketParser::new(image).filter(|p| !matches!(p, Ok(Packet::Trust(_))));
    let key = SignedPublicKey::from_packets(packets.peekable()).next()?.ok()?;
    Some(Composed::from_signed(&key).listing())
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The GnuPG-made fixture keyboxes (v4 and v5 keys, photo ids, many
    /// curves, revoked and expired keys).
    const FIXTURES: [&[u8]; 6] = [
        include_bytes!("../../tests/fixtures/gnupg-curves.kbx"),
        include_bytes!("../../tests/fixtures/gnupg-deleted.kbx"),
        include_bytes!("../../tests/fixtures/gnupg-mixed.kbx"),
        include_bytes!("../../tests/fixtures/gnupg24-v5.kbx"),
        include_bytes!("../../tests/fixtures/gnupg24-v5-tampered.kbx"),
        include_bytes!("../../tests/fixtures/gnupg24-v5-uncached.kbx"),
    ];

    /// The keyblocks of the fixture keyboxes.
    fn fixture_keyblocks() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for data in FIXTURES {
            let mut at = 0;
            while at + 5 <= data.len() {
                let len = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
                if let Ok(crate::kbx::Blob::Key(b)) = crate::kbx::parse_blob(&data[at..at + len]) {
                    if b.blob_type == crate::kbx::BlobType::OpenPgp {
                        out.push(b.data().to_vec());
                    }
                }
                at += len.max(5);
            }
        }
        assert!(out.len() > 20, "the fixtures hold OpenPGP keys");
        out
    }

    /// Each packet of a keyblock, header and body.
    fn packets(image: &[u8]) -> Vec<Vec<u8>> {
        let mut start = 0;
        crate::kbx::keyblock::split_packets(image)
            .unwrap()
            .iter()
            .map(|p| {
                let end = p.body.as_ptr() as usize - image.as_ptr() as usize + p.body.len();
                let whole = image[start..end].to_vec();
                start = end;
                whole
            })
            .collect()
    }

    fn same_either_way(image: &[u8]) -> Result<(), TestCaseError> {
        let kb = Keyblock::parse(image);
        prop_assert_eq!(describe(image), describe_keyblock(image, &kb));
        Ok(())
    }

    #[test]
    fn the_decoded_keyblock_lists_as_the_crate_decodes() {
        let blocks = fixture_keyblocks();
        let mut from_keyblock = 0;
        for image in &blocks {
            same_either_way(image).unwrap();
            from_keyblock += usize::from(Keyblock::parse(image).as_composed());
        }
        assert!(from_keyblock * 2 > blocks.len(), "most keyblocks take the short way: {from_keyblock}");
    }

    proptest! {
        /// Keyblocks rearranged packet by packet (dropped, repeated, moved:
        /// user ids after subkeys, signatures before the key, unsigned
        /// components) list the same both ways.
        #[test]
        fn rearranged_keyblocks_list_the_same(
            pick in 0usize..1000,
            key_first in any::<bool>(),
            order in proptest::collection::vec(0usize..64, 0..24),
        ) {
            let blocks = fixture_keyblocks();
            let source = packets(&blocks[pick % blocks.len()]);
            let order = key_first.then_some(0).into_iter().chain(order);
            let image: Vec<u8> = order.flat_map(|i| source[i % source.len()].iter().copied()).collect();
            same_either_way(&image)?;
        }
    }
}
