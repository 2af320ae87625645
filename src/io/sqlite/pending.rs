//! A prepared statement that stays where it stopped: stepped one row at
//! a time across calls, reset and bound again, finalized when dropped —
//! the way keyboxd keeps one `SELECT` per client session open between
//! requests. (`rusqlite` resets a statement when its rows are dropped, and
//! whether a statement is left pending decides how long SQLite holds its
//! read lock and page cache, so the replay needs SQLite's own calls.)

#![allow(unsafe_code)]

use std::ffi::{c_int, CString};
use std::marker::PhantomData;
use std::ptr;

use rusqlite::ffi;

use super::{Database, DbError};

/// A statement of a [`Database`], pending between steps.
pub(crate) struct Pending<'db> {
    db: &'db Database,
    stmt: *mut ffi::sqlite3_stmt,
    _not_send: PhantomData<*mut ()>,
}

impl std::fmt::Debug for Pending<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").finish_non_exhaustive()
    }
}

impl Database {
    /// Prepare `sql` as a statement kept pending between steps.
    ///
    /// # Errors
    /// SQLite's error (a syntax error, the schema unreadable).
    pub(crate) fn prepare_pending(&self, sql: &str) -> Result<Pending<'_>, DbError> {
        let conn = self.conn.as_ref().expect("open until dropped");
        let text = CString::new(sql).map_err(|_| self.sqlite_error(ffi::SQLITE_MISUSE, "SQL with a NUL byte"))?;
        let mut stmt = ptr::null_mut();
        // SAFETY: the connection's handle is valid while `conn` lives (the
        // statement borrows the database, so it is finalized before the
        // connection closes); `text` is NUL-terminated (length -1).
        let rc = unsafe { ffi::sqlite3_prepare_v2(conn.handle(), text.as_ptr(), -1, &mut stmt, ptr::null_mut()) };
        if rc != ffi::SQLITE_OK {
            return Err(self.handle_error(rc));
        }
        Ok(Pending { db: self, stmt, _not_send: PhantomData })
    }

    /// SQLite's error `rc` on the connection, with its message.
    fn handle_error(&self, rc: c_int) -> DbError {
        let conn = self.conn.as_ref().expect("open until dropped");
        // SAFETY: the handle is valid; sqlite3_errmsg returns a
        // NUL-terminated string owned by SQLite, copied at once.
        let msg =
            unsafe { std::ffi::CStr::from_ptr(ffi::sqlite3_errmsg(conn.handle())) }.to_string_lossy().into_owned();
        self.sqlite_error(rc, &msg)
    }

    fn sqlite_error(&self, rc: c_int, msg: &str) -> DbError {
        self.error(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(msg.to_string())))
    }
}

impl Pending<'_> {
    /// Reset the statement (it gives up its place and, if it was the last
    /// pending one, SQLite's read lock) and clear nothing else: bindings
    /// stay, as keyboxd rebinds only what changes.
    pub(crate) fn reset(&mut self) {
        // SAFETY: stmt is a live statement of this connection. The result
        // repeats the last step's error, already reported.
        unsafe { ffi::sqlite3_reset(self.stmt) };
    }

    /// Bind a blob to parameter `i` (1-based); SQLite copies it.
    ///
    /// # Errors
    /// SQLite's error (no such parameter).
    pub(crate) fn bind_blob(&mut self, i: c_int, value: &[u8]) -> Result<(), DbError> {
        let n = c_int::try_from(value.len()).map_err(|_| self.db.sqlite_error(ffi::SQLITE_TOOBIG, "blob too long"))?;
        // SAFETY: value is valid for n bytes; SQLITE_TRANSIENT makes SQLite copy it.
        let rc = unsafe { ffi::sqlite3_bind_blob(self.stmt, i, value.as_ptr().cast(), n, ffi::SQLITE_TRANSIENT()) };
        self.check(rc)
    }

    /// Bind text to parameter `i` (1-based); SQLite copies it.
    ///
    /// # Errors
    /// SQLite's error (no such parameter).
    pub(crate) fn bind_text(&mut self, i: c_int, value: &[u8]) -> Result<(), DbError> {
        let n = c_int::try_from(value.len()).map_err(|_| self.db.sqlite_error(ffi::SQLITE_TOOBIG, "text too long"))?;
        // SAFETY: as in bind_blob; the bytes need no NUL with an explicit length.
        let rc = unsafe { ffi::sqlite3_bind_text(self.stmt, i, value.as_ptr().cast(), n, ffi::SQLITE_TRANSIENT()) };
        self.check(rc)
    }

    /// Bind an integer to parameter `i` (1-based).
    ///
    /// # Errors
    /// SQLite's error (no such parameter).
    pub(crate) fn bind_int(&mut self, i: c_int, value: i64) -> Result<(), DbError> {
        // SAFETY: stmt is a live statement of this connection.
        let rc = unsafe { ffi::sqlite3_bind_int64(self.stmt, i, value) };
        self.check(rc)
    }

    /// Bind NULL to parameter `i` (1-based).
    ///
    /// # Errors
    /// SQLite's error (no such parameter).
    pub(crate) fn bind_null(&mut self, i: c_int) -> Result<(), DbError> {
        // SAFETY: stmt is a live statement of this connection.
        let rc = unsafe { ffi::sqlite3_bind_null(self.stmt, i) };
        self.check(rc)
    }

    fn check(&self, rc: c_int) -> Result<(), DbError> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(self.db.handle_error(rc))
        }
    }

    /// One step: `true` when a row is ready (read it with the column
    /// methods until the next step), `false` when the rows ended.
    ///
    /// # Errors
    /// SQLite's error.
    pub(crate) fn step(&mut self) -> Result<bool, DbError> {
        // SAFETY: stmt is a live statement of this connection.
        match unsafe { ffi::sqlite3_step(self.stmt) } {
            ffi::SQLITE_ROW => Ok(true),
            ffi::SQLITE_DONE => Ok(false),
            rc => Err(self.db.handle_error(rc)),
        }
    }

    /// Column `i` (0-based) of the current row as bytes (blob or text;
    /// empty for NULL).
    pub(crate) fn column_bytes(&self, i: c_int) -> &[u8] {
        // SAFETY: called after a step that returned a row; SQLite keeps the
        // value valid until the next step, reset or finalize, which all
        // take `&mut self` and so end this borrow first.
        unsafe {
            let p = ffi::sqlite3_column_blob(self.stmt, i);
            let n = ffi::sqlite3_column_bytes(self.stmt, i);
            match usize::try_from(n) {
                Ok(n) if !p.is_null() && n > 0 => std::slice::from_raw_parts(p.cast(), n),
                _ => &[],
            }
        }
    }

    /// Column `i` (0-based) of the current row as an integer.
    pub(crate) fn column_int(&self, i: c_int) -> i64 {
        // SAFETY: as in column_bytes.
        unsafe { ffi::sqlite3_column_int64(self.stmt, i) }
    }

    /// Whether column `i` of the current row is a blob.
    pub(crate) fn column_is_blob(&self, i: c_int) -> bool {
        // SAFETY: as in column_bytes.
        unsafe { ffi::sqlite3_column_type(self.stmt, i) == ffi::SQLITE_BLOB }
    }

    /// Whether column `i` of the current row is an integer.
    pub(crate) fn column_is_int(&self, i: c_int) -> bool {
        // SAFETY: as in column_bytes.
        unsafe { ffi::sqlite3_column_type(self.stmt, i) == ffi::SQLITE_INTEGER }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        // SAFETY: stmt is live and finalized exactly once, here.
        unsafe { ffi::sqlite3_finalize(self.stmt) };
    }
}
