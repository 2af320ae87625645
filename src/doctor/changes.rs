//! The changes `doctor` measures, made to a keybox's bytes in memory (no
//! I/O): the maintenance stamp renewed, the deleted blobs dropped, the
//! signatures by signers the keybox does not hold removed from some keys
//! (what gpg's `clean` does to them).

use std::collections::HashSet;

use crate::kbx::blob::{parse_blob, Blob, BlobType};
use crate::kbx::create::openpgp_spec;
use crate::kbx::encode::encode_key_blob;
use crate::kbx::keyblock::{split_packets, tag};
use crate::openpgp::SigPacket;

/// Where the header blob keeps its last maintenance time.
const STAMP_AT: std::ops::Range<usize> = 20..24;

/// The blobs of a keybox image: (offset, length), in order, up to the
/// first one whose length does not fit.
fn blobs(keybox: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(head) = keybox.get(at..at + 5) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        if len < 5 || at + len > keybox.len() {
            break;
        }
        out.push((at, len));
        at += len;
    }
    out
}

/// The keybox with its header's maintenance stamp set to `now` (as GnuPG's
/// pass leaves it when it has dropped something); `None` without a header.
pub fn stamp_renewed(keybox: &[u8], now: u32) -> Option<Vec<u8>> {
    if keybox.len() < 32 || keybox[4] != 1 {
        return None;
    }
    let mut out = keybox.to_vec();
    out[STAMP_AT].copy_from_slice(&now.to_be_bytes());
    Some(out)
}

/// The keybox without its deleted blobs (what GnuPG's maintenance pass
/// writes), with its stamp renewed to `now`.
pub fn compacted(keybox: &[u8], now: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(keybox.len());
    let spans = blobs(keybox);
    let end = spans.last().map_or(0, |(a, l)| a + l);
    for (at, len) in spans {
        if keybox[at + 4] != 0 {
            out.extend_from_slice(&keybox[at..at + len]);
        }
    }
    out.extend_from_slice(&keybox[end..]);
    stamp_renewed(&out, now).unwrap_or(out)
}

/// The keybox with the signatures by signers it does not hold removed
/// from the OpenPGP keys whose primary fingerprint is in `keys` (every
/// key when `keys` is `None`), each such key's blob made again as GnuPG
/// makes it; other blobs are copied as they are. Returns the image and
/// the signatures removed.
pub fn cleaned(keybox: &[u8], keys: Option<&HashSet<Vec<u8>>>) -> (Vec<u8>, u64) {
    let spans = blobs(keybox);
    let mut known: HashSet<[u8; 8]> = HashSet::new();
    for &(at, len) in &spans {
        if let Ok(Blob::Key(k)) = parse_blob(&keybox[at..at + len]) {
            known.extend(k.keys().filter_map(|key| <[u8; 8]>::try_from(key.key_id).ok()));
        }
    }
    let mut out = Vec::with_capacity(keybox.len());
    let mut removed = 0;
    let end = spans.last().map_or(0, |(a, l)| a + l);
    for (at, len) in spans {
        let image = &keybox[at..at + len];
        match parse_blob(image) {
            Ok(Blob::Key(k))
                if k.blob_type == BlobType::OpenPgp
                    && keys.is_none_or(|set| k.keys().next().is_some_and(|p| set.contains(p.fingerprint))) =>
            {
                match without_unknown_signers(k.data(), &known) {
                    Some((keyblock, n)) if n > 0 => match openpgp_spec(&keyblock, k.is_ephemeral()) {
                        Ok(spec) => {
                            out.extend_from_slice(&encode_key_blob(&spec));
                            removed += n;
                        }
                        Err(_) => out.extend_from_slice(image),
                    },
                    _ => out.extend_from_slice(image),
                }
            }
            _ => out.extend_from_slice(image),
        }
    }
    out.extend_from_slice(&keybox[end..]);
    (out, removed)
}

/// A keyblock without the signature packets (and the ring-trust packet
/// after each) whose issuer is not in `known`, framed as it was; and how
/// many were removed. `None` when it does not frame.
fn without_unknown_signers(keyblock: &[u8], known: &HashSet<[u8; 8]>) -> Option<(Vec<u8>, u64)> {
    let packets = split_packets(keyblock).ok()?;
    let mut out = Vec::with_capacity(keyblock.len());
    let mut removed = 0;
    let mut start = 0;
    let mut dropping = false;
    for p in &packets {
        // A packet's header starts where the previous packet's body ended.
        let body_end = p.body.as_ptr() as usize - keyblock.as_ptr() as usize + p.body.len();
        let whole = &keyblock[start..body_end];
        start = body_end;
        if p.tag == tag::TRUST && dropping {
            continue;
        }
        dropping = p.tag == tag::SIGNATURE
            && SigPacket::parse(p.body).ok().and_then(|s| s.issuer).is_none_or(|id| !known.contains(&id));
        if dropping {
            removed += 1;
            continue;
        }
        out.extend_from_slice(whole);
    }
    Some((out, removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIXED: &[u8] = include_bytes!("../../tests/fixtures/gnupg-mixed.kbx");
    const DELETED: &[u8] = include_bytes!("../../tests/fixtures/gnupg-deleted.kbx");

    #[test]
    fn the_stamp_is_renewed_in_place() {
        let renewed = stamp_renewed(MIXED, 1_900_000_000).unwrap();
        assert_eq!(renewed.len(), MIXED.len());
        match parse_blob(&renewed[..32]).unwrap() {
            Blob::Header(h) => assert_eq!(h.last_maintenance, 1_900_000_000),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn compaction_drops_exactly_the_deleted_blobs() {
        let c = compacted(DELETED, 1);
        let before = blobs(DELETED);
        let deleted: usize = before.iter().filter(|(a, _)| DELETED[a + 4] == 0).map(|(_, l)| l).sum();
        assert!(deleted > 0);
        assert_eq!(c.len(), DELETED.len() - deleted);
        assert!(blobs(&c).iter().all(|(a, _)| c[a + 4] != 0));
    }

    #[test]
    fn cleaning_removes_only_unknown_signers_and_keeps_blobs_valid() {
        let (c, removed) = cleaned(MIXED, None);
        for (at, len) in blobs(&c) {
            assert!(parse_blob(&c[at..at + len]).is_ok());
        }
        // Nothing removed: the same bytes.
        if removed == 0 {
            assert_eq!(c, MIXED);
        }
        let (again, twice) = cleaned(&c, None);
        assert_eq!((again, twice), (c, 0));
    }
}
