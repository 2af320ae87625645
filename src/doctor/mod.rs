//! `doctor`: read a GnuPG home and say why its commands are slow or stuck,
//! each finding with its evidence, the command that fixes it and, where
//! a replay measured it, the time it saves. Nothing of the home changes:
//! its files are only looked at and read, and every replay works on a
//! private copy.
//!
//! * `layout`: where the keys live and what decided it, stores left
//!   behind, the buffer size, permissions, the daemons serving the home;
//! * `locks`: every lock of the home judged (who wrote it, whether it
//!   lives, whether it is stale);
//! * [`crate::trustdb`]: the trust database's schedule;
//! * `changes` and `measure`: the fixes made to a copy and replayed;
//! * [`crate::workload::health`]: the store weighed.
//!
//! The system's processes come through [`locks::Processes`], which the
//! command line answers from `/proc`.

pub mod changes;
pub mod conf;
mod findings;
pub mod layout;
pub mod locks;
pub mod measure;
mod savings;
mod store_findings;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::gnupg_version::GnupgVersion;
use crate::io::home::{self, Entry};
use crate::io::{BufferSize, IoTally};
use crate::store::Store;
use crate::trustdb;
use crate::workload::health::Health;
use conf::Conf;
use layout::{Buffer, Confs, Daemon, StoreUse};
use locks::{Lock, Processes};

pub use findings::{mib, sh, Finding, KINDS};
pub use store_findings::age_words;

/// What `doctor` is asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// The GnuPG home.
    pub home: PathBuf,
    /// Whether it is this user's default home (`~/.gnupg`): its sockets
    /// lie in the run directory itself.
    pub default_home: bool,
    /// The GnuPG whose behaviour is judged.
    pub version: GnupgVersion,
    /// Where the version came from (`gpg --version`, `--gnupg-version`).
    pub version_from: String,
    /// Now, Unix seconds.
    pub now: i64,
    /// Skip the replays.
    pub quick: bool,
    /// gpg as the fixes call it: `gpg` for the home gpg uses by default,
    /// else `gpg --homedir HOME`.
    pub gpg: String,
}

/// Why a home cannot be examined at all.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    /// It does not exist or cannot be looked at.
    #[error("cannot read the GnuPG home '{}': {error}", path.display())]
    Home {
        /// The home.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// It is no directory.
    #[error("'{}' is not a directory (a GnuPG home is one)", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
}

/// The store weighed, as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct StoreHealth {
    /// The store.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// Blobs by type.
    pub blobs: std::collections::BTreeMap<&'static str, u64>,
    /// Bytes deleted blobs take.
    pub deleted_bytes: u64,
    /// The maintenance stamp, Unix seconds.
    pub last_maintenance: Option<u32>,
    /// Signature packets of all keys.
    pub signatures: u64,
    /// Of those, by signers the store does not hold.
    pub unknown_signers: u64,
    /// The largest keys and certificates, by bytes.
    pub largest: Vec<Weight>,
    /// The keys with the most signatures.
    pub most_signatures: Vec<Weight>,
}

/// One key or certificate's weight.
#[derive(Debug, Clone, Serialize)]
pub struct Weight {
    /// Its fingerprint, hex.
    pub fingerprint: String,
    /// Its first user id or subject.
    pub name: String,
    /// `openpgp` or `x509`.
    #[serde(rename = "type")]
    pub blob_type: &'static str,
    /// Blob index.
    pub index: u64,
    /// Its bytes.
    pub bytes: u64,
    /// Its signature packets.
    pub signatures: u64,
    /// Of those, by signers the store does not hold.
    pub unknown_signers: u64,
}

/// The trust model and the trust database's schedule.
#[derive(Debug, Clone, Serialize)]
pub struct Trust {
    /// The model in effect.
    pub model: String,
    /// What decided it.
    pub decided_by: String,
    /// The database's header, if there is one and it reads.
    pub trustdb: Option<trustdb::Header>,
    /// Whether `no-auto-check-trustdb` is set.
    pub auto_check_off: bool,
    /// Whether the next gpg command that needs validity checks the database first.
    pub check_due: bool,
    /// The option `gpg.conf` sets otherwise than the database was built
    /// with (which makes gpg check it at once), as `option: conf ≠ database`.
    pub options_differ: Option<String>,
}

/// The first of the web of trust's options that `gpg.conf` sets otherwise
/// than the database says (gpg's `tdbio_db_matches_options`; tofu counts
/// as pgp): then gpg checks the database at its next command.
fn options_differ(h: &trustdb::Header, gpg: &Conf, model: &str) -> Option<String> {
    let number = |name: &str, default: u8| gpg.last(name).and_then(|(v, _)| v?.parse::<u8>().ok()).unwrap_or(default);
    let model = match model {
        "tofu" | "tofu+pgp" => "pgp",
        m => m,
    };
    let pairs = [
        ("marginals-needed", number("marginals-needed", 3), h.marginals),
        ("completes-needed", number("completes-needed", 1), h.completes),
        ("max-cert-depth", number("max-cert-depth", 5), h.max_depth),
        ("min-cert-level", number("min-cert-level", 2), h.min_cert_level),
    ];
    if let Some((name, conf, db)) = pairs.iter().find(|(_, conf, db)| conf != db) {
        return Some(format!("{name}: {conf} in gpg.conf, {db} in the database"));
    }
    (model != h.model).then(|| format!("trust-model: {model} in gpg.conf, {} in the database", h.model))
}

/// Everything `doctor` found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The home.
    pub home: PathBuf,
    /// The GnuPG judged.
    pub gnupg_version: String,
    /// Where that version came from.
    pub gnupg_version_from: String,
    /// When, Unix seconds.
    pub checked_at: i64,
    /// The store each program uses.
    pub stores: Vec<StoreUse>,
    /// The keybox buffer in effect.
    pub buffer: Buffer,
    /// The daemons serving the home.
    pub daemons: Vec<Daemon>,
    /// Every lock of the home.
    pub locks: Vec<Lock>,
    /// The store weighed (none when there is no store to weigh).
    pub health: Option<StoreHealth>,
    /// Trust.
    pub trust: Trust,
    /// The replays (none with `--quick`).
    pub measured: Option<measure::Replays>,
    /// What is wrong, the measured first, by the time they save.
    pub findings: Vec<Finding>,
}

/// What a replay is doing, for a progress display.
pub struct Step<'a> {
    /// In words.
    pub what: &'a str,
    /// Replays done.
    pub done: usize,
    /// Replays in all.
    pub total: usize,
}

/// A small file of the home, read whole (at most 1 MiB); `None` when it
/// does not exist, the error when it cannot be read.
fn read_conf(home: &Path, name: &str, found: &mut Vec<Finding>) -> Conf {
    let path = home.join(name);
    match home::read_head(&path, 1 << 20) {
        Ok((bytes, _)) => Conf::parse(name, &String::from_utf8_lossy(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Conf { file: name.into(), ..Conf::default() },
        Err(e) => {
            found.push(findings::unreadable(&path, &e));
            Conf { file: name.into(), ..Conf::default() }
        }
    }
}

/// Examine the home `o.home`.
///
/// # Errors
/// The home does not exist, cannot be looked at, or is no directory.
/// Everything else wrong with it is a finding.
pub fn examine(o: &Options, ps: &dyn Processes, progress: &mut dyn FnMut(Step<'_>)) -> Result<Report, DoctorError> {
    let home_entry = home::look(&o.home).map_err(|error| DoctorError::Home { path: o.home.clone(), error })?;
    if !home_entry.is_dir() {
        return Err(DoctorError::NotADirectory { path: o.home.clone() });
    }
    let entries = home::list(&o.home).map_err(|error| DoctorError::Home { path: o.home.clone(), error })?;
    let keyboxd_dir = o.home.join("public-keys.d");
    let db_entries = home::list(&keyboxd_dir).unwrap_or_default();
    let mut found = Vec::new();
    let confs = Confs {
        gpg: read_conf(&o.home, "gpg.conf", &mut found),
        gpgsm: read_conf(&o.home, "gpgsm.conf", &mut found),
        common: read_conf(&o.home, "common.conf", &mut found),
    };
    let exists = |p: &Path| entries.iter().chain(&db_entries).any(|e| e.path == p && e.is_file());
    let kbx_openpgp = home::read_head(&o.home.join("pubring.kbx"), 8).is_ok_and(|(b, _)| b.len() == 8 && b[7] & 2 != 0);
    let stores = layout::stores(&o.home, &confs, o.version, &exists, kbx_openpgp);
    let buffer = layout::buffer(&confs, o.version);
    let uid = home::own_uid();
    if let Some(p) = layout::permissions(&home_entry, uid) {
        found.push(findings::permissions(&p));
    }
    let daemons = layout::daemons(&layout::socket_candidates(&o.home, uid, o.default_home), ps);
    let fs = home::file_system(&o.home);
    let locks = judge_locks(o, &entries, &db_entries, &stores, fs.is_some_and(|f| f.network), ps, &mut found);
    found.extend(findings::second_stores(&stores, &entries, &db_entries));
    let gpg_store = &stores[0];
    let (health, weighed) = weigh(gpg_store, &stores[1], &mut found);
    let writable = fs.is_none_or(|f| !f.read_only);
    if let Some(h) = &weighed {
        found.extend(store_findings::store(h, gpg_store, o, writable));
        // A lock GnuPG cannot take stops its maintenance pass too.
        let blocking =
            locks.iter().find(|l| l.path == gpg_store.path.with_extension("kbx.lock") && !l.cleared_by_gnupg);
        if let (Some(l), Some(f)) = (blocking, found.iter_mut().find(|f| f.kind == "maintenance-pass")) {
            f.note = Some(format!(
                "while {} stands GnuPG cannot take the lock and makes no pass; once it goes, the next start makes it. {}",
                l.path.display(),
                f.note.take().unwrap_or_default()
            ));
        }
    }
    let trust = trust(o, &confs, &entries, &mut found);
    let mut measured = None;
    if !o.quick {
        if let (Some(h), Some(store)) = (&weighed, stores.iter().find(|s| s.kind == "keybox" && s.exists)) {
            let m = savings::measure(h, store, &buffer, o, &mut found, progress);
            match m {
                Ok(m) => measured = Some(m),
                Err(e) => found.push(findings::unmeasured(&store.path, &e)),
            }
        }
    }
    findings::rank(&mut found);
    Ok(Report {
        home: o.home.clone(),
        gnupg_version: o.version.to_string(),
        gnupg_version_from: o.version_from.clone(),
        checked_at: o.now,
        stores,
        buffer,
        daemons,
        locks,
        health,
        trust,
        measured,
        findings: found,
    })
}

/// Every lock of the home and of keyboxd's directory, judged; a finding
/// for each that holds GnuPG up.
fn judge_locks(
    o: &Options,
    entries: &[Entry],
    db_entries: &[Entry],
    stores: &[StoreUse],
    network: bool,
    ps: &dyn Processes,
    found: &mut Vec<Finding>,
) -> Vec<Lock> {
    let host = home::host_name();
    let mut out = Vec::new();
    let mut own_of = Vec::new();
    for dir in [entries, db_entries] {
        let own: Vec<PathBuf> = dir.iter().filter(|e| e.name().starts_with(".#lk")).map(|e| e.path.clone()).collect();
        for e in dir.iter().filter(|e| e.name().ends_with(".lock")) {
            let guarded_file = e.path.with_extension("");
            let mut guarded = vec![guarded_file];
            guarded.extend(stores.iter().filter(|s| s.path.parent() == e.path.parent()).map(|s| s.path.clone()));
            let content = match home::read_head(&e.path, 256) {
                Ok((bytes, _)) => locks::parse(&bytes),
                Err(err) => {
                    found.push(findings::unreadable(&e.path, &err));
                    continue;
                }
            };
            let cx = locks::Context { host: &host, network, guarded: &guarded, own_files: &own };
            out.push(locks::judge(&e.path, &content, e.mtime, &cx, ps));
            own_of.push(own.clone());
        }
    }
    locks::chain(&mut out);
    for (lock, own) in out.iter().zip(&own_of) {
        found.push(findings::lock(lock, own, &host, o));
    }
    out
}

/// The store gpg uses weighed (else gpgsm's): the report's view and the
/// pass's result.
fn weigh(gpg: &StoreUse, gpgsm: &StoreUse, found: &mut Vec<Finding>) -> (Option<StoreHealth>, Option<Health>) {
    let Some(s) = [gpg, gpgsm].into_iter().find(|s| s.exists && s.store_kind().is_some()) else {
        found.push(findings::no_store(gpg));
        return (None, None);
    };
    let tally = IoTally::new(BufferSize::Bytes(1 << 16));
    let h = match Store::open(&s.path, &tally).and_then(|store| crate::workload::health::run(&store)) {
        Ok(h) => h,
        Err(e) => {
            found.push(findings::unreadable_store(&s.path, &e.to_string()));
            return (None, None);
        }
    };
    (Some(store_findings::health_view(&s.path, &h)), Some(h))
}

/// The most of a trust database read whole (its damage looked for).
const TRUSTDB_MAX_BYTES: u64 = 256 << 20;

/// The trust model and the trust database's schedule.
fn trust(o: &Options, confs: &Confs, entries: &[Entry], found: &mut Vec<Finding>) -> Trust {
    let path = o.home.join("trustdb.gpg");
    let mut whole: Option<trustdb::TrustDb> = None;
    let header = entries.iter().find(|e| e.path == path && e.is_file()).and_then(|_| {
        match home::read_head(&path, TRUSTDB_MAX_BYTES) {
            // The header is read even from a database too large to read whole.
            Ok((bytes, true)) => trustdb::parse_header(&bytes).ok(),
            Ok((bytes, false)) => match trustdb::read(&bytes) {
                Ok(db) => {
                    if let Some(d) = db.damage.first() {
                        found.push(findings::damaged_trustdb(&path, d.record, &d.what.to_string(), db.damage.len()));
                    }
                    let header = db.header.clone();
                    whole = Some(db);
                    Some(header)
                }
                Err(e) => {
                    found.push(findings::damaged_trustdb(&path, 0, &e.to_string(), 1));
                    None
                }
            },
            Err(e) => {
                found.push(findings::unreadable(&path, &e));
                None
            }
        }
    });
    let (model, decided_by) = match confs.gpg.last("trust-model") {
        Some((Some(m), line)) if m != "auto" => (m.to_string(), confs.gpg.cite(line)),
        _ => match &header {
            Some(h) => (h.model.to_string(), "the trust database, which trust-model auto follows".to_string()),
            None => ("pgp".to_string(), "GnuPG's default".to_string()),
        },
    };
    let auto_check_off = confs.gpg.flag("auto-check-trustdb").is_some_and(|(on, _)| !on);
    // gpg checks the database lazily, the first time a command needs
    // validity (a key listing, an edit), for these models only.
    let checks = matches!(model.as_str(), "pgp" | "classic" | "tofu" | "tofu+pgp");
    let (scheduled, mismatch) = match &header {
        Some(h) => (h.next_check != 0 && i64::from(h.next_check) <= o.now, options_differ(h, &confs.gpg, &model)),
        None => (false, None),
    };
    let check_due = checks && !auto_check_off && (scheduled || mismatch.is_some());
    let t = Trust { model, decided_by, trustdb: header, auto_check_off, check_due, options_differ: mismatch };
    if t.check_due {
        let computed = match (&whole, o.quick) {
            (Some(db), false) => what_the_check_changes(o, db, &t.model),
            _ => None,
        };
        found.push(findings::trustdb_due(&t, &path, o, computed.as_ref()));
    }
    t
}

/// What gpg's check would change, computed over the home's keybox (its
/// signatures checked in one pass, read through doctor's own tally):
/// `None` where there is no keybox or the model is not one gpg checks.
fn what_the_check_changes(o: &Options, db: &trustdb::TrustDb, model: &str) -> Option<findings::CheckChanges> {
    use crate::workload::trust_check::{self, CheckOptions};
    let model = trustdb::Model::from_option(model)?;
    let keybox = o.home.join("pubring.kbx");
    let tally = IoTally::new(BufferSize::Bytes(1 << 16));
    let store = Store::open(&keybox, &tally).ok()?;
    let started = std::time::Instant::now();
    let mut keys = Vec::new();
    let judge = crate::openpgp::Judge { version: o.version, now: o.now };
    let strategy = crate::lookup::Strategy::Index;
    let ran =
        crate::workload::sigs::run(&store, crate::openpgp::Mode::CheckSigs, strategy, judge, |k| keys.push(k)).ok()?;
    if ran.outcome.fatal.is_some() {
        return None;
    }
    let checked = trust_check::compute(&keys, db, &CheckOptions::of(db, model, o.now, store.kind())).ok()?;
    let rows = trust_check::compare(&keys, db, &checked);
    Some(findings::CheckChanges {
        user_ids: rows.len(),
        changes: rows.iter().filter(|r| r.stored.validity != r.computed.validity).count(),
        depths: checked.depths.iter().map(|d| d.line()).collect(),
        seconds: started.elapsed().as_secs_f64(),
    })
}
