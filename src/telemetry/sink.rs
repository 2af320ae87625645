//! Where flushed histogram samples go.
//!
//! A handle buckets its samples locally and flushes them every
//! [`FLUSH_EVERY`](super::FLUSH_EVERY) system calls. Recording a flush still
//! costs one push per sample in the Prometheus exporter (`metrics`'
//! `record_many` repeats `record`, and each push pins an epoch, reads the
//! clock and bumps two atomics): on the scanning thread that was most of
//! the telemetry's overhead. Once the binary calls [`start`] (right after
//! installing the exporter), flushes are queued for a thread of their own,
//! so the scanning thread only buckets.
//!
//! The queue is a mutex-guarded list that the sink thread empties every
//! [`INTERVAL`]: queueing a flush never makes a system call (an earlier
//! channel woke the sink for every flush, and the wake-ups cost the
//! scanning thread more than the bucketing). A full queue — a sink that
//! fell behind — makes the flush record on the calling thread instead of
//! waiting. [`drain`] records everything queued so far before the
//! exposition is rendered. Without [`start`] (unit tests with a local
//! recorder, or no recorder at all) flushes are recorded on the calling
//! thread.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use metrics::Histogram;

/// How often the sink thread empties the queue.
pub const INTERVAL: Duration = Duration::from_millis(10);

/// Flushes queued before a flush is recorded on its own thread: bounds the
/// memory the queue can hold if the sink ever falls behind.
const QUEUE: usize = 4096;

/// `(mean, count)` per non-empty bucket of one histogram.
type Flush = (Histogram, Vec<(f64, u64)>);

struct Sink {
    queue: Mutex<Vec<Flush>>,
    /// Held while a batch taken from the queue is being recorded, so that
    /// [`drain`] can wait for the sink's batch in flight.
    recording: Mutex<()>,
}

static SINK: OnceLock<Sink> = OnceLock::new();

fn record_now(h: &Histogram, buckets: &[(f64, u64)]) {
    for &(mean, count) in buckets {
        h.record_many(mean, usize::try_from(count).unwrap_or(usize::MAX));
    }
}

impl Sink {
    fn new() -> Self {
        Self { queue: Mutex::new(Vec::new()), recording: Mutex::new(()) }
    }

    /// Queue a flush; give it back when the queue is full.
    fn push(&self, flush: Flush) -> Option<Flush> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.len() >= QUEUE {
            return Some(flush);
        }
        queue.push(flush);
        None
    }

    /// Take the queue and record it, holding `recording` throughout.
    fn empty(&self) {
        let _recording = self.recording.lock().unwrap_or_else(PoisonError::into_inner);
        let batch = std::mem::take(&mut *self.queue.lock().unwrap_or_else(PoisonError::into_inner));
        for (h, buckets) in &batch {
            record_now(h, buckets);
        }
    }
}

/// Start the recording thread (once per process; later calls do nothing).
///
/// # Errors
/// The thread cannot be spawned.
pub fn start() -> std::io::Result<()> {
    let mut first = false;
    let sink = SINK.get_or_init(|| {
        first = true;
        Sink::new()
    });
    if !first {
        return Ok(());
    }
    std::thread::Builder::new().name("metrics-sink".into()).spawn(move || loop {
        std::thread::sleep(INTERVAL);
        sink.empty();
    })?;
    Ok(())
}

/// Record one histogram's flushed buckets: queued for the sink thread when
/// it runs (and its queue has room), else right here.
pub(crate) fn record(h: &Histogram, buckets: Vec<(f64, u64)>) {
    if buckets.is_empty() {
        return;
    }
    let flush = match SINK.get() {
        Some(sink) => sink.push((h.clone(), buckets)),
        None => Some((h.clone(), buckets)),
    };
    if let Some((h, buckets)) = flush {
        record_now(&h, &buckets);
    }
}

/// Record every flush queued so far, on this thread, and wait for the
/// batch the sink thread may be recording (no-op without [`start`]).
pub fn drain() {
    if let Some(sink) = SINK.get() {
        sink.empty();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    // A sink of the test's own: the global one's thread would record
    // outside this thread's local recorder.
    #[test]
    fn a_full_queue_gives_the_flush_back_and_empty_records_the_rest() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let sink = Sink::new();
            let h = metrics::histogram!("t_seconds");
            for _ in 0..QUEUE {
                assert!(sink.push((h.clone(), vec![(0.5, 3), (2.0, 1)])).is_none());
            }
            let back = sink.push((h.clone(), vec![(7.0, 1)]));
            assert!(back.is_some_and(|(_, b)| b == [(7.0, 1)]));
            sink.empty();
            assert!(sink.queue.lock().unwrap().is_empty());
        });
        let snap = snapshotter.snapshot().into_vec();
        let Some((_, _, _, DebugValue::Histogram(samples))) = snap.first() else { panic!("{snap:?}") };
        assert_eq!(samples.len(), 4 * QUEUE);
        assert_eq!(samples.iter().filter(|v| v.into_inner() == 2.0).count(), QUEUE);
    }
}
