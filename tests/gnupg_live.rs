//! Live comparisons with GnuPG's own `kbxutil` (Debian: gnupg-utils).
//!
//! Besides the fixtures, the tests build keyboxes with GnuPG's edge cases
//! out of real blobs — runs of deleted blobs, a blob over 5 MiB, a blob
//! under 32 bytes, an unknown type — and require byte-identical output.

use std::process::Command;

use crate::common::{fixture, raw_blob, run, split_blobs, stderr, KEYBOXES};

fn kbxutil(args: &[&str]) -> Vec<u8> {
    let o = Command::new("kbxutil").args(args).output().expect("run kbxutil");
    o.stdout
}

fn same_as_kbxutil(path: &str) {
    let ours = run(["stats", path]);
    assert_eq!(ours.stdout, kbxutil(&["--stats", path]), "stats of {path}: {}", stderr(&ours));
    let ours = run(["dump", path]);
    let theirs = kbxutil(&[path]);
    if ours.stdout != theirs {
        let (a, b) = (String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&theirs));
        let line = a.lines().zip(b.lines()).position(|(x, y)| x != y);
        panic!("dump of {path} differs from kbxutil at line {line:?}:\n{a}\n---\n{b}");
    }
}

fn fixtures_match_live_kbxutil() {
    for kbx in KEYBOXES {
        same_as_kbxutil(fixture(&format!("{kbx}.kbx")).to_str().unwrap());
    }
}

fn edge_cases_match_live_kbxutil() {
    let blobs = split_blobs(&std::fs::read(fixture("gnupg-deleted.kbx")).unwrap());
    let (h, a, b) = (&blobs[0], &blobs[1], &blobs[2]);
    let deleted = {
        let mut d = blobs[5].clone();
        d[4] = 0;
        d
    };
    let big = raw_blob(5 * 1024 * 1024 + 1, 2);
    let exactly_limit = raw_blob(5 * 1024 * 1024, 9);
    let short = raw_blob(20, 2);
    let unknown = raw_blob(40, 9);
    let short_key = raw_blob(36, 3);
    let cases: Vec<(&str, Vec<&Vec<u8>>)> = vec![
        ("one deleted", vec![h, a, &deleted, b]),
        ("a run of deleted", vec![h, a, &deleted, &deleted, b]),
        ("deleted at the end", vec![h, a, &deleted]),
        ("deleted after the header", vec![h, &deleted, &deleted, &deleted, a]),
        ("deleted then too large", vec![h, a, &deleted, &big, b]),
        ("too large then deleted", vec![h, a, &big, &deleted, b]),
        ("exactly 5 MiB", vec![h, &exactly_limit, a]),
        ("short, unknown, short key", vec![h, a, &deleted, &short, b, &unknown, &short_key]),
        ("no header", vec![a, b]),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, parts) in cases {
        let path = dir.path().join("edge.kbx");
        std::fs::write(&path, parts.into_iter().flatten().copied().collect::<Vec<u8>>()).unwrap();
        eprintln!("edge case: {name}");
        same_as_kbxutil(path.to_str().unwrap());
    }
}

crate::tests![
    fixtures_match_live_kbxutil needs ["kbxutil"],
    edge_cases_match_live_kbxutil needs ["kbxutil"],
];
