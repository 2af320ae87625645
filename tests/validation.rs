//! `list --with-validation`: verdicts against gpgsm, strategies against
//! each other, and file events against gpgsm's under strace.

use std::path::Path;
use std::process::Command;

use crate::common::{fixture, gpgsm_text_verdicts, io_summary, run, stderr, stdout, tool, KEYBOXES};

/// Our verdicts from `list --with-validation --json`.
fn our_verdicts(kbx: &Path, trustlist: &Path, lookup: &str, extra: &[&str]) -> Vec<(String, String)> {
    let mut args =
        vec!["list", "--json", "--with-validation", "--lookup", lookup, "--trustlist", trustlist.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(kbx.to_str().unwrap());
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let reason = v["validation"]["reason"].as_str().map_or("good".to_string(), |r| format!("bad: {r}"));
            assert_eq!(v["validation"]["status"], if reason == "good" { "good" } else { "bad" });
            assert_eq!(v["validation"]["chain"][0], v["fingerprint"]);
            (v["fingerprint"].as_str().unwrap().to_string(), reason)
        })
        .collect()
}

#[test]
fn fixture_verdicts_equal_recorded_gpgsm() {
    for kbx in KEYBOXES {
        let recorded =
            String::from_utf8_lossy(&std::fs::read(fixture(&format!("{kbx}.gpgsm-k-validation.txt"))).unwrap())
                .into_owned();
        let mut want = gpgsm_text_verdicts(&recorded);
        want.sort();
        assert!(want.len() >= 24);
        for lookup in ["gnupg", "scan", "index"] {
            let mut got = our_verdicts(
                &fixture(&format!("{kbx}.kbx")),
                &fixture(&format!("{kbx}.trustlist.txt")),
                lookup,
                &["--at", "2026-12-01"],
            );
            got.sort();
            assert_eq!(got, want, "{kbx} --lookup {lookup}");
        }
    }
}

#[test]
fn text_output_marks_certificates_like_gpgsm() {
    let o = run([
        "list",
        "--with-validation",
        "--at",
        "2026-12-01",
        "--trustlist",
        fixture("gnupg-deleted.trustlist.txt").to_str().unwrap(),
        fixture("gnupg-deleted.kbx").to_str().unwrap(),
    ]);
    let text = stdout(&o);
    assert_eq!(text.matches("  [certificate is good]\n").count(), 38);
    assert_eq!(text.matches("  [certificate is bad: Missing issuer certificate]\n").count(), 1);
    assert!(!text.contains("pub   "), "only certificates are listed");
}

#[test]
fn without_a_trustlist_nothing_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("k.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
    let o = crate::common::bin()
        .env("GNUPGHOME", dir.path())
        .env("HOME", dir.path())
        .args(["list", "--with-validation", "--json", kbx.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(stderr(&o).contains("no trustlist found"), "{}", stderr(&o));
    assert!(stdout(&o).lines().all(|l| l.contains("\"reason\":\"Not trusted\"")));
    // next to the keybox it is found
    std::fs::copy(fixture("gnupg-mixed.trustlist.txt"), dir.path().join("k.kbx.trustlist.txt")).unwrap();
    let o = crate::common::bin()
        .env("HOME", dir.path())
        .args(["list", "--with-validation", "--json", "--at", "2026-12-01", kbx.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(stdout(&o).matches("\"status\":\"good\"").count(), 24);
}

#[test]
fn index_reads_the_file_once() {
    // 45 blobs, 20 of them OpenPGP keys that the index passes over.
    let kbx = fixture("gnupg-mixed.kbx");
    let size = std::fs::metadata(&kbx).unwrap().len();
    let trust = fixture("gnupg-mixed.trustlist.txt");
    let summary = |arg: &str| {
        let o = run([
            "--io-summary=json",
            "--kbx-buffer-size",
            arg,
            "list",
            "--with-validation",
            "--lookup",
            "index",
            "--at",
            "2026-12-01",
            "--trustlist",
            trust.to_str().unwrap(),
            kbx.to_str().unwrap(),
        ]);
        assert_eq!(stdout(&o).matches("[certificate is good]").count(), 24, "{arg}");
        io_summary(&o)
    };
    for (arg, bytes) in [("0", 8192u64), ("64", 65536), ("4096B", 4096), ("1024B", 1024)] {
        let s = summary(arg);
        let total = s["events"]["total"].as_u64().unwrap();
        assert!(total <= size.div_ceil(bytes) + 4, "{arg}: {total} events");
        assert_eq!(s["events"]["open"], 1);
        if bytes <= 8192 {
            // Long OpenPGP blobs are skipped with a seek, not read.
            assert!(s["events"]["seek"].as_u64().unwrap() > 0, "{arg}: {s}");
            assert!(s["bytes_read"].as_u64().unwrap() < size / 2, "{arg}: {s}");
        }
    }
    // Unbuffered: each blob's prefix, then its body read or a seek past it.
    let s = summary("unbuffered");
    assert!(s["events"]["total"].as_u64().unwrap() <= 2 * 45 + 4, "{s}");
}

/// gpgsm's read(2) calls on pubring.kbx, counted by strace. No `-f`: gpgsm
/// reads the keybox itself, and following forks would also follow the
/// gpg-agent daemon it starts, which outlives it.
fn gpgsm_reads(strace: &Path, gpgsm: &Path, home: &Path) -> u64 {
    let trace = home.join("trace.txt");
    let st = Command::new(strace)
        .args(["-y", "-qq", "-s", "0", "-e", "trace=read", "-o"])
        .arg(&trace)
        .arg(gpgsm)
        .args(["--homedir", home.to_str().unwrap(), "--batch", "-k", "--with-validation", "--disable-dirmngr"])
        .output()
        .unwrap();
    assert!(st.status.success() || st.status.code() == Some(1));
    let _ = Command::new("gpgconf").args(["--homedir", home.to_str().unwrap(), "--kill", "all"]).output();
    let text = std::fs::read_to_string(&trace).unwrap();
    text.lines().filter(|l| l.contains("/pubring.kbx>")).count() as u64
}

#[test]
fn gnupg_lookup_matches_live_gpgsm() {
    let name = "gnupg_lookup_matches_live_gpgsm";
    let (Some(gpgsm), Some(strace)) = (tool("gpgsm", name), tool("strace", name)) else { return };
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("small.kbx");
    let o = run(["gen", kbx.to_str().unwrap(), "--preset", "small"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let trust = dir.path().join("small.kbx.trustlist.txt");
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::copy(&kbx, home.join("pubring.kbx")).unwrap();
    std::fs::copy(&trust, home.join("trustlist.txt")).unwrap();
    // verdicts, certificate by certificate
    let o = Command::new(&gpgsm)
        .args(["--homedir", home.to_str().unwrap(), "--batch", "-k", "--with-validation", "--disable-dirmngr"])
        .output()
        .unwrap();
    let _ = Command::new("gpgconf").args(["--homedir", home.to_str().unwrap(), "--kill", "all"]).output();
    let mut theirs = gpgsm_text_verdicts(&String::from_utf8_lossy(&o.stdout));
    theirs.sort();
    assert_eq!(theirs.len(), 100);
    for lookup in ["gnupg", "scan", "index"] {
        let mut ours = our_verdicts(&kbx, &trust, lookup, &[]);
        ours.sort();
        assert_eq!(ours, theirs, "--lookup {lookup}");
    }
    // read(2) calls at GnuPG 2.2's fixed 8 KiB: within 5%
    std::fs::copy(&kbx, home.join("pubring.kbx")).unwrap();
    let theirs = gpgsm_reads(&strace, &gpgsm, &home) as f64;
    let o = run([
        "--io-summary=json",
        "--kbx-buffer-size",
        "0",
        "list",
        "--with-validation",
        "--trustlist",
        trust.to_str().unwrap(),
        kbx.to_str().unwrap(),
    ]);
    let ours = io_summary(&o)["events"]["read"].as_u64().unwrap() as f64;
    eprintln!(
        "reads at 8 KiB: gpgsm {theirs}, kbxscope --lookup gnupg {ours} ({:+.2}%)",
        (ours / theirs - 1.0) * 100.0
    );
    assert!((ours / theirs - 1.0).abs() <= 0.05, "gpgsm {theirs} reads, kbxscope {ours}");
}
