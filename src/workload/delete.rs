//! `delete FINGERPRINT…`: gpg 2.2's `--batch --yes --delete-keys` replayed
//! on a private copy (read in GnuPG 2.2's `g10/delkey.c`, `keydb.c`,
//! `kbx/keybox-update.c`; checked under strace):
//!
//! * **Start**: as for every gpg run, the probe and, under the lock,
//!   GnuPG's maintenance pass (see [`super::import`]).
//! * **Each key** (gpg deletes in batch mode only by fingerprint): a new
//!   handle searches for it from the start of the keybox; a second one
//!   searches for its key id to the end of the file (gpg asks its agent
//!   whether it holds the secret key, which a replay's agent does not);
//!   then, under the lock, every handle's file is closed and the blob is
//!   marked deleted in place: the keybox opened for update, one `lseek` to
//!   the blob's type byte, a one-byte write, close. Nothing is copied: the
//!   blob stays in the file until a maintenance pass drops it.
//!
//! With keyboxd ([`from_keyboxd`], gpg 2.4 with `use-keyboxd`; read in
//! `g10/call-keyboxd.c` and `kbx/backend-sqlite.c`, checked against
//! keyboxd's `debug ipc` log and strace): per key, a `SEARCH` for the
//! fingerprint; if found, a `SEARCH` by its key id with `NEXT` to the end
//! (the secret-key question) on another connection, then `DELETE` on the
//! first: one transaction removing the key's rows. gpg's connections are
//! a pool: a handle takes the first idle one, the newest first, or opens
//! another, so the searches and deletes move between two connections as
//! gpg's do (which decides how long SQLite's read locks are held).

use std::path::Path;

use super::import::{replay, ImportError};
use super::keyboxd_import::serve;
use crate::io::IoTally;
use crate::kbx::{parse_blob, Blob};
use crate::keyboxd::server::{Client, Search, Server, Session};

/// What happened to one fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeyDeleted {
    /// The fingerprint asked for, upper-case hex.
    pub fingerprint: String,
    /// Whether a key had it (else gpg says "not found").
    pub deleted: bool,
}

/// Delete the keys with `fingerprints` from the keybox at `store` (a
/// private copy), its events counted in `tally`, at `now` (Unix seconds);
/// each outcome handed to `emit`.
///
/// # Errors
/// The first write or search that failed.
pub fn from_keybox(
    store: &Path,
    tally: &IoTally,
    fingerprints: &[Vec<u8>],
    now: u32,
    mut emit: impl FnMut(&KeyDeleted),
) -> Result<u64, ImportError> {
    let _cmd = tracing::info_span!(target: "kbx::lookup", "delete", keys = fingerprints.len()).entered();
    replay(store, tally, now, |w, g, _| {
        let mut deleted = 0;
        for fpr in fingerprints {
            let (handle, present) = g.fast_search(fpr)?;
            let found = present.is_some();
            if let Some(p) = present {
                let kid = p.signer.key_ids.first().copied().unwrap_or_default();
                g.secret_key_probe(kid)?;
                // `keydb_delete_keyblock`: the cache of key ids not found
                // emptied, the lock taken, every file closed, the flag
                // written.
                g.forget_missing();
                w.check_writable()?;
                w.lock()?;
                g.close_files();
                drop(handle);
                w.delete(p.signer.offset)?;
                w.check_writable()?;
                w.unlock()?;
                deleted += 1;
            }
            emit(&KeyDeleted { fingerprint: crate::kbx::dump::hex_upper(fpr), deleted: found });
        }
        Ok(deleted)
    })
}

/// Delete the keys with `fingerprints` from keyboxd's database at `db` (a
/// private copy), its events counted in `tally`, at `now` (Unix seconds),
/// as gpg 2.4 with keyboxd does; each outcome handed to `emit`.
///
/// # Errors
/// The first request that failed.
pub fn from_keyboxd(
    db: &Path,
    tally: &IoTally,
    fingerprints: &[Vec<u8>],
    now: u32,
    mut emit: impl FnMut(&KeyDeleted),
) -> Result<u64, ImportError> {
    let _cmd =
        tracing::info_span!(target: "kbx::lookup", "delete", keys = fingerprints.len(), store = "keyboxd").entered();
    serve(db, tally, now, None, Client::Gpg, |server| {
        let mut pool = Pool::default();
        let mut deleted = 0;
        for fpr in fingerprints {
            let hd = pool.take(server);
            let found = server.search(hd, &Search::Fpr(fpr.clone()))?;
            if let Some(found) = &found {
                let probe = pool.take(server);
                let kid = match parse_blob(&found.blob) {
                    Ok(Blob::Key(b)) => b.keys().next().map(|k| k.key_id.try_into().unwrap_or_default()),
                    _ => None,
                };
                if let Some(kid) = kid {
                    server.search_to_end(probe, &Search::LongKid(kid))?;
                }
                pool.give_back(probe);
                server.delete(&found.row.ubid)?;
                deleted += 1;
            }
            pool.give_back(hd);
            emit(&KeyDeleted { fingerprint: crate::kbx::dump::hex_upper(fpr), deleted: found.is_some() });
        }
        Ok(deleted)
    })
}

/// gpg's connections to keyboxd, newest first, and which are in use.
#[derive(Default)]
struct Pool(Vec<(Session, bool)>);

impl Pool {
    /// The first idle connection, or a new one.
    fn take(&mut self, server: &Server<'_>) -> Session {
        if let Some((s, busy)) = self.0.iter_mut().find(|(_, busy)| !*busy) {
            *busy = true;
            return *s;
        }
        self.0.insert(0, (server.connect(), true));
        self.0[0].0
    }

    /// A connection idle again.
    fn give_back(&mut self, session: Session) {
        if let Some((_, busy)) = self.0.iter_mut().find(|(s, _)| *s == session) {
            *busy = false;
        }
    }
}
