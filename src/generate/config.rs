//! What to generate: the presets and the options they stand for.

use super::signer::KeyKind;

/// Share of end entities whose authorityKeyIdentifier has the key id only
/// (the calibration knob; see `pki`'s module docs).
pub(super) const KEYID_ONLY_SHARE: f64 = 0.35;

/// A named set of options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// The seed's keybox: 1294 OpenPGP + 803 X.509, about 42 MiB.
    Seed,
    /// About 1/8 of the seed.
    Small,
    /// A few dozen blobs, for tests.
    Tiny,
}

impl Preset {
    /// The preset's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Seed => "seed",
            Self::Small => "small",
            Self::Tiny => "tiny",
        }
    }

    /// The options the preset stands for.
    pub fn config(self) -> GenConfig {
        let (openpgp, x509, target_size) = match self {
            Self::Seed => (1294, 803, 42 * 1024 * 1024),
            Self::Small => (162, 100, 42 * 1024 * 1024 / 8),
            Self::Tiny => (20, 16, 192 * 1024),
        };
        GenConfig { openpgp, x509, target_size, seed: 1, pki: Pki::Seed }
    }
}

/// Which keys and authorityKeyIdentifier forms the certificates get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pki {
    /// The built-in keybox's: roots RSA and P-384, issuing CAs mostly EC,
    /// end entities 75% P-256, 20% P-384, 5% RSA; 35% of the end entities
    /// name their issuer by key id alone (calibrated on the seed's reads).
    #[default]
    Seed,
    /// RSA-heavy: roots RSA-4096, RSA-2048, P-384 and P-256, issuing CAs
    /// mostly RSA, end entities 55% P-256, 15% P-384, 30% RSA-2048; half of
    /// them name their issuer by key id alone. A keybox unlike the
    /// built-in one for checking that a result is not the built-in
    /// keybox's alone.
    Mixed,
}

impl Pki {
    /// The key of root `i`.
    pub(super) fn root_key(self, i: usize) -> KeyKind {
        let keys = match self {
            Self::Seed => {
                [KeyKind::Rsa(4), KeyKind::P384, KeyKind::Rsa(2), KeyKind::P384, KeyKind::Rsa(3), KeyKind::P384]
            }
            Self::Mixed => {
                [KeyKind::Rsa(4), KeyKind::P384, KeyKind::Rsa(0), KeyKind::P256, KeyKind::Rsa(4), KeyKind::P384]
            }
        };
        keys[i % keys.len()]
    }

    /// The key of issuing CA `i`.
    pub(super) fn issuing_key(self, i: usize) -> KeyKind {
        let keys = match self {
            Self::Seed => {
                [KeyKind::P256, KeyKind::P384, KeyKind::Rsa(0), KeyKind::P256, KeyKind::Rsa(1), KeyKind::P384]
            }
            Self::Mixed => {
                [KeyKind::Rsa(1), KeyKind::Rsa(0), KeyKind::P256, KeyKind::Rsa(4), KeyKind::P384, KeyKind::Rsa(1)]
            }
        };
        keys[i % keys.len()]
    }

    /// The key of an end entity, for a draw in `0..100`.
    pub(super) fn leaf_key(self, draw: u32) -> KeyKind {
        match (self, draw) {
            (Self::Seed, 0..=74) | (Self::Mixed, 0..=54) => KeyKind::P256,
            (Self::Seed, 75..=94) | (Self::Mixed, 55..=69) => KeyKind::P384,
            (Self::Seed, _) => KeyKind::Rsa(0),
            (Self::Mixed, _) => KeyKind::Rsa(1),
        }
    }

    /// Share of end entities whose authorityKeyIdentifier has the key id only.
    pub(super) fn keyid_only_share(self) -> f64 {
        match self {
            Self::Seed => KEYID_ONLY_SHARE,
            Self::Mixed => 0.5,
        }
    }
}

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenConfig {
    /// Number of OpenPGP keys.
    pub openpgp: usize,
    /// Number of X.509 certificates written (roots, intermediates, end entities).
    pub x509: usize,
    /// The file size to aim at, in bytes; photo ids make up the difference.
    /// If the keys alone are larger, the file is larger.
    pub target_size: u64,
    /// Seed of the random stream.
    pub seed: u64,
    /// The certificates' keys and identifier forms.
    pub pki: Pki,
}
