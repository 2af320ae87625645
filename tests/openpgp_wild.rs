//! OpenPGP keys the `pgp` crate cannot decode (secp256k1) or names
//! differently (brainpool, DSA), made by a live gpg in a temporary
//! GNUPGHOME: `list` and `find` show every key and subkey `gpg
//! --with-colons -k` shows, with gpg's fingerprint, key id, creation,
//! algorithm name, capabilities and user ids, and never fail.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{gpg_batch_args, run, stderr, stdout, stop_gnupg_daemons};

fn gpg(home: &Path, args: &[&str]) -> String {
    let o = Command::new("gpg").args(gpg_batch_args(home)).args(args).output().unwrap();
    assert!(o.status.success(), "gpg {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// One key or subkey as gpg lists it: (fpr, keyid, created, algorithm, usage).
type Row = (String, String, String, String, String);

/// gpg's keys: (primary row, user ids, subkey rows).
fn gpg_keys(colons: &str) -> Vec<(Row, Vec<String>, Vec<Row>)> {
    let mut out: Vec<(Row, Vec<String>, Vec<Row>)> = Vec::new();
    let mut pending: Option<(bool, Vec<String>)> = None;
    for line in colons.lines() {
        let f: Vec<&str> = line.split(':').collect();
        match f[0] {
            "pub" | "sub" => pending = Some((f[0] == "sub", f.iter().map(|s| s.to_string()).collect())),
            "fpr" => {
                if let Some((sub, p)) = pending.take() {
                    let algo = match p[3].as_str() {
                        "1" | "2" | "3" => format!("rsa{}", p[2]),
                        "17" => format!("dsa{}", p[2]),
                        "16" | "20" => format!("elg{}", p[2]),
                        _ => p[16].clone(),
                    };
                    let usage: String = p[11].chars().filter(|c| c.is_ascii_lowercase()).collect();
                    let created = kbxscope::timefmt::rfc3339(p[5].parse().unwrap());
                    let row = (f[9].to_string(), p[4].clone(), created, algo, usage.to_uppercase());
                    if sub {
                        out.last_mut().unwrap().2.push(row);
                    } else {
                        out.push((row, Vec::new(), Vec::new()));
                    }
                }
            }
            "uid" => out.last_mut().unwrap().1.push(f[9].to_string()),
            _ => {}
        }
    }
    out.sort();
    out
}

fn row(v: &Value) -> Row {
    let s = |k: &str| v[k].as_str().unwrap().to_string();
    (s("fingerprint"), s("key_id"), s("created"), s("algorithm"), s("usage"))
}

fn our_keys(json: &str) -> Vec<(Row, Vec<String>, Vec<Row>)> {
    let mut out: Vec<_> = json
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let uids = v["user_ids"].as_array().unwrap().iter().map(|u| u.as_str().unwrap().to_string()).collect();
            (row(&v), uids, v["subkeys"].as_array().unwrap().iter().map(row).collect())
        })
        .collect();
    out.sort();
    out
}

fn keys_gpg_makes_are_listed_as_gpg_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    for (algo, sub) in [
        ("secp256k1", Some("secp256k1")),
        ("brainpoolP256r1", Some("brainpoolP256r1")),
        ("brainpoolP384r1", None),
        ("brainpoolP512r1", Some("brainpoolP512r1")),
        ("nistp384", Some("nistp384")),
        ("ed25519", Some("cv25519")),
        ("dsa2048", None),
    ] {
        let uid = format!("Wild {algo} <{algo}@example.org>");
        gpg(&home, &["--quick-gen-key", &uid, algo, "sign,cert", "never"]);
        if let Some(sub) = sub {
            let colons = gpg(&home, &["--with-colons", "-k", &uid]);
            let fpr = colons.lines().find(|l| l.starts_with("fpr:")).unwrap().split(':').nth(9).unwrap().to_string();
            gpg(&home, &["--quick-add-key", &fpr, sub, "encr", "never"]);
        }
    }
    let theirs = gpg_keys(&gpg(&home, &["--with-colons", "-k"]));
    stop_gnupg_daemons(&home);
    assert_eq!(theirs.len(), 7);
    let kbx = home.join("pubring.kbx");
    let o = run(["list", "--json", kbx.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    assert_eq!(our_keys(&stdout(&o)), theirs);
    // The secp256k1 key (which the pgp crate cannot decode) is listed
    // plainly, as gpg lists it: no note in text or JSON.
    let k1 = stdout(&o).lines().find(|l| l.contains("\"secp256k1\"")).unwrap().to_string();
    assert!(!k1.contains("\"undecoded\""), "{k1}");
    let text = run(["list", kbx.to_str().unwrap()]);
    assert!(stdout(&text).contains("pub   secp256k1 "), "{}", stdout(&text));
    assert!(!stdout(&text).contains("shown from its packet headers"), "{}", stdout(&text));
    // find by the secp256k1 subkey's key id and by its mail.
    let (k1_row, _, k1_subs) = theirs.iter().find(|k| k.0 .3 == "secp256k1").unwrap();
    for pattern in [k1_subs[0].1.clone(), "<secp256k1@example.org>".to_string()] {
        let o = run(["find", "--json", kbx.to_str().unwrap(), &pattern]);
        assert!(o.status.success(), "{pattern}: {}", stderr(&o));
        let found = our_keys(&stdout(&o));
        assert_eq!(found.len(), 1, "{pattern}");
        assert_eq!(&found[0].0, k1_row, "{pattern}");
    }
}

crate::tests![
    keys_gpg_makes_are_listed_as_gpg_lists_them needs ["gpg"],
];
