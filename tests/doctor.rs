//! `doctor` on homes built with each problem, held against the real gpg
//! (the machine's 2.2.40): the problem doctor names is real (gpg waits on
//! that lock, reports those signatures, copies that keybox, warns of
//! those permissions, checks that trust database), and the command doctor
//! prints, run on a copy of the home, removes it. Every home is compared
//! before and after `doctor`: it changes nothing.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::{fixture, run, stderr, stop_gnupg_daemons, tool};

crate::tests!(
    a_stale_lock_of_a_dead_process needs ["gpg"],
    a_lock_written_by_another_host needs ["gpg"],
    a_lock_a_live_process_holds needs ["gpg"],
    a_damaged_lock_and_a_damaged_store needs ["gpg"],
    a_flooded_key needs ["gpg"],
    a_keyring_mostly_signed_by_unknown_signers needs ["gpg"],
    an_old_maintenance_stamp needs ["gpg", "strace", "setpriv"],
    a_second_store_left_behind needs ["gpg"],
    a_trust_database_check_due needs ["gpg"],
    unsafe_permissions needs ["gpg", "unix"],
    a_keyboxd_lock_with_gnupg24,
    moving_to_keyboxd_with_gnupg24,
    the_daemons_serving_a_home needs ["gpg", "gpgconf"],
    a_healthy_home_exits_0 needs ["unix"],
    homes_that_cannot_be_examined needs ["unix"],
);

/// A GnuPG home in `dir` holding a copy of the fixture keybox `kbx`.
fn home_with(dir: &Path, name: &str, kbx: &str) -> PathBuf {
    let home = dir.join(name);
    std::fs::create_dir(&home).unwrap();
    set_mode(&home, 0o700);
    std::fs::copy(fixture(&format!("{kbx}.kbx")), home.join("pubring.kbx")).unwrap();
    home
}

#[cfg(unix)]
fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) {}

/// A copy of the home `home` beside it, named `name` (for a real gpg to
/// run in, or for a fix to be applied to).
fn copy_home(home: &Path, name: &str) -> PathBuf {
    let to = home.with_file_name(name);
    let o = Command::new("cp").arg("-a").arg(home).arg(&to).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    to
}

/// Everything of a home: each file's path, size, time and contents.
fn snapshot(home: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![home.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                dirs.push(e.path());
            }
            let bytes = if m.is_file() { std::fs::read(e.path()).unwrap() } else { Vec::new() };
            out.insert(e.path(), (m.len(), m.modified().unwrap(), bytes));
        }
    }
    out
}

/// `kbxscope doctor ARGS… HOME --json` (as gpg 2.2 judges), checked to
/// change nothing of the home: its report and exit status.
fn doctor(home: &Path, args: &[&str]) -> (Value, Option<i32>) {
    let before = snapshot(home);
    let o = run(["--gnupg-version", "2.2", "doctor", "--json"]
        .iter()
        .copied()
        .chain(args.iter().copied())
        .chain([home.to_str().unwrap()]));
    assert_eq!(snapshot(home), before, "doctor changed the home");
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    (serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o))), o.status.code())
}

/// The findings of `kind`.
fn findings<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == kind).collect()
}

/// The one finding of `kind`.
fn one<'a>(report: &'a Value, kind: &str) -> &'a Value {
    let f = findings(report, kind);
    assert_eq!(f.len(), 1, "{kind}: {report:#}");
    f[0]
}

/// Run a fix doctor printed, with `sh -c`.
fn apply(fix: &Value) {
    let fix = fix.as_str().expect("a fix command");
    let o = Command::new("sh").args(["-c", fix]).output().unwrap();
    assert!(o.status.success(), "{fix}: {}", stderr(&o));
}

/// gpg (2.2) in `home`, unattended.
fn gpg(home: &Path, args: &[&str]) -> Output {
    let o = Command::new("gpg").arg("--homedir").arg(home).arg("--batch").args(args).output().unwrap();
    stop_gnupg_daemons(home);
    o
}

/// This host's name, as GnuPG writes it into a lock.
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// A lock file as GnuPG's dotlock writes it.
fn write_lock(path: &Path, pid: u32, host: &str) {
    std::fs::write(path, format!("{pid:10}\n{host}\n")).unwrap();
}

/// One OpenPGP key of the mixed fixture, exported by gpg (binary).
fn exported_key(dir: &Path) -> (String, Vec<u8>) {
    let home = home_with(dir, "export-home", "gnupg-mixed");
    let o = gpg(&home, &["--with-colons", "--list-keys"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let fpr = text.lines().find(|l| l.starts_with("fpr:")).unwrap().split(':').nth(9).unwrap().to_string();
    let o = gpg(&home, &["--export", &fpr]);
    assert!(o.status.success() && !o.stdout.is_empty(), "{}", stderr(&o));
    (fpr, o.stdout)
}

/// A certification packet (old framing) by `issuer`, a signer that exists
/// nowhere: a v4 signature of class 0x10, RSA over SHA-256, with its
/// creation time hashed and its issuer unhashed, and a value that is no
/// signature (gpg cannot check it without the key, as with any flood).
fn fake_certification(issuer: [u8; 8], created: u32) -> Vec<u8> {
    let mut body = vec![4, 0x10, 1, 8, 0, 6, 5, 2];
    body.extend_from_slice(&created.to_be_bytes());
    body.extend_from_slice(&[0, 10, 9, 16]);
    body.extend_from_slice(&issuer);
    // A value of its own (gpg drops signatures with equal values as duplicates).
    body.extend_from_slice(&[0xab, 0xcd, 0x08, 0x00, 0xc0]);
    body.extend_from_slice(&issuer);
    body.extend((9..256u32).map(|i| i.wrapping_mul(31) as u8));
    let mut packet = vec![0x89];
    packet.extend_from_slice(&(body.len() as u16).to_be_bytes());
    packet.extend_from_slice(&body);
    packet
}

/// `key` (a transferable public key) with `count` certifications by
/// signers that exist nowhere after its first user id, made a second
/// apart after the key; `seed` tells their issuers apart from another
/// call's.
fn flooded(key: &[u8], count: u32, seed: u32) -> Vec<u8> {
    let packets = kbxscope::kbx::keyblock::split_packets(key).unwrap();
    let body = packets[0].body;
    let key_created = u32::from_be_bytes([body[1], body[2], body[3], body[4]]);
    let mut out = Vec::new();
    let mut start = 0;
    let mut done = false;
    for p in &packets {
        let end = p.body.as_ptr() as usize - key.as_ptr() as usize + p.body.len();
        out.extend_from_slice(&key[start..end]);
        start = end;
        if p.tag == kbxscope::kbx::keyblock::tag::USER_ID && !done {
            done = true;
            for n in 0..count {
                let id = (u64::from(seed) << 32 | u64::from(n)) ^ 0x5eed_0000_0000_0000;
                out.extend(fake_certification(id.to_be_bytes(), key_created + 1 + n));
            }
        }
    }
    out
}

/// A directory holding a key to import (one of the mixed fixture's, as
/// gpg exports it) and a home with the mixed fixture's keybox.
fn key_and_home() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (_, key) = exported_key(dir.path());
    let keyfile = dir.path().join("key.gpg");
    std::fs::write(&keyfile, key).unwrap();
    let home = home_with(dir.path(), "home", "gnupg-mixed");
    (dir, keyfile, home)
}

/// Wait until gpg, started in the background, says on stderr that it
/// waits for a lock held by `pid`; then stop it. Returns the line.
fn waits_for_lock(mut child: std::process::Child, pid: u32) -> String {
    let err = child.stderr.take().unwrap();
    let mut seen = String::new();
    for line in BufReader::new(err).lines() {
        let line = line.unwrap();
        if line.contains("waiting for lock") {
            seen = line;
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen.contains(&format!("held by {pid}")), "gpg did not wait for {pid}: {seen:?}");
    seen
}

/// gpg --import of `key` in `home`, started in the background.
fn import_in_background(home: &Path, key: &Path) -> std::process::Child {
    Command::new("gpg")
        .arg("--homedir")
        .arg(home)
        .args(["--batch", "--import"])
        .arg(key)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A lock left by a process that has gone, on this host: stale, and
/// GnuPG removes it by itself ("removing stale lockfile"); the fix
/// removes it now.
fn a_stale_lock_of_a_dead_process() {
    let (_dir, keyfile, home) = key_and_home();
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    write_lock(&home.join("pubring.kbx.lock"), pid, &host());
    let (report, code) = doctor(&home, &["--quick"]);
    assert_eq!(code, Some(1));
    let f = one(&report, "stale-lock");
    let e = &f["evidence"];
    assert_eq!(
        (e["pid"].as_u64(), e["alive"].as_bool(), e["stale"].as_bool()),
        (Some(u64::from(pid)), Some(false), Some(true))
    );
    assert_eq!(e["cleared_by_gnupg"], true);
    assert!(report["findings"][0]["kind"] == "stale-lock", "a lock comes first");
    // The real gpg clears it by itself, as doctor says.
    let real = copy_home(&home, "real");
    let o = gpg(&real, &["--import", keyfile.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("removing stale lockfile (created by {pid})")), "{}", stderr(&o));
    // The fix, on another copy, leaves gpg nothing to clear.
    let fixed = copy_home(&home, "fixed");
    let (report, _) = doctor(&fixed, &["--quick"]);
    apply(&one(&report, "stale-lock")["fix"]);
    assert!(!fixed.join("pubring.kbx.lock").exists());
    let o = gpg(&fixed, &["--import", keyfile.to_str().unwrap()]);
    assert!(o.status.success() && !stderr(&o).contains("stale lockfile"), "{}", stderr(&o));
}

/// A lock another host wrote (a container's previous life): GnuPG never
/// clears it and an import waits forever; doctor calls it stale (no
/// process here has the keybox open, the home is local) and its fix lets
/// the import through.
fn a_lock_written_by_another_host() {
    let (_dir, keyfile, home) = key_and_home();
    write_lock(&home.join("pubring.kbx.lock"), 4242, "buildkitsandbox");
    let (report, _) = doctor(&home, &["--quick"]);
    let f = one(&report, "stale-lock");
    let e = &f["evidence"];
    assert_eq!(
        (e["host"].as_str(), e["stale"].as_bool(), e["cleared_by_gnupg"].as_bool()),
        (Some("buildkitsandbox"), Some(true), Some(false))
    );
    assert!(e["alive"].is_null(), "another host's process cannot be seen from here: {e}");
    // The real gpg waits for it.
    let real = copy_home(&home, "real");
    waits_for_lock(import_in_background(&real, &keyfile), 4242);
    // The fix, on the copy gpg waited in, lets the next import through.
    let (report, _) = doctor(&real, &["--quick"]);
    apply(&one(&report, "stale-lock")["fix"]);
    let o = gpg(&real, &["--import", keyfile.to_str().unwrap()]);
    assert!(o.status.success() && !stderr(&o).contains("waiting for lock"), "{}", stderr(&o));
}

/// A lock a live process holds: never stale, no command to clear it, its
/// holder named; the real gpg waits for that process.
fn a_lock_a_live_process_holds() {
    let (_dir, keyfile, home) = key_and_home();
    let mut holder = Command::new("sleep").arg("600").spawn().unwrap();
    write_lock(&home.join("pubring.kbx.lock"), holder.id(), &host());
    let (report, _) = doctor(&home, &["--quick"]);
    let f = one(&report, "live-lock");
    assert!(findings(&report, "stale-lock").is_empty());
    assert!(f["fix"].is_null(), "a live lock has no command that clears it: {f}");
    let e = &f["evidence"];
    assert_eq!((e["alive"].as_bool(), e["stale"].as_bool()), (Some(true), Some(false)));
    assert_eq!(e["process"]["program"], "sleep");
    assert_eq!(e["process"]["pid"].as_u64(), Some(u64::from(holder.id())));
    let real = copy_home(&home, "real");
    waits_for_lock(import_in_background(&real, &keyfile), holder.id());
    let _ = holder.kill();
    let _ = holder.wait();
}

/// A lock holding garbage (gpg fails on it: "cannot read lockfile") and a
/// keybox damaged in one blob: findings naming file, blob and offset.
fn a_damaged_lock_and_a_damaged_store() {
    let (_dir, keyfile, home) = key_and_home();
    std::fs::write(home.join("pubring.kbx.lock"), b"\x00\xffgarbage").unwrap();
    let (report, _) = doctor(&home, &["--quick"]);
    let f = one(&report, "damaged-lock");
    let real = copy_home(&home, "real");
    let o = gpg(&real, &["--import", keyfile.to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains("lockfile"), "{}", stderr(&o));
    let fixed = copy_home(&home, "fixed");
    std::fs::remove_file(fixed.join("pubring.kbx.lock")).unwrap();
    let _ = f;
    // A keybox whose second blob's length runs past the end of the file.
    let mut kbx = std::fs::read(home.join("pubring.kbx")).unwrap();
    let second = u32::from_be_bytes(kbx[0..4].try_into().unwrap()) as usize;
    kbx[second..second + 4].copy_from_slice(&0x0040_0000u32.to_be_bytes());
    std::fs::write(fixed.join("pubring.kbx"), &kbx).unwrap();
    let (report, code) = doctor(&fixed, &["--quick"]);
    assert_eq!(code, Some(1));
    let f = one(&report, "damaged-store");
    assert_eq!(f["evidence"]["blob"].as_u64(), Some(1), "{f}");
    assert_eq!(f["evidence"]["offset"].as_u64(), Some(second as u64), "{f}");
}

/// A key flooded with 1,500 certifications by signers that exist nowhere:
/// doctor names it with its signature counts, gpg --check-sigs reports
/// exactly those as not checked for missing keys, and doctor's command
/// (gpg's clean) removes them; the full doctor measures what that saves.
fn a_flooded_key() {
    let dir = tempfile::tempdir().unwrap();
    let (fpr, key) = exported_key(dir.path());
    let flood = dir.path().join("flood.gpg");
    std::fs::write(&flood, flooded(&key, 1_500, 1)).unwrap();
    let home = home_with(dir.path(), "home", "gnupg-mixed");
    let o = gpg(&home, &["--import", flood.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (report, _) = doctor(&home, &[]);
    let f = one(&report, "flooded-key");
    let k = &f["evidence"]["keys"][0];
    assert_eq!(k["fingerprint"].as_str(), Some(fpr.as_str()));
    assert_eq!(k["unknown_signers"].as_u64(), Some(1_500), "{k}");
    assert!(k["signatures"].as_u64().unwrap() > 1_500);
    assert!(f["saving_seconds"].as_f64().is_some(), "the cleaning was replayed: {f}");
    let replays = report["measured"]["measured"].as_array().unwrap();
    assert!(replays.iter().any(|m| m["kind"] == "flooded-key" && m["command"] == "gpg --check-sigs"), "{report:#}");
    // gpg sees the same flood.
    let real = copy_home(&home, "real");
    let o = gpg(&real, &["--check-sigs", &fpr]);
    assert_eq!(missing_keys(&o), 1_500, "{}", stderr(&o));
    let (report, _) = doctor(&real, &["--quick"]);
    apply(&one(&report, "flooded-key")["fix"]);
    stop_gnupg_daemons(&real);
    let o = gpg(&real, &["--check-sigs", &fpr]);
    let all = format!("{}{}", stdout_of(&o), stderr(&o));
    assert!(!all.contains("not checked due to missing keys"), "{all}");
    let (after, _) = doctor(&real, &["--quick"]);
    assert!(findings(&after, "flooded-key").is_empty(), "{after:#}");
}

/// The signatures gpg --check-sigs did not check for missing keys (its
/// "N signatures not checked due to missing keys", summed over keys).
fn missing_keys(o: &Output) -> u64 {
    let all = format!("{}{}", stdout_of(o), stderr(o));
    all.lines()
        .filter_map(|l| l.strip_suffix(" signatures not checked due to missing keys"))
        .filter(|l| !l.contains("key "))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

fn stdout_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Several keys, each with a few hundred certifications by unknown
/// signers (none flooded): most of the keyring's signatures. doctor's
/// command cleans every key, and gpg then misses no signer.
fn a_keyring_mostly_signed_by_unknown_signers() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with(dir.path(), "home", "gnupg-mixed");
    let o = gpg(&home, &["--with-colons", "--list-keys"]);
    let text = stdout_of(&o);
    let fprs: Vec<String> = text
        .lines()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0].starts_with("pub:") && w[1].starts_with("fpr:"))
        .map(|w| w[1].split(':').nth(9).unwrap().to_string())
        .take(4)
        .collect();
    for (i, fpr) in fprs.iter().enumerate() {
        let key = gpg(&home, &["--export", fpr]).stdout;
        let file = dir.path().join(format!("k{i}.gpg"));
        std::fs::write(&file, flooded(&key, 150, 10 + i as u32)).unwrap();
        let o = gpg(&home, &["--import", file.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let (report, _) = doctor(&home, &["--quick"]);
    let f = one(&report, "unknown-signers");
    assert!(f["evidence"]["unknown_signers"].as_u64().unwrap() >= 600, "{f}");
    let real = copy_home(&home, "real");
    let before = missing_keys(&gpg(&real, &["--check-sigs"]));
    assert_eq!(
        before,
        f["evidence"]["unknown_signers"].as_u64().unwrap(),
        "gpg misses as many signers as doctor counts"
    );
    let (report, _) = doctor(&real, &["--quick"]);
    apply(&one(&report, "unknown-signers")["fix"]);
    stop_gnupg_daemons(&real);
    assert_eq!(missing_keys(&gpg(&real, &["--check-sigs"])), 0);
    let (report, _) = doctor(&real, &["--quick"]);
    assert!(findings(&report, "unknown-signers").is_empty(), "{report:#}");
}

/// A keybox of over 1 MiB whose maintenance stamp is old and which has
/// nothing to drop: gpg copies it at every start (strace sees the copy
/// made and removed, twice in two runs); doctor's command (for a user
/// other than root: root writes anyway) stops that.
fn an_old_maintenance_stamp() {
    let Some(setpriv) = tool("setpriv", "doctor::an_old_maintenance_stamp") else { return };
    // In /tmp, which every user may enter (the user's TMPDIR may be
    // private to them).
    let dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    set_mode(dir.path(), 0o755);
    let home = home_with(dir.path(), "home", "gnupg-mixed");
    let (_, key) = exported_key(dir.path());
    let flood = dir.path().join("flood.gpg");
    // Grown past 1 MiB with signatures gpg keeps.
    std::fs::write(&flood, flooded(&key, 1_800, 3)).unwrap();
    assert!(gpg(&home, &["--import", flood.to_str().unwrap()]).status.success());
    // A stamp from 2020 (the import left the header as it was).
    let mut kbx = std::fs::read(home.join("pubring.kbx")).unwrap();
    kbx[20..24].copy_from_slice(&1_600_000_000u32.to_be_bytes());
    std::fs::write(home.join("pubring.kbx"), &kbx).unwrap();
    let chown = Command::new("chown").args(["-R", "65534:65534"]).arg(dir.path()).output().unwrap();
    assert!(chown.status.success());
    let as_nobody = |program: &Path, args: &[&str]| {
        Command::new(&setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(program)
            .args(args)
            .env("HOME", dir.path())
            .output()
            .unwrap()
    };
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_kbxscope"));
    let o = as_nobody(&bin, &["--gnupg-version", "2.2", "doctor", "--quick", "--json", home.to_str().unwrap()]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let f = one(&report, "maintenance-pass");
    assert_eq!(f["evidence"]["every_start"], true);
    assert_eq!(f["evidence"]["bytes_copied"].as_u64(), Some(kbx.len() as u64));
    // gpg copies it at every start.
    let copies = |home: &Path| {
        let log = home.with_extension("strace");
        let args = [
            "-f",
            "-o",
            log.to_str().unwrap(),
            "-e",
            "trace=openat,unlink",
            "gpg",
            "--homedir",
            home.to_str().unwrap(),
            "--batch",
            "-k",
        ];
        for _ in 0..2 {
            let o = as_nobody(Path::new("/usr/bin/strace"), &args);
            assert!(o.status.success(), "{}", stderr(&o));
            let text = std::fs::read_to_string(&log).unwrap();
            let made = text.lines().filter(|l| l.contains("pubring.kbx.tmp") && l.contains("O_CREAT")).count();
            if made == 0 {
                return false;
            }
        }
        true
    };
    assert!(copies(&home.clone()), "gpg did not copy the keybox at each start");
    let fix = f["fix"].as_str().expect("a fix for a user other than root");
    let o = as_nobody(Path::new("/bin/sh"), &["-c", fix]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!copies(&home), "gpg still copies the keybox after '{fix}'");
}

/// A legacy pubring.gpg beside a keybox gpg uses: its keys are out of
/// gpg's sight.
fn a_second_store_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (fpr, key) = exported_key(dir.path());
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    set_mode(&home, 0o700);
    // A keybox gpg wrote, and an old keyring with a key it lacks.
    std::fs::copy(fixture("gnupg-deleted.kbx"), home.join("pubring.kbx")).unwrap();
    std::fs::write(home.join("pubring.gpg"), &key).unwrap();
    let (report, _) = doctor(&home, &["--quick"]);
    assert_eq!(report["stores"][0]["path"].as_str(), home.join("pubring.kbx").to_str());
    let left = one(&report, "second-store")["evidence"]["path"].as_str().unwrap().to_string();
    assert_eq!(Some(left.as_str()), home.join("pubring.gpg").to_str());
    // gpg reads the keybox (marked for OpenPGP), and the key only the
    // keyring left behind holds is out of its sight.
    assert!(!stdout_of(&gpg(&home, &["--with-colons", "--list-keys"])).contains(&fpr));
    let o = gpg(&home, &["--no-default-keyring", "--keyring", &left, "--with-colons", "--list-keys"]);
    assert!(stdout_of(&o).contains(&fpr), "{}", stderr(&o));
}

/// A trust database whose check is pending (an owner trust imported):
/// doctor says how many user ids' validity the check will change, and
/// gpg's check changes that many; gpg's next listing says "checking the
/// trustdb"; after doctor's command it does not, and doctor finds nothing
/// more.
fn a_trust_database_check_due() {
    let dir = tempfile::tempdir().unwrap();
    let (fpr, _) = exported_key(dir.path());
    let home = home_with(dir.path(), "home", "gnupg-mixed");
    let trust = dir.path().join("ownertrust.txt");
    std::fs::write(&trust, format!("{fpr}:6:\n")).unwrap();
    assert!(gpg(&home, &["--import-ownertrust", trust.to_str().unwrap()]).status.success());
    let (report, _) = doctor(&home, &["--quick"]);
    let f = one(&report, "trustdb-check-due");
    assert_eq!(f["evidence"]["next_check"].as_u64(), Some(1));
    assert_eq!(report["trust"]["check_due"], true);
    // The full report says what the check will change; gpg's check then
    // changes just that many user ids' validity.
    let (full, _) = doctor(&home, &[]);
    let changes = one(&full, "trustdb-check-due")["evidence"]["check"]["changes"].as_u64().expect("computed");
    let real = copy_home(&home, "real");
    assert!(stderr(&gpg(&real, &["-k"])).contains("checking the trustdb"));
    let validities = |h: &Path| -> Vec<String> {
        let o = run(["--gnupg-version", "2.2", "trustdb", "--check", "--json", h.to_str().unwrap()]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["user_ids"].as_array().unwrap().iter().map(|r| r["stored"]["validity"].to_string()).collect()
    };
    let (before, after) = (validities(&home), validities(&real));
    let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count() as u64;
    assert!(changed > 0);
    assert_eq!(changes, changed, "user ids whose validity gpg's check changed");
    let fixed = copy_home(&home, "fixed");
    let (report, _) = doctor(&fixed, &["--quick"]);
    let fix = &one(&report, "trustdb-check-due")["fix"];
    apply(fix);
    stop_gnupg_daemons(&fixed);
    let err = stderr(&gpg(&fixed, &["-k"]));
    assert!(!err.contains("checking the trustdb"), "after {fix}: {err}");
    let (report, _) = doctor(&fixed, &["--quick"]);
    assert!(findings(&report, "trustdb-check-due").is_empty(), "{report:#}");
}

/// A home others may read: gpg warns, doctor says so, its chmod silences it.
fn unsafe_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with(dir.path(), "home", "gnupg-mixed");
    set_mode(&home, 0o755);
    let (report, _) = doctor(&home, &["--quick"]);
    let f = one(&report, "unsafe-permissions");
    assert_eq!(f["evidence"]["mode"], "0755");
    assert!(stderr(&gpg(&home, &["-k"])).contains("unsafe permissions on homedir"));
    apply(&f["fix"]);
    assert!(!stderr(&gpg(&home, &["-k"])).contains("unsafe permissions"));
}

/// GnuPG 2.4.7 (the Debian 13 chroot named by `KBXSCOPE_GNUPG24_CHROOT`,
/// optional): a keyboxd home (`use-keyboxd` in common.conf, the keys
/// imported by gpg through keyboxd) whose database lock another host
/// wrote. doctor finds the store from common.conf, weighs the database,
/// calls the lock stale; gpg 2.4.7 waits for it ("waiting for lock") and
/// lists the keys once the fix removed it.
fn a_keyboxd_lock_with_gnupg24() {
    let Some(chroot) = std::env::var_os("KBXSCOPE_GNUPG24_CHROOT").map(PathBuf::from) else {
        eprintln!("SKIPPED a_keyboxd_lock_with_gnupg24: KBXSCOPE_GNUPG24_CHROOT is not set (optional)");
        return;
    };
    assert!(chroot.join("proc/self/stat").exists(), "{}/proc is not mounted", chroot.display());
    let dir = tempfile::tempdir().unwrap();
    let (fpr, key) = exported_key(dir.path());
    let inner = format!("/tmp/kbxscope-doctor-{}", std::process::id());
    let outer = chroot.join(inner.trim_start_matches('/'));
    let _ = std::fs::remove_dir_all(&outer);
    std::fs::create_dir_all(outer.join("home")).unwrap();
    set_mode(&outer.join("home"), 0o700);
    std::fs::write(outer.join("home/common.conf"), "use-keyboxd\n").unwrap();
    std::fs::write(outer.join("key.gpg"), key).unwrap();
    let home = format!("{inner}/home");
    let in_chroot = |args: &[&str]| Command::new("chroot").arg(&chroot).args(args).output().unwrap();
    let stop = || {
        let _ = in_chroot(&["gpgconf", "--homedir", &home, "--kill", "all"]);
    };
    let o = in_chroot(&["gpg", "--homedir", &home, "--batch", "--import", &format!("{inner}/key.gpg")]);
    stop();
    assert!(o.status.success(), "{}", stderr(&o));
    let outer_home = outer.join("home");
    let lock = outer_home.join("public-keys.d/pubring.db.lock");
    write_lock(&lock, 4_000_000, "buildkitsandbox");
    let before = snapshot(&outer_home);
    let o = run(["--gnupg-version", "2.4", "doctor", "--json", outer_home.to_str().unwrap()]);
    assert_eq!(snapshot(&outer_home), before, "doctor changed the home");
    let report: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    assert_eq!(report["stores"][0]["kind"], "keyboxd");
    assert_eq!(report["stores"][0]["decided_by"], "common.conf:1: use-keyboxd");
    assert_eq!(report["health"]["blobs"]["openpgp"].as_u64(), Some(1), "{report:#}");
    let f = one(&report, "stale-lock");
    assert_eq!(f["evidence"]["path"].as_str(), lock.to_str());
    // gpg 2.4.7 waits for it.
    let child = Command::new("chroot")
        .arg(&chroot)
        .args(["gpg", "--homedir", &home, "--batch", "--with-colons", "-k"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    waits_for_lock(child, 4_000_000);
    stop();
    apply(&f["fix"]);
    let o = in_chroot(&["gpg", "--homedir", &home, "--batch", "--with-colons", "-k"]);
    stop();
    let _ = std::fs::remove_dir_all(&outer);
    assert!(o.status.success() && stdout_of(&o).contains(&fpr), "{}", stderr(&o));
}

/// GnuPG 2.4.7 (the chroot, optional): a home whose keybox (gen's
/// `small`, 5 MiB) doctor finds faster as keyboxd's database; its command,
/// run by gpg and gpgsm 2.4.7 in the chroot, moves every key and
/// certificate into keyboxd (gpg and gpgsm then list as many), and doctor
/// then finds the home on keyboxd with nothing more to move.
fn moving_to_keyboxd_with_gnupg24() {
    let Some((chroot, inner, outer)) = crate::common::gnupg24_dir("moving_to_keyboxd_with_gnupg24", "doctor-move")
    else {
        return;
    };
    let home = outer.join("home");
    std::fs::create_dir(&home).unwrap();
    set_mode(&home, 0o700);
    let o = run(["gen", "--preset", "small", home.join("pubring.kbx").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::rename(home.join("pubring.kbx.trustlist.txt"), home.join("trustlist.txt")).unwrap();
    let (report, _) = doctor24(&home);
    let f = one(&report, "keybox-vs-keyboxd");
    assert!(f["saving_seconds"].as_f64().unwrap() > 0.0);
    let (keys, certs) =
        (report["health"]["blobs"]["openpgp"].as_u64().unwrap(), report["health"]["blobs"]["x509"].as_u64().unwrap());
    let inner_home = format!("{inner}/home");
    let fix = f["fix"].as_str().unwrap().replace(home.to_str().unwrap(), &inner_home);
    let in_chroot = |args: &[&str]| Command::new("chroot").arg(&chroot).args(args).output().unwrap();
    let o = in_chroot(&["sh", "-c", &fix]);
    let listed = |program: &str, prefix: &str| {
        let o = in_chroot(&[program, "--homedir", &inner_home, "--batch", "--with-colons", "--list-keys"]);
        String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.starts_with(prefix)).count() as u64
    };
    let (gpg_keys, gpgsm_certs) = (listed("gpg", "pub:"), listed("gpgsm", "crt:"));
    let _ = in_chroot(&["gpgconf", "--homedir", &inner_home, "--kill", "all"]);
    assert!(o.status.success(), "{fix}: {}", stderr(&o));
    assert!(home.join("public-keys.d/pubring.db").exists() && !home.join("pubring.kbx").exists());
    assert_eq!((gpg_keys, gpgsm_certs), (keys, certs), "gpg and gpgsm 2.4.7 list through keyboxd what the keybox held");
    let (report, _) = doctor24(&home);
    let _ = std::fs::remove_dir_all(&outer);
    assert_eq!(report["stores"][0]["kind"], "keyboxd");
    assert!(findings(&report, "keybox-vs-keyboxd").is_empty(), "{report:#}");
}

/// `doctor --json HOME` as GnuPG 2.4 judges (the home unchanged).
fn doctor24(home: &Path) -> (Value, Option<i32>) {
    let before = snapshot(home);
    let o = run(["--gnupg-version", "2.4", "doctor", "--json", home.to_str().unwrap()]);
    assert_eq!(snapshot(home), before, "doctor changed the home");
    (serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o))), o.status.code())
}

/// A gpg-agent and a dirmngr started for a home: doctor names them, with
/// the sockets gpgconf says they serve; no finding comes of them.
fn the_daemons_serving_a_home() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with(dir.path(), "home", "gnupg-mixed");
    let gpgconf = |args: &[&str]| Command::new("gpgconf").arg("--homedir").arg(&home).args(args).output().unwrap();
    for daemon in ["gpg-agent", "dirmngr"] {
        assert!(gpgconf(&["--launch", daemon]).status.success());
    }
    let socket = String::from_utf8_lossy(&gpgconf(&["--list-dirs", "agent-socket"]).stdout).trim().to_string();
    let (report, _) = doctor(&home, &["--quick"]);
    stop_gnupg_daemons(&home);
    let daemons = report["daemons"].as_array().unwrap();
    let programs: Vec<&str> = daemons.iter().filter_map(|d| d["program"].as_str()).collect();
    assert_eq!(programs.len(), 2, "{report:#}");
    assert!(programs.contains(&"gpg-agent") && programs.contains(&"dirmngr"), "{programs:?}");
    let agent = daemons.iter().find(|d| d["program"] == "gpg-agent").unwrap();
    assert_eq!(agent["socket"].as_str(), Some(socket.as_str()));
}

/// The fixture as GnuPG made it (a keybox under 1 MiB, so its old stamp
/// costs next to nothing): nothing found, exit 0.
fn a_healthy_home_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with(dir.path(), "home", "gnupg-mixed");
    let (report, code) = doctor(&home, &[]);
    assert_eq!(code, Some(0), "{report:#}");
    assert!(report["findings"].as_array().unwrap().is_empty());
    assert_eq!(report["health"]["blobs"]["openpgp"].as_u64(), Some(20));
    assert_eq!(report["stores"][0]["kind"], "keybox");
    // Text for people: one screen.
    let o = run(["--gnupg-version", "2.2", "doctor", home.to_str().unwrap()]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("No problems found.") && text.lines().count() < 24, "{text}");
}

/// A home that does not exist, a file given as a home, a home without a
/// store, a keybox that is a symlink loop: one line or a finding.
fn homes_that_cannot_be_examined() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let o = run(["doctor", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot read the GnuPG home") && err.contains("nowhere"), "{err}");
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let o = run(["doctor", file.to_str().unwrap()]);
    assert_eq!((o.status.code(), stderr(&o).lines().count()), (Some(1), 1), "{}", stderr(&o));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    set_mode(&empty, 0o700);
    let (report, _) = doctor(&empty, &[]);
    one(&report, "no-store");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("pubring.kbx", empty.join("pubring.kbx")).unwrap();
        let (report, code) = doctor(&empty, &[]);
        assert_eq!(code, Some(1));
        assert!(!report["findings"].as_array().unwrap().is_empty(), "{report:#}");
    }
}
