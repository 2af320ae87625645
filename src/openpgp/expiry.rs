//! When a primary key expires and whether it was revoked, as gpg works it
//! out when it reads a keyblock (`merge_selfsigs_main`): what decides
//! whether gpg 2.2 takes the key to check a certification. No I/O.
//!
//! * **Expiry:** the newest direct-key self-signature (class 0x1F) with a
//!   key-expiration time wins; else, of the user ids before the first
//!   subkey, the one whose newest self-signature (0x10–0x13) is the newest
//!   among those giving a key-expiration time; else a v3 key's own
//!   expiration days. A time of 0 means none.
//! * **Revoked:** a key revocation (0x20) made by the key itself.
//! * **A subkey** expires at the key-expiration time of its newest binding
//!   (0x18) by the primary key, or when the primary key does; it is
//!   revoked by a subkey revocation (0x28) by the primary key.
//! * **A user id** is revoked when the key's newest revocation of it
//!   (0x30) is no older than its newest self-signature (or it has no
//!   self-signature), and expired when that self-signature's own
//!   expiration time has passed.
//!
//! gpg takes a self-signature only if it verifies; here its issuer is
//! trusted (keyrings GnuPG wrote hold no forged self-signatures).

use pgp::packet::Signature;
use pgp::types::KeyDetails;

use super::issuer::issuer_key_id;
use super::keyblock::{Component, Group, Keyblock};

/// What gpg knows of a key's life. In JSON: `expires` (RFC 3339 UTC) when
/// it expires, `revoked: true` when it was revoked, nothing otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyLife {
    /// When it expires (Unix seconds), if it does.
    pub expires: Option<i64>,
    /// Whether the key revoked itself.
    pub revoked: bool,
    /// When its newest revocation was made (Unix seconds).
    pub revoked_on: Option<i64>,
}

impl KeyLife {
    /// The life of `kb`'s primary key.
    pub(crate) fn of(kb: &Keyblock) -> Self {
        let (Some(own), Some(created)) = (kb.key_id(), kb.created()) else { return Self::default() };
        let key_group = kb.groups.iter().find(|g| matches!(g.component, Component::Key));
        let uids = kb
            .groups
            .iter()
            .take_while(|g| !matches!(g.component, Component::Subkey(_)))
            .filter(|g| matches!(g.component, Component::Uid(_)))
            .map(|g| decoded(g).collect::<Vec<_>>());
        let v3 = kb.primary.as_deref().and_then(|k| k.legacy_v3_expiration_days());
        let on_key: Vec<&Signature> = key_group.map(|g| decoded(g).collect()).unwrap_or_default();
        Self::from_sigs(own, created, v3, &on_key, uids)
    }

    /// A primary key's life from its signatures: those on the key itself
    /// (direct-key signatures and revocations) and each user id's (those
    /// before the first subkey); `v3_days` a v3 key's own expiration.
    pub(crate) fn from_sigs<'a>(
        own: [u8; 8],
        created: i64,
        v3_days: Option<u16>,
        on_key: &[&'a Signature],
        uids: impl Iterator<Item = impl AsRef<[&'a Signature]>>,
    ) -> Self {
        let expiry = |s: &Signature| expiry_after(s.key_expiration_time().map(|d| d.as_secs()), created);
        let revocation = newest(by(on_key, own, &|c| c == 0x20));
        let revoked_on = revocation.map(made);
        let revoked = revocation.is_some();
        let direct = newest(by(on_key, own, &|c| c == 0x1F)).and_then(expiry);
        let from_uids = || {
            uids.filter_map(|sigs| newest(by(sigs.as_ref(), own, &|c| matches!(c, 0x10..=0x13))))
                .filter_map(|s| Some((s.created().map_or(0, |t| t.as_secs()), expiry(s)?)))
                .max_by_key(|(made, _)| *made)
                .map(|(_, at)| at)
        };
        let v3 = || v3_days.filter(|&d| d != 0).map(|d| created + i64::from(d) * 86_400);
        Self { expires: direct.or_else(from_uids).or_else(v3), revoked, revoked_on }
    }

    /// Whether the key has expired at `now` (Unix seconds).
    pub fn expired(&self, now: i64) -> bool {
        self.expires.is_some_and(|at| at < now)
    }

    /// The subkey of `kb`'s group `at` on its own (see the module docs;
    /// gpg also holds a subkey unusable when the primary key is).
    pub(crate) fn of_subkey(kb: &Keyblock, at: usize) -> Self {
        let (Some(own), Some(group)) = (kb.key_id(), kb.groups.get(at)) else { return Self::default() };
        let Component::Subkey(Some(sub)) = &group.component else { return Self::default() };
        Self::of_subkey_sigs(own, i64::from(sub.created_at().as_secs()), &decoded(group).collect::<Vec<_>>())
    }

    /// A subkey made at `created` from its signatures; `own` is the
    /// primary key's id.
    pub(crate) fn of_subkey_sigs(own: [u8; 8], created: i64, sigs: &[&Signature]) -> Self {
        let revocation = newest(by(sigs, own, &|c| c == 0x28));
        let expires = newest(by(sigs, own, &|c| c == 0x18))
            .and_then(|s| expiry_after(s.key_expiration_time().map(|d| d.as_secs()), created));
        Self { expires, revoked: revocation.is_some(), revoked_on: revocation.map(made) }
    }

    /// Whether the key is unusable at `now`: revoked or expired.
    pub fn unusable(&self, now: i64) -> bool {
        self.revoked || self.expired(now)
    }
}

impl serde::Serialize for KeyLife {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let Some(at) = self.expires {
            m.serialize_entry("expires", &crate::timefmt::rfc3339(at))?;
        }
        if self.revoked {
            m.serialize_entry("revoked", &true)?;
        }
        m.end()
    }
}

/// What decides whether gpg's listings show a user id: whether the key
/// revoked it, and when its self-signature expires.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UidLife {
    /// Revoked by the key (or without a self-signature and revoked at all).
    pub revoked: bool,
    /// When its newest self-signature expires, if it does.
    pub expires: Option<i64>,
}

impl UidLife {
    /// A user id's life from its signatures; `own` is the key's id.
    pub(crate) fn from_sigs(own: [u8; 8], sigs: &[&Signature]) -> Self {
        let revocations = by(sigs, own, &|c| c == 0x30);
        let Some(selfsig) = newest(by(sigs, own, &|c| matches!(c, 0x10..=0x13))) else {
            // No self-signature: revoked if the key revoked it at all.
            return Self { revoked: !revocations.is_empty(), expires: None };
        };
        let revoked = newest(revocations).is_some_and(|r| made(r) >= made(selfsig));
        let expires = expiry_after(selfsig.signature_expiration_time().map(|d| d.as_secs()), made(selfsig));
        Self { revoked, expires }
    }

    /// Whether gpg's listings leave it out at `now`.
    pub fn unusable(&self, now: i64) -> bool {
        self.revoked || self.expires.is_some_and(|at| at < now)
    }
}

/// Whether gpg's listing leaves out the user id of `kb`'s group `at`
/// (with its signatures): revoked, or its self-signature expired at `now`.
pub(crate) fn uid_unusable(kb: &Keyblock, at: usize, now: i64) -> bool {
    let (Some(own), Some(group)) = (kb.key_id(), kb.groups.get(at)) else { return false };
    UidLife::from_sigs(own, &decoded(group).collect::<Vec<_>>()).unusable(now)
}

/// `base` plus an expiration time in seconds, where there is one (0 is
/// none).
fn expiry_after(secs: Option<u32>, base: i64) -> Option<i64> {
    secs.filter(|&d| d != 0).map(|d| base + i64::from(d))
}

/// The signatures of `g` the crate decoded.
fn decoded(g: &Group) -> impl Iterator<Item = &Signature> {
    g.sigs.iter().filter_map(|p| p.decoded.as_deref().ok())
}

/// Those of `sigs` of a class `class` accepts made by the key `own`.
fn by<'a>(sigs: &[&'a Signature], own: [u8; 8], class: &dyn Fn(u8) -> bool) -> Vec<&'a Signature> {
    sigs.iter().copied().filter(|s| s.typ().map(u8::from).is_some_and(class) && issuer_key_id(s) == Some(own)).collect()
}

/// When `s` was made, Unix seconds.
fn made(s: &Signature) -> i64 {
    i64::from(s.created().map_or(0, |t| t.as_secs()))
}

/// The newest of `sigs`.
fn newest(sigs: Vec<&Signature>) -> Option<&Signature> {
    sigs.into_iter().max_by_key(|s| s.created().map_or(0, |t| t.as_secs()))
}
