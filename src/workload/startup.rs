//! GnuPG's start on a keybox it is about to read (`keydb_add_resource` in
//! gpg's and gpgsm's `keydb.c`; facts only; checked under strace with
//! GnuPG 2.2.40):
//!
//! * the keybox opened to recognise it, one read of the buffer's size,
//!   closed;
//! * `access` (gpg: `F_OK`, `R_OK`, `W_OK`; gpgsm: `F_OK`, `R_OK`; gpgsm
//!   2.4 then `W_OK` before it takes the lock and before it releases it);
//! * the lock taken (its own file made first), GnuPG's maintenance pass
//!   ([`KeyboxWriter::compress`]: on a keybox whose stamp is three hours
//!   old, a copy through `pubring.kbx.tmp`, removed again if nothing was
//!   to be dropped), gpg's `access(W_OK)`, the lock released;
//! * at exit, the lock's own file removed ([`Started::finish`]).
//!
//! The user's keybox is only read. Everything GnuPG would write beside it
//! goes to a [`PrivateCopy`] directory, under GnuPG's names: the lock's
//! files, the temporary copy and, when the pass drops blobs and so
//! replaces the keybox, the new keybox, which the workload then reads (as
//! GnuPG reads the keybox it just wrote).

use crate::gnupg_version::GnupgVersion;
use crate::io::update::{KeyboxWriter, PrivateCopy, Role};
use crate::io::{OpenError, PathOpener};
use crate::lookup::{LookupError, SearchLock};
use crate::openpgp::lookup::Gnupg;
use crate::store::StoreError;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Which GnuPG program starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Program {
    /// gpg: OpenPGP keys.
    Gpg,
    /// gpgsm: X.509 certificates.
    Gpgsm,
}

/// A GnuPG start done: the private directory, and the writer whose lock's
/// own file goes at the end (and whose lock gpgsm 2.2 takes around its
/// searches: [`Started::search_lock`]).
pub(crate) struct Started {
    lock: Rc<Dotlock>,
    _dir: PrivateCopy,
}

/// The keybox's dotlock as the workload's searches take it (gpgsm 2.2),
/// held in the writer that owns the lock's files.
pub(crate) struct Dotlock {
    writer: RefCell<KeyboxWriter>,
    held: Cell<bool>,
    /// GnuPG 2.4's `keybox_lock`: `access(W_OK)` on the keybox before
    /// each take and each release.
    checked: bool,
}

impl Dotlock {
    /// The lock of `writer`'s keybox, not held.
    pub(crate) fn new(writer: KeyboxWriter) -> Self {
        Self { writer: RefCell::new(writer), held: Cell::new(false), checked: false }
    }

    /// The same, taken and released through GnuPG 2.4's `keybox_lock`
    /// (each time after an `access(W_OK)`).
    pub(crate) fn checked(writer: KeyboxWriter) -> Self {
        Self { checked: true, ..Self::new(writer) }
    }

    /// The writer, to write the keybox while the lock is held.
    pub(crate) fn writer(&self) -> std::cell::RefMut<'_, KeyboxWriter> {
        self.writer.borrow_mut()
    }

    /// The writer back, once no search shares the lock.
    pub(crate) fn into_writer(self) -> KeyboxWriter {
        self.writer.into_inner()
    }
}

impl SearchLock for Dotlock {
    fn take(&self) {
        if !self.held.get() {
            // gpgsm goes on when the lock cannot be had.
            let _ = self.writer.borrow_mut().lock_checked(self.checked);
            self.held.set(true);
        }
    }

    fn release(&self) {
        if self.held.replace(false) {
            let _ = self.writer.borrow_mut().unlock_checked(self.checked);
        }
    }
}

impl Started {
    /// The handles of the workload that follows: on the keybox the start
    /// began with, or on the private one the maintenance pass made.
    pub(crate) fn opener(&self, given: &PathOpener) -> PathOpener {
        let writer = self.lock.writer.borrow();
        let now = writer.current();
        if now == given.path {
            given.clone()
        } else {
            PathOpener::new(now.to_path_buf(), given.tally.clone())
        }
    }

    /// The lock gpgsm 2.2 takes at a search when it is not held, and lets
    /// go as a handle is released.
    pub(crate) fn search_lock(&self) -> Rc<dyn SearchLock> {
        self.lock.clone()
    }

    /// GnuPG's exit: the lock's own file removed. Then the counters of
    /// the files beside the keybox are handed to the tally (every read
    /// handle is closed by now) and the private directory goes.
    pub(crate) fn finish(self) {
        // The workload's lookups, which shared the lock, are gone by now.
        let Ok(lock) = Rc::try_unwrap(self.lock) else {
            debug_assert!(false, "a lookup outlived its workload");
            return;
        };
        let mut writer = lock.into_writer();
        // As for gpg, a failure here changes nothing the user sees.
        let _ = writer.finish();
        writer.settle();
    }
}

/// `program`'s start on the keybox of `opener` at `now` (Unix seconds).
///
/// # Errors
/// The keybox cannot be opened, or no private directory can be made.
pub(crate) fn reading(
    opener: &PathOpener,
    now: i64,
    program: Program,
    version: GnupgVersion,
) -> Result<Started, StoreError> {
    let dir = PrivateCopy::empty(None, "pubring.kbx").map_err(|error| StoreError::Private { error })?;
    let mut writer = KeyboxWriter::reading(&opener.path, dir.dir(), &opener.tally);
    match Gnupg::new(opener.clone()).probe() {
        Ok(()) => {}
        Err(LookupError::Open(e)) => return Err(e.into()),
        Err(e) => return Err(OpenError::Io { path: opener.path.clone(), error: std::io::Error::other(e) }.into()),
    }
    writer.exists(Role::Store);
    writer.readable();
    // gpg checks the keybox writable before it takes the lock and before it
    // lets it go; so does gpgsm 2.4 (`keybox_lock`); gpgsm 2.2 does not.
    let checked = program == Program::Gpg || version == GnupgVersion::V2_4;
    // gpg and gpgsm go on quietly when the lock or the pass fails.
    if writer.lock_checked(checked).is_ok() {
        let stamp_now = u32::try_from(now.max(0)).unwrap_or(u32::MAX);
        let _ = writer.compress(stamp_now, program == Program::Gpg);
        let _ = writer.unlock_checked(checked);
    }
    Ok(Started { lock: Rc::new(Dotlock::new(writer)), _dir: dir })
}
