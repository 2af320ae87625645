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
//! The signers are the first [`SIGNER_POOL`] keys of the keybox and, for a
//! share [`OUTSIDE_SHARE`] of the certifications, as many keys that are
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

pub mod cache;

pub mod names;
pub mod openpgp;
pub mod pki;
pub mod signer;
pub mod x509;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha1::{Digest, Sha1};

use crate::kbx::encode::{encode_header, encode_key_blob, HeaderSpec, KeyBlobSpec, UidSource};
use crate::kbx::BlobType;
use openpgp::{make_key, BuiltKey, KeySpec};
use pki::{Expected, PkiPlan, Role, KEYID_ONLY_SHARE};
use x509::IssuedCert;

/// Bumped whenever the same options would give different bytes; part of
/// the cached default keybox's file name.
pub const GENERATOR_VERSION: u32 = 2;

/// 2019-01-01T00:00:00Z: the first import into a generated keybox.
const FIRST_IMPORT: u32 = 1_546_300_800;
/// 2012-01-01T00:00:00Z: the oldest OpenPGP key.
const OLDEST_KEY: u32 = 1_325_376_000;
/// 2025-06-01T00:00:00Z: the newest OpenPGP key and certification.
const NEWEST: u32 = 1_748_736_000;
/// Keys whose primaries certify other keys (the first ones generated), and
/// as many keys from outside the keybox.
pub const SIGNER_POOL: usize = 600;
/// Share of third-party certifications made by a key that is not in the
/// keybox (its signature verifies against the key gen made and threw away).
pub const OUTSIDE_SHARE: f64 = 0.3;
/// Share of OpenPGP keys with a photo id.
const PHOTO_SHARE: f64 = 0.4;
/// Bytes a photo adds besides its JPEG (packet headers, self-signature, trust packets).
const PHOTO_OVERHEAD: u64 = 200;

/// A named set of options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// The seed's keybox: 1294 OpenPGP + 803 X.509, about 42 MiB.
    Seed,
    /// About 1/8 of the seed.
    Small,
    /// A few dozen blobs, for tests.
    Tiny,
}

impl Preset {
    /// The preset's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Seed => "seed",
            Self::Small => "small",
            Self::Tiny => "tiny",
        }
    }

    /// The options the preset stands for.
    pub fn config(self) -> GenConfig {
        let (openpgp, x509, target_size) = match self {
            Self::Seed => (1294, 803, 42 * 1024 * 1024),
            Self::Small => (162, 100, 42 * 1024 * 1024 / 8),
            Self::Tiny => (20, 16, 192 * 1024),
        };
        GenConfig { openpgp, x509, target_size, seed: 1 }
    }
}

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenConfig {
    /// Number of OpenPGP keys.
    pub openpgp: usize,
    /// Number of X.509 certificates written (roots, intermediates, end entities).
    pub x509: usize,
    /// The file size to aim at, in bytes; photo ids make up the difference.
    /// If the keys alone are larger, the file is larger.
    pub target_size: u64,
    /// Seed of the random stream.
    pub seed: u64,
}

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

/// Counts of what was generated.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Blobs, header included.
    pub blobs: usize,
    /// OpenPGP keys.
    pub openpgp: usize,
    /// X.509 certificates written.
    pub x509: usize,
    /// Root CAs (all trusted).
    pub roots: usize,
    /// Intermediate CAs.
    pub intermediates: usize,
    /// End entities.
    pub leaves: usize,
    /// SHA-1 fingerprints (hex) of certificates whose issuer is missing.
    pub missing_issuer: Vec<String>,
    /// SHA-1 fingerprints (hex) of expired certificates.
    pub expired: Vec<String>,
    /// Third-party certifications on OpenPGP user ids.
    pub certifications: usize,
    /// Of those, the ones made by keys that are not in the keybox.
    pub outside_certifications: usize,
    /// Photo ids.
    pub photos: usize,
    /// File size in bytes.
    pub size: u64,
}

/// Errors while generating.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// A certificate could not be made.
    #[error(transparent)]
    Cert(#[from] x509::CertError),
    /// An OpenPGP key could not be made.
    #[error("cannot make an OpenPGP key: {0}")]
    OpenPgp(#[from] openpgp::KeyError),
}

/// Progress: a step name, units done and units in the step.
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, usize);

/// One entry of the file, in import order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Cert(usize),
    Key(usize),
}

/// Generate a keybox.
///
/// # Errors
/// A [`GenError`] if a key or certificate cannot be made (not expected).
pub fn generate(cfg: &GenConfig, progress: Progress<'_>) -> Result<Generated, GenError> {
    let mut rng = ChaCha20Rng::seed_from_u64(cfg.seed);
    let plan = pki::plan(cfg.x509, KEYID_ONLY_SHARE, &mut rng);
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

/// Numbers of certifications made.
#[derive(Debug, Clone, Copy, Default)]
struct Certifications {
    total: usize,
    outside: usize,
}

/// Keys, and the certifications made. The keys from outside the keybox
/// come from a second stream of `seed`, so that the main stream, and with
/// it everything else in the file, is the same as without them.
fn make_keys(
    n: usize,
    seed: u64,
    rng: &mut ChaCha20Rng,
    progress: Progress<'_>,
) -> Result<(Vec<BuiltKey>, Certifications), GenError> {
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        progress("making OpenPGP keys", i, n);
        let uids = match rng.gen_range(0..100) {
            0..=59 => 1,
            60..=84 => 2,
            85..=94 => 3,
            _ => 4,
        };
        keys.push(make_key(&key_spec(rng, i, uids), rng)?);
    }
    // Heavy-tailed certification counts: most keys few, a few hundreds.
    let pool = n.min(SIGNER_POOL);
    let mut outside_rng = ChaCha20Rng::seed_from_u64(seed);
    outside_rng.set_stream(1);
    let mut outside = Vec::with_capacity(pool);
    for j in 0..pool {
        progress("making keys from outside the keybox", j, pool);
        outside.push(make_key(&key_spec(&mut outside_rng, n + j, 1), &mut outside_rng)?);
    }
    let mut made = Certifications::default();
    let mut signers: Vec<usize> = (0..pool).collect();
    for i in 0..n {
        progress("certifying user ids", i, n);
        let u: f64 = rng.gen_range(1e-4..1.0);
        let wanted = ((u.powf(-1.0 / 1.16) - 1.0) * 6.0) as usize;
        let count = wanted.min(pool.saturating_sub(1));
        signers.shuffle(rng);
        for &s in signers.iter().filter(|&&s| s != i).take(count) {
            let stranger = outside_rng.gen_bool(OUTSIDE_SHARE).then(|| outside_rng.gen_range(0..pool));
            let signer_created = stranger.map_or(keys[s].created(), |o| outside[o].created());
            let when = keys[i].created().max(signer_created) + rng.gen_range(86_400..86_400 * 365);
            let uid = if rng.gen_bool(0.6) { 0 } else { rng.gen_range(0..keys[i].user_count()) };
            let (signee, signer) = pair_mut(&mut keys, i, s);
            let signer = stranger.map_or(signer, |o| &outside[o]);
            signee.certify(uid, &signer.primary, when.min(NEWEST))?;
            made.total += 1;
            made.outside += usize::from(stranger.is_some());
        }
    }
    Ok((keys, made))
}

/// A key's creation time, algorithm and `uids` user ids (the `serial`-th person).
fn key_spec(rng: &mut ChaCha20Rng, serial: usize, uids: usize) -> KeySpec {
    KeySpec {
        created: rng.gen_range(OLDEST_KEY..NEWEST - 86_400 * 400),
        rsa: rng.gen_bool(0.08).then(|| rng.gen_range(0..4)),
        user_ids: names::user_ids(rng, serial, uids),
    }
}

/// A mutable and a shared reference to two different keys.
fn pair_mut(keys: &mut [BuiltKey], a: usize, b: usize) -> (&mut BuiltKey, &BuiltKey) {
    if a < b {
        let (lo, hi) = keys.split_at_mut(b);
        (&mut lo[a], &hi[0])
    } else {
        let (lo, hi) = keys.split_at_mut(a);
        (&mut hi[0], &lo[b])
    }
}

/// Give a share of the keys photo ids that together fill `budget` bytes.
fn add_photos(
    keys: &mut [BuiltKey],
    budget: u64,
    rng: &mut ChaCha20Rng,
    progress: Progress<'_>,
) -> Result<usize, GenError> {
    let chosen: Vec<usize> = (0..keys.len()).filter(|_| rng.gen_bool(PHOTO_SHARE)).collect();
    let weights: Vec<f64> = chosen.iter().map(|_| (rng.gen_range(-1.2f64..1.2)).exp()).collect();
    let count = chosen.len().min((budget / (2048 + PHOTO_OVERHEAD)) as usize);
    if count == 0 {
        return Ok(0);
    }
    let jpeg_budget = budget - count as u64 * PHOTO_OVERHEAD;
    let sum: f64 = weights[..count].iter().sum();
    for (n, (&k, w)) in chosen.iter().zip(&weights).take(count).enumerate() {
        progress("adding photo ids", n, count);
        let len = ((jpeg_budget as f64 * w / sum) as usize).clamp(2048, 3 * 1024 * 1024);
        keys[k].add_photo(len, rng)?;
    }
    Ok(count)
}

/// Import order and import times: bursts of keys and of certificates; a
/// certificate's issuers (if not yet there) just before it.
fn lay_out(plan: &PkiPlan, keys: usize, rng: &mut ChaCha20Rng) -> Vec<(Entry, u32)> {
    let mut leaves: Vec<usize> =
        (0..plan.certs.len()).filter(|&i| plan.certs[i].emitted && plan.certs[i].role == Role::Leaf).collect();
    leaves.shuffle(rng);
    let mut cas: Vec<usize> =
        (0..plan.certs.len()).filter(|&i| plan.certs[i].emitted && plan.certs[i].role != Role::Leaf).collect();
    let mut placed = vec![false; plan.certs.len()];
    let (mut next_leaf, mut next_key) = (0, 0);
    let mut out = Vec::with_capacity(plan.certs.len() + keys);
    let mut when = FIRST_IMPORT;
    while next_leaf < leaves.len() || next_key < keys {
        when += rng.gen_range(3_600..86_400 * 5);
        let left_certs = leaves.len() - next_leaf;
        let left_keys = keys - next_key;
        let certs_now = rng.gen_range(0..left_certs + left_keys) < left_certs;
        let burst = rng.gen_range(1..=if certs_now { 12 } else { 20 });
        for _ in 0..burst {
            when += rng.gen_range(0..60);
            if certs_now && next_leaf < leaves.len() {
                let leaf = leaves[next_leaf];
                next_leaf += 1;
                let mut chain = Vec::new();
                let mut up = plan.certs[leaf].parent;
                while let Some(p) = up {
                    if plan.certs[p].emitted && !placed[p] {
                        chain.push(p);
                    }
                    up = plan.certs[p].parent;
                }
                for &ca in chain.iter().rev() {
                    placed[ca] = true;
                    out.push((Entry::Cert(ca), when));
                }
                out.push((Entry::Cert(leaf), when));
            } else if !certs_now && next_key < keys {
                out.push((Entry::Key(next_key), when));
                next_key += 1;
            }
        }
    }
    cas.retain(|&c| !placed[c]);
    out.extend(cas.into_iter().map(|c| (Entry::Cert(c), when)));
    out
}

/// The X.509 blob of a certificate, imported at `when`.
pub fn cert_blob(c: &IssuedCert, when: u32) -> Vec<u8> {
    let mut uids =
        vec![UidSource::Stored(c.issuer_dn.clone().into_bytes()), UidSource::Stored(c.subject_dn.clone().into_bytes())];
    uids.extend(c.mails.iter().map(|m| UidSource::Stored(format!("<{m}>").into_bytes())));
    encode_key_blob(&KeyBlobSpec {
        blob_type: BlobType::X509,
        ephemeral: false,
        fingerprints: vec![Sha1::digest(&c.der).to_vec()],
        serial: c.serial.clone(),
        uids,
        sig_count: 1,
        validity: 0,
        created_at: when,
        data: c.der.clone(),
    })
}

fn key_blob(k: &BuiltKey, when: u32) -> Result<Vec<u8>, GenError> {
    let (block, fingerprints) = k.keyblock()?;
    Ok(encode_key_blob(&KeyBlobSpec {
        blob_type: BlobType::OpenPgp,
        ephemeral: false,
        fingerprints,
        serial: Vec::new(),
        uids: block.user_ids.iter().map(|&(offset, length)| UidSource::InData { offset, length }).collect(),
        sig_count: block.signatures,
        validity: 0,
        created_at: when,
        data: block.bytes,
    }))
}

fn fpr_hex(der: &[u8]) -> String {
    crate::kbx::dump::hex_upper(&Sha1::digest(der))
}

fn trustlist(plan: &PkiPlan, certs: &[IssuedCert]) -> String {
    let mut s = String::from("# Root CAs of a keybox made by kbxscope gen (SHA-1 fingerprint, S = S/MIME)\n");
    for (p, c) in plan.certs.iter().zip(certs) {
        if p.emitted && p.role == Role::Root {
            let hex = fpr_hex(&c.der);
            let colons: Vec<&str> = (0..hex.len()).step_by(2).map(|i| &hex[i..i + 2]).collect();
            s.push_str(&format!("{} S\n", colons.join(":")));
        }
    }
    s
}

fn summarize(
    plan: &PkiPlan,
    certs: &[IssuedCert],
    keys: usize,
    blobs: usize,
    certifications: Certifications,
    photos: usize,
    size: usize,
) -> Summary {
    let emitted = || plan.certs.iter().zip(certs).filter(|(p, _)| p.emitted);
    let role = |r: Role| emitted().filter(|(p, _)| p.role == r).count();
    let expected = |e: Expected| emitted().filter(|(p, _)| p.expected == e).map(|(_, c)| fpr_hex(&c.der)).collect();
    Summary {
        blobs,
        openpgp: keys,
        x509: plan.emitted(),
        roots: role(Role::Root),
        intermediates: role(Role::Intermediate),
        leaves: role(Role::Leaf),
        missing_issuer: expected(Expected::MissingIssuer),
        expired: expected(Expected::Expired),
        certifications: certifications.total,
        outside_certifications: certifications.outside,
        photos,
        size: size as u64,
    }
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
        let out = crate::workload::stats::run(&mut r);
        assert!(out.error.is_none());
        assert_eq!((out.stats.openpgp, out.stats.x509, out.stats.header), (20, 16, 1));
        let mut r = BufferedReader::new(std::io::Cursor::new(a.keybox.clone()), BufferSize::default());
        let listed = crate::workload::list::run(&mut r, crate::workload::TypeFilter::All, |_| {});
        assert!(listed.is_clean(), "{:?}", listed.problems);
        assert_eq!(listed.listed, 36);
        let other = generate(&GenConfig { seed: 2, ..Preset::Tiny.config() }, &mut |_, _, _| {}).unwrap();
        assert_ne!(other.keybox, a.keybox);
    }

    #[test]
    fn some_signers_are_outside_the_keybox() {
        use crate::openpgp::{Mode, SigStatus};
        use crate::workload::sigs::{run, Startup};
        let g = tiny();
        let s = &g.summary;
        assert!(s.outside_certifications > 0 && s.outside_certifications < s.certifications, "{s:?}");
        let opener = crate::io::MemoryOpener::new(&g.keybox, BufferSize::Bytes(8192));
        let (mut good, mut no_key, mut other) = (0, 0, 0);
        let outcome = run(&opener, Mode::CheckSigs, crate::lookup::Strategy::Index, Startup { now: i64::MAX }, |k| {
            for sig in k.signatures.iter().flat_map(|g| &g.sigs) {
                match sig.status {
                    SigStatus::Good => good += 1,
                    SigStatus::NoKey => no_key += 1,
                    _ => other += 1,
                }
            }
        })
        .unwrap();
        assert!(outcome.fatal.is_none(), "{:?}", outcome.fatal);
        assert_eq!((no_key, other), (s.outside_certifications, 0), "every signature made by a key in it is good");
        assert!(good > s.certifications - s.outside_certifications, "self-signatures and certifications");
    }

    #[test]
    fn reaches_the_target_size() {
        let cfg = GenConfig { openpgp: 10, x509: 4, target_size: 600_000, seed: 5 };
        let g = generate(&cfg, &mut |_, _, _| {}).unwrap();
        let size = g.keybox.len() as f64;
        assert!((size - 600_000.0).abs() / 600_000.0 < 0.02, "size {size}");
    }
}
