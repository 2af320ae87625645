//! The optional stack region (`KBXSCOPE_RECORD_STACKS=N`): the call stacks
//! of every Nth watched call, aggregated per (stack, operation) with their
//! calls, bytes and time, and the process's memory map at record creation,
//! so that a collector can say which module and function each return
//! address is in.
//!
//! The region follows the events: `MAPS_MAX` bytes of `/proc/self/maps`
//! text, then `STACK_SLOTS` entries of `STACK_ENTRY_WORDS` words. An entry
//! is claimed by a compare-and-swap of its key (a 64-bit hash of the
//! operation and the frames, never 0), then its frames are written and
//! `ready` is stored with release order; weights are atomic adds, also by
//! threads that find the key claimed but not yet ready.

use crate::{hdr, total_size, word, Op};

/// Bytes reserved for the `/proc/self/maps` text.
pub const MAPS_MAX: usize = 64 * 1024;
/// Entries in the stack table (open addressing).
pub const STACK_SLOTS: usize = 4096;
/// Return addresses kept per stack, innermost first (the interposer's own
/// frames included: the collector drops them).
pub const STACK_DEPTH: usize = 40;
/// Words in one entry: key, ready, op | depth << 8, calls, bytes, ns, two
/// reserved, then the frames.
pub const STACK_ENTRY_WORDS: usize = 8 + STACK_DEPTH;
/// Size of one entry in bytes.
pub const STACK_ENTRY_SIZE: usize = STACK_ENTRY_WORDS * 8;
/// Size of the whole region.
pub const STACKS_SIZE: usize = MAPS_MAX + STACK_SLOTS * STACK_ENTRY_SIZE;
/// How far a new stack probes for a free entry before it is counted lost.
pub const STACK_PROBES: usize = 64;

/// Entry word indices.
pub mod entry {
    /// Hash of op and frames, `| 1` (0 = free).
    pub const KEY: usize = 0;
    /// 1 once op, depth and frames are written (release).
    pub const READY: usize = 1;
    /// Operation column | depth << 8.
    pub const OP_DEPTH: usize = 2;
    /// Sampled calls with this stack.
    pub const CALLS: usize = 3;
    /// Their bytes.
    pub const BYTES: usize = 4;
    /// Their ns (0 for inferred calls).
    pub const NS: usize = 5;
    /// Word index of frame 0 (innermost).
    pub const FRAMES: usize = 8;
}

/// Byte offset of the stack region for an event capacity.
#[inline]
pub const fn region_offset(event_cap: usize) -> usize {
    total_size(event_cap)
}

/// Byte offset of stack entry `i`.
#[inline]
pub const fn entry_offset(event_cap: usize, i: usize) -> usize {
    region_offset(event_cap) + MAPS_MAX + i * STACK_ENTRY_SIZE
}

/// The key of a stack: FNV-1a over the operation and the frames, never 0.
#[inline]
pub fn stack_key(op: usize, frames: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in std::iter::once(op as u64).chain(frames.iter().copied()) {
        for b in v.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h | 1
}

/// One sampled stack with its weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    /// The operation of the calls.
    pub op: Op,
    /// Return addresses, innermost first.
    pub frames: Vec<u64>,
    /// Sampled calls.
    pub calls: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Their measured ns.
    pub ns: u64,
}

/// The stack region of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stacks {
    /// Every how many watched calls one was sampled.
    pub every: u64,
    /// Samples taken.
    pub samples: u64,
    /// Samples that found no free entry (their stack is not in `stacks`).
    pub lost: u64,
    /// `/proc/self/maps` at record creation.
    pub maps: Vec<u8>,
    /// The stacks, in table order.
    pub stacks: Vec<Stack>,
}

/// Decode the stack region, if the record has one.
pub(crate) fn decode(b: &[u8], event_cap: usize) -> Option<Stacks> {
    if word(b, hdr::STACK_SLOTS) != STACK_SLOTS as u64 || b.len() < region_offset(event_cap) + STACKS_SIZE {
        return None;
    }
    let base = region_offset(event_cap);
    let maps_len = (word(b, hdr::MAPS_LEN) as usize).min(MAPS_MAX);
    let mut stacks = Vec::new();
    for i in 0..STACK_SLOTS {
        let off = entry_offset(event_cap, i);
        let w = |k: usize| word(b, off + k * 8);
        if w(entry::KEY) == 0 || w(entry::READY) != 1 {
            continue;
        }
        let Some(op) = Op::from_index((w(entry::OP_DEPTH) & 0xff) as usize) else { continue };
        let depth = ((w(entry::OP_DEPTH) >> 8) as usize).min(STACK_DEPTH);
        stacks.push(Stack {
            op,
            frames: (0..depth).map(|k| w(entry::FRAMES + k)).collect(),
            calls: w(entry::CALLS),
            bytes: w(entry::BYTES),
            ns: w(entry::NS),
        });
    }
    Some(Stacks {
        every: word(b, hdr::STACK_EVERY),
        samples: word(b, hdr::STACK_SAMPLES),
        lost: word(b, hdr::STACK_LOST),
        maps: b[base..base + maps_len].to_vec(),
        stacks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode as decode_record, Encoder};

    #[test]
    fn region_round_trip() {
        let cap = 2;
        let mut e = Encoder::new(5, 1, b"gpg", cap);
        e.bytes.resize(total_size(cap) + STACKS_SIZE, 0);
        e.put(hdr::STACK_SLOTS, STACK_SLOTS as u64);
        e.put(hdr::STACK_EVERY, 3);
        e.put(hdr::STACK_SAMPLES, 2);
        let maps = b"55d0-55e0 r-xp 00001000 08:01 12 /usr/bin/gpg\n";
        e.bytes[region_offset(cap)..region_offset(cap) + maps.len()].copy_from_slice(maps);
        e.put(hdr::MAPS_LEN, maps.len() as u64);
        let frames = [0x55d1u64, 0x55d2];
        let off = entry_offset(cap, 7);
        e.put(off, stack_key(Op::Read.index(), &frames));
        e.put(off + entry::OP_DEPTH * 8, Op::Read.index() as u64 | 2 << 8);
        e.put(off + entry::CALLS * 8, 2);
        e.put(off + entry::BYTES * 8, 16384);
        for (k, f) in frames.iter().enumerate() {
            e.put(off + (entry::FRAMES + k) * 8, *f);
        }
        e.put(off + entry::READY * 8, 1);
        // A claimed entry that is not ready yet is left out.
        e.put(entry_offset(cap, 8), 99);
        let r = decode_record(&e.bytes).unwrap();
        let s = r.stacks.expect("a stack region");
        assert_eq!((s.every, s.samples, s.lost), (3, 2, 0));
        assert_eq!(s.maps, maps);
        assert_eq!(s.stacks, vec![Stack { op: Op::Read, frames: frames.to_vec(), calls: 2, bytes: 16384, ns: 0 }]);
        // Without the region: None.
        assert!(decode_record(&Encoder::new(5, 1, b"gpg", cap).bytes).unwrap().stacks.is_none());
    }

    #[test]
    fn keys_differ_by_op_and_frames_and_are_never_zero() {
        let a = stack_key(2, &[1, 2, 3]);
        assert_ne!(a, stack_key(3, &[1, 2, 3]));
        assert_ne!(a, stack_key(2, &[1, 2, 4]));
        assert_eq!(a & 1, 1);
    }
}
