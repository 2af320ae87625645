//! Certificate signature checks with exactly the algorithms gpgsm 2.2.40
//! (libksba + libgcrypt) verifies, found by importing certificates of each
//! algorithm into a live gpgsm:
//!
//! * RSA PKCS#1 v1.5 with MD5, SHA-1, RIPEMD-160, SHA-256, SHA-384 and
//!   SHA-512 (any key size). `sha224WithRSAEncryption` is refused
//!   ("General error").
//! * RSA-PSS (`rsassaPss` with an `rsaEncryption` key) when the parameters
//!   name SHA-256, SHA-384 or SHA-512, MGF1 with the same hash and a salt
//!   as long as the hash; defaulted (SHA-1) parameters, another salt or
//!   MGF hash, and `rsassaPss` keys are refused.
//! * ECDSA with SHA-1 or SHA-2 on NIST P-192/224/256/384, secp256k1 and
//!   brainpoolP256r1/P384r1/P512r1 (any hash on any curve). P-521 is
//!   refused ("Internal error"). kbxscope verifies each curve with its
//!   RustCrypto crate; brainpoolP512r1, which has none, with
//!   [`crate::crypto`].
//! * DSA, Ed25519 and Ed448 are refused ("General error").
//!
//! gpgsm reports every refusal as a bad signature, so a refusal here is
//! `false` like a signature that does not verify.
//!
//! Speed: the common cases (RSA PKCS#1 v1.5 with SHA-1 or SHA-2 and keys
//! of 1024 to 8192 bits, ECDSA on P-256 with SHA-1 or SHA-2 but SHA-224,
//! on P-384 with SHA-256, SHA-384 or SHA-512) are tried first with aws-lc-rs (already built for
//! x509-parser), many times faster than the pure-Rust crates. Only a
//! signature it verifies counts as verified there; anything else (a key
//! size or exponent it does not take, a bad signature) goes to the crates
//! above, so the verdicts are theirs.

use rsa::{BigUint, RsaPublicKey};
use x509_parser::prelude::{AlgorithmIdentifier, FromDer, SubjectPublicKeyInfo};
use x509_parser::public_key::PublicKey;
use x509_parser::signature_algorithm::RsaSsaPssParams;

use crate::crypto::tally::{self, Verified};
use crate::crypto::{aws_rsa_pkcs1, fit_left, verify_ecdsa, verify_pss, Hash};

/// What a signature algorithm OID asks for, as gpgsm 2.2.40 accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scheme {
    /// RSA PKCS#1 v1.5 with this hash.
    Pkcs1(Hash),
    /// RSA-PSS with this hash for message and MGF1, salt of its length.
    Pss(Hash),
    /// ECDSA with this hash.
    Ecdsa(Hash),
}

const RSA_ENCRYPTION: &str = "1.2.840.113549.1.1.1";
const EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";

impl Scheme {
    /// The scheme of a signature algorithm, or `None` if gpgsm 2.2.40
    /// refuses it.
    pub(super) fn of(algorithm: &AlgorithmIdentifier<'_>) -> Option<Self> {
        let oid = algorithm.algorithm.to_id_string();
        Some(match oid.as_str() {
            "1.2.840.113549.1.1.4" => Scheme::Pkcs1(Hash::Md5),
            "1.2.840.113549.1.1.5" => Scheme::Pkcs1(Hash::Sha1),
            "1.3.36.3.3.1.2" => Scheme::Pkcs1(Hash::Ripemd160),
            "1.2.840.113549.1.1.11" => Scheme::Pkcs1(Hash::Sha256),
            "1.2.840.113549.1.1.12" => Scheme::Pkcs1(Hash::Sha384),
            "1.2.840.113549.1.1.13" => Scheme::Pkcs1(Hash::Sha512),
            "1.2.840.113549.1.1.10" => Scheme::Pss(pss_hash(algorithm)?),
            "1.2.840.10045.4.1" => Scheme::Ecdsa(Hash::Sha1),
            "1.2.840.10045.4.3.1" => Scheme::Ecdsa(Hash::Sha224),
            "1.2.840.10045.4.3.2" => Scheme::Ecdsa(Hash::Sha256),
            "1.2.840.10045.4.3.3" => Scheme::Ecdsa(Hash::Sha384),
            "1.2.840.10045.4.3.4" => Scheme::Ecdsa(Hash::Sha512),
            _ => return None,
        })
    }
}

/// The hash of RSA-PSS parameters gpgsm accepts (see the module doc).
fn pss_hash(algorithm: &AlgorithmIdentifier<'_>) -> Option<Hash> {
    let params = RsaSsaPssParams::try_from(algorithm.parameters()?).ok()?;
    let hash = Hash::by_oid(&params.hash_algorithm()?.algorithm.to_id_string())?;
    let mgf = params.mask_gen_algorithm().ok()?;
    let salt = params.salt_length() as usize;
    let ok = matches!(hash, Hash::Sha256 | Hash::Sha384 | Hash::Sha512)
        && mgf.mgf.to_id_string() == "1.2.840.113549.1.1.8"
        && Hash::by_oid(&mgf.hash.to_id_string()) == Some(hash)
        && salt == hash.digest(b"").len()
        && params.trailer_field() == 1;
    ok.then_some(hash)
}

/// Whether the key `spki` verifies `signature` (the BIT STRING's bytes)
/// over `signed` with `algorithm`, as gpgsm 2.2.40 would decide.
pub(super) fn verify(
    spki: &SubjectPublicKeyInfo<'_>,
    algorithm: &AlgorithmIdentifier<'_>,
    signature: &[u8],
    signed: &[u8],
) -> bool {
    let Some(scheme) = Scheme::of(algorithm) else { return false };
    let key_alg = spki.algorithm.algorithm.to_id_string();
    tally::count(class(spki, &key_alg));
    if verified_fast(spki, &key_alg, scheme, signature, signed) {
        return true;
    }
    match scheme {
        Scheme::Pkcs1(hash) | Scheme::Pss(hash) if key_alg == RSA_ENCRYPTION => {
            let Ok(PublicKey::RSA(rsa)) = spki.parsed() else { return false };
            let n = BigUint::from_bytes_be(rsa.modulus);
            let Ok(key) = RsaPublicKey::new_with_max_size(n, BigUint::from_bytes_be(rsa.exponent), 16384) else {
                return false;
            };
            let Some(sig) = fit_left(signature, rsa::traits::PublicKeyParts::size(&key)) else { return false };
            let digest = hash.digest(signed);
            match scheme {
                Scheme::Pkcs1(_) => key.verify(hash.pkcs1(), &digest, &sig).is_ok(),
                _ => verify_pss(&key, hash, &digest, &sig),
            }
        }
        Scheme::Ecdsa(hash) if key_alg == EC_PUBLIC_KEY => {
            let Some(curve) = spki.algorithm.parameters().and_then(|p| p.as_oid().ok()).map(|o| o.to_id_string())
            else {
                return false;
            };
            let Some((r, s)) = ecdsa_der(signature) else { return false };
            verify_ecdsa(&curve, spki.subject_public_key.as_ref(), &hash.digest(signed), r, s)
        }
        _ => false,
    }
}

/// What a verification with `spki` costs like.
fn class(spki: &SubjectPublicKeyInfo<'_>, key_alg: &str) -> Verified {
    match key_alg {
        RSA_ENCRYPTION => match spki.parsed() {
            Ok(PublicKey::RSA(rsa)) => {
                let modulus = rsa.modulus;
                Verified::rsa(modulus.len() - modulus.iter().take_while(|b| **b == 0).count())
            }
            _ => Verified::Other,
        },
        EC_PUBLIC_KEY => match spki.algorithm.parameters().and_then(|p| p.as_oid().ok()).map(|o| o.to_id_string()) {
            Some(c) if c == "1.2.840.10045.3.1.7" => Verified::P256,
            Some(c) if c == "1.3.132.0.34" => Verified::P384,
            _ => Verified::EcdsaOther,
        },
        _ => Verified::Other,
    }
}

/// Whether aws-lc-rs verifies the signature, for the schemes it shares with
/// gpgsm; `false` also when it does not take the key or scheme.
fn verified_fast(
    spki: &SubjectPublicKeyInfo<'_>,
    key_alg: &str,
    scheme: Scheme,
    signature: &[u8],
    signed: &[u8],
) -> bool {
    use aws_lc_rs::signature as aws;
    let algorithm: &dyn aws::VerificationAlgorithm = match (scheme, key_alg) {
        (Scheme::Pkcs1(hash), RSA_ENCRYPTION) => match aws_rsa_pkcs1(hash) {
            Some((params, _)) => params,
            None => return false,
        },
        (Scheme::Ecdsa(hash), EC_PUBLIC_KEY) => {
            let curve = spki.algorithm.parameters().and_then(|p| p.as_oid().ok()).map(|o| o.to_id_string());
            match (curve.as_deref(), hash) {
                (Some("1.2.840.10045.3.1.7"), Hash::Sha1) => &aws::ECDSA_P256_SHA1_ASN1,
                (Some("1.2.840.10045.3.1.7"), Hash::Sha256) => &aws::ECDSA_P256_SHA256_ASN1,
                (Some("1.2.840.10045.3.1.7"), Hash::Sha384) => &aws::ECDSA_P256_SHA384_ASN1,
                (Some("1.2.840.10045.3.1.7"), Hash::Sha512) => &aws::ECDSA_P256_SHA512_ASN1,
                (Some("1.3.132.0.34"), Hash::Sha256) => &aws::ECDSA_P384_SHA256_ASN1,
                (Some("1.3.132.0.34"), Hash::Sha384) => &aws::ECDSA_P384_SHA384_ASN1,
                (Some("1.3.132.0.34"), Hash::Sha512) => &aws::ECDSA_P384_SHA512_ASN1,
                _ => return false,
            }
        }
        _ => return false,
    };
    aws::UnparsedPublicKey::new(algorithm, spki.subject_public_key.as_ref()).verify(signed, signature).is_ok()
}

/// `(r, s)` of an ECDSA signature `SEQUENCE { INTEGER r, INTEGER s }`.
fn ecdsa_der(sig: &[u8]) -> Option<(&[u8], &[u8])> {
    let (tag, body, _) = der_tlv(sig)?;
    let (rtag, r, rest) = der_tlv(body)?;
    let (stag, s, _) = der_tlv(rest)?;
    (tag == 0x30 && rtag == 0x02 && stag == 0x02).then_some((r, s))
}

/// One DER TLV at the start of `b`: (tag, value, rest).
fn der_tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, b) = b.split_first()?;
    let (&first, b) = b.split_first()?;
    let (len, b) = if first < 0x80 {
        (first as usize, b)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 2 || b.len() < n {
            return None;
        }
        (b[..n].iter().fold(0usize, |a, &x| a << 8 | x as usize), &b[n..])
    };
    (b.len() >= len).then(|| (tag, &b[..len], &b[len..]))
}

/// Decode `spki` and `algorithm` (DER) and verify the signature as gpgsm would.
pub fn verify_der(spki: &[u8], algorithm: &[u8], signature: &[u8], signed: &[u8]) -> bool {
    let (Ok((_, key)), Ok((_, alg))) = (SubjectPublicKeyInfo::from_der(spki), AlgorithmIdentifier::from_der(algorithm))
    else {
        return false;
    };
    verify(&key, &alg, signature, signed)
}
