//! `trustdb`: a GnuPG home's trust database read ([`kbxscope::trustdb`])
//! and printed: the header and the records as `#` comments, then the
//! owner trusts in `gpg --export-ownertrust`'s form (so the output can be
//! imported with `gpg --import-ownertrust`); or one JSON object.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Result};

use super::args::TrustdbArgs;
use kbxscope::timefmt;
use kbxscope::trustdb::{self, TrustDb};

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
pub fn run(a: &TrustdbArgs, now: i64) -> Result<ExitCode> {
    let path = database_path(a.path.as_deref())?;
    let (bytes, more) =
        kbxscope::io::home::read_head(&path, MAX_BYTES).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if more {
        return Err(anyhow!("{}: larger than {} bytes: not a trust database gpg writes", path.display(), MAX_BYTES));
    }
    let db = trustdb::read(&bytes).map_err(|e| anyhow!("{}: {e}", path.display()))?;
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
