//! `delete --gpgsm FINGERPRINT…`: gpgsm's `--batch --delete-keys`, 2.2's
//! or 2.4's, replayed on a private copy of a keybox (read in GnuPG's
//! `sm/delete.c`, `sm/keydb.c`; checked under strace):
//!
//! * **Start**: gpgsm's, with the maintenance pass (see
//!   [`super::import_x509`]).
//! * gpgsm deletes in the reverse order of its arguments, and stops at the
//!   first certificate it cannot find.
//! * **Each certificate** (by fingerprint, so ephemeral ones too): a new
//!   handle searches for it from the start of the keybox; then, under the
//!   lock (2.2 holds it since the search), the handle is rewound and the
//!   search made again, the handle's file closed and the blob marked
//!   deleted in place (one `lseek` to its type byte, one by 0, a one-byte
//!   write); the lock is released. Nothing is copied.

use std::path::Path;

use super::delete::KeyDeleted;
use super::import::ImportError;
use super::import_x509::{gpgsm_run, CertWrites, Gpgsm};
use crate::gnupg_version::GnupgVersion;
use crate::io::IoTally;
use crate::x509::IssuerLookup;

/// Delete the certificates with `fingerprints` (SHA-1) from the keybox at
/// `store` (a private copy), as `version`'s gpgsm at `at`, its events
/// counted in `tally`; each outcome handed to `emit`, in gpgsm's order,
/// up to the first certificate not found.
///
/// # Errors
/// The first write or search that failed.
pub fn from_keybox(
    store: &Path,
    tally: &IoTally,
    fingerprints: &[[u8; 20]],
    at: i64,
    version: GnupgVersion,
    mut emit: impl FnMut(&KeyDeleted),
) -> Result<u64, ImportError> {
    let _cmd = tracing::info_span!(target: "kbx::lookup", "delete", certificates = fingerprints.len()).entered();
    gpgsm_run(store, tally, at, version, |run| delete_all(run, fingerprints, &mut emit))
}

/// gpgsm's deletion of the certificates with `fingerprints` in `run`: in
/// the reverse order of its arguments, up to the first one not found;
/// each outcome handed to `emit`. How many were deleted.
///
/// # Errors
/// The first write or search that failed.
pub(super) fn delete_all<L: IssuerLookup, W: CertWrites<L>>(
    run: &mut Gpgsm<'_, L, W>,
    fingerprints: &[[u8; 20]],
    emit: &mut impl FnMut(&KeyDeleted),
) -> Result<u64, ImportError> {
    let mut deleted = 0;
    for fpr in fingerprints.iter().rev() {
        let found = run.delete(fpr)?;
        emit(&KeyDeleted { fingerprint: crate::kbx::dump::hex_upper(fpr), deleted: found });
        if !found {
            break;
        }
        deleted += 1;
    }
    Ok(deleted)
}
