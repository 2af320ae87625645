//! One file event: a system call, timed with `quanta`'s clock (the CPU's
//! time-stamp counter scaled to nanoseconds, calibrated once against the
//! monotonic clock; the monotonic clock itself where there is no usable
//! counter), counted in the handle's [`IoStats`] and, when a trace at
//! `event` level is on, wrapped in a span. Every system call on a keybox
//! goes through [`timed`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use crate::events::{FileOp, IoStats};

/// The one clock every event is timed with, made (and calibrated) once.
static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();

/// Whether events are timed (see [`time_events`]).
static TIMING: AtomicBool = AtomicBool::new(true);

/// Time every file event from now on (`true`, the default) or only count
/// them (`false`: their time is recorded as zero).
///
/// Two counter reads per system call are a quarter of kbxscope's user
/// time when it replays gpgsm's 20 M reads of 8 KiB; a command whose
/// output shows no time (no `--io-summary`, no metrics, no sweep, no
/// trace) has the CLI turn them off. The counts are the same either way.
pub fn time_events(on: bool) {
    TIMING.store(on, Ordering::Relaxed);
}

/// Whether file events are timed now.
#[inline]
pub(crate) fn events_timed() -> bool {
    TIMING.load(Ordering::Relaxed)
}

/// Times one system call: two raw counter reads around it, scaled to
/// nanoseconds once, after it. (`quanta::Instant::now` would look up a
/// thread-local clock override and scale at both ends: on gpgsm's 4.8 M
/// reads that was a sixth of kbxscope's user time.) `None` while events
/// are not timed ([`time_events`]).
pub(crate) struct Stopwatch {
    clock: &'static quanta::Clock,
    start: u64,
}

impl Stopwatch {
    /// Start timing now, if events are timed.
    #[inline]
    pub(crate) fn start() -> Option<Self> {
        if !events_timed() {
            return None;
        }
        let clock = CLOCK.get_or_init(quanta::Clock::new);
        Some(Self { clock, start: clock.raw() })
    }

    /// The time since [`start`](Self::start).
    #[inline]
    pub(crate) fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.clock.delta_as_nanos(self.start, self.clock.raw()))
    }
}

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
        FileOp::Rename => span!("rename"),
        FileOp::Unlink => span!("unlink"),
        FileOp::Link => span!("link"),
    }
}

/// Issue one system call `call` as operation `op`: time it, count it in
/// `stats` (with the bytes it returned, for reads: `bytes` of its result)
/// and trace it if `trace`. Returns the call's result.
#[inline(always)]
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
    let watch = Stopwatch::start();
    let r = call();
    match watch {
        Some(w) => stats.record(op, w.elapsed()),
        None => stats.add_counts(op, 1, 0),
    }
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
