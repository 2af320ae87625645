//! Verifying one key signature with the signer's key, the checks gpg's
//! `check_key_signature` makes. No I/O.
//!
//! Two ways to the digest, one check of it:
//!
//! * [`verify`]: the `pgp` crate hashes what a signature covers when it
//!   decodes the keys and the signature, and hands the digest to the
//!   signer's key through `Made` (which also gives the crate each key's
//!   id, fingerprint and serialization, made once per keyblock);
//! * [`verify_raw`]: for what the crate cannot decode (v5 keys and
//!   signatures, certifications over them) the digest is made from the
//!   packets' bytes ([`super::raw`]).
//!
//! Both end in [`verify_digest`], which has every algorithm gpg verifies
//! in a keybox. For RSA, aws-lc-rs checks PKCS#1 v1.5 with SHA-1 and
//! SHA-2 first (the `rsa` crate's pure-Rust arithmetic is most of an
//! RSA-heavy keybox's CPU); only a signature aws-lc-rs verifies counts
//! there, anything else goes to the `rsa` crate, so no verdict depends on
//! the fast path.

use pgp::errors::Error;
use pgp::packet::{PublicKey, PublicSubkey, Signature};
use pgp::ser::Serialize;
use pgp::types::{
    Fingerprint, KeyDetails, KeyId, KeyVersion, PublicParams, SignatureBytes, Tag, Timestamp, VerifyingKey,
};

use super::keyblock::{Component, DecodedKey, Keyblock};
use super::raw;
use crate::crypto::fit_left;
use crate::crypto::tally::{self, Verified};

/// A key the crate decoded: a primary key or a subkey.
#[derive(Clone, Copy)]
enum Key<'a> {
    Primary(&'a PublicKey),
    Sub(&'a PublicSubkey),
}

/// A key that can verify: a primary key or a subkey, with its id,
/// fingerprint and serialization made once ([`DecodedKey`]).
#[derive(Clone, Copy)]
pub(super) struct SignerKey<'a> {
    key: Key<'a>,
    made: &'a DecodedKey,
}

impl<'a> SignerKey<'a> {
    /// The key's creation time.
    pub(super) fn created_at(&self) -> Timestamp {
        match self.key {
            Key::Primary(k) => k.created_at(),
            Key::Sub(k) => k.created_at(),
        }
    }

    /// The key of `kb` (primary or subkey) whose key id is `kid`.
    pub(super) fn find(kb: &'a Keyblock, kid: &[u8; 8]) -> Option<Self> {
        let made = kb.decoded_keys().iter().find(|k| k.id == *kid)?;
        let key = match made.group {
            None => Key::Primary(kb.primary.as_deref()?),
            Some(i) => match &kb.groups[i].component {
                Component::Subkey(Some(k)) => Key::Sub(k.as_ref()),
                _ => return None,
            },
        };
        Some(Self { key, made })
    }
}

/// How a verification ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The signature is good.
    Good,
    /// The signature does not verify.
    Bad,
    /// It cannot be checked (unsupported algorithm, wrong class, …), with
    /// gpg's words where it has them.
    Error(String),
}

/// Verify `sig`, attached to the group at `at` of the keyblock `kb`, with
/// `signer`; `None` when the crate did not decode the keyblock's primary
/// key (or the signed subkey, or the photo id).
pub(super) fn verify(kb: &Keyblock, at: usize, sig: &Signature, signer: SignerKey<'_>) -> Option<Verdict> {
    let class = sig.typ().map_or(0, u8::from);
    let group = kb.groups.get(at)?;
    let primary = Made { key: kb.primary.as_deref()?, made: kb.decoded_key(None)?, first: () };
    // The signer's RSA key parsed once for all its signatures.
    let first = |p: &PublicParams, hash, digest: &[u8], sig: &SignatureBytes| {
        verify_digest_with(p, hash, digest, sig, Some(&signer.made.rsa))
    };
    macro_rules! with_signer {
        ($k:ident => $e:expr) => {
            match signer.key {
                Key::Primary(key) => {
                    let $k = &Made { key, made: signer.made, first };
                    $e
                }
                Key::Sub(key) => {
                    let $k = &Made { key, made: signer.made, first };
                    $e
                }
            }
        };
    }
    let r = match (&group.component, class) {
        (Component::Key, 0x1F | 0x20) => with_signer!(k => sig.verify_key_third_party(&primary, k)),
        (Component::Uid(u), 0x10..=0x13 | 0x30) => {
            with_signer!(k => sig.verify_third_party_certification(&primary, k, Tag::UserId, u))
        }
        (Component::Uat(Some(u)), 0x10..=0x13 | 0x30) => {
            with_signer!(k => sig.verify_third_party_certification(&primary, k, Tag::UserAttribute, u))
        }
        // A photo id kept as its bytes: the digest is made from them.
        (Component::Uat(None), _) => return None,
        (Component::Subkey(Some(sub)), 0x18 | 0x28) => {
            let sub = Made { key: sub.as_ref(), made: kb.decoded_key(Some(at))?, first: () };
            with_signer!(k => sig.verify_subkey_binding(k, &sub))
        }
        (Component::Subkey(None), 0x18 | 0x28) => return Some(Verdict::Error("Unknown public key algorithm".into())),
        _ => return Some(Verdict::Error("Invalid signature class".into())),
    };
    Some(match r {
        Ok(()) => Verdict::Good,
        Err(e) => classify(&e),
    })
}

/// Verify `sig` (read from its bytes) over `primary` and `signed` with
/// the signer's key `signer`, all read from their packets.
pub(super) fn verify_raw(
    sig: &raw::SigPacket,
    primary: &raw::KeyPacket,
    signed: raw::Signed<'_>,
    signer: &raw::KeyPacket,
) -> Verdict {
    let unknown = || Verdict::Error("Unknown public key algorithm".into());
    if signer.params.is_none() && signer.rsa_material().is_none() {
        return unknown();
    }
    let (digest, hash) = match raw::digest(sig, primary, signed) {
        Ok(d) => d,
        Err(raw::DigestError::Algorithm) => return Verdict::Error("Invalid digest algorithm".into()),
        Err(raw::DigestError::Left16) => return Verdict::Bad,
    };
    let Some(params) = signer.params.as_ref() else {
        // An RSA key larger than the `pgp` crate takes (gpg takes up to
        // 16384 bits; real keyrings hold 10240-bit keys).
        let Some((n, e)) = signer.rsa_material() else { return unknown() };
        let SignatureBytes::Mpis(mpis) = sig.bytes() else { return unknown() };
        let ([value], Some(hash)) = (mpis.as_slice(), crate::crypto::Hash::of_openpgp(hash)) else {
            return unknown();
        };
        return match crate::crypto::verify_pkcs1_large(n, e, hash, &digest, value.as_ref()) {
            Some(true) => Verdict::Good,
            Some(false) => Verdict::Bad,
            None => unknown(),
        };
    };
    match verify_digest(params, hash, &digest, &sig.bytes()) {
        Some(Ok(())) => Verdict::Good,
        Some(Err(e)) => classify(&e),
        None => unknown(),
    }
}

/// gpg's reading of a failure: unsupported algorithms are errors (`%`),
/// everything else a bad signature (`-`).
fn classify(e: &Error) -> Verdict {
    match e {
        Error::Unimplemented { .. } | Error::Unsupported { .. } => {
            let text = e.to_string();
            if text.to_ascii_lowercase().contains("hash") || text.to_ascii_lowercase().contains("digest") {
                Verdict::Error("Invalid digest algorithm".into())
            } else {
                Verdict::Error("Unknown public key algorithm".into())
            }
        }
        _ => Verdict::Bad,
    }
}

/// A decoded key as the crate's checks take it, with its id, fingerprint
/// and serialization from [`DecodedKey`] (the crate's own, made once)
/// instead of made again for every signature; as a signer, with a check
/// tried first (`first`: key parameters, hash, digest, signature): its
/// verdict where it gives one, else the key's own.
struct Made<'a, K, C> {
    key: &'a K,
    made: &'a DecodedKey,
    first: C,
}

impl<K: std::fmt::Debug, C> std::fmt::Debug for Made<'_, K, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Made").field(self.key).finish()
    }
}

impl<K: KeyDetails, C> KeyDetails for Made<'_, K, C> {
    fn version(&self) -> KeyVersion {
        self.key.version()
    }
    fn legacy_key_id(&self) -> KeyId {
        KeyId::from(self.made.id)
    }
    fn fingerprint(&self) -> Fingerprint {
        self.made.fingerprint.clone()
    }
    fn algorithm(&self) -> pgp::crypto::public_key::PublicKeyAlgorithm {
        self.key.algorithm()
    }
    fn created_at(&self) -> Timestamp {
        self.key.created_at()
    }
    fn legacy_v3_expiration_days(&self) -> Option<u16> {
        self.key.legacy_v3_expiration_days()
    }
    fn public_params(&self) -> &PublicParams {
        self.key.public_params()
    }
}

impl<K, C> VerifyingKey for Made<'_, K, C>
where
    K: VerifyingKey,
    C: Fn(&PublicParams, pgp::crypto::hash::HashAlgorithm, &[u8], &SignatureBytes) -> Option<pgp::errors::Result<()>>,
{
    fn verify(
        &self,
        hash: pgp::crypto::hash::HashAlgorithm,
        digest: &[u8],
        sig: &SignatureBytes,
    ) -> pgp::errors::Result<()> {
        match (self.first)(self.key.public_params(), hash, digest, sig) {
            Some(verdict) => verdict,
            None => self.key.verify(hash, digest, sig),
        }
    }
}

impl<K, C> Serialize for Made<'_, K, C> {
    fn to_writer<W: std::io::Write>(&self, w: &mut W) -> pgp::errors::Result<()> {
        w.write_all(&self.made.serialized)?;
        Ok(())
    }
    fn write_len(&self) -> usize {
        self.made.serialized.len()
    }
}

/// Verify a signature over `digest` with a key's parameters, for the
/// algorithms gpg verifies in a keybox; `None` for anything else (the
/// caller's fallback: the `pgp` crate's own check of a decoded key, or
/// gpg's "Unknown public key algorithm").
///
/// * RSA: aws-lc-rs for PKCS#1 v1.5 with SHA-1/SHA-2, the `rsa` crate
///   (through the `pgp` crate) for the rest;
/// * DSA, ECDSA on NIST P-256/384/521, EdDSA on Ed25519: the `pgp` crate's
///   RustCrypto-based checks;
/// * ECDSA on secp256k1 and brainpoolP256r1/P384r1/P512r1: `k256`,
///   `bp256`, `bp384` and the in-tree brainpoolP512r1
///   ([`crate::crypto::verify_ecdsa`]); libgcrypt takes a
///   "high" s, so `k256`'s low-s rule is not applied;
/// * EdDSA on Ed448 (GnuPG 2.4's v5 keys: algorithm 22 with the Ed448
///   curve, the point and `r`, `s` as 57-byte strings) over the digest of
///   any hash, as gpg takes it: `cx448`, the build of RustCrypto's
///   `ed448-goldilocks` the `pgp` crate already uses.
pub(super) fn verify_digest(
    params: &PublicParams,
    hash: pgp::crypto::hash::HashAlgorithm,
    digest: &[u8],
    sig: &SignatureBytes,
) -> Option<pgp::errors::Result<()>> {
    verify_digest_with(params, hash, digest, sig, None)
}

/// [`verify_digest`], with the signer's RSA key parsed once in `parsed`
/// where the caller keeps one.
fn verify_digest_with(
    params: &PublicParams,
    hash: pgp::crypto::hash::HashAlgorithm,
    digest: &[u8],
    sig: &SignatureBytes,
    parsed: Option<&crate::crypto::ParsedRsa>,
) -> Option<pgp::errors::Result<()>> {
    use pgp::types::{EcdsaPublicParams as Ec, EddsaLegacyPublicParams as Ed};
    tally::count(class(params));
    let mpis: &[pgp::types::Mpi] = match sig {
        SignatureBytes::Mpis(m) => m,
        SignatureBytes::Native(_) => return None,
    };
    let bad = || Err(Error::Message { message: "signature does not verify".into(), backtrace: None });
    let verdict = |ok: bool| Some(if ok { Ok(()) } else { bad() });
    match (params, mpis) {
        (PublicParams::RSA(rsa), [value]) => {
            if rsa_verified_fast(params, hash, digest, sig, parsed) {
                return Some(Ok(()));
            }
            Some(pgp::crypto::rsa::verify(&rsa.key, hash, digest, value.as_ref()))
        }
        (PublicParams::DSA(dsa), [r, s]) => {
            Some(pgp::crypto::dsa::verify(dsa, digest, r.clone().into(), s.clone().into()))
        }
        (PublicParams::ECDSA(ec @ (Ec::P256 { .. } | Ec::P384 { .. } | Ec::P521 { .. })), _) => {
            Some(pgp::crypto::ecdsa::verify(ec, hash, digest, mpis))
        }
        (PublicParams::ECDSA(ec), [r, s]) => {
            let point = match ec {
                Ec::Secp256k1 { key } => key.to_sec1_bytes().to_vec(),
                Ec::Unsupported { opaque, .. } => opaque_point(opaque)?,
                _ => return None,
            };
            let curve = ec.curve().oid_str();
            verdict(crate::crypto::verify_ecdsa(&curve, &point, digest, r.as_ref(), s.as_ref()))
        }
        (PublicParams::EdDSALegacy(Ed::Ed25519 { key }), [r, s]) => {
            let sig = [fit_left(r.as_ref(), 32)?, fit_left(s.as_ref(), 32)?].concat();
            Some(pgp::crypto::ed25519::verify(key, hash, digest, &sig))
        }
        (PublicParams::EdDSALegacy(Ed::Unsupported { curve, opaque }), [r, s]) if curve.oid_str() == "1.3.101.113" => {
            // Any hash: gpg makes and verifies Ed448 signatures over
            // SHA-256 too, which the pgp crate's own Ed448 check refuses.
            verdict(crate::crypto::verify_ed448(&opaque_point(opaque)?, r.as_ref(), s.as_ref(), digest)?)
        }
        _ => None,
    }
}

/// What a verification with a key of `params` costs like.
fn class(params: &PublicParams) -> Verified {
    use pgp::types::{EcdsaPublicParams as Ec, EddsaLegacyPublicParams as Ed};
    match params {
        PublicParams::RSA(rsa) => Verified::rsa(rsa::traits::PublicKeyParts::size(&rsa.key)),
        PublicParams::ECDSA(Ec::P256 { .. }) => Verified::P256,
        PublicParams::ECDSA(Ec::P384 { .. }) => Verified::P384,
        PublicParams::ECDSA(_) => Verified::EcdsaOther,
        PublicParams::EdDSALegacy(Ed::Ed25519 { .. }) | PublicParams::Ed25519(_) => Verified::Ed25519,
        PublicParams::EdDSALegacy(Ed::Unsupported { curve, .. }) if curve.oid_str() == "1.3.101.113" => Verified::Ed448,
        PublicParams::Ed448(_) => Verified::Ed448,
        _ => Verified::Other,
    }
}

/// The point of a key the `pgp` crate keeps opaque: an MPI (2-byte bit
/// count, then the bytes).
fn opaque_point(opaque: &[u8]) -> Option<Vec<u8>> {
    let bits = usize::from(u16::from_be_bytes(opaque.get(..2)?.try_into().ok()?));
    opaque.get(2..2 + bits.div_ceil(8)).map(<[u8]>::to_vec)
}

/// Whether aws-lc-rs verifies an RSA PKCS#1 v1.5 signature over `digest`;
/// `false` also for other keys, hashes and anything it does not take.
fn rsa_verified_fast(
    params: &PublicParams,
    hash: pgp::crypto::hash::HashAlgorithm,
    digest: &[u8],
    sig: &SignatureBytes,
    parsed: Option<&crate::crypto::ParsedRsa>,
) -> bool {
    use crate::crypto::{aws_rsa_pkcs1, Hash};
    use aws_lc_rs::{digest as d, signature as aws};
    use pgp::crypto::hash::HashAlgorithm as H;
    use rsa::pkcs1::EncodeRsaPublicKey;
    use rsa::traits::PublicKeyParts;
    let PublicParams::RSA(rsa) = params else { return false };
    let hash = match hash {
        H::Sha1 | H::Sha256 | H::Sha384 | H::Sha512 => Hash::of_openpgp(hash),
        _ => None,
    };
    let Some(hash) = hash else { return false };
    let Some((algorithm, digest_alg)) = aws_rsa_pkcs1(hash) else { return false };
    let SignatureBytes::Mpis(mpis) = sig else { return false };
    let [value] = mpis.as_slice() else { return false };
    let value = value.as_ref();
    // OpenPGP strips an RSA signature's leading zeros; PKCS#1 wants the modulus' length.
    let size = rsa.key.size();
    if value.len() > size {
        return false;
    }
    let mut padded = vec![0u8; size];
    padded[size - value.len()..].copy_from_slice(value);
    if let Some(parsed) = parsed {
        let der = || rsa.key.to_pkcs1_der().ok().map(|d| d.as_bytes().to_vec());
        return parsed.verify(hash, der, digest, &padded) == Some(true);
    }
    let (Ok(der), Ok(digest)) = (rsa.key.to_pkcs1_der(), d::Digest::import_less_safe(digest, digest_alg)) else {
        return false;
    };
    aws::UnparsedPublicKey::new(algorithm, der.as_bytes()).verify_digest(&digest, &padded).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::openpgp::{make_key, KeySpec};
    use rand::SeedableRng;
    use std::cell::RefCell;

    type Seen = (pgp::crypto::hash::HashAlgorithm, Vec<u8>, SignatureBytes);

    #[test]
    fn aws_lc_rs_takes_rsa_certifications_and_nothing_false() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(4);
        let spec = |rsa, uid: &str| KeySpec { created: 1_600_000_000, rsa, user_ids: vec![uid.into()] };
        let mut alice = make_key(&spec(None, "Alice <a@example.org>"), &mut rng).unwrap();
        let bob = make_key(&spec(Some(0), "Bob <b@example.org>"), &mut rng).unwrap();
        alice.certify(0, &bob.primary, 1_650_000_000).unwrap();
        let (block, _) = alice.keyblock().unwrap();
        let key = crate::generate::openpgp::decode(&block.bytes);
        let (user, sig) = (&key.details.users[0].id, &key.details.users[0].signatures[1]);
        let bob_key = bob.primary.public_key();
        // A first check that only remembers the digest the pgp crate hands the key.
        let seen: RefCell<Option<Seen>> = RefCell::new(None);
        let remember = |_: &PublicParams, hash, digest: &[u8], sig: &SignatureBytes| {
            *seen.borrow_mut() = Some((hash, digest.to_vec(), sig.clone()));
            None
        };
        let bob_made = DecodedKey::of(bob_key, None).unwrap();
        assert_eq!(bob_made.fingerprint, bob_key.fingerprint(), "made once, the crate's own");
        assert_eq!(KeyId::from(bob_made.id), bob_key.legacy_key_id());
        assert_eq!(bob_made.serialized, bob_key.to_bytes().unwrap());
        let capture = Made { key: bob_key, made: &bob_made, first: remember };
        sig.verify_third_party_certification(&key.primary_key, &capture, Tag::UserId, user).unwrap();
        let (hash, digest, bytes) = seen.take().expect("the pgp crate asked the key");
        assert!(rsa_verified_fast(bob_key.public_params(), hash, &digest, &bytes, None), "a good RSA signature");
        let mut wrong = digest.clone();
        wrong[0] ^= 1;
        assert!(!rsa_verified_fast(bob_key.public_params(), hash, &wrong, &bytes, None), "another digest");
        assert!(!rsa_verified_fast(key.primary_key.public_params(), hash, &digest, &bytes, None), "not an RSA key");
        // Through verify(): good, and bad once the certified user id changes.
        let kb = Keyblock::parse(&block.bytes);
        let bob_kb = Keyblock::parse(&bob.keyblock().unwrap().0.bytes);
        let signer = SignerKey::find(&bob_kb, &bob_made.id).expect("bob's primary key");
        let uid = kb.groups.iter().position(|g| matches!(g.component, Component::Uid(_))).unwrap();
        assert_eq!(verify(&kb, uid, sig, signer), Some(Verdict::Good));
        let mut other = kb.clone();
        let mallory = pgp::packet::UserId::from_str(Default::default(), "Mallory <m@example.org>").unwrap();
        other.groups[uid].component = Component::Uid(mallory);
        assert_eq!(verify(&other, uid, sig, signer), Some(Verdict::Bad));
    }
}
