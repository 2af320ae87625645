//! `stats`, `dump`, `list` and `find` on the GnuPG-made fixtures, compared
//! with what GnuPG's own tools printed for them.

use std::collections::BTreeSet;

use crate::common::{fixture, io_summary, run, stderr, stdout, KEYBOXES};

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

fn stats_is_byte_identical_to_recorded_kbxutil() {
    for kbx in KEYBOXES {
        let o = run(["stats", fixture(&format!("{kbx}.kbx")).to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(o.stdout, read(&format!("{kbx}.kbxutil-stats.txt")), "{kbx}");
    }
}

fn stats_json_has_the_same_numbers() {
    let o = run(["stats", "--json", fixture("gnupg-deleted.kbx").to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["total"], 48);
    assert_eq!(v["header"], 1);
    assert_eq!(v["empty"], 2);
    assert_eq!(v["deleted_blobs"], 3);
    assert_eq!(v["openpgp"], 6);
    assert_eq!(v["x509"], 39);
    assert_eq!(v["non_flagged"], 45);
}

fn dump_is_byte_identical_to_recorded_kbxutil() {
    for kbx in KEYBOXES {
        let o = run(["dump", fixture(&format!("{kbx}.kbx")).to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let want = read(&format!("{kbx}.kbxutil-dump.txt"));
        if o.stdout != want {
            let (got, want) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&want));
            let first = got.lines().zip(want.lines()).position(|(a, b)| a != b);
            panic!("{kbx}: dump differs from kbxutil at line {first:?}");
        }
    }
}

/// Values of field `n` (1-based) of colon-listing lines starting with `tag:`.
fn colon_fields(text: &str, tag: &str, n: usize) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{tag}:")))
        .filter_map(|l| l.split(':').nth(n - 1).map(str::to_string))
        .filter(|v| !v.is_empty())
        .collect()
}

fn listed_json(kbx: &str) -> Vec<serde_json::Value> {
    let o = run(["list", "--json", fixture(&format!("{kbx}.kbx")).to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn list_has_every_fingerprint_and_user_id_gnupg_listed() {
    for kbx in KEYBOXES {
        let keys = listed_json(kbx);
        let mut fprs = BTreeSet::new();
        let mut uids = BTreeSet::new();
        for k in &keys {
            fprs.insert(k["fingerprint"].as_str().unwrap().to_string());
            for s in k["subkeys"].as_array().into_iter().flatten() {
                fprs.insert(s["fingerprint"].as_str().unwrap().to_string());
            }
            for u in k["user_ids"].as_array().into_iter().flatten() {
                uids.insert(u.as_str().unwrap().to_string());
            }
        }
        let gpg = String::from_utf8(read(&format!("{kbx}.gpg-k-colons.txt"))).unwrap();
        let gpgsm = String::from_utf8(read(&format!("{kbx}.gpgsm-k-colons.txt"))).unwrap();
        let want_fprs: Vec<String> =
            colon_fields(&gpg, "fpr", 10).into_iter().chain(colon_fields(&gpgsm, "fpr", 10)).collect();
        assert!(want_fprs.len() > 30, "{kbx}: too few fingerprints in the recorded listings");
        for f in &want_fprs {
            assert!(fprs.contains(f), "{kbx}: fingerprint {f} missing from list --json");
        }
        let want_uids: Vec<String> = colon_fields(&gpg, "uid", 10).into_iter().filter(|u| !u.contains('\\')).collect();
        assert!(!want_uids.is_empty());
        for u in &want_uids {
            assert!(uids.contains(u), "{kbx}: user id {u} missing");
        }
        let certs: Vec<_> = keys.iter().filter(|k| k["type"] == "x509").collect();
        assert_eq!(certs.len(), colon_fields(&gpgsm, "crt", 5).len(), "{kbx}: certificate count");
    }
}

fn list_x509_fields_match_gpgsm() {
    let keys = listed_json("gnupg-mixed");
    let root = keys.iter().find(|k| k["fingerprint"] == "98BCD9D96AD206EB811A467D5A41F0854969C897").unwrap();
    assert_eq!(root["serial"], "75566A8CA8F500DC7AF753816111B6F111BE34BE");
    assert_eq!(root["subject"], "CN=Alpha Trust Root CA 1,OU=Alpha Trust Root,O=Alpha Trust,C=DE");
    assert_eq!(root["issuer"], root["subject"]);
    assert_eq!(root["not_before"], "2026-11-30T07:17:58Z");
    assert_eq!(root["not_after"], "2046-11-25T07:17:58Z");
    assert_eq!(root["key_algorithm"], "rsa4096");
    assert_eq!(root["is_ca"], true);
    let ed = keys.iter().find(|k| k["fingerprint"] == "26A969FE5E2EAB2E5552D6C33259459D85592A97").unwrap();
    assert_eq!(ed["algorithm"], "ed25519");
    assert_eq!(ed["key_id"], "3259459D85592A97");
    assert_eq!(ed["usage"], "SC");
    assert_eq!(ed["subkeys"][0]["algorithm"], "cv25519");
}

fn list_type_filter() {
    let path = fixture("gnupg-mixed.kbx");
    let count = |t: &str| stdout(&run(["list", "--json", "--type", t, path.to_str().unwrap()])).lines().count();
    assert_eq!(count("openpgp"), 20);
    assert_eq!(count("x509"), 24);
    assert_eq!(count("all"), 44);
}

fn find(args: &[&str]) -> (i32, Vec<serde_json::Value>, String) {
    let path = fixture("gnupg-mixed.kbx");
    let mut full = vec!["find", "--json", path.to_str().unwrap()];
    full.extend_from_slice(args);
    let o = run(&full);
    let found = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (o.status.code().unwrap(), found, stderr(&o))
}

fn find_patterns() {
    let fpr_of = |args: &[&str]| {
        let (code, found, err) = find(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        found.iter().map(|k| k["fingerprint"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    let ed = "26A969FE5E2EAB2E5552D6C33259459D85592A97";
    assert_eq!(fpr_of(&[ed]), [ed]);
    assert_eq!(fpr_of(&["0x3259459D85592A97"]), [ed]);
    assert_eq!(fpr_of(&["85592A97"]), [ed]);
    // a subkey's id finds its primary key
    assert_eq!(fpr_of(&["4F8080950CA43B4A"]), [ed]);
    assert_eq!(fpr_of(&["<GRETA.weiss10008@bar.example>"]), [ed]);
    assert_eq!(fpr_of(&["=Greta Weiß <greta.weiss10008@uni-example.de>"]), [ed]);
    let root = "98BCD9D96AD206EB811A467D5A41F0854969C897";
    assert_eq!(fpr_of(&["98:BC:D9:D9:6A:D2:06:EB:81:1A:46:7D:5A:41:F0:85:49:69:C8:97"]), [root]);
    assert_eq!(fpr_of(&["0x4969C897"]), [root]);
    assert_eq!(fpr_of(&["/CN=Alpha Trust Root CA 1,OU=Alpha Trust Root,O=Alpha Trust,C=DE"]), [root]);
    assert_eq!(
        fpr_of(&[
            "#75566A8CA8F500DC7AF753816111B6F111BE34BE/CN=Alpha Trust Root CA 1,OU=Alpha Trust Root,O=Alpha Trust,C=DE"
        ]),
        [root]
    );
    assert_eq!(fpr_of(&["#75566a8ca8f500dc7af753816111b6f111be34be"]), [root]);
    // several patterns: any may match; first match only without --all
    assert_eq!(fpr_of(&[root, ed]).len(), 1);
    assert_eq!(fpr_of(&[root, ed, "--all"]).len(), 2);
    // substring search is case-insensitive and --all finds every Alpha Trust cert
    let alpha = fpr_of(&["alpha trust", "--all"]);
    assert!(alpha.len() > 3, "{alpha:?}");
    let (_, by_mail, _) = find(&["@BAR.example", "--all"]);
    assert!(by_mail.len() >= 2);
    for k in by_mail {
        let names = k.get("user_ids").or_else(|| k.get("emails")).and_then(|v| v.as_array()).unwrap();
        assert!(names.iter().any(|u| u.as_str().unwrap().contains("bar.example")), "{k}");
    }
}

fn find_without_match_fails_clearly() {
    let (code, found, err) = find(&["no such user"]);
    assert_eq!(code, 1);
    assert!(found.is_empty());
    assert!(err.contains("gnupg-mixed.kbx: no key matches 'no such user'"), "{err}");
    let (code, _, err) = find(&["<unterminated"]);
    assert_eq!(code, 2, "a pattern GnuPG rejects is a usage error");
    assert!(err.contains("invalid pattern '<unterminated'"), "{err}");
}

fn find_stops_at_the_first_match() {
    let path = fixture("gnupg-mixed.kbx");
    let arg = |a: &'static str| a.to_string();
    let args = |extra: &[&str]| {
        let mut v = vec![arg("--kbx-buffer-size=unbuffered"), arg("--io-summary=json"), arg("find")];
        v.push(path.to_str().unwrap().to_string());
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    // The first certificate is blob 1: two unbuffered reads (prefix, body) for blob 0 and 1.
    let first = io_summary(&run(args(&["0x704571A5"])));
    assert_eq!(first["events"]["read"], 4);
    let all = io_summary(&run(args(&["0x704571A5", "--all"])));
    // 45 blobs × 2 reads + 1 read finding the end of the file
    assert_eq!(all["events"]["read"], 45 * 2 + 1);
}

fn io_summary_counts_a_sequential_pass() {
    let path = fixture("gnupg-mixed.kbx");
    let size = std::fs::metadata(&path).unwrap().len();
    for (arg, bytes) in [("0", 8192u64), ("16", 16384), ("128", 131072), ("4096B", 4096), ("1M", 1 << 20)] {
        let o = run(["--io-summary=json", "--kbx-buffer-size", arg, "stats", path.to_str().unwrap()]);
        assert!(o.status.success());
        let s = io_summary(&o);
        assert_eq!(s["buffer_size"], bytes);
        assert_eq!(s["events"]["open"], 1);
        assert_eq!(s["events"]["close"], 1);
        assert_eq!(s["events"]["stat"], 1);
        assert_eq!(s["events"]["seek"], 0);
        assert_eq!(s["events"]["read"], size.div_ceil(bytes) + 1, "buffer {arg}");
        assert_eq!(s["events"]["total"], size.div_ceil(bytes) + 4);
        assert_eq!(s["bytes_read"], size);
        // two logical reads per blob (prefix, body) and one at the end
        assert_eq!(s["logical_reads"], 45 * 2 + 1);
        for op in ["open", "read", "close", "stat"] {
            assert!(s["time_ns"][op].as_u64().unwrap() > 0, "{op} has no time");
        }
    }
}

fn text_listing_looks_like_gnupg() {
    let o = run(["list", fixture("gnupg-mixed.kbx").to_str().unwrap()]);
    let text = stdout(&o);
    assert!(text.contains("pub   ed25519 2026-11-30 [SC]\n      26A969FE5E2EAB2E5552D6C33259459D85592A97\nuid           [ unknown] Dieter Núñez <greta.weiss10008@bar.example>\n"));
    assert!(text.contains("           ID: 0x4969C897\n          S/N: 75566A8CA8F500DC7AF753816111B6F111BE34BE\n"));
    assert!(text.contains("  fingerprint: 98:BC:D9:D9:6A:D2:06:EB:81:1A:46:7D:5A:41:F0:85:49:69:C8:97\n"));
}

/// `--help` of every command: the command's own options first, the global
/// ones under their own heading; each command described in plain words.
fn help_puts_global_options_under_their_own_heading() {
    use predicates::prelude::*;
    for command in ["stats", "dump", "list", "find", "gen", "sweep"] {
        let o = crate::common::cmd().args([command, "--help"]).assert().success().get_output().clone();
        let text = stdout(&o);
        let global = text.find("Global options:").unwrap_or_else(|| panic!("{command}: no global heading\n{text}"));
        let buffer = text.find("      --kbx-buffer-size <SIZE>").unwrap();
        assert!(buffer > global, "{command}: --kbx-buffer-size before the global heading\n{text}");
        assert!(!text.contains("seed's table"), "{command}: jargon first\n{text}");
    }
    crate::common::cmd()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("system call made on the keybox"))
        .stdout(predicate::str::contains("sweep"));
}

crate::tests![
    help_puts_global_options_under_their_own_heading,
    stats_is_byte_identical_to_recorded_kbxutil,
    stats_json_has_the_same_numbers,
    dump_is_byte_identical_to_recorded_kbxutil,
    list_has_every_fingerprint_and_user_id_gnupg_listed,
    list_x509_fields_match_gpgsm,
    list_type_filter,
    find_patterns,
    find_without_match_fails_clearly,
    find_stops_at_the_first_match,
    io_summary_counts_a_sequential_pass,
    text_listing_looks_like_gnupg,
];
