//! Verifying one key signature with the signer's key, the checks gpg's
//! `check_key_signature` makes, through the `pgp` crate. No I/O.
//!
//! The `pgp` crate hashes what a signature covers and hands the digest to
//! the signer's key. Every key gets it through `Checked`: aws-lc-rs checks
//! PKCS#1 v1.5 with SHA-1 and SHA-2 first (the `rsa` crate's pure-Rust
//! arithmetic is most of an RSA-heavy keybox's CPU), and only a signature
//! aws-lc-rs verifies counts there; anything else goes to the `pgp`
//! crate's own check, so no verdict depends on the fast path.

use pgp::errors::Error;
use pgp::packet::{PublicKey, PublicSubkey, Signature};
use pgp::ser::Serialize;
use pgp::types::{
    Fingerprint, KeyDetails, KeyId, KeyVersion, PublicParams, SignatureBytes, Tag, Timestamp, VerifyingKey,
};

use super::keyblock::{key_id_bytes, Component, Keyblock};

/// A key that can verify: a primary key or a subkey.
#[derive(Clone, Copy)]
pub enum SignerKey<'a> {
    /// A primary key.
    Primary(&'a PublicKey),
    /// A subkey.
    Sub(&'a PublicSubkey),
}

impl<'a> SignerKey<'a> {
    /// The key of `kb` (primary or subkey) whose key id is `kid`.
    pub fn find(kb: &'a Keyblock, kid: &[u8; 8]) -> Option<Self> {
        if let Some(p) = kb.primary.as_deref() {
            if key_id_bytes(p.legacy_key_id().as_ref()) == *kid {
                return Some(Self::Primary(p));
            }
        }
        kb.groups.iter().find_map(|g| match &g.component {
            Component::Subkey(Some(k)) if key_id_bytes(k.legacy_key_id().as_ref()) == *kid => {
                Some(Self::Sub(k.as_ref()))
            }
            _ => None,
        })
    }
}

/// How a verification ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The signature is good.
    Good,
    /// The signature does not verify.
    Bad,
    /// It cannot be checked (unsupported algorithm, wrong class, …), with
    /// gpg's words where it has them.
    Error(String),
}

/// Verify `sig`, attached to `component` of the keyblock whose primary
/// key is `primary`, with `signer`.
pub fn verify(primary: &PublicKey, component: &Component, sig: &Signature, signer: SignerKey<'_>) -> Verdict {
    let class = sig.typ().map_or(0, u8::from);
    macro_rules! with_signer {
        ($k:ident => $e:expr) => {
            match signer {
                SignerKey::Primary(key) => {
                    let $k = &Checked { key, first: rsa_verified_fast };
                    $e
                }
                SignerKey::Sub(key) => {
                    let $k = &Checked { key, first: rsa_verified_fast };
                    $e
                }
            }
        };
    }
    let r = match (component, class) {
        (Component::Key, 0x1F | 0x20) => with_signer!(k => sig.verify_key_third_party(primary, k)),
        (Component::Uid(u), 0x10..=0x13 | 0x30) => {
            with_signer!(k => sig.verify_third_party_certification(primary, k, Tag::UserId, u))
        }
        (Component::Uat(u), 0x10..=0x13 | 0x30) => {
            with_signer!(k => sig.verify_third_party_certification(primary, k, Tag::UserAttribute, u))
        }
        (Component::Subkey(Some(sub)), 0x18 | 0x28) => with_signer!(k => sig.verify_subkey_binding(k, sub.as_ref())),
        (Component::Subkey(None), 0x18 | 0x28) => return Verdict::Error("Unknown public key algorithm".into()),
        _ => return Verdict::Error("Invalid signature class".into()),
    };
    match r {
        Ok(()) => Verdict::Good,
        Err(e) => classify(&e),
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

/// A signer's key with a check tried first (`first`: key parameters,
/// hash, digest, signature): a signature it accepts is good, anything else
/// gets the key's own verdict. Everything but `verify` is the key's.
struct Checked<'a, K, C> {
    key: &'a K,
    first: C,
}

impl<K: std::fmt::Debug, C> std::fmt::Debug for Checked<'_, K, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Checked").field(self.key).finish()
    }
}

impl<K: KeyDetails, C> KeyDetails for Checked<'_, K, C> {
    fn version(&self) -> KeyVersion {
        self.key.version()
    }
    fn legacy_key_id(&self) -> KeyId {
        self.key.legacy_key_id()
    }
    fn fingerprint(&self) -> Fingerprint {
        self.key.fingerprint()
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

impl<K, C> VerifyingKey for Checked<'_, K, C>
where
    K: VerifyingKey,
    C: Fn(&PublicParams, pgp::crypto::hash::HashAlgorithm, &[u8], &SignatureBytes) -> bool,
{
    fn verify(
        &self,
        hash: pgp::crypto::hash::HashAlgorithm,
        digest: &[u8],
        sig: &SignatureBytes,
    ) -> pgp::errors::Result<()> {
        if (self.first)(self.key.public_params(), hash, digest, sig) {
            return Ok(());
        }
        self.key.verify(hash, digest, sig)
    }
}

impl<K: Serialize, C> Serialize for Checked<'_, K, C> {
    fn to_writer<W: std::io::Write>(&self, w: &mut W) -> pgp::errors::Result<()> {
        self.key.to_writer(w)
    }
    fn write_len(&self) -> usize {
        self.key.write_len()
    }
}

/// Whether aws-lc-rs verifies an RSA PKCS#1 v1.5 signature over `digest`;
/// `false` also for other keys, hashes and anything it does not take.
fn rsa_verified_fast(
    params: &PublicParams,
    hash: pgp::crypto::hash::HashAlgorithm,
    digest: &[u8],
    sig: &SignatureBytes,
) -> bool {
    use crate::validate::sigverify::{aws_rsa_pkcs1, Hash};
    use aws_lc_rs::{digest as d, signature as aws};
    use pgp::crypto::hash::HashAlgorithm as H;
    use rsa::pkcs1::EncodeRsaPublicKey;
    use rsa::traits::PublicKeyParts;
    let PublicParams::RSA(rsa) = params else { return false };
    let hash = match hash {
        H::Sha1 => Hash::Sha1,
        H::Sha256 => Hash::Sha256,
        H::Sha384 => Hash::Sha384,
        H::Sha512 => Hash::Sha512,
        _ => return false,
    };
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
    let (Ok(der), Ok(digest)) = (rsa.key.to_pkcs1_der(), d::Digest::import_less_safe(digest, digest_alg)) else {
        return false;
    };
    aws::UnparsedPublicKey::new(algorithm, der.as_bytes()).verify_digest(&digest, &padded).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::openpgp::{make_key, KeySpec};
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
        let key = crate::gen::openpgp::decode(&block.bytes);
        let (user, sig) = (&key.details.users[0].id, &key.details.users[0].signatures[1]);
        let bob_key = bob.primary.public_key();
        // A first check that only remembers the digest the pgp crate hands the key.
        let seen: RefCell<Option<Seen>> = RefCell::new(None);
        let remember = |_: &PublicParams, hash, digest: &[u8], sig: &SignatureBytes| {
            *seen.borrow_mut() = Some((hash, digest.to_vec(), sig.clone()));
            false
        };
        let capture = Checked { key: bob_key, first: remember };
        sig.verify_third_party_certification(&key.primary_key, &capture, Tag::UserId, user).unwrap();
        let (hash, digest, bytes) = seen.take().expect("the pgp crate asked the key");
        assert!(rsa_verified_fast(bob_key.public_params(), hash, &digest, &bytes), "a good RSA signature");
        let mut wrong = digest.clone();
        wrong[0] ^= 1;
        assert!(!rsa_verified_fast(bob_key.public_params(), hash, &wrong, &bytes), "another digest");
        assert!(!rsa_verified_fast(key.primary_key.public_params(), hash, &digest, &bytes), "not an RSA key");
        // Through verify(): good, and bad once the certified user id changes.
        let component = Component::Uid(key.details.users[0].id.clone());
        assert_eq!(verify(&key.primary_key, &component, sig, SignerKey::Primary(bob_key)), Verdict::Good);
        let other = pgp::packet::UserId::from_str(Default::default(), "Mallory <m@example.org>").unwrap();
        assert_eq!(verify(&key.primary_key, &Component::Uid(other), sig, SignerKey::Primary(bob_key)), Verdict::Bad);
    }
}
