//! Where flushed histogram samples go.
//!
//! A handle buckets its samples locally and flushes them every
//! [`FLUSH_EVERY`](super::FLUSH_EVERY) system calls. Recording a flush still
//! costs one push per sample in the Prometheus exporter (`metrics`'
//! `record_many` repeats `record`, and each push pins an epoch and bumps
//! two atomics): on the scanning thread that was most of the telemetry's
//! overhead. Once the binary calls [`start`] (right after installing the
//! exporter), flushes go over a bounded channel to a thread of their own,
//! so the scanning thread only buckets; [`drain`] waits until everything
//! sent so far is recorded (before the exposition is rendered). Without
//! [`start`] — unit tests with a local recorder, or no recorder at all —
//! flushes are recorded on the calling thread.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::OnceLock;

use metrics::Histogram;

/// Flushes in flight before a sender waits: bounds the memory the sink can
/// hold if it ever falls behind.
const QUEUE: usize = 256;

enum Message {
    /// `(mean, count)` per non-empty bucket of one histogram.
    Samples(Histogram, Vec<(f64, u64)>),
    /// Answer once everything before it is recorded.
    Barrier(SyncSender<()>),
}

static SINK: OnceLock<SyncSender<Message>> = OnceLock::new();

fn record_now(h: &Histogram, buckets: &[(f64, u64)]) {
    for &(mean, count) in buckets {
        h.record_many(mean, usize::try_from(count).unwrap_or(usize::MAX));
    }
}

/// Start the recording thread (once per process; later calls do nothing).
///
/// # Errors
/// The thread cannot be spawned.
pub fn start() -> std::io::Result<()> {
    if SINK.get().is_some() {
        return Ok(());
    }
    let (tx, rx) = sync_channel::<Message>(QUEUE);
    std::thread::Builder::new().name("metrics-sink".into()).spawn(move || {
        for message in rx {
            match message {
                Message::Samples(h, buckets) => record_now(&h, &buckets),
                Message::Barrier(ack) => {
                    let _ = ack.send(());
                }
            }
        }
    })?;
    let _ = SINK.set(tx);
    Ok(())
}

/// Record one histogram's flushed buckets: on the sink thread when it runs,
/// else right here.
pub(crate) fn record(h: &Histogram, buckets: Vec<(f64, u64)>) {
    if buckets.is_empty() {
        return;
    }
    match SINK.get() {
        Some(tx) => {
            if let Err(std::sync::mpsc::SendError(Message::Samples(h, buckets))) =
                tx.send(Message::Samples(h.clone(), buckets))
            {
                record_now(&h, &buckets);
            }
        }
        None => record_now(h, &buckets),
    }
}

/// Wait until every flush sent so far has been recorded (no-op without
/// [`start`]).
pub fn drain() {
    if let Some(tx) = SINK.get() {
        let (ack, done) = sync_channel(1);
        if tx.send(Message::Barrier(ack)).is_ok() {
            let _ = done.recv();
        }
    }
}
