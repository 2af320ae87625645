//! The findings: each problem with its evidence, the command that fixes
//! it and, where a replay measured it, the time it saves. Thresholds and
//! wording live here, in one place.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use super::layout::{Buffer, Confs, Permission, StoreUse};
use super::locks::{own_file_owner, Lock};
use super::measure::{self, Command, Plan, Replays, Variant};
use super::{changes, trustdb, Options, Step, StoreHealth, Trust, Weight};
use crate::gnupg_version::GnupgVersion;
use crate::io::{read_text, BufferSize, IoTally};
use crate::kbx::BlobType;
use crate::store::{Store, StoreError, StoreKind};
use crate::workload::health::{Health, Weighed};
use crate::x509::TrustList;

/// Every finding's `kind`, stable names for scripts (docs/doctor.md).
pub const KINDS: [&str; 21] = [
    "stale-lock",
    "live-lock",
    "foreign-lock",
    "damaged-lock",
    "unsafe-permissions",
    "second-store",
    "no-store",
    "unreadable",
    "damaged-store",
    "oversized-key",
    "bad-checksum",
    "duplicate-key",
    "flooded-key",
    "unknown-signers",
    "maintenance-pass",
    "deleted-space",
    "trustdb-check-due",
    "damaged-trustdb",
    "small-buffer",
    "keybox-vs-keyboxd",
    "unmeasured",
];

/// A key with at least this many signatures, or this many bytes, is flooded.
pub(super) const FLOODED_SIGNATURES: u64 = 1_000;
/// See [`FLOODED_SIGNATURES`].
pub(super) const FLOODED_BYTES: u64 = 1 << 20;
/// GnuPG's maintenance pass runs when its stamp is this old (seconds).
pub(super) const MAINTENANCE_AGE: i64 = 3 * 3600;
/// A buffer change is worth a finding when it saves this share of the time…
const BUFFER_SHARE: f64 = 0.10;
/// …and at least this many seconds.
const BUFFER_SECONDS: f64 = 0.05;
/// What all of `doctor`'s replays may take.
const REPLAY_BUDGET: std::time::Duration = std::time::Duration::from_secs(25);
/// A keybox smaller than this costs its maintenance pass next to nothing.
const MAINTENANCE_BYTES: u64 = 1 << 20;

/// One problem.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Its stable name (one of [`KINDS`]).
    pub kind: &'static str,
    /// One line for people.
    pub summary: String,
    /// What shows it: paths, fingerprints, sizes, pids.
    pub evidence: Value,
    /// The command that fixes it (for a POSIX shell), where one does.
    pub fix: Option<String>,
    /// What to know before running it, or what to do where no command fixes it.
    pub note: Option<String>,
    /// Seconds the fix saves the home's usual commands, as replayed.
    pub saving_seconds: Option<f64>,
}

fn finding(kind: &'static str, summary: String, evidence: Value) -> Finding {
    debug_assert!(KINDS.contains(&kind));
    Finding { kind, summary, evidence, fix: None, note: None, saving_seconds: None }
}

impl Finding {
    fn fix(mut self, fix: String) -> Self {
        self.fix = Some(fix);
        self
    }

    fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// A path as a POSIX shell reads it back: bare when it is plain, else in
/// single quotes.
pub fn sh(p: &Path) -> String {
    let s = p.to_string_lossy();
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c)) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02X}")).collect()
}

fn mib(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// A file of the home that cannot be read.
pub(super) fn unreadable(path: &Path, e: &std::io::Error) -> Finding {
    finding(
        "unreadable",
        format!("{} cannot be read: {e}", path.display()),
        json!({ "path": path, "error": e.to_string() }),
    )
}

/// The home's permissions, as gpg warns of them.
pub(super) fn permissions(p: &Permission) -> Finding {
    let f = finding(
        "unsafe-permissions",
        format!("gpg warns \"unsafe {} on homedir '{}'\" (mode {})", p.what, p.path.display(), p.mode),
        json!({ "path": p.path, "mode": p.mode, "uid": p.uid, "what": p.what }),
    );
    if p.what == "ownership" {
        f.fix(format!("chown \"$(id -u)\" {}", sh(&p.path))).note("only the home's owner, or root, can give it away")
    } else {
        f.fix(format!("chmod go-rwx {}", sh(&p.path)))
    }
}

/// A lock, as it holds GnuPG up.
pub(super) fn lock(l: &Lock, own_files: &[PathBuf], host: &str, o: &Options) -> Finding {
    let writer = l.pid.zip(l.host.clone());
    // The writer's own file is left behind with its lock.
    let leftovers: Vec<&PathBuf> = own_files
        .iter()
        .filter(|f| {
            let owner = f.file_name().and_then(|n| own_file_owner(&n.to_string_lossy()));
            owner.is_some_and(|(h, p)| writer.as_ref().is_some_and(|(wp, wh)| *wp == p && *wh == h))
        })
        .collect();
    let evidence = json!({
        "path": l.path, "pid": l.pid, "host": l.host, "this_host": host, "written": l.written,
        "alive": l.alive, "stale": l.stale, "cleared_by_gnupg": l.cleared_by_gnupg,
        "process": l.process, "holders": l.holders, "waiters": l.waiters, "holder_waits_for": l.holder_waits_for,
        "why": l.why,
        "own_files": leftovers,
    });
    let rm = || {
        let mut words = vec!["rm -f --".to_string(), sh(&l.path)];
        words.extend(leftovers.iter().map(|f| sh(f)));
        words.join(" ")
    };
    let what = lock_effect(&l.path, o.version);
    if l.pid.is_none() {
        let f = finding(
            "damaged-lock",
            format!("{} holds no pid and host: GnuPG cannot read it and {what} fail", l.path.display()),
            evidence,
        );
        return if l.stale { f.fix(rm()) } else { f.note(l.why.clone()) };
    }
    if l.stale {
        let f = finding("stale-lock", format!("{} is stale: {}", l.path.display(), l.why), evidence).fix(rm());
        return if l.cleared_by_gnupg {
            f.note("GnuPG removes it by itself at its next try; the command only does it now")
        } else {
            f.note(format!("until it goes, {what} wait for it forever"))
        };
    }
    match (&l.process, l.alive) {
        (Some(p), Some(true)) => {
            let since =
                p.started.map(|s| format!(", running since {}", crate::timefmt::rfc3339(s))).unwrap_or_default();
            finding(
                "live-lock",
                format!(
                    "{} is held by {} (pid {}{since}): {what} wait until it lets go",
                    l.path.display(),
                    p.program,
                    p.pid
                ),
                evidence,
            )
            .note(format!(
                "a live process holds it: never remove it; let it finish, or end it if it hangs (kill {})",
                p.pid
            ))
        }
        _ => finding("foreign-lock", format!("{}: {}", l.path.display(), l.why), evidence).note(format!(
            "ask host {} whether pid {} still runs; {what} wait until then",
            l.host.as_deref().unwrap_or("?"),
            l.pid.unwrap_or(0)
        )),
    }
}

/// What waits on a lock, by its file.
fn lock_effect(path: &Path, version: GnupgVersion) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match name.as_str() {
        "pubring.db.lock" => "keyboxd's clients (every gpg and gpgsm command) wait 10 s, then".to_string() + " fail",
        "trustdb.gpg.lock" => "gpg's trust-database checks (and any command that runs one)".into(),
        "pubring.kbx.lock" if version == GnupgVersion::V2_4 => "imports, deletes and gpgsm's searches".into(),
        "pubring.kbx.lock" => "imports and deletes".into(),
        _ => "GnuPG's writes of that file".into(),
    }
}

/// Stores left behind beside the one in use.
pub(super) fn second_stores(
    stores: &[StoreUse],
    entries: &[crate::io::home::Entry],
    db: &[crate::io::home::Entry],
) -> Vec<Finding> {
    let used: Vec<&Path> = stores.iter().map(|s| s.path.as_path()).collect();
    entries
        .iter()
        .chain(db)
        .filter(|e| e.is_file() && matches!(e.name().as_str(), "pubring.kbx" | "pubring.gpg" | "pubring.db"))
        .filter(|e| !used.contains(&e.path.as_path()) && e.size > 32)
        .map(|e| {
            finding(
                "second-store",
                format!(
                    "{} ({}) is not read by gpg or gpgsm here (they use {}): keys there are out of sight",
                    e.path.display(),
                    mib(e.size),
                    stores[0].path.display()
                ),
                json!({ "path": e.path, "bytes": e.size, "in_use": used }),
            )
            .note("export what it holds into the store in use, then move it away; kbxscope list shows its keys")
        })
        .collect()
}

/// No store to weigh.
pub(super) fn no_store(gpg: &StoreUse) -> Finding {
    finding(
        "no-store",
        format!("there is no store here: {} does not exist ({})", gpg.path.display(), gpg.decided_by),
        json!({ "path": gpg.path, "kind": gpg.kind }),
    )
}

/// A store that cannot be opened or read.
pub(super) fn unreadable_store(path: &Path, error: &str) -> Finding {
    finding(
        "damaged-store",
        format!("{} cannot be read: {error}", path.display()),
        json!({ "path": path, "error": error }),
    )
}

/// The report's view of a weighed store.
pub(super) fn health_view(path: &Path, h: &Health) -> StoreHealth {
    let weight = |k: &Weighed| Weight {
        fingerprint: hex(&k.fingerprint),
        name: k.name.clone(),
        blob_type: k.blob_type.name(),
        index: k.index,
        bytes: k.bytes,
        signatures: k.signatures,
        unknown_signers: k.unknown_signers,
    };
    let top = |key: fn(&Weighed) -> u64| {
        let mut v: Vec<&Weighed> = h.keys.iter().collect();
        v.sort_by_key(|k| std::cmp::Reverse(key(k)));
        v.into_iter().take(5).map(weight).collect()
    };
    StoreHealth {
        path: path.to_path_buf(),
        bytes: h.file_bytes,
        blobs: h.blobs.iter().map(|(k, v)| (*k, *v)).collect(),
        deleted_bytes: h.deleted_bytes,
        last_maintenance: h.last_maintenance,
        signatures: h.signatures,
        unknown_signers: h.unknown_signers,
        largest: top(|k| k.bytes),
        most_signatures: top(|k| k.signatures),
    }
}

/// Whether a key is flooded.
fn flooded(k: &Weighed) -> bool {
    k.blob_type == BlobType::OpenPgp && (k.signatures >= FLOODED_SIGNATURES || k.bytes >= FLOODED_BYTES)
}

/// The keys the unknown-signers finding is about: the rest, once the
/// flooded ones have theirs.
fn unknown_signers_share(h: &Health) -> (u64, u64) {
    h.keys.iter().filter(|k| !flooded(k)).fold((0, 0), |(u, s), k| (u + k.unknown_signers, s + k.signatures))
}

/// Whether the keys outside the flooded ones are mostly signed by unknown signers.
fn mostly_unknown(h: &Health) -> bool {
    let (unknown, all) = unknown_signers_share(h);
    unknown >= 100 && unknown * 2 >= all
}

/// The command gpg cleans a key with.
fn clean(gpg: &str, fpr: &str) -> String {
    format!("{gpg} --batch --edit-key {fpr} clean save")
}

/// What weighing the store found.
pub(super) fn store(h: &Health, s: &StoreUse, o: &Options, writable: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let path = &s.path;
    if let Some(e) = &h.fatal {
        out.push(finding(
            "damaged-store",
            format!("{}: {e}; the rest of the store was not read", path.display()),
            json!({ "path": path, "blob": e.index, "offset": e.offset, "error": e.to_string() }),
        ));
    }
    for (index, offset, why) in h.undecodable.iter().take(10) {
        out.push(finding(
            "damaged-store",
            format!("{}: blob {index} at byte {offset} does not decode: {why}", path.display()),
            json!({ "path": path, "blob": index, "offset": offset, "error": why }),
        ));
    }
    for (index, offset, length) in &h.too_large {
        out.push(
            finding(
                "oversized-key",
                format!(
                    "{}: blob {index} at byte {offset} is {} long, over GnuPG's 5 MiB limit: gpg skips it (\"key(s) skipped due to large size\")",
                    path.display(),
                    mib(u64::from(*length))
                ),
                json!({ "path": path, "blob": index, "offset": offset, "bytes": length }),
            )
            .note("gpg can neither list nor clean it; kbxscope dump shows it"),
        );
    }
    if !h.bad_checksums.is_empty() {
        let blobs: Vec<Value> = h.bad_checksums.iter().map(|(i, o)| json!({ "blob": i, "offset": o })).collect();
        out.push(
            finding(
                "bad-checksum",
                format!(
                    "{}: {} blob(s) whose checksum does not match, first blob {} at byte {}",
                    path.display(),
                    blobs.len(),
                    h.bad_checksums[0].0,
                    h.bad_checksums[0].1
                ),
                json!({ "path": path, "blobs": blobs }),
            )
            .note("kbxutil --stats reports them too; the keys should be imported again from a good copy"),
        );
    }
    for (fpr, blobs) in h.duplicates.iter().take(10) {
        out.push(finding(
            "duplicate-key",
            format!(
                "{}: {} is stored {} times (blobs {blobs:?}); GnuPG finds only the first",
                path.display(),
                hex(fpr),
                blobs.len()
            ),
            json!({ "path": path, "fingerprint": hex(fpr), "blobs": blobs }),
        ));
    }
    let floods: Vec<&Weighed> = h.keys.iter().filter(|k| flooded(k)).collect();
    if !floods.is_empty() {
        let keys: Vec<Value> = floods
            .iter()
            .map(|k| {
                json!({ "fingerprint": hex(&k.fingerprint), "name": k.name, "blob": k.index, "offset": k.offset,
                              "bytes": k.bytes, "signatures": k.signatures, "unknown_signers": k.unknown_signers })
            })
            .collect();
        let first = floods[0];
        let mut f = finding(
            "flooded-key",
            format!(
                "{} flooded key(s): {} ({}) has {} signatures in {}, {} by signers not in the store",
                floods.len(),
                hex(&first.fingerprint),
                first.name,
                first.signatures,
                mib(first.bytes),
                first.unknown_signers
            ),
            json!({ "path": path, "keys": keys }),
        );
        let cleanable: Vec<String> =
            floods.iter().filter(|k| k.unknown_signers > 0).map(|k| clean(&o.gpg, &hex(&k.fingerprint))).collect();
        if cleanable.is_empty() {
            f = f.note("its signatures are by keys the store holds: gpg's clean keeps them");
        } else {
            f = f.fix(cleanable.join(" && "));
        }
        out.push(f);
    }
    if mostly_unknown(h) {
        let (unknown, all) = unknown_signers_share(h);
        out.push(
            finding(
                "unknown-signers",
                format!(
                    "{unknown} of {all} signatures ({:.0}%) are by signers not in the store: gpg --check-sigs looks each up and finds nothing",
                    unknown as f64 * 100.0 / all.max(1) as f64
                ),
                json!({ "path": path, "unknown_signers": unknown, "signatures": all }),
            )
            .fix(format!(
                "{gpg} --with-colons --list-keys | awk -F: '$1==\"pub\"{{p=1}} $1==\"fpr\"&&p{{print $10; p=0}}' | while read -r k; do {gpg} --batch --edit-key \"$k\" clean save; done",
                gpg = o.gpg
            ))
            .note("clean also drops signatures that are expired, revoked or by expired keys, and user ids that are unusable"),
        );
    }
    if s.kind == "keybox" && writable {
        if let Some(stamp) = h.last_maintenance {
            let age = o.now - i64::from(stamp);
            if age >= MAINTENANCE_AGE && h.file_bytes >= MAINTENANCE_BYTES {
                out.push(maintenance(h, path, age, o));
            }
        }
    }
    let share = h.deleted_bytes as f64 / h.file_bytes.max(1) as f64;
    if h.deleted_bytes >= 1 << 20 || (share >= 0.10 && h.file_bytes >= 1 << 20) {
        out.push(
            finding(
                "deleted-space",
                format!(
                    "{} of the store ({:.0}%) are {} deleted blob(s), read past at every search",
                    mib(h.deleted_bytes),
                    share * 100.0,
                    h.deleted_blobs
                ),
                json!({ "path": path, "deleted_bytes": h.deleted_bytes, "deleted_blobs": h.deleted_blobs, "bytes": h.file_bytes }),
            )
            .note("GnuPG's maintenance pass drops them at the first start after its stamp is three hours old"),
        );
    }
    out
}

/// The maintenance pass the next start makes.
fn maintenance(h: &Health, path: &Path, age: i64, o: &Options) -> Finding {
    let drops = h.deleted_blobs > 0;
    let then = if drops {
        format!("it drops {} deleted blob(s) and renews the stamp", h.deleted_blobs)
    } else {
        "with nothing to drop it removes the copy and the stamp stays old: every start copies it again".to_string()
    };
    let root = crate::io::home::own_uid() == Some(0);
    let mut note = if root {
        "root can write any file, so nothing short of another store stops the pass for root".to_string()
    } else {
        "the pass needs to write the keybox: without write access GnuPG skips it (imports and deletes then need chmod u+w first)".to_string()
    };
    if o.version == GnupgVersion::V2_4 {
        note.push_str("; GnuPG 2.4 with keyboxd (use-keyboxd in common.conf) makes no pass at all");
    }
    let f = finding(
        "maintenance-pass",
        format!(
            "the maintenance stamp is {} old: the next gpg or gpgsm start copies all {} of the keybox; {then}",
            age_words(age),
            mib(h.file_bytes)
        ),
        json!({ "path": path, "last_maintenance": h.last_maintenance, "age_seconds": age, "bytes_copied": h.file_bytes,
                "drops_something": drops, "every_start": !drops }),
    )
    .note(note);
    if root {
        f
    } else {
        f.fix(format!("chmod a-w {}", sh(path)))
    }
}

/// An age in hours, or days when it is long.
fn age_words(seconds: i64) -> String {
    let hours = seconds as f64 / 3600.0;
    if hours < 48.0 {
        format!("{hours:.1} hours")
    } else {
        format!("{:.0} days", hours / 24.0)
    }
}

/// The trust database that cannot be read.
pub(super) fn damaged_trustdb(path: &Path, e: &trustdb::HeaderError) -> Finding {
    finding(
        "damaged-trustdb",
        format!("{}: {e}", path.display()),
        json!({ "path": path, "record": 0, "error": e.to_string() }),
    )
    .note("gpg --check-trustdb rebuilds what it can; a database gpg cannot read is best moved away and rebuilt")
}

/// The trust database's check, due.
pub(super) fn trustdb_due(t: &Trust, path: &Path, o: &Options) -> Finding {
    let why = match (&t.options_differ, &t.trustdb) {
        (Some(d), _) => format!("gpg.conf sets another web of trust than the database was built for ({d})"),
        (None, Some(h)) if h.next_check == 1 => "the owner trust changed since the last check".to_string(),
        (None, Some(h)) => format!("its next check was due at {}", crate::timefmt::rfc3339(i64::from(h.next_check))),
        (None, None) => String::new(),
    };
    finding(
        "trustdb-check-due",
        format!("the next gpg command that shows validity checks the trust database first (\"checking the trustdb\"): {why}"),
        json!({ "path": path, "model": t.model, "next_check": t.trustdb.as_ref().map(|h| h.next_check),
                "options_differ": t.options_differ, "now": o.now, "cost_seconds": null,
                "cost": "not measured: kbxscope does not replay the trust database yet" }),
    )
    .fix(format!("{} --check-trustdb", o.gpg))
    .note("runs the check now, when it suits you, instead of inside a command that must be quick")
}

/// The replays failed.
pub(super) fn unmeasured(path: &Path, e: &StoreError) -> Finding {
    finding(
        "unmeasured",
        format!("the fixes were not measured: replaying on a copy of {} failed: {e}", path.display()),
        json!({ "path": path, "error": e.to_string() }),
    )
}

/// Replay the home's commands on copies of the keybox `s` as it is and
/// after each change the findings propose; put each saving on its
/// finding, and add a buffer finding where a larger buffer saves enough.
///
/// # Errors
/// A copy cannot be made or a replay cannot read it.
pub(super) fn measure(
    h: &Health,
    s: &StoreUse,
    _confs: &Confs,
    buffer: &Buffer,
    o: &Options,
    found: &mut Vec<Finding>,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<Replays, StoreError> {
    let tally = IoTally::new(BufferSize::Bytes(1 << 16));
    let keybox = Store::open(&s.path, &tally)?.read_keybox()?;
    let now = u32::try_from(o.now.max(0)).unwrap_or(u32::MAX);
    let current = BufferSize::Bytes(buffer.kib as usize * 1024);
    let variant = |kind, change: &str, keybox, buffer, commands: &[Command]| Variant {
        kind,
        change: change.into(),
        keybox,
        buffer,
        commands: commands.to_vec(),
        store: StoreKind::Keybox,
    };
    let mut variants = vec![variant("as-is", "as it is", keybox.clone(), current, &[])];
    let has = |kind: &str| found.iter().any(|f| f.kind == kind);
    if has("maintenance-pass") {
        if let Some(k) = changes::stamp_renewed(&keybox, now) {
            variants.push(variant("maintenance-pass", "no maintenance pass", k, current, &[Command::GpgList]));
        }
    }
    if has("flooded-key") {
        let set: HashSet<Vec<u8>> = h.keys.iter().filter(|k| flooded(k)).map(|k| k.fingerprint.clone()).collect();
        let (k, removed) = changes::cleaned(&keybox, Some(&set));
        if removed > 0 {
            let commands = [Command::GpgList, Command::GpgCheckSigs];
            variants.push(variant("flooded-key", "the flooded keys cleaned", k, current, &commands));
        }
    }
    if has("unknown-signers") {
        let (k, removed) = changes::cleaned(&keybox, None);
        if removed > 0 {
            let commands = [Command::GpgList, Command::GpgCheckSigs];
            variants.push(variant("unknown-signers", "every key cleaned", k, current, &commands));
        }
    }
    if has("deleted-space") && !has("maintenance-pass") {
        let k = changes::compacted(&keybox, now);
        variants.push(variant("deleted-space", "the deleted blobs dropped", k, current, &Command::ALL));
    }
    if o.version == GnupgVersion::V2_4 && buffer.kib < 512 {
        let larger = BufferSize::Bytes(512 * 1024);
        variants.push(variant("small-buffer", "a 512 KiB buffer", keybox.clone(), larger, &Command::ALL));
    }
    if o.version == GnupgVersion::V2_4 {
        // The same keys in keyboxd's database (as `convert` writes it).
        let created = crate::timefmt::rfc3339(i64::from(h.created.unwrap_or(now))).replace('T', " ");
        if let Ok(db) = crate::keyboxd::write::database(&keybox, created.trim_end_matches('Z')) {
            if db.skipped.is_empty() {
                let mut v = variant(
                    "keyboxd",
                    "keyboxd instead of the keybox",
                    db.bytes,
                    current,
                    &[Command::GpgsmValidate, Command::GpgCheckSigs],
                );
                v.store = StoreKind::Keyboxd;
                variants.push(v);
            }
        }
    }
    drop(keybox);
    let trust = s
        .path
        .parent()
        .map(|home| home.join("trustlist.txt"))
        .and_then(|p| read_text(&p, 1 << 20).ok())
        .map_or_else(|| TrustList::read("", None), |t| TrustList::read(&t, None));
    let plan = Plan {
        gpg: h.keys.iter().any(|k| k.blob_type == BlobType::OpenPgp),
        gpgsm: h.keys.iter().any(|k| k.blob_type == BlobType::X509),
        trust: &trust,
        version: o.version,
        now: o.now,
        rounds: 3,
        budget: REPLAY_BUDGET,
        signers: h.distinct_signers,
        bytes: h.file_bytes,
    };
    if variants.len() == 1 {
        return Ok(Replays::default());
    }
    let replays = measure::measure(&variants, &plan, &mut |what, done, total| progress(Step { what, done, total }))?;
    let saving = |kind: &str| {
        let per: Vec<f64> = replays.measured.iter().filter(|m| m.kind == kind).map(|m| m.saving_seconds).collect();
        (!per.is_empty()).then(|| per.iter().sum::<f64>())
    };
    let small = replays.measured.iter().filter(|m| m.kind == "small-buffer");
    let (before, events_before, events_after) =
        small.fold((0.0, 0, 0), |(t, b, a), m| (t + m.before_seconds, b + m.events_before, a + m.events_after));
    if let Some(saved) = saving("small-buffer").filter(|x| *x >= BUFFER_SECONDS && *x >= BUFFER_SHARE * before) {
        let conf = s.path.parent().map(|h| h.join("gpg.conf")).unwrap_or_default();
        let mut f = finding(
            "small-buffer",
            format!(
                "GnuPG reads the keybox through {} KiB ({}); through 512 KiB the same commands make {events_after} instead of {events_before} file events",
                buffer.kib, buffer.decided_by
            ),
            json!({ "path": s.path, "buffer_kib": buffer.kib, "decided_by": buffer.decided_by,
                    "events_before": events_before, "events_after": events_after }),
        )
        .fix(format!("echo 'kbx-buffer-size 512' >> {}", sh(&conf)));
        f.saving_seconds = Some(saved);
        found.push(f);
    }
    let keyboxd = replays.measured.iter().filter(|m| m.kind == "keyboxd");
    let before: f64 = keyboxd.map(|m| m.before_seconds).sum();
    if let Some(saved) = saving("keyboxd").filter(|x| *x >= BUFFER_SECONDS && *x >= BUFFER_SHARE * before) {
        let mut f = finding(
            "keybox-vs-keyboxd",
            format!(
                "the same keys in keyboxd's database (GnuPG 2.4's other store) make the commands replayed {saved:.2} s faster ({before:.2} s as they are)"
            ),
            json!({ "path": s.path, "before_seconds": before, "saving_seconds": saved }),
        )
        .fix(to_keyboxd(&o.gpg, &s.path))
        .note("exports the keys (with --export-options backup) and certificates, turns keyboxd on in common.conf, imports them through keyboxd, and keeps the keybox as pubring.kbx.before-keyboxd");
        f.saving_seconds = Some(saved);
        found.push(f);
    }
    for f in found.iter_mut().filter(|f| !matches!(f.kind, "small-buffer" | "keybox-vs-keyboxd")) {
        if let Some(x) = saving(f.kind) {
            f.saving_seconds = Some(x);
        }
    }
    Ok(replays)
}

/// The commands that move a home from its keybox to keyboxd (GnuPG 2.4):
/// every key exported with what a backup keeps, every certificate, then
/// `use-keyboxd` in common.conf and both imported through keyboxd; the
/// keybox is kept aside. `gpg` is how the fixes call gpg (with the
/// home's `--homedir`, where it is not the default).
fn to_keyboxd(gpg: &str, keybox: &Path) -> String {
    let home = keybox.parent().unwrap_or(Path::new("."));
    let gpgsm = gpg.replacen("gpg", "gpgsm", 1);
    let file = |name: &str| sh(&home.join(name));
    format!(
        "{gpg} --batch --export --export-options backup --armor > {keys} && {gpgsm} --batch --export --armor > {certs} && echo use-keyboxd >> {common} && {gpg} --batch --import --import-options restore {keys} && {gpgsm} --batch --import {certs} && mv {kbx} {kept}",
        keys = file("keybox-keys.asc"),
        certs = file("keybox-certs.pem"),
        common = file("common.conf"),
        kbx = sh(keybox),
        kept = file("pubring.kbx.before-keyboxd"),
    )
}

/// The order of a report: what keeps GnuPG stuck first, then the measured
/// by the time they save, then the rest.
pub(super) fn rank(found: &mut [Finding]) {
    let stuck =
        |f: &Finding| matches!(f.kind, "stale-lock" | "live-lock" | "foreign-lock" | "damaged-lock" | "damaged-store");
    found.sort_by(|a, b| {
        stuck(b)
            .cmp(&stuck(a))
            .then_with(|| b.saving_seconds.unwrap_or(f64::MIN).total_cmp(&a.saving_seconds.unwrap_or(f64::MIN)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_for_the_shell_only_when_needed() {
        assert_eq!(sh(Path::new("/home/a/.gnupg/pubring.kbx.lock")), "/home/a/.gnupg/pubring.kbx.lock");
        assert_eq!(sh(Path::new("/tmp/my home/it's")), r"'/tmp/my home/it'\''s'");
    }

    #[test]
    fn locks_rank_before_measured_savings() {
        let mut v = vec![
            finding("flooded-key", String::new(), Value::Null),
            finding("maintenance-pass", String::new(), Value::Null),
            finding("stale-lock", String::new(), Value::Null),
        ];
        v[1].saving_seconds = Some(2.0);
        v[0].saving_seconds = Some(5.0);
        rank(&mut v);
        assert_eq!(v.iter().map(|f| f.kind).collect::<Vec<_>>(), ["stale-lock", "flooded-key", "maintenance-pass"]);
    }
}
