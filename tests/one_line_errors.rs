//! Every error is one line: with `RUST_BACKTRACE=1` set, bad keyboxes,
//! bad options, unreadable files, undecodable keys and certificates and a
//! bad trustlist each give lines that start with `kbxscope: `, and no
//! line is a debug dump or a backtrace.

use std::path::Path;

use crate::common::{bin, fixture, raw_blob, split_blobs, validation_args};

/// Run with `RUST_BACKTRACE=1`; check stderr; return the exit code.
fn check(args: &[&str], max_lines: usize) -> Option<i32> {
    let o = bin().env("RUST_BACKTRACE", "1").env("RUST_LIB_BACKTRACE", "1").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert!(!lines.is_empty() && lines.len() <= max_lines, "{args:?}: {} lines:\n{err}", lines.len());
    for l in &lines {
        assert!(l.starts_with("kbxscope: "), "{args:?}: {l}");
        for bad in ["backtrace", "Backtrace", "panicked", " { ", "Some(", "source:", "Error(", "\\n"] {
            assert!(!l.contains(bad), "{args:?}: {bad:?} in: {l}");
        }
        // No part of a message said twice (an error chain repeating its source).
        let parts: Vec<&str> = l.split(": ").collect();
        for (i, p) in parts.iter().enumerate() {
            assert!(p.len() < 12 || !parts[i + 1..].contains(p), "{args:?}: repeated {p:?} in: {l}");
        }
    }
    o.status.code()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

fn every_error_is_one_line_even_with_rust_backtrace() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = std::fs::read(fixture("gnupg-mixed.kbx")).unwrap();
    let blobs = split_blobs(&good);
    // Bad keyboxes: truncated, garbage, a huge length, a directory, missing.
    let truncated = write(d, "truncated.kbx", &good[..good.len() - 100]);
    let garbage = write(d, "garbage.kbx", &[0xEEu8; 300]);
    let mut huge = blobs[0].clone();
    huge.extend(raw_blob(64, 2)[..8].iter().copied().chain([0xFF; 56]).collect::<Vec<_>>());
    huge[32..36].copy_from_slice(&u32::MAX.to_be_bytes());
    let huge = write(d, "huge.kbx", &huge);
    let dir_path = d.to_str().unwrap().to_string();
    let missing = d.join("missing.kbx").to_str().unwrap().to_string();
    // Undecodable content: an OpenPGP blob whose keyblock is garbage, an
    // X.509 blob whose DER is garbage (data areas overwritten, checksums
    // left as they are: kbxscope reads on as GnuPG does).
    let mut bad_content = blobs[0].clone();
    for b in &blobs[1..] {
        let mut b = b.clone();
        let off = u32::from_be_bytes(b[8..12].try_into().unwrap()) as usize;
        let len = u32::from_be_bytes(b[12..16].try_into().unwrap()) as usize;
        b[off..off + len.min(40)].fill(0x30);
        bad_content.extend(b);
    }
    let bad_content = write(d, "bad-content.kbx", &bad_content);
    let bad_trust = write(d, "trust.txt", b"98BC D9 S\n");
    for kbx in [&truncated, &garbage, &huge, &dir_path, &missing] {
        for cmd in ["stats", "dump", "list"] {
            let code = check(&[cmd, kbx], 2);
            assert_ne!(code, Some(0), "{cmd} {kbx}");
        }
        check(&["find", kbx, "alice"], 2);
    }
    assert_eq!(check(&["list", &bad_content], 200), Some(1));
    check(&["find", "--all", &bad_content, "@example"], 200);
    let mixed = fixture("gnupg-mixed.kbx");
    check(&validation_args(&[], &mixed, Path::new(&bad_trust)), 1);
    check(&validation_args(&[], &mixed, Path::new(&missing)), 1);
    // Bad options and outputs that cannot be written.
    for args in [
        &["frobnicate"][..],
        &["list", "--foo"],
        &["find"],
        &["--kbx-buffer-size", "3x", "stats", &truncated],
        &["find", &truncated, "#zz"],
        &["--trace-out", "/nonexistent-dir/t.json", "stats", fixture("gnupg-mixed.kbx").to_str().unwrap()],
        &["--metrics-out", "/nonexistent-dir/m.prom", "stats", fixture("gnupg-mixed.kbx").to_str().unwrap()],
        &["gen", &truncated, "--preset", "tiny"],
    ] {
        assert_ne!(check(args, 1), Some(0), "{args:?}");
    }
}

crate::tests![every_error_is_one_line_even_with_rust_backtrace,];
