//! What to generate: the presets and the options they stand for.

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
        GenConfig { openpgp, x509, target_size, seed: 1 }
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
}
