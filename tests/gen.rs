//! `gen`: determinism, safe writing, and GnuPG's own tools on what it writes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{run, stderr, stdout};

/// Generate a keybox with `args` into a fresh directory; returns (dir, path).
fn gen(args: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen.kbx");
    let mut full = vec!["gen", out.to_str().unwrap()];
    full.extend_from_slice(args);
    let o = run(&full);
    assert!(o.status.success(), "gen {args:?}: {}", stderr(&o));
    (dir, out)
}

fn trustlist(kbx: &Path) -> PathBuf {
    PathBuf::from(format!("{}.trustlist.txt", kbx.display()))
}

fn same_options_same_bytes() {
    let (_a, a) = gen(&["--preset", "tiny"]);
    let (_b, b) = gen(&["--preset", "tiny", "--seed", "1"]);
    let (_c, c) = gen(&["--preset", "tiny", "--seed", "2"]);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(std::fs::read(trustlist(&a)).unwrap(), std::fs::read(trustlist(&b)).unwrap());
    assert_ne!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap());
}

fn explicit_counts_and_size() {
    let (_d, p) = gen(&["--openpgp", "7", "--x509", "5", "--size", "300k", "--seed", "3"]);
    let o = run(["stats", "--json", p.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["openpgp"].as_u64(), v["x509"].as_u64(), v["header"].as_u64()), (Some(7), Some(5), Some(1)));
    let size = std::fs::metadata(&p).unwrap().len() as f64;
    assert!((size - 300.0 * 1024.0).abs() / (300.0 * 1024.0) < 0.03, "size {size}");
}

fn refuses_to_overwrite_and_leaves_nothing_on_failure() {
    let (dir, p) = gen(&["--preset", "tiny"]);
    let before = std::fs::read(&p).unwrap();
    let o = run(["gen", p.to_str().unwrap(), "--preset", "tiny", "--seed", "9"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("exists; not replacing it (use --force"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&p).unwrap(), before);
    // the trustlist alone existing also stops it
    let lone = dir.path().join("lone.kbx");
    std::fs::write(trustlist(&lone), "x").unwrap();
    let o = run(["gen", lone.to_str().unwrap(), "--preset", "tiny"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!lone.exists());
    let o = run(["gen", p.to_str().unwrap(), "--preset", "tiny", "--seed", "9", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(std::fs::read(&p).unwrap(), before);
    // a directory that does not exist: an error and no file
    let nowhere = dir.path().join("no/such/dir/out.kbx");
    let o = run(["gen", nowhere.to_str().unwrap(), "--preset", "tiny"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!nowhere.exists());
    let names: BTreeSet<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.contains(".tmp")), "temporary files left: {names:?}");
}

/// When to SIGKILL a running `gen`.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    /// As soon as it is spawned.
    AtOnce,
    /// When its temporary output file appears in the directory.
    TempAppears,
    /// When its temporary output file has bytes in it.
    TempHasBytes,
}

/// The temporary file `gen` writes `out` through (`.NAME.XXXX.tmp`), if any.
fn temp_of(out: &Path) -> Option<std::path::PathBuf> {
    let prefix = format!(".{}.", out.file_name()?.to_string_lossy());
    std::fs::read_dir(out.parent()?)
        .ok()?
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
}

/// SIGKILL a whole generation at moments the test observes (no timed
/// sleeps): at once, when the temporary file appears, when it has bytes.
/// The output is always absent or complete, never partial, and some kills
/// must have landed mid-write (the temporary file there, the output not).
fn killed_gen_leaves_all_or_nothing() {
    let (_d, reference) = gen(&["--preset", "small"]);
    let whole = std::fs::read(&reference).unwrap();
    let whole_trust = std::fs::read(trustlist(&reference)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (mut mid_write, mut complete, mut absent) = (0, 0, 0);
    for round in 0..3 {
        for trigger in [Trigger::AtOnce, Trigger::TempAppears, Trigger::TempHasBytes] {
            let out = dir.path().join(format!("k{round}-{trigger:?}.kbx"));
            let mut child =
                crate::common::quiet(crate::common::bin().args(["gen", out.to_str().unwrap(), "--preset", "small"]))
                    .spawn()
                    .unwrap();
            // Watch the directory until the trigger fires or gen finishes.
            loop {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                let fire = match trigger {
                    Trigger::AtOnce => true,
                    Trigger::TempAppears => temp_of(&out).is_some(),
                    Trigger::TempHasBytes => {
                        temp_of(&out).and_then(|t| std::fs::metadata(t).ok()).is_some_and(|m| m.len() > 0)
                    }
                };
                if fire {
                    let _ = child.kill();
                    if temp_of(&out).is_some() && !out.exists() {
                        mid_write += 1;
                    }
                    break;
                }
                std::thread::yield_now();
            }
            child.wait().unwrap();
            match std::fs::read(&out) {
                Ok(bytes) => {
                    assert_eq!(bytes, whole, "{trigger:?}: a partial keybox");
                    complete += 1;
                }
                Err(_) => absent += 1,
            }
            if let Ok(t) = std::fs::read(trustlist(&out)) {
                assert_eq!(t, whole_trust, "{trigger:?}: a partial trustlist");
            }
        }
    }
    eprintln!(
        "killed {} times: {mid_write} mid-write; {absent} left no output, {complete} had finished",
        absent + complete
    );
    assert!(mid_write > 0, "no kill landed while the output was being written");
}

fn the_default_keybox_comes_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let name = kbxscope::generate::cache::default_keybox_name();
    let (_d, tiny) = gen(&["--preset", "tiny"]);
    std::fs::copy(&tiny, cache.path().join(&name)).unwrap();
    let o = crate::common::bin()
        .env("KBXSCOPE_CACHE_DIR", cache.path())
        .args(["--io-summary=json", "stats"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("using the built-in default keybox {}", cache.path().join(&name).display())));
    assert!(stdout(&o).starts_with("Total number of blobs:       37\n"), "{}", stdout(&o));
    let s = crate::common::io_summary(&o);
    assert_eq!(s["events"]["open"], 1);
    let o = crate::common::bin()
        .env("KBXSCOPE_CACHE_DIR", cache.path())
        .args(["find", "--json", "Root CA"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 1);
}

/// A temporary GnuPG home holding a copy of `kbx` as pubring.kbx and its trustlist.
fn gnupg_home(kbx: &Path) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::copy(kbx, home.path().join("pubring.kbx")).unwrap();
    std::fs::copy(trustlist(kbx), home.path().join("trustlist.txt")).unwrap();
    home
}

/// gpgsm's verdict per certificate fingerprint, from `gpgsm -k --with-validation`.
fn gpgsm_verdicts(home: &Path) -> Vec<(String, String)> {
    crate::common::gpgsm_text_verdicts(&crate::common::gpgsm_listing(home))
}

fn gnupg_accepts_and_validates_what_gen_writes() {
    for preset in ["tiny", "small"] {
        let (_d, kbx) = gen(&["--preset", preset]);
        // kbxutil agrees with kbxscope
        let ours = run(["stats", kbx.to_str().unwrap()]);
        let theirs = Command::new("kbxutil").args(["--stats", kbx.to_str().unwrap()]).output().unwrap();
        assert_eq!(ours.stdout, theirs.stdout, "{preset}: stats");
        // what kbxscope reads from the file
        let listed: Vec<serde_json::Value> = stdout(&run(["list", "--json", kbx.to_str().unwrap()]))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let now = kbxscope::timefmt::rfc3339(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64,
        );
        // gpgsm: all good except the planned missing-issuer and expired ones
        let home = gnupg_home(&kbx);
        let verdicts = gpgsm_verdicts(home.path());
        let certs: Vec<&serde_json::Value> = listed.iter().filter(|k| k["type"] == "x509").collect();
        assert_eq!(verdicts.len(), certs.len(), "{preset}: one verdict per certificate");
        let mut bad = 0;
        for c in certs {
            let fpr = c["fingerprint"].as_str().unwrap();
            let verdict =
                &verdicts.iter().find(|(f, _)| f == fpr).unwrap_or_else(|| panic!("{preset}: no verdict for {fpr}")).1;
            let want = if c["issuer"].as_str().unwrap().contains("Omega Unknown") {
                "bad: Missing issuer certificate"
            } else if c["not_after"].as_str().unwrap() < now.as_str() {
                "bad: Certificate expired"
            } else {
                "good"
            };
            assert_eq!(verdict, want, "{preset}: {fpr} {}", c["subject"]);
            bad += usize::from(want != "good");
        }
        assert!(bad >= 2, "{preset}: the plan has missing-issuer and expired certificates");
        // gpg lists every OpenPGP key and user id
        let home = gnupg_home(&kbx);
        let o = Command::new("gpg")
            .args([
                "--homedir",
                home.path().to_str().unwrap(),
                "--batch",
                "--with-colons",
                "--fixed-list-mode",
                "--list-keys",
            ])
            .output()
            .unwrap();
        let colons = String::from_utf8_lossy(&o.stdout);
        let fprs: BTreeSet<&str> =
            colons.lines().filter(|l| l.starts_with("fpr:")).filter_map(|l| l.split(':').nth(9)).collect();
        let uids: BTreeSet<String> = colons
            .lines()
            .filter(|l| l.starts_with("uid:"))
            .filter_map(|l| l.split(':').nth(9))
            .map(|u| u.replace("\\x3a", ":"))
            .collect();
        let keys: Vec<&serde_json::Value> = listed.iter().filter(|k| k["type"] == "openpgp").collect();
        assert!(keys.len() >= 20);
        for k in keys {
            assert!(
                fprs.contains(k["fingerprint"].as_str().unwrap()),
                "{preset}: gpg does not list {}",
                k["fingerprint"]
            );
            for s in k["subkeys"].as_array().unwrap() {
                assert!(fprs.contains(s["fingerprint"].as_str().unwrap()));
            }
            for u in k["user_ids"].as_array().unwrap() {
                assert!(uids.contains(u.as_str().unwrap()), "{preset}: gpg does not list {u}");
            }
        }
        crate::common::stop_gnupg_daemons(home.path());
    }
}

crate::tests![
    same_options_same_bytes,
    explicit_counts_and_size,
    refuses_to_overwrite_and_leaves_nothing_on_failure,
    the_default_keybox_comes_from_the_cache,
    gnupg_accepts_and_validates_what_gen_writes needs ["gpgsm", "gpg", "kbxutil"],
    killed_gen_leaves_all_or_nothing,
];
