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
//!   [`super::bp512`].
//! * DSA, Ed25519 and Ed448 are refused ("General error").
//!
//! gpgsm reports every refusal as a bad signature, so a refusal here is
//! `false` like a signature that does not verify.
//!
//! Speed: the common cases (RSA PKCS#1 v1.5 with SHA-1 or SHA-2 and keys
//! of 1024 to 8192 bits, ECDSA on P-256 and P-384 with SHA-256 or
//! SHA-384) are tried first with aws-lc-rs (already built for
//! x509-parser), many times faster than the pure-Rust crates. Only a
//! signature it verifies counts as verified there; anything else (a key
//! size or exponent it does not take, a bad signature) goes to the crates
//! above, so the verdicts are theirs.

use md5::Md5;
use ripemd::Ripemd160;
use rsa::{BigUint, Pkcs1v15Sign, Pss, RsaPublicKey};
use sha1::Sha1;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};
use x509_parser::prelude::{AlgorithmIdentifier, FromDer, SubjectPublicKeyInfo};
use x509_parser::public_key::PublicKey;
use x509_parser::signature_algorithm::RsaSsaPssParams;

/// The digests certificate signatures use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    /// MD5.
    Md5,
    /// SHA-1.
    Sha1,
    /// RIPEMD-160.
    Ripemd160,
    /// SHA-224.
    Sha224,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl Hash {
    /// The digest of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Md5 => Md5::digest(data).to_vec(),
            Hash::Sha1 => Sha1::digest(data).to_vec(),
            Hash::Ripemd160 => Ripemd160::digest(data).to_vec(),
            Hash::Sha224 => Sha224::digest(data).to_vec(),
            Hash::Sha256 => Sha256::digest(data).to_vec(),
            Hash::Sha384 => Sha384::digest(data).to_vec(),
            Hash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// The hash with this dotted digest-algorithm OID.
    fn by_oid(oid: &str) -> Option<Self> {
        Some(match oid {
            "1.2.840.113549.2.5" => Hash::Md5,
            "1.3.14.3.2.26" => Hash::Sha1,
            "1.3.36.3.2.1" => Hash::Ripemd160,
            "2.16.840.1.101.3.4.2.4" => Hash::Sha224,
            "2.16.840.1.101.3.4.2.1" => Hash::Sha256,
            "2.16.840.1.101.3.4.2.2" => Hash::Sha384,
            "2.16.840.1.101.3.4.2.3" => Hash::Sha512,
            _ => return None,
        })
    }

    fn pkcs1(self) -> Pkcs1v15Sign {
        match self {
            Hash::Md5 => Pkcs1v15Sign::new::<Md5>(),
            Hash::Sha1 => Pkcs1v15Sign::new::<Sha1>(),
            Hash::Ripemd160 => Pkcs1v15Sign::new::<Ripemd160>(),
            Hash::Sha224 => Pkcs1v15Sign::new::<Sha224>(),
            Hash::Sha256 => Pkcs1v15Sign::new::<Sha256>(),
            Hash::Sha384 => Pkcs1v15Sign::new::<Sha384>(),
            Hash::Sha512 => Pkcs1v15Sign::new::<Sha512>(),
        }
    }
}

/// What a signature algorithm OID asks for, as gpgsm 2.2.40 accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
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
    pub fn of(algorithm: &AlgorithmIdentifier<'_>) -> Option<Self> {
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
pub fn verify(
    spki: &SubjectPublicKeyInfo<'_>,
    algorithm: &AlgorithmIdentifier<'_>,
    signature: &[u8],
    signed: &[u8],
) -> bool {
    let Some(scheme) = Scheme::of(algorithm) else { return false };
    let key_alg = spki.algorithm.algorithm.to_id_string();
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

/// aws-lc-rs's RSA PKCS#1 v1.5 verification with `hash` (keys from 1024
/// bits, as gpgsm and gpg take them; aws-lc-rs has SHA-384 from 2048 only)
/// and its digest algorithm; `None` for hashes aws-lc-rs does not pair
/// with PKCS#1. The fast paths of X.509 and OpenPGP checks both use it.
pub fn aws_rsa_pkcs1(
    hash: Hash,
) -> Option<(&'static aws_lc_rs::signature::RsaParameters, &'static aws_lc_rs::digest::Algorithm)> {
    use aws_lc_rs::{digest as d, signature as aws};
    Some(match hash {
        Hash::Sha1 => (&aws::RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY, &d::SHA1_FOR_LEGACY_USE_ONLY),
        Hash::Sha256 => (&aws::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY, &d::SHA256),
        Hash::Sha384 => (&aws::RSA_PKCS1_2048_8192_SHA384, &d::SHA384),
        Hash::Sha512 => (&aws::RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY, &d::SHA512),
        _ => return None,
    })
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
                (Some("1.2.840.10045.3.1.7"), Hash::Sha256) => &aws::ECDSA_P256_SHA256_ASN1,
                (Some("1.2.840.10045.3.1.7"), Hash::Sha384) => &aws::ECDSA_P256_SHA384_ASN1,
                (Some("1.3.132.0.34"), Hash::Sha256) => &aws::ECDSA_P384_SHA256_ASN1,
                (Some("1.3.132.0.34"), Hash::Sha384) => &aws::ECDSA_P384_SHA384_ASN1,
                _ => return false,
            }
        }
        _ => return false,
    };
    aws::UnparsedPublicKey::new(algorithm, spki.subject_public_key.as_ref()).verify(signed, signature).is_ok()
}

fn verify_pss(key: &RsaPublicKey, hash: Hash, digest: &[u8], sig: &[u8]) -> bool {
    let len = digest.len();
    let pss = match hash {
        Hash::Sha256 => Pss::new_with_salt::<Sha256>(len),
        Hash::Sha384 => Pss::new_with_salt::<Sha384>(len),
        Hash::Sha512 => Pss::new_with_salt::<Sha512>(len),
        _ => return false,
    };
    key.verify(pss, digest, sig).is_ok()
}

/// ECDSA verification of `(r, s)` over `digest` with the key `point`
/// (SEC1), on one RustCrypto curve: `$ecdsa` is that curve's generation
/// of the `ecdsa` crate, `$curve` the curve type, `$size` its order's
/// length in bytes. With `low_s` first, a "high" s is replaced by its
/// negation before the check (the same signature to ECDSA and to
/// libgcrypt; `k256` alone refuses the high form).
macro_rules! ecdsa_verify {
    (low_s $ecdsa:path, $curve:ty, $size:expr, $point:expr, $digest:expr, $r:expr, $s:expr) => {{
        ecdsa_verify!(@ $ecdsa, $curve, $size, $point, $digest, $r, $s, |sig: ecdsa::Signature<$curve>| sig
            .normalize_s()
            .unwrap_or(sig))
    }};
    ($ecdsa:path, $curve:ty, $size:expr, $point:expr, $digest:expr, $r:expr, $s:expr) => {{
        ecdsa_verify!(@ $ecdsa, $curve, $size, $point, $digest, $r, $s, |sig| sig)
    }};
    (@ $ecdsa:path, $curve:ty, $size:expr, $point:expr, $digest:expr, $r:expr, $s:expr, $normal:expr) => {{
        use ecdsa::signature::hazmat::PrehashVerifier;
        use $ecdsa as ecdsa;
        let (Some(r), Some(s)) = (fit_left($r, $size), fit_left($s, $size)) else { return false };
        let (Ok(key), Ok(sig)) = (
            ecdsa::VerifyingKey::<$curve>::from_sec1_bytes($point),
            ecdsa::Signature::<$curve>::from_slice(&[r, s].concat()),
        ) else {
            return false;
        };
        key.verify_prehash(&prehash($digest, $size), &$normal(sig)).is_ok()
    }};
}

/// ECDSA on the curve with dotted OID `curve`, each with its RustCrypto
/// crate (brainpoolP512r1 with [`super::bp512`]): `(r, s)` over `digest`
/// with the SEC1 point `point`. gpgsm and gpg share it.
pub fn verify_ecdsa(curve: &str, point: &[u8], digest: &[u8], r: &[u8], s: &[u8]) -> bool {
    match curve {
        "1.2.840.10045.3.1.1" => ecdsa_verify!(ecdsa_016, p192::NistP192, 24, point, digest, r, s),
        "1.3.132.0.33" => ecdsa_verify!(ecdsa_016, p224::NistP224, 28, point, digest, r, s),
        "1.2.840.10045.3.1.7" => ecdsa_verify!(ecdsa_016, p256::NistP256, 32, point, digest, r, s),
        "1.3.132.0.34" => ecdsa_verify!(ecdsa_016, p384::NistP384, 48, point, digest, r, s),
        "1.3.132.0.10" => ecdsa_verify!(low_s ecdsa_016, k256::Secp256k1, 32, point, digest, r, s),
        "1.3.36.3.3.2.8.1.1.7" => ecdsa_verify!(ecdsa_017, bp256::BrainpoolP256r1, 32, point, digest, r, s),
        "1.3.36.3.3.2.8.1.1.11" => ecdsa_verify!(ecdsa_017, bp384::BrainpoolP384r1, 48, point, digest, r, s),
        "1.3.36.3.3.2.8.1.1.13" => ecdsa_verify!(ecdsa_017, super::bp512::BrainpoolP512r1, 64, point, digest, r, s),
        _ => false,
    }
}

/// A digest as ECDSA on a curve of `size`-byte order takes it: its
/// leftmost `size` bytes, or left-padded with zeros (the same integer).
fn prehash(digest: &[u8], size: usize) -> Vec<u8> {
    if digest.len() >= size {
        digest[..size].to_vec()
    } else {
        let mut v = vec![0u8; size - digest.len()];
        v.extend_from_slice(digest);
        v
    }
}

/// A big-endian number as exactly `len` bytes (leading zeros added or
/// dropped), `None` if it does not fit.
fn fit_left(n: &[u8], len: usize) -> Option<Vec<u8>> {
    let n = &n[n.iter().position(|&b| b != 0).unwrap_or(n.len())..];
    (n.len() <= len).then(|| {
        let mut v = vec![0u8; len - n.len()];
        v.extend_from_slice(n);
        v
    })
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

/// Decode `spki` and `algorithm` (DER) and [`verify`].
pub fn verify_der(spki: &[u8], algorithm: &[u8], signature: &[u8], signed: &[u8]) -> bool {
    let (Ok((_, key)), Ok((_, alg))) = (SubjectPublicKeyInfo::from_der(spki), AlgorithmIdentifier::from_der(algorithm))
    else {
        return false;
    };
    verify(&key, &alg, signature, signed)
}
