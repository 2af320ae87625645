//! fd → watched-file table: fixed size, lock-free, allocation-free.
//!
//! Descriptors below `DIRECT` index an array of `AtomicU16` directly (one
//! relaxed load tells an unwatched fd: the hot path of every hooked call).
//! Larger descriptors go to a small open-addressing table of packed
//! `AtomicU64` words, `(fd + 1) << 16 | value`, with tombstones. A value is a
//! local file slot + 1; 0 means "not watched".

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::Relaxed};

/// Descriptors below this are stored directly.
pub const DIRECT: usize = 4096;
/// Entries of the overflow table.
pub const OVERFLOW: usize = 256;
const EMPTY: u64 = 0;
const TOMB: u64 = u64::MAX;

/// The table. One static instance serves the process (see [`FDS`]).
pub struct FdTable {
    direct: [AtomicU16; DIRECT],
    over: [AtomicU64; OVERFLOW],
}

/// The process's table. It is inherited by a forked child together with the
/// descriptors it describes; an exec starts with an empty one.
pub static FDS: FdTable = FdTable::new();

fn pack(fd: u32, v: u16) -> u64 {
    ((fd as u64 + 1) << 16) | v as u64
}

fn key_of(w: u64) -> u64 {
    w >> 16
}

impl FdTable {
    /// An empty table.
    #[allow(clippy::declare_interior_mutable_const)]
    pub const fn new() -> FdTable {
        const Z16: AtomicU16 = AtomicU16::new(0);
        const Z64: AtomicU64 = AtomicU64::new(0);
        FdTable { direct: [Z16; DIRECT], over: [Z64; OVERFLOW] }
    }

    fn home(fd: u32) -> usize {
        (fd as usize).wrapping_mul(0x9E37_79B9) % OVERFLOW
    }

    /// The value of `fd` (0: not watched). One load for fds below `DIRECT`.
    #[inline(always)]
    pub fn get(&self, fd: i32) -> u16 {
        if fd < 0 {
            return 0;
        }
        match self.direct.get(fd as usize) {
            Some(a) => a.load(Relaxed),
            None => self.get_over(fd as u32),
        }
    }

    #[cold]
    fn get_over(&self, fd: u32) -> u16 {
        let h = Self::home(fd);
        for k in 0..OVERFLOW {
            let w = self.over[(h + k) % OVERFLOW].load(Relaxed);
            if w == EMPTY {
                return 0;
            }
            if w != TOMB && key_of(w) == fd as u64 + 1 {
                return w as u16;
            }
        }
        0
    }

    /// Set `fd` to `v` (0 clears). Returns false if the overflow table is full.
    pub fn set(&self, fd: i32, v: u16) -> bool {
        if fd < 0 {
            return true;
        }
        if let Some(a) = self.direct.get(fd as usize) {
            a.store(v, Relaxed);
            return true;
        }
        let fd = fd as u32;
        let h = Self::home(fd);
        // Existing entry: replace (or clear) it.
        for k in 0..OVERFLOW {
            let a = &self.over[(h + k) % OVERFLOW];
            let w = a.load(Relaxed);
            if w == EMPTY {
                break;
            }
            if w != TOMB && key_of(w) == fd as u64 + 1 {
                let new = if v == 0 { TOMB } else { pack(fd, v) };
                return a.compare_exchange(w, new, Relaxed, Relaxed).is_ok() || self.set(fd as i32, v);
            }
        }
        if v == 0 {
            return true;
        }
        for k in 0..OVERFLOW {
            let a = &self.over[(h + k) % OVERFLOW];
            let w = a.load(Relaxed);
            if (w == EMPTY || w == TOMB) && a.compare_exchange(w, pack(fd, v), Relaxed, Relaxed).is_ok() {
                return true;
            }
        }
        false
    }

    /// Clear `fd`, returning its previous value.
    pub fn take(&self, fd: i32) -> u16 {
        let v = self.get(fd);
        if v != 0 {
            self.set(fd, 0);
        }
        v
    }

    /// Clear every watched fd in `lo..=hi`, calling `f(fd, value)` for each.
    pub fn clear_range(&self, lo: u32, hi: u32, mut f: impl FnMut(i32, u16)) {
        for (fd, a) in self.direct.iter().enumerate() {
            if (fd as u32) < lo || fd as u32 > hi {
                continue;
            }
            let v = a.swap(0, Relaxed);
            if v != 0 {
                f(fd as i32, v);
            }
        }
        for a in self.over.iter() {
            let w = a.load(Relaxed);
            if w == EMPTY || w == TOMB {
                continue;
            }
            let fd = (key_of(w) - 1) as u32;
            if fd >= lo && fd <= hi && a.compare_exchange(w, TOMB, Relaxed, Relaxed).is_ok() {
                f(fd as i32, w as u16);
            }
        }
    }

    /// Clear everything (used by tests).
    pub fn clear_all(&self) {
        self.clear_range(0, u32::MAX, |_, _| {});
    }
}

impl Default for FdTable {
    fn default() -> Self {
        FdTable::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_and_overflow() {
        let t = Box::new(FdTable::new());
        assert_eq!(t.get(3), 0);
        assert_eq!(t.get(-1), 0);
        assert!(t.set(3, 5));
        assert_eq!(t.get(3), 5);
        assert!(t.set(5000, 7));
        assert!(t.set(5000 + OVERFLOW as i32, 8)); // same home slot
        assert_eq!(t.get(5000), 7);
        assert_eq!(t.get(5000 + OVERFLOW as i32), 8);
        assert_eq!(t.take(5000), 7);
        assert_eq!(t.get(5000), 0);
        assert_eq!(t.get(5000 + OVERFLOW as i32), 8); // found past the tombstone
        assert!(t.set(5000 + OVERFLOW as i32, 9));
        assert_eq!(t.get(5000 + OVERFLOW as i32), 9);
        assert_eq!(t.take(3), 5);
        assert_eq!(t.take(3), 0);
    }

    #[test]
    fn overflow_fills_up() {
        let t = Box::new(FdTable::new());
        for i in 0..OVERFLOW as i32 {
            assert!(t.set(10_000 + i, 1));
        }
        assert!(!t.set(20_000, 1));
        assert_eq!(t.get(20_000), 0);
        assert_eq!(t.take(10_000), 1);
        assert!(t.set(20_000, 2)); // reuses the tombstone
        assert_eq!(t.get(20_000), 2);
    }

    #[test]
    fn range_clear() {
        let t = Box::new(FdTable::new());
        for fd in [0, 3, 4, 100, 4095, 4096, 70_000] {
            t.set(fd, 1);
        }
        let mut seen = Vec::new();
        t.clear_range(3, u32::MAX, |fd, _| seen.push(fd));
        seen.sort();
        assert_eq!(seen, vec![3, 4, 100, 4095, 4096, 70_000]);
        assert_eq!(t.get(0), 1);
        assert_eq!(t.get(100), 0);
        assert_eq!(t.get(70_000), 0);
        t.clear_all();
        assert_eq!(t.get(0), 0);
    }

    #[test]
    fn concurrent_sets() {
        let t: &'static FdTable = Box::leak(Box::new(FdTable::new()));
        let hs: Vec<_> = (0..4)
            .map(|k| {
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let fd = 5000 + k * 50 + i;
                        assert!(t.set(fd, (k + 1) as u16));
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        for k in 0..4 {
            for i in 0..50 {
                assert_eq!(t.get(5000 + k * 50 + i), (k + 1) as u16);
            }
        }
    }
}
