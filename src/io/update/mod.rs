//! Writing a keybox as GnuPG writes it (`kbx/keybox-update.c`,
//! `common/dotlock.c`; facts only), with every system call counted: the
//! write replays' half of the I/O layer. It only ever writes inside a
//! [`PrivateCopy`]: a directory of its own holding a copy of the store a
//! replay starts from, removed when dropped.
//!
//! * **The lock** ([`KeyboxWriter::lock`]): the lock's own file
//!   `.#lk0x….HOST.PID` is made once (`O_CREAT|O_EXCL`, three writes: the
//!   pid, the host, a newline; then `stat`, a `link` to a probe name,
//!   `stat`, `unlink` of the probe), and each lock is a `link` of it to
//!   `pubring.kbx.lock` and a `stat`; unlocking opens and reads the lock
//!   file, closes it and unlinks it. The own file goes at the end.
//! * **Insert and update** ([`KeyboxWriter::insert`], [`KeyboxWriter::update`]):
//!   `access(W_OK)`, the keybox opened read-only and `pubring.kbx.tmp`
//!   created, the keybox copied through streams of the buffer size (reads
//!   of the buffer size up to end of file and one more, writes of full
//!   buffers), the new blob appended (insert) or put in place of the old
//!   one (update: the old one's length and type read, then an `lseek`
//!   past it), then `pubring.kbx` renamed to `pubring.kbx~` and the
//!   temporary file to `pubring.kbx`. No fsync. A keybox that does not
//!   exist yet is created with its header blob and the new blob.
//! * **Delete** ([`KeyboxWriter::delete`]): the keybox opened for update,
//!   one `lseek` to the blob's type byte, one more by 0 (estream turning
//!   the stream to writing) and a one-byte write (the blob becomes an
//!   empty one), close.

mod compress;
mod copy;
mod files;
mod private;
mod wait;

use std::io;
use std::path::Path;

pub use compress::Compressed;
pub use files::Role;
pub use private::PrivateCopy;
pub use wait::{lock_holder, wait_for_lock, LockHeld, WaitError};

use self::copy::Streams;
use self::files::{Access, Files, Paths, WriteMode};
use super::tally::IoTally;

/// Why a keybox update failed: the file and the system's error.
#[derive(Debug, thiserror::Error)]
#[error("cannot {what} '{}': {error}", path.display())]
pub struct UpdateError {
    /// What was being done.
    pub what: &'static str,
    /// The file.
    pub path: std::path::PathBuf,
    /// The system's error.
    pub error: io::Error,
}

/// GnuPG's writes to one keybox (on a private copy), counted into a tally.
#[derive(Debug)]
pub struct KeyboxWriter {
    files: Files,
    tally: IoTally,
    /// Whether the lock's own file exists.
    own_made: bool,
    /// Whether the lock is held.
    locked: bool,
    /// Whether a maintenance pass put a private keybox in place of the
    /// one only read ([`KeyboxWriter::reading`]).
    moved: bool,
}

impl KeyboxWriter {
    /// A writer on the keybox at `store` (inside a [`PrivateCopy`]) whose
    /// events go to `tally`, with streams of its buffer size.
    pub fn new(store: &Path, tally: &IoTally) -> Self {
        Self::with_paths(Paths::of(store, &host()), tally)
    }

    /// A writer for a replay that only reads the keybox at `source` (the
    /// user's, never written, renamed or locked): the lock's files, the
    /// maintenance pass's temporary copy and, if the pass replaces the
    /// keybox, the new keybox go to the private directory `dir`, under
    /// GnuPG's names. Its events go to `tally`.
    pub fn reading(source: &Path, dir: &Path, tally: &IoTally) -> Self {
        Self::with_paths(Paths::beside(source, dir, &host()), tally)
    }

    fn with_paths(paths: Paths, tally: &IoTally) -> Self {
        Self { files: Files::new(paths, tally), tally: tally.clone(), own_made: false, locked: false, moved: false }
    }

    /// The keybox the replay reads from now on: the one it started from,
    /// or the private one a maintenance pass put in its place.
    pub fn current(&self) -> &Path {
        let p = &self.files.paths;
        if self.moved {
            &p.store
        } else {
            &p.source
        }
    }

    /// The error of `what` on `role`'s file, for `map_err`.
    fn err(&self, what: &'static str, role: Role) -> impl FnOnce(io::Error) -> UpdateError {
        failed(what, self.files.paths.of_role(role))
    }

    /// `access(W_OK)` on the keybox, as GnuPG checks before it writes.
    ///
    /// # Errors
    /// The keybox is not writable.
    pub fn check_writable(&mut self) -> Result<(), UpdateError> {
        self.files.access(Role::Store, Access::Writable).map_err(self.err("write", Role::Store))
    }

    /// `access(R_OK)` on the keybox: whether it may be read.
    pub fn readable(&mut self) -> bool {
        self.files.access(Role::Store, Access::Readable).is_ok()
    }

    /// `access(F_OK)` on a file of the keybox: whether it exists.
    pub fn exists(&mut self, role: Role) -> bool {
        self.files.access(role, Access::Exists).is_ok()
    }

    /// Take the lock (making its own file first if needed).
    ///
    /// # Errors
    /// The lock cannot be made or is held (a private copy has no other
    /// user, so that is an error, not a wait).
    pub fn lock(&mut self) -> Result<(), UpdateError> {
        if !self.own_made {
            self.make_own().map_err(self.err("make the lock file", Role::LockOwn))?;
        }
        let r = self.files.link_own(Some(Role::Lock)).and_then(|()| self.files.stat(Role::LockOwn).map(|_| ()));
        r.map_err(self.err("take the lock", Role::Lock))?;
        self.locked = true;
        Ok(())
    }

    fn make_own(&mut self) -> io::Result<()> {
        let mut f = self.files.open(Role::LockOwn, Some(WriteMode::Exclusive(0o644)))?;
        self.own_made = true;
        let host = self.files.paths.host.clone();
        let wrote = self
            .files
            .write(&mut f, format!("{:>10}\n", std::process::id()).as_bytes())
            .and_then(|()| self.files.write(&mut f, host.as_bytes()))
            .and_then(|()| self.files.write(&mut f, b"\n"));
        let closed = self.files.close(f);
        wrote.and(closed)?;
        self.files.stat(Role::LockOwn)?;
        self.files.link_own(None)?;
        self.files.stat(Role::LockOwn)?;
        self.files.unlink_probe()
    }

    /// Take the lock, after an `access(W_OK)` of the keybox when `check`
    /// (GnuPG 2.4's `keybox_lock`, and gpg at its start).
    ///
    /// # Errors
    /// As [`lock`](Self::lock) (the check's outcome is not one).
    pub fn lock_checked(&mut self, check: bool) -> Result<(), UpdateError> {
        if check {
            let _ = self.check_writable();
        }
        self.lock()
    }

    /// Release the lock, after an `access(W_OK)` of the keybox when
    /// `check` (see [`lock_checked`](Self::lock_checked)).
    ///
    /// # Errors
    /// As [`unlock`](Self::unlock).
    pub fn unlock_checked(&mut self, check: bool) -> Result<(), UpdateError> {
        if check {
            let _ = self.check_writable();
        }
        self.unlock()
    }

    /// Release the lock: its file is read (to see it is ours) and removed.
    ///
    /// # Errors
    /// The lock file cannot be read or removed.
    pub fn unlock(&mut self) -> Result<(), UpdateError> {
        if !self.locked {
            return Ok(());
        }
        self.locked = false;
        let want = format!("{:>10}\n{}\n", std::process::id(), self.files.paths.host).len();
        let r = (|| {
            let mut f = self.files.open(Role::Lock, None)?;
            let mut buf = vec![0u8; want];
            let read = self.files.read(&mut f, &mut buf);
            self.files.close(f)?;
            read?;
            self.files.unlink(Role::Lock)
        })();
        r.map_err(self.err("release the lock", Role::Lock))
    }

    /// Remove the lock's own file (GnuPG does at exit).
    ///
    /// # Errors
    /// It cannot be removed.
    pub fn finish(&mut self) -> Result<(), UpdateError> {
        self.unlock()?;
        if std::mem::take(&mut self.own_made) {
            self.files.unlink(Role::LockOwn).map_err(self.err("remove", Role::LockOwn))?;
        }
        Ok(())
    }

    /// keyboxd's exit: the lock's files removed as they are, unread
    /// (keyboxd holds its database's lock for its whole life).
    ///
    /// # Errors
    /// A file cannot be removed.
    pub fn exit(&mut self) -> Result<(), UpdateError> {
        if std::mem::take(&mut self.locked) {
            self.files.unlink(Role::Lock).map_err(self.err("remove", Role::Lock))?;
        }
        if std::mem::take(&mut self.own_made) {
            self.files.unlink(Role::LockOwn).map_err(self.err("remove", Role::LockOwn))?;
        }
        Ok(())
    }

    /// Create the keybox with `header` (GnuPG's `keydb_add_resource` on a
    /// keybox that does not exist: made empty, then written).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn create(&mut self, header: &[u8]) -> Result<(), UpdateError> {
        let r = (|| {
            let f = self.files.open(Role::Store, Some(WriteMode::Truncate(0o666)))?;
            self.files.close(f)?;
            let mut f = self.files.open(Role::Store, Some(WriteMode::Truncate(0o664)))?;
            let wrote = self.files.write(&mut f, header);
            let closed = self.files.close(f);
            wrote.and(closed)
        })();
        r.map_err(self.err("write", Role::Store))
    }

    /// Create the keybox with `header` in one go (gpgsm's
    /// `maybe_create_keybox`: opened for writing once, written, closed).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn create_once(&mut self, header: &[u8]) -> Result<(), UpdateError> {
        let r = (|| {
            let mut f = self.files.open(Role::Store, Some(WriteMode::Truncate(0o600)))?;
            let wrote = self.files.write(&mut f, header);
            let closed = self.files.close(f);
            wrote.and(closed)
        })();
        r.map_err(self.err("write", Role::Store))
    }

    /// Append `blob` through a full copy (GnuPG's insert). `header` is
    /// written first when the keybox does not exist yet.
    ///
    /// # Errors
    /// A system call failed; the temporary file is removed.
    pub fn insert(&mut self, blob: &[u8], header: &[u8]) -> Result<(), UpdateError> {
        self.copy_with(None, blob, Some(header), true)
    }

    /// Append a certificate's `blob` through a full copy (gpgsm's insert:
    /// the header's OpenPGP flag left as it is).
    ///
    /// # Errors
    /// A system call failed; the temporary file is removed.
    pub fn insert_cert(&mut self, blob: &[u8], header: &[u8]) -> Result<(), UpdateError> {
        self.copy_with(None, blob, Some(header), false)
    }

    /// Put `blob` in place of the `old_len` bytes at `offset` through a
    /// full copy (GnuPG's update).
    ///
    /// # Errors
    /// A system call failed; the temporary file is removed.
    pub fn update(&mut self, offset: u64, old_len: u64, blob: &[u8]) -> Result<(), UpdateError> {
        self.copy_with(Some((offset, old_len)), blob, None, false)
    }

    fn copy_with(
        &mut self,
        replace: Option<(u64, u64)>,
        blob: &[u8],
        header: Option<&[u8]>,
        openpgp: bool,
    ) -> Result<(), UpdateError> {
        self.check_writable()?;
        let source = match self.files.open(Role::Store, None) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && header.is_some() => {
                let mut bytes = header.unwrap_or_default().to_vec();
                bytes.extend_from_slice(blob);
                return self.create(&bytes);
            }
            Err(e) => return Err(self.err("read", Role::Store)(e)),
        };
        let buffer = self.tally.buffer_size().bytes().max(1);
        let tmp = match self.files.open(Role::Tmp, Some(WriteMode::Truncate(0o664))) {
            Ok(t) => t,
            Err(e) => {
                let _ = self.files.close(source);
                return Err(self.err("create", Role::Tmp)(e));
            }
        };
        let mut s = Streams::new(&mut self.files, source, Some(tmp), buffer);
        let copied = match replace {
            None => s.copy_rest(openpgp).and_then(|()| s.put(blob)),
            Some((at, len)) => s
                .copy_upto(at)
                .and_then(|()| s.skip(at, len))
                .and_then(|()| s.put(blob))
                .and_then(|()| s.copy_rest(false)),
        };
        let closed = s.close();
        if let Err((role, e)) = copied.and(closed) {
            let _ = self.files.unlink(Role::Tmp);
            return Err(self.err("copy", role)(e));
        }
        self.files.rename(Role::Store, Role::Backup).map_err(self.err("rename", Role::Store))?;
        self.files.rename(Role::Tmp, Role::Store).map_err(self.err("rename", Role::Tmp))
    }

    /// Mark the blob at `offset` deleted in place (its type byte zeroed).
    ///
    /// # Errors
    /// A system call failed.
    pub fn delete(&mut self, offset: u64) -> Result<(), UpdateError> {
        self.write_in_place(offset + 4, &[0])
    }

    /// Overwrite the bytes at `at` with `bytes` in place (GnuPG's
    /// `keybox_set_flags` and delete: the keybox opened for update, an
    /// `lseek` there, one by 0 as estream turns to writing, one write).
    ///
    /// # Errors
    /// A system call failed.
    pub fn write_in_place(&mut self, at: u64, bytes: &[u8]) -> Result<(), UpdateError> {
        let r = (|| {
            let mut f = self.files.open(Role::Store, Some(WriteMode::ReadWrite))?;
            let done = self
                .files
                .seek(&mut f, at)
                .and_then(|()| self.files.tell(&mut f))
                .and_then(|()| self.files.write(&mut f, bytes));
            let closed = self.files.close(f);
            done.and(closed)
        })();
        r.map_err(self.err("write", Role::Store))
    }

    /// Hand the counters per file to the tally (the store's with its read
    /// handles'), once every read handle is closed.
    pub fn settle(self) {
        let p = &self.files.paths;
        let (store, renamed) = (p.source.display().to_string(), p.source == p.store);
        self.tally.settle_update(self.files.into_rows(), &store, renamed);
    }
}

/// The host GnuPG's lock files name.
fn host() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    match host.trim() {
        "" => "localhost".to_string(),
        h => h.to_string(),
    }
}

/// The error of `what` on the file at `path`, for `map_err`.
fn failed(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> UpdateError {
    let path = path.to_path_buf();
    move |error| UpdateError { what, path, error }
}
