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

use std::path::Path;

use super::import::{replay, ImportError};
use crate::io::IoTally;

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
