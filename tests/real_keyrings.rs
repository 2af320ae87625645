//! Real keyrings that no one here made, from Debian's packages
//! (`archlinux-keyring`, `debian-archive-keyring`), imported into a keybox
//! by the real gpg: kbxscope lists every key's user ids and subkeys in the
//! order `gpg -k` lists them (the primary user id first, as gpg's
//! `reorder_keyblock` puts it; GnuPG 2.2 and 2.4 choose it alike), and
//! every key's signatures in the order `gpg --check-sigs` lists them.

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

/// Each key's signatures (signer key id, class), in order, as `gpg
/// --check-sigs --with-colons` lists them.
fn gpg_signature_order(home: &Path) -> BTreeMap<String, Vec<(String, String)>> {
    let o = Command::new("gpg")
        .args(["--homedir", home.to_str().unwrap(), "--batch", "--with-colons", "--check-sigs"])
        .output()
        .expect("run gpg");
    let mut out = BTreeMap::new();
    let (mut fpr, mut sigs, mut want_fpr) = (None::<String>, Vec::new(), false);
    for line in String::from_utf8_lossy(&o.stdout).lines() {
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
            "sig" | "rev" => sigs.push((f[4].to_string(), f[10].to_string())),
            _ => {}
        }
    }
    if let Some(p) = fpr {
        out.insert(p, sigs);
    }
    out
}

/// The same from `kbxscope list --check-sigs --json`.
fn kbxscope_signature_order(keybox: &Path) -> BTreeMap<String, Vec<(String, String)>> {
    let o = run(["list", "--check-sigs", "--json", keybox.to_str().unwrap()]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let sigs = v["signatures"].as_array().unwrap().iter().flat_map(|g| g["sigs"].as_array().unwrap().iter());
            let pairs = sigs
                .map(|s| (s["signer_key_id"].as_str().unwrap().to_string(), s["class"].as_str().unwrap().to_string()));
            (v["fingerprint"].as_str().unwrap().to_string(), pairs.collect())
        })
        .collect()
}

/// Every key's signatures listed in `gpg --check-sigs`' order: the key's
/// own, then the primary user id's, the other user ids', the subkeys'.
fn signature_order_equals_gpg_on_real_keyrings() {
    for keyring in KEYRINGS {
        let home = imported(keyring);
        let theirs = gpg_signature_order(home.path());
        let ours = kbxscope_signature_order(&home.path().join("pubring.kbx"));
        assert_eq!(ours.len(), theirs.len(), "{keyring}: keys listed");
        for (fpr, want) in &theirs {
            assert_eq!(ours.get(fpr), Some(want), "{keyring}: key {fpr}");
        }
        let n: usize = theirs.values().map(Vec::len).sum();
        eprintln!("{keyring}: {n} signatures on {} keys, all in gpg's order", theirs.len());
    }
}

crate::tests![
    listing_order_equals_gpg_on_real_keyrings needs ["gpg", "/usr/share/keyrings/archlinux.gpg", "/usr/share/keyrings/debian-archive-keyring.gpg"],
    signature_order_equals_gpg_on_real_keyrings needs ["gpg", "/usr/share/keyrings/archlinux.gpg", "/usr/share/keyrings/debian-archive-keyring.gpg"],
];
