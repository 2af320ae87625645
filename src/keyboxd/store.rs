//! keyboxd's writes, replayed on a private copy of a database: a new
//! database's start, and the `STORE` request (GnuPG 2.4's
//! `kbx/backend-sqlite.c`, facts only, no code).
//!
//! * **A new database**: the table definitions ([`STARTUP`]) each create
//!   their table or index in a transaction of its own (SQLite's
//!   autocommit), then `dbversion` and `created` are written into `config`,
//!   one `INSERT OR REPLACE` each.
//! * **`STORE`**: one transaction (`begin transaction` … `commit`): the
//!   `pubkey` row inserted (`--insert`) or its keyblob replaced
//!   (`--update`); every `fingerprint` and `userid` row of the key deleted
//!   (and a certificate's `issuer` row), then written anew: one row per key
//!   packet, a certificate's issuer and serial, one row per user id or
//!   subject (`INSERT OR REPLACE`). Each statement is
//!   prepared, stepped and finalized. A commit writes SQLite's rollback
//!   journal beside the database, syncs it and the database, and removes
//!   it (`journal_mode` `delete`, `synchronous` full: SQLite's defaults,
//!   which keyboxd keeps).
//! * **`DELETE`**: one transaction deleting the key's rows from `userid`,
//!   `fingerprint`, `issuer` and `pubkey`, in that order.
//! * **`TRANSACTION begin`** (gpg's `--import-options bulk-import`, sent
//!   on its first connection): keyboxd begins one transaction at the
//!   first search or store after it; stores inside it neither begin nor
//!   commit; `TRANSACTION commit` (gpg sends it as it exits) commits it.

use super::server::{Bulk, Client, Server, STARTUP};
use super::write::Rows;
use crate::io::sqlite::{Database, DbError, Pending};

/// How a key is stored (`STORE --insert` or `--update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreMode {
    /// A key not in the database.
    Insert,
    /// A key in the database, its keyblob replaced.
    Update,
}

/// Run `sql` once: prepared, bound by `bind`, stepped to its end, finalized.
fn exec(db: &Database, sql: &str, bind: impl FnOnce(&mut Pending<'_>) -> Result<(), DbError>) -> Result<(), DbError> {
    let mut stmt = db.prepare_pending(sql)?;
    bind(&mut stmt)?;
    while stmt.step()? {}
    Ok(())
}

/// Bind `ubid` to `?1`.
fn ubid_only(ubid: &[u8]) -> impl FnOnce(&mut Pending<'_>) -> Result<(), DbError> + '_ {
    move |s| s.bind_blob(1, ubid)
}

/// keyboxd serving `client` (gpg or gpgsm) from a database it may write,
/// started: the table definitions run, and, when `config` holds no
/// `dbversion` (a new database), the version and `created` (`YYYY-MM-DD
/// HH:MM:SS`, UTC) written.
///
/// # Errors
/// SQLite's error.
pub(crate) fn start<'db>(db: &'db Database, created: &str, client: Client) -> Result<Server<'db>, DbError> {
    let mut versioned = true;
    for sql in STARTUP {
        let mut stmt = db.prepare_pending(sql)?;
        let mut rows = 0;
        while stmt.step()? {
            rows += 1;
        }
        if sql.contains("name='dbversion'") {
            versioned = rows > 0;
        }
    }
    if !versioned {
        for (name, value) in [("dbversion", "1"), ("created", created)] {
            exec(db, "INSERT OR REPLACE INTO config(name,value) VALUES(?1,?2)", |s| {
                s.bind_text(1, name.as_bytes())?;
                s.bind_text(2, value.as_bytes())
            })?;
        }
    }
    Ok(Server::started(db, client))
}

impl Server<'_> {
    /// A `STORE` request: `keyblob` with its `rows`, in one transaction
    /// ([`Self::transaction`]).
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn store(&self, keyblob: &[u8], rows: &Rows, mode: StoreMode) -> Result<(), DbError> {
        self.transaction(|| self.store_rows(keyblob, rows, mode))
    }

    /// A `DELETE` request: the key with `ubid` removed from every table
    /// (`userid`, `fingerprint`, `issuer`, `pubkey`), in one transaction
    /// ([`Self::transaction`]).
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn delete(&self, ubid: &[u8]) -> Result<(), DbError> {
        self.transaction(|| {
            for table in ["userid", "fingerprint", "issuer", "pubkey"] {
                exec(self.database(), &format!("DELETE from {table} WHERE ubid = ?1"), ubid_only(ubid))?;
            }
            Ok(())
        })
    }

    /// A request's statements in a transaction of their own (committed, or
    /// rolled back if one fails), or inside the global one a client asked
    /// for (begun here if it has not begun; not ended here).
    fn transaction(&self, rows: impl FnOnce() -> Result<(), DbError>) -> Result<(), DbError> {
        if self.join_bulk()? {
            return rows();
        }
        let db = self.database();
        exec(db, "begin transaction", |_| Ok(()))?;
        match rows() {
            Ok(()) => exec(db, "commit", |_| Ok(())),
            Err(e) => {
                let _ = exec(db, "rollback", |_| Ok(()));
                Err(e)
            }
        }
    }

    /// `TRANSACTION begin`: the stores and searches that follow run in one
    /// transaction, begun by the first of them.
    pub(crate) fn begin_bulk(&self) {
        self.bulk.set(Bulk { asked: true, active: false });
    }

    /// `TRANSACTION commit`: the global transaction committed, if it began.
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn commit_bulk(&self) -> Result<(), DbError> {
        let bulk = self.bulk.replace(Bulk::default());
        if bulk.active {
            exec(self.database(), "commit", |_| Ok(()))?;
        }
        Ok(())
    }

    fn store_rows(&self, keyblob: &[u8], rows: &Rows, mode: StoreMode) -> Result<(), DbError> {
        let db = self.database();
        let ubid = &rows.ubid[..];
        let sql = match mode {
            StoreMode::Update => "UPDATE pubkey set keyblob = ?3, type = ?2 WHERE ubid = ?1",
            StoreMode::Insert => "INSERT INTO pubkey(ubid,type,keyblob) VALUES(?1,?2,?3)",
        };
        exec(db, sql, |s| {
            s.bind_blob(1, ubid)?;
            s.bind_int(2, rows.kind)?;
            s.bind_blob(3, keyblob)
        })?;
        exec(db, "DELETE FROM fingerprint WHERE ubid = ?1", ubid_only(ubid))?;
        exec(db, "DELETE FROM userid WHERE ubid = ?1", ubid_only(ubid))?;
        if rows.issuer.is_some() {
            exec(db, "DELETE FROM issuer WHERE ubid = ?1", ubid_only(ubid))?;
        }
        for (subkey, (fpr, kid, grip)) in rows.keys.iter().enumerate() {
            exec(db, "INSERT OR REPLACE INTO fingerprint(fpr,kid,keygrip,subkey,ubid) VALUES(?1,?2,?3,?4,?5)", |s| {
                s.bind_blob(1, fpr)?;
                s.bind_blob(2, kid)?;
                s.bind_blob(3, grip)?;
                s.bind_int(4, subkey as i64)?;
                s.bind_blob(5, ubid)
            })?;
        }
        // A certificate's issuer and serial come between its fingerprint
        // and its subjects, as keyboxd writes them.
        if let Some((sn, dn)) = &rows.issuer {
            exec(db, "INSERT OR REPLACE INTO issuer(sn,dn,ubid) VALUES(?1,?2,?3)", |s| {
                s.bind_text(1, sn.as_bytes())?;
                s.bind_text(2, dn)?;
                s.bind_blob(3, ubid)
            })?;
        }
        for (uid, addrspec, uidno) in &rows.uids {
            exec(db, "INSERT OR REPLACE INTO userid(uid,addrspec,type,ubid,uidno) VALUES(?1,?2,?3,?4,?5)", |s| {
                s.bind_text(1, uid)?;
                match addrspec {
                    Some(a) => s.bind_text(2, a.as_bytes())?,
                    None => s.bind_null(2)?,
                }
                s.bind_int(3, rows.kind)?;
                s.bind_blob(4, ubid)?;
                s.bind_int(5, *uidno)
            })?;
        }
        Ok(())
    }
}
