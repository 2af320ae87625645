//! Real keyrings that no one here made, from Debian's packages
//! (`archlinux-keyring`, `debian-archive-keyring`), imported into a keybox
//! by the real gpg: kbxscope lists every key's user ids and subkeys in the
//! order `gpg -k` lists them (the primary user id first, as gpg's
//! `reorder_keyblock` puts it; GnuPG 2.2 and 2.4 choose it alike), and
//! every key's signatures in the order `gpg --check-sigs` lists them, each
//! with the status the machine's gpg gives it.
//!
//! And `tests/fixtures/real/debian-subset.kbx`, 24 keys of Debian's
//! developer keyring that tell GnuPG 2.2 and 2.4 apart (SHA-1
//! certifications, expired signers), with what gpg 2.2.40 and 2.4.7
//! printed for it and the calls strace counted them making
//! (`make-debian-subset.sh`): `--gnupg-version 2.2|2.4` gives each
//! signature the status that version gave, and makes the same calls.
//!
//! And `tests/fixtures/real/ca-certificates.kbx`, Debian's CA bundle
//! imported by gpgsm 2.4.7, with what gpgsm 2.2.40 and 2.4.7 said of each
//! certificate with and without a trustlist (`make-ca-certificates.sh`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::run;

/// The keyrings, as the packages install them.
const KEYRINGS: [&str; 2] = ["/usr/share/keyrings/archlinux.gpg", "/usr/share/keyrings/debian-archive-keyring.gpg"];

/// A fresh GNUPGHOME with `keyring` imported by gpg into its pubring.kbx.
fn imported(keyring: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("temp dir");
    let o = Command::new("gpg")
        .args(["--homedir", home.path().to_str().unwrap(), "--batch", "--quiet", "--import", keyring])
        .output()
        .expect("run gpg");
    assert!(o.status.success(), "gpg --import {keyring}: {}", String::from_utf8_lossy(&o.stderr));
    home
}

/// (user ids, subkey fingerprints) per primary fingerprint, as
/// `gpg -k --with-colons` lists them (`\xNN` escapes undone).
fn gpg_order(home: &Path) -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    let o = Command::new("gpg")
        .args(["--homedir", home.to_str().unwrap(), "--batch", "--with-colons", "--fixed-list-mode", "-k"])
        .output()
        .expect("run gpg");
    let text = String::from_utf8_lossy(&o.stdout);
    let mut out = BTreeMap::new();
    let (mut fpr, mut uids, mut subs) = (None::<String>, Vec::new(), Vec::new());
    let mut in_sub = false;
    for line in text.lines() {
        let f: Vec<&str> = line.split(':').collect();
        match f[0] {
            "pub" => {
                if let Some(p) = fpr.take() {
                    out.insert(p, (std::mem::take(&mut uids), std::mem::take(&mut subs)));
                }
                in_sub = false;
            }
            "fpr" if in_sub => subs.push(f[9].to_string()),
            "fpr" if fpr.is_none() => fpr = Some(f[9].to_string()),
            "uid" => uids.push(unescape(f[9])),
            "sub" => in_sub = true,
            _ => {}
        }
    }
    if let Some(p) = fpr {
        out.insert(p, (uids, subs));
    }
    out
}

/// gpg's `\xNN` escapes in a colon listing's field.
fn unescape(s: &str) -> String {
    let mut bytes = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1] == b'x' {
            if let Ok(v) = u8::from_str_radix(&s[i + 2..i + 4], 16) {
                bytes.push(v);
                i += 4;
                continue;
            }
        }
        bytes.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The same from `kbxscope list --json --type openpgp`.
fn kbxscope_order(keybox: &Path) -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    let o = run(["list", "--json", "--type", "openpgp", keybox.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let strings = |a: &serde_json::Value| -> Vec<String> {
                a.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
            };
            let subs = v["subkeys"].as_array().unwrap().iter().map(|s| s["fingerprint"].as_str().unwrap().to_string());
            (v["fingerprint"].as_str().unwrap().to_string(), (strings(&v["user_ids"]), subs.collect()))
        })
        .collect()
}

/// Every key of every keyring listed with its user ids and subkeys in
/// gpg's order.
fn listing_order_equals_gpg_on_real_keyrings() {
    for keyring in KEYRINGS {
        let home = imported(keyring);
        let theirs = gpg_order(home.path());
        let ours = kbxscope_order(&home.path().join("pubring.kbx"));
        assert!(theirs.len() >= 5, "{keyring}: gpg listed {} keys", theirs.len());
        assert_eq!(ours.len(), theirs.len(), "{keyring}: keys listed");
        let reordered = theirs.values().filter(|(uids, _)| uids.len() > 1).count();
        for (fpr, want) in &theirs {
            assert_eq!(ours.get(fpr), Some(want), "{keyring}: key {fpr}");
        }
        eprintln!("{keyring}: {} keys, {reordered} with several user ids, all in gpg's order", theirs.len());
    }
}

/// A key's signatures: (signer key id, class, mark) in order.
type Sigs = Vec<(String, String, String)>;

/// The time the live listings are made at (gpg's `--faked-system-time`,
/// kbxscope's `--at`), so that both judge expiry alike.
const LIVE_AT: (&str, &str) = ("20261201T000000!", "2026-12-01");

/// Each key's signatures, in order, as `gpg --check-sigs --with-colons`
/// lists them at [`LIVE_AT`].
fn gpg_signature_order(home: &Path) -> BTreeMap<String, Sigs> {
    let o = Command::new("gpg")
        .args(["--homedir", home.to_str().unwrap(), "--batch", "--faked-system-time", LIVE_AT.0])
        .args(["--with-colons", "--check-sigs"])
        .output()
        .expect("run gpg");
    colon_signatures(&String::from_utf8_lossy(&o.stdout))
}

/// Each key's signatures in a colon listing (`sig` and `rev` lines, by
/// primary fingerprint).
fn colon_signatures(text: &str) -> BTreeMap<String, Sigs> {
    let mut out = BTreeMap::new();
    let (mut fpr, mut sigs, mut want_fpr) = (None::<String>, Vec::new(), false);
    for line in text.lines() {
        let f: Vec<&str> = line.split(':').collect();
        match f[0] {
            "pub" => {
                if let Some(p) = fpr.take() {
                    out.insert(p, std::mem::take(&mut sigs));
                }
                want_fpr = true;
            }
            "fpr" if want_fpr => {
                fpr = Some(f[9].to_string());
                want_fpr = false;
            }
            "sig" | "rev" => sigs.push((f[4].to_string(), f[10].to_string(), f[1].to_string())),
            _ => {}
        }
    }
    if let Some(p) = fpr {
        out.insert(p, sigs);
    }
    out
}

/// The same from `kbxscope [extra…] list --check-sigs --json --at AT
/// --lookup LOOKUP`, and the `--io-summary=json` events.
fn kbxscope_signatures(
    keybox: &Path,
    extra: &[&str],
    at: &str,
    lookup: &str,
) -> (BTreeMap<String, Sigs>, serde_json::Value) {
    kbxscope_listing(keybox, extra, "--check-sigs", at, lookup)
}

/// [`kbxscope_signatures`] with `--check-sigs` or `--with-sigs` (`mode`).
fn kbxscope_listing(
    keybox: &Path,
    extra: &[&str],
    mode: &str,
    at: &str,
    lookup: &str,
) -> (BTreeMap<String, Sigs>, serde_json::Value) {
    let mut args = extra.to_vec();
    args.extend(["--io-summary=json", "list", mode, "--json", "--at", at, "--lookup", lookup]);
    let o = run(args.iter().copied().chain([keybox.to_str().unwrap()]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sigs = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let sigs = v["signatures"].as_array().unwrap().iter().flat_map(|g| g["sigs"].as_array().unwrap().iter());
            let text = |s: &serde_json::Value, k: &str| s[k].as_str().unwrap().to_string();
            let mark = |s: &serde_json::Value| text(s, "mark").trim().to_string();
            let triples = sigs.map(|s| (text(s, "signer_key_id"), text(s, "class"), mark(s)));
            (v["fingerprint"].as_str().unwrap().to_string(), triples.collect())
        })
        .collect();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let summary = stderr.lines().rev().find_map(|l| serde_json::from_str(l).ok()).expect("an --io-summary line");
    (sigs, summary)
}

/// The GnuPG version (`2.2`, `2.4`) of the gpg on PATH.
fn machine_gpg_version() -> String {
    let o = Command::new("gpg").arg("--version").output().expect("run gpg");
    let first = String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or_default().to_string();
    let v = first.rsplit(' ').next().unwrap_or_default();
    v.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// Every key's signatures listed in `gpg --check-sigs`' order (the key's
/// own, then the primary user id's, the other user ids', the subkeys'),
/// each with the status the machine's gpg gives it, at the same time.
fn signature_order_equals_gpg_on_real_keyrings() {
    let version = machine_gpg_version();
    for keyring in KEYRINGS {
        let home = imported(keyring);
        let theirs = gpg_signature_order(home.path());
        let keybox = home.path().join("pubring.kbx");
        let (ours, _) = kbxscope_signatures(&keybox, &["--gnupg-version", &version], LIVE_AT.1, "gnupg");
        assert_eq!(ours.len(), theirs.len(), "{keyring}: keys listed");
        for (fpr, want) in &theirs {
            assert_eq!(ours.get(fpr), Some(want), "{keyring}: key {fpr}");
        }
        let n: usize = theirs.values().map(Vec::len).sum();
        eprintln!("{keyring}: {n} signatures on {} keys, all in gpg {version}'s order with its statuses", theirs.len());
    }
}

/// The same with gpg 2.4.7, live, where a Debian 13 chroot is given in
/// `KBXSCOPE_GNUPG24_CHROOT` (`/proc` mounted): each keyring imported by
/// that gpg, `--gnupg-version 2.4` gives every signature its status.
/// Optional in CI: without the chroot it says SKIPPED and checks nothing.
fn statuses_equal_live_gnupg24_on_real_keyrings() {
    let Some(chroot) = std::env::var_os("KBXSCOPE_GNUPG24_CHROOT").map(std::path::PathBuf::from) else {
        eprintln!(
            "SKIPPED statuses_equal_live_gnupg24_on_real_keyrings: KBXSCOPE_GNUPG24_CHROOT is not set (optional)"
        );
        return;
    };
    assert!(chroot.join("proc/self/stat").exists(), "{}/proc is not mounted", chroot.display());
    for keyring in KEYRINGS {
        let inner = format!("/tmp/kbxscope-real-{}", std::process::id());
        let outer = chroot.join(inner.trim_start_matches('/'));
        let _ = std::fs::remove_dir_all(&outer);
        std::fs::create_dir_all(&outer).unwrap();
        std::fs::copy(keyring, outer.join("keyring.gpg")).unwrap();
        let gpg = |args: &[&str]| {
            let mut all = vec!["gpg", "--homedir", &inner, "--batch", "--faked-system-time", LIVE_AT.0];
            all.extend_from_slice(args);
            Command::new("chroot").arg(&chroot).args(&all).output().expect("run gpg in the chroot")
        };
        let keyring_inside = format!("{inner}/keyring.gpg");
        let o = gpg(&["--quiet", "--import", &keyring_inside]);
        assert!(o.status.success(), "gpg 2.4 --import {keyring}: {}", String::from_utf8_lossy(&o.stderr));
        let theirs = colon_signatures(&String::from_utf8_lossy(&gpg(&["--with-colons", "--check-sigs"]).stdout));
        let copy = tempfile::tempdir().unwrap();
        std::fs::copy(outer.join("pubring.kbx"), copy.path().join("pubring.kbx")).unwrap();
        let _ = Command::new("chroot").arg(&chroot).args(["gpgconf", "--homedir", &inner, "--kill", "all"]).output();
        let _ = std::fs::remove_dir_all(&outer);
        let (ours, _) =
            kbxscope_signatures(&copy.path().join("pubring.kbx"), &["--gnupg-version", "2.4"], LIVE_AT.1, "gnupg");
        assert_eq!(ours.len(), theirs.len(), "{keyring}: keys listed");
        for (fpr, want) in &theirs {
            assert_eq!(ours.get(fpr), Some(want), "gpg 2.4.7, {keyring}: key {fpr}");
        }
        let n: usize = theirs.values().map(Vec::len).sum();
        eprintln!("{keyring}: {n} signatures, every status gpg 2.4.7's");
    }
}

/// The subset fixture's directory.
fn subset(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real").join(name)
}

/// What the subset's listings were made at (`make-debian-subset.sh`).
const SUBSET_AT: &str = "2026-12-01";

/// `--gnupg-version V` gives every signature of the subset the status gpg
/// V gave it (2.2.40 and 2.4.7), with either lookup, in `--check-sigs`
/// and `--with-sigs` (`gpg --list-sigs`); the two versions differ on it.
fn statuses_equal_each_gnupg_version_on_the_debian_subset() {
    let keybox = subset("debian-subset.kbx");
    let mut per_version = Vec::new();
    for (version, printed) in [("2.2", "2.2.40"), ("2.4", "2.4.7")] {
        for (listing, mode) in [("list-sigs", "--with-sigs"), ("check-sigs", "--check-sigs")] {
            let text = std::fs::read_to_string(subset(&format!("debian-subset.gpg-{printed}.{listing}"))).unwrap();
            let theirs = colon_signatures(&text);
            assert_eq!(theirs.len(), 24, "{printed} {listing}: keys");
            for lookup in ["gnupg", "index"] {
                let (ours, _) = kbxscope_listing(&keybox, &["--gnupg-version", version], mode, SUBSET_AT, lookup);
                assert_eq!(ours.len(), theirs.len(), "{version} {mode} {lookup}: keys listed");
                for (fpr, want) in &theirs {
                    assert_eq!(ours.get(fpr), Some(want), "{version} {mode} --lookup {lookup}: key {fpr}");
                }
            }
            if mode == "--check-sigs" {
                per_version.push(theirs);
            }
        }
    }
    let differ = per_version[0]
        .iter()
        .flat_map(|(fpr, a)| a.iter().zip(&per_version[1][fpr]))
        .filter(|(a, b)| a.2 != b.2)
        .count();
    assert!(differ > 100, "gpg 2.2.40 and 2.4.7 differ on {differ} statuses");
    eprintln!("debian-subset: {differ} statuses differ between gpg 2.2.40 and 2.4.7; kbxscope gives each version's");
}

/// gpg's human-readable listing without the keybox's name and its
/// underline, which only the plain listing prints.
fn without_title(text: &str) -> String {
    text.lines().skip(2).map(|l| format!("{l}\n")).collect()
}

/// kbxscope's text listings are gpg V's human-readable `-k`, `--check-sigs`
/// and `--list-sigs`, line for line, the user ids' validity column
/// included (no trust database: `[ unknown]`, `[ expired]`) (V = 2.2.40, 2.4.7: which user ids,
/// subkeys and signatures are shown, their order, flags and expiry notes,
/// `[self-signature]`), and its summary counts gpg's.
fn human_listings_equal_each_gnupg_version_on_the_debian_subset() {
    let keybox = subset("debian-subset.kbx");
    for (version, printed) in [("2.2", "2.2.40"), ("2.4", "2.4.7")] {
        for (listing, mode) in [("k", "--type=openpgp"), ("list-sigs", "--with-sigs"), ("check-sigs", "--check-sigs")] {
            let theirs =
                std::fs::read_to_string(subset(&format!("debian-subset.gpg-{printed}.{listing}.human"))).unwrap();
            let o = run(["--gnupg-version", version, "list", mode, "--at", SUBSET_AT, keybox.to_str().unwrap()]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let ours = String::from_utf8_lossy(&o.stdout);
            // The plain listing starts with the keybox's name and its
            // underline, as gpg's does.
            let ours = if listing == "k" {
                ours.lines().skip(2).map(|l| format!("{l}\n")).collect()
            } else {
                ours.into_owned()
            };
            let want = without_title(&theirs);
            let first = want.lines().zip(ours.lines()).position(|(a, b)| a != b);
            assert!(ours == want, "{version} {mode}: first difference at line {first:?}");
            if mode == "--check-sigs" {
                let summary =
                    std::fs::read_to_string(subset(&format!("debian-subset.gpg-{printed}.check-sigs.summary")));
                let want = summary.unwrap().replace("gpg: ", "kbxscope: ");
                assert_eq!(String::from_utf8_lossy(&o.stderr), want, "{version}: the summary");
            }
        }
    }
}

/// (sha1 fingerprint, verdict) of each certificate in gpgsm's
/// `-k --with-validation` (2.2 says `fingerprint:`, 2.4 `sha1 fpr:`).
fn gpgsm_verdicts(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut fpr = None;
    for line in text.lines().map(str::trim) {
        if let Some(f) = line.strip_prefix("fingerprint: ").or_else(|| line.strip_prefix("sha1 fpr: ")) {
            fpr = Some(f.replace(':', ""));
        }
        if let Some(v) = line.strip_prefix("[certificate is ") {
            out.insert(fpr.take().expect("a fingerprint before the verdict"), v.trim_end_matches(']').to_string());
        }
    }
    out
}

/// `--gnupg-version V list --with-validation` gives every root of Debian's
/// CA bundle gpgsm V's verdict (V = 2.2.40, 2.4.7), with and without a
/// trustlist, with every lookup.
fn ca_bundle_verdicts_equal_each_gpgsm_version() {
    let trustlist = subset("ca-certificates.trustlist.txt");
    // A copy of its own: kbxscope takes a trustlist next to a keybox
    // (`NAME.trustlist.txt`) when none is given.
    let alone = tempfile::tempdir().unwrap();
    let keybox = alone.path().join("ca-certificates.kbx");
    std::fs::copy(subset("ca-certificates.kbx"), &keybox).unwrap();
    for (version, printed) in [("2.2", "2.2.40"), ("2.4", "2.4.7")] {
        for trust in ["without", "with"] {
            let text = std::fs::read_to_string(subset(&format!("ca-certificates.gpgsm-{printed}.{trust}-trustlist")));
            let theirs = gpgsm_verdicts(&text.unwrap());
            assert_eq!(theirs.len(), 144, "gpgsm {printed} {trust} a trustlist");
            for lookup in ["gnupg", "index", "scan"] {
                let mut args =
                    vec!["--gnupg-version", version, "list", "--with-validation", "--json", "--at", SUBSET_AT];
                args.extend(["--lookup", lookup]);
                if trust == "with" {
                    args.extend(["--trustlist", trustlist.to_str().unwrap()]);
                }
                let o = run(args.iter().copied().chain([keybox.to_str().unwrap()]));
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                let ours: BTreeMap<String, String> = String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(|l| {
                        let v: serde_json::Value = serde_json::from_str(l).unwrap();
                        let verdict = match v["validation"]["reason"].as_str() {
                            None => "good".to_string(),
                            Some(r) => format!("bad: {r}"),
                        };
                        (v["fingerprint"].as_str().unwrap().to_string(), verdict)
                    })
                    .collect();
                assert_eq!(ours, theirs, "gpgsm {printed} {trust} a trustlist, --lookup {lookup}");
            }
        }
    }
}

/// `--lookup gnupg` opens, reads, seeks and closes the subset as often as
/// strace saw gpg 2.2.40 (8 KiB) and 2.4.7 (8 and 64 KiB) do it.
fn reads_equal_each_gnupg_version_on_the_debian_subset() {
    let counted = std::fs::read_to_string(subset("debian-subset.strace")).unwrap();
    let mut rows = 0;
    for line in counted.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let version = &f[0][..3];
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("pubring.kbx");
        std::fs::copy(subset("debian-subset.kbx"), &copy).unwrap();
        let extra = ["--gnupg-version", version, "--kbx-buffer-size", f[1]];
        let (_, summary) = kbxscope_signatures(&copy, &extra, SUBSET_AT, "gnupg");
        // The keybox's own row: gpg's start also writes beside it.
        let events = &crate::common::file_events(&summary, &copy);
        for (i, op) in ["open", "read", "seek", "close"].iter().enumerate() {
            let want: u64 = f[2 + i].parse().unwrap();
            assert_eq!(events[op].as_u64(), Some(want), "gpg {} at {} KiB: {op}", f[0], f[1]);
        }
        rows += 1;
    }
    assert_eq!(rows, 3);
}

crate::tests![
    statuses_equal_each_gnupg_version_on_the_debian_subset,
    reads_equal_each_gnupg_version_on_the_debian_subset,
    human_listings_equal_each_gnupg_version_on_the_debian_subset,
    ca_bundle_verdicts_equal_each_gpgsm_version,
    statuses_equal_live_gnupg24_on_real_keyrings needs ["/usr/share/keyrings/archlinux.gpg", "/usr/share/keyrings/debian-archive-keyring.gpg"],
    listing_order_equals_gpg_on_real_keyrings needs ["gpg", "/usr/share/keyrings/archlinux.gpg", "/usr/share/keyrings/debian-archive-keyring.gpg"],
    signature_order_equals_gpg_on_real_keyrings needs ["gpg", "/usr/share/keyrings/archlinux.gpg", "/usr/share/keyrings/debian-archive-keyring.gpg"],
];
