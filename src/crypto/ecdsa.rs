//! ECDSA on every curve gpgsm and gpg verify, each through its RustCrypto
//! crate (NIST P-192 to P-384, secp256k1 with a "high" s taken as
//! libgcrypt takes it, brainpoolP256r1/P384r1 and the in-tree
//! brainpoolP512r1, [`super::bp512`]).

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
pub(crate) fn verify_ecdsa(curve: &str, point: &[u8], digest: &[u8], r: &[u8], s: &[u8]) -> bool {
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
pub(crate) fn fit_left(n: &[u8], len: usize) -> Option<Vec<u8>> {
    let n = &n[n.iter().position(|&b| b != 0).unwrap_or(n.len())..];
    (n.len() <= len).then(|| {
        let mut v = vec![0u8; len - n.len()];
        v.extend_from_slice(n);
        v
    })
}
