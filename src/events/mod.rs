//! The file-event vocabulary every producer shares, and the seam through
//! which telemetry and the trace writer receive events whatever produced
//! them.
//!
//! Today's producer is [`crate::io`]'s own handles (the system calls
//! kbxscope issues on a keybox). The seam is made for others: the calls of
//! another process recorded from inside it, and SQLite's file accesses
//! through a VFS. A producer speaks in these types and needs no exporter
//! code of its own:
//!
//! * [`FileOp`] names the operation, [`FileEvent`] is one event (operation,
//!   file, offset, bytes, start, duration, [`Origin`]: process and thread);
//! * [`IoStats`] is the one place events are counted and bucketed (every
//!   producer counts with the same calls; `io`'s hot path without
//!   building a [`FileEvent`]);
//! * [`IoObserver`] receives counters as deltas (telemetry implements it,
//!   with the producer's [`Origin`] for its labels);
//! * [`trace`] hands one event with its own timestamps to the trace
//!   writer (target `kbx::event`), which places it on its process's and
//!   thread's track.

mod histogram;
mod observe;
mod op;
mod stats;

pub(crate) use histogram::{DURATION_BOUNDS_NS, SIZE_BOUNDS};

pub use histogram::Buckets;

pub use histogram::EventHistograms;
pub(crate) use observe::Reporter;
#[cfg(test)]
pub(crate) use observe::REPORT_EVERY;
pub use observe::{observer, set_observer, IoObserver};
pub use op::MoreOps;
pub use op::{FileOp, PerOp};
pub use stats::PerBlobType;
pub use stats::{FileStats, IoStats, LockWaits};

use std::time::Duration;

/// Who issued an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id (the kernel's).
    pub tid: u32,
    /// The program's name (the executable's file name).
    pub program: &'a str,
}

/// One file event, whoever produced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileEvent<'a> {
    /// The operation.
    pub op: FileOp,
    /// The file, as the producer names it (a path, or a role such as
    /// `pubring.db-journal`).
    pub file: &'a str,
    /// The read buffer's size, where the producer has one (0 otherwise).
    pub buffer_size: u64,
    /// The file offset the call starts at, when known.
    pub offset: Option<u64>,
    /// For reads, the bytes the call returned.
    pub bytes: Option<u64>,
    /// When the call started, on the producer's monotonic clock
    /// (`CLOCK_MONOTONIC`), from an epoch the producer and the trace
    /// writer share.
    pub start: Duration,
    /// How long the call took.
    pub duration: Duration,
    /// The `errno` of a call that failed.
    pub errno: Option<i32>,
    /// Who made the call.
    pub origin: Origin<'a>,
}

/// Hand one event, with its own timestamps, to the trace writer (when a
/// trace at `event` level is on): a `tracing` event under target
/// `kbx::event` whose fields the writer turns into a complete span on the
/// event's process and thread. `io`'s own handles trace their calls as
/// spans while they happen instead (same target, same field names).
pub fn trace(e: &FileEvent<'_>) {
    tracing::info!(
        target: "kbx::event",
        op = e.op.name(),
        file = e.file,
        buffer_size = e.buffer_size,
        offset = e.offset,
        bytes = e.bytes,
        start_ns = u64::try_from(e.start.as_nanos()).unwrap_or(u64::MAX),
        duration_ns = u64::try_from(e.duration.as_nanos()).unwrap_or(u64::MAX),
        errno = e.errno,
        pid = e.origin.pid,
        tid = e.origin.tid,
        program = e.origin.program,
        "recorded"
    );
}
