//! How many signatures the process verified, by algorithm and key size,
//! and how many verdicts it took from GnuPG's signature cache instead: the
//! counts the cost model in BENCHMARKS multiplies by each algorithm's
//! measured cost. One relaxed atomic add per verification (a few thousand
//! to a few tens of thousands a run), from any thread.

use std::sync::atomic::{AtomicU64, Ordering};

/// A class of signature verification, by what its cost depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    /// RSA with a modulus of up to 1024 bits.
    Rsa1024,
    /// RSA, 1025–2048 bits.
    Rsa2048,
    /// RSA, 2049–3072 bits.
    Rsa3072,
    /// RSA, 3073–4096 bits.
    Rsa4096,
    /// RSA above 4096 bits.
    RsaLarger,
    /// ECDSA on NIST P-256.
    P256,
    /// ECDSA on NIST P-384.
    P384,
    /// ECDSA on any other curve.
    EcdsaOther,
    /// EdDSA on Ed25519.
    Ed25519,
    /// EdDSA on Ed448.
    Ed448,
    /// DSA or anything else.
    Other,
}

impl Verified {
    /// Every class, in report order.
    pub const ALL: [Verified; 11] = [
        Self::Rsa1024,
        Self::Rsa2048,
        Self::Rsa3072,
        Self::Rsa4096,
        Self::RsaLarger,
        Self::P256,
        Self::P384,
        Self::EcdsaOther,
        Self::Ed25519,
        Self::Ed448,
        Self::Other,
    ];

    /// The class of an RSA key with a modulus of `bytes` bytes.
    pub fn rsa(bytes: usize) -> Self {
        match bytes * 8 {
            0..=1024 => Self::Rsa1024,
            1025..=2048 => Self::Rsa2048,
            2049..=3072 => Self::Rsa3072,
            3073..=4096 => Self::Rsa4096,
            _ => Self::RsaLarger,
        }
    }

    /// The name reports use (`rsa-2048`, `p256`, `ed25519`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Rsa1024 => "rsa-1024",
            Self::Rsa2048 => "rsa-2048",
            Self::Rsa3072 => "rsa-3072",
            Self::Rsa4096 => "rsa-4096",
            Self::RsaLarger => "rsa-larger",
            Self::P256 => "p256",
            Self::P384 => "p384",
            Self::EcdsaOther => "ecdsa-other",
            Self::Ed25519 => "ed25519",
            Self::Ed448 => "ed448",
            Self::Other => "other",
        }
    }
}

static VERIFIED: [AtomicU64; Verified::ALL.len()] = [const { AtomicU64::new(0) }; Verified::ALL.len()];
static CACHED: AtomicU64 = AtomicU64::new(0);

/// Count one verification of class `v`.
pub fn count(v: Verified) {
    VERIFIED[v as usize].fetch_add(1, Ordering::Relaxed);
}

/// Count one verdict taken from GnuPG's signature cache (the ring-trust
/// packet after an OpenPGP signature) without verifying.
pub(crate) fn count_cached() {
    CACHED.fetch_add(1, Ordering::Relaxed);
}

/// What the process did with signatures so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signatures {
    /// Verifications, per class with a non-zero count, in [`Verified::ALL`] order.
    pub verified: Vec<(Verified, u64)>,
    /// Verdicts taken from GnuPG's signature cache.
    pub cached: u64,
}

impl Signatures {
    /// Verifications of every class.
    pub fn total_verified(&self) -> u64 {
        self.verified.iter().map(|c| c.1).sum()
    }
}

/// The counts so far; `None` while no signature was verified or taken
/// from the cache.
pub fn so_far() -> Option<Signatures> {
    let verified: Vec<(Verified, u64)> = Verified::ALL
        .into_iter()
        .map(|v| (v, VERIFIED[v as usize].load(Ordering::Relaxed)))
        .filter(|c| c.1 > 0)
        .collect();
    let cached = CACHED.load(Ordering::Relaxed);
    (!verified.is_empty() || cached > 0).then_some(Signatures { verified, cached })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_counts() {
        assert_eq!(Verified::rsa(256), Verified::Rsa2048);
        assert_eq!(Verified::rsa(257), Verified::Rsa3072);
        assert_eq!(Verified::rsa(512), Verified::Rsa4096);
        assert_eq!(Verified::rsa(128), Verified::Rsa1024);
        let ed448 =
            || so_far().and_then(|s| s.verified.into_iter().find(|c| c.0 == Verified::Ed448)).map_or(0, |c| c.1);
        let before = ed448();
        count(Verified::Ed448);
        let after = ed448();
        assert!(after > before);
        for (i, v) in Verified::ALL.into_iter().enumerate() {
            assert_eq!(v as usize, i, "{}", v.name());
        }
    }
}
