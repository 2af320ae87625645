//! The user ids' validity column of `list`, `list --with-sigs` and `list
//! --check-sigs`: the trust database of the store's GnuPG home, read under
//! the trust model gpg would use there. What cannot be shown as gpg shows
//! it is said in one line on stderr: a check gpg would make first, a
//! model kbxscope does not compute, a damaged database.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};

use super::args::TrustArgs;
use kbxscope::doctor::conf::Conf;
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::io::{BufferSize, IoTally};
use kbxscope::lookup::Strategy;
use kbxscope::openpgp::{Judge, Mode};
use kbxscope::store::{Store, StoreKind};
use kbxscope::timefmt::rfc3339;
use kbxscope::trustdb::{self, validity, Model, TrustDb, Validities};
use kbxscope::workload::sigs::{self, KeySigs};
use kbxscope::workload::trust_check::{self, CheckOptions};

/// The largest trust database read (as `kbxscope trustdb`).
const MAX_BYTES: u64 = 1 << 30;

/// The GnuPG home a store belongs to: a keybox's directory, or the one
/// holding keyboxd's `public-keys.d`.
fn home_of(store: &Path, kind: StoreKind) -> PathBuf {
    let dir = store.parent().unwrap_or(Path::new("."));
    match kind {
        StoreKind::Keyboxd => dir.parent().unwrap_or(dir).to_path_buf(),
        StoreKind::Keybox => dir.to_path_buf(),
    }
}

/// The validities for a listing of the store at `store`, judged at `now`
/// by GnuPG `version`: the stored ones, or, when the database's check is
/// due (pgp, classic), those gpg's check would compute first.
///
/// # Errors
/// A database named with `--trustdb` that cannot be read, or a file that
/// is not a trust database (one line naming it).
pub(super) fn for_store(
    store: &Path,
    kind: StoreKind,
    a: &TrustArgs,
    now: i64,
    version: GnupgVersion,
) -> Result<Validities> {
    let home = home_of(store, kind);
    let path = a.trustdb.clone().unwrap_or_else(|| home.join("trustdb.gpg"));
    let db = match kbxscope::io::home::read_head(&path, MAX_BYTES) {
        Ok((_, true)) => {
            return Err(anyhow!("{}: larger than {MAX_BYTES} bytes: not a trust database", path.display()))
        }
        Ok((bytes, false)) => Some(trustdb::read(&bytes).map_err(|e| anyhow!("{}: {e}", path.display()))?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && a.trustdb.is_none() => None,
        Err(e) => return Err(anyhow!("{}: {e}", path.display())),
    };
    let model = match a.trust_model.as_deref() {
        Some(name) => Model::from_option(name),
        None => configured(&home),
    }
    .unwrap_or_else(|| Model::of_database(db.as_ref()));
    if let Some(db) = &db {
        if let Some(first) = db.damage.first() {
            eprintln!(
                "kbxscope: {}: the trust database is damaged at record {} ({}; `kbxscope trustdb` names all {}): validities as read",
                path.display(),
                first.record,
                first.what,
                db.damage.len()
            );
        }
    }
    let v = Validities::new(db.as_ref(), model);
    if !v.computed() {
        eprintln!(
            "kbxscope: trust model {}: kbxscope does not compute its validity; the column is left out",
            model.name()
        );
        return Ok(v);
    }
    let (Some(next), Some(db)) = (v.check_due(now), &db) else { return Ok(v) };
    // gpg checks the database before it shows a validity: so does this.
    let due = rfc3339(i64::from(next));
    match checked(store, kind, db, model, now, version) {
        Ok(records) => {
            eprintln!(
                "kbxscope: {}: its next check was due at {due}: the validities shown are those gpg's check (\"checking the trustdb\") computes, computed here (its reads not counted; nothing written)",
                path.display()
            );
            Ok(v.with_checked(records))
        }
        Err(e) => {
            eprintln!(
                "kbxscope: {}: its next check was due at {due}; it cannot be computed ({e}): the validities shown are the stored ones",
                path.display()
            );
            Ok(v)
        }
    }
}

/// The records gpg's check of `db` would store, computed over the store's
/// keys read through a tally of its own (the listing's I/O is gpg's
/// listing's, not the check's).
fn checked(
    store: &Path,
    kind: StoreKind,
    db: &TrustDb,
    model: Model,
    now: i64,
    version: GnupgVersion,
) -> Result<Vec<validity::CheckedRecord>> {
    let tally = IoTally::new(BufferSize::Bytes(1 << 16));
    let store = Store::open_as(store, kind, &tally, None)?;
    let mut keys: Vec<KeySigs> = Vec::new();
    let judge = Judge { version, now };
    let ran = sigs::run(&store, Mode::CheckSigs, Strategy::Index, judge, |k| keys.push(k))?;
    if let Some(e) = ran.outcome.fatal {
        return Err(anyhow!("{e}"));
    }
    let checked = trust_check::compute(&keys, db, &CheckOptions::of(db, model, now, kind))?;
    Ok(checked.stored.into_iter().map(|((fpr, name), s)| (fpr, name, s.validity)).collect())
}

/// The model `gpg.conf` in `home` names (its last `trust-model`), if it
/// names one other than auto.
fn configured(home: &Path) -> Option<Model> {
    let (bytes, _) = kbxscope::io::home::read_head(&home.join("gpg.conf"), 1 << 20).ok()?;
    let conf = Conf::parse("gpg.conf", &String::from_utf8_lossy(&bytes));
    Model::from_option(conf.last("trust-model")?.0?)
}
