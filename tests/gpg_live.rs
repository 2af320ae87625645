//! Live comparisons with gpg (OpenPGP): `list --with-sigs` and
//! `list --check-sigs` against `gpg --list-sigs` / `gpg --check-sigs`.
//!
//! * statuses: every signature's mark, signer key id and class equal to
//!   `gpg --check-sigs --with-colons` (and `--list-sigs --with-colons`),
//!   with every `--lookup` strategy;
//! * reads: `--lookup gnupg` at 8 KiB (`--kbx-buffer-size 0`) within ±5%
//!   of the `read(2)` calls gpg makes on the keybox under strace;
//! * `--io-summary` equal to strace for the new workloads;
//! * bad input: a missing signer, a corrupt signature, an unknown
//!   algorithm — listed with gpg's status — and a truncated keyblock (a
//!   one-line error naming blob and offset); never a panic.

use std::path::{Path, PathBuf};
use std::process::Command;

use kbxscope::kbx::keyblock::{split_packets, tag};

use crate::common::{
    fixture, gen_tiny, gpg_batch_args, io_summary, run, split_blobs, stderr, stdout, stop_gnupg_daemons,
};

/// kbxscope's signature listings: `list --with-sigs` and `list --check-sigs`.
const SIG_MODES: [&str; 2] = ["--with-sigs", "--check-sigs"];

/// gpg's signature listings, each with kbxscope's counterpart.
const GPG_SIG_MODES: [(&str, &str); 2] = [("--list-sigs", "--with-sigs"), ("--check-sigs", "--check-sigs")];

/// What `gpg --homedir HOME --batch --with-colons CMD` prints.
fn gpg_colon_listing(home: &Path, cmd: &str) -> String {
    let o = Command::new("gpg")
        .args(["--homedir", home.to_str().unwrap(), "--batch", "--with-colons", cmd])
        .output()
        .expect("run gpg");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A fresh GNUPGHOME (gpg has made its trustdb in it) holding `keybox` as
/// pubring.kbx. gpg's first run over a keybox with deleted blobs rewrites
/// it compacted; with `settle` one listing runs first, so the keybox is
/// the one gpg reads from then on.
fn gnupg_home(keybox: &Path, settle: bool) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path().to_str().unwrap();
    let o = Command::new("gpg").args(["--homedir", h, "--batch", "-k"]).output().expect("run gpg");
    assert!(o.status.success(), "gpg -k: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::copy(keybox, home.path().join("pubring.kbx")).expect("copy keybox");
    if settle {
        Command::new("gpg").args(["--homedir", h, "--batch", "-k"]).output().expect("run gpg");
    }
    home
}

/// (mark, signer key id, class) of every sig/rev line, per key fingerprint.
pub(crate) type Sigs = Vec<(String, Vec<(String, String, String)>)>;

pub(crate) fn gpg_colons(text: &str) -> Sigs {
    let mut out: Sigs = Vec::new();
    let mut want_fpr = false;
    for line in text.lines() {
        let f: Vec<&str> = line.split(':').collect();
        match f[0] {
            "pub" => want_fpr = true,
            "fpr" if want_fpr => {
                out.push((f[9].to_string(), Vec::new()));
                want_fpr = false;
            }
            "sig" | "rev" => {
                let last = out.last_mut().expect("sig after a key");
                last.1.push((f[1].to_string(), f[4].to_string(), f[10].to_string()));
            }
            _ => {}
        }
    }
    out
}

pub(crate) fn ours(json: &str) -> Sigs {
    json.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            let sigs = v["signatures"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|g| g["sigs"].as_array().unwrap().clone())
                .map(|s| {
                    let mark = s["mark"].as_str().unwrap().trim().to_string();
                    (mark, s["signer_key_id"].as_str().unwrap().to_string(), s["class"].as_str().unwrap().to_string())
                })
                .collect();
            (v["fingerprint"].as_str().unwrap().to_string(), sigs)
        })
        .collect()
}

/// gpg's `read(2)` calls on the keybox of `home` for `cmd`, and its stdout.
fn gpg_reads(home: &Path, cmd: &str) -> (u64, String) {
    let trace = home.join("strace.txt");
    let o = Command::new("strace")
        .args(["-f", "-y", "-e", "trace=read", "-o", trace.to_str().unwrap()])
        .arg("gpg")
        .args(["--homedir", home.to_str().unwrap(), "--batch", cmd])
        .output()
        .expect("run strace gpg");
    let text = std::fs::read_to_string(&trace).unwrap();
    let tag = format!("<{}>", home.join("pubring.kbx").display());
    let reads = text.lines().filter(|l| l.contains("read(") && l.contains(&tag)).count() as u64;
    (reads, stdout(&o))
}

fn kbxscope_json(keybox: &Path, mode: &str, lookup: &str) -> String {
    let o = run(["list", mode, "--json", "--lookup", lookup, keybox.to_str().unwrap()]);
    assert!(o.status.success(), "{mode} {lookup}: {}", stderr(&o));
    stdout(&o)
}

/// Statuses (all strategies) and read counts (gnupg at 8 KiB) against gpg.
fn compare(keybox: &Path, settle: bool) {
    compare_counting(keybox, settle, &["--list-sigs", "--check-sigs"]);
}

/// [`compare`], with gpg's reads counted under strace for the listings in
/// `counted` only (statuses are compared for both).
fn compare_counting(keybox: &Path, settle: bool, counted: &[&str]) {
    let home = gnupg_home(keybox, settle);
    // kbxscope reads a copy of the keybox gpg reads, in a directory of its own.
    let dir = tempfile::tempdir().unwrap();
    let ours_kbx = dir.path().join("k.kbx");
    std::fs::copy(home.path().join("pubring.kbx"), &ours_kbx).unwrap();
    for (gpg_cmd, mode) in GPG_SIG_MODES {
        let want = gpg_colons(&gpg_colon_listing(home.path(), gpg_cmd));
        assert!(!want.is_empty(), "gpg listed nothing for {}", keybox.display());
        for lookup in ["gnupg", "index", "scan"] {
            let got = ours(&kbxscope_json(&ours_kbx, mode, lookup));
            assert_eq!(got, want, "{} {mode} --lookup {lookup}: statuses differ from gpg {gpg_cmd}", keybox.display());
        }
        if !counted.contains(&gpg_cmd) {
            continue;
        }
        let (theirs, _) = gpg_reads(home.path(), gpg_cmd);
        let o = run(["--kbx-buffer-size", "0", "--io-summary=json", "list", mode, ours_kbx.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let reads = crate::common::file_events(&io_summary(&o), &ours_kbx)["read"].as_u64().unwrap();
        eprintln!("{} {gpg_cmd}: gpg {theirs} reads, kbxscope {reads}", keybox.display());
        assert!(
            reads.abs_diff(theirs) * 20 <= theirs,
            "{} {mode}: {reads} reads, gpg {theirs} (beyond ±5%)",
            keybox.display()
        );
    }
}

fn sigs_equal_gpg_on_the_fixtures() {
    compare(&fixture("gnupg-mixed.kbx"), false);
    compare(&fixture("gnupg-deleted.kbx"), true);
}

fn sigs_equal_gpg_on_a_generated_tiny_keybox() {
    let (_d, tiny) = gen_tiny();
    compare(&tiny, false);
}

/// The `small` preset (the longest of these comparisons: a test of its own
/// so that it runs beside the others). gpg 2.2's `--check-sigs` reads
/// the 5 MiB keybox again for every signer: 1.2 million `read(2)` calls,
/// minutes under strace. Its statuses are compared here; its read count
/// on the fixtures and the tiny keybox, which take the same paths.
fn sigs_equal_gpg_on_a_generated_small_keybox() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.kbx");
    let o = run(["gen", small.to_str().unwrap(), "--preset", "small"]);
    assert!(o.status.success(), "{}", stderr(&o));
    compare_counting(&small, false, &["--list-sigs"]);
}

/// System calls strace sees on the keybox, by kbxscope's names.
fn strace_counts(keybox: &Path, args: &[&str]) -> (serde_json::Value, [u64; 5]) {
    let trace = keybox.with_extension("trace");
    let o = Command::new("strace")
        .args(["-f", "-y", "-e", "trace=openat,read,lseek,close,fstat,newfstatat,statx", "-o", trace.to_str().unwrap()])
        .arg(env!("CARGO_BIN_EXE_kbxscope"))
        .args(args)
        .env("KBXSCOPE_CACHE_DIR", std::env::temp_dir().join("kbxscope-test-cache"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&trace).unwrap();
    let tag = format!("<{}>", keybox.display());
    let quoted = format!("\"{}\"", keybox.display());
    let mut n = [0u64; 5];
    for line in text.lines() {
        let line = line.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
        let Some(p) = line.find('(') else { continue };
        let args = &line[p + 1..];
        let on_fd = args.trim_start_matches(|c: char| c.is_ascii_digit()).starts_with(&tag);
        let i = match &line[..p] {
            "openat" if args.contains(&quoted) => 0,
            "read" if on_fd => 1,
            "lseek" if on_fd => 2,
            "close" if on_fd => 3,
            "fstat" | "statx" | "newfstatat" if on_fd || args.contains(&quoted) => 4,
            _ => continue,
        };
        n[i] += 1;
    }
    (io_summary(&o), n)
}

fn io_summary_equals_strace_for_the_sig_workloads() {
    let (_d, tiny) = gen_tiny();
    // Unbuffered, GnuPG's lookups make a call every few bytes: 200,000 on
    // the tiny keybox, a minute under strace; three keys take those paths.
    let (_f, few) = crate::common::gen_few();
    for mode in SIG_MODES {
        for lookup in ["gnupg", "scan", "index"] {
            for size in ["0", "16", "4096B", "unbuffered"] {
                let keybox = if (size, lookup) == ("unbuffered", "gnupg") { &few } else { &tiny };
                let path = keybox.to_str().unwrap();
                let args = ["--kbx-buffer-size", size, "--io-summary=json", "list", mode, "--lookup", lookup, path];
                let (summary, seen) = strace_counts(keybox, &args);
                // The keybox's own row: gpg's start also writes beside it.
                let e = crate::common::file_events(&summary, keybox);
                let ours = ["open", "read", "seek", "close", "stat"].map(|k| e[k].as_u64().unwrap());
                assert_eq!(
                    ours, seen,
                    "{mode} --lookup {lookup} at {size}: io summary vs strace (open, read, seek, close, stat)"
                );
            }
        }
    }
}

fn index_reads_the_file_once() {
    let (_d, tiny) = gen_tiny();
    let size = std::fs::metadata(&tiny).unwrap().len();
    for mode in SIG_MODES {
        let o = run([
            "--kbx-buffer-size",
            "0",
            "--io-summary=json",
            "list",
            mode,
            "--lookup",
            "index",
            tiny.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let total = io_summary(&o)["events"]["total"].as_u64().unwrap();
        assert!(total <= size.div_ceil(8192) + 4, "{mode}: {total} file events");
    }
}

/// Blob `i` of `blobs` with `edit` applied to its keyblock's packets.
fn edit_blob(blob: &[u8], edit: impl FnOnce(&mut Vec<u8>, &[(u8, usize, usize)])) -> Vec<u8> {
    let data_off = u32::from_be_bytes(blob[8..12].try_into().unwrap()) as usize;
    let data_len = u32::from_be_bytes(blob[12..16].try_into().unwrap()) as usize;
    let kb = &blob[data_off..data_off + data_len];
    let packets: Vec<(u8, usize, usize)> = split_packets(kb)
        .unwrap()
        .iter()
        .map(|p| (p.tag, data_off + (p.body.as_ptr() as usize - kb.as_ptr() as usize), p.body.len()))
        .collect();
    let mut out = blob.to_vec();
    edit(&mut out, &packets);
    out
}

/// (body offset, length) of every v4 certification (class 0x10–0x13).
fn certifications(blob: &[u8], packets: &[(u8, usize, usize)]) -> Vec<(usize, usize)> {
    packets
        .iter()
        .filter(|(t, off, _)| *t == tag::SIGNATURE && blob[*off] == 4 && matches!(blob[off + 1], 0x10..=0x13))
        .map(|(_, off, len)| (*off, *len))
        .collect()
}

/// `--io-summary` counts what a `--check-sigs` verified and what it took
/// from GnuPG's signature cache: together the signatures gpg marks
/// checked (`!` or `-`), and the cached ones are those whose ring-trust
/// packet (read here from the file's bytes) says gpg checked them.
fn summary_counts_verified_and_cached_signatures() {
    let kbx = fixture("gnupg-mixed.kbx");
    let home = gnupg_home(&kbx, false);
    let checked: usize = gpg_colons(&gpg_colon_listing(home.path(), "--check-sigs"))
        .iter()
        .flat_map(|k| &k.1)
        .filter(|s| s.0 == "!" || s.0 == "-")
        .count();
    let mut cache_marked = 0;
    for blob in split_blobs(&std::fs::read(&kbx).unwrap()).iter().filter(|b| b[4] == 2) {
        let data_off = u32::from_be_bytes(blob[8..12].try_into().unwrap()) as usize;
        let data_len = u32::from_be_bytes(blob[12..16].try_into().unwrap()) as usize;
        let packets = split_packets(&blob[data_off..data_off + data_len]).unwrap();
        for pair in packets.windows(2) {
            let (sig, trust) = (&pair[0], &pair[1]);
            if sig.tag == tag::SIGNATURE && trust.tag == tag::TRUST && trust.body.len() >= 2 && trust.body[1] & 1 != 0 {
                cache_marked += 1;
            }
        }
    }
    for lookup in ["gnupg", "index"] {
        let o = run(["--io-summary=json", "list", "--check-sigs", "--lookup", lookup, kbx.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let s = &io_summary(&o)["signatures"];
        let verified: u64 = s["verified"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
        let cached = s["cached"].as_u64().unwrap();
        assert!(cached > 0 && verified > 0, "{s}");
        assert_eq!(cached as usize, cache_marked, "--lookup {lookup}: {s}");
        assert_eq!((verified + cached) as usize, checked, "--lookup {lookup}: {s}");
    }
}

fn bad_input_gets_gpgs_status() {
    let blobs = split_blobs(&std::fs::read(fixture("gnupg-mixed.kbx")).unwrap());
    let header = &blobs[0];
    let key = &blobs[2];
    // The fixture's first key: per user id its self-signature (whose
    // verdict gpg cached in the keyblock), then three third-party
    // certifications. A corrupt signature: the last byte (inside the
    // signature value) of the first certification flipped; an unknown
    // algorithm: the second one made with public-key algorithm 99.
    let corrupt = edit_blob(key, |b, p| {
        let sigs = certifications(b, p);
        assert_eq!(sigs.len(), 8, "the fixture's first key changed");
        let (off, len) = sigs[1];
        b[off + len - 1] ^= 0x55;
        let (off, _) = sigs[2];
        b[off + 2] = 99;
    });
    let dir = tempfile::tempdir().unwrap();
    // With its signers, and alone (every third-party signer missing).
    let mut all = blobs.clone();
    all[2] = corrupt.clone();
    for (name, parts) in [("with signers", all), ("alone", vec![header.clone(), corrupt])] {
        let kbx = dir.path().join("bad.kbx");
        std::fs::write(&kbx, parts.concat()).unwrap();
        eprintln!("bad input: {name}");
        bad_input_case(&kbx, name == "alone");
    }
}

fn bad_input_case(kbx: &Path, alone: bool) {
    let home = gnupg_home(kbx, false);
    for (gpg_cmd, mode) in GPG_SIG_MODES {
        let want = gpg_colons(&gpg_colon_listing(home.path(), gpg_cmd));
        let first = want.iter().find(|k| k.0 == "26A969FE5E2EAB2E5552D6C33259459D85592A97").expect("the key");
        let marks: Vec<&str> = first.1.iter().map(|s| s.0.as_str()).collect();
        if alone {
            assert!(marks.contains(&"?"), "gpg {gpg_cmd}: no missing signer in {marks:?}");
        }
        if gpg_cmd == "--check-sigs" {
            assert!(marks.contains(&"%") && (alone || marks.contains(&"-")), "gpg {gpg_cmd}: {marks:?}");
        }
        for lookup in ["gnupg", "index", "scan"] {
            assert_eq!(ours(&kbxscope_json(kbx, mode, lookup)), want, "{mode} --lookup {lookup}");
        }
    }
    // Text output lists them too, without a panic (as gpg 2.2's does: 2.4's
    // leaves out what it could not check for its algorithm).
    let o = run(["--gnupg-version", "2.2", "list", "--check-sigs", kbx.to_str().unwrap()]);
    assert!(stdout(&o).contains("sig%"), "{}", stdout(&o));
    assert!(o.status.success(), "{}", stderr(&o));
}

fn a_truncated_keyblock_is_a_one_line_error() {
    let bytes = std::fs::read(fixture("gnupg-mixed.kbx")).unwrap();
    let blobs = split_blobs(&bytes);
    let cut = blobs[0].len() + blobs[1].len() + blobs[2].len() / 2;
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("cut.kbx");
    std::fs::write(&kbx, &bytes[..cut]).unwrap();
    for mode in SIG_MODES {
        for lookup in ["gnupg", "scan", "index"] {
            let o = run(["list", mode, "--lookup", lookup, kbx.to_str().unwrap()]);
            assert_eq!(o.status.code(), Some(1), "{mode} {lookup}");
            let err = stderr(&o);
            assert_eq!(err.lines().count(), 1, "{mode} {lookup}: {err}");
            assert!(err.contains("blob 2") && err.contains("offset"), "{mode} {lookup}: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}

/// Keyboxes with every public-key algorithm gpg verifies besides the
/// fixtures' RSA and Ed25519, and what GnuPG printed for them (see
/// tests/fixtures/README.md): `gnupg-curves` by gpg 2.2.40 (ECDSA on
/// secp256k1, brainpool and NIST curves, DSA; one secp256k1 certification
/// has a "high" s), `gnupg24-v5` by gpg 2.4.7 (Ed448 v5 keys and v5
/// signatures, v4 certifications of them, v5 bindings of v4 and v5
/// subkeys), a copy of it without the verdicts gpg cached in it (so that
/// its self-signatures and bindings are checked), and that copy with
/// every third certification or binding broken.
fn recorded_gpg_statuses_for_every_algorithm() {
    for (name, mode, colons, marks) in [
        ("gnupg-curves", "--with-sigs", "gnupg-curves.gpg-list-sigs-colons.txt", ""),
        ("gnupg-curves", "--check-sigs", "gnupg-curves.gpg-check-sigs-colons.txt", "!"),
        ("gnupg24-v5", "--with-sigs", "gnupg24-v5.gpg24-list-sigs-colons.txt", ""),
        ("gnupg24-v5", "--check-sigs", "gnupg24-v5.gpg24-check-sigs-colons.txt", "!"),
        ("gnupg24-v5-uncached", "--check-sigs", "gnupg24-v5-uncached.gpg24-check-sigs-colons.txt", "!"),
        ("gnupg24-v5-tampered", "--check-sigs", "gnupg24-v5-tampered.gpg24-check-sigs-colons.txt", "!-"),
    ] {
        let want = gpg_colons(&std::fs::read_to_string(fixture(colons)).unwrap());
        let mut seen: Vec<&str> = want.iter().flat_map(|k| k.1.iter().map(|s| s.0.as_str())).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.concat(), marks, "{colons}: gpg's marks");
        for lookup in ["gnupg", "index", "scan"] {
            let got = ours(&kbxscope_json(&fixture(&format!("{name}.kbx")), mode, lookup));
            assert_eq!(got, want, "{name} {mode} --lookup {lookup}: statuses differ from {colons}");
        }
    }
}

fn gpg_quiet(home: &Path, args: &[&str]) {
    let o = Command::new("gpg").args(gpg_batch_args(home)).args(args).output().expect("run gpg");
    assert!(o.status.success(), "gpg {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// Keys of every curve and DSA made by the live gpg, with subkeys bound
/// by each and certifications by each of the others: statuses and reads
/// equal gpg's as gpg made them, without the verdicts gpg cached in the
/// keyblocks (so self-signatures and bindings are checked too), and then
/// with every third binding or certification by another key broken (gpg
/// 2.2 takes a signer whose own self-signature is broken as missing, 2.4
/// does not, so those are left alone).
fn sigs_equal_live_gpg_on_keys_of_every_curve() {
    let (dir, home) = empty_home();
    let keys = [
        ("secp256k1", Some("secp256k1")),
        ("brainpoolP256r1", Some("brainpoolP256r1")),
        ("brainpoolP384r1", Some("brainpoolP384r1")),
        ("brainpoolP512r1", Some("brainpoolP512r1")),
        ("nistp256", Some("nistp256")),
        ("nistp521", None),
        ("ed25519", Some("cv25519")),
        ("dsa2048", Some("elg2048")),
        ("rsa2048", None),
    ];
    let fprs = make_keys(&home, &keys);
    for (signer, _) in fprs.iter().filter(|(a, _)| !matches!(*a, "ed25519" | "rsa2048")) {
        for (target, fpr) in &fprs {
            if signer != target {
                gpg_quiet(&home, &["-u", &format!("<{signer}@example.org>"), "--quick-sign-key", fpr]);
            }
        }
    }
    stop_gnupg_daemons(&home);
    let kbx = dir.path().join("curves.kbx");
    std::fs::copy(home.join("pubring.kbx"), &kbx).unwrap();
    compare(&kbx, false);
    // Without the cached verdicts: gpg sets the "sigcache" byte of the
    // ring-trust packet after each self-signature and binding it made.
    let mut cleared = 0;
    let uncached = edit_openpgp_blobs(&kbx, |b, packets| {
        for &(t, off, len) in packets {
            if t == tag::TRUST && len >= 2 && b[off + 1] & 1 != 0 {
                b[off + 1] = 0;
                cleared += 1;
            }
        }
    });
    assert!(cleared >= 9, "{cleared} cached verdicts");
    compare(&uncached, false);
    // Every third binding or certification made by another key, broken.
    let mut n = 0;
    let broken = edit_openpgp_blobs(&uncached, |b, packets| {
        let own = kbxscope::openpgp::KeyPacket::parse(&b[packets[0].1..packets[0].1 + packets[0].2]).unwrap().key_id;
        for &(t, off, len) in packets {
            if t != tag::SIGNATURE {
                continue;
            }
            let sig = kbxscope::openpgp::SigPacket::parse(&b[off..off + len]).unwrap();
            if sig.class == 0x18 || (matches!(sig.class, 0x10..=0x13) && sig.issuer != Some(own)) {
                n += 1;
                if n % 3 == 0 {
                    b[off + len - 1] ^= 0x55;
                }
            }
        }
    });
    assert!(n >= 36, "{n} bindings and certifications by other keys");
    compare(&broken, false);
}

/// gpg lists a key's primary user id first (and looks its signers up
/// first): a key with three user ids, the second made primary and the
/// third revoked, each certified by a key of its own, and a key whose
/// revoked user id has the newest self-signature.
fn primary_user_id_first_as_gpg_lists_it() {
    let (dir, home) = empty_home();
    let fprs = make_keys(&home, &[("ed25519", None), ("nistp256", None), ("rsa2048", None), ("brainpoolP256r1", None)]);
    let (main, uids) = (&fprs[0].1, ["Second <second@example.org>", "Third <third@example.org>"]);
    for uid in uids {
        gpg_quiet(&home, &["--quick-add-uid", main, uid]);
    }
    gpg_quiet(&home, &["--quick-set-primary-uid", main, uids[0]]);
    let first = "Curve ed25519 <ed25519@example.org>";
    for ((signer, _), uid) in fprs[1..].iter().zip([first, uids[0], uids[1]]) {
        gpg_quiet(&home, &["-u", &format!("<{signer}@example.org>"), "--quick-sign-key", main, uid]);
    }
    gpg_quiet(&home, &["--quick-revoke-uid", main, uids[1]]);
    let other = &fprs[1].1;
    gpg_quiet(&home, &["--quick-add-uid", other, "Later <later@example.org>"]);
    gpg_quiet(&home, &["--quick-revoke-uid", other, "Later <later@example.org>"]);
    stop_gnupg_daemons(&home);
    let o =
        Command::new("gpg").args(["--homedir", home.to_str().unwrap(), "--with-colons", "-k", main]).output().unwrap();
    let listed: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("uid:"))
        .map(|l| l.split(':').nth(9).unwrap().to_string())
        .collect();
    assert_eq!(listed.first().map(String::as_str), Some(uids[0]), "gpg lists {listed:?}");
    let kbx = dir.path().join("uids.kbx");
    std::fs::copy(home.join("pubring.kbx"), &kbx).unwrap();
    compare(&kbx, false);
    let o = run(["list", "--with-sigs", "--json", kbx.to_str().unwrap()]);
    let ours: Vec<String> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["fingerprint"].as_str() == Some(main.as_str()))
        .flat_map(|v| v["signatures"].as_array().unwrap().clone())
        .filter(|g| g["kind"] == "uid")
        .map(|g| g["label"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ours, listed, "user ids in gpg's order");
}

/// gpg's time checks look at the key that made a signature: a
/// certification made an hour in the future is good; one dated before its
/// signer's key, or by a key made an hour in the future, is a time
/// conflict (`%`), and so are the cached self-signatures of that key
/// (gpg makes such signatures with `--faked-system-time` and
/// `--ignore-time-conflict`).
fn time_conflicts_as_gpg_marks_them() {
    let (dir, home) = empty_home();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let at = |t: u64| format!("{t}!");
    let fprs = make_keys(&home, &[("ed25519", None), ("nistp256", None), ("rsa2048", None)]);
    gpg_quiet(&home, &["--faked-system-time", &at(now + 3600), "--quick-gen-key", "Later <later@example.org>"]);
    let sign = |faked: u64, signer: &str, target: &str| {
        let faked = at(faked);
        gpg_quiet(
            &home,
            &["--ignore-time-conflict", "--faked-system-time", &faked, "-u", signer, "--quick-sign-key", target],
        );
    };
    // In the future; before the signer's key; by a key from the future.
    sign(now + 3600, "<nistp256@example.org>", &fprs[0].1);
    sign(now - 3600, "<rsa2048@example.org>", &fprs[0].1);
    sign(now + 3600, "<later@example.org>", &fprs[1].1);
    stop_gnupg_daemons(&home);
    let kbx = dir.path().join("times.kbx");
    std::fs::copy(home.join("pubring.kbx"), &kbx).unwrap();
    let o = Command::new("gpg").args(["--homedir", home.to_str().unwrap(), "--with-colons", "--check-sigs"]).output();
    let marks: String = String::from_utf8_lossy(&o.unwrap().stdout)
        .lines()
        .filter(|l| l.starts_with("sig:"))
        .map(|l| l.split(':').nth(1).unwrap().to_string())
        .collect();
    assert!(marks.matches('%').count() >= 3 && marks.contains('!'), "gpg's marks: {marks}");
    compare(&kbx, false);
}

/// A temporary directory with an empty GNUPGHOME, `home`, in it.
fn empty_home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    (dir, home)
}

/// Keys made by the live gpg in `home`, one per `(algorithm, encryption
/// subkey)`, each with the user id `Curve ALGO <ALGO@example.org>`:
/// `(algorithm, fingerprint)`.
fn make_keys(home: &Path, keys: &[(&'static str, Option<&str>)]) -> Vec<(&'static str, String)> {
    let mut fprs = Vec::new();
    for &(algo, sub) in keys {
        let uid = format!("Curve {algo} <{algo}@example.org>");
        gpg_quiet(home, &["--quick-gen-key", &uid, algo, "sign,cert", "never"]);
        let o = Command::new("gpg").args(["--homedir", home.to_str().unwrap(), "--with-colons", "-k", &uid]).output();
        let colons = String::from_utf8_lossy(&o.unwrap().stdout).into_owned();
        let fpr = colons.lines().find(|l| l.starts_with("fpr:")).unwrap().split(':').nth(9).unwrap().to_string();
        if let Some(sub) = sub {
            gpg_quiet(home, &["--quick-add-key", &fpr, sub, "encr", "never"]);
        }
        fprs.push((algo, fpr));
    }
    fprs
}

/// Certifications with every hash gpg takes, by RSA, DSA, Ed25519 and
/// ECDSA keys (gpg makes what each key allows, MD5 only with
/// `--allow-weak-digest-algos`): statuses and reads equal the live gpg's,
/// whose `--check-sigs` rejects MD5 (`%`, "Invalid digest algorithm") once
/// it has the signer's key.
fn sigs_equal_live_gpg_for_every_hash() {
    let (dir, home) = empty_home();
    let keys = [
        ("rsa1024", None),
        ("dsa1024", None),
        ("dsa3072", None),
        ("ed25519", None),
        ("nistp256", None),
        ("rsa2048", None),
    ];
    let fprs = make_keys(&home, &keys);
    let targets: Vec<&String> =
        fprs.iter().filter(|(a, _)| matches!(*a, "ed25519" | "rsa2048")).map(|f| &f.1).collect();
    for (signer, _) in &fprs {
        for hash in ["MD5", "SHA1", "RIPEMD160", "SHA224", "SHA384", "SHA512"] {
            for target in &targets {
                // gpg refuses some pairs (a hash too short for the key, a signer certifying itself).
                let _ = Command::new("gpg")
                    .args(gpg_batch_args(&home))
                    .args([
                        "--allow-weak-digest-algos",
                        "--cert-digest-algo",
                        hash,
                        "-u",
                        &format!("<{signer}@example.org>"),
                    ])
                    .args(["--quick-sign-key", target])
                    .output()
                    .expect("run gpg");
            }
        }
    }
    stop_gnupg_daemons(&home);
    let kbx = dir.path().join("hashes.kbx");
    std::fs::copy(home.join("pubring.kbx"), &kbx).unwrap();
    let text = gpg_colon_listing(&home, "--check-sigs");
    let hashes: std::collections::BTreeSet<&str> =
        text.lines().filter(|l| l.starts_with("sig:")).map(|l| l.split(':').nth(15).unwrap()).collect();
    assert!(hashes.contains("1") && hashes.len() >= 4, "hashes gpg made: {hashes:?}");
    compare(&kbx, false);
}

/// A copy of `kbx` (named after it, `-edited` added) with `edit` applied
/// to each OpenPGP blob (see [`edit_blob`]).
fn edit_openpgp_blobs(kbx: &Path, mut edit: impl FnMut(&mut Vec<u8>, &[(u8, usize, usize)])) -> PathBuf {
    let blobs: Vec<Vec<u8>> = split_blobs(&std::fs::read(kbx).unwrap())
        .into_iter()
        .map(|blob| if blob[4] == 2 { edit_blob(&blob, &mut edit) } else { blob })
        .collect();
    let out = kbx.with_file_name(format!("{}-edited.kbx", kbx.file_stem().unwrap().to_string_lossy()));
    std::fs::write(&out, blobs.concat()).unwrap();
    out
}

crate::tests![
    sigs_equal_gpg_on_the_fixtures needs ["gpg", "strace"],
    sigs_equal_gpg_on_a_generated_small_keybox needs ["gpg", "strace"],
    sigs_equal_gpg_on_a_generated_tiny_keybox needs ["gpg", "strace"],
    io_summary_equals_strace_for_the_sig_workloads needs ["strace"],
    index_reads_the_file_once,
    bad_input_gets_gpgs_status needs ["gpg"],
    summary_counts_verified_and_cached_signatures needs ["gpg"],
    a_truncated_keyblock_is_a_one_line_error,
    recorded_gpg_statuses_for_every_algorithm,
    sigs_equal_live_gpg_on_keys_of_every_curve needs ["gpg", "strace"],
    sigs_equal_live_gpg_for_every_hash needs ["gpg", "strace"],
    primary_user_id_first_as_gpg_lists_it needs ["gpg", "strace"],
    time_conflicts_as_gpg_marks_them needs ["gpg", "strace"],
];
