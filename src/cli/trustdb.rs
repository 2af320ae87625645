//! `trustdb`: a GnuPG home's trust database read ([`kbxscope::trustdb`])
//! and printed: the header and the records as `#` comments, then the
//! owner trusts in `gpg --export-ownertrust`'s form (so the output can be
//! imported with `gpg --import-ownertrust`); or one JSON object.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Result};

use super::args::TrustdbArgs;
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::io::IoTally;
use kbxscope::lookup::Strategy;
use kbxscope::openpgp::{Judge, Mode};
use kbxscope::timefmt;
use kbxscope::trustdb::{self, Model, TrustDb};
use kbxscope::workload::sigs::{self, KeySigs};
use kbxscope::workload::trust_check::{self, CheckOptions};

/// The largest trust database read: gpg's for a million keys is far below.
const MAX_BYTES: u64 = 1 << 30;

/// The database file: the one named, or `trustdb.gpg` in the home named
/// (or GnuPG's home).
fn database_path(given: Option<&Path>) -> Result<PathBuf> {
    let path = super::store::gnupg_home(given)?;
    let is_dir = kbxscope::io::home::look(&path).is_ok_and(|e| e.is_dir());
    Ok(if is_dir { path.join("trustdb.gpg") } else { path })
}

/// Run `trustdb`: 0 when the database is whole, 1 when it is damaged.
///
/// # Errors
/// It cannot be read, is too large, or is not a trust database (one line
/// naming the file).
pub fn run(a: &TrustdbArgs, now: i64, version: GnupgVersion, tally: &IoTally) -> Result<ExitCode> {
    let path = database_path(a.path.as_deref())?;
    let (bytes, more) =
        kbxscope::io::home::read_head(&path, MAX_BYTES).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if more {
        return Err(anyhow!("{}: larger than {} bytes: not a trust database gpg writes", path.display(), MAX_BYTES));
    }
    let db = trustdb::read(&bytes).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if a.check {
        return check(&path, &db, a.json, now, version, tally);
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = serde_json::json!({
            "path": path.display().to_string(),
            "header": &db.header,
            "records": db.records,
            "by_type": db.by_type.iter().map(|(n, c)| (n.to_string(), (*c).into())).collect::<serde_json::Map<_, _>>(),
            "keys": &db.keys,
            "ownertrust": db.ownertrust().iter().map(|(f, t)| serde_json::json!({
                "fingerprint": kbx_format::dump::hex_upper(f),
                "ownertrust": t & 15,
                "name": trustdb::trust_name(*t),
                "disabled": t & 128 != 0,
            })).collect::<Vec<_>>(),
            "damage": &db.damage,
        });
        writeln!(out, "{v}")?;
    } else {
        out.write_all(text(&path, &db, now).as_bytes())?;
    }
    for d in &db.damage {
        let offset = u64::from(d.record) * trustdb::RECORD_LEN as u64;
        eprintln!("kbxscope: {}: record {} (byte offset {offset}): {}", path.display(), d.record, d.what);
    }
    Ok(if db.damage.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `trustdb --check`: what gpg's check would store for every user id of
/// the home's keybox (or keyboxd's database where the home has no
/// keybox), against what the database at `path` holds.
fn check(path: &Path, db: &TrustDb, json: bool, now: i64, version: GnupgVersion, tally: &IoTally) -> Result<ExitCode> {
    let home = path.parent().unwrap_or(Path::new("."));
    // The home's keybox, else keyboxd's database (GnuPG 2.4's use-keyboxd).
    let keybox = home.join("pubring.kbx");
    let keyboxd = home.join("public-keys.d").join("pubring.db");
    let exists = |p: &Path| kbxscope::io::home::look(p).is_ok_and(|e| e.is_file());
    let file = if !exists(&keybox) && exists(&keyboxd) { keyboxd } else { keybox };
    let store = super::store::open(Some(&file), tally)?;
    let mut keys: Vec<KeySigs> = Vec::new();
    let judge = Judge { version, now };
    let ran = sigs::run(&store, Mode::CheckSigs, Strategy::Index, judge, |k| keys.push(k))?;
    if let Some(e) = &ran.outcome.fatal {
        return Err(anyhow!("{}: {e}", store.path().display()));
    }
    let model = Model::of_database(Some(db));
    let o = CheckOptions::of(db, model, now, store.kind());
    let checked = trust_check::compute(&keys, db, &o).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let rows = trust_check::compare(&keys, db, &checked);
    let differ = rows.iter().filter(|r| r.stored != r.computed).count();
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "path": path.display().to_string(),
            "model": model.name(),
            "depths": checked.depths,
            "ultimately_trusted": checked.ultimate,
            "user_ids": rows,
            "differ": differ,
        });
        writeln!(out, "{v}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "# what gpg's trust-database check would store now: trust model {}, marginals {}, completes {}, max depth {}, min cert level {}",
        model.name(),
        o.marginals,
        o.completes,
        o.max_depth,
        o.min_cert_level
    )?;
    for d in &checked.depths {
        writeln!(out, "{}", d.line())?;
    }
    let mut by: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for r in &rows {
        *by.entry(trustdb::trust_name(r.computed.validity)).or_default() += 1;
    }
    let counts: Vec<String> = by.iter().map(|(n, c)| format!("{c} {n}")).collect();
    writeln!(out, "{} user ids: {}; {differ} differ from what the database holds", rows.len(), counts.join(", "))?;
    for r in rows.iter().filter(|r| r.stored != r.computed) {
        let (stored, computed) = (&r.stored, &r.computed);
        writeln!(
            out,
            "{} {}: stored {} ({} full, {} marginal), check {} ({} full, {} marginal)",
            r.fingerprint,
            r.user_id,
            trustdb::trust_name(stored.validity),
            stored.full_count,
            stored.marginal_count,
            trustdb::trust_name(computed.validity),
            computed.full_count,
            computed.marginal_count
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The report: comments gpg's import skips, then its export's lines.
fn text(path: &Path, db: &TrustDb, now: i64) -> String {
    let h = &db.header;
    let when = |t: u32| if t == 0 { "none".to_string() } else { timefmt::rfc3339(i64::from(t)) };
    let due = match h.next_check {
        0 => "no check scheduled",
        t if i64::from(t) <= now => "due: the next gpg command that needs a validity checks it",
        _ => "not due yet",
    };
    let counts: Vec<String> = db.by_type.iter().map(|(n, c)| format!("{c} {n}")).collect();
    let mut s = format!(
        "# {}: trust model {}, marginals {}, completes {}, max depth {}, min cert level {}\n\
         # created {}, next check {} ({due})\n\
         # {} records: {}\n",
        path.display(),
        h.model,
        h.marginals,
        h.completes,
        h.max_depth,
        h.min_cert_level,
        when(h.created),
        when(h.next_check),
        db.records,
        counts.join(", "),
    );
    s.push_str("# List of assigned trustvalues, as gpg --export-ownertrust prints them\n");
    s.push_str("# (Use \"gpg --import-ownertrust\" to restore them)\n");
    for (fpr, t) in db.ownertrust() {
        s.push_str(&format!("{}:{t}:\n", kbx_format::dump::hex_upper(&fpr)));
    }
    s
}
