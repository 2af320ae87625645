//! The user ids' validity column of `list`, `list --with-sigs` and `list
//! --check-sigs`: the trust database of the store's GnuPG home, read under
//! the trust model gpg would use there. What cannot be shown as gpg shows
//! it is said in one line on stderr: a check gpg would make first, a
//! model kbxscope does not compute, a damaged database.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};

use super::args::TrustArgs;
use kbxscope::doctor::conf::Conf;
use kbxscope::store::StoreKind;
use kbxscope::timefmt::rfc3339;
use kbxscope::trustdb::{self, Model, Validities};

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

/// The validities for a listing of the store at `store`, judged at `now`.
///
/// # Errors
/// A database named with `--trustdb` that cannot be read, or a file that
/// is not a trust database (one line naming it).
pub(super) fn for_store(store: &Path, kind: StoreKind, a: &TrustArgs, now: i64) -> Result<Validities> {
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
    } else if let Some(next) = v.check_due(now) {
        eprintln!(
            "kbxscope: {}: its next check was due at {}: gpg would check the trust database first (\"checking the trustdb\"); the validities shown are the stored ones",
            path.display(),
            rfc3339(i64::from(next))
        );
    }
    Ok(v)
}

/// The model `gpg.conf` in `home` names (its last `trust-model`), if it
/// names one other than auto.
fn configured(home: &Path) -> Option<Model> {
    let (bytes, _) = kbxscope::io::home::read_head(&home.join("gpg.conf"), 1 << 20).ok()?;
    let conf = Conf::parse("gpg.conf", &String::from_utf8_lossy(&bytes));
    Model::from_option(conf.last("trust-model")?.0?)
}
