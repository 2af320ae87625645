//! keyboxd's side of a gpg or gpgsm run, replayed on the database: what
//! keyboxd 2.4 does for each request (GnuPG's `kbx/backend-sqlite.c`,
//! `frontend.c`, `kbxserver.c`; facts only, no code), so that SQLite reads
//! the same pages with the same calls.
//!
//! * **One connection** for the whole run (keyboxd opens it at the first
//!   search and never closes it). Before that first search keyboxd runs
//!   its table definitions: `PRAGMA foreign_keys = ON`, `CREATE TABLE IF
//!   NOT EXISTS` and `CREATE INDEX IF NOT EXISTS` for every table and index
//!   (no-ops on an existing database, each a read transaction of its own)
//!   and two `SELECT value FROM config` lookups ([`Server::start`]).
//! * **One pending `SELECT` per client session**: a `SEARCH` request runs
//!   the mode's query — the five `pubkey` columns, joined with
//!   `fingerprint`, `userid` or `issuer` by `ubid`, the client's type filter
//!   (`--openpgp`: `p.type = 1`, gpg; `--x509`: `p.type = 2`, gpgsm),
//!   `ORDER BY p.ubid` — and returns its first row; `NEXT` steps the same
//!   statement on. A search of the same mode resets and rebinds the
//!   statement, another mode finalizes it and prepares anew. Rows of the
//!   `ubid` just returned are skipped (a key matching by two user ids).
//!   The statement is left pending after a row, so SQLite keeps its read
//!   lock and page cache from one request to the next: the whole run is
//!   one read transaction once the listing has started.
//! * Sorted plans (`ORDER BY` over a join) read every matching row,
//!   keyblob included, at their first step; SQLite reads a keyblob's
//!   overflow pages past its page cache (straight into the row), so every
//!   fetch of a large keyblob costs its `pread`s again. The cache in front
//!   of the database (`backend-cache.c`) is filled but never asked in 2.4:
//!   it saves nothing, and is not modelled.

use std::cell::RefCell;

use super::image::blob_of;
use super::rows::RowProblem;
use super::rows::{ubid_hex, PubkeyRow};
use crate::io::sqlite::{Database, DbError, Pending};
use crate::kbx::dump::hex_upper;

/// Which keys a client asks for (`SEARCH --openpgp` / `--x509`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Client {
    /// gpg: OpenPGP keys only.
    Gpg,
    /// gpgsm: certificates only.
    Gpgsm,
}

impl Client {
    fn extra(self) -> &'static str {
        match self {
            Client::Gpg => " AND p.type = 1",
            Client::Gpgsm => " AND p.type = 2",
        }
    }

    fn first(self) -> &'static str {
        match self {
            Client::Gpg => " WHERE p.type = 1 ORDER by ubid",
            Client::Gpgsm => " WHERE p.type = 2 ORDER by ubid",
        }
    }
}

/// A search a client sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Search {
    /// Every key, in `ubid` order (`SEARCH` without a pattern).
    First,
    /// By a key's or subkey's fingerprint.
    Fpr(Vec<u8>),
    /// By a 64-bit key id.
    LongKid([u8; 8]),
    /// By issuer DN and serial number (X.509).
    IssuerSn {
        /// The issuer in libksba's string form.
        dn: Vec<u8>,
        /// The serial number's bytes.
        serial: Vec<u8>,
    },
    /// By subject DN (X.509).
    Subject(Vec<u8>),
}

impl Search {
    /// The mode, for keyboxd's keep-or-prepare rule.
    fn mode(&self) -> u8 {
        match self {
            Search::First => 0,
            Search::Fpr(_) => 1,
            Search::LongKid(_) => 2,
            Search::IssuerSn { .. } => 3,
            Search::Subject(_) => 4,
        }
    }

    fn sql(&self, client: Client) -> String {
        const P: &str = "SELECT p.ubid, p.type, p.ephemeral, p.revoked, p.keyblob";
        const TAIL: &str = " ORDER BY p.ubid";
        let extra = client.extra();
        match self {
            Search::First => {
                format!("SELECT ubid, type, ephemeral, revoked, keyblob FROM pubkey as p{}", client.first())
            }
            Search::Fpr(_) => {
                format!("{P}, f.subkey FROM pubkey as p, fingerprint as f WHERE p.ubid = f.ubid AND f.fpr = ?1{extra}{TAIL}")
            }
            Search::LongKid(_) => {
                format!("{P}, f.subkey FROM pubkey as p, fingerprint as f WHERE p.ubid = f.ubid AND f.kid = ?1{extra}{TAIL}")
            }
            Search::IssuerSn { .. } => format!(
                "{P} FROM pubkey as p, issuer as i WHERE p.ubid = i.ubid AND i.sn = $1 AND i.dn = $2{extra}{TAIL}"
            ),
            Search::Subject(_) => {
                format!("{P}, u.uidno FROM pubkey as p, userid as u WHERE p.ubid = u.ubid AND u.uid = $1{extra}{TAIL}")
            }
        }
    }

    fn bind(&self, stmt: &mut Pending<'_>) -> Result<(), DbError> {
        match self {
            Search::First => Ok(()),
            Search::Fpr(f) => stmt.bind_blob(1, f),
            Search::LongKid(k) => stmt.bind_blob(1, k),
            Search::IssuerSn { dn, serial } => {
                stmt.bind_text(1, hex_upper(serial).as_bytes())?;
                stmt.bind_text(2, dn)
            }
            Search::Subject(dn) => stmt.bind_text(1, dn),
        }
    }
}

/// One row keyboxd hands back: the row and the keybox blob GnuPG's
/// writer makes for it.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The row.
    pub row: PubkeyRow,
    /// Its blob (for the workloads, which read blobs).
    pub blob: Vec<u8>,
}

/// A client session's state in keyboxd.
#[derive(Default)]
struct SessionState<'db> {
    stmt: Option<(u8, Pending<'db>)>,
    last_ubid: Option<Vec<u8>>,
    eof: bool,
    /// Rows handed back since the session began (names a row in messages).
    rows: u64,
}

/// A client connection to keyboxd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Session(usize);

/// keyboxd, replayed on a database.
pub(crate) struct Server<'db> {
    db: &'db Database,
    client: Client,
    sessions: RefCell<Vec<SessionState<'db>>>,
    problems: RefCell<Vec<RowProblem>>,
    /// A client's `TRANSACTION begin` (gpg's `bulk-import`): asked for,
    /// and begun in SQL.
    pub(super) bulk: std::cell::Cell<Bulk>,
}

/// keyboxd's global transaction (`TRANSACTION begin` … `commit`): asked
/// for by a client, begun in SQL by the first search or store after it,
/// committed when the client commits (gpg: as it exits).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Bulk {
    /// A client asked for it.
    pub(crate) asked: bool,
    /// `begin transaction` has run.
    pub(crate) active: bool,
}

impl std::fmt::Debug for Server<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("client", &self.client).finish_non_exhaustive()
    }
}

/// keyboxd's table definitions, run before its first search (no-ops on
/// an existing database: `IF NOT EXISTS`).
pub(super) const STARTUP: [&str; 15] = [
    "PRAGMA foreign_keys = ON",
    "CREATE TABLE IF NOT EXISTS config (name  TEXT NOT NULL UNIQUE,value TEXT NOT NULL )",
    "SELECT value FROM config WHERE name='dbversion'",
    "SELECT value FROM config WHERE name='created'",
    "CREATE TABLE IF NOT EXISTS pubkey (ubid     BLOB NOT NULL PRIMARY KEY,type  INTEGER NOT NULL,\
     ephemeral INTEGER NOT NULL DEFAULT 0,revoked INTEGER NOT NULL DEFAULT 0,keyblob BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fingerprint (fpr  BLOB NOT NULL PRIMARY KEY,kid  BLOB NOT NULL,\
     keygrip BLOB NOT NULL,subkey INTEGER NOT NULL,ubid BLOB NOT NULL REFERENCES pubkey)",
    "CREATE INDEX IF NOT EXISTS fingerprintidx0 on fingerprint (ubid)",
    "CREATE INDEX IF NOT EXISTS fingerprintidx1 on fingerprint (fpr)",
    "CREATE INDEX IF NOT EXISTS fingerprintidx2 on fingerprint (keygrip)",
    "CREATE TABLE IF NOT EXISTS userid (uid  TEXT NOT NULL,addrspec TEXT,type  INTEGER NOT NULL,\
     uidno INTEGER NOT NULL,ubid BLOB NOT NULL REFERENCES pubkey)",
    "CREATE INDEX IF NOT EXISTS userididx0 on userid (ubid)",
    "CREATE INDEX IF NOT EXISTS userididx1 on userid (uid)",
    "CREATE INDEX IF NOT EXISTS userididx3 on userid (addrspec)",
    "CREATE TABLE IF NOT EXISTS issuer (sn TEXT NOT NULL,dn TEXT NOT NULL,ubid BLOB NOT NULL REFERENCES pubkey)",
    "CREATE INDEX IF NOT EXISTS issueridx1 on issuer (dn)",
];

impl<'db> Server<'db> {
    /// keyboxd serving `client` from `db`, started: its table
    /// definitions run, each statement prepared, stepped to its end and
    /// finalized.
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn start(db: &'db Database, client: Client) -> Result<Self, DbError> {
        for sql in STARTUP {
            let mut stmt = db.prepare_pending(sql)?;
            while stmt.step()? {}
        }
        Ok(Self::started(db, client))
    }

    /// keyboxd serving `client` from `db`, its start already run.
    pub(super) fn started(db: &'db Database, client: Client) -> Self {
        Self { db, client, sessions: RefCell::default(), problems: RefCell::default(), bulk: Default::default() }
    }

    /// The database keyboxd serves.
    pub(crate) fn database(&self) -> &'db Database {
        self.db
    }

    /// A new client connection.
    pub(crate) fn connect(&self) -> Session {
        let mut s = self.sessions.borrow_mut();
        s.push(SessionState::default());
        Session(s.len() - 1)
    }

    /// Rows whose keyblob could not be made into a blob (passed over).
    pub(crate) fn problems(&self) -> Vec<RowProblem> {
        self.problems.borrow().clone()
    }

    /// A `SEARCH` request on `session`: its first row, or `None`.
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn search(&self, session: Session, what: &Search) -> Result<Option<Found>, DbError> {
        self.join_bulk()?;
        let mut sessions = self.sessions.borrow_mut();
        let s = &mut sessions[session.0];
        s.last_ubid = None;
        s.eof = false;
        let mode = what.mode();
        match &mut s.stmt {
            Some((m, stmt)) if *m == mode => {
                stmt.reset();
                what.bind(stmt)?;
            }
            slot => {
                *slot = None; // finalize the other mode's statement first
                let mut stmt = self.db.prepare_pending(&what.sql(self.client))?;
                what.bind(&mut stmt)?;
                *slot = Some((mode, stmt));
            }
        }
        self.step(s)
    }

    /// Whether a request runs inside the global transaction a client asked
    /// for (`TRANSACTION begin`), which the first request after the ask
    /// begins in SQL.
    ///
    /// # Errors
    /// SQLite's error.
    pub(super) fn join_bulk(&self) -> Result<bool, DbError> {
        let bulk = self.bulk.get();
        if bulk.asked && !bulk.active {
            self.db.prepare_pending("begin transaction")?.step()?;
            self.bulk.set(Bulk { active: true, ..bulk });
        }
        Ok(bulk.asked)
    }

    /// A `SEARCH` on `session` and `NEXT` until no row is left (gpg's
    /// question for a secret key: every key with that id).
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn search_to_end(&self, session: Session, what: &Search) -> Result<(), DbError> {
        let mut found = self.search(session, what)?;
        while found.is_some() {
            found = self.next(session)?;
        }
        Ok(())
    }

    /// A `NEXT` request on `session`: the next row of its search.
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn next(&self, session: Session) -> Result<Option<Found>, DbError> {
        let mut sessions = self.sessions.borrow_mut();
        self.step(&mut sessions[session.0])
    }

    /// Step to the next row of another `ubid` than the last one returned.
    fn step(&self, s: &mut SessionState<'db>) -> Result<Option<Found>, DbError> {
        if s.eof {
            return Ok(None);
        }
        let Some((_, stmt)) = s.stmt.as_mut() else { return Ok(None) };
        loop {
            if !stmt.step()? {
                s.eof = true;
                return Ok(None);
            }
            let ubid = stmt.column_bytes(0);
            if s.last_ubid.as_deref() == Some(ubid) {
                continue;
            }
            s.last_ubid = Some(ubid.to_vec());
            let index = s.rows;
            s.rows += 1;
            let problem = match read_row(stmt, index) {
                Ok(row) => match blob_of(&row) {
                    Ok(blob) => return Ok(Some(Found { row, blob })),
                    Err(fault) => RowProblem { index, ubid: ubid_hex(&row.ubid), fault },
                },
                Err(p) => p,
            };
            // Each bad row once, however many searches meet it.
            let mut problems = self.problems.borrow_mut();
            if !problems.iter().any(|p| p.ubid == problem.ubid) {
                problems.push(problem);
            }
        }
    }
}

/// The row a statement stands on (its first five columns), checked like
/// every row ([`PubkeyRow::read`]).
fn read_row(stmt: &Pending<'_>, index: u64) -> Result<PubkeyRow, RowProblem> {
    let blob = |i| if stmt.column_is_blob(i) { Ok(stmt.column_bytes(i)) } else { Err("another type than a blob") };
    let int = |i| if stmt.column_is_int(i) { Ok(stmt.column_int(i)) } else { Err("another type than an integer") };
    PubkeyRow::from_columns(index, blob(0), [int(1), int(2), int(3)], blob(4))
}
