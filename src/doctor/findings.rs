//! The findings: each problem with its evidence, the command that fixes
//! it and, where a replay measured it, the time it saves. Thresholds and
//! wording live here, in one place.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use super::layout::{Permission, StoreUse};
use super::locks::{own_file_owner, Lock};
use super::{Options, Trust};
use crate::gnupg_version::GnupgVersion;
use crate::store::StoreError;

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
/// A keybox smaller than this costs its maintenance pass next to nothing.
pub(super) const MAINTENANCE_BYTES: u64 = 1 << 20;

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

pub(super) fn finding(kind: &'static str, summary: String, evidence: Value) -> Finding {
    debug_assert!(KINDS.contains(&kind));
    Finding { kind, summary, evidence, fix: None, note: None, saving_seconds: None }
}

impl Finding {
    pub(super) fn fix(mut self, fix: String) -> Self {
        self.fix = Some(fix);
        self
    }

    pub(super) fn note(mut self, note: impl Into<String>) -> Self {
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

/// A size for people: KiB below a MiB, else MiB.
pub fn mib(bytes: u64) -> String {
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

/// The trust database damaged: the first damage (of `count`), at `record`.
pub(super) fn damaged_trustdb(path: &Path, record: u32, what: &str, count: usize) -> Finding {
    let more =
        if count > 1 { format!(" (and {} more: kbxscope trustdb lists them)", count - 1) } else { String::new() };
    finding(
        "damaged-trustdb",
        format!("{}: record {record}: {what}{more}", path.display()),
        json!({ "path": path, "record": record, "error": what, "damage": count }),
    )
    .note("gpg --check-trustdb rebuilds what it can; a database gpg cannot read is best moved away and rebuilt")
}

/// What the due check would change, computed.
#[derive(Debug, Clone)]
pub(super) struct CheckChanges {
    /// User ids of the keybox.
    pub user_ids: usize,
    /// Those whose validity the check changes.
    pub changes: usize,
    /// gpg's `depth:` lines of the check.
    pub depths: Vec<String>,
    /// How long kbxscope took to compute it (not gpg's cost).
    pub seconds: f64,
}

/// The trust database's check, due; `computed`: what it would change.
pub(super) fn trustdb_due(t: &Trust, path: &Path, o: &Options, computed: Option<&CheckChanges>) -> Finding {
    let why = match (&t.options_differ, &t.trustdb) {
        (Some(d), _) => format!("gpg.conf sets another web of trust than the database was built for ({d})"),
        (None, Some(h)) if h.next_check == 1 => "the owner trust changed since the last check".to_string(),
        (None, Some(h)) => format!("its next check was due at {}", crate::timefmt::rfc3339(i64::from(h.next_check))),
        (None, None) => String::new(),
    };
    let changes = computed.map_or(String::new(), |c| {
        format!(
            "; it will change the validity of {} of the keybox's {} user ids (kbxscope trustdb --check lists them)",
            c.changes, c.user_ids
        )
    });
    let check = computed.map(|c| {
        json!({ "user_ids": c.user_ids, "changes": c.changes, "depths": c.depths, "computed_in_seconds": c.seconds })
    });
    finding(
        "trustdb-check-due",
        format!("the next gpg command that shows validity checks the trust database first (\"checking the trustdb\"): {why}{changes}"),
        json!({ "path": path, "model": t.model, "next_check": t.trustdb.as_ref().map(|h| h.next_check),
                "options_differ": t.options_differ, "now": o.now, "cost_seconds": null,
                "cost": "not measured: kbxscope computes the check but does not replay its I/O yet",
                "check": check }),
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
