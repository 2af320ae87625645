//! gpg's trust-database check computed: the validity of every key's user
//! ids that `gpg --check-trustdb` (and the automatic check) would store,
//! in the pgp and classic trust models (facts from GnuPG 2.2's and 2.4's
//! `validate_keys`, `validate_one_keyblock` and `store_validation_status`
//! in `g10/trustdb.c` and `mark_usable_uid_certs` in `g10/key-clean.c`).
//! No I/O here: the keys come with their checked signatures (the
//! `--check-sigs` workload's [`KeySigs`]) and the owner trusts from the
//! trust database read.
//!
//! The check clears every stored validity, gives the ultimately trusted
//! keys' user ids `ultimate`, then walks the web of trust one depth at a
//! time: at each, every key not yet fully valid, revoked or expired has its
//! usable user ids counted for certifications by the keys of the level
//! above (an ultimately trusted signer makes a user id fully valid, a
//! fully trusted one counts as one complete, a marginally trusted one as
//! one marginal; a signer of another owner trust counts nothing but makes
//! the user id `undefined`); `completes` completes or `marginals`
//! marginals make it fully valid, fewer marginal. The keys with a fully
//! valid user id become the next level's signers, with their own owner
//! trust, up to `max_depth` levels. A usable certification is the
//! newest good one of each signer on the user id (a non-revocable
//! unexpired one wins over the others), not a revocation, not expired,
//! of class 0x10 to 0x13 with a level at least `min_cert_level` (0x10
//! always counts), not a self-signature.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::sigs::KeySigs;
use crate::openpgp::{SigLine, SigStatus};
use crate::store::StoreKind;
use crate::trustdb::{fpr20, Model, TrustDb};

/// gpg's trust values the check stores.
const UNDEFINED: u8 = 2;
const MARGINAL: u8 = 4;
const FULLY: u8 = 5;
const ULTIMATE: u8 = 6;

/// What the check runs with (gpg's options; the trust database's header
/// holds the last check's).
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions {
    /// pgp or classic (the models gpg checks).
    pub model: Model,
    /// `--marginals-needed`.
    pub marginals: u8,
    /// `--completes-needed`.
    pub completes: u8,
    /// `--max-cert-depth`.
    pub max_depth: u8,
    /// `--min-cert-level`.
    pub min_cert_level: u8,
    /// The time the check runs at.
    pub now: i64,
    /// Whether each level's pass over the store skips the keys already
    /// fully valid (and the revoked and expired ones): gpg's keybox search
    /// does, keyboxd's does not (GnuPG 2.4 with `use-keyboxd` walks every
    /// key at every level, ultimately trusted ones included).
    pub skips: bool,
}

impl CheckOptions {
    /// The options the database's header records, at `now`, under `model`,
    /// for a store of `kind`.
    pub fn of(db: &TrustDb, model: Model, now: i64, kind: StoreKind) -> Self {
        let h = &db.header;
        Self {
            model,
            marginals: h.marginals,
            completes: h.completes,
            max_depth: h.max_depth,
            min_cert_level: h.min_cert_level,
            now,
            skips: kind == StoreKind::Keybox,
        }
    }
}

/// What the check stores for one user id (a validity record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Stored {
    /// The validity (gpg's 0–6).
    pub validity: u8,
    /// Complete certifications counted.
    pub full_count: u8,
    /// Marginal certifications counted.
    pub marginal_count: u8,
}

/// One level of the walk, as gpg's `depth: …` line reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Depth {
    /// The level.
    pub depth: u8,
    /// Signers at this level.
    pub valid: usize,
    /// Keys with a user id they certify.
    pub signed: usize,
    /// The signers' owner trusts: unknown, undefined, never, marginal,
    /// full, ultimate.
    pub trust: [usize; 6],
}

impl Depth {
    /// gpg's line (`depth: 0  valid:   1  signed:   6  trust: 0-, 0q, 0n, 0m, 0f, 1u`).
    pub fn line(&self) -> String {
        let t = &self.trust;
        format!(
            "depth: {}  valid: {:3}  signed: {:3}  trust: {}-, {}q, {}n, {}m, {}f, {}u",
            self.depth, self.valid, self.signed, t[0], t[1], t[2], t[3], t[4], t[5]
        )
    }
}

/// The check's result.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// Per key (the 20 bytes the trust database files it under,
    /// [`fpr20`]) and user id (its name hash): what is stored;
    /// a user id not here is stored as 0.
    pub stored: HashMap<([u8; 20], [u8; 20]), Stored>,
    /// The levels walked.
    pub depths: Vec<Depth>,
    /// The ultimately trusted keys found in the keys given.
    pub ultimate: usize,
}

impl Checked {
    /// What the check stores for a user id (0 where it stores nothing).
    pub fn get(&self, fingerprint: &[u8; 20], name: &[u8; 20]) -> Stored {
        self.stored.get(&(*fingerprint, *name)).copied().unwrap_or_default()
    }
}

/// Why the check cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// gpg checks only the pgp and classic models (and tofu's).
    #[error("trust model {0}: gpg runs no trust-database check in it")]
    Model(&'static str),
    /// A trust signature limited by a regular expression.
    #[error("key {0}: a trust signature with a regular expression; kbxscope does not match them yet")]
    Regexp(String),
}

/// One key as the check sees it.
struct Kb<'a> {
    fpr: [u8; 20],
    kid: [u8; 8],
    revoked: bool,
    expired: bool,
    /// Every user id and attribute: name hash, usable (neither revoked
    /// nor expired), certifications.
    uids: Vec<([u8; 20], bool, &'a [SigLine])>,
}

/// A signer of the current level.
#[derive(Debug, Clone)]
struct Signer {
    ownertrust: u8,
    trust_depth: u8,
    trust_value: u8,
    regexp: bool,
}

fn key_id(hex: &str) -> [u8; 8] {
    let b = kbx_format::dump::parse_hex(hex).unwrap_or_default();
    b.get(b.len().saturating_sub(8)..).and_then(|s| s.try_into().ok()).unwrap_or([0; 8])
}

/// The 20 bytes the trust database files a key under ([`fpr20`]).
fn filed_as(hex: &str) -> [u8; 20] {
    fpr20(&kbx_format::dump::parse_hex(hex).unwrap_or_default())
}

fn kbs<'a>(keys: &'a [KeySigs], now: i64) -> Vec<Kb<'a>> {
    keys.iter()
        .map(|k| Kb {
            fpr: filed_as(&k.key.fingerprint),
            kid: key_id(&k.key.key_id),
            revoked: k.key.life.revoked,
            expired: k.key.life.expired(now),
            uids: k
                .signatures
                .iter()
                .filter(|g| matches!(g.kind, "uid" | "uat"))
                .map(|g| (g.name_hash.unwrap_or_default(), !g.unusable, g.sigs.as_slice()))
                .collect(),
        })
        .collect()
}

/// A certification that counts: not revoked and unexpired in gpg's sense.
fn lasting(l: &SigLine, now: i64) -> bool {
    let c = l.cert.as_ref();
    matches!(l.class_byte, 0x10..=0x13)
        && c.is_some_and(|c| !c.revocable && c.expires.is_none_or(|e| i64::from(e) > now))
}

/// The usable certifications of one user id by `klist`'s signers, in
/// keyblock order: per signer the one gpg picks, if it certifies and has
/// not expired.
fn usable<'a>(
    own: [u8; 8],
    sigs: &'a [SigLine],
    klist: &HashMap<[u8; 8], Signer>,
    o: &CheckOptions,
) -> Vec<&'a SigLine> {
    let considered: Vec<(&SigLine, [u8; 8])> = sigs
        .iter()
        .map(|l| (l, key_id(&l.signer_key_id)))
        .filter(|(l, kid)| {
            let c = l.class_byte;
            *kid != own
                && (matches!(c, 0x10..=0x13) || c == 0x30)
                && !(matches!(c, 0x11..=0x13) && c - 0x10 < o.min_cert_level)
                && klist.contains_key(kid)
                && l.status == SigStatus::Good
                && l.cert.is_some()
        })
        .collect();
    let mut done: HashSet<[u8; 8]> = HashSet::new();
    let mut out = Vec::new();
    for (i, (first, kid)) in considered.iter().enumerate() {
        if !done.insert(*kid) {
            continue;
        }
        let mut pick = *first;
        for (n, _) in considered[i + 1..].iter().filter(|(_, k)| k == kid) {
            let (p, q) = (lasting(pick, o.now), lasting(n, o.now));
            if p && !q {
                continue;
            }
            if !p && q {
                pick = n;
                continue;
            }
            if cert_time(n) >= cert_time(pick) {
                pick = n;
            }
        }
        let certifies = matches!(pick.class_byte, 0x10..=0x13);
        let unexpired = pick.cert.as_ref().and_then(|c| c.expires).is_none_or(|e| i64::from(e) > o.now);
        if certifies && unexpired {
            out.push(pick);
        }
    }
    // gpg walks the keyblock's nodes: keep the keyblock's order.
    out.sort_by_key(|l| sigs.iter().position(|s| std::ptr::eq(s, *l)));
    out
}

fn cert_time(l: &SigLine) -> u32 {
    l.cert.as_ref().map_or(0, |c| c.created)
}

/// The owner trust byte the database holds for a key (its low four bits),
/// `0` (unknown) where it has no record.
fn ownertrust(db: &TrustDb, fpr: &[u8; 20]) -> u8 {
    db.keys.iter().find(|k| &k.trust.fingerprint == fpr).map_or(0, |k| k.trust.ownertrust & 15)
}

/// One user id counted at a level: gpg's node flags (1 certified by a
/// signer of the level, 2 marginally valid, 4 fully valid) and the counts.
#[derive(Debug, Clone, Copy, Default)]
struct Counted {
    flag: u8,
    full: u8,
    marginal: u8,
}

/// A key some signer of the level certifies.
struct Signed {
    /// Its index in the store.
    index: usize,
    /// Its user ids, as [`Kb::uids`].
    uids: Vec<Counted>,
    /// The trust-signature chain it carries on: amount, depth left.
    chain: (u8, u8),
}

/// The signers' owner trusts as gpg's `depth:` line counts them.
fn trust_counts(klist: &HashMap<[u8; 8], Signer>) -> [usize; 6] {
    let mut trust = [0usize; 6];
    for k in klist.values() {
        let slot = match k.ownertrust {
            0 => 0,
            2 => 1,
            3 => 2,
            4 => 3,
            5 => 4,
            6 => 5,
            _ => continue,
        };
        trust[slot] += 1;
    }
    trust
}

/// Count one key's usable user ids for `klist`'s certifications on top of
/// what earlier levels stored (`validate_one_keyblock`); `None` when no
/// signer of the level certifies any.
fn count_key(
    index: usize,
    kb: &Kb<'_>,
    klist: &HashMap<[u8; 8], Signer>,
    out: &Checked,
    o: &CheckOptions,
) -> Result<Option<Signed>, CheckError> {
    let pgp = o.model == Model::Pgp;
    let regexp = || CheckError::Regexp(kbx_format::dump::hex_upper(&kb.fpr));
    let mut signed = Signed { index, uids: Vec::with_capacity(kb.uids.len()), chain: (0, 0) };
    let mut any = false;
    for (hash, ok, sigs) in &kb.uids {
        if !ok {
            signed.uids.push(Counted::default());
            continue;
        }
        let before = out.get(&kb.fpr, hash);
        let mut c = Counted { flag: 0, full: before.full_count, marginal: before.marginal_count };
        for l in usable(kb.kid, sigs, klist, o) {
            let kr = &klist[&key_id(&l.signer_key_id)];
            if kr.regexp && pgp {
                return Err(regexp());
            }
            let cert = l.cert.as_ref().expect("usable certifications are decoded");
            if let (true, Some((sig_depth, value))) = (pgp, cert.trust) {
                // A trust signature carries the chain on, as deep as both
                // allow (an ultimately trusted signer restarts it).
                let d =
                    if sig_depth < kr.trust_depth || kr.ownertrust == ULTIMATE { sig_depth } else { kr.trust_depth };
                if sig_depth > 0 && d > 0 {
                    if cert.regexp.is_some() {
                        return Err(regexp());
                    }
                    signed.chain = (value, d - 1);
                }
            }
            match kr.ownertrust {
                ULTIMATE => c.full = o.completes,
                FULLY => c.full = c.full.saturating_add(1),
                MARGINAL => c.marginal = c.marginal.saturating_add(1),
                _ => {}
            }
            c.flag = 1;
        }
        if c.flag != 0 {
            if c.full >= o.completes || c.marginal >= o.marginals {
                c.flag |= 4;
            } else if c.full > 0 || c.marginal > 0 {
                c.flag |= 2;
            }
            any = true;
        }
        signed.uids.push(c);
    }
    Ok(any.then_some(signed))
}

/// Compute the check: `keys` are the store's keys in store order with
/// their checked signatures; `db` gives the owner trusts.
///
/// # Errors
/// A model gpg does not check, or a trust signature with a regular
/// expression in the pgp model ([`CheckError`]).
pub fn compute(keys: &[KeySigs], db: &TrustDb, o: &CheckOptions) -> Result<Checked, CheckError> {
    if !matches!(o.model, Model::Pgp | Model::Classic) {
        return Err(CheckError::Model(o.model.name()));
    }
    let kbs = kbs(keys, o.now);
    let mut out = Checked::default();
    let (mut used, mut full_trust): (HashSet<[u8; 8]>, HashSet<[u8; 8]>) = Default::default();
    // The ultimately trusted keys: every user id ultimately valid; the
    // first level's signers.
    let mut klist: HashMap<[u8; 8], Signer> = HashMap::new();
    for k in db.keys.iter().filter(|k| k.trust.ownertrust & 15 == ULTIMATE) {
        let kid: [u8; 8] = k.trust.fingerprint[12..].try_into().expect("20 bytes");
        let Some(kb) = kbs.iter().find(|kb| kb.kid == kid) else { continue };
        out.ultimate += 1;
        used.insert(kid);
        full_trust.insert(kid);
        for (hash, _, _) in &kb.uids {
            out.stored.insert((kb.fpr, *hash), Stored { validity: ULTIMATE, ..Stored::default() });
        }
        klist.insert(kid, Signer { ownertrust: ULTIMATE, trust_depth: 0, trust_value: 0, regexp: false });
    }
    for depth in 0..o.max_depth {
        if klist.is_empty() {
            break;
        }
        for k in klist.values_mut() {
            // A trust signature's amount is a minimum owner trust.
            let min = match k.trust_value {
                120.. => FULLY,
                60.. => MARGINAL,
                _ => 0,
            };
            k.ownertrust = k.ownertrust.max(min);
        }
        let trust = trust_counts(&klist);
        // Every key not yet fully valid, revoked or expired, counted.
        let mut signed = Vec::new();
        for (i, kb) in kbs.iter().enumerate() {
            if o.skips && full_trust.contains(&kb.kid) {
                continue;
            }
            if kb.revoked || kb.expired {
                full_trust.insert(kb.kid);
                continue;
            }
            if let Some(s) = count_key(i, kb, &klist, &out, o)? {
                if s.uids.iter().all(|c| c.flag & 4 != 0) {
                    full_trust.insert(kb.kid);
                }
                signed.push(s);
            }
        }
        // What this level stores.
        for s in &signed {
            let kb = &kbs[s.index];
            for ((hash, _, _), c) in kb.uids.iter().zip(&s.uids) {
                let validity = match c.flag {
                    f if f & 4 != 0 => FULLY,
                    f if f & 2 != 0 => MARGINAL,
                    f if f & 1 != 0 => UNDEFINED,
                    _ => continue,
                };
                out.stored.insert((kb.fpr, *hash), Stored { validity, full_count: c.full, marginal_count: c.marginal });
            }
        }
        out.depths.push(Depth { depth, valid: klist.len(), signed: signed.len(), trust });
        // The next level: keys with a fully valid user id, not used before.
        klist = HashMap::new();
        for s in &signed {
            let kb = &kbs[s.index];
            if s.uids.iter().any(|c| c.flag & 4 != 0) && used.insert(kb.kid) {
                let (trust_value, trust_depth) = s.chain;
                let signer = Signer { ownertrust: ownertrust(db, &kb.fpr), trust_depth, trust_value, regexp: false };
                klist.insert(kb.kid, signer);
            }
        }
    }
    Ok(out)
}

/// One user id: what the trust database holds, against what the check
/// computed.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    /// The key's fingerprint, upper-case hex.
    pub fingerprint: String,
    /// The user id's name hash, upper-case hex.
    pub name_hash: String,
    /// The user id (lossy UTF-8) or gpg's name of the attribute.
    pub user_id: String,
    /// The record the database holds (0s where it holds none).
    pub stored: Stored,
    /// What the check stores.
    pub computed: Stored,
}

/// Every user id of `keys` (once per key where it appears twice: it has
/// one record): the stored record beside the computed one.
pub fn compare(keys: &[KeySigs], db: &TrustDb, checked: &Checked) -> Vec<Compared> {
    let records: HashMap<[u8; 20], &crate::trustdb::Key> =
        db.keys.iter().rev().map(|k| (k.trust.fingerprint, k)).collect();
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for k in keys {
        let fpr = filed_as(&k.key.fingerprint);
        let record = records.get(&fpr);
        for g in k.signatures.iter().filter(|g| matches!(g.kind, "uid" | "uat")) {
            let hash = g.name_hash.unwrap_or_default();
            if !seen.insert((fpr, hash)) {
                continue;
            }
            let stored = record
                .and_then(|r| r.validities.iter().find(|v| v.name_hash == hash))
                .map(|v| Stored {
                    validity: v.validity & 15,
                    full_count: v.full_count,
                    marginal_count: v.marginal_count,
                })
                .unwrap_or_default();
            rows.push(Compared {
                fingerprint: k.key.fingerprint.clone(),
                name_hash: kbx_format::dump::hex_upper(&hash),
                user_id: g.label.clone(),
                stored,
                computed: checked.get(&fpr, &hash),
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openpgp::CertFacts;

    const SIGNER: &str = "00000000000000AA";

    fn cert(class: u8, created: u32, expires: Option<u32>, revocable: bool) -> SigLine {
        SigLine {
            signer_key_id: SIGNER.into(),
            signer_uid: None,
            created: None,
            class: String::new(),
            status: SigStatus::Good,
            mark: '!',
            reason: None,
            class_byte: class,
            columns: [' '; 5],
            self_sig: false,
            cert: Some(CertFacts { created, expires, revocable, trust: None, regexp: None }),
            unusable: false,
        }
    }

    fn options() -> CheckOptions {
        CheckOptions {
            model: Model::Pgp,
            marginals: 3,
            completes: 1,
            max_depth: 5,
            min_cert_level: 2,
            now: 1000,
            skips: true,
        }
    }

    fn picked(sigs: &[SigLine]) -> Vec<u32> {
        let klist =
            HashMap::from([(key_id(SIGNER), Signer { ownertrust: 4, trust_depth: 0, trust_value: 0, regexp: false })]);
        usable([0xbb; 8], sigs, &klist, &options()).iter().map(|l| cert_time(l)).collect()
    }

    #[test]
    fn the_newest_certification_of_a_signer_counts() {
        assert_eq!(picked(&[cert(0x10, 10, None, true), cert(0x13, 20, None, true)]), [20]);
        // A newer revocation cancels it.
        assert_eq!(picked(&[cert(0x10, 10, None, true), cert(0x30, 20, None, true)]), Vec::<u32>::new());
        // An older revocation does not.
        assert_eq!(picked(&[cert(0x30, 5, None, true), cert(0x10, 10, None, true)]), [10]);
        // A non-revocable unexpired one wins over a newer revocation.
        assert_eq!(picked(&[cert(0x10, 10, None, false), cert(0x30, 20, None, true)]), [10]);
        // An expired one does not count, and is the one picked if newest.
        assert_eq!(picked(&[cert(0x10, 10, None, true), cert(0x10, 20, Some(500), true)]), Vec::<u32>::new());
        // Level 1 (persona) is under min-cert-level 2; level 0 always counts.
        assert_eq!(picked(&[cert(0x11, 10, None, true)]), Vec::<u32>::new());
        assert_eq!(picked(&[cert(0x10, 10, None, true)]), [10]);
        // A bad signature is not considered.
        let mut bad = cert(0x12, 30, None, true);
        bad.status = SigStatus::Bad;
        assert_eq!(picked(&[cert(0x12, 10, None, true), bad]), [10]);
    }

    #[test]
    fn depth_lines_read_as_gpgs() {
        let d = Depth { depth: 1, valid: 6, signed: 61, trust: [0, 0, 0, 6, 0, 0] };
        assert_eq!(d.line(), "depth: 1  valid:   6  signed:  61  trust: 0-, 0q, 0n, 6m, 0f, 0u");
    }
}
