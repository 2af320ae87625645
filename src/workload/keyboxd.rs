//! `stats` and `dump` of a keyboxd database: what its tables hold, in the
//! spirit of `kbxutil --stats` and `kbxutil` (GnuPG has no such tool for
//! the database). Every other workload reads a database as a keybox
//! (`crate::keyboxd::KeyboxImage`).

use std::fmt::Write as _;
use std::ops::ControlFlow;

use serde::Serialize;

use crate::io::sqlite::Database;
use crate::kbx::dump::hex_upper;
use crate::keyboxd::{KeyboxdError, PubkeyRow, RowProblem, ROW_COLUMNS};

/// What `stats` counts in a database.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DbStats {
    /// Rows of `pubkey`: keys and certificates.
    pub total: u64,
    /// OpenPGP keys (type 1).
    pub openpgp: u64,
    /// X.509 certificates (type 2).
    pub x509: u64,
    /// Rows of another type.
    pub unknown_type: u64,
    /// Rows flagged ephemeral.
    pub ephemeral_flagged: u64,
    /// Rows flagged revoked.
    pub revoked_flagged: u64,
    /// The keyblobs' bytes.
    pub keyblob_bytes: u64,
    /// Rows of `fingerprint` (a key or subkey each).
    pub fingerprints: u64,
    /// Rows of `userid`.
    pub user_ids: u64,
    /// Rows of `issuer`.
    pub issuers: u64,
    /// The `config` table (`dbversion`, `created`).
    pub config: Vec<(String, String)>,
}

impl DbStats {
    /// The counts as lines in `kbxutil --stats`' layout.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let rows: [(&str, u64); 9] = [
            ("Total number of keys", self.total),
            ("openpgp", self.openpgp),
            ("x509", self.x509),
            ("ephemeral flagged", self.ephemeral_flagged),
            ("revoked flagged", self.revoked_flagged),
            ("keyblob bytes", self.keyblob_bytes),
            ("fingerprints", self.fingerprints),
            ("user ids", self.user_ids),
            ("issuers", self.issuers),
        ];
        for (label, v) in rows {
            let _ = writeln!(s, "{label:>21}: {v:8}");
        }
        if self.unknown_type > 0 {
            let _ = writeln!(s, "{:>21}: {:8}", "unknown types", self.unknown_type);
        }
        for (name, value) in &self.config {
            let _ = writeln!(s, "{:>21}: {value}", format!("config {name}"));
        }
        s
    }
}

fn column<T: rusqlite::types::FromSql>(db: &Database, row: &rusqlite::Row<'_>, i: usize) -> Result<T, KeyboxdError> {
    row.get(i).map_err(|e| db.row_error(e).into())
}

/// Count what `db` holds. The keyblobs' lengths are read from their
/// record headers (`length(keyblob)`), not the keyblobs.
///
/// # Errors
/// SQLite's error, or a row whose columns have the wrong types.
pub fn stats(db: &Database) -> Result<DbStats, KeyboxdError> {
    let mut s = DbStats::default();
    db.query("SELECT type, ephemeral, revoked, length(keyblob) FROM pubkey", [], |row| {
        s.total += 1;
        match column::<i64>(db, row, 0)? {
            1 => s.openpgp += 1,
            2 => s.x509 += 1,
            _ => s.unknown_type += 1,
        }
        s.ephemeral_flagged += u64::from(column::<i64>(db, row, 1)? != 0);
        s.revoked_flagged += u64::from(column::<i64>(db, row, 2)? != 0);
        s.keyblob_bytes += column::<Option<u64>>(db, row, 3)?.unwrap_or(0);
        Ok::<_, KeyboxdError>(ControlFlow::Continue(()))
    })?;
    db.query(
        "SELECT (SELECT count(*) FROM fingerprint), (SELECT count(*) FROM userid), (SELECT count(*) FROM issuer)",
        [],
        |row| {
            s.fingerprints = column(db, row, 0)?;
            s.user_ids = column(db, row, 1)?;
            s.issuers = column(db, row, 2)?;
            Ok::<_, KeyboxdError>(ControlFlow::Break(()))
        },
    )?;
    db.query("SELECT name, value FROM config ORDER BY name", [], |row| {
        let value: rusqlite::types::Value = column(db, row, 1)?;
        let value = match value {
            rusqlite::types::Value::Text(t) => t,
            rusqlite::types::Value::Integer(n) => n.to_string(),
            other => format!("{other:?}"),
        };
        s.config.push((column(db, row, 0)?, value));
        Ok::<_, KeyboxdError>(ControlFlow::Continue(()))
    })?;
    Ok(s)
}

/// One dump record: a `pubkey` row with its rows of the search tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbRecord {
    /// The row's place in `ubid` order.
    pub index: u64,
    /// The record body (the lines between `BEGIN-RECORD` and `END-RECORD`).
    pub body: String,
}

fn text_of(v: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(r) => r.to_string(),
        ValueRef::Text(t) => format!("\"{}\"", String::from_utf8_lossy(t).escape_debug()),
        ValueRef::Blob(b) => hex_upper(b),
    }
}

/// Append `prefix[i].column: value` for every row `sql` (bound to `ubid`) gives.
fn related(
    db: &Database,
    body: &mut String,
    sql: &str,
    ubid: &[u8],
    prefix: &str,
    names: &[&str],
) -> Result<(), KeyboxdError> {
    let mut i = 0;
    db.query(sql, [ubid], |row| {
        for (c, name) in names.iter().enumerate() {
            let v = row.get_ref(c).map_err(|e| db.row_error(e))?;
            let _ = writeln!(body, "{prefix}[{i}].{name}: {}", text_of(v));
        }
        i += 1;
        Ok::<_, KeyboxdError>(ControlFlow::Continue(()))
    })?;
    let _ = writeln!(body, "{prefix}-Count: {i}");
    Ok(())
}

/// Dump every row in `ubid` order, handing each record to `emit` as it is
/// read; a row that cannot be read goes to `problem` and the dump goes on.
///
/// # Errors
/// SQLite's error.
pub fn dump(
    db: &Database,
    mut emit: impl FnMut(DbRecord),
    mut problem: impl FnMut(RowProblem),
) -> Result<(), KeyboxdError> {
    let mut index = 0u64;
    db.query(&format!("SELECT {ROW_COLUMNS} FROM pubkey ORDER BY ubid"), [], |row| {
        let r = match PubkeyRow::read(row, index) {
            Ok(r) => r,
            Err(p) => {
                problem(p);
                index += 1;
                return Ok(ControlFlow::Continue(()));
            }
        };
        let kind = match r.kind {
            1 => "1 (OpenPGP)".to_string(),
            2 => "2 (X.509)".to_string(),
            n => format!("{n} (unknown)"),
        };
        let mut body = String::new();
        let _ = writeln!(body, "Ubid: {}", hex_upper(&r.ubid));
        let _ = writeln!(body, "Type: {kind}");
        let _ = writeln!(body, "Ephemeral: {}", if r.ephemeral { "yes" } else { "no" });
        let _ = writeln!(body, "Revoked: {}", if r.revoked { "yes" } else { "no" });
        let _ = writeln!(body, "Keyblob-Length: {}", r.keyblob.len());
        related(
            db,
            &mut body,
            "SELECT fpr, kid, keygrip, subkey FROM fingerprint WHERE ubid = ?1 ORDER BY subkey",
            &r.ubid,
            "Fpr",
            &["fpr", "kid", "keygrip", "subkey"],
        )?;
        related(
            db,
            &mut body,
            "SELECT uid, addrspec, type, uidno FROM userid WHERE ubid = ?1 ORDER BY uidno",
            &r.ubid,
            "Uid",
            &["uid", "addrspec", "type", "uidno"],
        )?;
        related(db, &mut body, "SELECT sn, dn FROM issuer WHERE ubid = ?1", &r.ubid, "Issuer", &["sn", "dn"])?;
        emit(DbRecord { index, body });
        index += 1;
        Ok::<_, KeyboxdError>(ControlFlow::Continue(()))
    })?;
    Ok(())
}
