//! OpenPGP key signatures the way gpg lists and checks them:
//! `list --with-sigs` (`gpg --list-sigs`: every signature with its
//! signer's key id and primary user id) and `list --check-sigs`
//! (`gpg --check-sigs`: every self-signature, subkey binding, revocation
//! and third-party certification verified with the signer's key).
//!
//! [`check_keyblock`] walks one keyblock with a signer lookup; the passes
//! over the file are in `crate::workload::sigs`.

use serde::Serialize;

use super::cert_facts::CertFacts;
use super::expiry::{uid_unusable, KeyLife};
use super::issuer::{issuer_fpr, issuer_key_id};
use super::keyblock::{Component, Group, Keyblock, Part};
use super::lookup::{Signer, SignerLookup};
use super::raw::{self, SigPacket};
use super::verify::{self, SignerKey, Verdict};
use crate::gnupg_version::GnupgVersion;
use crate::kbx::dump::hex_upper;
use crate::lookup::LookupError;
use crate::timefmt::rfc3339;

/// Which of gpg's two listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `gpg --list-sigs`: signer user ids looked up, nothing verified.
    WithSigs,
    /// `gpg --check-sigs`: every signature verified.
    CheckSigs,
}

/// A signature's status, with gpg's marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SigStatus {
    /// Verified good (`!`).
    Good,
    /// Does not verify (`-`).
    Bad,
    /// The signer's key is not in the keybox (`?`).
    NoKey,
    /// Cannot be checked (`%`).
    Error,
    /// Listed, not checked (`--with-sigs`; gpg prints a blank).
    Unchecked,
}

impl SigStatus {
    /// gpg's mark for this status.
    pub fn mark(self) -> char {
        match self {
            Self::Good => '!',
            Self::Bad => '-',
            Self::NoKey => '?',
            Self::Error => '%',
            Self::Unchecked => ' ',
        }
    }
}

/// One listed signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SigLine {
    /// The signer's 64-bit key id, upper-case hex.
    pub signer_key_id: String,
    /// The signer's primary user id, if the signer is in the keybox.
    pub signer_uid: Option<String>,
    /// Creation time, RFC 3339 UTC.
    pub created: Option<String>,
    /// Signature class as gpg's colon listing shows it (`13x`; `l` when
    /// not exportable; a revocation's reason code after a comma, `30x,20`).
    pub class: String,
    /// The status.
    pub status: SigStatus,
    /// gpg's mark for it (`!`, `-`, `?`, `%`, or a blank).
    pub mark: char,
    /// Why, where gpg says why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The class byte.
    #[serde(skip)]
    pub class_byte: u8,
    /// gpg's flag columns after the local mark in its human-readable
    /// listings: `R` not revocable, `P` a policy URL, `N` notations, `X`
    /// expired, and the trust-signature depth (`T` above 9); blanks where
    /// they do not apply.
    #[serde(skip)]
    pub columns: [char; 5],
    /// Made by the primary key itself (gpg 2.4's human-readable listings
    /// print `[self-signature]` for it).
    #[serde(skip)]
    pub self_sig: bool,
    /// What gpg's trust-database check takes from a decoded signature.
    #[serde(skip)]
    pub cert: Option<CertFacts>,
    /// A signature gpg 2.4's human-readable listings leave out (unless
    /// `--list-options show-unusable-sigs`): in `--list-sigs` one with an
    /// algorithm gpg does not know or a third-party SHA-1 one, in
    /// `--check-sigs` one not checked for its algorithm.
    #[serde(skip)]
    pub unusable: bool,
}

/// A component and its signatures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SigGroup {
    /// `key` (on the primary key), `uid`, `uat` or `sub`.
    pub kind: &'static str,
    /// The user id (lossy UTF-8), gpg's name of a user attribute (`[jpeg
    /// image of size N]`), the subkey's fingerprint, or empty for the
    /// primary key.
    pub label: String,
    /// A user id's or user attribute's name hash (the RIPEMD-160 of its
    /// bytes), which gpg's trust database files its validity under.
    #[serde(skip)]
    pub name_hash: Option<[u8; 20]>,
    /// Its signatures in keyblock order.
    pub sigs: Vec<SigLine>,
    /// A subkey's life, which gpg's listings note beside it.
    #[serde(skip)]
    pub life: Option<KeyLife>,
    /// A revoked or expired user id or subkey (or any subkey of a revoked
    /// or expired key), which gpg's human-readable listings leave out with
    /// its signatures (unless `--list-options show-unusable-uids`,
    /// `show-unusable-subkeys`).
    #[serde(skip)]
    pub unusable: bool,
}

/// The reasons gpg 2.4's human-readable `--check-sigs` leaves a signature
/// out for (`GPG_ERR_DIGEST_ALGO`, `GPG_ERR_PUBKEY_ALGO`), unless
/// `--list-options show-unusable-sigs`.
const UNUSABLE: [&str; 3] = ["Digest algorithm", "Invalid digest algorithm", "Unknown public key algorithm"];

/// Counts over a listing, as gpg's `--check-sigs` summary gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SigCounts {
    /// Good signatures.
    pub good: u64,
    /// Bad signatures.
    pub bad: u64,
    /// Signatures whose signer is missing.
    pub no_key: u64,
    /// Signatures that could not be checked.
    pub error: u64,
    /// Signatures listed without a check.
    pub unchecked: u64,
}

impl SigCounts {
    /// Count a status.
    pub fn add(&mut self, s: SigStatus) {
        match s {
            SigStatus::Good => self.good += 1,
            SigStatus::Bad => self.bad += 1,
            SigStatus::NoKey => self.no_key += 1,
            SigStatus::Error => self.error += 1,
            SigStatus::Unchecked => self.unchecked += 1,
        }
    }
}

/// What the listing reads of a signature: from the `pgp` crate's
/// decoding, or from the packet's bytes where the crate could not decode
/// it (a v5 signature).
#[derive(Debug)]
struct Meta {
    kid: [u8; 8],
    fpr: Option<Vec<u8>>,
    class: u8,
    created: Option<u32>,
    exportable: bool,
    /// The reason-for-revocation code, which gpg's colon listing appends
    /// to the class (`30x,20`).
    revocation_reason: Option<u8>,
    /// Public-key and hash algorithm ids.
    algorithms: Option<(u8, u8)>,
}

impl Meta {
    fn of(sig: &pgp::packet::Signature) -> Self {
        Self {
            kid: issuer_key_id(sig).unwrap_or([0; 8]),
            fpr: issuer_fpr(sig),
            class: sig.typ().map_or(0, u8::from),
            created: sig.created().map(|t| t.as_secs()),
            exportable: sig.exportable_certification(),
            revocation_reason: sig.revocation_reason_code().map(|c| u8::from(*c)),
            algorithms: sig.config().map(|c| (u8::from(c.pub_alg), u8::from(c.hash_alg))),
        }
    }

    fn of_raw(sig: &SigPacket) -> Self {
        Self {
            kid: sig.issuer.unwrap_or([0; 8]),
            fpr: sig.issuer_fpr.clone(),
            class: sig.class,
            created: sig.created,
            exportable: sig.exportable,
            revocation_reason: sig.revocation_reason,
            algorithms: Some((sig.pub_alg, sig.hash_alg)),
        }
    }
}

/// A listed signature; `meta` is `None` for a packet nothing could read.
fn line(meta: Option<&Meta>, status: SigStatus, reason: Option<String>) -> SigLine {
    let class_byte = meta.map_or(0, |m| m.class);
    let exportable = meta.is_none_or(|m| m.exportable);
    let revoked_for = meta.and_then(|m| m.revocation_reason).map(|r| format!(",{r:02x}")).unwrap_or_default();
    SigLine {
        signer_key_id: hex_upper(&meta.map_or([0; 8], |m| m.kid)),
        signer_uid: None,
        created: meta.and_then(|m| m.created).map(|t| rfc3339(i64::from(t))),
        class: format!("{class_byte:02x}{}{revoked_for}", if exportable { 'x' } else { 'l' }),
        status,
        mark: status.mark(),
        reason,
        class_byte,
        self_sig: false,
        unusable: false,
        columns: [' '; 5],
        cert: None,
    }
}

/// A user attribute packet's body: its bytes in the keyblock, or, where
/// the framing was not read, the crate's packet written out again (one
/// subpacket, as read).
fn attribute_body(
    kb: &Keyblock,
    body: Option<&std::ops::Range<usize>>,
    decoded: Option<&pgp::packet::UserAttribute>,
) -> Option<Vec<u8>> {
    match (body, decoded) {
        (Some(b), _) => Some(kb.bytes(b).to_vec()),
        (None, Some(u)) => pgp::ser::Serialize::to_bytes(u).ok(),
        (None, None) => None,
    }
}

/// gpg's flag columns of a signature at `now` (see [`SigLine::columns`]).
fn columns(sig: &pgp::packet::Signature, now: i64) -> [char; 5] {
    let flag = |on: bool, c: char| if on { c } else { ' ' };
    let created = i64::from(sig.created().map_or(0, |t| t.as_secs()));
    let expired =
        sig.signature_expiration_time().map(|d| d.as_secs()).is_some_and(|d| d != 0 && created + i64::from(d) < now);
    let depth = match sig.trust_signature().map(|t| t.0) {
        Some(d @ 1..=9) => char::from(b'0' + d),
        Some(10..) => 'T',
        _ => ' ',
    };
    [
        flag(!sig.is_revocable(), 'R'),
        flag(sig.policy_uri().is_some(), 'P'),
        flag(!sig.notations().is_empty(), 'N'),
        flag(expired, 'X'),
        depth,
    ]
}

/// Whether gpg lists a signature of this class (others get its
/// "unexpected signature class" line and no lookup).
fn listed_class(c: u8) -> bool {
    matches!(c, 0x10..=0x13 | 0x18 | 0x1F | 0x20 | 0x28 | 0x30)
}

/// Whose judgement, and when: what a signature's status depends on
/// besides its keyblock and its signer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judge {
    /// The GnuPG version whose rules apply.
    pub version: GnupgVersion,
    /// The time, Unix seconds.
    pub now: i64,
}

/// Walk every signature of a keyblock (`listed`, as a lookup would find
/// it: with its offset, up to which gpg's listing has come, and its
/// primary key's life) in `mode`, looking signers up with `lookup` in the
/// order gpg does.
///
/// # Errors
/// I/O errors of the lookups.
pub(crate) fn check_keyblock(
    listed: &Signer,
    mode: Mode,
    judge: Judge,
    lookup: &mut impl SignerLookup,
) -> Result<Vec<SigGroup>, LookupError> {
    let Signer { keyblock: kb, offset, life: primary_life, .. } = listed;
    let (offset, primary_life) = (*offset, *primary_life);
    let own_ids = kb.key_ids();
    let own = kb.key_id();
    let now = judge.now;
    let mut groups = Vec::with_capacity(kb.groups.len());
    // gpg lists the primary user id first (`reorder_keyblock`), right
    // after the primary key's own signatures, and looks signers up in
    // that order.
    let first_uid = kb.primary_uid_group();
    let rest = (1..kb.groups.len()).filter(|&i| Some(i) != first_uid);
    for (i, g) in std::iter::once(0).chain(first_uid).chain(rest).map(|i| (i, &kb.groups[i])) {
        let sub_life = matches!(g.component, Component::Subkey(_)).then(|| KeyLife::of_subkey(kb, i));
        let unusable = match &g.component {
            Component::Uid(_) | Component::Uat(_) => uid_unusable(kb, i, now),
            Component::Subkey(_) => primary_life.unusable(now) || sub_life.is_some_and(|l| l.unusable(now)),
            Component::Key => false,
        };
        let (kind, label) = match &g.component {
            Component::Key => ("key", String::new()),
            Component::Uid(u) => ("uid", String::from_utf8_lossy(u.id()).into_owned()),
            Component::Uat(u) => match (attribute_body(kb, g.body.as_ref(), u.as_ref()), &g.photo) {
                (Some(body), _) => ("uat", super::attribute_name(&body)),
                (None, Some((name, _))) => ("uat", name.clone()),
                (None, None) => ("uat", "[user attribute]".to_string()),
            },
            Component::Subkey(Some(k)) => match kb.decoded_key(Some(i)) {
                Some(made) => ("sub", hex_upper(made.fingerprint.as_bytes())),
                None => ("sub", hex_upper(pgp::types::KeyDetails::fingerprint(k.as_ref()).as_bytes())),
            },
            Component::Subkey(None) => {
                let raw = g.body.as_ref().and_then(|b| raw::KeyPacket::parse(kb.bytes(b)).ok());
                ("sub", raw.map(|k| hex_upper(&k.fingerprint)).unwrap_or_default())
            }
        };
        let mut sigs = Vec::with_capacity(g.sigs.len());
        for part in &g.sigs {
            // What the crate could not decode, read from the bytes.
            let raw = match (&part.decoded, &part.body) {
                (Err(_), Some(b)) => Some(SigPacket::parse(kb.bytes(b))),
                _ => None,
            };
            let meta = match (&part.decoded, &raw) {
                (Ok(s), _) => Meta::of(s),
                (Err(_), Some(Ok(r))) => Meta::of_raw(r),
                (Err(why), _) => {
                    let why: &dyn std::fmt::Display = match &raw {
                        Some(Err(e)) => e,
                        _ => why,
                    };
                    sigs.push(line(None, SigStatus::Error, Some(format!("signature packet does not decode: {why}"))));
                    continue;
                }
            };
            let (kid, class) = (meta.kid, meta.class);
            if !listed_class(class) {
                sigs.push(line(
                    Some(&meta),
                    SigStatus::Error,
                    Some(format!("unexpected signature class 0x{class:02x}")),
                ));
                continue;
            }
            let self_sig = Some(kid) == own;
            let mut l = match mode {
                Mode::WithSigs => line(Some(&meta), SigStatus::Unchecked, None),
                Mode::CheckSigs => check_one(kb, i, part, &meta, &own_ids, (judge, offset), lookup)?,
            };
            l.self_sig = self_sig;
            if let Ok(sig) = &part.decoded {
                l.columns = columns(sig, now);
                l.cert = Some(CertFacts::of(sig));
            }
            // What gpg 2.4's human-readable listings leave out: --list-sigs
            // a signature with an algorithm it does not know or a
            // third-party SHA-1 one, --check-sigs one it could not check
            // for its algorithm.
            l.unusable = match mode {
                Mode::WithSigs => meta.algorithms.is_some_and(|(pub_alg, hash)| {
                    !matches!(pub_alg, 1..=3 | 16 | 17 | 19 | 20 | 22)
                        || !matches!(hash, 1..=3 | 8..=11)
                        || (hash == 2 && !self_sig)
                }),
                Mode::CheckSigs => {
                    l.status == SigStatus::Error && l.reason.as_deref().is_some_and(|r| UNUSABLE.contains(&r))
                }
            };
            if !matches!(l.status, SigStatus::Error | SigStatus::NoKey) {
                match lookup.user_id_of(kid)? {
                    Some(s) => l.signer_uid = Some(String::from_utf8_lossy(&s.primary_uid).into_owned()),
                    None if mode == Mode::WithSigs => {
                        l.status = SigStatus::NoKey;
                        l.mark = '?';
                        l.reason = Some("No public key".into());
                    }
                    None => {}
                }
            }
            sigs.push(l);
        }
        let name_hash = match &g.component {
            Component::Uid(u) => Some(super::name_hash(u.id())),
            Component::Uat(u) => attribute_body(kb, g.body.as_ref(), u.as_ref())
                .map(|b| super::name_hash(&b))
                .or(g.photo.as_ref().map(|(_, h)| *h)),
            _ => None,
        };
        groups.push(SigGroup { kind, label, name_hash, sigs, life: sub_life, unusable });
    }
    Ok(groups)
}

/// One signature through gpg's `check_key_signature2` (the arguments are
/// what it reads: the keyblock, the signed component (its group's index),
/// the signature packet (with its cached verdict) and what the listing
/// read of it, the keyblock's own key ids, whose rules and when, where the
/// listing is, and where other signers come from).
fn check_one(
    kb: &Keyblock,
    at: usize,
    part: &Part,
    meta: &Meta,
    own_ids: &[[u8; 8]],
    (judge, listed_to): (Judge, u64),
    lookup: &mut impl SignerLookup,
) -> Result<SigLine, LookupError> {
    let Judge { version, now } = judge;
    let done = |status, reason: Option<&str>| Ok(line(Some(meta), status, reason.map(str::to_string)));
    // gpg's time checks (`check_signature_metadata_validity`) on the key
    // that made the signature: a conflict when it is newer than the
    // signature or was made in the future (a signature made in the future
    // is fine).
    let created = meta.created.map_or(0, i64::from);
    let conflict = |key_created: i64| key_created > created || key_created > now;
    let key_created = kb.created();
    // gpg's signature cache (`check_key_signature2`): a verdict stored in
    // the keyblock's ring-trust packet is taken as it is, after the time
    // checks, which there look at the keyblock's primary key.
    if let Some(valid) = part.cached {
        crate::crypto::tally::count_cached();
        if key_created.is_some_and(conflict) {
            return done(SigStatus::Error, Some("Time conflict"));
        }
        return if valid { done(SigStatus::Good, None) } else { done(SigStatus::Bad, Some("Bad signature")) };
    }
    // Then the algorithms, before the signer is looked for.
    if let Some((pub_alg, hash_alg)) = meta.algorithms {
        if !matches!(pub_alg, 1..=3 | 16 | 17 | 19 | 20 | 22) {
            return done(SigStatus::Error, Some("Unknown public key algorithm"));
        }
        if !matches!(hash_alg, 1..=3 | 8..=11) {
            return done(SigStatus::Error, Some("Invalid digest algorithm"));
        }
    }
    if key_created.is_none() {
        return done(SigStatus::Error, Some("Unknown public key algorithm"));
    }
    // Then what the signature is over: a certification of a user id needs
    // one before it, a subkey binding a subkey (else gpg logs "no user ID
    // for key signature packet" and lists an invalid signature class).
    let before = &kb.groups[..=at];
    if matches!(meta.class, 0x10..=0x13 | 0x30) && !before.iter().any(|g| matches!(g.component, Component::Uid(_))) {
        return done(SigStatus::Error, Some("Invalid signature class"));
    }
    if matches!(meta.class, 0x18 | 0x28) && !before.iter().any(|g| matches!(g.component, Component::Subkey(_))) {
        return done(SigStatus::Error, Some("Invalid signature class"));
    }
    let kid = meta.kid;
    let other;
    let signer_kb = if own_ids.contains(&kid) {
        kb
    } else {
        // gpg looks the signer up for certifying (every class listed is a
        // certification): it passes over a key made in the future, which
        // has no self-signature gpg accepts yet (`merge_selfsigs`), and
        // gpg 2.2 over a primary key that has expired or was revoked.
        let made = |s: &Signer| s.keyblock.created().is_none_or(|c| c <= now);
        let usable =
            |s: &Signer| made(s) && (version.certifies_with_expired_keys() || !(s.life.revoked || s.life.expired(now)));
        // gpg's key cache holds a key it has listed (see `lookup`).
        let held = |s: &Signer| made(s) && s.offset <= listed_to;
        let Some(signer) = lookup.key_for_sig(meta.fpr.as_deref(), kid, &usable, &held)? else {
            return done(SigStatus::NoKey, Some("No public key"));
        };
        other = signer;
        &other.keyblock
    };
    // A third-party certification of a user id made with SHA-1 is
    // rejected once its signer is found (`check_signature_over_key_or_uid`;
    // only the primary key's own are self-signatures), by 2.2 only after
    // its cut-off date.
    let on_uid = matches!(meta.class, 0x10..=0x13 | 0x30);
    let sha1 = meta.algorithms.is_some_and(|(_, hash)| hash == 2);
    if on_uid && sha1 && Some(kid) != kb.key_id() && version.rejects_sha1_certification(meta.created.unwrap_or(0)) {
        return done(SigStatus::Error, Some("Digest algorithm"));
    }
    // The time checks, now on the signer's key (primary or subkey).
    let signer_key = SignerKey::find(signer_kb, &kid);
    let signer_created = match signer_key {
        Some(k) => Some(i64::from(k.created_at().as_secs())),
        None => signer_kb.raw_key(&kid).map(|k| i64::from(k.created)),
    };
    if signer_created.is_some_and(conflict) {
        return done(SigStatus::Error, Some("Time conflict"));
    }
    // With the signer's key in hand, gpg rejects a digest it holds weak
    // (`check_signature_end_simple`; MD5 by default: "signatures using the
    // MD5 algorithm are rejected"), whatever the key's algorithm.
    if meta.algorithms.is_some_and(|(_, hash)| hash == 1) {
        return done(SigStatus::Error, Some("Invalid digest algorithm"));
    }
    // The pgp crate's digest where it decoded everything, else the one
    // made from the packets' bytes.
    let decoded = match (&part.decoded, signer_key) {
        (Ok(sig), Some(k)) => verify::verify(kb, at, sig, k),
        _ => None,
    };
    let verdict = match decoded {
        Some(v @ (Verdict::Good | Verdict::Bad)) => v,
        other => raw_verdict(kb, &kb.groups[at], part, signer_kb, &kid)
            .or(other)
            .unwrap_or_else(|| Verdict::Error("Unknown public key algorithm".into())),
    };
    match verdict {
        Verdict::Good => done(SigStatus::Good, None),
        Verdict::Bad => done(SigStatus::Bad, Some("Bad signature")),
        Verdict::Error(why) => done(SigStatus::Error, Some(&why)),
    }
}

/// The verdict from the packets' bytes ([`verify::verify_raw`]); `None`
/// when a packet is missing or does not read.
fn raw_verdict(kb: &Keyblock, group: &Group, part: &Part, signer_kb: &Keyblock, kid: &[u8; 8]) -> Option<Verdict> {
    let sig = SigPacket::parse(kb.bytes(part.body.as_ref()?)).ok()?;
    let primary = kb.raw_primary()?;
    let signer = signer_kb.raw_key(kid)?;
    let subkey;
    let signed = match (&group.component, sig.class) {
        (Component::Key, 0x1F | 0x20) => raw::Signed::Key,
        (Component::Uid(_), 0x10..=0x13 | 0x30) => raw::Signed::Uid(kb.bytes(group.body.as_ref()?)),
        (Component::Uat(_), 0x10..=0x13 | 0x30) => raw::Signed::Uat(kb.bytes(group.body.as_ref()?)),
        (Component::Subkey(_), 0x18 | 0x28) => {
            subkey = raw::KeyPacket::parse(kb.bytes(group.body.as_ref()?)).ok()?;
            raw::Signed::Subkey(&subkey)
        }
        _ => return Some(Verdict::Error("Invalid signature class".into())),
    };
    Some(verify::verify_raw(&sig, &primary, signed, &signer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{BufferSize, MemoryOpener};
    use crate::lookup::Strategy;
    use crate::workload::sigs::on_keybox as run;

    const MIXED: &[u8] = include_bytes!("../../tests/fixtures/gnupg-mixed.kbx");

    fn statuses(mode: Mode, lookup: Strategy) -> Vec<(String, char, Option<String>)> {
        let opener = MemoryOpener::new(MIXED, BufferSize::Bytes(8192));
        let mut out = Vec::new();
        let outcome = run(&opener, mode, lookup, Judge { version: Default::default(), now: i64::MAX }, |k| {
            for s in k.signatures.iter().flat_map(|g| &g.sigs) {
                out.push((s.signer_key_id.clone(), s.mark, s.signer_uid.clone()));
            }
        })
        .unwrap();
        assert!(outcome.fatal.is_none(), "{:?}", outcome.fatal);
        out
    }

    #[test]
    fn the_three_lookups_agree() {
        for mode in [Mode::WithSigs, Mode::CheckSigs] {
            let gnupg = statuses(mode, Strategy::Gnupg);
            assert_eq!(gnupg.len(), 187, "{mode:?}"); // gpg --check-sigs: 187 good signatures
            assert_eq!(statuses(mode, Strategy::Scan), gnupg, "{mode:?}");
            assert_eq!(statuses(mode, Strategy::Index), gnupg, "{mode:?}");
            let want = if mode == Mode::CheckSigs { '!' } else { ' ' };
            assert!(gnupg.iter().all(|s| s.1 == want && s.2.is_some()), "{mode:?}");
        }
    }

    #[test]
    fn the_primary_uid_is_gpgs() {
        // gpg --list-sigs prints this user id for the fixture's first key.
        let opener = MemoryOpener::new(MIXED, BufferSize::Bytes(8192));
        let mut first = None;
        run(&opener, Mode::WithSigs, Strategy::Index, Judge { version: Default::default(), now: i64::MAX }, |k| {
            if first.is_none() {
                first = Some(k.signatures[1].sigs[0].signer_uid.clone());
            }
        })
        .unwrap();
        assert_eq!(first.flatten().as_deref(), Some("Dieter Núñez <greta.weiss10008@bar.example>"));
    }
}
