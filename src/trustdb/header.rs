//! The header of gpg's trust database (`trustdb.gpg`): its version record,
//! the first of its 40-byte records (facts from `g10/tdbio.c`): the record
//! type 1 and `gpg` at bytes 0–3, the database version (3) at 4, the
//! marginals, completes and maximum depth at 5–7, the trust model at 8,
//! the minimum certification level at 9, the creation time at 12–15 and
//! the time of the next automatic check at 16–19 (big-endian; 0: none
//! scheduled), the first free record at 28–31 and the trust hash table's
//! record at 36–39.

use serde::Serialize;

/// The size of every record.
pub const RECORD_LEN: usize = 40;

/// The trust models gpg numbers in the version record.
pub fn model_name(n: u8) -> &'static str {
    match n {
        0 => "classic",
        1 => "pgp",
        2 => "external",
        3 => "always",
        4 => "direct",
        5 => "auto",
        6 => "tofu",
        7 => "tofu+pgp",
        _ => "unknown",
    }
}

/// What the version record says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Header {
    /// The database version (gpg writes 3).
    pub version: u8,
    /// Marginally trusted signatures that make a key valid.
    pub marginals: u8,
    /// Fully trusted signatures that make a key valid.
    pub completes: u8,
    /// How deep the web of trust is followed.
    pub max_depth: u8,
    /// The trust model the database was built for.
    pub model: &'static str,
    /// The minimum certification level counted.
    pub min_cert_level: u8,
    /// When it was made, Unix seconds.
    pub created: u32,
    /// When gpg checks it next by itself, Unix seconds (0: not scheduled).
    pub next_check: u32,
    /// The first record of the free list (0: none).
    pub first_free: u32,
    /// The first record of the trust hash table.
    pub hash_table: u32,
}

/// Why a trust database's header cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Fewer bytes than one record.
    #[error("it is {0} bytes long, shorter than its 40-byte version record")]
    Short(usize),
    /// Record 0 is not a version record.
    #[error("record 0 is not gpg's version record (type {kind}, magic {magic:?})")]
    NotVersion {
        /// Its type byte.
        kind: u8,
        /// Bytes 1–3.
        magic: String,
    },
    /// A version gpg 2.2 and 2.4 do not write.
    #[error("record 0 says database version {0}; gpg 2.2 and 2.4 write version 3")]
    Version(u8),
}

/// Read the version record at the start of `bytes`.
///
/// # Errors
/// A [`HeaderError`] naming what is wrong with record 0.
pub fn parse(bytes: &[u8]) -> Result<Header, HeaderError> {
    let r = bytes.get(..RECORD_LEN).ok_or(HeaderError::Short(bytes.len()))?;
    if r[0] != 1 || &r[1..4] != b"gpg" {
        return Err(HeaderError::NotVersion { kind: r[0], magic: String::from_utf8_lossy(&r[1..4]).into_owned() });
    }
    if r[4] != 3 {
        return Err(HeaderError::Version(r[4]));
    }
    let be32 = |at: usize| u32::from_be_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]]);
    Ok(Header {
        version: r[4],
        marginals: r[5],
        completes: r[6],
        max_depth: r[7],
        model: model_name(r[8]),
        min_cert_level: r[9],
        created: be32(12),
        next_check: be32(16),
        first_free: be32(28),
        hash_table: be32(36),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(model: u8, next: u32) -> Vec<u8> {
        let mut r = vec![0u8; 80];
        r[..5].copy_from_slice(b"\x01gpg\x03");
        (r[5], r[6], r[7], r[8], r[9]) = (3, 1, 5, model, 2);
        r[12..16].copy_from_slice(&1_700_000_000u32.to_be_bytes());
        r[16..20].copy_from_slice(&next.to_be_bytes());
        r
    }

    #[test]
    fn a_version_record() {
        let h = parse(&record(1, 1_800_000_000)).unwrap();
        assert_eq!((h.marginals, h.completes, h.max_depth, h.model), (3, 1, 5, "pgp"));
        assert_eq!((h.created, h.next_check), (1_700_000_000, 1_800_000_000));
    }

    #[test]
    fn damage_is_named() {
        assert_eq!(parse(b"\x01gp"), Err(HeaderError::Short(3)));
        assert!(matches!(parse(&[0u8; 40]), Err(HeaderError::NotVersion { kind: 0, .. })));
        let mut newer = record(1, 0);
        newer[4] = 4;
        assert_eq!(parse(&newer), Err(HeaderError::Version(4)));
    }
}
