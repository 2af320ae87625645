//! `import`: gpg 2.2's import replayed on a private copy, held against the
//! real gpg (the machine's 2.2.40) importing the same file, counted by
//! strace: per file and operation, the replay's calls equal gpg's (reads
//! and seeks within a bound, see below); the summary equals gpg's; the
//! store named with `--onto` is only read, and nothing is left behind.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{io_summary, run, stderr, stdout};

/// Keys of the Debian subset exported by gpg into `out` (the first `n`).
pub(crate) fn export_subset(dir: &Path, n: usize) -> std::path::PathBuf {
    let home = dir.join("src");
    std::fs::create_dir(&home).unwrap();
    std::fs::copy(crate::common::fixture("real/debian-subset.kbx"), home.join("pubring.kbx")).unwrap();
    let h = home.to_str().unwrap();
    let listed = Command::new("gpg").args(["--homedir", h, "--batch", "--with-colons", "-k"]).output().unwrap();
    let fprs: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0].starts_with("pub:"))
        .filter_map(|w| w[1].split(':').nth(9).map(str::to_string))
        .take(n)
        .collect();
    assert_eq!(fprs.len(), n, "gpg lists the subset's keys");
    let out = dir.join("keys.gpg");
    let mut args = vec!["--homedir", h, "--batch", "--output", out.to_str().unwrap(), "--export"];
    args.extend(fprs.iter().map(String::as_str));
    assert!(Command::new("gpg").args(&args).status().unwrap().success());
    crate::common::stop_gnupg_daemons(&home);
    out
}

/// gpg 2.2 importing `keys` into `home` under strace, with `extra`
/// options: strace's counts (see [`strace_counts`]) and gpg's stderr.
fn gpg_import_traced(home: &Path, keys: &Path, extra: &[&str]) -> (BTreeMap<(String, String), u64>, String) {
    let log = home.with_extension("strace");
    let gpg = Command::new("strace")
        .args(["-o", log.to_str().unwrap(), "-e", "trace=%file,%desc", "gpg", "--homedir"])
        .arg(home)
        .arg("--batch")
        .args(extra)
        .arg("--import")
        .arg(keys)
        .output()
        .unwrap();
    crate::common::stop_gnupg_daemons(home);
    let err = String::from_utf8_lossy(&gpg.stderr).into_owned();
    assert!(gpg.status.success(), "{err}");
    (strace_counts(&std::fs::read_to_string(&log).unwrap()), err)
}

/// strace's counts of the calls gpg made on the keybox's files: per file
/// name (`pubring.kbx`, `.tmp`, `.lock`), per operation.
pub(crate) fn strace_counts(log: &str) -> BTreeMap<(String, String), u64> {
    let mut fds: BTreeMap<i64, String> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for line in log.lines() {
        let Some((call, rest)) = line.split_once('(') else { continue };
        let ret: Option<i64> = line.rsplit_once(" = ").and_then(|(_, r)| r.split_whitespace().next()?.parse().ok());
        let name = |s: &str| s.split('"').nth(1).map(|p| p.rsplit('/').next().unwrap_or(p).to_string());
        let watched = |n: &str| n.starts_with("pubring.kbx");
        match call {
            "openat" => {
                let Some(n) = name(rest).filter(|n| watched(n)) else { continue };
                *out.entry((n.clone(), "open".into())).or_insert(0) += 1;
                if let Some(fd) = ret.filter(|r| *r >= 0) {
                    fds.insert(fd, n);
                }
            }
            "access" | "unlink" | "rename" => {
                // rename counts on the name it had, the first path.
                let Some(n) = name(rest).filter(|n| watched(n)) else { continue };
                *out.entry((n, call.to_string())).or_insert(0) += 1;
            }
            "read" | "write" | "lseek" | "close" => {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let fd: i64 = digits.parse().unwrap_or(-1);
                let Some(n) = fds.get(&fd).cloned() else { continue };
                let op = if call == "lseek" { "seek" } else { call };
                *out.entry((n, op.to_string())).or_insert(0) += 1;
                if call == "close" {
                    fds.remove(&fd);
                }
            }
            _ => {}
        }
    }
    out
}

/// The replay's counts from `--io-summary=json`, keyed as strace's.
fn replay_counts(summary: &serde_json::Value) -> BTreeMap<(String, String), u64> {
    replay_counts_named(summary, "pubring.kbx")
}

/// The same, for a keybox named `store` (its files named as gpg's).
pub(crate) fn replay_counts_named(summary: &serde_json::Value, store: &str) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for f in summary["files"].as_array().expect("files in the summary") {
        let path = f["path"].as_str().unwrap();
        let name = path.rsplit('/').next().unwrap().replacen(store, "pubring.kbx", 1);
        if !name.starts_with("pubring.kbx") {
            continue;
        }
        for (op, n) in f["events"].as_object().unwrap() {
            // kbxscope's read handles fstat each open; gpg's do not.
            if op == "total" || op == "stat" || op == "link" || n.as_u64() == Some(0) {
                continue;
            }
            out.insert((name.clone(), op.clone()), n.as_u64().unwrap());
        }
    }
    out
}

/// Five hours from now (past a keybox's three-hour maintenance stamp), as
/// gpg's `--faked-system-time` and as RFC 3339 for kbxscope's `--at`.
fn five_hours_ahead() -> (String, String) {
    let later = time::OffsetDateTime::now_utc().replace_nanosecond(0).unwrap() + time::Duration::hours(5);
    let faked = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}!",
        later.year(),
        u8::from(later.month()),
        later.day(),
        later.hour(),
        later.minute(),
        later.second()
    );
    (faked, later.format(&time::format_description::well_known::Rfc3339).unwrap())
}

/// gpg 2.2.40 imports six keys of the Debian subset into an empty home
/// under strace; the replay makes the same calls on the same files (every
/// operation on every file, equal counts), writes the same blobs (apart
/// from their times), and prints gpg's summary.
fn import_makes_gpgs_calls() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 6);
    equal_to_gpg(dir.path(), &keys);
}

/// Five Debian keys whose subkeys carry several binding signatures
/// (`real/debian-rebound.gpg`, from `debian-keyring`): gpg keeps only the
/// newest binding of each subkey, and so does the replay: the same calls,
/// the same blobs, gpg's summary.
fn rebound_subkeys_make_gpgs_calls() {
    let dir = tempfile::tempdir().unwrap();
    equal_to_gpg(dir.path(), &crate::common::fixture("real/debian-rebound.gpg"));
}

/// gpg 2.2.40 imports `keys` into an empty home in `dir` under strace; the
/// replay's calls, blobs and summary equal gpg's (see
/// [`import_makes_gpgs_calls`]).
fn equal_to_gpg(dir: &Path, keys: &Path) {
    let home = dir.join("home");
    std::fs::create_dir(&home).unwrap();
    let (theirs, gpg_err) = gpg_import_traced(&home, keys, &[]);
    let made = dir.join("made.kbx");
    let o = run([
        "--gnupg-version",
        "2.2",
        "--io-summary=json",
        "import",
        "--out",
        made.to_str().unwrap(),
        keys.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ours = replay_counts(&io_summary(&o));
    same_blobs(&home.join("pubring.kbx"), &made);
    for (key, want) in &theirs {
        let got = ours.get(key).copied().unwrap_or(0);
        assert_eq!(got, *want, "{key:?}: gpg {want}, replay {got}\ngpg {theirs:?}\nours {ours:?}");
    }
    for key in ours.keys() {
        assert!(theirs.contains_key(key), "{key:?}: the replay made calls gpg did not: {ours:?}");
    }
    // gpg's statistics.
    let summary = |text: &str, prefix: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .filter(|l| l.contains("Total number processed") || l.trim_start().starts_with("imported"))
            .map(|l| l.trim().to_string())
            .collect()
    };
    assert_eq!(summary(&stderr(&o), "kbxscope: "), summary(&gpg_err, "gpg: "));
}

/// The blobs of two keyboxes are equal apart from the times in them: the
/// header's creation and maintenance times, each key blob's creation time
/// (the 4 bytes 8 before its keyblock; gpg reserves no space) and so its
/// SHA-1 checksum, the last 20 bytes.
fn same_blobs(gpgs: &Path, ours: &Path) {
    let (a, b) = (std::fs::read(gpgs).unwrap(), std::fs::read(ours).unwrap());
    let (a, b) = (crate::common::split_blobs(&a), crate::common::split_blobs(&b));
    assert_eq!(a.len(), b.len(), "blob count");
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x.len(), y.len(), "blob {i}: length");
        let mask = |blob: &[u8]| {
            let mut m = blob.to_vec();
            if m[4] == 1 {
                m[16..24].fill(0);
            } else {
                let data = u32::from_be_bytes(m[8..12].try_into().unwrap()) as usize;
                m[data - 8..data - 4].fill(0);
                let n = m.len();
                m[n - 20..].fill(0);
            }
            m
        };
        assert!(mask(x) == mask(y), "blob {i} differs beyond its times");
    }
}

/// A GnuPG home in `dir` (`stale`) holding `keys` with their signatures
/// made before 2016 only, as gpg 2.2 imports them with `--import-filter
/// drop-sig=sig_created_d > 2016-01-01`.
fn stale_home(dir: &Path, keys: &Path) -> std::path::PathBuf {
    let stale = dir.join("stale");
    std::fs::create_dir(&stale).unwrap();
    let status = Command::new("gpg")
        .arg("--homedir")
        .arg(&stale)
        .args(["--batch", "--import-filter", "drop-sig=sig_created_d > 2016-01-01", "--import"])
        .arg(keys)
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    crate::common::stop_gnupg_daemons(&stale);
    stale
}

/// `keys` with their signatures made before 2016 only ([`stale_home`]),
/// exported by gpg into `dir/stale.gpg`.
pub(crate) fn stale_keys(dir: &Path, keys: &Path) -> std::path::PathBuf {
    let stale = stale_home(dir, keys);
    let out = dir.join("stale.gpg");
    let status = Command::new("gpg")
        .arg("--homedir")
        .arg(&stale)
        .args(["--batch", "--output"])
        .arg(&out)
        .arg("--export")
        .status()
        .unwrap();
    assert!(status.success());
    crate::common::stop_gnupg_daemons(&stale);
    out
}

/// gpg 2.2.40 refreshes six keys it holds with signatures made before
/// 2016 only (imported with `--import-filter drop-sig`): 190 new
/// signatures. The replay, onto a copy of that keybox, finds the same,
/// makes the same calls (each update a copy with the old blob passed over
/// by an `lseek`) and writes the same blobs.
fn refresh_makes_gpgs_calls() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 6);
    let stale = stale_home(dir.path(), &keys);
    let before = dir.path().join("before.kbx");
    std::fs::copy(stale.join("pubring.kbx"), &before).unwrap();
    let (theirs, gpg_err) = gpg_import_traced(&stale, &keys, &[]);
    let made = dir.path().join("made.kbx");
    let o = run([
        "--gnupg-version",
        "2.2",
        "--io-summary=json",
        "import",
        "--onto",
        before.to_str().unwrap(),
        "--out",
        made.to_str().unwrap(),
        keys.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let new_sigs = |text: &str| {
        text.lines().find(|l| l.contains("new signatures:")).map(|l| l.rsplit(':').next().unwrap().trim().to_string())
    };
    assert_eq!(new_sigs(&err), new_sigs(&gpg_err), "{err}\n{gpg_err}");
    // The copy is named as --onto's file: count it as pubring.kbx.
    let ours: BTreeMap<_, _> = replay_counts_named(&io_summary(&o), "before.kbx");
    assert_eq!(ours, theirs);
    same_blobs(&stale.join("pubring.kbx"), &made);
}

/// GnuPG's maintenance pass at start, five hours after the keybox's
/// stamp (gpg's `--faked-system-time`, the replay's `--at`): on a keybox
/// with nothing to drop, a whole copy into `pubring.kbx.tmp` that is then
/// removed; on one with deleted blobs, a copy that replaces it. Every
/// operation on every file equal to gpg's, both times.
fn maintenance_pass_makes_gpgs_calls() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 3);
    let (faked, at) = five_hours_ahead();
    let starts = [crate::common::fixture("real/debian-subset.kbx"), crate::common::fixture("gnupg-deleted.kbx")];
    for (i, start) in starts.iter().enumerate() {
        let home = dir.path().join(format!("home{i}"));
        std::fs::create_dir(&home).unwrap();
        std::fs::copy(start, home.join("pubring.kbx")).unwrap();
        let onto = dir.path().join(format!("onto{i}.kbx"));
        std::fs::copy(start, &onto).unwrap();
        let (theirs, _) = gpg_import_traced(&home, &keys, &["--faked-system-time", &faked]);
        let o = run([
            "--gnupg-version",
            "2.2",
            "--io-summary=json",
            "import",
            "--at",
            &at,
            "--onto",
            onto.to_str().unwrap(),
            keys.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let ours = replay_counts_named(&io_summary(&o), onto.file_name().unwrap().to_str().unwrap());
        assert_eq!(ours, theirs, "{}", start.display());
        let tmp = ("pubring.kbx.tmp".to_string(), "unlink".to_string());
        assert_eq!(theirs.contains_key(&tmp), i == 0, "the copy is removed only when nothing was dropped");
    }
}

/// `record` of the real gpg 2.2.40 importing six keys into an empty home
/// shows, per file, the operations the replay makes, with the same counts
/// (renames, links and unlinks included); and of a `gpg -k` five hours
/// after the keybox's stamp, one line saying gpg ran the maintenance pass
/// for nothing.
fn record_shows_the_same_operations() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 6);
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let h = home.to_str().unwrap();
    let o = run([
        "--io-summary=json",
        "record",
        "--",
        "gpg",
        "--homedir",
        h,
        "--batch",
        "--import",
        keys.to_str().unwrap(),
    ]);
    crate::common::stop_gnupg_daemons(&home);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let line = err.lines().rev().find(|l| l.starts_with('{')).expect("record's summary");
    let summary: serde_json::Value = serde_json::from_str(line).unwrap();
    let mut recorded = BTreeMap::new();
    // gpg's own calls, the process record started: the child it forks to
    // start gpg-agent only closes the descriptors it inherited (and pids
    // wrap, so the lower pid need not be the parent's).
    let main = summary["processes"].as_array().unwrap().iter().max_by_key(|p| p["events"]["total"].as_u64()).unwrap();
    for p in [main] {
        for f in p["files"].as_array().into_iter().flatten() {
            let name = f["path"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
            for (op, n) in f["events"].as_object().unwrap() {
                if op != "total" && op != "stat" && n.as_u64() != Some(0) {
                    *recorded.entry((name.clone(), op.clone())).or_insert(0) += n.as_u64().unwrap();
                }
            }
        }
    }
    let o = run(["--gnupg-version", "2.2", "--io-summary=json", "import", keys.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut ours = replay_counts(&io_summary(&o));
    // The replay's links are counted on the lock file, as record counts them.
    let summary = io_summary(&o);
    for f in summary["files"].as_array().unwrap() {
        if f["path"].as_str().unwrap().ends_with("pubring.kbx.lock") {
            ours.insert(("pubring.kbx.lock".into(), "link".into()), f["events"]["link"].as_u64().unwrap());
        }
    }
    assert_eq!(recorded, ours);

    let (faked, _) = five_hours_ahead();
    let o =
        run(["--io-summary", "record", "--", "gpg", "--homedir", h, "--batch", "--faked-system-time", &faked, "-k"]);
    crate::common::stop_gnupg_daemons(&home);
    let err = stderr(&o);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("ran GnuPG's keybox maintenance pass")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("pubring.kbx.tmp"), "{err}");
}

/// gpg 2.2.40 deletes two keys of the Debian subset (`--batch --yes
/// --delete-keys FPR FPR`) under strace; the replay on a copy of the same
/// keybox makes the same calls on the same files and leaves the same bytes
/// (each blob's type byte zeroed in place, nothing copied).
fn delete_makes_gpgs_calls() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let subset = crate::common::fixture("real/debian-subset.kbx");
    std::fs::copy(&subset, home.join("pubring.kbx")).unwrap();
    let listed =
        Command::new("gpg").arg("--homedir").arg(&home).args(["--batch", "--with-colons", "-k"]).output().unwrap();
    let fprs: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0].starts_with("pub:"))
        .filter_map(|w| w[1].split(':').nth(9).map(str::to_string))
        .collect();
    let chosen = [fprs[3].as_str(), fprs[17].as_str()];
    std::fs::copy(&subset, home.join("pubring.kbx")).unwrap();
    let log = dir.path().join("strace.log");
    let gpg = Command::new("strace")
        .args(["-o", log.to_str().unwrap(), "-e", "trace=%file,%desc", "gpg", "--homedir"])
        .arg(&home)
        .args(["--batch", "--yes", "--delete-keys"])
        .args(chosen)
        .output()
        .unwrap();
    crate::common::stop_gnupg_daemons(&home);
    assert!(gpg.status.success(), "{}", String::from_utf8_lossy(&gpg.stderr));
    let theirs = strace_counts(&std::fs::read_to_string(&log).unwrap());
    let made = dir.path().join("made.kbx");
    let mut args = vec!["--gnupg-version", "2.2", "--io-summary=json", "delete", "--onto", subset.to_str().unwrap()];
    args.extend(["--out", made.to_str().unwrap()]);
    args.extend(chosen);
    let o = run(args);
    assert!(o.status.success(), "{}", stderr(&o));
    let ours = replay_counts_named(&io_summary(&o), "debian-subset.kbx");
    assert_eq!(ours, theirs);
    assert!(std::fs::read(home.join("pubring.kbx")).unwrap() == std::fs::read(&made).unwrap(), "the same bytes");
}

/// gpg 2.4.7 from the Debian 13 chroot named by `KBXSCOPE_GNUPG24_CHROOT`
/// (`/proc` mounted; with strace in it) imports six keys into an empty home
/// under strace; `--gnupg-version 2.4` (64 KiB for every stream) makes the
/// same calls on the same files. Optional in CI: without the chroot it
/// says SKIPPED and checks nothing.
fn import_equals_live_gnupg24() {
    let Some(chroot) = std::env::var_os("KBXSCOPE_GNUPG24_CHROOT").map(std::path::PathBuf::from) else {
        eprintln!("SKIPPED import_equals_live_gnupg24: KBXSCOPE_GNUPG24_CHROOT is not set (optional)");
        return;
    };
    assert!(chroot.join("proc/self/stat").exists(), "{}/proc is not mounted", chroot.display());
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 6);
    let inner = format!("/tmp/kbxscope-import-{}", std::process::id());
    let outer = chroot.join(inner.trim_start_matches('/'));
    let _ = std::fs::remove_dir_all(&outer);
    std::fs::create_dir_all(outer.join("home")).unwrap();
    std::fs::copy(&keys, outer.join("keys.gpg")).unwrap();
    let (home, log) = (format!("{inner}/home"), format!("{inner}/strace.log"));
    let o = Command::new("chroot")
        .arg(&chroot)
        .args(["strace", "-o", &log, "-e", "trace=%file,%desc", "gpg", "--homedir", &home, "--batch", "--import"])
        .arg(format!("{inner}/keys.gpg"))
        .output()
        .unwrap();
    let _ = Command::new("chroot").arg(&chroot).args(["gpgconf", "--homedir", &home, "--kill", "all"]).output();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs = strace_counts(&std::fs::read_to_string(outer.join("strace.log")).unwrap());
    let _ = std::fs::remove_dir_all(&outer);
    let o = run(["--gnupg-version", "2.4", "--io-summary=json", "import", keys.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(replay_counts(&io_summary(&o)), theirs);
}

/// Imported onto a copy of a keybox holding them already: every key
/// unchanged, as gpg says; the keybox named with --onto keeps its bytes,
/// times and directory, and no private directory is left behind; the same
/// for a deletion from it.
fn onto_reads_the_store_only() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 4);
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let store = store_dir.join("pubring.kbx");
    std::fs::copy(crate::common::fixture("real/debian-subset.kbx"), &store).unwrap();
    let listing = |d: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
        v.sort();
        v
    };
    let before = (std::fs::read(&store).unwrap(), std::fs::metadata(&store).unwrap().modified().unwrap());
    let (files_before, tmp) = (listing(&store_dir), dir.path().join("tmp"));
    std::fs::create_dir(&tmp).unwrap();
    let o = crate::common::bin()
        .env("TMPDIR", &tmp)
        .args(["--gnupg-version", "2.2", "import", "--onto"])
        .arg(&store)
        .arg(&keys)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("Total number processed: 4") && err.contains("unchanged: 4"), "{err}");
    assert_eq!(err.matches("\" not changed").count(), 4, "{err}");
    let after = (std::fs::read(&store).unwrap(), std::fs::metadata(&store).unwrap().modified().unwrap());
    assert!(before == after, "the store's bytes or time changed");
    assert_eq!(listing(&store_dir), files_before);
    assert!(listing(&tmp).is_empty(), "left behind: {:?}", listing(&tmp));

    // The same for a deletion.
    let listed = run(["list", "--json", store.to_str().unwrap()]);
    let first: serde_json::Value = serde_json::from_str(stdout(&listed).lines().next().unwrap()).unwrap();
    let fpr = first["fingerprint"].as_str().unwrap().to_string();
    let o = crate::common::bin().env("TMPDIR", &tmp).args(["delete", "--onto"]).arg(&store).arg(&fpr).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("key {fpr} deleted")), "{}", stderr(&o));
    let after = (std::fs::read(&store).unwrap(), std::fs::metadata(&store).unwrap().modified().unwrap());
    assert!(before == after, "the store's bytes or time changed");
    assert_eq!(listing(&store_dir), files_before);
    assert!(listing(&tmp).is_empty(), "left behind: {:?}", listing(&tmp));
}

/// Ctrl-C (SIGINT) and SIGTERM while the replay writes its private copy:
/// exit 130 and 143, the private directory gone, the store named with
/// --onto unchanged.
fn signals_remove_the_private_copy() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 24);
    let store = dir.path().join("store.kbx");
    std::fs::copy(crate::common::fixture("gnupg-mixed.kbx"), &store).unwrap();
    let before = std::fs::read(&store).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let mut run = crate::common::bin();
        run.args(["--gnupg-version", "2.2", "--kbx-buffer-size", "0", "import", "--onto"]).arg(&store).arg(&keys);
        // Signalled once the private directory holds the temporary copy.
        let status = signalled_when(run, &tmp, signal, |name| name.ends_with(".tmp"));
        assert_eq!(status.code(), Some(code), "{signal}");
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "{signal}: the private directory is left");
        assert!(std::fs::read(&store).unwrap() == before);
    }
}

/// `run` with `TMPDIR` at `tmp`, sent `signal` (`-INT`, `-TERM`) once a
/// private directory in `tmp` holds a file whose name `ready` accepts (or
/// once it ended): how it ended.
pub(crate) fn signalled_when(
    mut run: Command,
    tmp: &Path,
    signal: &str,
    ready: impl Fn(&str) -> bool,
) -> std::process::ExitStatus {
    let mut child =
        run.env("TMPDIR", tmp).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let writing = || {
        std::fs::read_dir(tmp)
            .unwrap()
            .filter_map(|e| std::fs::read_dir(e.ok()?.path()).ok())
            .flatten()
            .any(|f| f.is_ok_and(|f| ready(&f.file_name().to_string_lossy())))
    };
    while child.try_wait().unwrap().is_none() && !writing() {
        std::thread::yield_now();
    }
    let sent = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    child.wait().unwrap()
}

/// A process that holds `home`'s keybox lock as GnuPG's lock file names
/// its holder (pid, host); killed when dropped.
pub(crate) struct Holder {
    pub(crate) child: std::process::Child,
    lock: std::path::PathBuf,
}

impl Holder {
    fn new(home: &Path) -> Self {
        Self::of(&home.join("pubring.kbx.lock"), Path::new("sleep"))
    }

    /// A process run from `program` (a copy of sleep, named as the holder
    /// should be) that `lock` names as its holder, as GnuPG's dotlock
    /// writes it.
    pub(crate) fn of(lock: &Path, program: &Path) -> Self {
        let child = Command::new(program).arg("1000").spawn().unwrap();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        std::fs::write(lock, format!("{:>10}\n{}\n", child.id(), host.trim())).unwrap();
        Self { child, lock: lock.to_path_buf() }
    }

    /// Let the lock go.
    pub(crate) fn release(&self) {
        std::fs::remove_file(&self.lock).unwrap();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The one gpg process of a record summary that waited for a lock. gpg's
/// forks (the child that starts gpg-agent) are gpg processes too, and pids
/// wrap, so the first gpg listed need not be the one record started.
pub(crate) fn the_waiting_gpg(summary: &serde_json::Value) -> &serde_json::Value {
    let waited: Vec<_> =
        summary["processes"].as_array().unwrap().iter().filter(|p| p.get("lock_waits").is_some()).collect();
    assert_eq!(waited.len(), 1, "one process waits: {summary}");
    assert_eq!(waited[0]["program"], "gpg");
    assert_eq!(summary["lock_waits"]["count"], 1, "{summary}");
    waited[0]
}

/// Run `cmd` (stderr piped), read its stderr up to a line containing
/// `waiting`, call `then`, and return the whole stderr and the status.
pub(crate) fn when_waiting(mut cmd: Command, waiting: &str, then: impl FnOnce()) -> (String, std::process::ExitStatus) {
    use std::io::BufRead;
    let mut child = cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    let mut then = Some(then);
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 {
        if line.contains(waiting) {
            if let Some(f) = then.take() {
                f();
            }
        }
        text.push_str(&line);
        line.clear();
    }
    assert!(then.is_none(), "no '{waiting}' in: {text}");
    (text, child.wait().unwrap())
}

/// Another process holds the keybox's lock: `--lock-wait 0` gives up at
/// once (one line naming the keybox, the holder and the lock file, exit 1,
/// nothing left); by default the replay waits as gpg does and starts once
/// the lock is let go, the wait counted and timed on the lock file.
fn a_held_lock_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 3);
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::copy(crate::common::fixture("gnupg-mixed.kbx"), home.join("pubring.kbx")).unwrap();
    let before = std::fs::read(home.join("pubring.kbx")).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let holder = Holder::new(&home);
    let import = |extra: &[&str]| {
        let mut c = crate::common::bin();
        c.env("TMPDIR", &tmp).args(["--io-summary=json", "import"]).args(extra).arg("--onto").arg(&home).arg(&keys);
        c
    };
    let o = import(&["--lock-wait", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let last = err.lines().last().unwrap();
    let pid = holder.child.id();
    assert!(last.contains(&format!("is locked by process {pid}")) && last.contains("pubring.kbx.lock"), "{err}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "nothing left");
    let (err, status) = when_waiting(import(&[]), &format!("waiting for lock (held by {pid})"), || holder.release());
    assert!(status.success(), "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(err.lines().rev().find(|l| l.starts_with("{\"buffer_size\"")).unwrap()).unwrap();
    let lock = home.join("pubring.kbx.lock").display().to_string();
    let row = summary["files"].as_array().unwrap().iter().find(|f| f["path"] == lock.as_str()).unwrap();
    assert_eq!(row["lock_waits"]["count"], 1, "{row}");
    assert!(row["lock_waits"]["time_ns"].as_u64().unwrap() > 0, "{row}");
    assert_eq!(summary["lock_waits"]["count"], 1);
    assert_eq!(std::fs::read(home.join("pubring.kbx")).unwrap(), before);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "nothing left");
}

/// `record` of the real gpg 2.2.40 importing into a home whose lock
/// another process holds: gpg waits (its `link` finds the lock taken) and
/// imports once the lock is let go; record counts the wait, once, timed,
/// on the lock file, beside gpg's failed links.
fn record_counts_gpgs_lock_wait() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 3);
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::copy(crate::common::fixture("gnupg-mixed.kbx"), home.join("pubring.kbx")).unwrap();
    let holder = Holder::new(&home);
    let mut cmd = crate::common::bin();
    cmd.args(["--io-summary=json", "record", "--", "gpg", "--homedir"]).arg(&home).args(["--batch", "--import"]);
    cmd.arg(&keys);
    let pid = holder.child.id();
    let (err, status) = when_waiting(cmd, &format!("gpg: waiting for lock (held by {pid})"), || holder.release());
    crate::common::stop_gnupg_daemons(&home);
    assert!(status.success(), "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(err.lines().find(|l| l.contains("\"processes\"")).unwrap()).unwrap();
    let gpg = the_waiting_gpg(&summary);
    assert_eq!(gpg["lock_waits"]["count"], 1, "{gpg}");
    assert!(gpg["lock_waits"]["time_ns"].as_u64().unwrap() > 0);
    let lock = home.join("pubring.kbx.lock").display().to_string();
    let row = gpg["files"].as_array().unwrap().iter().find(|f| f["path"] == lock.as_str()).unwrap();
    assert_eq!(row["lock_waits"]["count"], 1, "{row}");
    assert!(
        gpg["calls"]["link"].as_u64().unwrap() > row["events"]["unlink"].as_u64().unwrap_or(0),
        "failed links counted"
    );
}

/// `sweep --workload import:FILE`: each size's row (one run on a fresh
/// private copy) counts what a single `import --onto` counts at that size,
/// the store is only read and nothing is left; the same for keyboxd's
/// database of the keys with `--versus-keyboxd`.
fn sweep_import_rows_equal_single_imports() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 6);
    let store = dir.path().join("store.kbx");
    std::fs::copy(crate::common::fixture("gnupg-mixed.kbx"), &store).unwrap();
    let before = std::fs::read(&store).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let json = dir.path().join("sweep.json");
    let workload = format!("import:{}", keys.display());
    let o = crate::common::bin()
        .env("TMPDIR", &tmp)
        .args(["sweep", store.to_str().unwrap(), "--workload", &workload, "--sizes", "0,64", "--runs", "1"])
        .args(["--warmup", "0", "--export-json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["workload"], workload.as_str());
    for (row, size) in v["results"].as_array().unwrap().iter().zip(["0", "64"]) {
        assert!(row.get("seed").is_none_or(|s| s.is_null()), "no seed row for an import");
        let single = crate::common::bin()
            .env("TMPDIR", &tmp)
            .args(["--io-summary=json", "--kbx-buffer-size", size, "import", "--onto"])
            .arg(&store)
            .arg(&keys)
            .output()
            .unwrap();
        assert!(single.status.success(), "{}", stderr(&single));
        let s = io_summary(&single);
        let all = row["events"]["total"].as_u64().unwrap() + row["other_events"].as_u64().unwrap_or(0);
        assert_eq!(Some(all), s["events"]["total"].as_u64(), "size {size}: every event");
        assert_eq!(row["bytes_read"], s["bytes_read"], "size {size}: bytes read");
        assert!(s["events"]["rename"].as_u64().unwrap() > 0, "the keys were written");
    }
    assert_eq!(std::fs::read(&store).unwrap(), before);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "nothing left");
    // With --versus-keyboxd: the database of the store's keys at each
    // page-cache size, without and with bulk import, each row what a single
    // `import --onto DATABASE` counts (at keyboxd's own cache, 2000 KiB).
    let o = sweep_versus_keyboxd(&store, &workload, &tmp, &json);
    assert!(stdout(&o).contains("2000 KiB, bulk import"), "{}", stdout(&o));
    assert!(stdout(&o).contains("keybox or keyboxd?"), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = v["versus"]["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let db = dir.path().join("store.db");
    assert!(run(["convert", store.to_str().unwrap(), db.to_str().unwrap()]).status.success());
    for (row, bulk) in rows.iter().zip([false, true]) {
        assert_eq!(row["bulk_import"].as_bool().unwrap_or(false), bulk, "{row}");
        let mut single = crate::common::bin();
        single.env("TMPDIR", &tmp).args(["--io-summary=json", "import", "--onto"]).arg(&db).arg(&keys);
        if bulk {
            single.arg("--bulk-import");
        }
        let single = single.output().unwrap();
        assert!(single.status.success(), "{}", stderr(&single));
        let s = io_summary(&single);
        let all = row["events"]["total"].as_u64().unwrap() + row["other_events"].as_u64().unwrap_or(0);
        assert_eq!(Some(all), s["events"]["total"].as_u64(), "bulk {bulk}: every event");
    }
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "nothing left");
}

/// `sweep STORE --workload WORKLOAD --versus-keyboxd` at 64 KiB and a
/// page cache of 2000 KiB, one run each, exported as JSON to `json`, with
/// `tmp` as `TMPDIR`; it succeeded.
pub(crate) fn sweep_versus_keyboxd(store: &Path, workload: &str, tmp: &Path, json: &Path) -> std::process::Output {
    let o = crate::common::bin()
        .env("TMPDIR", tmp)
        .args(["sweep", store.to_str().unwrap(), "--workload", workload, "--versus-keyboxd", "--sizes", "64"])
        .args(["--cache-sizes", "2000", "--runs", "1", "--warmup", "0", "--export-json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// kbxscope with `args`, then `keys`, and a 1 MiB tmpfs (mounted in `dir`)
/// as `TMPDIR`: its output, and how many entries the tmpfs held after it.
/// `None`, after a printed skip of `test`, where mounting needs root.
pub(crate) fn on_a_full_disk(
    test: &str,
    dir: &Path,
    args: &[&str],
    keys: &Path,
) -> Option<(std::process::Output, usize)> {
    if !Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n")) {
        crate::common::skip_part(test, "mounting a small tmpfs needs root");
        return None;
    }
    let small = dir.join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"]).arg(&small).status().unwrap();
    assert!(mounted.success(), "mount a tmpfs");
    let o = crate::common::bin().env("TMPDIR", &small).args(args).arg(keys).output();
    let left = std::fs::read_dir(&small).map(|d| d.count()).unwrap_or(0);
    let _ = Command::new("umount").arg(&small).status();
    Some((o.unwrap(), left))
}

/// A file system that fills up during the replay (a 1 MiB tmpfs as
/// TMPDIR; needs root to mount it): one line naming the file and the
/// system's error, exit 1, nothing left on it.
fn a_full_disk_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 6);
    let args = ["--gnupg-version", "2.2", "import"];
    let Some((o, left)) = on_a_full_disk("import::a_full_disk_is_one_line", dir.path(), &args, &keys) else { return };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    // gpg's line for each key imported before, then the error's one line.
    let errors: Vec<&str> = err.lines().filter(|l| !l.starts_with("kbxscope: key ")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains("pubring.kbx") && errors[0].contains("No space left on device"), "{err}");
    assert_eq!(left, 0, "left on the full file system");
}

/// `sweep --workload import:FILE --with-gpg`: the real gpg imports the same
/// keys onto a fresh copy of the keybox beside each row it can run (gpg
/// 2.2: 8 KiB only), its calls on the keybox's files counted by strace and
/// by the interposer alike; each count equals the replay's calls of the
/// same kinds (open, read, write, seek, close, access, rename, unlink) in
/// a single `import --onto`.
fn sweep_import_with_gpg_counts_gpgs_calls() {
    let dir = tempfile::tempdir().unwrap();
    let keys = export_subset(dir.path(), 6);
    let store = dir.path().join("store.kbx");
    std::fs::copy(crate::common::fixture("gnupg-mixed.kbx"), &store).unwrap();
    let ours = single_import_calls(&store, &keys);
    for counter in ["strace", "record"] {
        let rows = sweep_import_beside(&store, &keys, "--with-gpg", counter, "8,64");
        assert_eq!(rows[0]["gnupg"]["events"].as_u64(), Some(ours), "{counter}: {}", rows[0]);
        assert!(rows[1]["gnupg"].is_null(), "gpg 2.2 runs at 8 KiB only: {}", rows[1]);
    }
}

/// The calls of `import --onto STORE FILE` (GnuPG 2.2, 8 KiB) on the
/// store's files, of the kinds a GnuPG program's count has (stat and link
/// left out), summed.
pub(crate) fn single_import_calls(store: &Path, file: &Path) -> u64 {
    let o = crate::common::bin()
        .args(["--gnupg-version", "2.2", "--kbx-buffer-size", "8", "--io-summary=json", "import", "--onto"])
        .arg(store)
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let name = store.file_name().unwrap().to_string_lossy().into_owned();
    replay_counts_named(&io_summary(&o), &name).values().sum()
}

/// The rows of `sweep STORE --workload import:FILE OPTION --count-with
/// COUNTER --sizes SIZES` (one run, no warm-up), from its JSON export.
pub(crate) fn sweep_import_beside(
    store: &Path,
    file: &Path,
    option: &str,
    counter: &str,
    sizes: &str,
) -> Vec<serde_json::Value> {
    let json = store.with_extension(format!("{counter}.json"));
    let workload = format!("import:{}", file.display());
    let o = crate::common::bin()
        .args(["sweep", store.to_str().unwrap(), "--workload", &workload, option, "--count-with", counter])
        .args(["--sizes", sizes, "--runs", "1", "--warmup", "0", "--export-json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    v["results"].as_array().unwrap().clone()
}

/// A file that is not OpenPGP: one line naming it, exit 1, nothing left.
fn a_file_of_no_keys_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("notes.txt");
    std::fs::write(&bad, b"these are not keys\n").unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let o = crate::common::bin().env("TMPDIR", &tmp).args(["import"]).arg(&bad).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("notes.txt"), "{err}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

crate::tests![
    import_makes_gpgs_calls needs ["gpg", "strace"],
    rebound_subkeys_make_gpgs_calls needs ["gpg", "strace"],
    refresh_makes_gpgs_calls needs ["gpg", "strace"],
    maintenance_pass_makes_gpgs_calls needs ["gpg", "strace"],
    record_shows_the_same_operations needs ["gpg"],
    delete_makes_gpgs_calls needs ["gpg", "strace"],
    import_equals_live_gnupg24 needs ["gpg"],
    onto_reads_the_store_only needs ["gpg"],
    a_file_of_no_keys_is_one_line,
    signals_remove_the_private_copy needs ["gpg"],
    a_full_disk_is_one_line needs ["gpg", "mount"],
    sweep_import_with_gpg_counts_gpgs_calls needs ["gpg", "strace"],
    a_held_lock_is_waited_for needs ["gpg"],
    record_counts_gpgs_lock_wait needs ["gpg"],
    sweep_import_rows_equal_single_imports needs ["gpg"],
];
