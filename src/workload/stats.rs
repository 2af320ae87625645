//! `stats`: count blobs like `kbxutil --stats`.

use crate::io::{Opener, RawRead};

use super::keyboxd::DbStats;
use super::scan::{Item, ScanError, Scanner};
use crate::io::BufferedReader;
use crate::kbx::stats::KbxStats;
use crate::store::{Store, StoreError};

/// The counters of a pass, and the error that ended it early, if any.
#[derive(Debug)]
pub struct StatsOutcome {
    /// Everything counted up to the end (or up to the error).
    pub stats: KbxStats,
    /// The framing error that stopped the pass.
    pub fatal: Option<ScanError>,
}

/// What `stats` counts: a keybox's blobs, or what a database's tables hold.
#[derive(Debug)]
pub enum StoreStats {
    /// A keybox, counted as `kbxutil --stats` counts it.
    Keybox(StatsOutcome),
    /// A database.
    Keyboxd(DbStats),
}

/// Count what `store` holds: a keybox read whole, blob by blob; a
/// database's tables (see [`DbStats`]).
///
/// # Errors
/// The store cannot be read (a keybox's damage is in the outcome).
pub fn run(store: &Store) -> Result<StoreStats, StoreError> {
    Ok(match store {
        Store::Keybox { opener, .. } => StoreStats::Keybox(pass(&mut *opener.open()?)),
        Store::Keyboxd { db, .. } => StoreStats::Keyboxd(super::keyboxd::stats(db)?),
    })
}

/// Read a whole keybox from one reader and count its blobs.
pub fn pass<F: RawRead>(reader: &mut BufferedReader<F>) -> StatsOutcome {
    let mut stats = KbxStats::default();
    let mut scan = Scanner::new(reader);
    let error = loop {
        match scan.next_item() {
            Ok(Some(Item::Blob { deleted_before, .. })) => {
                stats.record_deleted_run(deleted_before);
                stats.record_blob(scan.image());
            }
            Ok(Some(Item::TooLarge { deleted_before, .. })) => {
                stats.record_uncounted_deleted(deleted_before);
                stats.record_skipped_long();
            }
            Ok(None) => {
                stats.record_uncounted_deleted(scan.trailing_deleted());
                break None;
            }
            Err(e) => break Some(e),
        }
    };
    StatsOutcome { stats, fatal: error }
}
