//! One row of keyboxd's `pubkey` table, read with its types checked and
//! its lengths capped before anything is copied.

use rusqlite::types::ValueRef;

use super::image::{RowFault, RowProblem};
use crate::kbx::IMAGELEN_LIMIT;

/// The columns of `pubkey` every read of a row selects, in this order.
pub const ROW_COLUMNS: &str = "ubid, type, ephemeral, revoked, keyblob";

/// The longest `ubid` taken (keyboxd's are 20 bytes).
const UBID_LIMIT: usize = 64;

/// One key or certificate of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PubkeyRow {
    /// The first 20 bytes of the primary key's fingerprint (the SHA-1
    /// fingerprint of a certificate).
    pub ubid: Vec<u8>,
    /// 1 = OpenPGP, 2 = X.509.
    pub kind: i64,
    /// The ephemeral flag.
    pub ephemeral: bool,
    /// The revoked flag.
    pub revoked: bool,
    /// The OpenPGP keyblock or DER certificate.
    pub keyblob: Vec<u8>,
}

/// `ubid` in upper-case hex, for messages.
pub(super) fn ubid_hex(ubid: &[u8]) -> String {
    crate::kbx::dump::hex_upper(ubid)
}

impl PubkeyRow {
    /// Read the row `index` (its place in the query) whose first five
    /// columns are [`ROW_COLUMNS`].
    ///
    /// # Errors
    /// A [`RowProblem`]: a column of the wrong type, a `ubid` longer than 64
    /// bytes, a keyblob over the 5 MiB a keybox blob may hold.
    pub fn read(row: &rusqlite::Row<'_>, index: u64) -> Result<PubkeyRow, RowProblem> {
        let problem = |ubid: &[u8], fault| RowProblem { index, ubid: ubid_hex(ubid), fault };
        let value = |i: usize| row.get_ref(i).unwrap_or(ValueRef::Null);
        let ubid = match value(0) {
            ValueRef::Blob(b) if b.len() <= UBID_LIMIT => b.to_vec(),
            ValueRef::Blob(b) => {
                return Err(problem(&b[..UBID_LIMIT], RowFault::Column { column: "ubid", found: "blob over 64 bytes" }))
            }
            other => return Err(problem(&[], RowFault::Column { column: "ubid", found: type_name(other) })),
        };
        let int = |i: usize, column: &'static str| match value(i) {
            ValueRef::Integer(n) => Ok(n),
            other => Err(problem(&ubid, RowFault::Column { column, found: type_name(other) })),
        };
        let kind = int(1, "type")?;
        let ephemeral = int(2, "ephemeral")? != 0;
        let revoked = int(3, "revoked")? != 0;
        let keyblob = match value(4) {
            ValueRef::Blob(b) if b.len() <= IMAGELEN_LIMIT as usize => b.to_vec(),
            ValueRef::Blob(b) => return Err(problem(&ubid, RowFault::TooLarge { bytes: b.len() as u64 })),
            other => return Err(problem(&ubid, RowFault::Column { column: "keyblob", found: type_name(other) })),
        };
        Ok(PubkeyRow { ubid, kind, ephemeral, revoked, keyblob })
    }
}

fn type_name(v: ValueRef<'_>) -> &'static str {
    match v {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    }
}
