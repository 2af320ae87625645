//! Every trustlist form gpg-agent reads (or rejects), against a live
//! gpgsm: the same bracketed notes and verdicts for every certificate of
//! a GnuPG-made keybox.

use crate::common::{fixture, gpgsm_listing, gpgsm_text_notes, run, stderr, stdout, validation_args};

const A: &str = "98:BC:D9:D9:6A:D2:06:EB:81:1A:46:7D:5A:41:F0:85:49:69:C8:97";
const B: &str = "05:21:49:10:9F:40:F0:1B:AA:FC:1D:48:CB:A7:73:55:A8:B5:F7:18";

/// (name, trustlist text, whether gpg-agent accepts it).
fn forms() -> Vec<(&'static str, String, bool)> {
    let plain = |s: &str| s.replace(':', "");
    vec![
        ("flags S", format!("{A} S\n{B} S\n"), true),
        ("no flag", format!("{A}\n{B}\n"), true),
        ("flag P", format!("{A} P\n{B} p\n"), true),
        ("flag *", format!("# roots\n\n{A} *\n{B} s\n"), true),
        ("lower case, no colons", format!("{}\n{} S\n", plain(A).to_lowercase(), plain(B)), true),
        ("disabled after trusted", format!("{A} S\n!{A} S\n{B} S\n"), true),
        ("disabled first", format!("! {A} S\n{A} S\n{B} S\n"), true),
        ("tabs, CR, keywords", format!("\t {A}\tS \t relax cm\t\n  {B} S qual de-vs foo\r\n"), true),
        ("include-default", format!("include-default\n{A} S\n{B} S\n"), true),
        ("spaces in the fingerprint", format!("{B} S\n98BC D9D9 6AD2 06EB 811A 467D 5A41 F085 4969 C897 S\n"), false),
        ("some colons", format!("{B} S\n98BC:D9:D9:6A:D2:06:EB:81:1A:46:7D:5A:41:F0:85:49:69:C8:97 S\n"), false),
        ("unknown flag", format!("{A} X\n{B} S\n"), false),
        ("two flags", format!("{A} SP\n{B} S\n"), false),
        ("a value", format!("{A} S relax=1\n{B} S\n"), false),
        ("no final line feed", format!("{A} S\n{B} S"), false),
        ("a long line", format!("{A} S {}\n{B} S\n", "relax ".repeat(40)), false),
    ]
}

fn trustlist_forms_match_live_gpgsm() {
    for (form, text, accepted) in forms() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let kbx = home.join("pubring.kbx");
        std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
        let trust = home.join("trustlist.txt");
        std::fs::write(&trust, &text).unwrap();
        let theirs = gpgsm_text_notes(&gpgsm_listing(&home));
        assert!(theirs.len() >= 24, "{form}");
        std::fs::copy(fixture("gnupg-mixed.kbx"), &kbx).unwrap();
        let ours = run(validation_args(&[], &kbx, &trust));
        assert!(ours.status.success(), "{form}: {}", stderr(&ours));
        assert_eq!(gpgsm_text_notes(&stdout(&ours)), theirs, "{form}");
        let warned = stderr(&ours).contains("gpg-agent rejects the whole trustlist");
        assert_eq!(warned, !accepted, "{form}: {}", stderr(&ours));
        if !accepted {
            assert!(stderr(&ours).contains("trustlist.txt: line "), "{form}: {}", stderr(&ours));
            assert_eq!(stderr(&ours).lines().count(), 1, "{form}: one line");
        }
    }
}

crate::tests![
    trustlist_forms_match_live_gpgsm needs ["gpgsm"],
];
