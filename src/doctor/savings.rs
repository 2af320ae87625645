//! What the findings' fixes save, measured: the changes the findings
//! propose made to copies of the keybox (`changes`), replayed side by side
//! with the keybox as it is (`measure`), each saving put on its finding;
//! the buffer and keyboxd findings come from these replays alone.

use std::collections::HashSet;
use std::path::Path;

use serde_json::json;

use super::findings::{finding, sh, Finding};
use super::layout::{Buffer, StoreUse};
use super::measure::{self, Command, Plan, Replays, Variant};
use super::store_findings::flooded;
use super::{changes, Options, Step};
use crate::gnupg_version::GnupgVersion;
use crate::io::{read_text, BufferSize, IoTally};
use crate::kbx::BlobType;
use crate::store::{Store, StoreError, StoreKind};
use crate::workload::health::Health;
use crate::x509::TrustList;

/// A buffer change is worth a finding when it saves this share of the time…
const BUFFER_SHARE: f64 = 0.10;
/// …and at least this many seconds (the same terms for keyboxd).
const BUFFER_SECONDS: f64 = 0.05;
/// What all of `doctor`'s replays may take.
const REPLAY_BUDGET: std::time::Duration = std::time::Duration::from_secs(25);

/// Replay the home's commands on copies of the keybox `s` as it is and
/// after each change the findings propose; put each saving on its
/// finding, and add a buffer finding where a larger buffer saves enough.
///
/// # Errors
/// A copy cannot be made or a replay cannot read it.
pub(super) fn measure(
    h: &Health,
    s: &StoreUse,
    buffer: &Buffer,
    o: &Options,
    found: &mut Vec<Finding>,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<Replays, StoreError> {
    let tally = IoTally::new(BufferSize::Bytes(1 << 16));
    let keybox = Store::open(&s.path, &tally)?.read_keybox()?;
    let now = u32::try_from(o.now.max(0)).unwrap_or(u32::MAX);
    let current = BufferSize::Bytes(buffer.kib as usize * 1024);
    let variant = |kind, change: &str, keybox, buffer, commands: &[Command]| Variant {
        kind,
        change: change.into(),
        keybox,
        buffer,
        commands: commands.to_vec(),
        store: StoreKind::Keybox,
    };
    let mut variants = vec![variant("as-is", "as it is", keybox.clone(), current, &[])];
    let has = |kind: &str| found.iter().any(|f| f.kind == kind);
    if has("maintenance-pass") {
        if let Some(k) = changes::stamp_renewed(&keybox, now) {
            variants.push(variant("maintenance-pass", "no maintenance pass", k, current, &[Command::GpgList]));
        }
    }
    if has("flooded-key") {
        let set: HashSet<Vec<u8>> = h.keys.iter().filter(|k| flooded(k)).map(|k| k.fingerprint.clone()).collect();
        let (k, removed) = changes::cleaned(&keybox, Some(&set));
        if removed > 0 {
            let commands = [Command::GpgList, Command::GpgCheckSigs];
            variants.push(variant("flooded-key", "the flooded keys cleaned", k, current, &commands));
        }
    }
    if has("unknown-signers") {
        let (k, removed) = changes::cleaned(&keybox, None);
        if removed > 0 {
            let commands = [Command::GpgList, Command::GpgCheckSigs];
            variants.push(variant("unknown-signers", "every key cleaned", k, current, &commands));
        }
    }
    if has("deleted-space") && !has("maintenance-pass") {
        let k = changes::compacted(&keybox, now);
        variants.push(variant("deleted-space", "the deleted blobs dropped", k, current, &Command::ALL));
    }
    if o.version == GnupgVersion::V2_4 && buffer.kib < 512 {
        let larger = BufferSize::Bytes(512 * 1024);
        variants.push(variant("small-buffer", "a 512 KiB buffer", keybox.clone(), larger, &Command::ALL));
    }
    if o.version == GnupgVersion::V2_4 {
        // The same keys in keyboxd's database (as `convert` writes it).
        let created = crate::timefmt::rfc3339(i64::from(h.created.unwrap_or(now))).replace('T', " ");
        if let Ok(db) = crate::keyboxd::write::database(&keybox, created.trim_end_matches('Z')) {
            if db.skipped.is_empty() {
                let mut v = variant(
                    "keyboxd",
                    "keyboxd instead of the keybox",
                    db.bytes,
                    current,
                    &[Command::GpgsmValidate, Command::GpgCheckSigs],
                );
                v.store = StoreKind::Keyboxd;
                variants.push(v);
            }
        }
    }
    drop(keybox);
    let trust = s
        .path
        .parent()
        .map(|home| home.join("trustlist.txt"))
        .and_then(|p| read_text(&p, 1 << 20).ok())
        .map_or_else(|| TrustList::read("", None), |t| TrustList::read(&t, None));
    let plan = Plan {
        gpg: h.keys.iter().any(|k| k.blob_type == BlobType::OpenPgp),
        gpgsm: h.keys.iter().any(|k| k.blob_type == BlobType::X509),
        trust: &trust,
        version: o.version,
        now: o.now,
        rounds: 3,
        budget: REPLAY_BUDGET,
        signers: h.distinct_signers,
        bytes: h.file_bytes,
    };
    if variants.len() == 1 {
        return Ok(Replays::default());
    }
    let replays = measure::measure(&variants, &plan, &mut |what, done, total| progress(Step { what, done, total }))?;
    let saving = |kind: &str| {
        let per: Vec<f64> = replays.measured.iter().filter(|m| m.kind == kind).map(|m| m.saving_seconds).collect();
        (!per.is_empty()).then(|| per.iter().sum::<f64>())
    };
    let small = replays.measured.iter().filter(|m| m.kind == "small-buffer");
    let (before, events_before, events_after) =
        small.fold((0.0, 0, 0), |(t, b, a), m| (t + m.before_seconds, b + m.events_before, a + m.events_after));
    if let Some(saved) = saving("small-buffer").filter(|x| *x >= BUFFER_SECONDS && *x >= BUFFER_SHARE * before) {
        let conf = s.path.parent().map(|h| h.join("gpg.conf")).unwrap_or_default();
        let mut f = finding(
            "small-buffer",
            format!(
                "GnuPG reads the keybox through {} KiB ({}); through 512 KiB the same commands make {events_after} instead of {events_before} file events",
                buffer.kib, buffer.decided_by
            ),
            json!({ "path": s.path, "buffer_kib": buffer.kib, "decided_by": buffer.decided_by,
                    "events_before": events_before, "events_after": events_after }),
        )
        .fix(format!("echo 'kbx-buffer-size 512' >> {}", sh(&conf)));
        f.saving_seconds = Some(saved);
        found.push(f);
    }
    let keyboxd = replays.measured.iter().filter(|m| m.kind == "keyboxd");
    let before: f64 = keyboxd.map(|m| m.before_seconds).sum();
    if let Some(saved) = saving("keyboxd").filter(|x| *x >= BUFFER_SECONDS && *x >= BUFFER_SHARE * before) {
        let mut f = finding(
            "keybox-vs-keyboxd",
            format!(
                "the same keys in keyboxd's database (GnuPG 2.4's other store) make the commands replayed {saved:.2} s faster ({before:.2} s as they are)"
            ),
            json!({ "path": s.path, "before_seconds": before, "saving_seconds": saved }),
        )
        .fix(to_keyboxd(&o.gpg, &s.path))
        .note("exports the keys (with --export-options backup) and certificates, turns keyboxd on in common.conf, imports them through keyboxd, and keeps the keybox as pubring.kbx.before-keyboxd");
        f.saving_seconds = Some(saved);
        found.push(f);
    }
    for f in found.iter_mut().filter(|f| !matches!(f.kind, "small-buffer" | "keybox-vs-keyboxd")) {
        if let Some(x) = saving(f.kind) {
            f.saving_seconds = Some(x);
        }
    }
    Ok(replays)
}

/// The commands that move a home from its keybox to keyboxd (GnuPG 2.4):
/// every key exported with what a backup keeps, every certificate, then
/// `use-keyboxd` in common.conf and both imported through keyboxd; the
/// keybox is kept aside. `gpg` is how the fixes call gpg (with the
/// home's `--homedir`, where it is not the default).
fn to_keyboxd(gpg: &str, keybox: &Path) -> String {
    let home = keybox.parent().unwrap_or(Path::new("."));
    let gpgsm = gpg.replacen("gpg", "gpgsm", 1);
    let file = |name: &str| sh(&home.join(name));
    format!(
        "{gpg} --batch --export --export-options backup --armor > {keys} && {gpgsm} --batch --export --armor > {certs} && echo use-keyboxd >> {common} && {gpg} --batch --import --import-options restore {keys} && {gpgsm} --batch --import {certs} && mv {kbx} {kept}",
        keys = file("keybox-keys.asc"),
        certs = file("keybox-certs.pem"),
        common = file("common.conf"),
        kbx = sh(keybox),
        kept = file("pubring.kbx.before-keyboxd"),
    )
}
