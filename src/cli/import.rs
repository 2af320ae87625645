//! `import FILE…`: gpg's import replayed on a private copy.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use super::args::{ImportArgs, ReplayArgs};
use super::output;
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::io::update::{wait_for_lock, PrivateCopy};
use kbxscope::io::IoTally;
use kbxscope::openpgp::incoming::{self, IncomingKey};
use kbxscope::openpgp::Judge;
use kbxscope::store::{Store, StoreKind};
use kbxscope::workload::import::{self, ImportSummary, Incoming, KeyImported, KeyOutcome};
use kbxscope::workload::import_x509::{self, CertImported, CertOutcome, CertSummary};
use kbxscope::workload::{keyboxd_import, keyboxd_x509};
use kbxscope::x509::{self, incoming::IncomingCert};

/// The largest file `import` reads (GnuPG has no such limit, but each of
/// its keys is at most 5 MiB; this only keeps a mistaken path from
/// filling the memory).
const FILE_LIMIT: u64 = 1 << 30;

/// `import`.
pub(super) fn run(a: &ImportArgs, judge: Judge, tally: &IoTally) -> Result<ExitCode> {
    let keys = match read_input(&a.files)? {
        Incoming::Keys(keys) => keys,
        Incoming::Certs(certs) => return run_gpgsm(a, &certs, judge, tally),
    };
    let onto = Onto::resolve(a.onto.as_deref(), judge.version)?;
    if a.bulk_import && matches!(onto, Onto::Keybox(_)) {
        bail!("--bulk-import is keyboxd's (gpg ignores it on a keybox): import --onto keyboxd, a database or its home");
    }
    reported(a.json, message, summary_text, |emit| {
        on_private_copy(&onto, &a.replay, tally, |store| match onto {
            Onto::Keybox(_) => import::into_keybox(store, tally, &keys, judge, emit),
            Onto::Keyboxd(_) => {
                let how = keyboxd_import::KeyboxdRun { bulk: a.bulk_import, cache_kib: None };
                keyboxd_import::into_keyboxd(store, tally, &keys, judge, how, emit)
            }
        })
    })
}

/// Run `replay`, each outcome it hands on a JSON line on stdout (`json`)
/// or `line`'s words on stderr, then its summary the same way.
fn reported<T: serde::Serialize, S: serde::Serialize>(
    json: bool,
    line: impl Fn(&T) -> String,
    summary_text: impl Fn(&S) -> String,
    replay: impl FnOnce(&mut dyn FnMut(&T)) -> Result<S>,
) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let summary = {
        let mut out = stdout.lock();
        replay(&mut |o: &T| {
            if json {
                let _ = serde_json::to_writer(&mut out, o).map(|()| writeln!(out));
            } else {
                eprintln!("{}", line(o));
            }
        })?
    };
    if json {
        writeln!(stdout.lock(), "{}", serde_json::json!({ "summary": summary }))?;
    } else {
        eprint!("{}", summary_text(&summary));
    }
    Ok(ExitCode::SUCCESS)
}

/// The keys or the certificates of `files`, which must all hold the same.
pub(super) fn read_input(files: &[PathBuf]) -> Result<Incoming> {
    let mut keys = Vec::new();
    let mut certs = Vec::new();
    for f in files {
        let bytes = read_file(f)?;
        if x509::incoming::looks_like_certificates(&bytes) {
            let read = x509::incoming::certificates(&bytes).with_context(|| format!("'{}'", f.display()))?;
            certs.extend(read);
        } else {
            keys.extend(keys_of(f, &bytes)?);
        }
        if !keys.is_empty() && !certs.is_empty() {
            bail!(
                "'{}': certificates and OpenPGP keys in one import (gpgsm imports the ones, gpg the others)",
                f.display()
            );
        }
    }
    Ok(if certs.is_empty() { Incoming::Keys(keys) } else { Incoming::Certs(certs) })
}

/// `import` of certificates: gpgsm's import into a keybox or, with
/// keyboxd, into its database.
fn run_gpgsm(a: &ImportArgs, certs: &[IncomingCert], judge: Judge, tally: &IoTally) -> Result<ExitCode> {
    let onto = Onto::resolve(a.onto.as_deref(), judge.version)?;
    if a.bulk_import {
        bail!("--bulk-import is keyboxd's and gpg's: gpgsm has no such option");
    }
    reported(a.json, cert_message, cert_summary_text, |emit| {
        on_private_copy(&onto, &a.replay, tally, |store| match onto {
            Onto::Keybox(_) => import_x509::into_keybox(store, tally, certs, judge.now, judge.version, emit),
            Onto::Keyboxd(_) => keyboxd_x509::into_keyboxd(store, tally, certs, judge.now, None, emit),
        })
    })
}

/// The store a write replay starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Onto {
    /// A copy of this keybox, or a new empty one.
    Keybox(Option<PathBuf>),
    /// A copy of this keyboxd database, or a new empty one.
    Keyboxd(Option<PathBuf>),
}

impl Onto {
    /// What `--onto` names: nothing (a new keybox), `keyboxd` (a new
    /// database), or a store found as every command finds it
    /// ([`Store::open`], read-only, its events in a tally of its own: they
    /// are not the replay's). GnuPG 2.2 (`version`) has no keyboxd.
    pub(super) fn resolve(p: Option<&Path>, version: GnupgVersion) -> Result<Self> {
        let Some(p) = p else { return Ok(Onto::Keybox(None)) };
        let onto = if p == Path::new("keyboxd") {
            Onto::Keyboxd(None)
        } else {
            let store = Store::open(p, &IoTally::with_observer(Default::default(), None))?;
            match store.kind() {
                StoreKind::Keyboxd => Onto::Keyboxd(Some(store.path().to_path_buf())),
                _ => Onto::Keybox(Some(store.path().to_path_buf())),
            }
        };
        if matches!(onto, Onto::Keyboxd(_)) && version == GnupgVersion::V2_2 {
            bail!("keyboxd came with GnuPG 2.3: --gnupg-version 2.2 replays keyboxes only");
        }
        Ok(onto)
    }
}

/// Run `replay` on a private copy of `onto`'s store (a new empty one
/// without it), removed afterwards and on a signal; with `--out`, the
/// store the replay made is written there (through a temporary file).
/// Another process's lock on a keybox is waited for first
/// (`--lock-wait`), counted into `tally`; on a database, as keyboxd waits
/// ([`keyboxd_lock`]).
pub(super) fn on_private_copy<T, E>(
    onto: &Onto,
    options: &ReplayArgs,
    tally: &IoTally,
    replay: impl FnOnce(&Path) -> Result<T, E>,
) -> Result<T>
where
    E: std::error::Error + Send + Sync + 'static,
{
    match onto {
        Onto::Keybox(Some(src)) => {
            // As gpg would, start once another process's lock is let go:
            // the copy is then the keybox that process left.
            let limit = std::time::Duration::from_secs(options.lock_wait);
            wait_for_lock(src, tally, limit, |pid| {
                eprintln!("kbxscope: waiting for lock (held by {pid}) on '{}' ...", src.display());
            })?;
        }
        Onto::Keyboxd(Some(src)) => keyboxd_lock(src, options, tally)?,
        _ => {}
    }
    let source = match onto {
        Onto::Keybox(s) | Onto::Keyboxd(s) => s.as_deref(),
    };
    // Removed when dropped, and by the signal watcher.
    let copy = match (onto, source) {
        (_, Some(src)) => PrivateCopy::of(src, None),
        (Onto::Keybox(_), None) => PrivateCopy::empty(None, "pubring.kbx"),
        (Onto::Keyboxd(_), None) => PrivateCopy::empty(None, "pubring.db"),
    }
    .with_context(|| match source {
        Some(src) => format!("cannot make a private copy of '{}'", src.display()),
        None => "cannot make a private directory for the replay".to_string(),
    })?;
    if let Onto::Keybox(Some(src)) = onto {
        if !is_keybox(copy.store()) {
            drop(copy);
            bail!("'{}' is not a keybox (no KBXf header blob)", src.display());
        }
    }
    let result = replay(copy.store());
    // What the replay made, read once it is over (not a replayed call).
    let out = options.out.as_deref();
    let made = match (&result, out) {
        (Ok(_), Some(_)) => Some(std::fs::read(copy.store()).context("cannot read the store the replay made")),
        _ => None,
    };
    drop(copy);
    let value = result?;
    if let (Some(made), Some(path)) = (made, out) {
        output::write_file(path, &made?, options.force)?;
    }
    Ok(value)
}

/// The OpenPGP keys in `bytes`, the contents of `f`.
fn keys_of(f: &Path, bytes: &[u8]) -> Result<Vec<IncomingKey>> {
    let plain = incoming::dearmor(bytes).with_context(|| format!("'{}'", f.display()))?;
    let keys =
        incoming::keyblocks(&plain).with_context(|| format!("'{}' is not a file of OpenPGP keys", f.display()))?;
    Ok(keys)
}

/// The bytes of a file to import, or a one-line error naming it.
fn read_file(f: &Path) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(f).with_context(|| format!("cannot read '{}'", f.display()))?;
    if !meta.is_file() {
        bail!("'{}' is not a file of keys", f.display());
    }
    if meta.len() > FILE_LIMIT {
        bail!("'{}': {} bytes is more than import reads ({FILE_LIMIT})", f.display(), meta.len());
    }
    std::fs::read(f).with_context(|| format!("cannot read '{}'", f.display()))
}

/// keyboxd's lock on the database `db` at the start of the replayed
/// keyboxd: a keyboxd that is running holds it for as long as it runs, and
/// gpg would use that keyboxd, so the database is copied as it is (said in
/// one line); another live process's lock is waited for as keyboxd waits
/// (`dotlock_take` with 10 s; at most `--lock-wait`), the wait counted.
fn keyboxd_lock(db: &Path, options: &ReplayArgs, tally: &IoTally) -> Result<()> {
    let holder =
        kbxscope::io::update::lock_holder(db).with_context(|| format!("cannot read the lock of '{}'", db.display()))?;
    match holder {
        None => Ok(()),
        Some((pid, name)) if name == "keyboxd" => {
            eprintln!(
                "kbxscope: keyboxd ({pid}) holds '{}' as it runs (gpg would use it): the replay copies the database as it is",
                db.display()
            );
            Ok(())
        }
        Some(_) => {
            let limit = std::time::Duration::from_secs(options.lock_wait.min(KEYBOXD_LOCK_WAIT));
            wait_for_lock(db, tally, limit, |pid| {
                eprintln!("kbxscope: keyboxd waiting for lock (held by {pid}) on '{}' ...", db.display());
            })?;
            Ok(())
        }
    }
}

/// How long keyboxd waits for its database's lock before it gives up.
const KEYBOXD_LOCK_WAIT: u64 = 10;

/// The private copy of a keybox starts with its header blob (`KBXf`).
fn is_keybox(copy: &Path) -> bool {
    let mut head = [0u8; 12];
    std::fs::File::open(copy).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok()
        && &head[8..] == b"KBXf"
}

/// gpg's line for one key.
fn message(k: &KeyImported) -> String {
    let id = &k.key_id;
    let uid = &k.user_id;
    match k.outcome {
        KeyOutcome::Imported => format!("kbxscope: key {id}: public key \"{uid}\" imported"),
        KeyOutcome::Unchanged => format!("kbxscope: key {id}: \"{uid}\" not changed"),
        KeyOutcome::NoUserId => format!("kbxscope: key {id}: no user ID"),
        KeyOutcome::NoValidUserId => format!("kbxscope: key {id}: no valid user IDs"),
        KeyOutcome::Merged { user_ids, subkeys, signatures } => {
            let mut parts = Vec::new();
            for (n, one, many) in [
                (user_ids, "new user ID", "new user IDs"),
                (signatures, "new signature", "new signatures"),
                (subkeys, "new subkey", "new subkeys"),
            ] {
                if n > 0 {
                    parts.push(format!("{n} {}", if n == 1 { one } else { many }));
                }
            }
            format!("kbxscope: key {id}: \"{uid}\" {}", parts.join(", "))
        }
    }
}

/// A line for one certificate (gpgsm prints them with `--verbose`).
fn cert_message(c: &CertImported) -> String {
    let (fpr, subject) = (&c.fingerprint, &c.subject);
    let missing = if c.issuer_found { "" } else { " (issuer certificate not found)" };
    match c.outcome {
        CertOutcome::Imported => format!("kbxscope: certificate {fpr} \"{subject}\" imported{missing}"),
        CertOutcome::Unchanged => format!("kbxscope: certificate {fpr} \"{subject}\" already in the keybox"),
        CertOutcome::NotImported { reason } => {
            format!("kbxscope: certificate {fpr} \"{subject}\" not imported: {reason}")
        }
    }
}

/// gpgsm's closing statistics, the lines it prints for non-zero counts.
fn cert_summary_text(s: &CertSummary) -> String {
    let mut out = format!("kbxscope: total number processed: {}\n", s.processed);
    for (n, label) in [(s.imported, "imported"), (s.unchanged, "unchanged"), (s.not_imported, "not imported")] {
        if n > 0 {
            out += &format!("kbxscope: {label:>22}: {n}\n");
        }
    }
    out
}

/// gpg's closing statistics, the lines it prints for non-zero counts.
fn summary_text(s: &ImportSummary) -> String {
    let mut out = format!("kbxscope: Total number processed: {}\n", s.processed);
    for (n, label) in [
        (s.no_user_id, "w/o user IDs"),
        (s.imported, "imported"),
        (s.unchanged, "unchanged"),
        (s.new_user_ids, "new user IDs"),
        (s.new_subkeys, "new subkeys"),
        (s.new_signatures, "new signatures"),
    ] {
        if n > 0 {
            out += &format!("kbxscope: {label:>18}: {n}\n");
        }
    }
    out
}
