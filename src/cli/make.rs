//! The commands that write a store: `gen` (a realistic keybox, or its keys
//! as keyboxd's database) and `convert` (a keybox's keys as a database).
//! Both write through a temporary file renamed into place.

use std::process::ExitCode;

use anyhow::Result;

use super::args::{ConvertArgs, GenArgs, PkiArg, PresetArg};
use super::keybox;
use super::output;
use super::store;
use kbxscope::generate::{GenConfig, Pki, Preset};
use kbxscope::io::IoTally;

/// `gen`.
pub(super) fn gen(a: &GenArgs) -> Result<ExitCode> {
    let preset = match a.preset {
        PresetArg::Seed => Preset::Seed,
        PresetArg::Small => Preset::Small,
        PresetArg::Tiny => Preset::Tiny,
    };
    let base = preset.config();
    let cfg = GenConfig {
        openpgp: a.openpgp.unwrap_or(base.openpgp),
        x509: a.x509.unwrap_or(base.x509),
        target_size: a.size.unwrap_or(base.target_size),
        seed: a.seed.unwrap_or(base.seed),
        pki: match a.pki {
            PkiArg::Seed => Pki::Seed,
            PkiArg::Mixed => Pki::Mixed,
        },
    };
    for p in [a.out.clone(), keybox::trustlist_path(&a.out)] {
        if !a.force && p.exists() {
            anyhow::bail!("'{}' exists; not replacing it (use --force to replace it)", p.display());
        }
    }
    let started = std::time::Instant::now();
    let mut g = keybox::generate_with_progress(&cfg)?;
    if a.keyboxd {
        let created = kbxscope::timefmt::rfc3339(i64::from(kbxscope::generate::FIRST_IMPORT)).replace('T', " ");
        let db = kbxscope::keyboxd::write::database(&g.keybox, created.trim_end_matches('Z'))?;
        if let Some((index, offset, why)) = db.skipped.first() {
            anyhow::bail!("blob {index} at byte offset {offset} of the generated keybox: {why}");
        }
        g.keybox = db.bytes;
    }
    keybox::write_outputs(&a.out, &g, a.force)?;
    let s = &g.summary;
    eprintln!(
        "kbxscope: wrote {} in {:.1} s: {} bytes, {} blobs ({} OpenPGP keys with {} certifications, {} of them by keys not in the keybox, and {} photo ids; \
         {} X.509 certificates: {} roots, {} intermediates, {} end entities, {} with a missing issuer, {} expired)",
        a.out.display(),
        started.elapsed().as_secs_f64(),
        s.size,
        s.blobs,
        s.openpgp,
        s.certifications,
        s.outside_certifications,
        s.photos,
        s.x509,
        s.roots,
        s.intermediates,
        s.leaves,
        s.missing_issuer.len(),
        s.expired.len()
    );
    eprintln!("kbxscope: trustlist for gpg-agent: {}", keybox::trustlist_path(&a.out).display());
    if a.keyboxd {
        eprintln!("kbxscope: {} is keyboxd's database of those keys (size above: the database's)", a.out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `convert`.
pub(super) fn convert(a: &ConvertArgs, now: i64, tally: &IoTally) -> Result<ExitCode> {
    if !a.force && a.out.exists() {
        anyhow::bail!("'{}' exists; not replacing it (use --force to replace it)", a.out.display());
    }
    let store = store::open(Some(&a.keybox), tally)?;
    let path = store.path().to_path_buf();
    let keybox = store.read_keybox()?;
    drop(store);
    let created = kbxscope::kbx::parse_blob(&keybox[..keybox.len().min(32)])
        .ok()
        .and_then(|b| match b {
            kbxscope::kbx::Blob::Header(h) => Some(i64::from(h.created_at)),
            _ => None,
        })
        .unwrap_or(now);
    let created = kbxscope::timefmt::rfc3339(created).replace('T', " ");
    let db = kbxscope::keyboxd::write::database(&keybox, created.trim_end_matches('Z'))?;
    output::write_file(&a.out, &db.bytes, a.force)?;
    for (index, offset, why) in &db.skipped {
        eprintln!("kbxscope: {}: blob {index} at byte offset {offset} not stored: {why}", path.display());
    }
    eprintln!(
        "kbxscope: wrote {} ({} bytes): {} OpenPGP keys and {} certificates from {}",
        a.out.display(),
        db.bytes.len(),
        db.openpgp,
        db.x509,
        path.display()
    );
    Ok(if db.skipped.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
