//! gpg's two key caches in front of the key-id search (see the module
//! docs of [`super`]), with gpg's sizes and eviction rules, indexed so a
//! lookup costs a hash lookup however full they are.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::signer::Signer;

/// gpg's `PK_UID_CACHE_SIZE` (configure's default key cache size).
pub(super) const CACHE_SIZE: usize = 4096;

/// gpg's user-id cache (`cache_user_id`): keyblocks in the order they
/// came, at most [`CACHE_SIZE`]; a keyblock sharing a fingerprint with a
/// cached one is not added, and when the cache is full the newest entry
/// goes. Indexed by key id and fingerprint, so a lookup costs what a hash
/// lookup costs however full the cache is.
#[derive(Default)]
pub(super) struct UidCache {
    entries: Vec<Arc<Signer>>,
    /// Positions in `entries` per key id, oldest first.
    by_kid: HashMap<[u8; 8], Vec<usize>>,
    /// Every cached fingerprint (each in one entry only).
    fingerprints: HashSet<Vec<u8>>,
}

impl UidCache {
    /// The newest cached keyblock with key id `kid`.
    pub(super) fn get(&self, kid: &[u8; 8]) -> Option<Arc<Signer>> {
        self.by_kid.get(kid).and_then(|at| at.last()).map(|&i| self.entries[i].clone())
    }

    pub(super) fn insert(&mut self, s: &Arc<Signer>) {
        if s.fingerprints.iter().any(|f| self.fingerprints.contains(f)) {
            return;
        }
        if self.entries.len() >= CACHE_SIZE {
            if let Some(newest) = self.entries.pop() {
                for k in &newest.key_ids {
                    // The newest entry is the last position of each of its key ids.
                    if let Some(at) = self.by_kid.get_mut(k) {
                        at.pop();
                        if at.is_empty() {
                            self.by_kid.remove(k);
                        }
                    }
                }
                for f in &newest.fingerprints {
                    self.fingerprints.remove(f);
                }
            }
        }
        let i = self.entries.len();
        for k in &s.key_ids {
            let at = self.by_kid.entry(*k).or_default();
            if at.last() != Some(&i) {
                at.push(i);
            }
        }
        self.fingerprints.extend(s.fingerprints.iter().cloned());
        self.entries.push(s.clone());
    }
}

/// gpg's public-key cache (`cache_public_key`), by key id: an entry per
/// key id at most; when it holds [`CACHE_SIZE`], the older half goes.
#[derive(Default)]
pub(super) struct PkCache {
    /// Key ids, oldest first.
    order: Vec<[u8; 8]>,
    by_kid: HashMap<[u8; 8], Arc<Signer>>,
}

impl PkCache {
    pub(super) fn get(&self, kid: &[u8; 8]) -> Option<Arc<Signer>> {
        self.by_kid.get(kid).cloned()
    }

    pub(super) fn insert(&mut self, kid: [u8; 8], s: &Arc<Signer>) {
        if self.by_kid.contains_key(&kid) {
            return;
        }
        if self.order.len() >= CACHE_SIZE {
            let drop = self.order.len() - self.order.len() / 2;
            for k in self.order.drain(..drop.saturating_sub(1)) {
                self.by_kid.remove(&k);
            }
        }
        self.order.push(kid);
        self.by_kid.insert(kid, s.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openpgp::keyblock::Keyblock;

    fn signer(n: u32, fpr_of: u32) -> Arc<Signer> {
        let fpr = [&[0u8; 16][..], &fpr_of.to_be_bytes()].concat();
        let mut kid = [0u8; 8];
        kid[4..].copy_from_slice(&n.to_be_bytes());
        Arc::new(Signer {
            keyblock: Keyblock::parse(&[]),
            primary_uid: n.to_string().into_bytes(),
            key_ids: vec![kid],
            fingerprints: vec![fpr],
            life: Default::default(),
            offset: 0,
        })
    }

    fn kid(n: u32) -> [u8; 8] {
        signer(n, n).key_ids[0]
    }

    #[test]
    fn the_user_id_cache_keeps_gpgs_rules() {
        let mut c = UidCache::default();
        c.insert(&signer(1, 1));
        // A keyblock with a cached fingerprint is not added.
        c.insert(&signer(2, 1));
        assert!(c.get(&kid(2)).is_none());
        // Two keyblocks with one key id: the newest answers.
        let newer = signer(1, 3);
        c.insert(&newer);
        assert!(Arc::ptr_eq(&c.get(&kid(1)).unwrap(), &newer));
        // Full: the newest entry makes room for the next one.
        let last = 10 + CACHE_SIZE as u32;
        for n in 10..=last {
            c.insert(&signer(n, n));
        }
        assert_eq!(c.entries.len(), CACHE_SIZE);
        assert!(c.get(&kid(last)).is_some());
        // 2 + 4094 filled it; each of the last four then replaced the one before.
        assert!((last - 3..last).all(|n| c.get(&kid(n)).is_none()), "each made room for the next");
        assert!(c.get(&kid(last - 4)).is_some());
        assert!(Arc::ptr_eq(&c.get(&kid(1)).unwrap(), &newer));
        // The fingerprint of a dropped entry may come back.
        c.insert(&signer(7, last - 1));
        assert!(c.get(&kid(7)).is_some() && c.get(&kid(last)).is_none());
    }

    #[test]
    fn the_public_key_cache_drops_its_older_half() {
        let mut c = PkCache::default();
        for n in 0..CACHE_SIZE as u32 {
            c.insert(kid(n), &signer(n, n));
        }
        c.insert(kid(0), &signer(99_999, 99_999));
        assert_eq!(c.get(&kid(0)).unwrap().primary_uid, b"0", "one entry per key id");
        c.insert(kid(100_000), &signer(100_000, 100_000));
        let kept = CACHE_SIZE / 2 + 1;
        assert_eq!(c.order.len(), kept + 1);
        assert!(c.get(&kid(0)).is_none() && c.get(&kid(CACHE_SIZE as u32 / 2 - 2)).is_none());
        assert!(c.get(&kid(CACHE_SIZE as u32 / 2 - 1)).is_some() && c.get(&kid(100_000)).is_some());
    }
}
