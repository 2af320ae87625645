//! `stats`: count blobs like `kbxutil --stats`.

use crate::io::RawRead;

use super::scan::{Item, ScanError, Scanner};
use crate::io::BufferedReader;
use crate::kbx::stats::KbxStats;

/// The counters of a pass, and the error that ended it early, if any.
#[derive(Debug)]
pub struct StatsOutcome {
    /// Everything counted up to the end (or up to the error).
    pub stats: KbxStats,
    /// The framing error that stopped the pass.
    pub fatal: Option<ScanError>,
}

/// Read the whole keybox and count its blobs.
pub fn run<F: RawRead>(reader: &mut BufferedReader<F>) -> StatsOutcome {
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
