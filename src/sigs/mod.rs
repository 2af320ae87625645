//! OpenPGP key signatures the way gpg lists and checks them:
//! `list --with-sigs` (`gpg --list-sigs`: every signature with its
//! signer's key id and primary user id) and `list --check-sigs`
//! (`gpg --check-sigs`: every self-signature, subkey binding, revocation
//! and third-party certification verified with the signer's key).
//!
//! * [`keyblock`] decodes a keyblock into components and signatures, and
//!   picks the primary user id as gpg does (no I/O);
//! * [`verify`] checks one signature with the `pgp` crate (no I/O);
//! * [`lookup`] finds signers: gpg's own access pattern (documented
//!   there), one rescan per lookup, or an in-memory index.
//!
//! [`check_keyblock`] walks one keyblock with a lookup strategy; the
//! passes over the file are in [`crate::workload::sigs`].

pub mod keyblock;
pub mod lookup;
pub mod verify;

use pgp::types::KeyDetails as _;
use serde::Serialize;

use crate::kbx::dump::hex_upper;
use crate::timefmt::rfc3339;
use keyblock::{issuer_fpr, issuer_key_id, Component, Keyblock, Part};
pub use lookup::{GnupgLookup, IndexLookup, LookupError, ScanLookup, Signer, SignerLookup};
use verify::{SignerKey, Verdict};

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
    /// not exportable).
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
}

/// A component and its signatures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SigGroup {
    /// `key` (on the primary key), `uid`, `uat` or `sub`.
    pub kind: &'static str,
    /// The user id (lossy UTF-8), `[user attribute]`, the subkey's
    /// fingerprint, or empty for the primary key.
    pub label: String,
    /// Its signatures in keyblock order.
    pub sigs: Vec<SigLine>,
}

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

fn line(kid: [u8; 8], sig: Option<&pgp::packet::Signature>, status: SigStatus, reason: Option<String>) -> SigLine {
    let class_byte = sig.and_then(|s| s.typ()).map_or(0, u8::from);
    let exportable = sig.is_none_or(|s| s.exportable_certification());
    SigLine {
        signer_key_id: hex_upper(&kid),
        signer_uid: None,
        created: sig.and_then(|s| s.created()).map(|t| rfc3339(i64::from(t.as_secs()))),
        class: format!("{class_byte:02x}{}", if exportable { 'x' } else { 'l' }),
        status,
        mark: status.mark(),
        reason,
        class_byte,
    }
}

/// Whether gpg lists a signature of this class (others get its
/// "unexpected signature class" line and no lookup).
fn listed_class(c: u8) -> bool {
    matches!(c, 0x10..=0x13 | 0x18 | 0x1F | 0x20 | 0x28 | 0x30)
}

/// Walk every signature of a keyblock in `mode`, looking signers up with
/// `lookup` in the order gpg does.
///
/// # Errors
/// I/O errors of the lookups.
pub fn check_keyblock(
    kb: &Keyblock,
    mode: Mode,
    now: i64,
    lookup: &mut impl SignerLookup,
) -> Result<Vec<SigGroup>, LookupError> {
    let own_ids: Vec<[u8; 8]> = kb
        .primary
        .iter()
        .map(|p| keyblock::key_id_bytes(pgp::types::KeyDetails::legacy_key_id(p.as_ref()).as_ref()))
        .chain(kb.groups.iter().filter_map(|g| match &g.component {
            Component::Subkey(Some(k)) => {
                Some(keyblock::key_id_bytes(pgp::types::KeyDetails::legacy_key_id(k.as_ref()).as_ref()))
            }
            _ => None,
        }))
        .collect();
    let mut groups = Vec::with_capacity(kb.groups.len());
    for g in &kb.groups {
        let (kind, label) = match &g.component {
            Component::Key => ("key", String::new()),
            Component::Uid(u) => ("uid", String::from_utf8_lossy(u.id()).into_owned()),
            Component::Uat(_) => ("uat", "[user attribute]".to_string()),
            Component::Subkey(Some(k)) => {
                ("sub", hex_upper(pgp::types::KeyDetails::fingerprint(k.as_ref()).as_bytes()))
            }
            Component::Subkey(None) => ("sub", String::new()),
        };
        let mut sigs = Vec::with_capacity(g.sigs.len());
        for part in &g.sigs {
            let (sig, cached) = match part {
                Part::Sig(s, cached) => (s.as_ref(), *cached),
                Part::Broken(why) => {
                    sigs.push(line(
                        [0; 8],
                        None,
                        SigStatus::Error,
                        Some(format!("signature packet does not decode: {why}")),
                    ));
                    continue;
                }
            };
            let kid = issuer_key_id(sig).unwrap_or([0; 8]);
            let class = sig.typ().map_or(0, u8::from);
            if !listed_class(class) {
                sigs.push(line(
                    kid,
                    Some(sig),
                    SigStatus::Error,
                    Some(format!("unexpected signature class 0x{class:02x}")),
                ));
                continue;
            }
            let mut l = match mode {
                Mode::WithSigs => line(kid, Some(sig), SigStatus::Unchecked, None),
                Mode::CheckSigs => check_one(kb, &g.component, sig, cached, kid, &own_ids, now, lookup)?,
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
        groups.push(SigGroup { kind, label, sigs });
    }
    Ok(groups)
}

/// One signature through gpg's `check_key_signature2` (the arguments are
/// what it reads: the keyblock, the signed component, the signature and
/// its cached verdict, the signer's key id, the keyblock's own key ids,
/// the time, and where other signers come from).
#[allow(clippy::too_many_arguments)]
fn check_one(
    kb: &Keyblock,
    component: &Component,
    sig: &pgp::packet::Signature,
    cached: Option<bool>,
    kid: [u8; 8],
    own_ids: &[[u8; 8]],
    now: i64,
    lookup: &mut impl SignerLookup,
) -> Result<SigLine, LookupError> {
    // gpg's signature cache (`check_key_signature2`): a verdict stored in
    // the keyblock's ring-trust packet is taken as it is, after the time
    // checks (`check_signature_metadata_validity`: a signature older than
    // the key, or made in the future).
    let created = sig.created().map_or(0, |t| i64::from(t.as_secs()));
    let time_conflict =
        kb.primary.as_ref().is_some_and(|p| created < i64::from(p.created_at().as_secs())) || created > now;
    if let Some(valid) = cached {
        if time_conflict {
            return Ok(line(kid, Some(sig), SigStatus::Error, Some("Time conflict".into())));
        }
        return Ok(if valid {
            line(kid, Some(sig), SigStatus::Good, None)
        } else {
            line(kid, Some(sig), SigStatus::Bad, Some("Bad signature".into()))
        });
    }
    // Then the algorithms, before the signer is looked for.
    if let Some(c) = sig.config() {
        if !matches!(u8::from(c.pub_alg), 1..=3 | 16 | 17 | 19 | 20 | 22) {
            return Ok(line(kid, Some(sig), SigStatus::Error, Some("Unknown public key algorithm".into())));
        }
        if !matches!(u8::from(c.hash_alg), 1..=3 | 8..=11) {
            return Ok(line(kid, Some(sig), SigStatus::Error, Some("Invalid digest algorithm".into())));
        }
    }
    let Some(primary) = kb.primary.as_deref() else {
        return Ok(line(kid, Some(sig), SigStatus::Error, Some("Unknown public key algorithm".into())));
    };
    if time_conflict {
        return Ok(line(kid, Some(sig), SigStatus::Error, Some("Time conflict".into())));
    }
    let verdict = if own_ids.contains(&kid) {
        match SignerKey::find(kb, &kid) {
            Some(k) => verify::verify(primary, component, sig, k),
            None => Verdict::Error("Unknown public key algorithm".into()),
        }
    } else {
        let fpr = issuer_fpr(sig);
        let Some(signer) = lookup.key_for_sig(fpr.as_deref(), kid)? else {
            return Ok(line(kid, Some(sig), SigStatus::NoKey, Some("No public key".into())));
        };
        match SignerKey::find(&signer.keyblock, &kid) {
            Some(k) => verify::verify(primary, component, sig, k),
            None => Verdict::Error("Unknown public key algorithm".into()),
        }
    };
    Ok(match verdict {
        Verdict::Good => line(kid, Some(sig), SigStatus::Good, None),
        Verdict::Bad => line(kid, Some(sig), SigStatus::Bad, Some("Bad signature".into())),
        Verdict::Error(why) => line(kid, Some(sig), SigStatus::Error, Some(why)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{BufferSize, MemoryOpener};
    use crate::validate::Lookup;
    use crate::workload::sigs::{run, Startup};

    const MIXED: &[u8] = include_bytes!("../../tests/fixtures/gnupg-mixed.kbx");

    fn statuses(mode: Mode, lookup: Lookup) -> Vec<(String, char, Option<String>)> {
        let opener = MemoryOpener::new(MIXED, BufferSize::Bytes(8192));
        let mut out = Vec::new();
        let outcome = run(&opener, mode, lookup, Startup { now: i64::MAX }, |k| {
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
            let gnupg = statuses(mode, Lookup::Gnupg);
            assert_eq!(gnupg.len(), 187, "{mode:?}"); // gpg --check-sigs: 187 good signatures
            assert_eq!(statuses(mode, Lookup::Scan), gnupg, "{mode:?}");
            assert_eq!(statuses(mode, Lookup::Index), gnupg, "{mode:?}");
            let want = if mode == Mode::CheckSigs { '!' } else { ' ' };
            assert!(gnupg.iter().all(|s| s.1 == want && s.2.is_some()), "{mode:?}");
        }
    }

    #[test]
    fn the_primary_uid_is_gpgs() {
        // gpg --list-sigs prints this user id for the fixture's first key.
        let opener = MemoryOpener::new(MIXED, BufferSize::Bytes(8192));
        let mut first = None;
        run(&opener, Mode::WithSigs, Lookup::Index, Startup { now: i64::MAX }, |k| {
            if first.is_none() {
                first = Some(k.signatures[1].sigs[0].signer_uid.clone());
            }
        })
        .unwrap();
        assert_eq!(first.flatten().as_deref(), Some("Dieter Núñez <greta.weiss10008@bar.example>"));
    }
}
