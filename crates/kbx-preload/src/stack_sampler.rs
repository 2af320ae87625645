//! The stack sampler (`KBXSCOPE_RECORD_STACKS=N`, off by default): every Nth
//! watched call of a process takes its call stack with glibc's
//! `backtrace(3)` and adds the call's weights to that stack's entry in the
//! record's stack region (layout in [`kbx_record::stacks`]).
//!
//! What it relies on, and what it risks (which is why it is opt-in):
//! * `backtrace` unwinds with libgcc's unwinder, which glibc loads with
//!   `dlopen` at its first use; that first call (which allocates) is made
//!   at load, from the constructor, as glibc's manual advises, never in a
//!   hook. Afterwards it does not allocate.
//! * The unwinder walks the loaded objects with `dl_iterate_phdr`, which
//!   takes the dynamic loader's lock. A host that makes a watched call from
//!   a signal handler that interrupted the loader, or in a child forked
//!   while another thread held that lock, could block there. GnuPG does
//!   neither; the default (no stacks) takes no lock at all.
//! * The table has a fixed size ([`STACK_SLOTS`]); a new stack that finds no
//!   free entry within [`STACK_PROBES`] is counted lost, so memory stays
//!   bounded whatever the number of calls.
//! * The memory map is copied from `/proc/self/maps` (raw system calls)
//!   when the record file is created; objects `dlopen`ed later are not in
//!   it, and their frames stay unnamed.

use std::sync::atomic::{AtomicU64, Ordering};

use libc::{c_int, c_void};

use kbx_record::stacks::{entry, entry_offset, stack_key, STACK_DEPTH, STACK_PROBES, STACK_SLOTS};
use kbx_record::Op;

extern "C" {
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
}

/// Watched calls seen by this process image (sampling counter).
static SEEN: AtomicU64 = AtomicU64::new(0);

/// Load the unwinder now (at load time, outside every hook).
pub fn warm_up() {
    let mut frames = [std::ptr::null_mut::<c_void>(); 4];
    // SAFETY: frames is writable for 4 pointers.
    unsafe { backtrace(frames.as_mut_ptr(), frames.len() as c_int) };
}

/// Whether this call is one to sample, given the interval (0 = off).
#[inline(always)]
pub fn due(every: u64) -> bool {
    every != 0 && SEEN.fetch_add(1, Ordering::Relaxed).is_multiple_of(every)
}

/// Take the caller's stack and add one call of `op` with `bytes` and `ns`
/// to its entry. `word(off)` gives the mapping's word at a byte offset;
/// `event_cap` places the region.
pub fn sample(word: impl Fn(usize) -> &'static AtomicU64, event_cap: usize, op: Op, bytes: u64, ns: u64) {
    let mut raw = [std::ptr::null_mut::<c_void>(); STACK_DEPTH];
    // SAFETY: raw is writable for STACK_DEPTH pointers; backtrace writes at
    // most that many and returns how many it wrote.
    let n = unsafe { backtrace(raw.as_mut_ptr(), STACK_DEPTH as c_int) };
    let n = (n.max(0) as usize).min(STACK_DEPTH);
    let mut frames = [0u64; STACK_DEPTH];
    for (f, p) in frames.iter_mut().zip(&raw[..n]) {
        *f = *p as u64;
    }
    let frames = &frames[..n];
    word(kbx_record::hdr::STACK_SAMPLES).fetch_add(1, Ordering::Relaxed);
    let key = stack_key(op.index(), frames);
    for probe in 0..STACK_PROBES {
        let i = (key as usize).wrapping_add(probe) % STACK_SLOTS;
        let off = entry_offset(event_cap, i);
        let w = |k: usize| word(off + k * 8);
        let mine = match w(entry::KEY).compare_exchange(0, key, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => {
                for (k, f) in frames.iter().enumerate() {
                    w(entry::FRAMES + k).store(*f, Ordering::Relaxed);
                }
                w(entry::OP_DEPTH).store(op.index() as u64 | (n as u64) << 8, Ordering::Relaxed);
                w(entry::READY).store(1, Ordering::Release);
                true
            }
            Err(found) => found == key,
        };
        if mine {
            w(entry::CALLS).fetch_add(1, Ordering::Relaxed);
            w(entry::BYTES).fetch_add(bytes, Ordering::Relaxed);
            w(entry::NS).fetch_add(ns, Ordering::Relaxed);
            return;
        }
    }
    word(kbx_record::hdr::STACK_LOST).fetch_add(1, Ordering::Relaxed);
}
