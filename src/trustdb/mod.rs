//! gpg's trust database, `trustdb.gpg`, read from its bytes (no I/O here):
//! the version record ([`header`]), every record ([`record`]), the key
//! (trust) records with their user ids' validities, and what gpg would
//! trip over: a record type it does not know, a record number outside the
//! file, a list that loops, a key its hash table does not lead to, a
//! partial record at the end. Damage is reported with its record number;
//! only a header that is not gpg's stops the reading.
//!
//! A key is found through the hash table as gpg looks it up: the table's
//! 29 records hold 256 slots, one per value of the fingerprint's first
//! byte; a slot holds a trust record, a hash list of them, or (when a
//! list grew too long) a table of the next byte's slots.

pub mod header;
pub mod record;

use std::collections::HashSet;

use serde::Serialize;

pub use header::{model_name, parse as parse_header, Header, HeaderError, RECORD_LEN};
pub use record::{trust_name, Record, Trust, Valid, HASH_LIST_ITEMS, HASH_TABLE_ITEMS};

/// The records one hash table spans: 256 slots, [`HASH_TABLE_ITEMS`] a record.
pub const HASH_TABLE_RECORDS: u32 = 256_u32.div_ceil(HASH_TABLE_ITEMS as u32);

/// Something gpg would trip over, at a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// The record's number (its byte offset / 40).
    pub record: u32,
    /// What is wrong, in words.
    pub what: String,
}

/// A key of the database, with its user ids' validities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Key {
    /// Its trust record's number.
    pub record: u32,
    /// The trust record.
    #[serde(flatten)]
    pub trust: Trust,
    /// Its validity records, in list order.
    pub validities: Vec<Valid>,
}

/// A trust database, read.
#[derive(Debug, Clone, Serialize)]
pub struct TrustDb {
    /// The version record.
    pub header: Header,
    /// Records in the file (a partial one at the end not counted).
    pub records: u32,
    /// Records by type name, in record-type order.
    pub by_type: Vec<(&'static str, u32)>,
    /// Every key (trust record), in record order.
    pub keys: Vec<Key>,
    /// What gpg would trip over.
    pub damage: Vec<Damage>,
}

impl TrustDb {
    /// The owner trusts `gpg --export-ownertrust` prints: `(fingerprint,
    /// owner trust byte)` of every key with one set, in record order, but
    /// not those `--trusted-key` made ultimate (flag 1). gpg reads the
    /// records in order and stops at the first it cannot read: so does
    /// this.
    pub fn ownertrust(&self) -> Vec<([u8; 20], u8)> {
        let stop = self.damage.iter().filter(|d| d.what.starts_with(UNREADABLE)).map(|d| d.record).min();
        self.keys
            .iter()
            .filter(|k| stop.is_none_or(|s| k.record < s))
            .filter(|k| k.trust.ownertrust != 0 && k.trust.flags & 1 == 0)
            .map(|k| (k.trust.fingerprint, k.trust.ownertrust))
            .collect()
    }
}

/// The start of the words of damage that stops gpg's sequential reads.
const UNREADABLE: &str = "gpg cannot read it";

/// Read a trust database from its bytes.
///
/// # Errors
/// The first record is not gpg's version record ([`HeaderError`]).
pub fn read(bytes: &[u8]) -> Result<TrustDb, HeaderError> {
    let header = header::parse(bytes)?;
    let mut damage = Vec::new();
    let whole = bytes.len() / RECORD_LEN;
    let count = u32::try_from(whole).unwrap_or(u32::MAX);
    if !bytes.len().is_multiple_of(RECORD_LEN) {
        damage.push(Damage {
            record: count,
            what: format!("a partial record of {} bytes at the end of the file", bytes.len() % RECORD_LEN),
        });
    }
    let mut records = Vec::with_capacity(whole);
    for (n, chunk) in bytes.chunks_exact(RECORD_LEN).enumerate() {
        let r: &[u8; RECORD_LEN] = chunk.try_into().expect("chunks_exact gives whole records");
        let n = n as u32;
        match record::parse(r) {
            Ok(Record::Version) if n != 0 => {
                damage.push(Damage { record: n, what: format!("{UNREADABLE}: a version record after record 0") });
                records.push(None);
            }
            Ok(rec) => records.push(Some(rec)),
            Err(t) => {
                damage.push(Damage { record: n, what: format!("{UNREADABLE}: unknown record type {t}") });
                records.push(None);
            }
        }
    }
    let db = Records(&records);
    let mut keys = Vec::new();
    for (n, r) in records.iter().enumerate() {
        if let Some(Record::Trust(t)) = r {
            let validities = db.valid_list(n as u32, t.valid_list, &mut damage);
            keys.push(Key { record: n as u32, trust: t.clone(), validities });
        }
    }
    db.check_free_list(header.first_free, &mut damage);
    db.check_hash_table(header.hash_table, &keys, &mut damage);
    damage.sort_by_key(|d| d.record);
    let mut by_type: Vec<(&'static str, u32)> = Vec::new();
    for r in records.iter().flatten() {
        match by_type.iter_mut().find(|(name, _)| *name == r.name()) {
            Some((_, n)) => *n += 1,
            None => by_type.push((r.name(), 1)),
        }
    }
    Ok(TrustDb { header, records: count, by_type, keys, damage })
}

/// The records, by number (`None`: one gpg cannot read).
struct Records<'a>(&'a [Option<Record>]);

impl Records<'_> {
    fn get(&self, n: u32) -> Option<&Record> {
        self.0.get(n as usize).and_then(Option::as_ref)
    }

    /// The validity records of the key at record `key`, from `first`.
    fn valid_list(&self, key: u32, mut next: u32, damage: &mut Vec<Damage>) -> Vec<Valid> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        while next != 0 {
            if !seen.insert(next) {
                damage.push(Damage { record: key, what: format!("its validity list loops back to record {next}") });
                break;
            }
            match self.get(next) {
                Some(Record::Valid(v)) => {
                    out.push(v.clone());
                    next = v.next;
                }
                other => {
                    let what = match other {
                        Some(r) => format!("its validity list leads to record {next}, a {} record", r.name()),
                        None => format!("its validity list leads to record {next}, outside the file or unreadable"),
                    };
                    damage.push(Damage { record: key, what });
                    break;
                }
            }
        }
        out
    }

    /// The free list from `first`: free records only, no loop.
    fn check_free_list(&self, mut next: u32, damage: &mut Vec<Damage>) {
        let mut seen = HashSet::new();
        while next != 0 {
            if !seen.insert(next) {
                damage.push(Damage { record: 0, what: format!("the free list loops back to record {next}") });
                return;
            }
            match self.get(next) {
                Some(Record::Free { next: n }) => next = *n,
                _ => {
                    damage.push(Damage {
                        record: 0,
                        what: format!("the free list leads to record {next}, not a free one"),
                    });
                    return;
                }
            }
        }
    }

    /// Whether the hash table at `table` holds its records and leads to
    /// every key, as gpg's look-ups walk it.
    fn check_hash_table(&self, table: u32, keys: &[Key], damage: &mut Vec<Damage>) {
        if keys.is_empty() && table == 0 {
            return;
        }
        for n in table..table.saturating_add(HASH_TABLE_RECORDS) {
            if !matches!(self.get(n), Some(Record::HashTable(_))) {
                let what = format!("the trust hash table from record {table} should span record {n}; it does not");
                damage.push(Damage { record: n, what });
                return;
            }
        }
        for k in keys {
            if let Err(what) = self.find(table, &k.trust.fingerprint, k.record) {
                damage.push(Damage { record: k.record, what });
            }
        }
    }

    /// Walk from the table at `table` to the trust record of `fpr` as gpg
    /// does; `Ok` when it reaches record `want`.
    fn find(&self, mut table: u32, fpr: &[u8; 20], want: u32) -> Result<(), String> {
        let hex = kbx_format::dump::hex_upper(fpr);
        let missing = || format!("gpg's hash table does not lead to this key ({hex}): gpg does not find it");
        for level in 0..fpr.len() {
            let slot = fpr[level] as u32;
            let at = table + slot / HASH_TABLE_ITEMS as u32;
            let Some(Record::HashTable(items)) = self.get(at) else {
                return Err(format!("the hash table at record {table} has no table record at {at}"));
            };
            let item = items[slot as usize % HASH_TABLE_ITEMS];
            match self.get(item) {
                _ if item == 0 => return Err(missing()),
                Some(Record::Trust(t)) if item == want && t.fingerprint == *fpr => return Ok(()),
                Some(Record::Trust(_)) => return Err(missing()),
                Some(Record::HashTable(_)) => table = item,
                Some(Record::HashList { .. }) => return self.find_in_list(item, want, missing),
                _ => return Err(format!("hash table slot {slot} at level {level} leads to record {item}, not a key")),
            }
        }
        Err("the hash table's indirections go deeper than a fingerprint's 20 bytes".into())
    }

    fn find_in_list(&self, mut next: u32, want: u32, missing: impl Fn() -> String) -> Result<(), String> {
        let mut seen = HashSet::new();
        while next != 0 {
            if !seen.insert(next) {
                return Err(format!("the hash list it is in loops back to record {next}"));
            }
            let Some(Record::HashList { next: n, items }) = self.get(next) else {
                return Err(format!("its hash list leads to record {next}, not a hash list"));
            };
            if items.contains(&want) {
                return Ok(());
            }
            next = *n;
        }
        Err(missing())
    }
}

#[cfg(test)]
mod tests;
