//! Whether a database is keyboxd's: its five tables with the columns
//! keyboxd reads and writes (more columns or tables are fine).

use std::ops::ControlFlow;

use super::KeyboxdError;
use crate::io::sqlite::Database;

/// The tables and the columns keyboxd's SQL names.
const TABLES: [(&str, &[&str]); 5] = [
    ("pubkey", &["ubid", "type", "ephemeral", "revoked", "keyblob"]),
    ("fingerprint", &["fpr", "kid", "keygrip", "subkey", "ubid"]),
    ("userid", &["uid", "addrspec", "type", "uidno", "ubid"]),
    ("issuer", &["sn", "dn", "ubid"]),
    ("config", &["name", "value"]),
];

/// Check `db` has keyboxd's tables and columns.
///
/// # Errors
/// [`KeyboxdError::NotKeyboxd`] naming the first missing table or column;
/// SQLite's error (not a database, damaged, locked).
pub(super) fn check(db: &Database) -> Result<(), KeyboxdError> {
    // From SQLite's copy of the schema: no query (and no read transaction)
    // beyond the one that loads it, which keyboxd's first statement makes too.
    let not_keyboxd = |why: String| KeyboxdError::NotKeyboxd { path: db.path().to_path_buf(), why };
    for (table, columns) in TABLES {
        if !db.has(table, None)? {
            let mut tables: Vec<String> = Vec::new();
            db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", [], |row| {
                tables.push(row.get(0).map_err(|e| db.row_error(e))?);
                Ok::<_, KeyboxdError>(ControlFlow::Continue(()))
            })?;
            let found = if tables.is_empty() { "none".to_string() } else { tables.join(", ") };
            return Err(not_keyboxd(format!("no table '{table}' (its tables: {found})")));
        }
        for column in columns {
            if !db.has(table, Some(column))? {
                return Err(not_keyboxd(format!("table '{table}' has no column '{column}'")));
            }
        }
    }
    Ok(())
}
