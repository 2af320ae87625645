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
    // One query (one read transaction): every table with its columns.
    let mut have: Vec<(String, String)> = Vec::new();
    db.query(
        "SELECT m.name, c.name FROM sqlite_master AS m, pragma_table_info(m.name) AS c WHERE m.type = 'table'",
        [],
        |row| {
            have.push((row.get(0).map_err(|e| db.row_error(e))?, row.get(1).map_err(|e| db.row_error(e))?));
            Ok::<_, KeyboxdError>(ControlFlow::Continue(()))
        },
    )?;
    let not_keyboxd = |why: String| KeyboxdError::NotKeyboxd { path: db.path().to_path_buf(), why };
    for (table, columns) in TABLES {
        if !have.iter().any(|(t, _)| t == table) {
            let mut tables: Vec<&str> = have.iter().map(|(t, _)| t.as_str()).collect();
            tables.dedup();
            let found = if tables.is_empty() { "none".to_string() } else { tables.join(", ") };
            return Err(not_keyboxd(format!("no table '{table}' (its tables: {found})")));
        }
        if let Some(missing) = columns.iter().find(|c| !have.iter().any(|(t, h)| t == table && h == *c)) {
            return Err(not_keyboxd(format!("table '{table}' has no column '{missing}'")));
        }
    }
    Ok(())
}
