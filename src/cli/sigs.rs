//! `list --with-sigs` / `list --check-sigs`: run and print, in gpg's
//! layout (`gpg --list-sigs`, `gpg --check-sigs`) or as JSON lines.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use super::report::{report, say, Reported};
use super::store;
use kbxscope::io::IoTally;
use kbxscope::lookup::Strategy;
use kbxscope::openpgp::{Judge, Mode, SigCounts, SigGroup, SigLine, SigStatus};
use kbxscope::workload::sigs::{self, KeySigs};

/// Run the listing, judged by `judge`.
pub(super) fn list(
    file: Option<&Path>,
    mode: Mode,
    lookup: Strategy,
    judge: Judge,
    json: bool,
    tally: &IoTally,
) -> Result<ExitCode> {
    let store = store::open(file, tally)?;
    let path = store.path().to_path_buf();
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut failed: Option<io::Error> = None;
    let print = |k: KeySigs| {
        if failed.is_some() {
            return;
        }
        let r = if json {
            serde_json::to_writer(&mut out, &k).map_err(io::Error::from).and_then(|()| writeln!(out))
        } else {
            out.write_all(render(&k, mode).as_bytes())
        };
        if let Err(e) = r {
            failed = Some(e);
        }
    };
    let ran = sigs::run(&store, mode, lookup, judge, print)?;
    drop(store);
    if let Some(e) = failed {
        return Err(e.into());
    }
    out.flush()?;
    drop(out);
    if mode == Mode::CheckSigs && !json {
        eprint!("{}", summary(&ran.outcome.counts));
    }
    let mut reported: Vec<Reported> = ran.places.row_problems().iter().map(|p| say(&path, p)).collect();
    if let Some(e) = &ran.outcome.fatal {
        reported.push(report(&path, e, &ran.places));
    }
    if let Some(last) = reported.pop() {
        return Err(last.into());
    }
    Ok(ExitCode::SUCCESS)
}

/// gpg's closing lines of `--check-sigs` (on stderr, as gpg logs them).
pub fn summary(c: &SigCounts) -> String {
    let mut s = String::new();
    let mut say = |n: u64, one: &str, many: &str| {
        if n == 1 {
            let _ = writeln!(s, "kbxscope: 1 {one}");
        } else if n > 1 {
            let _ = writeln!(s, "kbxscope: {n} {many}");
        }
    };
    say(c.good, "good signature", "good signatures");
    say(c.bad, "bad signature", "bad signatures");
    say(c.no_key, "signature not checked due to a missing key", "signatures not checked due to missing keys");
    say(c.error, "signature not checked due to an error", "signatures not checked due to errors");
    s
}

/// One key the way `gpg --list-sigs` / `--check-sigs` prints it (without
/// trust columns: kbxscope has no trust database).
pub fn render(k: &KeySigs, mode: Mode) -> String {
    let key = &k.key;
    let mut s = String::new();
    let _ = writeln!(s, "pub   {} {} [{}]", key.algorithm, date(&key.created), key.usage);
    let _ = writeln!(s, "      {}", key.fingerprint);
    if let Some(p) = &k.problem {
        let _ = writeln!(s, "      [{p}]");
    }
    for g in &k.signatures {
        group_line(&mut s, k, g);
        for l in &g.sigs {
            if mode == Mode::CheckSigs && l.status == SigStatus::NoKey {
                continue; // gpg's text output leaves these out
            }
            sig_line(&mut s, l);
        }
    }
    s.push('\n');
    s
}

fn group_line(s: &mut String, k: &KeySigs, g: &SigGroup) {
    match g.kind {
        "uid" => {
            let _ = writeln!(s, "uid           {}", g.label);
        }
        "uat" => {
            let _ = writeln!(s, "uat           {}", g.label);
        }
        "sub" => match k.key.subkeys.iter().find(|sub| sub.fingerprint == g.label) {
            Some(sub) => {
                let _ = writeln!(s, "sub   {} {} [{}]", sub.algorithm, date(&sub.created), sub.usage);
            }
            None => {
                let _ = writeln!(s, "sub   unknown {}", g.label);
            }
        },
        _ => {}
    }
}

fn sig_line(s: &mut String, l: &SigLine) {
    let word = if matches!(l.class_byte, 0x20 | 0x28 | 0x30) { "rev" } else { "sig" };
    let level = match l.class_byte {
        0x11..=0x13 => char::from(b'0' + l.class_byte - 0x10),
        _ => ' ',
    };
    let local = if l.class.get(2..3) == Some("l") { 'L' } else { ' ' };
    let created = l.created.as_deref().map_or("", date);
    let _ = write!(s, "{word}{}{level} {local}      {} {created}  ", l.mark, l.signer_key_id);
    match (l.status, &l.signer_uid) {
        (SigStatus::Error, _) => {
            let _ = write!(s, "[{}] ", l.reason.as_deref().unwrap_or("error"));
        }
        (_, Some(uid)) => s.push_str(uid),
        (_, None) => s.push_str("[User ID not found]"),
    }
    s.push('\n');
}

fn date(rfc3339: &str) -> &str {
    rfc3339.split('T').next().unwrap_or(rfc3339)
}
