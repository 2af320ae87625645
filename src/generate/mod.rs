//! `gen`: realistic keyboxes with real keys, made in memory (no I/O).
//!
//! [`generate`] returns the bytes of a keybox and of its trustlist; the
//! caller writes them (the command line, through a temporary file). The keybox is what a
//! long-lived GnuPG home accumulates: a header blob, then OpenPGP keys and
//! X.509 certificates imported in bursts, each certificate's missing
//! issuers imported just before it. Keys and certificates are real: every
//! signature verifies, gpg lists every key, gpgsm validates every chain
//! except the planned missing-issuer and expired ones. Blobs are encoded
//! exactly as GnuPG encodes them ([`crate::kbx::encode`]).
//!
//! The output depends only on the generator version, the configuration and
//! the seed: timestamps are fixed and all randomness comes from a ChaCha20
//! stream seeded with `seed` (the keys from outside, see below, from a
//! second stream of the same seed, so that they change nothing else).
//!
//! # The web of certifications
//!
//! Certification counts are heavy-tailed (most keys a few, some hundreds).
//! The signers are the first `SIGNER_POOL` keys of the keybox and, for a
//! share `OUTSIDE_SHARE` of the certifications, as many keys that are
//! *not* in it: a keyring holds the keys its owner uses, while their
//! certifications come from the whole web of trust. gpg marks those `?`
//! (no public key) after its lookups have failed.
//!
//! Cost model for `gpg --check-sigs` (file events with a buffer of B
//! bytes on a keybox of S bytes; see `sigs::lookup` for the pattern): about
//! ⌈S/B⌉ reads each for the two startup passes and the listing; for every
//! third-party certification a new handle that reads up to the signer's
//! blob (half the file on average) when the signer is in the keybox, and
//! the whole file when it is not (no cache stands in front of gpg's
//! fingerprint search); for every signer's key id the first time, one more
//! scan on the cached handle up to its blob or to the end. So the reads
//! grow with `certifications × (1 + OUTSIDE_SHARE) / 2 × ⌈S/B⌉`, and
//! `--list-sigs` (key-id lookups only, with a not-found cache) with the
//! number of distinct signers, in the keybox or not.

mod blobs;
pub mod cache;
mod config;
mod constants;
mod error;
mod keyring;
mod layout;

mod names;
pub mod openpgp;
mod pki;
pub mod signer;
mod summary;
pub mod x509;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::kbx::encode::{encode_header, HeaderSpec};
pub use blobs::cert_blob;
use blobs::key_blob;
pub use config::{GenConfig, Pki, Preset};
pub use constants::{FIRST_IMPORT, GENERATOR_VERSION};
pub use error::{GenError, Progress};
use keyring::{add_photos, make_keys};
use layout::{lay_out, Entry};
use pki::PkiPlan;
pub use summary::Summary;
use summary::{summarize, trustlist};
use x509::IssuedCert;

/// A generated keybox.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The keybox file.
    pub keybox: Vec<u8>,
    /// gpg-agent `trustlist.txt` lines marking the root CAs trusted.
    pub trustlist: String,
    /// What is in it.
    pub summary: Summary,
}

/// Generate a keybox.
///
/// # Errors
/// A [`GenError`] if a key or certificate cannot be made (not expected).
pub fn generate(cfg: &GenConfig, progress: Progress<'_>) -> Result<Generated, GenError> {
    let mut rng = ChaCha20Rng::seed_from_u64(cfg.seed);
    let plan = pki::plan(cfg.x509, cfg.pki, &mut rng);
    let certs = issue_all(&plan, &mut rng, progress)?;
    let (mut keys, certifications) = make_keys(cfg.openpgp, cfg.seed, &mut rng, progress)?;
    let layout = lay_out(&plan, keys.len(), &mut rng);

    // Size everything but the photos, then let photos fill up to the target.
    let cert_bytes: u64 = layout
        .iter()
        .map(|(e, t)| if let Entry::Cert(i) = e { cert_blob(&certs[*i], *t).len() as u64 } else { 0 })
        .sum();
    let mut key_bytes = 0u64;
    for (i, k) in keys.iter().enumerate() {
        progress("measuring OpenPGP keys", i, keys.len());
        key_bytes += key_blob(k, 0)?.len() as u64;
    }
    let photos =
        add_photos(&mut keys, cfg.target_size.saturating_sub(32 + cert_bytes + key_bytes), &mut rng, progress)?;

    let mut keybox = encode_header(&HeaderSpec {
        openpgp: cfg.openpgp > 0,
        created_at: FIRST_IMPORT,
        last_maintenance: FIRST_IMPORT,
    });
    for (n, (entry, when)) in layout.iter().enumerate() {
        progress("encoding blobs", n, layout.len());
        match *entry {
            Entry::Cert(i) => keybox.extend(cert_blob(&certs[i], *when)),
            Entry::Key(i) => keybox.extend(key_blob(&keys[i], *when)?),
        }
    }
    let summary = summarize(&plan, &certs, keys.len(), layout.len() + 1, certifications, photos, keybox.len());
    Ok(Generated { trustlist: trustlist(&plan, &certs), keybox, summary })
}

fn issue_all(plan: &PkiPlan, rng: &mut ChaCha20Rng, progress: Progress<'_>) -> Result<Vec<IssuedCert>, GenError> {
    let mut certs: Vec<IssuedCert> = Vec::with_capacity(plan.certs.len());
    for (i, c) in plan.certs.iter().enumerate() {
        progress("issuing certificates", i, plan.certs.len());
        let issuer = c.parent.map(|p| &certs[p]);
        let cert = x509::issue(&c.spec, issuer, rng)?;
        certs.push(cert);
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{BufferSize, BufferedReader};

    fn tiny() -> Generated {
        generate(&Preset::Tiny.config(), &mut |_, _, _| {}).unwrap()
    }

    #[test]
    fn tiny_keybox_is_valid_and_deterministic() {
        let a = tiny();
        let b = tiny();
        assert_eq!(a.keybox, b.keybox, "same seed, same bytes");
        assert_eq!(a.trustlist, b.trustlist);
        let s = &a.summary;
        assert_eq!((s.openpgp, s.x509, s.blobs), (20, 16, 37));
        assert_eq!(s.roots + s.intermediates + s.leaves, 16);
        assert_eq!(s.size, a.keybox.len() as u64);
        let mut r = BufferedReader::new(std::io::Cursor::new(a.keybox.clone()), BufferSize::default());
        let out = crate::workload::stats::pass(&mut r);
        assert!(out.fatal.is_none());
        assert_eq!((out.stats.openpgp, out.stats.x509, out.stats.header), (20, 16, 1));
        let mut r = BufferedReader::new(std::io::Cursor::new(a.keybox.clone()), BufferSize::default());
        let listed = crate::workload::list::pass(&mut r, crate::workload::TypeFilter::All, |_| {});
        assert!(listed.is_clean(), "{:?}", listed.problems);
        assert_eq!(listed.listed, 36);
        let other = generate(&GenConfig { seed: 2, ..Preset::Tiny.config() }, &mut |_, _, _| {}).unwrap();
        assert_ne!(other.keybox, a.keybox);
    }

    #[test]
    fn some_signers_are_outside_the_keybox() {
        use crate::openpgp::{Mode, SigStatus};
        use crate::workload::sigs::on_keybox as run;
        let g = tiny();
        let s = &g.summary;
        assert!(s.outside_certifications > 0 && s.outside_certifications < s.certifications, "{s:?}");
        let opener = crate::io::MemoryOpener::new(&g.keybox, BufferSize::Bytes(8192));
        let (mut good, mut no_key, mut other) = (0, 0, 0);
        let outcome = run(
            &opener,
            Mode::CheckSigs,
            crate::lookup::Strategy::Index,
            crate::openpgp::Judge { version: Default::default(), now: i64::MAX },
            |k| {
                for sig in k.signatures.iter().flat_map(|g| &g.sigs) {
                    match sig.status {
                        SigStatus::Good => good += 1,
                        SigStatus::NoKey => no_key += 1,
                        _ => other += 1,
                    }
                }
            },
        )
        .unwrap();
        assert!(outcome.fatal.is_none(), "{:?}", outcome.fatal);
        assert_eq!((no_key, other), (s.outside_certifications, 0), "every signature made by a key in it is good");
        assert!(good > s.certifications - s.outside_certifications, "self-signatures and certifications");
    }

    #[test]
    fn reaches_the_target_size() {
        let cfg = GenConfig { openpgp: 10, x509: 4, target_size: 600_000, seed: 5, pki: Pki::Seed };
        let g = generate(&cfg, &mut |_, _, _| {}).unwrap();
        let size = g.keybox.len() as f64;
        assert!((size - 600_000.0).abs() / 600_000.0 < 0.02, "size {size}");
    }
}
