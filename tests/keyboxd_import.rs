//! `import --onto keyboxd` and `--onto DATABASE`: gpg 2.4's import with
//! keyboxd replayed on a private copy of its database, held against what
//! a real keyboxd 2.4.7 did for the same keys
//! (`tests/fixtures/keyboxd/debian-subset.import-events.txt`, made by
//! `benches/keyboxd-import-fixture.sh` with strace on keyboxd; with
//! bulk import `debian-subset.bulk-import-events.txt`): per file
//! and operation the same calls, the same keyblobs, gpg's summary; the
//! database named with `--onto` only read.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{fixture, io_summary, run, stderr};

/// The recorded keyboxd run: its counts per (file, kbxscope's operation),
/// the keyblobs it stored (ubid, length, sha256) and gpg's summary line.
struct Recorded {
    counts: BTreeMap<(String, String), u64>,
    keyblobs: Vec<(String, u64, String)>,
    said: String,
}

fn recorded(name: &str) -> Recorded {
    let text = std::fs::read_to_string(fixture(&format!("keyboxd/{name}"))).unwrap();
    let mut r = Recorded { counts: BTreeMap::new(), keyblobs: Vec::new(), said: String::new() };
    for line in text.lines() {
        if let Some(said) = line.split("gpg said: ").nth(1).or_else(|| line.split("gpgsm said: ").nth(1)) {
            r.said = said.to_string();
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["#", ..] => {}
            ["ubid", ubid, len, digest] => {
                r.keyblobs.push((ubid.to_string(), len.parse().unwrap(), digest.to_string()))
            }
            [n, call, file] => {
                let op = match *call {
                    "openat" => "open",
                    "pread64" | "read" => "read",
                    "pwrite64" | "write" => "write",
                    "fdatasync" | "fsync" => "sync",
                    "fcntl" => "lock",
                    // Metadata: SQLite's fchown of a new journal (run as root)
                    // and the directory keyboxd makes are counted as stat.
                    "fstat" | "newfstatat" | "stat" | "fchown" | "chmod" | "mkdir" => "stat",
                    other => other,
                };
                // strace names a link by its first path: the dotlock's own file.
                *r.counts.entry((file.to_string(), op.to_string())).or_default() += n.parse::<u64>().unwrap();
            }
            _ => panic!("unexpected fixture line: {line}"),
        }
    }
    r
}

/// kbxscope's counts per (file named as in the fixture, operation), from
/// an `--io-summary=json` whose store is `db`.
fn ours(summary: &serde_json::Value, db: &Path) -> BTreeMap<(String, String), u64> {
    let dir = db.parent().unwrap().to_str().unwrap();
    let mut out = BTreeMap::new();
    for f in summary["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        let name = if path == dir {
            ".".to_string()
        } else if let Some(n) = path.strip_prefix(dir).and_then(|p| p.strip_prefix(std::path::MAIN_SEPARATOR)) {
            if n.starts_with(".#lk") {
                ".#lk*".to_string()
            } else {
                n.to_string()
            }
        } else {
            continue;
        };
        for (op, n) in f["events"].as_object().unwrap() {
            let n = n.as_u64().unwrap();
            if op == "total" || n == 0 {
                continue;
            }
            // The dotlock's link into place is counted on the lock file;
            // strace names it by the dotlock's own file.
            let file = if name == "pubring.db.lock" && op == "link" { ".#lk*".to_string() } else { name.clone() };
            *out.entry((file, op.clone())).or_default() += n;
        }
    }
    out
}

/// gpg 2.4's import of the Debian subset's 24 keys into a new keyboxd
/// database: per file and operation the replay's calls equal keyboxd's
/// (strace's counts on the real keyboxd) within 1%, but for what only the
/// real run has (keyboxd makes `public-keys.d`: a `mkdir`, a `chmod` and a
/// `stat` the replay's private directory does not need; keyboxd is killed
/// with its database open, the replay closes it: a close and three stats);
/// the database holds the
/// same keyblobs, and the summary is gpg's.
fn import_into_keyboxd_makes_keyboxds_calls() {
    same_as_keyboxd("debian-subset.import-events.txt", &[], Start::Empty);
}

/// The same keys imported a second time, onto the database of the first
/// import: every key unchanged, gpg's lookups of the signers, and its
/// lookup of a key's user id only when no lookup found the key before
/// (`debian-subset.again-import-events.txt`).
fn import_again_makes_keyboxds_calls() {
    same_as_keyboxd("debian-subset.again-import-events.txt", &[], Start::Again);
}

/// A refresh: the keys onto a database that holds them with their
/// signatures made before 2016 only (gpg 2.2's `--import-filter
/// drop-sig`, exported, imported by the replay): 964 new signatures, each
/// key updated in its transaction, the freed pages zeroed as Debian's
/// SQLite does (`debian-subset.refresh-import-events.txt`).
fn refresh_in_keyboxd_makes_keyboxds_calls() {
    same_as_keyboxd("debian-subset.refresh-import-events.txt", &[], Start::Stale);
}

/// gpg 2.4's `--batch --yes --delete-keys` of three keys and a fingerprint
/// not there, with keyboxd, replayed by `delete --onto DATABASE`: the same
/// calls (each key a search, the secret-key search on gpg's other
/// connection, one transaction), the same keyblobs left, the same words
/// for the missing key and a failure (`debian-subset.delete-events.txt`).
fn delete_from_keyboxd_makes_keyboxds_calls() {
    same_as_keyboxd("debian-subset.delete-events.txt", &[], Start::Again);
}

/// gpgsm 2.4's import of the mixed fixture's 24 certificates into a new
/// keyboxd database, replayed by `import --onto keyboxd`: per file and
/// operation keyboxd's calls (its issuer lookups, a search and a
/// transaction per certificate), the same certificates stored, gpgsm's
/// summary (`gnupg-mixed.certs-import-events.txt`).
fn certificates_into_keyboxd_make_keyboxds_calls() {
    same_as_keyboxd("gnupg-mixed.certs-import-events.txt", &[], Start::Empty);
}

/// gpgsm 2.4's `--batch --delete-keys` of two certificates and a
/// fingerprint not there between them, with keyboxd, replayed by `delete
/// --gpgsm --onto DATABASE`: gpgsm deletes the last one and stops at the
/// one it cannot find; the same calls, the same certificates left, the
/// same words and a failure (`gnupg-mixed.certs-delete-events.txt`).
fn certificates_deleted_from_keyboxd_make_keyboxds_calls() {
    same_as_keyboxd("gnupg-mixed.certs-delete-events.txt", &[], Start::Again);
}

/// `sweep --workload import:CERTS --versus-keyboxd`: the database's rows
/// are gpgsm's import through keyboxd, one per page-cache size (gpgsm has
/// no bulk import), each what a single `import --onto DATABASE CERTS`
/// counts; the verdict is printed and nothing is left behind.
fn certificates_sweep_versus_keyboxd() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.kbx");
    std::fs::copy(fixture("gnupg-deleted.kbx"), &store).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (certs, json) = (fixture("gnupg-mixed.certs.pem"), dir.path().join("sweep.json"));
    let workload = format!("import:{}", certs.display());
    let o = crate::import::sweep_versus_keyboxd(&store, &workload, &tmp, &json);
    let out = crate::common::stdout(&o);
    assert!(out.contains("keybox or keyboxd?") && !out.contains("bulk import"), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = v["versus"]["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let db = dir.path().join("store.db");
    assert!(run(["convert", store.to_str().unwrap(), db.to_str().unwrap()]).status.success());
    let single = crate::common::bin()
        .env("TMPDIR", &tmp)
        .args(["--io-summary=json", "import", "--onto"])
        .args([&db, &certs])
        .output()
        .unwrap();
    assert!(single.status.success(), "{}", stderr(&single));
    assert!(stderr(&single).contains("imported: 23"), "{}", stderr(&single));
    let s = io_summary(&single);
    let all = rows[0]["events"]["total"].as_u64().unwrap() + rows[0]["other_events"].as_u64().unwrap_or(0);
    assert_eq!(Some(all), s["events"]["total"].as_u64(), "every event");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "nothing left");
}

/// The same with gpg's `--import-options bulk-import`: one transaction
/// for all the keys (keyboxd's start keeps its own), held against keyboxd
/// run so (`debian-subset.bulk-import-events.txt`).
fn bulk_import_makes_keyboxds_calls() {
    same_as_keyboxd("debian-subset.bulk-import-events.txt", &["--bulk-import"], Start::Empty);
}

/// The database an import starts from.
enum Start {
    /// A new one (`--onto keyboxd`).
    Empty,
    /// The replay's import of the same keys.
    Again,
    /// The replay's import of the keys with their signatures made before
    /// 2016 only.
    Stale,
}

/// The database of `keys` as the replay imports them (checked against
/// keyboxd by [`import_into_keyboxd_makes_keyboxds_calls`]), at `db`.
fn imported(keys: &Path, db: &Path) {
    let o = run(["import", "--onto", "keyboxd", "--out", db.to_str().unwrap(), keys.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The replay of the Debian subset's import with `extra` options from
/// `start`, held against the fixture `name` (see
/// [`import_into_keyboxd_makes_keyboxds_calls`]).
fn same_as_keyboxd(name: &str, extra: &[&str], start: Start) {
    let dir = tempfile::tempdir().unwrap();
    // gpgsm's fixtures import the mixed fixture's certificates, gpg's the
    // Debian subset's keys.
    let gpgsm = name.starts_with("gnupg-mixed.certs");
    let keys = match gpgsm {
        true => fixture("gnupg-mixed.certs.pem"),
        false => crate::import::export_subset(dir.path(), 24),
    };
    let onto = match start {
        Start::Empty => "keyboxd".to_string(),
        Start::Again | Start::Stale => {
            let first = match start {
                Start::Stale => crate::import::stale_keys(dir.path(), &keys),
                _ => keys.clone(),
            };
            // Named as keyboxd names it: the copy keeps the name, and the
            // journal's name follows.
            let db = dir.path().join("first/pubring.db");
            std::fs::create_dir(db.parent().unwrap()).unwrap();
            imported(&first, &db);
            db.to_str().unwrap().to_string()
        }
    };
    let made = dir.path().join("made.db");
    let r = recorded(name);
    // A delete's fingerprints: the fixture's `gpg said: delete F…: …`.
    let deleting = r.said.strip_prefix("delete ").map(|d| d.split(':').next().unwrap().to_string());
    let mut args = vec!["--io-summary=json"];
    match &deleting {
        Some(fprs) => {
            args.extend(["delete", "--onto", &onto, "--out", made.to_str().unwrap()]);
            if gpgsm {
                args.push("--gpgsm");
            }
            args.extend(fprs.split_whitespace());
        }
        None => {
            args.extend(["import", "--onto", &onto, "--out", made.to_str().unwrap()]);
            args.extend(extra);
            args.push(keys.to_str().unwrap());
        }
    }
    let before = std::fs::read(&onto).ok();
    let o = run(args);
    assert_eq!(std::fs::read(&onto).ok(), before, "the database named is only read");
    // A delete of a key not there fails, as gpg's and gpgsm's do.
    let failed = deleting.is_some() && r.said.contains(" failed");
    assert_eq!(o.status.success(), !failed, "{}", stderr(&o));
    let summary = io_summary(&o);
    let store = summary["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .find(|p| Path::new(p).file_name().is_some_and(|n| n == "pubring.db"))
        .expect("the database's row")
        .to_string();
    let mut got = ours(&summary, Path::new(&store));
    let mut want = r.counts.clone();
    // Only the real run: keyboxd's look at public-keys.d (a stat and a
    // chmod; a mkdir and one more stat when it makes it). Only the replay:
    // the database's close (keyboxd is killed with it open), and the three
    // stats SQLite makes as it closes (strace shows them between the last
    // unlock and the close).
    if cfg!(windows) {
        // SQLite's win32 VFS makes other calls than the unix VFS keyboxd
        // ran on (LockFileEx for fcntl, no directory syncs, …): what the
        // pager decides — each file's reads and writes, the journal's opens
        // and deletions — is held against keyboxd's.
        let pagers = |(file, op): &(String, String)| match file.as_str() {
            "pubring.db" => matches!(op.as_str(), "read" | "write"),
            "pubring.db-journal" => matches!(op.as_str(), "read" | "write" | "open" | "unlink"),
            _ => false,
        };
        want.retain(|k, _| pagers(k));
        got.retain(|k, _| pagers(k));
    } else {
        let made_dir = matches!(start, Start::Empty);
        *want.get_mut(&(".".into(), "stat".into())).unwrap() -= if made_dir { 3 } else { 2 };
        *got.get_mut(&("pubring.db".into(), "close".into())).unwrap() -= 1;
        *got.get_mut(&("pubring.db".into(), "stat".into())).unwrap() -= 3;
    }
    got.retain(|_, n| *n > 0);
    for (key, w) in &want {
        let g = got.get(key).copied().unwrap_or(0);
        let off = (g as f64 - *w as f64).abs() / *w as f64;
        assert!(off <= 0.01, "{key:?}: keyboxd {w}, replay {g}\nkeyboxd {want:?}\nreplay {got:?}");
    }
    for key in got.keys() {
        assert!(want.contains_key(key), "{key:?}: the replay made calls keyboxd did not: {got:?}");
    }
    // The same keyblobs, in the same order.
    let conn = rusqlite::Connection::open_with_flags(&made, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = conn.prepare("SELECT hex(ubid), keyblob FROM pubkey ORDER BY rowid").unwrap();
    let blobs: Vec<(String, u64, String)> = stmt
        .query_map([], |row| {
            let blob: Vec<u8> = row.get(1)?;
            use sha2::Digest;
            Ok((
                row.get(0)?,
                blob.len() as u64,
                sha2::Sha256::digest(&blob).iter().map(|b| format!("{b:02x}")).collect(),
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(blobs, r.keyblobs, "the keyblobs keyboxd stored");
    if deleting.is_some() {
        // gpg's or gpgsm's words for the key not there.
        for said in r.said.split(';').filter(|l| l.contains("not found:")) {
            let said = said.split_once("gpgsm: ").or_else(|| said.split_once("gpg: ")).unwrap().1;
            let line = format!("kbxscope: {said}");
            assert!(stderr(&o).lines().any(|l| l == line), "{line}\n{}", stderr(&o));
        }
        return;
    }
    // gpg's statistics.
    let said: Vec<String> =
        r.said.split(';').filter(|s| !s.is_empty()).map(|s| s.split_once(": ").unwrap().1.to_string()).collect();
    let printed: Vec<String> = stderr(&o)
        .lines()
        .filter_map(|l| l.strip_prefix("kbxscope: "))
        .filter(|l| {
            let l = l.trim_start();
            l.to_lowercase().starts_with("total number processed")
                || ["imported:", "unchanged:", "not imported:", "new signatures:", "new user IDs:", "new subkeys:"]
                    .iter()
                    .any(|p| l.starts_with(p))
        })
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(printed, said);
}

/// `--onto DATABASE` (and a home whose `common.conf` says `use-keyboxd`)
/// starts from a private copy of the database: the keys it holds are
/// found (not changed: gpg's "unchanged"), new ones imported, and the
/// directory of the database keeps its files, bytes and times.
fn import_onto_a_database_reads_it_only() {
    let dir = tempfile::tempdir().unwrap();
    let keys = crate::import::export_subset(dir.path(), 3);
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("public-keys.d")).unwrap();
    std::fs::write(home.join("common.conf"), "use-keyboxd\n").unwrap();
    let made = dir.path().join("first.db");
    let o = run(["import", "--onto", "keyboxd", "--out", made.to_str().unwrap(), keys.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::copy(&made, home.join("public-keys.d/pubring.db")).unwrap();
    let before = crate::keyboxd::snapshot(&home.join("public-keys.d"));
    for onto in [home.clone(), home.join("public-keys.d/pubring.db")] {
        let o = run(["import", "--json", "--onto", onto.to_str().unwrap(), keys.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", onto.display(), stderr(&o));
        let out = crate::common::stdout(&o);
        let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(last["summary"]["processed"], 3, "{out}");
        assert_eq!(last["summary"]["unchanged"], 3, "{out}");
        assert_eq!(crate::keyboxd::snapshot(&home.join("public-keys.d")), before, "{}", onto.display());
    }
}

/// What the keyboxd replay does not take gets one line and exit 1: GnuPG
/// 2.2 has no keyboxd (for import and delete alike), and bulk import is
/// keyboxd's.
fn keyboxd_refusals_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let keys = crate::import::export_subset(dir.path(), 1);
    let o = run(["--gnupg-version", "2.2", "import", "--onto", "keyboxd", keys.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("keyboxd came with GnuPG 2.3"), "{}", stderr(&o));
    let db = fixture("keyboxd/gnupg-mixed.db");
    let zero = "0000000000000000000000000000000000000000";
    let o = run(["--gnupg-version", "2.2", "delete", "--onto", db.to_str().unwrap(), zero]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("keyboxd came with GnuPG 2.3"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    let o = run(["import", "--bulk-import", keys.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--bulk-import is keyboxd's"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// A file system that fills up under keyboxd's writes (a 1 MiB tmpfs as
/// `TMPDIR`, 4.6 MB of keys): one line naming the database and what is
/// wrong, exit 1, nothing left.
fn a_full_disk_during_a_keyboxd_import_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let keys = crate::import::export_subset(dir.path(), 24);
    let args = ["import", "--onto", "keyboxd"];
    let test = "keyboxd_import::a_full_disk";
    let Some((o, left)) = crate::import::on_a_full_disk(test, dir.path(), &args, &keys) else { return };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| !l.starts_with("kbxscope: key ")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains("pubring.db") && errors[0].contains("disk is full"), "{err}");
    assert_eq!(left, 0, "left on the full file system");
}

/// Ctrl-C and SIGTERM while keyboxd's replay writes its private database:
/// gpg's exit codes for them, and the private directory removed.
fn signals_remove_the_private_database() {
    let dir = tempfile::tempdir().unwrap();
    let keys = crate::import::export_subset(dir.path(), 24);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let mut run = crate::common::bin();
        run.args(["import", "--onto", "keyboxd"]).arg(&keys);
        // Signalled once the private directory holds the database.
        let status = crate::import::signalled_when(run, &tmp, signal, |name| name == "pubring.db");
        assert_eq!(status.code(), Some(code), "{signal}");
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "{signal}: the private directory is left");
    }
}

/// keyboxd's database lock: while another live process holds
/// `pubring.db.lock`, the replay's keyboxd waits for it at its start (as
/// keyboxd's `dotlock_take` does, 10 s at most), then imports; the wait is
/// counted and timed on the lock file. A running keyboxd holds its lock
/// for as long as it runs (gpg would use that keyboxd): then the replay
/// says so in one line and copies the database without waiting. The
/// database and its lock file are only read.
fn a_held_database_lock_is_waited_for() {
    use crate::import::{when_waiting, Holder};
    let dir = tempfile::tempdir().unwrap();
    let keys = crate::import::export_subset(dir.path(), 1);
    let db = dir.path().join("pubring.db");
    std::fs::copy(fixture("keyboxd/gnupg-mixed.db"), &db).unwrap();
    let lock = dir.path().join("pubring.db.lock");
    let holder = Holder::of(&lock, Path::new("sleep"));
    let pid = holder.child.id();
    let mut cmd = crate::common::bin();
    cmd.args(["--io-summary=json", "import", "--onto", db.to_str().unwrap(), keys.to_str().unwrap()]);
    let (err, status) = when_waiting(cmd, &format!("keyboxd waiting for lock (held by {pid})"), || holder.release());
    assert!(status.success(), "{err}");
    let summary = crate::common::io_summary_in(&err);
    assert_eq!(summary["lock_waits"]["count"], 1, "{summary}");
    let row = summary["files"].as_array().unwrap().iter().find(|f| f["path"] == lock.to_str().unwrap()).unwrap();
    assert_eq!(row["lock_waits"]["count"], 1, "{row}");
    assert!(row["lock_waits"]["time_ns"].as_u64().unwrap() > 0);
    drop(holder);

    // A holder named keyboxd: no wait, one line, the import done.
    let sleep = crate::common::find_tool("sleep").unwrap();
    let keyboxd = dir.path().join("keyboxd");
    std::fs::copy(sleep, &keyboxd).unwrap();
    let holder = Holder::of(&lock, &keyboxd);
    let o = crate::common::bin()
        .args(["--io-summary=json", "import", "--onto", db.to_str().unwrap(), keys.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let said = format!("keyboxd ({}) holds '{}'", holder.child.id(), db.display());
    assert_eq!(err.lines().filter(|l| l.contains(&said)).count(), 1, "{err}");
    assert!(!err.contains("waiting for lock"), "{err}");
    assert!(crate::common::io_summary_in(&err).get("lock_waits").is_none(), "{err}");
}

/// `record` watches keyboxd's lock file (`pubring.db.lock`) and counts a
/// wait for it as a lock wait of its own. keyboxd takes that lock with
/// GnuPG's dotlock, as gpg does a keybox's; keyboxd itself is not on this
/// machine's GnuPG 2.2, so the waiter here is gpg importing into a keybox
/// named as keyboxd's database, whose lock another process holds.
fn record_counts_a_wait_for_keyboxds_lock() {
    use crate::import::{when_waiting, Holder};
    let dir = tempfile::tempdir().unwrap();
    let keys = crate::import::export_subset(dir.path(), 1);
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let db = home.join("pubring.db");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &db).unwrap();
    let lock = home.join("pubring.db.lock");
    let holder = Holder::of(&lock, Path::new("sleep"));
    let pid = holder.child.id();
    let mut cmd = crate::common::bin();
    cmd.args(["--io-summary=json", "record", "--", "gpg", "--homedir"]).arg(&home);
    cmd.args(["--batch", "--no-default-keyring", "--keyring"]).arg(&db).arg("--import").arg(&keys);
    let (err, status) = when_waiting(cmd, &format!("gpg: waiting for lock (held by {pid})"), || holder.release());
    crate::common::stop_gnupg_daemons(&home);
    assert!(status.success(), "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(err.lines().find(|l| l.contains("\"processes\"")).unwrap()).unwrap();
    let gpg = crate::import::the_waiting_gpg(&summary);
    let row = gpg["files"].as_array().unwrap().iter().find(|f| f["path"] == lock.to_str().unwrap()).unwrap();
    assert_eq!(row["lock_waits"]["count"], 1, "{row}");
    assert!(row["lock_waits"]["time_ns"].as_u64().unwrap() > 0);
}

crate::tests![
    import_into_keyboxd_makes_keyboxds_calls needs ["gpg"],
    bulk_import_makes_keyboxds_calls needs ["gpg"],
    import_again_makes_keyboxds_calls needs ["gpg"],
    refresh_in_keyboxd_makes_keyboxds_calls needs ["gpg"],
    delete_from_keyboxd_makes_keyboxds_calls needs ["gpg"],
    certificates_into_keyboxd_make_keyboxds_calls,
    certificates_deleted_from_keyboxd_make_keyboxds_calls,
    certificates_sweep_versus_keyboxd,
    a_full_disk_during_a_keyboxd_import_is_one_line needs ["gpg", "mount"],
    signals_remove_the_private_database needs ["gpg"],
    import_onto_a_database_reads_it_only needs ["gpg"],
    keyboxd_refusals_are_one_line needs ["gpg"],
    a_held_database_lock_is_waited_for needs ["gpg", "sleep"],
    record_counts_a_wait_for_keyboxds_lock needs ["gpg", "sleep"],
];
