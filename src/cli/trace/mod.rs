//! `--trace-out`: a Chrome trace (tracing-chrome) for Perfetto,
//! chrome://tracing or speedscope.
//!
//! The library emits spans under five targets: `kbx::command` (the
//! command, the first-use generation of the built-in keybox, a `failed`
//! marker with the error), `kbx::sweep` (each buffer size and each run of a
//! sweep), `kbx::lookup` (passes over the file, issuer and signer lookups,
//! the fingerprint searches after a chain), `kbx::blob` (each blob read)
//! and `kbx::event` (each system call, with `op`, `buffer_size`, `offset`,
//! the `bytes` a read returned, and the `error` of a failed call).
//! `--trace-level` chooses how deep the trace goes.
//!
//! `kbxscope record` hands the calls it recorded in other processes to
//! [`kbxscope::events::trace`] after the fact: `recorded` events under
//! `kbx::event`, which the rewriter places as complete spans at their own
//! time, on a track per recorded process (named for its program) and
//! thread.
//!
//! Size: `--trace-max-events` caps the spans below the command and sweep
//! levels ([`DEFAULT_MAX_EVENTS`]); the first span refused marks the cut
//! on a track of its own ("kbxscope notes"), from that moment to the end,
//! with the number of spans left out. Span names are fixed (`read`,
//! `blob`, `find_issuer`, …) and values go in the arguments, so viewers
//! can aggregate by span type.
//!
//! The file is written through [`rewrite::Rewriter`] (numbers as numbers,
//! process name, the notes track) into a temporary file moved into place
//! at the end. Ctrl-C or SIGTERM finish it too: the spans left open are
//! closed where the signal came and the interruption is marked.

mod rewrite;

use std::io::BufWriter;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::Result;
use clap::ValueEnum;
use tracing::subscriber::Interest;
use tracing_chrome::{ChromeLayerBuilder, FlushGuard};
use tracing_subscriber::filter::DynFilterFn;
use tracing_subscriber::prelude::*;

use super::interrupt;
use super::output::TempOutput;
use rewrite::{Notes, Rewriter};

/// How deep the trace goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum TraceLevel {
    /// The command only (and a sweep's sizes and runs).
    Command,
    /// Passes and lookups.
    Lookup,
    /// Each blob read.
    Blob,
    /// Each system call.
    Event,
}

impl TraceLevel {
    /// How deep `target` is; `None` for targets that are not ours.
    fn of(target: &str) -> Option<TraceLevel> {
        Some(match target {
            "kbx::command" | "kbx::sweep" => TraceLevel::Command,
            "kbx::lookup" => TraceLevel::Lookup,
            "kbx::blob" => TraceLevel::Blob,
            "kbx::event" => TraceLevel::Event,
            _ => return None,
        })
    }

    fn admits(self, target: &str) -> bool {
        TraceLevel::of(target).is_some_and(|depth| depth <= self)
    }
}

/// Default `--trace-max-events`: spans below the command level. About
/// 200 bytes a span, so a trace stays near 10 MB, which speedscope opens
/// in seconds.
pub const DEFAULT_MAX_EVENTS: u64 = 50_000;

/// A running trace.
struct Running {
    guard: FlushGuard,
    output: TempOutput,
    notes: Arc<Notes>,
    seen: Arc<AtomicU64>,
}

/// The running trace, also reachable from the signal watcher.
static RUNNING: Mutex<Option<Running>> = Mutex::new(None);

fn take_running() -> Option<Running> {
    RUNNING.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// A trace being written; [`TraceGuard::finish`] completes it.
#[derive(Debug)]
pub struct TraceGuard(());

/// Start tracing `process` into `path`.
///
/// # Errors
/// The output file cannot be created, or a subscriber is already set.
pub fn install(path: &std::path::Path, process: &str, level: TraceLevel, max: u64) -> Result<TraceGuard> {
    let (file, output) = TempOutput::create(path)?;
    let notes = Arc::new(Notes::new(format!("kbxscope {process}"), max));
    let writer = Rewriter::new(BufWriter::new(file), notes.clone());
    let (chrome, guard) = ChromeLayerBuilder::new().writer(writer).include_args(true).include_locations(false).build();
    notes.clock_started();
    let seen = Arc::new(AtomicU64::new(0));
    let (counter, cut) = (seen.clone(), notes.clone());
    let capped = move |target: &str| TraceLevel::of(target).is_some_and(|d| d > TraceLevel::Command);
    let filter = DynFilterFn::new(move |meta, _cx| {
        if !level.admits(meta.target()) {
            return false;
        }
        // Spans, and the events `record` hands over (each one call).
        let counts = meta.is_span() || meta.is_event();
        if counts && capped(meta.target()) && counter.fetch_add(1, Ordering::Relaxed) >= max {
            cut.cut_at.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert_with(Instant::now);
            return false;
        }
        true
    })
    // Capped spans are counted one by one: ask for them every time instead
    // of caching the callsite's first answer.
    .with_callsite_filter(move |meta| {
        if !level.admits(meta.target()) {
            Interest::never()
        } else if capped(meta.target()) {
            Interest::sometimes()
        } else {
            Interest::always()
        }
    });
    tracing_subscriber::registry().with(chrome.with_filter(filter)).try_init()?;
    *RUNNING.lock().unwrap_or_else(PoisonError::into_inner) = Some(Running { guard, output, notes, seen });
    interrupt::on_interrupt(Box::new(|signal| {
        if let Some(running) = take_running() {
            let _ = running.finish(Some(signal));
        }
    }));
    Ok(TraceGuard(()))
}

impl Running {
    fn finish(self, interrupted: Option<&'static str>) -> Result<()> {
        let seen = self.seen.load(Ordering::Relaxed);
        let max = self.notes.max_spans;
        *self.notes.dropped.lock().unwrap_or_else(PoisonError::into_inner) = seen.saturating_sub(max);
        *self.notes.interrupted.lock().unwrap_or_else(PoisonError::into_inner) = interrupted;
        // Dropping the guard ends tracing-chrome's writer thread, which
        // writes the closing bracket (and the rewriter its notes).
        drop(self.guard);
        self.output.commit()?;
        Ok(())
    }
}

impl TraceGuard {
    /// Flush the trace and move it into place.
    ///
    /// # Errors
    /// The file cannot be moved into place.
    pub fn finish(self) -> Result<()> {
        take_running().map_or(Ok(()), |running| running.finish(None))
    }
}
