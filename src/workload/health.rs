//! `doctor`'s look at a store: one pass, blob by blob, that weighs what
//! it holds — its blobs by type, the bytes deleted blobs still take, the
//! maintenance stamp, every key's and certificate's size and signature
//! count, the signatures whose signer the store does not hold, duplicate
//! fingerprints, blobs GnuPG passes over (over its 5 MiB limit) and blobs
//! whose checksum does not match. It judges nothing: `doctor` does.
//!
//! A keybox is read through its handle as any pass reads it; keyboxd's
//! database as the blobs of its rows (one `SELECT`), so both stores are
//! weighed alike.

use std::collections::{HashMap, HashSet};

use super::scan::{Item, ScanError, Scanner};
use crate::io::{BufferedReader, Opener, RawRead};
use crate::kbx::blob::{parse_blob, Blob, BlobType};
use crate::kbx::keyblock::{split_packets, tag};
use crate::keyboxd::{Filter, KeyboxImage};
use crate::openpgp::SigPacket;
use crate::store::{Store, StoreError};

/// One key or certificate of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weighed {
    /// Physical blob index (deleted blobs count; a database's row order).
    pub index: u64,
    /// File offset of the blob (in a database: in the image of its rows).
    pub offset: u64,
    /// The blob's bytes.
    pub bytes: u64,
    /// OpenPGP or X.509.
    pub blob_type: BlobType,
    /// The primary key's (or certificate's) fingerprint.
    pub fingerprint: Vec<u8>,
    /// The first user id (OpenPGP) or subject (X.509), lossy UTF-8.
    pub name: String,
    /// Signature packets in the keyblock (0 for a certificate).
    pub signatures: u64,
    /// Of those, the ones whose issuer is no key of the store.
    pub unknown_signers: u64,
    /// Marked ephemeral (gpgsm's certificates kept only for a validation).
    pub ephemeral: bool,
}

/// What a pass found in a store.
#[derive(Debug, Default)]
pub struct Health {
    /// The file's size (a database: the bytes of its keyblobs' image).
    pub file_bytes: u64,
    /// Blobs by type name (`openpgp`, `x509`, `header`, `empty`, `unknown`).
    pub blobs: HashMap<&'static str, u64>,
    /// Bytes of deleted blobs that a rewrite would drop.
    pub deleted_bytes: u64,
    /// Deleted blobs.
    pub deleted_blobs: u64,
    /// The header blob's creation time (Unix seconds).
    pub created: Option<u32>,
    /// The header blob's last maintenance run (Unix seconds); `None`
    /// without a header blob (a database has none).
    pub last_maintenance: Option<u32>,
    /// Every key and certificate, in file order.
    pub keys: Vec<Weighed>,
    /// Signature packets in all keyblocks.
    pub signatures: u64,
    /// Of those, the ones whose issuer is no key of the store.
    pub unknown_signers: u64,
    /// Distinct issuers of all signatures (what a `--check-sigs` looks
    /// up at least once each).
    pub distinct_signers: u64,
    /// Fingerprints held by more than one blob, with the blobs' indexes.
    pub duplicates: Vec<(Vec<u8>, Vec<u64>)>,
    /// Blobs over GnuPG's 5 MiB limit, which it passes over: index,
    /// offset, length.
    pub too_large: Vec<(u64, u64, u32)>,
    /// Blobs whose checksum does not match (as kbxutil checks it): index, offset.
    pub bad_checksums: Vec<(u64, u64)>,
    /// Blobs that do not decode: index, offset, why.
    pub undecodable: Vec<(u64, u64, String)>,
    /// The damage that ended the pass early (the rest was not weighed).
    pub fatal: Option<ScanError>,
}

/// A key's signatures before the store's key ids are all known.
struct Pending {
    issuers: Vec<Option<[u8; 8]>>,
}

/// Weigh `store`.
///
/// # Errors
/// The store cannot be opened or read before the pass starts; damage
/// found on the way is in [`Health::fatal`] and [`Health::undecodable`].
pub fn run(store: &Store) -> Result<Health, StoreError> {
    match store {
        Store::Keybox { opener, .. } => Ok(pass(&mut *opener.open()?)),
        Store::Keyboxd { db, .. } => {
            let image = KeyboxImage::read(db, Filter::All)?;
            let mut h = pass(&mut *image.opener().open()?);
            h.blobs.remove("empty");
            Ok(h)
        }
    }
}

/// Weigh the keybox `reader` reads, from its start.
pub fn pass<F: RawRead>(reader: &mut BufferedReader<F>) -> Health {
    let mut h = Health::default();
    let mut pending = Vec::new();
    let mut key_ids: HashSet<[u8; 8]> = HashSet::new();
    let mut seen: HashMap<Vec<u8>, Vec<u64>> = HashMap::new();
    let mut end = 0u64;
    let fatal = {
        let mut scan = Scanner::new(reader);
        loop {
            match scan.next_item() {
                Ok(Some(Item::Blob { index, offset, deleted_before })) => {
                    h.count_deleted(deleted_before, offset.saturating_sub(end));
                    end = offset + scan.image().len() as u64;
                    let image = scan.image();
                    weigh(&mut h, &mut pending, &mut key_ids, &mut seen, index, offset, image);
                }
                Ok(Some(Item::TooLarge { index, offset, length, deleted_before })) => {
                    h.count_deleted(deleted_before, offset.saturating_sub(end));
                    end = offset + u64::from(length);
                    h.too_large.push((index, offset, length));
                }
                Ok(None) => {
                    let trailing = scan.trailing_deleted();
                    break (None, trailing);
                }
                Err(e) => break (Some(e), 0),
            }
        }
    };
    let (fatal, trailing) = fatal;
    h.file_bytes = reader.position().max(end);
    if fatal.is_none() {
        h.count_deleted(trailing, h.file_bytes.saturating_sub(end));
    }
    h.fatal = fatal;
    let distinct: HashSet<[u8; 8]> = pending.iter().flat_map(|p| p.issuers.iter().flatten().copied()).collect();
    h.distinct_signers = distinct.len() as u64;
    for (key, p) in h.keys.iter_mut().zip(pending) {
        key.unknown_signers = p.issuers.iter().filter(|i| i.is_none_or(|id| !key_ids.contains(&id))).count() as u64;
        h.unknown_signers += key.unknown_signers;
    }
    let mut dups: Vec<(Vec<u8>, Vec<u64>)> = seen.into_iter().filter(|(_, at)| at.len() > 1).collect();
    dups.sort_by_key(|(_, at)| at[0]);
    h.duplicates = dups;
    h
}

impl Health {
    fn count_deleted(&mut self, blobs: u64, bytes: u64) {
        self.deleted_blobs += blobs;
        self.deleted_bytes += bytes;
        *self.blobs.entry("empty").or_default() += blobs;
    }
}

/// Weigh one blob: count it, and keep what the judgement needs.
fn weigh(
    h: &mut Health,
    pending: &mut Vec<Pending>,
    key_ids: &mut HashSet<[u8; 8]>,
    seen: &mut HashMap<Vec<u8>, Vec<u64>>,
    index: u64,
    offset: u64,
    image: &[u8],
) {
    let blob = match parse_blob(image) {
        Ok(b) => b,
        Err(e) => {
            *h.blobs.entry("unknown").or_default() += 1;
            h.undecodable.push((index, offset + e.offset as u64, e.to_string()));
            return;
        }
    };
    let k = match blob {
        Blob::Header(head) => {
            *h.blobs.entry("header").or_default() += 1;
            if index == 0 {
                h.created = Some(head.created_at);
                h.last_maintenance = Some(head.last_maintenance);
            }
            return;
        }
        Blob::Empty => return h.count_deleted(1, 0),
        Blob::Unknown(_) => {
            *h.blobs.entry("unknown").or_default() += 1;
            return;
        }
        Blob::Key(k) => k,
    };
    *h.blobs.entry(k.blob_type.name()).or_default() += 1;
    if !crate::kbx::checksum::verify(image, k.unhashed_len()).is_valid() {
        h.bad_checksums.push((index, offset));
    }
    for key in k.keys() {
        if let Ok(id) = <[u8; 8]>::try_from(key.key_id) {
            key_ids.insert(id);
        }
    }
    let fingerprint = k.keys().next().map(|key| key.fingerprint.to_vec()).unwrap_or_default();
    if !fingerprint.is_empty() {
        seen.entry(fingerprint.clone()).or_default().push(index);
    }
    let name = k.uids().next().map(|u| String::from_utf8_lossy(u.name).into_owned()).unwrap_or_default();
    let issuers = if k.blob_type == BlobType::OpenPgp { issuers(k.data()) } else { Vec::new() };
    h.signatures += issuers.len() as u64;
    h.keys.push(Weighed {
        index,
        offset,
        bytes: image.len() as u64,
        blob_type: k.blob_type,
        fingerprint,
        name,
        signatures: issuers.len() as u64,
        unknown_signers: 0,
        ephemeral: k.is_ephemeral(),
    });
    pending.push(Pending { issuers });
}

/// The issuer of every signature packet of a keyblock (`None` where the
/// packet names none or does not decode).
fn issuers(keyblock: &[u8]) -> Vec<Option<[u8; 8]>> {
    let Ok(packets) = split_packets(keyblock) else { return Vec::new() };
    packets
        .iter()
        .filter(|p| p.tag == tag::SIGNATURE)
        .map(|p| SigPacket::parse(p.body).ok().and_then(|s| s.issuer))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use crate::io::{BufferSize, BufferedReader};

    const DELETED: &[u8] = include_bytes!("../../tests/fixtures/gnupg-deleted.kbx");
    const MIXED: &[u8] = include_bytes!("../../tests/fixtures/gnupg-mixed.kbx");

    fn weigh(file: &[u8]) -> super::Health {
        super::pass(&mut BufferedReader::new(Cursor::new(file.to_vec()), BufferSize::Bytes(8192)))
    }

    #[test]
    fn the_deleted_fixture_has_its_deleted_blobs_and_their_bytes() {
        let h = weigh(DELETED);
        assert!(h.fatal.is_none());
        // kbxutil --stats on this fixture: 48 blobs, 3 of them deleted
        // (two counted as empty, one more passed over).
        assert_eq!(h.deleted_blobs, 3);
        assert!(h.deleted_bytes > 50_000, "{}", h.deleted_bytes);
        assert_eq!(h.file_bytes, DELETED.len() as u64);
        let live: u64 = h.keys.iter().map(|k| k.bytes).sum::<u64>() + 32;
        assert_eq!(live + h.deleted_bytes, h.file_bytes);
        assert!(h.bad_checksums.is_empty() && h.duplicates.is_empty());
    }

    #[test]
    fn the_mixed_fixture_has_no_damage_and_counts_signatures() {
        let h = weigh(MIXED);
        assert!(h.fatal.is_none() && h.undecodable.is_empty());
        assert!(h.last_maintenance.is_some());
        assert!(h.signatures > 0);
        assert!(h.unknown_signers <= h.signatures);
        assert_eq!(h.keys.iter().map(|k| k.signatures).sum::<u64>(), h.signatures);
    }

    #[test]
    fn a_damaged_blob_is_named_not_fatal_to_the_rest() {
        let mut file = MIXED.to_vec();
        // The second blob's checksum's last byte.
        let second = u32::from_be_bytes(file[0..4].try_into().unwrap()) as usize;
        let len = u32::from_be_bytes(file[second..second + 4].try_into().unwrap()) as usize;
        file[second + len - 1] ^= 0xff;
        let h = weigh(&file);
        assert_eq!(h.bad_checksums, vec![(1, second as u64)]);
    }
}
