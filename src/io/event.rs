//! One file event: a system call, timed with `quanta`'s clock (the CPU's
//! time-stamp counter scaled to nanoseconds, calibrated once against the
//! monotonic clock; the monotonic clock itself where there is no usable
//! counter), counted in the handle's [`IoStats`] and, when a trace at
//! `event` level is on, wrapped in a span. Every system call on a keybox
//! goes through [`timed`].

use crate::events::{FileOp, IoStats};

/// Whether event spans are wanted now: asked once per handle, so a handle
/// made while no trace records events does no span work per system call.
pub(crate) fn tracing_events() -> bool {
    tracing::enabled!(target: "kbx::event", tracing::Level::INFO)
}

/// A trace span for one system call (target `kbx::event`): `op`, the
/// buffer size, the file `offset` it starts at (when known), for reads the
/// `bytes` it returned, the `error` of a call that failed, and the `file`
/// where a producer touches several (SQLite: recorded after the call).
pub(super) fn event_span(op: FileOp, buffer_size: u64, offset: Option<u64>) -> tracing::Span {
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!(target: "kbx::event", $name, op = %$name, buffer_size, offset,
                                bytes = tracing::field::Empty, error = tracing::field::Empty, file = tracing::field::Empty)
        };
    }
    match op {
        FileOp::Open => span!("open"),
        FileOp::Read => span!("read"),
        FileOp::Seek => span!("seek"),
        FileOp::Close => span!("close"),
        FileOp::Stat => span!("stat"),
        // Only other producers issue these (a recorded program, SQLite).
        FileOp::Write => span!("write"),
        FileOp::Mmap => span!("mmap"),
        FileOp::Dup => span!("dup"),
        FileOp::Access => span!("access"),
        FileOp::Truncate => span!("truncate"),
        FileOp::Sync => span!("sync"),
        FileOp::Lock => span!("lock"),
    }
}

/// Issue one system call `call` as operation `op`: time it, count it in
/// `stats` (with the bytes it returned, for reads: `bytes` of its result)
/// and trace it if `trace`. Returns the call's result.
#[inline]
pub(crate) fn timed<T, E: std::fmt::Display>(
    stats: &mut IoStats,
    trace: bool,
    op: FileOp,
    offset: Option<u64>,
    call: impl FnOnce() -> Result<T, E>,
    bytes: impl Fn(&T) -> Option<usize>,
) -> Result<T, E> {
    let span = trace.then(|| event_span(op, stats.buffer_size, offset));
    let entered = span.as_ref().map(tracing::Span::enter);
    let start = quanta::Instant::now();
    let r = call();
    let took = start.elapsed();
    stats.record(op, took);
    match &r {
        Ok(t) => {
            if let Some(n) = bytes(t) {
                stats.record_read(n);
                if let Some(span) = &span {
                    span.record("bytes", n);
                }
            }
        }
        Err(e) => {
            if let Some(span) = &span {
                span.record("error", tracing::field::display(e));
            }
        }
    }
    drop(entered);
    r
}
