//! The fixed-bucket distributions of event durations and read sizes that
//! observed handles keep (Prometheus' `le` buckets; memory fixed whatever
//! the number of events).

use super::op::FileOp;

/// Upper bounds (inclusive, nanoseconds) of the event-duration buckets:
/// 1 µs to 1 s, four per decade. Above the last is `+Inf`.
pub(crate) const DURATION_BOUNDS_NS: [u64; 25] = [
    1_000,
    1_780,
    3_160,
    5_620,
    10_000,
    17_800,
    31_600,
    56_200,
    100_000,
    178_000,
    316_000,
    562_000,
    1_000_000,
    1_780_000,
    3_160_000,
    5_620_000,
    10_000_000,
    17_800_000,
    31_600_000,
    56_200_000,
    100_000_000,
    178_000_000,
    316_000_000,
    562_000_000,
    1_000_000_000,
];

/// Upper bounds (inclusive, bytes) of the read-size buckets, after
/// Darshan's access-size bins. Above the last is `+Inf`.
pub(crate) const SIZE_BOUNDS: [u64; 10] =
    [0, 100, 1024, 10_240, 102_400, 1_048_576, 4_194_304, 10_485_760, 104_857_600, 1_073_741_824];

/// Counts per bucket of a fixed-bucket histogram with `S - 1` bounds (the
/// last slot is `+Inf`). Not cumulative: each sample is in one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buckets<const S: usize>(pub [u64; S]);

impl<const S: usize> Default for Buckets<S> {
    fn default() -> Self {
        Self([0; S])
    }
}

impl<const S: usize> Buckets<S> {
    /// Count `value` in the first bucket whose bound is `>=` it (Prometheus'
    /// `le`). A linear scan from the smallest bound: file events land in the
    /// first few buckets, where the scan's branches are predictable.
    #[inline]
    pub(super) fn record(&mut self, bounds: &[u64], value: u64) {
        let i = bounds.iter().position(|b| value <= *b).unwrap_or(bounds.len());
        self.0[i] += 1;
    }

    /// Samples in all buckets.
    pub fn count(&self) -> u64 {
        self.0.iter().sum()
    }

    pub(super) fn merge(&mut self, other: &Self) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    pub(super) fn minus(&self, earlier: &Self) -> Self {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(earlier.0.iter()) {
            *a -= b;
        }
        out
    }
}

/// Slots of a duration histogram (bounds plus `+Inf`).
pub(super) const DURATION_SLOTS: usize = DURATION_BOUNDS_NS.len() + 1;
/// Slots of a read-size histogram (bounds plus `+Inf`).
pub(super) const SIZE_SLOTS: usize = SIZE_BOUNDS.len() + 1;

/// Where every event of an observed handle fell: duration buckets per
/// operation and size buckets of `read(2)` results. Their sums are the
/// matching [`IoStats`](super::IoStats) fields (`time_ns`, `bytes_read`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventHistograms {
    /// Event durations, per operation in [`FileOp::EVERY`] order.
    pub durations: [Buckets<DURATION_SLOTS>; FileOp::COUNT],
    /// Bytes returned by each successful `read(2)`.
    pub read_sizes: Buckets<SIZE_SLOTS>,
}

impl EventHistograms {
    /// Count `n` events of `op` that each took about `ns` (a producer that
    /// bucketed them itself hands over a representative value per bucket).
    pub(crate) fn add_durations(&mut self, op: FileOp, ns: u64, n: u64) {
        let b = &mut self.durations[op.index()];
        let i = DURATION_BOUNDS_NS.iter().position(|x| ns <= *x).unwrap_or(DURATION_BOUNDS_NS.len());
        b.0[i] += n;
    }

    /// Count `n` reads that each returned about `bytes`.
    pub(crate) fn add_read_sizes(&mut self, bytes: u64, n: u64) {
        let i = SIZE_BOUNDS.iter().position(|x| bytes <= *x).unwrap_or(SIZE_BOUNDS.len());
        self.read_sizes.0[i] += n;
    }

    pub(super) fn merge(&mut self, other: &Self) {
        for (a, b) in self.durations.iter_mut().zip(other.durations.iter()) {
            a.merge(b);
        }
        self.read_sizes.merge(&other.read_sizes);
    }

    pub(super) fn minus(&self, earlier: &Self) -> Self {
        let mut out = self.clone();
        for (a, b) in out.durations.iter_mut().zip(earlier.durations.iter()) {
            *a = a.minus(b);
        }
        out.read_sizes = self.read_sizes.minus(&earlier.read_sizes);
        out
    }
}
