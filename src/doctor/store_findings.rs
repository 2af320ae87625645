//! The findings of the store weighed: damage, oversized and duplicate
//! blobs, bad checksums, flooded keys, signatures by unknown signers, the
//! maintenance pass and deleted space; and the report's view of the store.

use std::path::Path;

use serde_json::{json, Value};

use super::findings::{
    finding, mib, sh, Finding, FLOODED_BYTES, FLOODED_SIGNATURES, MAINTENANCE_AGE, MAINTENANCE_BYTES,
};
use super::layout::StoreUse;
use super::{Options, StoreHealth, Weight};
use crate::gnupg_version::GnupgVersion;
use crate::kbx::dump::hex_upper as hex;
use crate::kbx::BlobType;
use crate::workload::health::{Health, Weighed};

/// The report's view of a weighed store.
pub(super) fn health_view(path: &Path, h: &Health) -> StoreHealth {
    let weight = |k: &Weighed| Weight {
        fingerprint: hex(&k.fingerprint),
        name: k.name.clone(),
        blob_type: k.blob_type.name(),
        index: k.index,
        bytes: k.bytes,
        signatures: k.signatures,
        unknown_signers: k.unknown_signers,
    };
    let top = |key: fn(&Weighed) -> u64| {
        let mut v: Vec<&Weighed> = h.keys.iter().collect();
        v.sort_by_key(|k| std::cmp::Reverse(key(k)));
        v.into_iter().take(5).map(weight).collect()
    };
    StoreHealth {
        path: path.to_path_buf(),
        bytes: h.file_bytes,
        blobs: h.blobs.iter().map(|(k, v)| (*k, *v)).collect(),
        deleted_bytes: h.deleted_bytes,
        last_maintenance: h.last_maintenance,
        signatures: h.signatures,
        unknown_signers: h.unknown_signers,
        largest: top(|k| k.bytes),
        most_signatures: top(|k| k.signatures),
    }
}

/// Whether a key is flooded.
pub(super) fn flooded(k: &Weighed) -> bool {
    k.blob_type == BlobType::OpenPgp && (k.signatures >= FLOODED_SIGNATURES || k.bytes >= FLOODED_BYTES)
}

/// The keys the unknown-signers finding is about: the rest, once the
/// flooded ones have theirs.
fn unknown_signers_share(h: &Health) -> (u64, u64) {
    h.keys.iter().filter(|k| !flooded(k)).fold((0, 0), |(u, s), k| (u + k.unknown_signers, s + k.signatures))
}

/// Whether the keys outside the flooded ones are mostly signed by unknown signers.
fn mostly_unknown(h: &Health) -> bool {
    let (unknown, all) = unknown_signers_share(h);
    unknown >= 100 && unknown * 2 >= all
}

/// The command gpg cleans a key with.
fn clean(gpg: &str, fpr: &str) -> String {
    format!("{gpg} --batch --edit-key {fpr} clean save")
}

/// What weighing the store found.
pub(super) fn store(h: &Health, s: &StoreUse, o: &Options, writable: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let path = &s.path;
    if let Some(e) = &h.fatal {
        out.push(finding(
            "damaged-store",
            format!("{}: {e}; the rest of the store was not read", path.display()),
            json!({ "path": path, "blob": e.index, "offset": e.offset, "error": e.to_string() }),
        ));
    }
    for (index, offset, why) in h.undecodable.iter().take(10) {
        out.push(finding(
            "damaged-store",
            format!("{}: blob {index} at byte {offset} does not decode: {why}", path.display()),
            json!({ "path": path, "blob": index, "offset": offset, "error": why }),
        ));
    }
    for (index, offset, length) in &h.too_large {
        out.push(
            finding(
                "oversized-key",
                format!(
                    "{}: blob {index} at byte {offset} is {} long, over GnuPG's 5 MiB limit: gpg skips it (\"key(s) skipped due to large size\")",
                    path.display(),
                    mib(u64::from(*length))
                ),
                json!({ "path": path, "blob": index, "offset": offset, "bytes": length }),
            )
            .note("gpg can neither list nor clean it; kbxscope dump shows it"),
        );
    }
    if !h.bad_checksums.is_empty() {
        let blobs: Vec<Value> = h.bad_checksums.iter().map(|(i, o)| json!({ "blob": i, "offset": o })).collect();
        out.push(
            finding(
                "bad-checksum",
                format!(
                    "{}: {} blob(s) whose checksum does not match, first blob {} at byte {}",
                    path.display(),
                    blobs.len(),
                    h.bad_checksums[0].0,
                    h.bad_checksums[0].1
                ),
                json!({ "path": path, "blobs": blobs }),
            )
            .note("kbxutil --stats reports them too; the keys should be imported again from a good copy"),
        );
    }
    for (fpr, blobs) in h.duplicates.iter().take(10) {
        out.push(finding(
            "duplicate-key",
            format!(
                "{}: {} is stored {} times (blobs {blobs:?}); GnuPG finds only the first",
                path.display(),
                hex(fpr),
                blobs.len()
            ),
            json!({ "path": path, "fingerprint": hex(fpr), "blobs": blobs }),
        ));
    }
    let floods: Vec<&Weighed> = h.keys.iter().filter(|k| flooded(k)).collect();
    if !floods.is_empty() {
        let keys: Vec<Value> = floods
            .iter()
            .map(|k| {
                json!({ "fingerprint": hex(&k.fingerprint), "name": k.name, "blob": k.index, "offset": k.offset,
                              "bytes": k.bytes, "signatures": k.signatures, "unknown_signers": k.unknown_signers })
            })
            .collect();
        let first = floods[0];
        let mut f = finding(
            "flooded-key",
            format!(
                "{} flooded key(s): {} ({}) has {} signatures in {}, {} by signers not in the store",
                floods.len(),
                hex(&first.fingerprint),
                first.name,
                first.signatures,
                mib(first.bytes),
                first.unknown_signers
            ),
            json!({ "path": path, "keys": keys }),
        );
        let cleanable: Vec<String> =
            floods.iter().filter(|k| k.unknown_signers > 0).map(|k| clean(&o.gpg, &hex(&k.fingerprint))).collect();
        if cleanable.is_empty() {
            f = f.note("its signatures are by keys the store holds: gpg's clean keeps them");
        } else {
            f = f.fix(cleanable.join(" && "));
        }
        out.push(f);
    }
    if mostly_unknown(h) {
        let (unknown, all) = unknown_signers_share(h);
        out.push(
            finding(
                "unknown-signers",
                format!(
                    "{unknown} of {all} signatures ({:.0}%) are by signers not in the store: gpg --check-sigs looks each up and finds nothing",
                    unknown as f64 * 100.0 / all.max(1) as f64
                ),
                json!({ "path": path, "unknown_signers": unknown, "signatures": all }),
            )
            .fix(format!(
                "{gpg} --with-colons --list-keys | awk -F: '$1==\"pub\"{{p=1}} $1==\"fpr\"&&p{{print $10; p=0}}' | while read -r k; do {gpg} --batch --edit-key \"$k\" clean save; done",
                gpg = o.gpg
            ))
            .note("clean also drops signatures that are expired, revoked or by expired keys, and user ids that are unusable"),
        );
    }
    if s.kind == "keybox" && writable {
        if let Some(stamp) = h.last_maintenance {
            let age = o.now - i64::from(stamp);
            if age >= MAINTENANCE_AGE && h.file_bytes >= MAINTENANCE_BYTES {
                out.push(maintenance(h, path, age, o));
            }
        }
    }
    let share = h.deleted_bytes as f64 / h.file_bytes.max(1) as f64;
    if h.deleted_bytes >= 1 << 20 || (share >= 0.10 && h.file_bytes >= 1 << 20) {
        out.push(
            finding(
                "deleted-space",
                format!(
                    "{} of the store ({:.0}%) are {} deleted blob(s), read past at every search",
                    mib(h.deleted_bytes),
                    share * 100.0,
                    h.deleted_blobs
                ),
                json!({ "path": path, "deleted_bytes": h.deleted_bytes, "deleted_blobs": h.deleted_blobs, "bytes": h.file_bytes }),
            )
            .note("GnuPG's maintenance pass drops them at the first start after its stamp is three hours old"),
        );
    }
    out
}

/// The maintenance pass the next start makes.
fn maintenance(h: &Health, path: &Path, age: i64, o: &Options) -> Finding {
    let drops = h.deleted_blobs > 0;
    let then = if drops {
        format!("it drops {} deleted blob(s) and renews the stamp", h.deleted_blobs)
    } else {
        "with nothing to drop it removes the copy and the stamp stays old: every start copies it again".to_string()
    };
    let root = crate::io::home::own_uid() == Some(0);
    let mut note = if root {
        "root can write any file, so nothing short of another store stops the pass for root".to_string()
    } else {
        "the pass needs to write the keybox: without write access GnuPG skips it (imports and deletes then need chmod u+w first)".to_string()
    };
    if o.version == GnupgVersion::V2_4 {
        note.push_str("; GnuPG 2.4 with keyboxd (use-keyboxd in common.conf) makes no pass at all");
    }
    let f = finding(
        "maintenance-pass",
        format!(
            "the maintenance stamp is {} old: the next gpg or gpgsm start copies all {} of the keybox; {then}",
            age_words(age),
            mib(h.file_bytes)
        ),
        json!({ "path": path, "last_maintenance": h.last_maintenance, "age_seconds": age, "bytes_copied": h.file_bytes,
                "drops_something": drops, "every_start": !drops }),
    )
    .note(note);
    if root {
        f
    } else {
        f.fix(format!("chmod a-w {}", sh(path)))
    }
}

/// An age in hours, or days when it is long.
pub fn age_words(seconds: i64) -> String {
    let hours = seconds as f64 / 3600.0;
    if hours < 48.0 {
        format!("{hours:.1} hours")
    } else {
        format!("{:.0} days", hours / 24.0)
    }
}
