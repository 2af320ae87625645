//! X.509 signing keys for `rcgen`, with deterministic keys and signatures.
//!
//! rcgen's own key pairs use `ring`, which draws keys and ECDSA nonces from
//! the system's randomness: the same `--seed` would give different bytes.
//! These keys come from the generator's seeded RNG instead, and sign with
//! RustCrypto: ECDSA with RFC 6979 deterministic nonces, RSA with PKCS#1
//! v1.5 (deterministic by construction). RSA key generation is slow, so
//! RSA keys are taken from a few synthetic PKCS#8 keys shipped in
//! `src/generate/keys/` (made with `openssl genpkey`, used for nothing else).

use p256::ecdsa::signature::Signer;
use rand::{CryptoRng, RngCore};
use rcgen::{PublicKeyData, SignatureAlgorithm, SigningKey};
use rsa::pkcs1::EncodeRsaPublicKey;
use rsa::pkcs8::DecodePrivateKey;
use sha1::{Digest, Sha1};
use sha2::Sha256;

/// The synthetic RSA keys (PKCS#8 PEM), by size.
pub(crate) const RSA_KEYS: [&str; 5] = [
    include_str!("keys/rsa2048a.pem"),
    include_str!("keys/rsa2048b.pem"),
    include_str!("keys/rsa3072a.pem"),
    include_str!("keys/rsa3072b.pem"),
    include_str!("keys/rsa4096a.pem"),
];

/// Load synthetic RSA key `i` (modulo the number of keys).
///
/// # Panics
/// If a shipped key does not decode (a build defect, covered by a test).
pub fn rsa_key(i: usize) -> rsa::RsaPrivateKey {
    rsa::RsaPrivateKey::from_pkcs8_pem(RSA_KEYS[i % RSA_KEYS.len()]).expect("shipped RSA key decodes")
}

/// Which kind of key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// ECDSA on NIST P-256, signing with SHA-256.
    P256,
    /// ECDSA on NIST P-384, signing with SHA-384.
    P384,
    /// RSA (one of the shipped keys), signing with SHA-256.
    Rsa(usize),
}

enum Inner {
    P256(p256::ecdsa::SigningKey),
    P384(p384::ecdsa::SigningKey),
    Rsa(Box<rsa::pkcs1v15::SigningKey<Sha256>>),
}

/// A certificate key: public part for rcgen, deterministic signing.
pub(crate) struct CertKey {
    inner: Inner,
    public: Vec<u8>,
}

impl std::fmt::Debug for CertKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertKey").field("algorithm", &self.algorithm()).finish()
    }
}

impl CertKey {
    /// Make a key of `kind` from `rng`.
    pub(crate) fn generate(kind: KeyKind, rng: &mut (impl RngCore + CryptoRng)) -> Self {
        match kind {
            KeyKind::P256 => {
                let k = p256::ecdsa::SigningKey::random(rng);
                let public = k.verifying_key().to_encoded_point(false).as_bytes().to_vec();
                Self { inner: Inner::P256(k), public }
            }
            KeyKind::P384 => {
                let k = p384::ecdsa::SigningKey::random(rng);
                let public = k.verifying_key().to_encoded_point(false).as_bytes().to_vec();
                Self { inner: Inner::P384(k), public }
            }
            KeyKind::Rsa(i) => {
                let key = rsa_key(i);
                let public = key.to_public_key().to_pkcs1_der().expect("RSA public key encodes").as_bytes().to_vec();
                Self { inner: Inner::Rsa(Box::new(rsa::pkcs1v15::SigningKey::new(key))), public }
            }
        }
    }

    /// The subjectKeyIdentifier: SHA-1 of the public key bits (RFC 5280 §4.2.1.2, method 1).
    pub(crate) fn key_id(&self) -> Vec<u8> {
        Sha1::digest(&self.public).to_vec()
    }
}

impl PublicKeyData for CertKey {
    fn der_bytes(&self) -> &[u8] {
        &self.public
    }

    fn algorithm(&self) -> &'static SignatureAlgorithm {
        match self.inner {
            Inner::P256(_) => &rcgen::PKCS_ECDSA_P256_SHA256,
            Inner::P384(_) => &rcgen::PKCS_ECDSA_P384_SHA384,
            Inner::Rsa(_) => &rcgen::PKCS_RSA_SHA256,
        }
    }
}

impl SigningKey for CertKey {
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        Ok(match &self.inner {
            Inner::P256(k) => {
                let sig: p256::ecdsa::Signature = k.sign(msg);
                sig.to_der().as_bytes().to_vec()
            }
            Inner::P384(k) => {
                let sig: p384::ecdsa::Signature = k.sign(msg);
                sig.to_der().as_bytes().to_vec()
            }
            Inner::Rsa(k) => {
                let sig: rsa::pkcs1v15::Signature = k.sign(msg);
                rsa::signature::SignatureEncoding::to_vec(&sig)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn shipped_rsa_keys_decode() {
        let bits: Vec<usize> =
            (0..RSA_KEYS.len()).map(|i| rsa::traits::PublicKeyParts::n(&rsa_key(i)).bits()).collect();
        assert_eq!(bits, [2048, 2048, 3072, 3072, 4096]);
    }

    #[test]
    fn deterministic_keys_and_signatures() {
        for kind in [KeyKind::P256, KeyKind::P384, KeyKind::Rsa(0)] {
            let mut a = rand_chacha::ChaCha20Rng::seed_from_u64(7);
            let mut b = rand_chacha::ChaCha20Rng::seed_from_u64(7);
            let (ka, kb) = (CertKey::generate(kind, &mut a), CertKey::generate(kind, &mut b));
            assert_eq!(ka.der_bytes(), kb.der_bytes());
            assert_eq!(ka.sign(b"tbs").unwrap(), kb.sign(b"tbs").unwrap());
            assert_eq!(ka.key_id().len(), 20);
        }
    }
}
