//! The corruption suite: damaged keyboxes of every kind, table-driven.
//!
//! In process, through the library (fast enough to try every case): every
//! truncation of a small keybox and every single-bit flip in its first
//! blobs, through `stats`, `list`, `dump` and validation. Each either reads
//! cleanly or fails with an error that names the blob and a byte offset
//! inside the file, within a time bound. Through the command line: the
//! hostile length fields, blobs at and over GnuPG's 5 MiB limit, runs of
//! deleted blobs, each under an address-space limit so that an allocation
//! sized by the file would abort instead of passing.

use std::io::Cursor;
use std::time::{Duration, Instant};

use kbxscope::io::{BufferSize, BufferedReader, MemoryOpener};
use kbxscope::lookup::Strategy;
use kbxscope::workload::{self, ScanError};
use kbxscope::x509::TrustList;

use crate::common::{fixture, raw_blob, run_bounded, split_blobs, stderr, stdout, tool};

/// The first `n` blobs of the mixed fixture (header, certificates, keys).
fn small_keybox(n: usize) -> (Vec<u8>, Vec<usize>) {
    let blobs = split_blobs(&std::fs::read(fixture("gnupg-mixed.kbx")).unwrap());
    let bounds = (0..=n).map(|k| blobs[..k].iter().map(Vec::len).sum()).collect();
    (blobs[..n].concat(), bounds)
}

/// An error must name a blob and an offset inside the file.
fn check_located(e: &ScanError, len: usize, case: &str) {
    assert!(e.offset <= len as u64, "{case}: offset {} past the file's {len} bytes: {e}", e.offset);
    assert!(e.to_string().starts_with(&format!("blob {} at byte offset {}: ", e.index, e.offset)), "{case}: {e}");
}

/// How many passes to make over a damaged keybox.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Depth {
    /// `stats`: the framing only.
    Framing,
    /// Also `list` and `dump`: every blob decoded.
    Decoding,
    /// Also validation with the `index` lookup: signatures checked.
    Validation,
}

/// The passes of every command down to `depth` over `bytes`; returns the
/// errors met, each checked to name a blob and an offset in the file.
fn every_pass(bytes: &[u8], case: &str, depth: Depth) -> Vec<ScanError> {
    let started = Instant::now();
    let mut errors = Vec::new();
    let mut r = BufferedReader::new(Cursor::new(bytes), BufferSize::Bytes(64)).with_limit(bytes.len() as u64);
    errors.extend(workload::stats::pass(&mut r).fatal);
    if depth >= Depth::Decoding {
        r.rewind().unwrap();
        let out = workload::list::pass(&mut r, workload::TypeFilter::All, |_| {});
        errors.extend(out.problems);
        errors.extend(out.fatal);
        r.rewind().unwrap();
        errors.extend(workload::dump::pass(&mut r, |_| {}).err());
    }
    if depth == Depth::Validation {
        let opener = MemoryOpener::new(bytes, BufferSize::Bytes(512));
        let out = workload::validate::on_keybox(&opener, Strategy::Index, &TrustList::default(), 1_700_000_000, |_| {})
            .expect("in-memory handles always open");
        errors.extend(out.problems);
        errors.extend(out.fatal);
    }
    for e in &errors {
        check_located(e, bytes.len(), case);
    }
    // Speed is reported, not asserted: a slow machine must not fail it.
    if started.elapsed() > Duration::from_secs(10) {
        eprintln!("note: {case} took {:?}", started.elapsed());
    }
    errors
}

/// A deleted or over-long blob at the end whose length runs past the end
/// of the file: the issuer lookups read it with the same blob reader as
/// the listing, so they report it exactly as the listing does (same blob,
/// same offset) instead of taking it for the end of the keybox — and
/// since a lookup meets it first, fewer certificates are listed than on
/// the intact file. (The fixture's root certificates are left out, so
/// that the lookups for their children search to the end of the file.)
fn lookups_report_a_truncated_skipped_blob() {
    let is_root = |b: &Vec<u8>| match kbxscope::kbx::parse_blob(b) {
        Ok(kbxscope::kbx::Blob::Key(k)) => k.x509_subject().is_some() && k.x509_subject() == k.x509_issuer(),
        _ => false,
    };
    let kept: Vec<Vec<u8>> =
        split_blobs(&std::fs::read(fixture("gnupg-mixed.kbx")).unwrap()).into_iter().filter(|b| !is_root(b)).collect();
    let blobs = kept.len() as u64;
    let intact = kept.concat();
    // January 2027: every certificate of the fixture is valid then (before
    // their notBefore, walks would stop at once, without lookups).
    let now = 1_800_000_000;
    let listed = |bytes: &[u8], lookup| {
        let opener = MemoryOpener::new(bytes, BufferSize::Bytes(4096));
        let mut n = 0;
        let out = workload::validate::on_keybox(&opener, lookup, &TrustList::default(), now, |_| n += 1)
            .expect("in-memory handles always open");
        (n, out)
    };
    for (ty, claimed) in [(0u8, 1000u32), (3, 6 << 20)] {
        let mut bytes = intact.clone();
        bytes.extend_from_slice(&raw_blob(claimed, ty)[..100.min(claimed as usize)]);
        let want = workload::stats::pass(
            &mut BufferedReader::new(Cursor::new(&bytes[..]), BufferSize::Bytes(4096)).with_limit(bytes.len() as u64),
        )
        .fatal
        .expect("the listing pass reports the cut blob");
        assert_eq!((want.index, want.offset), (blobs, intact.len() as u64), "{want}");
        for lookup in [Strategy::Gnupg, Strategy::Scan, Strategy::Index] {
            let (n, out) = listed(&bytes, lookup);
            let (whole, _) = listed(&intact, lookup);
            let e = out.fatal.unwrap_or_else(|| panic!("{lookup:?}, type {ty}: no error"));
            assert_eq!(e.to_string(), want.to_string(), "{lookup:?}, type {ty}");
            if lookup != Strategy::Index {
                assert!(n < whole, "{lookup:?}, type {ty}: a lookup met the blob first ({n} of {whole} listed)");
            }
        }
    }
}

fn every_truncation_fails_at_the_right_blob() {
    let (bytes, bounds) = small_keybox(5);
    for cut in 1..bytes.len() {
        let errors = every_pass(&bytes[..cut], &format!("cut at {cut}"), Depth::Decoding);
        if bounds.contains(&cut) {
            assert!(errors.is_empty(), "cut {cut} is at a blob boundary: {:?}", errors[0].to_string());
        } else {
            let blob = bounds.iter().filter(|&&b| b <= cut).count() - 1;
            assert!(!errors.is_empty(), "cut {cut} must fail");
            for e in &errors {
                assert_eq!(e.index, blob as u64, "cut {cut}: {e}");
                assert_eq!(e.offset, bounds[blob] as u64, "cut {cut}: {e}");
            }
        }
    }
}

fn every_bit_flip_in_the_first_blobs_is_caught_or_harmless() {
    let (bytes, bounds) = small_keybox(4);
    let mut failed = 0;
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1 << bit;
            // Every pass on one bit per byte; the framing pass (stats) on
            // all eight: that keeps the test to seconds.
            let case = format!("bit {bit} of byte {at}");
            let depth = match (bit == at % 8, at % 4 == 0) {
                (false, _) => Depth::Framing,
                (true, false) => Depth::Decoding,
                (true, true) => Depth::Validation,
            };
            let errors = every_pass(&damaged, &case, depth);
            if !errors.is_empty() {
                failed += 1;
                // The flip is in blob `b`; no pass may blame a blob before it.
                let b = bounds.iter().filter(|&&x| x <= at).count() - 1;
                for e in &errors {
                    assert!(e.index >= b as u64 || e.index == 0, "{case}: blamed blob {} before {b}: {e}", e.index);
                }
            }
        }
    }
    assert!(failed > 0);
}

/// A clean CLI failure: exit 1, the file, blob and offset, no panic.
fn cli_fails(args: &[&str], want: &str) -> std::process::Output {
    let o = run_limited(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: expected {want:?} in {err:?}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    o
}

/// Run under a 64 MiB address-space limit (prlimit, util-linux) when it is
/// installed: an allocation sized by a hostile length would abort.
fn run_limited(args: &[&str]) -> std::process::Output {
    match tool("prlimit", "corruption::run_limited") {
        Some(prlimit) => {
            let limit = format!("--as={}", 64 * 1024 * 1024);
            let mut all = vec![limit.as_str(), env!("CARGO_BIN_EXE_kbxscope")];
            all.extend_from_slice(args);
            let o = std::process::Command::new(prlimit)
                .args(&all)
                .env("KBXSCOPE_CACHE_DIR", std::env::temp_dir().join("kbxscope-test-cache"))
                .output()
                .unwrap();
            assert_ne!(o.status.code(), None, "{args:?} was killed by a signal: {}", stderr(&o));
            o
        }
        None => run_bounded(args, 120),
    }
}

fn hostile_lengths_and_limits_on_the_command_line() {
    let blobs = split_blobs(&std::fs::read(fixture("gnupg-deleted.kbx")).unwrap());
    let (h, a, b) = (&blobs[0], &blobs[1], &blobs[2]);
    let dir = tempfile::tempdir().unwrap();
    let at = h.len(); // blob 1's offset
    let with_length = |n: u32| {
        let mut x = a.clone();
        x[..4].copy_from_slice(&n.to_be_bytes());
        [h.clone(), x, b.clone()].concat()
    };
    let big_missing = [h.clone(), (5u32 * 1024 * 1024 + 1).to_be_bytes().to_vec(), vec![2u8; 100]].concat();
    // (name, file, command, message)
    let cases: Vec<(&str, Vec<u8>, &str, String)> = vec![
        ("length 0", with_length(0), "stats", format!("blob 1 at byte offset {at}: length field 0 is shorter")),
        ("length 4", with_length(4), "list", format!("blob 1 at byte offset {at}: length field 4 is shorter")),
        ("length 5", with_length(5), "list", "blob 1 at byte offset".to_string()),
        ("length 31", with_length(31), "list", format!("blob 1 at byte offset {}: key table ends", at + 20)),
        (
            "length 2^31",
            with_length(1 << 31),
            "stats",
            format!("blob 1 at byte offset {at}: blob of 2147483648 bytes is truncated"),
        ),
        (
            "length 2^32-1",
            with_length(u32::MAX),
            "list",
            format!("blob 1 at byte offset {at}: blob of 4294967295 bytes is truncated"),
        ),
        (
            "5 MiB + 1 claimed, 100 bytes there",
            big_missing,
            "dump",
            format!("blob 1 at byte offset {at}: blob of 5242881 bytes is truncated"),
        ),
    ];
    for (name, bytes, cmd, want) in cases {
        let p = dir.path().join("bad.kbx");
        std::fs::write(&p, &bytes).unwrap();
        let p = p.to_str().unwrap();
        eprintln!("case: {name}");
        cli_fails(&[cmd, p], &format!("{p}: {want}"));
    }
    // Whole blobs at and over the limit are read or skipped as GnuPG does.
    let exactly = raw_blob(5 * 1024 * 1024, 9);
    let over = raw_blob(5 * 1024 * 1024 + 1, 2);
    let deleted = {
        let mut d = blobs[5].clone();
        d[4] = 0;
        d
    };
    let p = dir.path().join("limits.kbx");
    std::fs::write(
        &p,
        [h, a, &exactly, &over, &deleted, &deleted, &deleted, b].into_iter().flatten().copied().collect::<Vec<u8>>(),
    )
    .unwrap();
    let o = run_limited(&["stats", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("   skipped long blobs:        1\n"), "{out}");
    // header, a, the 5 MiB blob, the run of deleted blobs (once, as
    // kbxutil counts it), b; the blob over the limit is only "skipped"
    assert!(out.starts_with("Total number of blobs:        5\n"), "{out}");
    assert!(out.contains("                empty:        1\n"), "a run of deleted blobs counts once: {out}");
    let o = run_limited(&["list", "--json", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 2, "the two certificates around the big and deleted blobs");
}

crate::tests![
    every_truncation_fails_at_the_right_blob,
    every_bit_flip_in_the_first_blobs_is_caught_or_harmless,
    hostile_lengths_and_limits_on_the_command_line,
    lookups_report_a_truncated_skipped_blob,
];
