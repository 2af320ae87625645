//! `dump`: every blob as `kbxutil` prints it.

use crate::io::{Opener, RawRead};

use super::scan::{Item, ScanError, Scanner};
use crate::io::BufferedReader;
use crate::kbx::dump::dump_blob;
use crate::keyboxd::RowProblem;
use crate::store::{Store, StoreError};

/// One dump record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// kbxutil's record number (a run of deleted blobs takes one number
    /// and prints nothing).
    pub number: u64,
    /// Physical blob index.
    pub index: u64,
    /// File offset.
    pub offset: u64,
    /// The record body (the lines between `BEGIN-RECORD` and `END-RECORD`).
    pub body: Vec<u8>,
}

/// How a dump ended.
#[derive(Debug, Default)]
pub struct DumpOutcome {
    /// The keybox's framing error that stopped the pass (records before
    /// it were handed out).
    pub fatal: Option<ScanError>,
    /// A database's rows that could not be read (the dump went on).
    pub rows: Vec<RowProblem>,
}

/// Dump `store`, handing each record (its number, and the lines between
/// `BEGIN-RECORD` and `END-RECORD`) to `emit` as soon as it is read: a
/// keybox's blobs as `kbxutil` prints them, a database's `pubkey` rows in
/// `ubid` order with their rows of the search tables.
///
/// # Errors
/// The store cannot be read (SQLite's error for a database).
pub fn run(store: &Store, mut emit: impl FnMut(u64, &[u8])) -> Result<DumpOutcome, StoreError> {
    let mut out = DumpOutcome::default();
    match store {
        Store::Keybox { opener, .. } => out.fatal = pass(&mut *opener.open()?, |r| emit(r.number, &r.body)).err(),
        Store::Keyboxd { db, .. } => {
            super::keyboxd::dump(db, |r| emit(r.index, r.body.as_bytes()), |p| out.rows.push(p))?;
        }
    }
    Ok(out)
}

/// Dump the keybox of one reader, handing each record to `emit` as soon
/// as it is read.
///
/// # Errors
/// The framing error that stopped the pass; records before it were emitted.
pub fn pass<F: RawRead>(reader: &mut BufferedReader<F>, mut emit: impl FnMut(Record)) -> Result<(), ScanError> {
    let mut number = 0;
    let mut scan = Scanner::new(reader);
    while let Some(item) = scan.next_item()? {
        match item {
            Item::Blob { index, offset, deleted_before } => {
                if deleted_before > 0 {
                    number += 1;
                }
                emit(Record { number, index, offset, body: dump_blob(scan.image()) });
            }
            Item::TooLarge { index, offset, .. } => {
                emit(Record { number, index, offset, body: b"# Record too large\n".to_vec() });
            }
        }
        number += 1;
    }
    Ok(())
}
