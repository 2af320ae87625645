//! The process-local table of watched paths. Its index is the file-slot
//! index in the record file, so fd-table values stay meaningful in a forked
//! child that gets its own record file (the child copies this table, which it
//! inherits, into its new file).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use kbx_record::{FILE_SLOTS, PATH_MAX_STORED, SLOT_CLAIMED, SLOT_FREE, SLOT_READY};

/// One local slot.
pub struct LocalSlot {
    /// SLOT_FREE / SLOT_CLAIMED / SLOT_READY.
    pub state: AtomicU64,
    /// Stored length.
    pub len: AtomicU64,
    /// Path bytes (first `len`).
    pub bytes: [AtomicU8; PATH_MAX_STORED],
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: LocalSlot = {
    const Z: AtomicU8 = AtomicU8::new(0);
    LocalSlot { state: AtomicU64::new(SLOT_FREE), len: AtomicU64::new(0), bytes: [Z; PATH_MAX_STORED] }
};

/// The table.
pub static LOCAL: [LocalSlot; FILE_SLOTS] = [EMPTY_SLOT; FILE_SLOTS];

fn equal(s: &LocalSlot, path: &[u8]) -> bool {
    s.len.load(Ordering::Relaxed) as usize == path.len()
        && path.iter().zip(s.bytes.iter()).all(|(b, a)| a.load(Ordering::Relaxed) == *b)
}

/// The slot (1-based) of `path`, claiming a new one if needed; None if full.
/// `on_new` is called with the 0-based index of a newly completed slot.
/// Two threads racing on a new path may claim two slots for it (the decoder
/// reports both; sum by path).
pub fn slot_for(path: &[u8], on_new: impl FnOnce(usize)) -> Option<u16> {
    let path = &path[..path.len().min(PATH_MAX_STORED)];
    for (i, s) in LOCAL.iter().enumerate() {
        match s.state.load(Ordering::Acquire) {
            SLOT_READY if equal(s, path) => return Some(i as u16 + 1),
            SLOT_FREE => {
                if s.state.compare_exchange(SLOT_FREE, SLOT_CLAIMED, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    for (a, b) in s.bytes.iter().zip(path) {
                        a.store(*b, Ordering::Relaxed);
                    }
                    s.len.store(path.len() as u64, Ordering::Relaxed);
                    s.state.store(SLOT_READY, Ordering::Release);
                    on_new(i);
                    return Some(i as u16 + 1);
                }
                // Lost the race: if the winner stored our path, use it.
                if s.state.load(Ordering::Acquire) == SLOT_READY && equal(s, path) {
                    return Some(i as u16 + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Copy local slot `i` (if ready) into `dst` via the given byte/word stores.
pub fn copy_slot(i: usize, mut store_byte: impl FnMut(usize, u8), store_len_then_ready: impl FnOnce(u64)) {
    let Some(s) = LOCAL.get(i) else { return };
    if s.state.load(Ordering::Acquire) != SLOT_READY {
        return;
    }
    let n = (s.len.load(Ordering::Relaxed) as usize).min(PATH_MAX_STORED);
    for (k, a) in s.bytes.iter().take(n).enumerate() {
        store_byte(k, a.load(Ordering::Relaxed));
    }
    store_len_then_ready(n as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_and_find() {
        let mut new = Vec::new();
        let a = slot_for(b"/t/paths-test-a", |i| new.push(i)).unwrap();
        let b = slot_for(b"/t/paths-test-b", |i| new.push(i)).unwrap();
        assert_ne!(a, b);
        assert_eq!(slot_for(b"/t/paths-test-a", |_| panic!("not new")), Some(a));
        assert_eq!(new.len(), 2);
        let long = vec![b'x'; 400];
        let l = slot_for(&long, |_| {}).unwrap();
        assert_eq!(slot_for(&long[..PATH_MAX_STORED], |_| {}), Some(l));
        let mut got = Vec::new();
        copy_slot(a as usize - 1, |_, b| got.push(b), |n| assert_eq!(n, 15));
        assert_eq!(got, b"/t/paths-test-a");
    }
}
