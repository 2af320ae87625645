//! One row of keyboxd's `pubkey` table, read with its types checked and
//! its lengths capped before anything is copied.

use std::fmt;

use rusqlite::types::ValueRef;

use crate::kbx::create::CreateError;
use crate::kbx::IMAGELEN_LIMIT;

/// What is wrong with one row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowFault {
    /// A column holds a value of the wrong type.
    #[error("column '{column}' holds {found}")]
    Column {
        /// The column.
        column: &'static str,
        /// What it holds.
        found: &'static str,
    },
    /// The keyblob is larger than a keybox blob may be.
    #[error("its keyblob has {bytes} bytes, more than the 5 MiB a keybox blob may have")]
    TooLarge {
        /// Its length.
        bytes: u64,
    },
    /// A type keyboxd does not write.
    #[error("type {0} is neither 1 (OpenPGP) nor 2 (X.509)")]
    UnknownType(i64),
    /// The keyblob is no keyblock or certificate.
    #[error("its keyblob is {}: {source}", if *.openpgp { "no OpenPGP keyblock" } else { "no X.509 certificate" })]
    Keyblob {
        /// Whether the row says OpenPGP.
        openpgp: bool,
        /// Why.
        source: CreateError,
    },
}

/// A row that could not be taken, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowProblem {
    /// The row's place in `ubid` order (0 = the first).
    pub index: u64,
    /// Its `ubid` in hex (empty when unreadable).
    pub ubid: String,
    /// What is wrong.
    pub fault: RowFault,
}

impl fmt::Display for RowProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "row {}", self.index)?;
        if !self.ubid.is_empty() {
            write!(f, " (ubid {})", self.ubid)?;
        }
        write!(f, ": {}", self.fault)
    }
}

impl std::error::Error for RowProblem {}

/// The columns of `pubkey` every read of a row selects, in this order.
pub(crate) const ROW_COLUMNS: &str = "ubid, type, ephemeral, revoked, keyblob";

/// The longest `ubid` taken (keyboxd's are 20 bytes).
const UBID_LIMIT: usize = 64;

/// One key or certificate of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PubkeyRow {
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
    pub(crate) fn read(row: &rusqlite::Row<'_>, index: u64) -> Result<PubkeyRow, RowProblem> {
        let value = |i: usize| row.get_ref(i).unwrap_or(ValueRef::Null);
        let blob = |i: usize| match value(i) {
            ValueRef::Blob(b) => Ok(b),
            other => Err(type_name(other)),
        };
        let int = |i: usize| match value(i) {
            ValueRef::Integer(n) => Ok(n),
            other => Err(type_name(other)),
        };
        Self::from_columns(index, blob(0), [int(1), int(2), int(3)], blob(4))
    }

    /// The row `index` from its columns: `ubid` and `keyblob` as blobs,
    /// `type`, `ephemeral` and `revoked` as integers, or what each holds instead.
    ///
    /// # Errors
    /// As [`PubkeyRow::read`].
    pub(crate) fn from_columns(
        index: u64,
        ubid: Result<&[u8], &'static str>,
        ints: [Result<i64, &'static str>; 3],
        keyblob: Result<&[u8], &'static str>,
    ) -> Result<PubkeyRow, RowProblem> {
        let problem = |ubid: &[u8], fault| RowProblem { index, ubid: ubid_hex(ubid), fault };
        let ubid = match ubid {
            Ok(b) if b.len() <= UBID_LIMIT => b.to_vec(),
            Ok(b) => {
                return Err(problem(
                    &b[..UBID_LIMIT],
                    RowFault::Column { column: "ubid", found: "a blob over 64 bytes" },
                ))
            }
            Err(found) => return Err(problem(&[], RowFault::Column { column: "ubid", found })),
        };
        let [kind, ephemeral, revoked] = ints;
        let int = |v: Result<i64, &'static str>, column: &'static str| {
            v.map_err(|found| problem(&ubid, RowFault::Column { column, found }))
        };
        let kind = int(kind, "type")?;
        let ephemeral = int(ephemeral, "ephemeral")? != 0;
        let revoked = int(revoked, "revoked")? != 0;
        let keyblob = match keyblob {
            Ok(b) if b.len() <= IMAGELEN_LIMIT as usize => b.to_vec(),
            Ok(b) => return Err(problem(&ubid, RowFault::TooLarge { bytes: b.len() as u64 })),
            Err(found) => return Err(problem(&ubid, RowFault::Column { column: "keyblob", found })),
        };
        Ok(PubkeyRow { ubid, kind, ephemeral, revoked, keyblob })
    }
}

/// What a column holds instead of the type wanted.
pub(super) fn type_name(v: ValueRef<'_>) -> &'static str {
    match v {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    }
}
