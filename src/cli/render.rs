//! Text forms of results: key listings and the I/O summary.

use std::fmt::Write as _;

use kbxscope::events::FileStats;
use kbxscope::events::{FileOp, IoStats};
use kbxscope::io::BufferSize;
use kbxscope::openpgp::{name_hash, KeyLife, OpenPgpKey};
use kbxscope::timefmt::rfc3339;
use kbxscope::trustdb::{KeyState, Validities};
use kbxscope::workload::{KeyDetails, Listed};

/// A listing entry the way `gpg -k` (OpenPGP) or `gpgsm -k` (X.509) shows it,
/// keys' expiry judged at `now`: `gpg -k` notes `[expires: …]` or
/// `[expired: …]` and leaves out revoked and expired user ids and subkeys
/// (every subkey of an expired key). `validity`: the user ids' validity
/// column (`uid           [ unknown] …`), where it is computed.
pub fn listing(l: &Listed, now: i64, validity: Option<&Validities>) -> String {
    let mut s = String::new();
    let eph = if l.ephemeral { " [ephemeral]" } else { "" };
    match &l.key {
        KeyDetails::Openpgp(k) => {
            let note = expiry_note(&k.life, now);
            let _ = writeln!(s, "pub   {} {} [{}]{note}{eph}", k.algorithm, date(&k.created), k.usage);
            let _ = writeln!(s, "      {}", k.fingerprint);
            if let Some(why) = &k.undecoded {
                let _ = writeln!(s, "      [{why}]");
            }
            for (i, uid) in k.user_ids.iter().enumerate() {
                if k.user_id_lives.get(i).is_some_and(|l| l.unusable(now)) {
                    continue;
                }
                let bytes = k.user_id_bytes.get(i).map_or(uid.as_bytes(), Vec::as_slice);
                let _ = writeln!(
                    s,
                    "uid           {}{uid}",
                    column(validity, &k.fingerprint, key_state(&k.life, now), &name_hash(bytes))
                );
            }
            // gpg prints a user attribute where a user id goes, by its name.
            for (name, hash) in &k.user_attribute_names {
                let _ = writeln!(
                    s,
                    "uid           {}{name}",
                    column(validity, &k.fingerprint, key_state(&k.life, now), hash)
                );
            }
            for _ in k.user_attribute_names.len()..k.user_attributes {
                let _ = writeln!(s, "uat           [user attribute]");
            }
            for sub in k.subkeys.iter().filter(|sub| !(k.life.unusable(now) || sub.life.unusable(now))) {
                let note = expiry_note(&sub.life, now);
                let _ = writeln!(s, "sub   {} {} [{}]{note}", sub.algorithm, date(&sub.created), sub.usage);
            }
        }
        KeyDetails::X509(c) => {
            let _ = writeln!(s, "           ID: 0x{}{eph}", c.key_id);
            let _ = writeln!(s, "          S/N: {}", c.serial);
            let _ = writeln!(s, "       Issuer: {}", c.issuer);
            let _ = writeln!(s, "      Subject: {}", c.subject);
            for mail in &c.emails {
                let _ = writeln!(s, "          aka: {mail}");
            }
            let _ = writeln!(s, "     validity: {} through {}", datetime(&c.not_before), datetime(&c.not_after));
            let _ = writeln!(s, "     key type: {}", c.key_algorithm);
            let _ = writeln!(s, "  fingerprint: {}", colon_hex(&c.fingerprint));
        }
    }
    if let Some(v) = &l.validation {
        for note in &v.notes {
            let _ = writeln!(s, "  [{note}]");
        }
        match v.reason {
            None => s.push_str("  [certificate is good]\n"),
            Some(r) => {
                let _ = writeln!(s, "  [certificate is bad: {r}]");
            }
        }
    }
    s
}

/// How a key stands at `now`, for its validity.
pub(super) fn key_state(life: &KeyLife, now: i64) -> KeyState {
    KeyState { revoked: life.revoked, expired: life.expired(now) }
}

/// The validity column and its space before a shown user id (its `name`
/// hash) of the key with the hex `fingerprint`; empty where the validity
/// is not computed.
pub(super) fn column(validity: Option<&Validities>, fingerprint: &str, key: KeyState, name: &[u8; 20]) -> String {
    let fpr = kbx_format::dump::parse_hex(fingerprint).unwrap_or_default();
    validity
        .and_then(|v| v.user_id(&fpr, key, name, false, false))
        .map(|v| format!("{} ", v.column()))
        .unwrap_or_default()
}

/// Add to a key's JSON object its validity (`validity`, gpg's colon
/// listing's field 2 of `pub`) and its user ids' (`user_id_validity`, in
/// the order of `user_ids`); nothing for a model not computed.
pub(super) fn add_validity(value: &mut serde_json::Value, k: &OpenPgpKey, v: &Validities, now: i64) {
    let fpr = kbx_format::dump::parse_hex(&k.fingerprint).unwrap_or_default();
    let state = key_state(&k.life, now);
    let Some(key) = v.key(&fpr, state) else { return };
    let uids: Vec<_> = k
        .user_id_bytes
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let life = k.user_id_lives.get(i);
            let (revoked, expired) = life.map_or((false, false), |l| (l.revoked, l.unusable(now) && !l.revoked));
            v.user_id(&fpr, state, &name_hash(id), revoked, expired)
        })
        .collect();
    value["validity"] = serde_json::json!(key);
    value["user_id_validity"] = serde_json::json!(uids);
}

/// gpg's note of a key's revocation or expiry after its usage.
pub(super) fn expiry_note(life: &KeyLife, now: i64) -> String {
    if let (true, Some(on)) = (life.revoked, life.revoked_on) {
        return format!(" [revoked: {}]", date(&rfc3339(on)));
    }
    match life.expires {
        Some(at) if life.expired(now) => format!(" [expired: {}]", date(&rfc3339(at))),
        Some(at) => format!(" [expires: {}]", date(&rfc3339(at))),
        None => String::new(),
    }
}

fn date(rfc3339: &str) -> &str {
    rfc3339.split('T').next().unwrap_or(rfc3339)
}

fn datetime(rfc3339: &str) -> String {
    rfc3339.trim_end_matches('Z').replacen('T', " ", 1)
}

fn colon_hex(hex: &str) -> String {
    hex.as_bytes().chunks(2).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join(":")
}

/// `--io-summary=text`.
pub fn io_summary(s: &IoStats, size: BufferSize, files: &[FileStats]) -> String {
    let mut out = String::new();
    // A write replay's files are a keybox's, SQLite's a database's.
    let keybox_files = files.first().is_some_and(|f| !f.path.ends_with(".db"));
    if files.is_empty() || keybox_files {
        let _ = writeln!(out, "io summary: buffer {size} ({} bytes)", s.buffer_size);
    } else {
        let _ = writeln!(out, "io summary: SQLite's system calls, and kbxscope's look at the file's first bytes");
    }
    let _ = writeln!(out, "  {:<6} {:>10} {:>12}", "op", "events", "time");
    let more = FileOp::MORE.into_iter().filter(|op| s.count(*op) > 0);
    for op in FileOp::ALL.into_iter().chain(more) {
        let _ = writeln!(out, "  {:<6} {:>10} {:>12}", op.name(), s.count(op), duration(s.time(op)));
    }
    let _ = writeln!(out, "  {:<6} {:>10} {:>12}", "total", s.total_events(), duration(s.total_time()));
    let _ = write!(out, "  bytes read: {}, logical reads: {}", s.bytes_read, s.logical_reads);
    if s.bytes_written > 0 {
        let _ = write!(out, ", bytes written: {}", s.bytes_written);
    }
    out.push('\n');
    lock_waits(&mut out, s);
    if let Some(s) = kbxscope::crypto::tally::so_far() {
        let each: Vec<String> = s.verified.iter().map(|(v, n)| format!("{} {n}", v.name())).collect();
        let _ = writeln!(
            out,
            "  signatures verified: {} ({}); taken from GnuPG's cache: {}",
            s.total_verified(),
            each.join(", "),
            s.cached
        );
    }
    if !files.is_empty() {
        let _ = writeln!(out, "  by file{}:", if keybox_files { "" } else { " (SQLite's calls)" });
        for f in files {
            let ops: Vec<String> = FileOp::EVERY
                .into_iter()
                .filter(|op| f.stats.count(*op) > 0)
                .map(|op| format!("{} {}", op.name(), f.stats.count(op)))
                .collect();
            let mut ops = ops.join(", ");
            if f.stats.lock_waits.count > 0 {
                let w = &f.stats.lock_waits;
                let sep = if ops.is_empty() { "" } else { "; " };
                ops = format!("{ops}{sep}{} lock wait(s), {}", w.count, duration(w.time_ns));
            }
            let _ = writeln!(out, "    {}: {} ({ops})", f.path, f.stats.total_events());
        }
    }
    out
}

/// The line of the waits for another process's lock, if there were some.
pub(super) fn lock_waits(out: &mut String, s: &IoStats) {
    if s.lock_waits.count > 0 {
        let w = &s.lock_waits;
        let _ = writeln!(out, "  waits for another process's lock: {}, {}", w.count, duration(w.time_ns));
    }
}

/// A duration in ns with a readable unit (every text table of the CLI).
pub(super) fn duration(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_hex() {
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(1500), "1.5 µs");
        assert_eq!(duration(2_500_000), "2.5 ms");
        assert_eq!(duration(3_000_000_000), "3.000 s");
        assert_eq!(colon_hex("ABCD01"), "AB:CD:01");
        assert_eq!(datetime("2026-11-30T07:17:58Z"), "2026-11-30 07:17:58");
    }
}
