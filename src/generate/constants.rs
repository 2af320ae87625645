//! The shape of every generated keybox: its dates, the signer pool and
//! the shares that calibrate it (see the module docs of `generate`).

/// Bumped whenever the same options would give different bytes; part of
/// the cached default keybox's file name.
pub const GENERATOR_VERSION: u32 = 2;

/// 2019-01-01T00:00:00Z: the first import into a generated keybox.
pub const FIRST_IMPORT: u32 = 1_546_300_800;
/// 2012-01-01T00:00:00Z: the oldest OpenPGP key.
pub(super) const OLDEST_KEY: u32 = 1_325_376_000;
/// 2025-06-01T00:00:00Z: the newest OpenPGP key and certification.
pub(super) const NEWEST: u32 = 1_748_736_000;
/// Keys whose primaries certify other keys (the first ones generated), and
/// as many keys from outside the keybox.
pub(crate) const SIGNER_POOL: usize = 600;
/// Share of third-party certifications made by a key that is not in the
/// keybox (its signature verifies against the key gen made and threw away).
pub(crate) const OUTSIDE_SHARE: f64 = 0.3;
/// Share of OpenPGP keys with a photo id.
pub(super) const PHOTO_SHARE: f64 = 0.4;
/// Bytes a photo adds besides its JPEG (packet headers, self-signature, trust packets).
pub(super) const PHOTO_OVERHEAD: u64 = 200;
