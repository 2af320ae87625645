//! The seed: the sizes GnuPG's developers measured and their procmon
//! counts, shown beside kbxscope's on the built-in keybox.

use super::result::{SeedRow, SweepSize};
use crate::io::BufferSize;

/// The seed's measurement (procmon, Windows): N (KiB), file events, seconds.
pub(crate) const SEED_TABLE: [(u64, u64, f64); 7] = [
    (0, 4_900_000, 86.0),
    (16, 2_456_000, 58.0),
    (32, 1_233_000, 43.0),
    (64, 622_000, 37.0),
    (128, 317_000, 32.0),
    (256, 164_000, 31.0),
    (512, 88_000, 30.0),
];

/// The default sizes: the seed's.
pub fn default_sizes() -> Vec<SweepSize> {
    SEED_TABLE
        .iter()
        .map(|(k, _, _)| SweepSize {
            label: k.to_string(),
            size: BufferSize::from_gnupg_kib(*k).expect("seed sizes are valid"),
            api: None,
        })
        .collect()
}

/// The page-cache sizes a sweep of keyboxd's database runs at by default:
/// from 64 KiB to 32 MiB, with SQLite's (and so keyboxd's) default, 2000 KiB.
pub fn default_cache_sizes() -> Vec<SweepSize> {
    ["64k", "256k", "1M", "2000k", "8M", "32M"]
        .iter()
        .map(|k| SweepSize { label: k.to_string(), size: k.parse().expect("cache sizes are valid"), api: None })
        .collect()
}

/// The seed's row for a size label, if it is one of the seed's.
pub fn seed_row(label: &str) -> Option<SeedRow> {
    SEED_TABLE
        .iter()
        .find(|(k, _, _)| k.to_string() == label)
        .map(|(_, events, time_s)| SeedRow { events: *events, time_s: *time_s })
}
