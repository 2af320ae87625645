//! SQLite databases (keyboxd's `pubring.db`), read through the same
//! counting layer as keyboxes.
//!
//! [`Database::open`] opens a database **read-only** (`SQLITE_OPEN_READONLY`:
//! SQLite opens the file `O_RDONLY` and never creates a journal, WAL or
//! `-shm` file) on SQLite's default unix VFS, whose table of system calls
//! points at this module's hooks: every `open`, `pread`,
//! `fstat`, `stat`, `lstat`, `access`, `fcntl` lock, `readlink`, `mmap` and
//! `close` SQLite issues is a file event, timed, counted per file (the
//! database, its journal, the directories on its path) and traced like
//! the keybox layer's own, and what would write is refused before it
//! reaches the kernel. The counts equal `strace`'s.
//!
//! On Windows the default VFS is win32, and its table's entries are hooked
//! the same way (`win32/`): `CreateFileW`, `ReadFile`, `GetFileSize`,
//! `LockFileEx`/`UnlockFileEx`, `GetFileAttributesExW`, `CloseHandle`, and
//! for a private copy `WriteFile`, `SetEndOfFile`, `FlushFileBuffers`,
//! `DeleteFileW` (docs/windows.md).
//!
//! [`Database::open_private`] opens a write replay's private copy
//! read-write (on Unix on kbxscope's wrapper of the unix VFS, which counts
//! its `fsync`s): there SQLite's writes, truncations, unlinks and syncs (of
//! the database, its journal and its directory) are made and counted too.
//!
//! SQLite itself is built from the source `rusqlite` bundles, with its
//! default page cache (2000 KiB), no memory mapping, and the busy timeout
//! `rusqlite` sets (5 s: a reader waits that long for a writer such as
//! keyboxd to finish its transaction, then fails with "database is locked").

mod pending;
mod sink;
#[cfg(unix)]
mod syscalls;
mod table;
#[cfg(windows)]
mod win32;
#[cfg(windows)]
use win32 as syscalls;

use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use rusqlite::{Connection, OpenFlags};

pub(crate) use pending::Pending;
use sink::{Armed, Sink};

use super::event::tracing_events;
use super::tally::IoTally;
use crate::events::FileStats;

/// What went wrong with a database.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// SQLite could not be set up to count its calls.
    #[error("cannot count SQLite's system calls: {0}")]
    Hooks(#[from] table::HookError),
    /// Another database is open on this thread.
    #[error("'{}': another database is open on this thread", path.display())]
    Busy {
        /// The database.
        path: PathBuf,
    },
    /// SQLite reported an error (described in the message, so not also
    /// chained as a source: one line says it once).
    #[error("'{}': {}", path.display(), describe(error))]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// SQLite's error.
        error: rusqlite::Error,
    },
    /// SQLite wanted to change a file, which was refused.
    #[error("'{}': SQLite wanted to {what}{}: refused, nothing was written", path.display(), why_write(what))]
    Refused {
        /// The database.
        path: PathBuf,
        /// The refused call and its file.
        what: String,
    },
}

fn why_write(what: &str) -> &'static str {
    if what.ends_with("-shm") || what.ends_with("-wal") {
        " (the database is in WAL mode, which a reader must write beside; keyboxd's databases use a rollback journal)"
    } else if what.ends_with("-journal") {
        " (a hot journal: a writer stopped in the middle of a transaction, and only a writer can roll it back)"
    } else {
        ""
    }
}

/// SQLite's message, with what its result code means for a reader.
fn describe(e: &rusqlite::Error) -> String {
    use rusqlite::ffi::ErrorCode;
    match e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            let text = msg.clone().unwrap_or_else(|| f.to_string());
            match f.code {
                ErrorCode::NotADatabase => format!("not an SQLite database: {text}"),
                ErrorCode::DatabaseCorrupt => format!("the database is damaged: {text}"),
                ErrorCode::DiskFull => format!("{text} (no space left on its file system)"),
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                    format!("{text} (another process, such as keyboxd, holds a write lock; waited 5 s)")
                }
                _ => text,
            }
        }
        other => other.to_string(),
    }
}

/// An SQLite database open read-only, its system calls counted into an
/// [`IoTally`] when it closes (on drop).
///
/// One database at a time per thread (the hooks count into the thread's
/// sink). Not `Send`.
pub struct Database {
    conn: Option<Connection>,
    armed: Option<Armed>,
    path: PathBuf,
    tally: IoTally,
    _not_send: PhantomData<Rc<()>>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Database {
    /// Open `path` read-only; its events go to `tally` when it closes.
    /// Nothing is read yet but what SQLite reads to open (the header, for
    /// its first query the schema).
    ///
    /// # Errors
    /// [`DbError`]: SQLite's, or another database already open on this thread.
    pub fn open(path: &Path, tally: &IoTally) -> Result<Self, DbError> {
        Self::open_as(path, tally, false)
    }

    /// Open (or create) `path` for writing, as keyboxd does
    /// (`SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE`): for a private copy
    /// kbxscope writes, never a user's store. Every call SQLite makes is
    /// counted, its writes, `fsync`s, journal removals included.
    ///
    /// # Errors
    /// [`DbError`]: SQLite's, or another database already open on this thread.
    pub fn open_private(path: &Path, tally: &IoTally) -> Result<Self, DbError> {
        Self::open_as(path, tally, true)
    }

    fn open_as(path: &Path, tally: &IoTally, writes: bool) -> Result<Self, DbError> {
        syscalls::install()?;
        let template = tally.fresh_stats();
        let armed = Armed::arm(Sink::new(template, tracing_events(), writes))
            .ok_or_else(|| DbError::Busy { path: path.to_path_buf() })?;
        let mut db = Database {
            conn: None,
            armed: Some(armed),
            path: path.to_path_buf(),
            tally: tally.clone(),
            _not_send: PhantomData,
        };
        let common = OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_EXRESCODE;
        let opened = if writes {
            let flags = common | OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
            Connection::open_with_flags_and_vfs(path, flags, syscalls::VFS_NAME)
        } else {
            Connection::open_with_flags(path, common | OpenFlags::SQLITE_OPEN_READ_ONLY)
        };
        match opened {
            Ok(c) => db.conn = Some(c),
            Err(e) => return Err(db.error(e)),
        }
        Ok(db)
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The error for SQLite's `e`: a refused write if one caused it.
    fn error(&self, e: rusqlite::Error) -> DbError {
        let refused = self.armed.as_ref().and_then(|a| a.with(|s| s.refused.clone()));
        match refused {
            Some(what) => DbError::Refused { path: self.path.clone(), what },
            None => DbError::Sqlite { path: self.path.clone(), error: e },
        }
    }

    /// Run `sql` with `params` (a prepared statement kept for the next call
    /// with the same text, as keyboxd keeps its statements) and hand each
    /// row to `each`, until it breaks or the rows end. Returns how many rows
    /// were handed over.
    ///
    /// # Errors
    /// SQLite's error, or the first `each` returned.
    pub fn query<P: rusqlite::Params, E: From<DbError>>(
        &self,
        sql: &str,
        params: P,
        mut each: impl FnMut(&rusqlite::Row<'_>) -> Result<ControlFlow<()>, E>,
    ) -> Result<u64, E> {
        let conn = self.conn.as_ref().expect("open until dropped");
        let run = || -> Result<Result<u64, E>, rusqlite::Error> {
            let mut stmt = conn.prepare_cached(sql)?;
            let mut rows = stmt.query(params)?;
            let mut n = 0;
            while let Some(row) = rows.next()? {
                n += 1;
                match each(row) {
                    Ok(ControlFlow::Continue(())) => {}
                    Ok(ControlFlow::Break(())) => break,
                    Err(e) => return Ok(Err(e)),
                }
            }
            Ok(Ok(n))
        };
        match run() {
            Ok(r) => r,
            Err(e) => Err(self.error(e).into()),
        }
    }

    /// Whether the table `table` exists, and (with `column`) has that
    /// column: from the schema SQLite reads once (at the first statement
    /// or the first of these questions: one read transaction), without a
    /// query of its own.
    ///
    /// # Errors
    /// SQLite's error (the schema cannot be read).
    pub fn has(&self, table: &str, column: Option<&str>) -> Result<bool, DbError> {
        let conn = self.conn.as_ref().expect("open until dropped");
        let r = match column {
            Some(c) => conn.column_exists(None, table, c),
            None => conn.table_exists(None, table),
        };
        r.map_err(|e| self.error(e))
    }

    /// Set SQLite's page cache to `kib` KiB (`PRAGMA cache_size = -kib`;
    /// no file access).
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn set_cache_kib(&self, kib: u64) -> Result<(), DbError> {
        let conn = self.conn.as_ref().expect("open until dropped");
        conn.execute_batch(&format!("PRAGMA cache_size = -{}", kib.max(1))).map_err(|e| self.error(e))
    }

    /// Turn SQLite's `secure_delete` on or off (no file access): freed
    /// pages overwritten with zeros, so written and journaled.
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn set_secure_delete(&self, on: bool) -> Result<(), DbError> {
        let conn = self.conn.as_ref().expect("open until dropped");
        conn.execute_batch(&format!("PRAGMA secure_delete = {}", u8::from(on))).map_err(|e| self.error(e))
    }

    /// Wrap SQLite's error for a row the caller could not take.
    pub(crate) fn row_error(&self, e: rusqlite::Error) -> DbError {
        self.error(e)
    }

    /// Close the connection (its `close`s counted) and add every event to
    /// the tally, per file and in total.
    fn finish(&mut self) {
        if let Some(conn) = self.conn.take() {
            // A failed close (a statement still open) closes on drop anyway.
            let _ = conn.close();
        }
        let Some(armed) = self.armed.take() else { return };
        let sink = armed.disarm();
        let files: Vec<FileStats> =
            sink.files.into_iter().map(|(n, stats)| FileStats { path: n.to_string(), stats }).collect();
        // SQLite's calls are rows of their own, per file (never a keybox
        // read handle's).
        self.tally.settle_written(files);
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.finish();
    }
}
