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

/// What gpg knows of a primary key's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyLife {
    /// When it expires (Unix seconds), if it does.
    pub expires: Option<i64>,
    /// Whether the key revoked itself.
    pub revoked: bool,
}

impl KeyLife {
    /// The life of `kb`'s primary key.
    pub(crate) fn of(kb: &Keyblock) -> Self {
        let (Some(own), Some(created)) = (kb.key_id(), kb.created()) else { return Self::default() };
        let own_sigs = |g, class| own_sigs(g, own, class);
        let expiry = |s: &Signature| {
            s.key_expiration_time().map(|d| d.as_secs()).filter(|&d| d != 0).map(|d| created + i64::from(d))
        };
        let key_group = kb.groups.iter().find(|g| matches!(g.component, Component::Key));
        let revoked = key_group.is_some_and(|g| !own_sigs(g, &|c| c == 0x20).is_empty());
        let direct = key_group.and_then(|g| newest(own_sigs(g, &|c| c == 0x1F))).and_then(expiry);
        let from_uids = || {
            kb.groups
                .iter()
                .take_while(|g| !matches!(g.component, Component::Subkey(_)))
                .filter(|g| matches!(g.component, Component::Uid(_)))
                .filter_map(|g| newest(own_sigs(g, &|c| matches!(c, 0x10..=0x13))))
                .filter_map(|s| Some((s.created().map_or(0, |t| t.as_secs()), expiry(s)?)))
                .max_by_key(|(made, _)| *made)
                .map(|(_, at)| at)
        };
        let v3 = || {
            let days = kb.primary.as_deref()?.legacy_v3_expiration_days()?;
            (days != 0).then(|| created + i64::from(days) * 86_400)
        };
        Self { expires: direct.or_else(from_uids).or_else(v3), revoked }
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
        let created = i64::from(sub.created_at().as_secs());
        let revoked = !own_sigs(group, own, &|c| c == 0x28).is_empty();
        let expires = newest(own_sigs(group, own, &|c| c == 0x18))
            .and_then(|s| s.key_expiration_time())
            .map(|d| d.as_secs())
            .filter(|&d| d != 0)
            .map(|d| created + i64::from(d));
        Self { expires, revoked }
    }

    /// Whether the key is unusable at `now`: revoked or expired.
    pub fn unusable(&self, now: i64) -> bool {
        self.revoked || self.expired(now)
    }
}

/// Whether gpg's listing leaves out the user id of `kb`'s group `at`
/// (with its signatures): revoked, or its self-signature expired at `now`.
pub(crate) fn uid_unusable(kb: &Keyblock, at: usize, now: i64) -> bool {
    let (Some(own), Some(group)) = (kb.key_id(), kb.groups.get(at)) else { return false };
    let made = |s: &Signature| i64::from(s.created().map_or(0, |t| t.as_secs()));
    let Some(selfsig) = newest(own_sigs(group, own, &|c| matches!(c, 0x10..=0x13))) else {
        // No self-signature: revoked if the key revoked it at all.
        return !own_sigs(group, own, &|c| c == 0x30).is_empty();
    };
    let revoked = newest(own_sigs(group, own, &|c| c == 0x30)).is_some_and(|r| made(r) >= made(selfsig));
    let expired = selfsig
        .signature_expiration_time()
        .map(|d| d.as_secs())
        .filter(|&d| d != 0)
        .is_some_and(|d| made(selfsig) + i64::from(d) < now);
    revoked || expired
}

/// The signatures of `g` of a class `class` accepts made by the key `own`.
fn own_sigs<'a>(g: &'a Group, own: [u8; 8], class: &dyn Fn(u8) -> bool) -> Vec<&'a Signature> {
    g.sigs
        .iter()
        .filter_map(|p| p.decoded.as_deref().ok())
        .filter(|s| s.typ().map(u8::from).is_some_and(class) && issuer_key_id(s) == Some(own))
        .collect()
}

/// The newest of `sigs`.
fn newest(sigs: Vec<&Signature>) -> Option<&Signature> {
    sigs.into_iter().max_by_key(|s| s.created().map_or(0, |t| t.as_secs()))
}
