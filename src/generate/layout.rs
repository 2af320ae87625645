//! Import order and import times: bursts of keys and of certificates, as a
//! long-lived GnuPG home accumulates them.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha20Rng;

use super::constants::FIRST_IMPORT;
use super::pki::{PkiPlan, Role};

/// One entry of the file, in import order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    Cert(usize),
    Key(usize),
}

/// Import order and import times: bursts of keys and of certificates; a
/// certificate's issuers (if not yet there) just before it.
pub(super) fn lay_out(plan: &PkiPlan, keys: usize, rng: &mut ChaCha20Rng) -> Vec<(Entry, u32)> {
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
