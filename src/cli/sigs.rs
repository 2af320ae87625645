//! `list --with-sigs` / `list --check-sigs`: run and print, in gpg's
//! layout (`gpg --list-sigs`, `gpg --check-sigs`) or as JSON lines.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use super::args::TrustArgs;
use super::render::{add_validity, column, expiry_note, key_state};
use super::report::{report, say, Reported};
use super::store;
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::io::IoTally;
use kbxscope::lookup::Strategy;
use kbxscope::openpgp::{Judge, Mode, SigCounts, SigGroup, SigLine, SigStatus};
use kbxscope::store::StoreKind;
use kbxscope::trustdb::Validities;
use kbxscope::workload::sigs::{self, KeySigs};

/// Run the listing, judged by `judge`.
pub(super) fn list(
    file: Option<&Path>,
    mode: Mode,
    lookup: Strategy,
    judge: Judge,
    json: bool,
    trust: &TrustArgs,
    tally: &IoTally,
) -> Result<ExitCode> {
    let store = store::open(file, tally)?;
    let path = store.path().to_path_buf();
    if judge.version == GnupgVersion::V2_2 && store.kind() == StoreKind::Keyboxd {
        anyhow::bail!(
            "'{}' is keyboxd's database, and GnuPG 2.2 has no keyboxd: --gnupg-version 2.2 replays gpg on a keybox",
            path.display()
        );
    }
    let validity = super::validity::for_store(&path, store.kind(), trust, judge.now, judge.version)?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut failed: Option<io::Error> = None;
    let mut shown = SigCounts::default();
    let print = |k: KeySigs| {
        if failed.is_some() {
            return;
        }
        let r = if json {
            let mut value = serde_json::to_value(&k).unwrap_or_default();
            add_validity(&mut value, &k.key, &validity, judge.now);
            serde_json::to_writer(&mut out, &value).map_err(io::Error::from).and_then(|()| writeln!(out))
        } else {
            out.write_all(render(&k, mode, judge, &validity, &mut shown).as_bytes())
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
        eprint!("{}", summary(&shown));
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

/// One key the way `gpg --list-sigs` / `--check-sigs` of `judge`'s
/// version prints it (the user ids' validity from `validity`), counting
/// in `shown` the statuses gpg's summary counts: gpg
/// leaves out revoked and expired user ids and subkeys with their
/// signatures, and the signatures whose signer is missing (counted); gpg
/// 2.4 also the signatures it cannot use (not counted), sorts the rest
/// and prints `[self-signature]` for the key's own.
pub fn render(k: &KeySigs, mode: Mode, judge: Judge, validity: &Validities, shown: &mut SigCounts) -> String {
    let key = &k.key;
    let v24 = judge.version == GnupgVersion::V2_4;
    let mut s = String::new();
    let expiry = expiry_note(&key.life, judge.now);
    let _ = writeln!(s, "pub   {} {} [{}]{expiry}", key.algorithm, date(&key.created), key.usage);
    let _ = writeln!(s, "      {}", key.fingerprint);
    if let Some(p) = &k.problem {
        let _ = writeln!(s, "      [{p}]");
    }
    for g in k.signatures.iter().filter(|g| !g.unusable) {
        group_line(&mut s, k, g, judge.now, validity);
        let mut lines: Vec<&SigLine> = g.sigs.iter().filter(|l| !(v24 && l.unusable)).collect();
        if v24 {
            // gpg 2.4 sorts them (`--list-options sort-sigs`, on by
            // default): self-signatures first, then by signer key id,
            // creation time and class.
            lines.sort_by_key(|l| (!l.self_sig, &l.signer_key_id, &l.created, l.class_byte));
        }
        for l in lines {
            shown.add(l.status);
            if mode == Mode::CheckSigs && l.status == SigStatus::NoKey {
                continue; // gpg's text output leaves these out
            }
            // --list-sigs marks nothing (the colon listing marks a missing
            // signer `?`).
            let mark = if mode == Mode::WithSigs { ' ' } else { l.mark };
            sig_line(&mut s, l, mark, v24 && l.self_sig);
        }
    }
    s.push('\n');
    s
}

fn group_line(s: &mut String, k: &KeySigs, g: &SigGroup, now: i64, validity: &Validities) {
    match g.kind {
        "uid" => {
            let state = key_state(&k.key.life, now);
            let _ = writeln!(
                s,
                "uid           {}{}",
                column(Some(validity), &k.key.fingerprint, state, &g.name_hash.unwrap_or_default()),
                g.label
            );
        }
        "uat" if g.name_hash.is_some() => {
            // gpg prints a user attribute where a user id goes, by its name.
            let state = key_state(&k.key.life, now);
            let _ = writeln!(
                s,
                "uid           {}{}",
                column(Some(validity), &k.key.fingerprint, state, &g.name_hash.unwrap_or_default()),
                g.label
            );
        }
        "uat" => {
            let _ = writeln!(s, "uat           {}", g.label);
        }
        "sub" => match k.key.subkeys.iter().find(|sub| sub.fingerprint == g.label) {
            Some(sub) => {
                let expiry = g.life.map(|l| expiry_note(&l, now)).unwrap_or_default();
                let _ = writeln!(s, "sub   {} {} [{}]{expiry}", sub.algorithm, date(&sub.created), sub.usage);
            }
            None => {
                let _ = writeln!(s, "sub   unknown {}", g.label);
            }
        },
        _ => {}
    }
}

/// A signature's line with `mark`; `self_text`: `[self-signature]` for
/// the user id.
fn sig_line(s: &mut String, l: &SigLine, mark: char, self_text: bool) {
    let word = if matches!(l.class_byte, 0x20 | 0x28 | 0x30) { "rev" } else { "sig" };
    let level = match l.class_byte {
        0x11..=0x13 => char::from(b'0' + l.class_byte - 0x10),
        _ => ' ',
    };
    let local = if l.class.get(2..3) == Some("l") { 'L' } else { ' ' };
    let created = l.created.as_deref().map_or("", date);
    let cols: String = l.columns.iter().collect();
    let _ = write!(s, "{word}{mark}{level} {local}{cols} {} {created}  ", l.signer_key_id);
    match (l.status, &l.signer_uid) {
        (SigStatus::Error, _) => {
            let _ = write!(s, "[{}] ", l.reason.as_deref().unwrap_or("error"));
        }
        (_, _) if self_text => s.push_str("[self-signature]"),
        (_, Some(uid)) => s.push_str(uid),
        (_, None) => s.push_str("[User ID not found]"),
    }
    s.push('\n');
}

fn date(rfc3339: &str) -> &str {
    rfc3339.split('T').next().unwrap_or(rfc3339)
}
