//! `import FILE…`: gpg 2.2's import of OpenPGP keys into a keybox,
//! replayed on a private copy with the reads and writes gpg makes (read
//! in GnuPG 2.2's `g10/import.c`, `keydb.c`, `getkey.c`,
//! `kbx/keybox-update.c`; checked under strace):
//!
//! * **Start**: a keybox that does not exist is created under the lock
//!   (header blob only); then, under the lock, GnuPG's maintenance pass
//!   ([`KeyboxWriter::compress`]: a copy through `pubring.kbx.tmp` when
//!   the header's stamp is three hours old).
//! * **Each key**: the signer of each signature not made by the key
//!   itself fetched with a key-id search (`key_check_all_keysigs`,
//!   import's default `repair-keys`; an import disables gpg's key cache);
//!   then, under the lock, a search for
//!   its fingerprint on a new handle from the start of the file. A new key
//!   is appended through a full copy of the keybox; a key present gets
//!   gpg's merge, and an update through a full copy if anything was
//!   added. Every write closes every handle's file and empties the
//!   kid-not-found cache. The lock is released, and the message's user id
//!   is looked up by fingerprint (a new handle) unless a search cached it.
//!   A key written is then searched for by key id on a new handle to the
//!   end of the file (`have_secret_key_with_kid`: gpg-agent has no secret
//!   key of a replay's keys).
//!
//! gpg's `trustdb.gpg` and its agent are not modelled: only the keybox's
//! files are.

use std::path::Path;

use crate::gnupg_version::GnupgVersion;
use crate::io::update::{KeyboxWriter, Role, UpdateError};
use crate::io::{IoTally, PathOpener};
use crate::kbx::create::openpgp_spec;
use crate::kbx::encode::{encode_header, encode_key_blob, HeaderSpec};
use crate::kbx::keyblock::{gnupg_keyblock, tag};
use crate::kbx::{parse_blob, Blob};
use crate::lookup::LookupError;
use crate::openpgp::import_clean;
use crate::openpgp::incoming::{self, merge, Added, IncomingKey};
use crate::openpgp::lookup::{Gnupg, KeyboxSearches};
use crate::openpgp::Judge;

/// What an import reads: OpenPGP keys (gpg's import) or X.509
/// certificates (gpgsm's, [`super::import_x509`]).
#[derive(Debug, Clone)]
pub enum Incoming {
    /// OpenPGP keys.
    Keys(Vec<IncomingKey>),
    /// X.509 certificates.
    Certs(Vec<crate::x509::incoming::IncomingCert>),
}

impl Default for Incoming {
    fn default() -> Self {
        Self::Keys(Vec::new())
    }
}

/// What gpg prints at the end of an import (`import_print_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportSummary {
    /// Keys read.
    pub processed: u64,
    /// New keys.
    pub imported: u64,
    /// Keys present and not changed.
    pub unchanged: u64,
    /// New user ids.
    pub new_user_ids: u64,
    /// New subkeys.
    pub new_subkeys: u64,
    /// New signatures.
    pub new_signatures: u64,
    /// Keys without a user id, not imported.
    pub no_user_id: u64,
}

impl ImportSummary {
    /// Count one key read and what became of it.
    pub fn count(&mut self, outcome: &KeyOutcome) {
        self.processed += 1;
        match *outcome {
            KeyOutcome::Imported => self.imported += 1,
            KeyOutcome::Unchanged => self.unchanged += 1,
            KeyOutcome::Merged { user_ids, subkeys, signatures } => {
                self.new_user_ids += user_ids;
                self.new_subkeys += subkeys;
                self.new_signatures += signatures;
            }
            KeyOutcome::NoUserId | KeyOutcome::NoValidUserId => self.no_user_id += 1,
        }
    }
}

/// What happened to one key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum KeyOutcome {
    /// A new key.
    Imported,
    /// Present and unchanged.
    Unchanged,
    /// Present; this was added.
    Merged {
        /// New user ids.
        user_ids: u64,
        /// New subkeys.
        subkeys: u64,
        /// New signatures.
        signatures: u64,
    },
    /// Not imported: it has no user id.
    NoUserId,
    /// Not imported: none of its user ids has a self-signature.
    NoValidUserId,
}

/// One key of the import.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeyImported {
    /// The key id, upper-case hex.
    pub key_id: String,
    /// The user id gpg's message names (the key's primary one).
    pub user_id: String,
    /// What happened.
    #[serde(flatten)]
    pub outcome: KeyOutcome,
}

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A write failed.
    #[error(transparent)]
    Update(#[from] UpdateError),
    /// A search failed.
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// keyboxd's database failed.
    #[error(transparent)]
    Keyboxd(crate::io::sqlite::DbError),
    /// A key could not be stored.
    #[error("key {key_id}: {why}")]
    Key {
        /// The key.
        key_id: String,
        /// Why.
        why: String,
    },
}

/// Import `keys` into the keybox at `store` (a private copy; made if it
/// does not exist), its events counted in `tally`, as `judge`'s gpg
/// would at `judge.now`; each key's outcome handed to `emit`.
///
/// # Errors
/// The first write or search that failed.
pub fn into_keybox(
    store: &Path,
    tally: &IoTally,
    keys: &[IncomingKey],
    judge: Judge,
    mut emit: impl FnMut(&KeyImported),
) -> Result<ImportSummary, ImportError> {
    let _cmd = tracing::info_span!(target: "kbx::lookup", "import", keys = keys.len()).entered();
    let now = u32::try_from(judge.now.max(0)).unwrap_or(u32::MAX);
    replay(store, tally, now, |w, g, header| {
        let mut summary = ImportSummary::default();
        for key in keys {
            let (outcome, uid) = one_key(w, g, key, judge.version, now, header)?;
            summary.count(&outcome);
            let user_id = uid.as_deref().or_else(|| key.first_user_id()).map(String::from_utf8_lossy);
            let user_id = user_id.map(|u| u.into_owned()).unwrap_or_default();
            emit(&KeyImported { key_id: crate::kbx::dump::hex_upper(&key.key_id), user_id, outcome });
        }
        Ok(summary)
    })
}

/// gpg's lookups on a keybox.
pub(super) type Lookups = Gnupg<KeyboxSearches<PathOpener>>;

/// One gpg run that writes the keybox at `store` at `now`: its start
/// ([`start`]), then `run` with the writer, gpg's lookups and the header
/// blob a new keybox gets; then the lock's own file removed and the
/// writer's counters handed to `tally`, whatever `run` came to.
///
/// # Errors
/// The first write or search that failed.
pub(super) fn replay<T>(
    store: &Path,
    tally: &IoTally,
    now: u32,
    run: impl FnOnce(&mut KeyboxWriter, &mut Lookups, &[u8]) -> Result<T, ImportError>,
) -> Result<T, ImportError> {
    let header = encode_header(&HeaderSpec { openpgp: true, created_at: now, last_maintenance: now });
    let mut w = KeyboxWriter::new(store, tally);
    let result = start(&mut w, store, tally, now, &header).and_then(|()| {
        let mut g = Gnupg::new(PathOpener::new(store.to_path_buf(), tally.clone()));
        run(&mut w, &mut g, &header)
    });
    let finished = w.finish();
    w.settle();
    let value = result?;
    finished?;
    Ok(value)
}

/// gpg's start on a keybox: created if missing (under the lock), then,
/// under the lock, the maintenance pass.
fn start(w: &mut KeyboxWriter, store: &Path, tally: &IoTally, now: u32, header: &[u8]) -> Result<(), ImportError> {
    if !store.exists() {
        // The probe's open fails; gpg makes the file under the lock.
        let _ = crate::io::KeyboxFile::open(store, tally);
        w.exists(Role::Store);
        w.lock()?;
        w.exists(Role::Store);
        w.exists(Role::Backup);
        w.create(header)?;
        w.unlock()?;
        w.finish()?;
        w.check_writable()?;
    } else {
        Gnupg::new(PathOpener::new(store.to_path_buf(), tally.clone())).probe()?;
        w.exists(Role::Store);
        w.readable();
        w.check_writable()?;
    }
    w.lock()?;
    w.compress(now, true)?;
    w.check_writable()?;
    w.unlock()?;
    Ok(())
}

/// gpg's merge of `key` into the keyblock the `store`'s blob `image`
/// holds (`keybox`, `database`): the merged keyblock and what it gained.
///
/// # Errors
/// The stored keyblock does not decode.
pub(super) fn merged_into(image: &[u8], key: &IncomingKey, store: &str) -> Result<(IncomingKey, Added), ImportError> {
    let old = match parse_blob(image) {
        Ok(Blob::Key(blob)) => incoming::keyblocks(blob.data()).ok().and_then(|mut k| k.pop()),
        _ => None,
    };
    let mut old = old.ok_or_else(|| ImportError::Key {
        key_id: crate::kbx::dump::hex_upper(&key.key_id),
        why: format!("the {store}'s keyblock does not decode"),
    })?;
    let added = merge(&mut old, key);
    Ok((old, added))
}

/// `key` as `version`'s gpg stores it ([`import_clean`]), or `None` when
/// no user id is left.
pub(super) fn cleaned(key: &IncomingKey, version: GnupgVersion) -> Option<IncomingKey> {
    let mut key = key.clone();
    import_clean::clean(&mut key, version).then_some(key)
}

/// The blob gpg stores for `key`: its packets in gpg's framing, the
/// self-signatures marked valid, made at `now`.
pub(super) fn blob_of(key: &IncomingKey, now: u32) -> Result<Vec<u8>, ImportError> {
    let packets = key.packets();
    let own = key.key_id;
    let framed = gnupg_keyblock(&packets, |i| {
        packets[i].tag == tag::SIGNATURE
            && crate::openpgp::SigPacket::parse(packets[i].body).ok().and_then(|s| s.issuer) == Some(own)
    });
    let mut spec = openpgp_spec(&framed.bytes, false)
        .map_err(|e| ImportError::Key { key_id: crate::kbx::dump::hex_upper(&own), why: e.to_string() })?;
    spec.created_at = now;
    Ok(encode_key_blob(&spec))
}

fn one_key(
    w: &mut KeyboxWriter,
    g: &mut Lookups,
    key: &IncomingKey,
    version: GnupgVersion,
    now: u32,
    header: &[u8],
) -> Result<(KeyOutcome, Option<Vec<u8>>), ImportError> {
    let _key =
        tracing::info_span!(target: "kbx::lookup", "key", kid = %crate::kbx::dump::hex_upper(&key.key_id)).entered();
    if key.first_user_id().is_none() {
        return Ok((KeyOutcome::NoUserId, None));
    }
    // gpg looks the signers of the keyblock it read up, then cleans it.
    g.fetch_signers(key)?;
    let Some(cleaned) = cleaned(key, version) else { return Ok((KeyOutcome::NoValidUserId, None)) };
    let key = &cleaned;
    w.check_writable()?;
    w.lock()?;
    let (mut handle, present) = g.fast_search(&key.fingerprint)?;
    let outcome = match present {
        None => {
            // `keydb_locate_writable`: a reset of the handle.
            handle.reset()?;
            w.check_writable()?;
            w.check_writable()?;
            g.close_files();
            drop(handle);
            g.forget_missing();
            w.insert(&blob_of(key, now)?, header)?;
            KeyOutcome::Imported
        }
        Some(p) => {
            let (old, added) = merged_into(&p.image, key, "keybox")?;
            if !added.any() {
                w.check_writable()?;
                w.unlock()?;
                drop(handle);
                let uid = g.user_id_by_fpr(&key.fingerprint, key.key_id)?;
                return Ok((KeyOutcome::Unchanged, uid));
            }
            // `keydb_update_keyblock`: the cache of key ids not found
            // emptied, the key searched for again on the same handle,
            // every handle's file closed, the blob replaced through a copy.
            g.forget_missing();
            w.check_writable()?;
            g.search_again(&mut handle, &key.fingerprint)?;
            g.close_files();
            drop(handle);
            let merged = blob_of(&old, now)?;
            w.update(p.signer.offset, p.image.len() as u64, &merged)?;
            KeyOutcome::Merged { user_ids: added.user_ids, subkeys: added.subkeys, signatures: added.signatures }
        }
    };
    w.check_writable()?;
    w.unlock()?;
    let uid = g.user_id_by_fpr(&key.fingerprint, key.key_id)?;
    g.secret_key_probe(key.key_id)?;
    Ok((outcome, uid))
}
