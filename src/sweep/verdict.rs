//! Keybox or keyboxd? (`sweep --versus-keyboxd`): each store's fastest row,
//! and which store is faster, by how much. Not serialised: the exports
//! carry both sweeps, and a reader compares them.

use super::result::{SizeResult, Sweep};
use crate::store::StoreKind;

/// The fastest row of each store (by mean wall time) and which is faster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict<'a> {
    /// The keybox's fastest row.
    pub keybox: &'a SizeResult,
    /// The database's fastest row (its buffer is SQLite's page cache).
    pub keyboxd: &'a SizeResult,
    /// The faster store (keyboxd on a tie).
    pub faster: StoreKind,
    /// How many times faster it is: the slower mean over the faster.
    pub ratio: f64,
}

impl Sweep {
    /// The verdict of a sweep with its database's ([`Sweep::versus`]);
    /// `None` without one, or when either has no rows.
    pub fn verdict<'a>(&'a self) -> Option<Verdict<'a>> {
        let fastest = |s: &'a Sweep| s.results.iter().min_by(|a, b| a.wall_s.mean.total_cmp(&b.wall_s.mean));
        let (keybox, keyboxd) = (fastest(self)?, fastest(self.versus.as_deref()?)?);
        let (k, d) = (keybox.wall_s.mean, keyboxd.wall_s.mean);
        let (faster, ratio) =
            if d <= k { (StoreKind::Keyboxd, k / d.max(1e-9)) } else { (StoreKind::Keybox, d / k.max(1e-9)) };
        Some(Verdict { keybox, keyboxd, faster, ratio })
    }
}
