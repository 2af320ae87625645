//! OpenPGP keys for generated keyboxes, made with the `pgp` crate.
//!
//! Every signature is made through `SignatureConfig` with a fixed creation
//! time (the crate's convenience signers stamp the current time, which
//! would make the output differ from run to run). Ed25519 signatures are
//! deterministic; RSA keys come from the shipped synthetic keys (their
//! fingerprints differ through the creation time) and sign with PKCS#1 v1.5,
//! also deterministic.

use bytes::Bytes;
use pgp::composed::{KeyType, SignedKeyDetails, SignedPublicKey, SignedPublicSubKey};
use pgp::crypto::ecc_curve::ECCCurve;
use pgp::crypto::hash::HashAlgorithm;
use pgp::packet::{
    Features, KeyFlags, PubKeyInner, PublicKey, PublicSubkey, SecretKey, Signature, SignatureConfig, SignatureType,
    Subpacket, SubpacketData, UserAttribute, UserId,
};
use pgp::ser::Serialize;
use pgp::types::{
    KeyDetails, KeyVersion, Password, PlainSecretParams, PublicParams, SecretParams, SignedUser, SignedUserAttribute,
    Tag, Timestamp,
};
use rand::{CryptoRng, Rng};

use super::signer::rsa_key;
use crate::kbx::keyblock::{gnupg_keyblock, split_packets, tag, GnupgKeyblock};

/// Errors from the OpenPGP side of the generator.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The `pgp` crate refused.
    #[error(transparent)]
    Pgp(#[from] pgp::errors::Error),
    /// The serialized key did not split into packets.
    #[error(transparent)]
    Framing(#[from] crate::kbx::keyblock::FramingError),
}

/// Results of this module.
pub type Result<T> = std::result::Result<T, KeyError>;

/// What one key looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeySpec {
    /// Creation time of the primary key and its subkey.
    pub created: u32,
    /// `Some(i)`: an RSA key made from shipped key `i` (subkey from `i + 1`);
    /// `None`: Ed25519 with a Cv25519 encryption subkey.
    pub rsa: Option<usize>,
    /// User ids, the first one primary.
    pub user_ids: Vec<String>,
}

/// A key under construction: the primary secret (it certifies others) and
/// the signed components.
pub(crate) struct BuiltKey {
    /// The primary key, with its secret.
    pub primary: SecretKey,
    users: Vec<SignedUser>,
    attributes: Vec<SignedUserAttribute>,
    subkeys: Vec<SignedPublicSubKey>,
    created: u32,
}

impl std::fmt::Debug for BuiltKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltKey").field("fingerprint", &self.primary.fingerprint()).finish()
    }
}

fn subpacket(data: SubpacketData) -> Result<Subpacket> {
    Ok(Subpacket::regular(data)?)
}

/// A v4 signature configuration with fixed creation time and issuer.
fn config(typ: SignatureType, signer: &SecretKey, when: u32, mut extra: Vec<Subpacket>) -> Result<SignatureConfig> {
    let mut c = SignatureConfig::v4(typ, signer.algorithm(), HashAlgorithm::Sha256);
    let mut hashed = vec![
        subpacket(SubpacketData::SignatureCreationTime(Timestamp::from_secs(when)))?,
        subpacket(SubpacketData::IssuerFingerprint(signer.fingerprint()))?,
    ];
    hashed.append(&mut extra);
    c.hashed_subpackets = hashed;
    c.unhashed_subpackets = vec![subpacket(SubpacketData::IssuerKeyId(signer.legacy_key_id()))?];
    Ok(c)
}

/// Subpackets of a user-id self-signature.
fn self_sig_metadata() -> Result<Vec<Subpacket>> {
    use pgp::crypto::sym::SymmetricKeyAlgorithm as Sym;
    let mut flags = KeyFlags::default();
    flags.set_certify(true);
    flags.set_sign(true);
    let mut features = Features::default();
    features.set_seipd_v1(true);
    Ok(vec![
        subpacket(SubpacketData::KeyFlags(flags))?,
        subpacket(SubpacketData::Features(features))?,
        subpacket(SubpacketData::PreferredSymmetricAlgorithms([Sym::AES256, Sym::AES128].into_iter().collect()))?,
        subpacket(SubpacketData::PreferredHashAlgorithms(
            [HashAlgorithm::Sha512, HashAlgorithm::Sha256].into_iter().collect(),
        ))?,
    ])
}

fn public_key(
    created: u32,
    params: (PublicParams, SecretParams),
    alg: pgp::crypto::public_key::PublicKeyAlgorithm,
) -> Result<(PubKeyInner, SecretParams)> {
    let inner = PubKeyInner::new(KeyVersion::V4, alg, Timestamp::from_secs(created), None, params.0)?;
    Ok((inner, params.1))
}

fn rsa_params(i: usize) -> (PublicParams, SecretParams) {
    let secret = pgp::crypto::rsa::SecretKey::from(rsa_key(i));
    let public = PublicParams::RSA((&secret).into());
    (public, SecretParams::Plain(PlainSecretParams::RSA(secret)))
}

/// Make a key: primary, self-signed user ids, one encryption subkey.
///
/// # Errors
/// Errors of the `pgp` crate (none are expected for valid specs).
pub(crate) fn make_key(spec: &KeySpec, rng: &mut (impl Rng + CryptoRng)) -> Result<BuiltKey> {
    use pgp::crypto::public_key::PublicKeyAlgorithm as Alg;
    let (primary_params, sub_params, alg, sub_alg) = match spec.rsa {
        Some(i) => (rsa_params(i), rsa_params(i + 1), Alg::RSA, Alg::RSA),
        None => (
            KeyType::Ed25519Legacy.generate(&mut *rng)?,
            KeyType::ECDH(ECCCurve::Curve25519Legacy).generate(&mut *rng)?,
            Alg::EdDSALegacy,
            Alg::ECDH,
        ),
    };
    let (inner, secret) = public_key(spec.created, primary_params, alg)?;
    let primary = SecretKey::new(PublicKey::from_inner(inner)?, secret)?;
    let pw = Password::empty();
    let mut users = Vec::with_capacity(spec.user_ids.len());
    for (i, text) in spec.user_ids.iter().enumerate() {
        let id = UserId::from_str(Default::default(), text)?;
        let mut meta = self_sig_metadata()?;
        if i == 0 {
            meta.push(subpacket(SubpacketData::IsPrimary(true))?);
        }
        let sig = config(SignatureType::CertPositive, &primary, spec.created, meta)?.sign_certification(
            &primary,
            primary.public_key(),
            &pw,
            Tag::UserId,
            &id,
        )?;
        users.push(SignedUser::new(id, vec![sig]));
    }
    let (sub_inner, _) = public_key(spec.created, sub_params, sub_alg)?;
    let sub = PublicSubkey::from_inner(sub_inner)?;
    let mut flags = KeyFlags::default();
    flags.set_encrypt_comms(true);
    flags.set_encrypt_storage(true);
    let binding =
        config(SignatureType::SubkeyBinding, &primary, spec.created, vec![subpacket(SubpacketData::KeyFlags(flags))?])?
            .sign_subkey_binding(&primary, primary.public_key(), &pw, &sub)?;
    Ok(BuiltKey {
        primary,
        users,
        attributes: Vec::new(),
        subkeys: vec![SignedPublicSubKey::new(sub, vec![binding])],
        created: spec.created,
    })
}

impl BuiltKey {
    /// Number of user ids.
    pub(crate) fn user_count(&self) -> usize {
        self.users.len()
    }

    /// Creation time of the key.
    pub(crate) fn created(&self) -> u32 {
        self.created
    }

    /// The primary fingerprint.
    pub(crate) fn fingerprint(&self) -> Vec<u8> {
        self.primary.fingerprint().as_bytes().to_vec()
    }

    /// Add a third-party certification of user id `uid` by `signer`.
    ///
    /// # Errors
    /// Errors of the `pgp` crate.
    pub(crate) fn certify(&mut self, uid: usize, signer: &SecretKey, when: u32) -> Result<()> {
        let user = &mut self.users[uid];
        let sig: Signature = config(SignatureType::CertGeneric, signer, when, Vec::new())?
            .sign_certification_third_party(
                signer,
                &Password::empty(),
                self.primary.public_key(),
                Tag::UserId,
                &user.id,
            )?;
        user.signatures.push(sig);
        Ok(())
    }

    /// Add a self-signed photo id holding a JPEG of `len` bytes.
    ///
    /// # Errors
    /// Errors of the `pgp` crate.
    pub(crate) fn add_photo(&mut self, len: usize, rng: &mut impl Rng) -> Result<()> {
        let attr = UserAttribute::new_image(Bytes::from(fake_jpeg(len, rng)))?;
        let sig = config(SignatureType::CertPositive, &self.primary, self.created, Vec::new())?.sign_certification(
            &self.primary,
            self.primary.public_key(),
            &Password::empty(),
            Tag::UserAttribute,
            &attr,
        )?;
        self.attributes.push(SignedUserAttribute::new(attr, vec![sig]));
        Ok(())
    }

    /// The keyblock as gpg stores it, and the fingerprints for the key table.
    ///
    /// # Errors
    /// Errors of the `pgp` crate while serializing.
    pub(crate) fn keyblock(&self) -> Result<(GnupgKeyblock, Vec<Vec<u8>>)> {
        let public = SignedPublicKey::new(
            self.primary.public_key().clone(),
            SignedKeyDetails::new(Vec::new(), Vec::new(), self.users.clone(), self.attributes.clone()),
            self.subkeys.clone(),
        );
        let bytes = public.to_bytes()?;
        let packets = split_packets(&bytes)?;
        // The first signature after a user id, photo or subkey is the self-signature.
        let mut first_after_component = vec![false; packets.len()];
        for (i, p) in packets.iter().enumerate() {
            if matches!(p.tag, tag::USER_ID | tag::USER_ATTRIBUTE | tag::PUBLIC_SUBKEY) && i + 1 < packets.len() {
                first_after_component[i + 1] = packets[i + 1].tag == tag::SIGNATURE;
            }
        }
        let block = gnupg_keyblock(&packets, |i| first_after_component[i]);
        let mut fprs = vec![self.fingerprint()];
        fprs.extend(self.subkeys.iter().map(|s| s.key.fingerprint().as_bytes().to_vec()));
        Ok((block, fprs))
    }
}

/// A JPEG-framed photo of `len` bytes (at least 40): SOI, a JFIF APP0
/// segment, comment segments of random filler, EOI. gpg checks only the
/// image header of a photo id, not the picture.
pub(crate) fn fake_jpeg(len: usize, rng: &mut impl Rng) -> Vec<u8> {
    let len = len.max(40);
    let mut j = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0];
    while j.len() + 2 < len {
        let room = (len - 2 - j.len()).min(0xFFFF + 2);
        if room < 4 {
            j.resize(len - 2, 0);
            break;
        }
        let body = room - 4;
        j.extend_from_slice(&[0xFF, 0xFE]);
        j.extend_from_slice(&((body + 2) as u16).to_be_bytes());
        let start = j.len();
        j.resize(start + body, 0);
        rng.fill(&mut j[start..]);
    }
    j.extend_from_slice(&[0xFF, 0xD9]);
    j
}

/// The first key of keyblock `bytes` (gpg's framing: trust packets left
/// out), for tests.
#[cfg(test)]
pub(crate) fn decode(bytes: &[u8]) -> SignedPublicKey {
    let packets = pgp::packet::PacketParser::new(bytes).filter(|p| !matches!(p, Ok(pgp::packet::Packet::Trust(_))));
    <SignedPublicKey as pgp::composed::Deserializable>::from_packets(packets.peekable())
        .next()
        .expect("a key")
        .expect("it decodes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openpgp::describe;
    use rand::SeedableRng;

    #[test]
    fn made_keys_decode_and_verify() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let alice = KeySpec {
            created: 1_600_000_000,
            rsa: None,
            user_ids: vec!["Alice <alice@example.org>".into(), "Alice W. <aw@example.net>".into()],
        };
        let bob = KeySpec { created: 1_600_000_100, rsa: Some(0), user_ids: vec!["Bob <bob@example.org>".into()] };
        let mut a = make_key(&alice, &mut rng).unwrap();
        let b = make_key(&bob, &mut rng).unwrap();
        a.certify(0, &b.primary, 1_650_000_000).unwrap();
        a.add_photo(3000, &mut rng).unwrap();
        let (block, fprs) = a.keyblock().unwrap();
        assert_eq!(fprs.len(), 2);
        assert_eq!(block.user_ids.len(), 2);
        assert_eq!(block.signatures, 2 + 1 + 1 + 1, "2 uid self-sigs, 1 certification, photo, binding");
        let (o, l) = block.user_ids[0];
        assert_eq!(&block.bytes[o as usize..(o + l) as usize], b"Alice <alice@example.org>");
        let listed = describe(&block.bytes).unwrap();
        assert_eq!(listed.algorithm, "ed25519");
        assert_eq!(listed.usage, "SC");
        assert_eq!(listed.user_attributes, 1);
        assert_eq!(listed.subkeys[0].algorithm, "cv25519");
        assert_eq!(listed.created, "2020-09-13T12:26:40Z");
        let (bb, _) = b.keyblock().unwrap();
        assert_eq!(describe(&bb.bytes).unwrap().algorithm, "rsa2048");
        // all signatures verify with the pgp crate
        let key = decode(&block.bytes);
        let sig = &key.details.users[0].signatures[1];
        sig.verify_third_party_certification(
            &key.primary_key,
            b.primary.public_key(),
            Tag::UserId,
            &key.details.users[0].id,
        )
        .unwrap();
        key.details.users[1].signatures[0]
            .verify_certification(&key.primary_key, Tag::UserId, &key.details.users[1].id)
            .unwrap();
        key.public_subkeys[0].verify_bindings(&key.primary_key).unwrap();
    }

    #[test]
    fn deterministic() {
        let spec = KeySpec { created: 1_600_000_000, rsa: None, user_ids: vec!["C <c@example.org>".into()] };
        let make = || {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
            make_key(&spec, &mut rng).unwrap().keyblock().unwrap().0.bytes
        };
        assert_eq!(make(), make());
    }

    #[test]
    fn jpeg_has_the_asked_size() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        for len in [40, 41, 100, 70_000, 200_001] {
            let j = fake_jpeg(len, &mut rng);
            assert_eq!(j.len(), len);
            assert_eq!(&j[..2], &[0xFF, 0xD8]);
            assert_eq!(&j[len - 2..], &[0xFF, 0xD9]);
        }
    }
}
