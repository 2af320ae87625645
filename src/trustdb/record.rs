//! One 40-byte record of `trustdb.gpg` (facts from GnuPG's `g10/tdbio.c`
//! and `tdbio.h`). Byte 0 is the record type, byte 1 is reserved, the rest
//! depends on the type; numbers are big-endian:
//!
//! | type | record | bytes 2… |
//! |--:|---|---|
//! | 0 | unused | — |
//! | 1 | version | see [`super::header`] |
//! | 10 | hash table | 9 record numbers |
//! | 11 | hash list | the next list record, then 6 record numbers |
//! | 12 | trust | fingerprint (20), owner trust, depth, minimum owner trust, flags, the first validity record |
//! | 13 | validity | user id hash (20), validity, the next validity record, full and marginal counts |
//! | 254 | free | the next free record |

use serde::Serialize;

use super::header::RECORD_LEN;

/// Record numbers a hash table record holds.
pub const HASH_TABLE_ITEMS: usize = (RECORD_LEN - 2) / 4;
/// Record numbers a hash list record holds.
pub const HASH_LIST_ITEMS: usize = (RECORD_LEN - 6) / 5;

/// A key's record: its owner trust and where its user ids' validities are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Trust {
    /// The key's fingerprint (a v4 key's 20 bytes; a v5 key's first 20).
    #[serde(serialize_with = "hex")]
    pub fingerprint: [u8; 20],
    /// The owner trust byte: the value (low 4 bits) and the disabled flag (128).
    pub ownertrust: u8,
    /// The depth in the web of trust at which the key was found valid.
    pub depth: u8,
    /// The least owner trust it gets from the keys that certify it.
    pub min_ownertrust: u8,
    /// Flags: 1 = made ultimately trusted by `--trusted-key`.
    pub flags: u8,
    /// The first validity record (0: none).
    pub valid_list: u32,
}

/// One user id's validity, in a key's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Valid {
    /// RIPEMD-160 of the user id (or of the attribute's data).
    #[serde(serialize_with = "hex")]
    pub name_hash: [u8; 20],
    /// The validity byte: the value (low 4 bits) and flags.
    pub validity: u8,
    /// The next record of the key's list (0: the last).
    pub next: u32,
    /// Fully trusted keys that certify the user id.
    pub full_count: u8,
    /// Marginally trusted ones.
    pub marginal_count: u8,
}

/// A record, by type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// Type 0: not used yet (gpg writes one before it fills it).
    Unused,
    /// Type 1: the version record (only record 0 may be one).
    Version,
    /// Type 10: part of a hash table.
    HashTable([u32; HASH_TABLE_ITEMS]),
    /// Type 11: a list of records whose fingerprints share a table slot.
    HashList {
        /// The next list record (0: the last).
        next: u32,
        /// Record numbers (0: an empty place).
        items: [u32; HASH_LIST_ITEMS],
    },
    /// Type 12: a key.
    Trust(Trust),
    /// Type 13: a user id's validity.
    Valid(Valid),
    /// Type 254: on the free list.
    Free {
        /// The next free record (0: the last).
        next: u32,
    },
}

impl Record {
    /// The record's name, for messages and counts.
    pub fn name(&self) -> &'static str {
        match self {
            Record::Unused => "unused",
            Record::Version => "version",
            Record::HashTable(_) => "hash table",
            Record::HashList { .. } => "hash list",
            Record::Trust(_) => "trust",
            Record::Valid(_) => "validity",
            Record::Free { .. } => "free",
        }
    }
}

fn be32(r: &[u8; RECORD_LEN], at: usize) -> u32 {
    u32::from_be_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]])
}

fn twenty(r: &[u8; RECORD_LEN], at: usize) -> [u8; 20] {
    let mut out = [0u8; 20];
    out.copy_from_slice(&r[at..at + 20]);
    out
}

/// Decode one record; `Err(type)` for a type gpg does not know.
pub fn parse(r: &[u8; RECORD_LEN]) -> Result<Record, u8> {
    Ok(match r[0] {
        0 => Record::Unused,
        1 => Record::Version,
        10 => Record::HashTable(std::array::from_fn(|i| be32(r, 2 + 4 * i))),
        11 => Record::HashList { next: be32(r, 2), items: std::array::from_fn(|i| be32(r, 6 + 4 * i)) },
        12 => Record::Trust(Trust {
            fingerprint: twenty(r, 2),
            ownertrust: r[22],
            depth: r[23],
            min_ownertrust: r[24],
            flags: r[25],
            valid_list: be32(r, 26),
        }),
        13 => Record::Valid(Valid {
            name_hash: twenty(r, 2),
            validity: r[22],
            next: be32(r, 23),
            full_count: r[27],
            marginal_count: r[28],
        }),
        254 => Record::Free { next: be32(r, 2) },
        other => return Err(other),
    })
}

/// The name gpg gives a trust value (the low 4 bits of an owner trust or
/// validity byte), as `--export-ownertrust`'s numbers mean them.
pub fn trust_name(value: u8) -> &'static str {
    match value & 15 {
        0 => "unknown",
        1 => "expired",
        2 => "undefined",
        3 => "never",
        4 => "marginal",
        5 => "full",
        6 => "ultimate",
        _ => "invalid",
    }
}

fn hex<S: serde::Serializer>(bytes: &[u8; 20], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&kbx_format::dump::hex_upper(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_decodes() {
        let mut r = [0u8; RECORD_LEN];
        r[0] = 12;
        r[2..22].copy_from_slice(&[0xab; 20]);
        (r[22], r[23], r[24], r[25]) = (6, 0, 0, 1);
        r[26..30].copy_from_slice(&77u32.to_be_bytes());
        let Ok(Record::Trust(t)) = parse(&r) else { panic!("a trust record") };
        assert_eq!((t.ownertrust, t.flags, t.valid_list, t.fingerprint[19]), (6, 1, 77, 0xab));
        r[0] = 13;
        r[23..27].copy_from_slice(&5u32.to_be_bytes());
        (r[27], r[28]) = (2, 3);
        let Ok(Record::Valid(v)) = parse(&r) else { panic!("a validity record") };
        assert_eq!((v.validity, v.next, v.full_count, v.marginal_count), (6, 5, 2, 3));
        r[0] = 11;
        let Ok(Record::HashList { items, .. }) = parse(&r) else { panic!("a hash list") };
        assert_eq!(items.len(), 6);
        r[0] = 10;
        let Ok(Record::HashTable(items)) = parse(&r) else { panic!("a hash table") };
        assert_eq!(items.len(), 9);
        r[0] = 7;
        assert_eq!(parse(&r), Err(7));
        assert_eq!(trust_name(6 | 128), "ultimate");
    }
}
