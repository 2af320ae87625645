//! Who else sees the counters: an [`IoObserver`] (telemetry, when the
//! binary turns metrics on) receives each handle's counters as deltas.
//!
//! The I/O layer counts every event once, in the handle's [`IoStats`].
//! An observed handle also buckets each event ([`IoStats::histograms`])
//! and hands what it counted since its last report to the observer every
//! [`REPORT_EVERY`] events and once more when it closes, so a scraper sees
//! a long scan progress and nothing is lost at a close. Without an
//! observer the hot path pays one branch per event. The observer knows
//! `io`; `io` knows only this trait.

use std::sync::{Arc, OnceLock};

use super::stats::IoStats;

/// Receives counter deltas from handles (any buffer size, any thread).
pub trait IoObserver: Send + Sync {
    /// What one handle counted since its previous report: events, times,
    /// bytes, logical reads, blobs and, always present here, histograms.
    fn observe(&self, delta: &IoStats);

    /// What another process (`origin`: a recorded program) did on its
    /// files: counted apart from kbxscope's own handles, labelled with the
    /// program's name. Ignored unless the observer keeps such counts.
    fn observe_recorded(&self, origin: &super::Origin<'_>, delta: &IoStats) {
        let _ = (origin, delta);
    }
}

/// Events a handle counts between two reports.
pub(crate) const REPORT_EVERY: u32 = 1024;

static OBSERVER: OnceLock<Arc<dyn IoObserver>> = OnceLock::new();

/// Observe every handle of every `io::IoTally` made from now on
/// (once per process; a second observer is refused and returned).
///
/// # Errors
/// An observer was already set: the given one is handed back.
pub fn set_observer(observer: Arc<dyn IoObserver>) -> Result<(), Arc<dyn IoObserver>> {
    OBSERVER.set(observer)
}

/// The process-wide observer, if one was set.
pub fn observer() -> Option<Arc<dyn IoObserver>> {
    OBSERVER.get().cloned()
}

/// A handle's link to its observer: what it reported so far.
pub(crate) struct Reporter {
    observer: Arc<dyn IoObserver>,
    reported: IoStats,
    unreported: u32,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter").field("unreported", &self.unreported).finish_non_exhaustive()
    }
}

impl Reporter {
    /// A reporter for a new handle of `buffer_size` bytes (nothing reported yet).
    pub(crate) fn new(observer: Arc<dyn IoObserver>, buffer_size: u64) -> Self {
        Self { observer, reported: IoStats::with_histograms(buffer_size), unreported: 0 }
    }

    /// One more event counted in `stats`; report when enough piled up.
    #[inline]
    pub(crate) fn tick(&mut self, stats: &IoStats) {
        self.unreported += 1;
        if self.unreported >= REPORT_EVERY {
            self.report(stats);
        }
    }

    /// Hand everything counted since the last report to the observer.
    pub(crate) fn report(&mut self, stats: &IoStats) {
        let delta = stats.since(&self.reported);
        self.observer.observe(&delta);
        self.reported = stats.clone();
        self.unreported = 0;
    }
}
