//! A keyboxd database as the keybox GnuPG would have written for the same
//! keys: one blob per row, in `ubid` order, so that every keybox workload
//! runs on a database unchanged. Reading it is one `SELECT` over `pubkey`
//! in `ubid` order — keyboxd's own listing query (its FIRST search) —
//! through the counting layer; the blobs are made in memory.

use std::ops::ControlFlow;

use super::rows::{ubid_hex, PubkeyRow, RowFault, RowProblem, ROW_COLUMNS};
use super::KeyboxdError;
use crate::io::sqlite::Database;
use crate::io::{BufferSize, MemoryOpener};
use crate::kbx::create::{openpgp_spec, x509_spec};
use crate::kbx::encode::encode_key_blob;

/// The rows a listing query selects, by `pubkey.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Filter {
    /// Every row (`ORDER by ubid`).
    All,
    /// OpenPGP keys only (gpg's `SEARCH --openpgp`).
    OpenPgp,
    /// Certificates only (gpgsm's `SEARCH --x509`).
    X509,
}

impl Filter {
    /// keyboxd's FIRST search for this filter.
    fn sql(self) -> String {
        let filter = match self {
            Filter::All => "",
            Filter::OpenPgp => " WHERE p.type = 1",
            Filter::X509 => " WHERE p.type = 2",
        };
        format!("SELECT {ROW_COLUMNS} FROM pubkey as p{filter} ORDER by ubid")
    }
}

/// Which row each blob of a pass was made from, and the rows no blob
/// could be made from.
#[derive(Debug, Clone, Default)]
pub struct RowMap {
    /// For each blob (by index), the row it was made from: its place in
    /// `ubid` order and its `ubid` in hex.
    pub rows: Vec<(u64, String)>,
    /// Rows that could not be made into a blob (passed over).
    pub problems: Vec<RowProblem>,
}

impl RowMap {
    /// The row blob `blob_index` was made from: "row N (ubid X)".
    pub(crate) fn row_name(&self, blob_index: u64) -> String {
        match usize::try_from(blob_index).ok().and_then(|i| self.rows.get(i)) {
            Some((row, ubid)) => format!("row {row} (ubid {ubid})"),
            None => format!("blob {blob_index}"),
        }
    }
}

/// The database as a keybox image.
#[derive(Debug, Clone)]
pub(crate) struct KeyboxImage {
    /// The blobs, one per row taken, in `ubid` order (no header blob).
    pub bytes: Vec<u8>,
    /// The rows behind the blobs.
    pub map: RowMap,
}

/// The blob GnuPG's keybox writer makes for `row`.
///
/// # Errors
/// [`RowFault`] for an unknown type or a keyblob that is no keyblock or certificate.
pub(crate) fn blob_of(row: &PubkeyRow) -> Result<Vec<u8>, RowFault> {
    let spec = match row.kind {
        1 => openpgp_spec(&row.keyblob, row.ephemeral),
        2 => x509_spec(&row.keyblob, row.ephemeral),
        other => return Err(RowFault::UnknownType(other)),
    }
    .map_err(|source| RowFault::Keyblob { openpgp: row.kind == 1, source })?;
    Ok(encode_key_blob(&spec))
}

impl KeyboxImage {
    /// Read every row of `filter` from `db`, in `ubid` order.
    ///
    /// # Errors
    /// SQLite's error; rows that cannot be taken are in the [`RowMap`]'s problems.
    pub(crate) fn read(db: &Database, filter: Filter) -> Result<KeyboxImage, KeyboxdError> {
        let mut image = KeyboxImage { bytes: Vec::new(), map: RowMap::default() };
        let mut index = 0u64;
        db.query(&filter.sql(), [], |row| {
            let taken = PubkeyRow::read(row, index).and_then(|r| match blob_of(&r) {
                Ok(b) => Ok((r.ubid, b)),
                Err(fault) => Err(RowProblem { index, ubid: ubid_hex(&r.ubid), fault }),
            });
            match taken {
                Ok((ubid, blob)) => {
                    image.bytes.extend_from_slice(&blob);
                    image.map.rows.push((index, ubid_hex(&ubid)));
                }
                Err(p) => image.map.problems.push(p),
            }
            index += 1;
            Ok::<_, KeyboxdError>(ControlFlow::Continue(()))
        })?;
        Ok(image)
    }

    /// Readers over the image: in memory, their reads are no file events
    /// (and are not traced as such).
    pub(crate) fn opener(&self) -> MemoryOpener {
        MemoryOpener { from_store: true, ..MemoryOpener::new(&self.bytes, BufferSize::Bytes(1 << 20)) }
    }
}
