//! RSA checks both protocols share: aws-lc-rs's PKCS#1 v1.5 parameters
//! (the fast path, tried first; only a signature it verifies counts there)
//! and RSA-PSS through the `rsa` crate.

use rsa::{BigUint, Pss, RsaPublicKey};
use sha2::{Sha256, Sha384, Sha512};

use super::Hash;

/// aws-lc-rs's RSA PKCS#1 v1.5 verification with `hash` (keys from 1024
/// bits, as gpgsm and gpg take them; aws-lc-rs has SHA-384 from 2048 only)
/// and its digest algorithm; `None` for hashes aws-lc-rs does not pair
/// with PKCS#1. The fast paths of X.509 and OpenPGP checks both use it.
pub(crate) fn aws_rsa_pkcs1(
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

/// RSA-PSS over `digest` with MGF1 of the same hash and a salt as long
/// as the digest (the only form gpgsm takes); `false` for other hashes.
pub(crate) fn verify_pss(key: &RsaPublicKey, hash: Hash, digest: &[u8], sig: &[u8]) -> bool {
    let len = digest.len();
    let pss = match hash {
        Hash::Sha256 => Pss::new_with_salt::<Sha256>(len),
        Hash::Sha384 => Pss::new_with_salt::<Sha384>(len),
        Hash::Sha512 => Pss::new_with_salt::<Sha512>(len),
        _ => return false,
    };
    key.verify(pss, digest, sig).is_ok()
}

/// The largest RSA key gpg takes (libgcrypt's limit), in bits.
const GNUPG_MAX_RSA_BITS: usize = 16384;

/// RSA PKCS#1 v1.5 over `digest` with the key of modulus `n` and exponent
/// `e` (big-endian), up to 16384 bits as gpg takes them (aws-lc-rs and the
/// `rsa` crate's default stop at 8192 and 4096); `None` for a key the
/// `rsa` crate refuses.
pub(crate) fn verify_pkcs1_large(n: &[u8], e: &[u8], hash: Hash, digest: &[u8], sig: &[u8]) -> Option<bool> {
    let key = RsaPublicKey::new_with_max_size(BigUint::from_bytes_be(n), BigUint::from_bytes_be(e), GNUPG_MAX_RSA_BITS)
        .ok()?;
    Some(key.verify(hash.pkcs1(), digest, sig).is_ok())
}

/// One RSA key's aws-lc-rs keys, parsed on first use, one per hash
/// (aws-lc-rs binds a parsed key to its algorithm). A parsed key keeps its
/// Montgomery arithmetic, which aws-lc sets up again for every unparsed
/// one: a signer that verifies many signatures pays for it once.
#[derive(Default, Clone)]
pub(crate) struct ParsedRsa {
    parsed: [std::sync::OnceLock<Option<aws_lc_rs::signature::ParsedPublicKey>>; 4],
}

impl std::fmt::Debug for ParsedRsa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ParsedRsa")
    }
}

impl ParsedRsa {
    /// Verify a PKCS#1 v1.5 `sig` (as long as the modulus) over `digest`
    /// with the key whose PKCS#1 DER `der` makes (asked for once per
    /// hash); `None` for a hash aws-lc-rs does not pair with PKCS#1 or a
    /// key it refuses.
    pub(crate) fn verify(
        &self,
        hash: Hash,
        der: impl FnOnce() -> Option<Vec<u8>>,
        digest: &[u8],
        sig: &[u8],
    ) -> Option<bool> {
        let slot = match hash {
            Hash::Sha1 => 0,
            Hash::Sha256 => 1,
            Hash::Sha384 => 2,
            Hash::Sha512 => 3,
            _ => return None,
        };
        let (algorithm, digest_alg) = aws_rsa_pkcs1(hash)?;
        let key = self.parsed[slot]
            .get_or_init(|| aws_lc_rs::signature::ParsedPublicKey::new(algorithm, der()?).ok())
            .as_ref()?;
        let digest = aws_lc_rs::digest::Digest::import_less_safe(digest, digest_alg).ok()?;
        Some(key.verify_digest_sig(&digest, sig).is_ok())
    }
}
