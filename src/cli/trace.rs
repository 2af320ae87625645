//! `--trace-out`: a Chrome trace (tracing-chrome) for Perfetto or chrome://tracing.
//!
//! The library emits spans under four targets: `kbx::command` (the
//! command), `kbx::lookup` (passes over the file, issuer lookups, the
//! fingerprint searches after a chain), `kbx::blob` (each blob read) and
//! `kbx::event` (each system call, with `op`, `bytes`, `buffer_size` and
//! `offset`). `--trace-level` chooses how deep the trace goes;
//! `--trace-max-events` caps the blob and event spans, and an instant event
//! in the trace says where it was cut.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Result;
use clap::ValueEnum;
use tracing::subscriber::Interest;
use tracing_chrome::{ChromeLayerBuilder, FlushGuard};
use tracing_subscriber::filter::DynFilterFn;
use tracing_subscriber::prelude::*;

use super::output::TempOutput;

/// How deep the trace goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum TraceLevel {
    /// The command only.
    Command,
    /// Passes and issuer lookups.
    Lookup,
    /// Each blob read.
    Blob,
    /// Each system call.
    Event,
}

impl TraceLevel {
    fn admits(self, target: &str) -> bool {
        let depth = match target {
            "kbx::command" => TraceLevel::Command,
            "kbx::lookup" => TraceLevel::Lookup,
            "kbx::blob" => TraceLevel::Blob,
            "kbx::event" => TraceLevel::Event,
            _ => return target == "kbx::trace",
        };
        depth <= self
    }
}

/// Default `--trace-max-events`: keeps a trace of the built-in keybox's
/// validation under 256 MB.
pub const DEFAULT_MAX_EVENTS: u64 = 600_000;

/// A running trace; [`TraceGuard::finish`] completes the JSON and moves the
/// file into place.
pub struct TraceGuard {
    guard: FlushGuard,
    output: TempOutput,
    cut: Arc<AtomicU64>,
    max: u64,
}

/// Start tracing into `path`.
///
/// # Errors
/// The output file cannot be created, or a subscriber is already set.
pub fn install(path: &std::path::Path, level: TraceLevel, max: u64) -> Result<TraceGuard> {
    let (file, output) = TempOutput::create(path)?;
    let (chrome, guard) = ChromeLayerBuilder::new().writer(file).include_args(true).include_locations(false).build();
    let counted = Arc::new(AtomicU64::new(0));
    let seen = counted.clone();
    let filter = DynFilterFn::new(move |meta, _cx| {
        if !level.admits(meta.target()) {
            return false;
        }
        if meta.is_span() && matches!(meta.target(), "kbx::blob" | "kbx::event") {
            return seen.fetch_add(1, Ordering::Relaxed) < max;
        }
        true
    })
    // Blob and event spans are counted one by one: ask for them every time
    // instead of caching the callsite's first answer.
    .with_callsite_filter(move |meta| {
        if !level.admits(meta.target()) {
            Interest::never()
        } else if matches!(meta.target(), "kbx::blob" | "kbx::event") {
            Interest::sometimes()
        } else {
            Interest::always()
        }
    });
    tracing_subscriber::registry().with(chrome.with_filter(filter)).try_init()?;
    Ok(TraceGuard { guard, output, cut: counted, max })
}

impl TraceGuard {
    /// Note a cut if there was one, flush the trace and move it into place.
    ///
    /// # Errors
    /// The file cannot be moved into place.
    pub fn finish(self) -> Result<()> {
        let seen = self.cut.load(Ordering::Relaxed);
        if seen > self.max {
            tracing::info!(target: "kbx::trace", spans_dropped = seen - self.max, "trace cut: --trace-max-events {} reached", self.max);
        }
        drop(self.guard);
        self.output.commit()?;
        Ok(())
    }
}
