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
pub mod validity;

use std::collections::HashSet;

use serde::Serialize;

pub use header::{model_name, parse as parse_header, Header, HeaderError, RECORD_LEN};
pub use record::{trust_name, Record, Trust, Valid, HASH_LIST_ITEMS, HASH_TABLE_ITEMS};
pub use validity::{fpr20, KeyState, Model, Validities, Validity};

/// The records one hash table spans: 256 slots, [`HASH_TABLE_ITEMS`] a record.
pub const HASH_TABLE_RECORDS: u32 = 256_u32.div_ceil(HASH_TABLE_ITEMS as u32);

/// Something gpg would trip over, at a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// The record's number (its byte offset / 40).
    pub record: u32,
    /// What is wrong (in JSON: its words).
    #[serde(serialize_with = "in_words")]
    pub what: Problem,
}

/// What is wrong at a damaged record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A record type gpg does not know: its sequential reads stop here.
    #[error("gpg cannot read it: unknown record type {0}")]
    UnknownType(u8),
    /// A version record after record 0: gpg's sequential reads stop here.
    #[error("gpg cannot read it: a version record after record 0")]
    StrayVersion,
    /// The file ends inside a record.
    #[error("a partial record of {0} bytes at the end of the file")]
    Partial(usize),
    /// A key's validity list comes back to a record it passed.
    #[error("its validity list loops back to record {0}")]
    ValidListLoops(u32),
    /// A key's validity list leads to a record of another type.
    #[error("its validity list leads to record {at}, a {kind} record")]
    ValidListLeadsTo {
        /// The record it leads to.
        at: u32,
        /// That record's type.
        kind: &'static str,
    },
    /// A key's validity list leads outside the file or to an unreadable record.
    #[error("its validity list leads to record {0}, outside the file or unreadable")]
    ValidListLeadsOut(u32),
    /// The free list comes back to a record it passed.
    #[error("the free list loops back to record {0}")]
    FreeListLoops(u32),
    /// The free list leads to a record that is not free.
    #[error("the free list leads to record {0}, not a free one")]
    FreeListLeadsTo(u32),
    /// The hash table does not span its records.
    #[error("the trust hash table from record {table} should span record {at}; it does not")]
    ShortTable {
        /// The table's first record.
        table: u32,
        /// The record that is not part of it.
        at: u32,
    },
    /// The hash table does not lead to this key.
    #[error("gpg's hash table does not lead to this key ({0}): gpg does not find it")]
    NotInTable(String),
    /// A table the walk reached has no table record where the slot is.
    #[error("the hash table at record {table} has no table record at {at}")]
    NoTableRecord {
        /// The table.
        table: u32,
        /// Where its slot's record should be.
        at: u32,
    },
    /// A slot leads to a record that is no key, list or table.
    #[error("hash table slot {slot} at level {level} leads to record {at}, not a key")]
    SlotLeadsTo {
        /// The slot (a fingerprint byte).
        slot: u8,
        /// The fingerprint byte's index.
        level: usize,
        /// The record.
        at: u32,
    },
    /// Tables within tables deeper than a fingerprint is long.
    #[error("the hash table's indirections go deeper than a fingerprint's 20 bytes")]
    TooDeep,
    /// The key's hash list comes back to a record it passed.
    #[error("the hash list it is in loops back to record {0}")]
    HashListLoops(u32),
    /// The key's hash list leads to a record that is no hash list.
    #[error("its hash list leads to record {0}, not a hash list")]
    HashListLeadsTo(u32),
}

impl Problem {
    /// Whether gpg's sequential reads (its export) stop at this record.
    fn stops_reading(&self) -> bool {
        matches!(self, Problem::UnknownType(_) | Problem::StrayVersion)
    }
}

fn in_words<S: serde::Serializer>(p: &Problem, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(p)
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
        let stop = self.damage.iter().filter(|d| d.what.stops_reading()).map(|d| d.record).min();
        self.keys
            .iter()
            .filter(|k| stop.is_none_or(|s| k.record < s))
            .filter(|k| k.trust.ownertrust != 0 && k.trust.flags & 1 == 0)
            .map(|k| (k.trust.fingerprint, k.trust.ownertrust))
            .collect()
    }
}

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
        damage.push(Damage { record: count, what: Problem::Partial(bytes.len() % RECORD_LEN) });
    }
    let mut records = Vec::with_capacity(whole);
    for (n, chunk) in bytes.chunks_exact(RECORD_LEN).enumerate() {
        let r: &[u8; RECORD_LEN] = chunk.try_into().expect("chunks_exact gives whole records");
        let n = n as u32;
        match record::parse(r) {
            Ok(Record::Version) if n != 0 => {
                damage.push(Damage { record: n, what: Problem::StrayVersion });
                records.push(None);
            }
            Ok(rec) => records.push(Some(rec)),
            Err(t) => {
                damage.push(Damage { record: n, what: Problem::UnknownType(t) });
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

    /// The validity records of the key at record `key`, from `next`.
    fn valid_list(&self, key: u32, mut next: u32, damage: &mut Vec<Damage>) -> Vec<Valid> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        while next != 0 {
            let what = if !seen.insert(next) {
                Problem::ValidListLoops(next)
            } else {
                match self.get(next) {
                    Some(Record::Valid(v)) => {
                        out.push(v.clone());
                        next = v.next;
                        continue;
                    }
                    Some(r) => Problem::ValidListLeadsTo { at: next, kind: r.name() },
                    None => Problem::ValidListLeadsOut(next),
                }
            };
            damage.push(Damage { record: key, what });
            break;
        }
        out
    }

    /// The free list from `next`: free records only, no loop.
    fn check_free_list(&self, mut next: u32, damage: &mut Vec<Damage>) {
        let mut seen = HashSet::new();
        while next != 0 {
            if !seen.insert(next) {
                return damage.push(Damage { record: 0, what: Problem::FreeListLoops(next) });
            }
            match self.get(next) {
                Some(Record::Free { next: n }) => next = *n,
                _ => return damage.push(Damage { record: 0, what: Problem::FreeListLeadsTo(next) }),
            }
        }
    }

    /// Whether the hash table at `table` holds its records and leads to
    /// every key, as gpg's look-ups walk it.
    fn check_hash_table(&self, table: u32, keys: &[Key], damage: &mut Vec<Damage>) {
        if keys.is_empty() && table == 0 {
            return;
        }
        let span = table..table.saturating_add(HASH_TABLE_RECORDS);
        if let Some(at) = span.clone().find(|n| !matches!(self.get(*n), Some(Record::HashTable(_)))) {
            return damage.push(Damage { record: at, what: Problem::ShortTable { table, at } });
        }
        for k in keys {
            if let Err(what) = self.find(table, &k.trust.fingerprint, k.record) {
                damage.push(Damage { record: k.record, what });
            }
        }
    }

    /// Walk from the table at `table` to the trust record of `fpr` as gpg
    /// does; `Ok` when it reaches record `want`.
    fn find(&self, mut table: u32, fpr: &[u8; 20], want: u32) -> Result<(), Problem> {
        let missing = || Problem::NotInTable(kbx_format::dump::hex_upper(fpr));
        for (level, &slot) in fpr.iter().enumerate() {
            let at = table + u32::from(slot) / HASH_TABLE_ITEMS as u32;
            let Some(Record::HashTable(items)) = self.get(at) else {
                return Err(Problem::NoTableRecord { table, at });
            };
            let item = items[usize::from(slot) % HASH_TABLE_ITEMS];
            match self.get(item) {
                _ if item == 0 => return Err(missing()),
                Some(Record::Trust(t)) if item == want && t.fingerprint == *fpr => return Ok(()),
                Some(Record::Trust(_)) => return Err(missing()),
                Some(Record::HashTable(_)) => table = item,
                Some(Record::HashList { .. }) => return self.find_in_list(item, want).ok_or_else(missing)?,
                _ => return Err(Problem::SlotLeadsTo { slot, level, at: item }),
            }
        }
        Err(Problem::TooDeep)
    }

    /// Whether the hash list from `next` holds record `want`: `None` when
    /// it does not, `Some(Err)` when the list is damaged.
    fn find_in_list(&self, mut next: u32, want: u32) -> Option<Result<(), Problem>> {
        let mut seen = HashSet::new();
        while next != 0 {
            if !seen.insert(next) {
                return Some(Err(Problem::HashListLoops(next)));
            }
            let Some(Record::HashList { next: n, items }) = self.get(next) else {
                return Some(Err(Problem::HashListLeadsTo(next)));
            };
            if items.contains(&want) {
                return Some(Ok(()));
            }
            next = *n;
        }
        None
    }
}

#[cfg(test)]
mod tests;
