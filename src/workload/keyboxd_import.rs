//! `import FILE… --onto DATABASE`: gpg 2.4's import of OpenPGP keys with
//! `use-keyboxd`, replayed on a private copy of keyboxd's database: the
//! requests gpg sends keyboxd (checked against keyboxd's own `debug ipc`
//! log) and the SQL keyboxd runs for each (`keyboxd::server`,
//! `keyboxd::store`), every call SQLite makes counted per file
//! (the database, its journal, its directory):
//!
//! * **keyboxd's start**: its lock (`pubring.db.lock`, GnuPG's dotlock,
//!   held for keyboxd's life), the database opened read-write (made if
//!   missing) and its table definitions run.
//! * **Each key**: on the session of gpg's key lookups, one `SEARCH` by
//!   key id for the signer of every signature not made by the key itself
//!   (gpg's `repair-keys` check; with keyboxd no cache of key ids not
//!   found saves a request); on the import's session a `SEARCH` for the
//!   fingerprint, then `STORE --insert` for a new key (one transaction),
//!   or gpg's merge and `STORE --update` for a key present that gains
//!   something; then a `SEARCH` for the fingerprint (the user id gpg
//!   prints, unless a lookup of this run found the key already: gpg's
//!   cache of user ids), and for a key written one by key id with `NEXT`
//!   to the end (gpg asks its agent for the secret key, which a replay's
//!   agent does not hold).
//! * **`bulk-import`** (`--import-options bulk-import`): gpg sends
//!   `TRANSACTION begin` on its first connection and `TRANSACTION commit`
//!   as it exits: every search and store between runs in one transaction
//!   (keyboxd's start still runs its own).
//! * **SQLite as Debian builds it**: keyboxd uses the system's SQLite;
//!   Debian's (and Ubuntu's) turns `secure_delete` on, so an update's
//!   freed pages are zeroed, written and journaled. The replay does the
//!   same.
//! * **keyboxd's exit**: the lock's files removed.

use std::collections::HashSet;
use std::path::Path;

use super::import::{blob_of, cleaned, merged_into, ImportError, ImportSummary, KeyImported, KeyOutcome};
use crate::gnupg_version::GnupgVersion;
use crate::io::sqlite::{Database, DbError};
use crate::io::update::KeyboxWriter;
use crate::io::IoTally;
use crate::kbx::{parse_blob, Blob};
use crate::keyboxd::server::{Client, Found, Search, Server, Session};
use crate::keyboxd::store::{self, StoreMode};
use crate::keyboxd::write::rows_of;
use crate::openpgp::incoming::IncomingKey;
use crate::openpgp::{Judge, SigPacket};

/// How keyboxd is run for an import.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyboxdRun {
    /// gpg's `--import-options bulk-import`: one transaction for all keys.
    pub bulk: bool,
    /// SQLite's page cache in KiB (`sweep`'s sizes); keyboxd's own,
    /// SQLite's default, when `None`.
    pub cache_kib: Option<u64>,
}

/// Import `keys` into keyboxd's database at `db` (a private copy; made if
/// it does not exist), its events counted in `tally`, as `judge`'s gpg
/// would at `judge.now`, as `how` says; each key's outcome handed to
/// `emit`.
///
/// # Errors
/// The first request that failed.
pub fn into_keyboxd(
    db: &Path,
    tally: &IoTally,
    keys: &[IncomingKey],
    judge: Judge,
    how: KeyboxdRun,
    mut emit: impl FnMut(&KeyImported),
) -> Result<ImportSummary, ImportError> {
    let _cmd =
        tracing::info_span!(target: "kbx::lookup", "import", keys = keys.len(), store = "keyboxd", bulk = how.bulk)
            .entered();
    let now = u32::try_from(judge.now.max(0)).unwrap_or(u32::MAX);
    serve(db, tally, now, how.cache_kib, Client::Gpg, |server| {
        if how.bulk {
            server.begin_bulk();
        }
        let sessions = Sessions { lookups: server.connect(), import: server.connect() };
        let mut uids = UidCache::default();
        let mut summary = ImportSummary::default();
        for key in keys {
            let outcome = one_key(server, &sessions, &mut uids, key, judge.version, now)?;
            summary.count(&outcome);
            let user_id = key.first_user_id().map(|u| String::from_utf8_lossy(u).into_owned()).unwrap_or_default();
            emit(&KeyImported { key_id: crate::kbx::dump::hex_upper(&key.key_id), user_id, outcome });
        }
        // gpg's exit: its `TRANSACTION commit` (with bulk-import).
        server.commit_bulk()?;
        Ok(summary)
    })
}

/// keyboxd serving one run of `client` (gpg or gpgsm) from the database at
/// `db` (a private copy; made if it does not exist), at `now`, with
/// SQLite's page cache `cache_kib` (keyboxd's own when `None`): its lock
/// taken, the database
/// opened and started as keyboxd does, `run` given the server; then the
/// lock's files removed and its counters settled into `tally`, whatever
/// `run` came to.
///
/// # Errors
/// The first request that failed.
pub(super) fn serve<T>(
    db: &Path,
    tally: &IoTally,
    now: u32,
    cache_kib: Option<u64>,
    client: Client,
    run: impl FnOnce(&Server<'_>) -> Result<T, ImportError>,
) -> Result<T, ImportError> {
    let mut lock = KeyboxWriter::new(db, tally);
    let result = lock.lock().map_err(ImportError::from).and_then(|()| {
        let database = Database::open_private(db, tally)?;
        // keyboxd links the system's SQLite; Debian's (and so Ubuntu's) is
        // built with SECURE_DELETE: the pages a store frees are zeroed,
        // written and journaled.
        database.set_secure_delete(true)?;
        if let Some(kib) = cache_kib {
            database.set_cache_kib(kib)?;
        }
        let created = crate::timefmt::rfc3339(i64::from(now)).replace('T', " ");
        let server = store::start(&database, created.trim_end_matches('Z'), client)?;
        run(&server)
    });
    let released = lock.exit();
    lock.settle();
    let value = result?;
    released?;
    Ok(value)
}

/// gpg's cache of user ids (`objcache`): the fingerprints of every
/// keyblock one of its lookups found (the signers', the user ids'); the
/// user id gpg prints for a key is looked up only when its fingerprint is
/// not there. (Its own search for the key to import, the "fast" one, does
/// not fill it.)
#[derive(Default)]
struct UidCache(HashSet<Vec<u8>>);

impl UidCache {
    /// A keyblock a lookup found.
    fn put(&mut self, found: &Found) {
        if let Ok(Blob::Key(blob)) = parse_blob(&found.blob) {
            self.0.extend(blob.keys().map(|k| k.fingerprint.to_vec()));
        }
    }
}

/// The requests of gpg's session that looks keys up, and of its import's.
struct Sessions {
    lookups: Session,
    import: Session,
}

/// One key of gpg's import through keyboxd (see the module docs): its
/// signers looked up, then stored, merged or left alone; what became of it.
fn one_key(
    server: &Server<'_>,
    s: &Sessions,
    uids: &mut UidCache,
    key: &IncomingKey,
    version: GnupgVersion,
    now: u32,
) -> Result<KeyOutcome, ImportError> {
    let Sessions { lookups, import } = *s;
    let _key =
        tracing::info_span!(target: "kbx::lookup", "key", kid = %crate::kbx::dump::hex_upper(&key.key_id)).entered();
    if key.first_user_id().is_none() {
        return Ok(KeyOutcome::NoUserId);
    }
    for sig in key.components.iter().flat_map(|c| &c.sigs) {
        let Some(kid) = SigPacket::parse(sig).ok().and_then(|s| s.issuer) else { continue };
        if kid != key.key_id {
            if let Some(found) = server.search(lookups, &Search::LongKid(kid))? {
                uids.put(&found);
            }
        }
    }
    // gpg cleans the keyblock once its signers are looked up.
    let Some(cleaned) = cleaned(key, version) else { return Ok(KeyOutcome::NoValidUserId) };
    let key = &cleaned;
    let fpr = Search::Fpr(key.fingerprint.clone());
    let outcome = match server.search(import, &fpr)? {
        None => {
            store_key(server, key, now, StoreMode::Insert)?;
            KeyOutcome::Imported
        }
        Some(found) => {
            let (old, added) = merged_into(&found.blob, key, "database")?;
            if !added.any() {
                user_id(server, import, uids, key)?;
                return Ok(KeyOutcome::Unchanged);
            }
            store_key(server, &old, now, StoreMode::Update)?;
            KeyOutcome::Merged { user_ids: added.user_ids, subkeys: added.subkeys, signatures: added.signatures }
        }
    };
    user_id(server, import, uids, key)?;
    server.search_to_end(import, &Search::LongKid(key.key_id))?;
    Ok(outcome)
}

/// The user id gpg prints for `key`: from its cache, else looked up by
/// fingerprint.
fn user_id(server: &Server<'_>, session: Session, uids: &mut UidCache, key: &IncomingKey) -> Result<(), ImportError> {
    if !uids.0.contains(&key.fingerprint) {
        if let Some(found) = server.search(session, &Search::Fpr(key.fingerprint.clone()))? {
            uids.put(&found);
        }
    }
    Ok(())
}

/// `STORE` of `key` as gpg sends it: the keyblock a keybox blob of it holds.
fn store_key(server: &Server<'_>, key: &IncomingKey, now: u32, mode: StoreMode) -> Result<(), ImportError> {
    store_image(server, &blob_of(key, now)?, &key.key_id, mode)
}

/// `STORE` of what the keybox blob `image` holds (a keyblock or a
/// certificate) with keyboxd's rows for it; `id` names the key in errors.
pub(super) fn store_image(server: &Server<'_>, image: &[u8], id: &[u8], mode: StoreMode) -> Result<(), ImportError> {
    let why = |why: String| ImportError::Key { key_id: crate::kbx::dump::hex_upper(id), why };
    let Ok(Blob::Key(blob)) = parse_blob(image) else { return Err(why("its blob does not parse".into())) };
    let rows = rows_of(&blob).map_err(|e| why(e.to_string()))?;
    server.store(blob.data(), &rows, mode)?;
    Ok(())
}

impl From<DbError> for ImportError {
    fn from(e: DbError) -> Self {
        ImportError::Keyboxd(e)
    }
}
