//! `dump`: every blob as `kbxutil` prints it.

use crate::io::RawRead;

use super::scan::{Item, ScanError, Scanner};
use crate::io::BufferedReader;
use crate::kbx::dump::dump_blob;

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

/// Dump the keybox, handing each record to `emit` as soon as it is read.
///
/// # Errors
/// The framing error that stopped the pass; records before it were emitted.
pub fn run<F: RawRead>(reader: &mut BufferedReader<F>, mut emit: impl FnMut(Record)) -> Result<(), ScanError> {
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
