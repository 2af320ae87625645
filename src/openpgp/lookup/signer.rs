//! A keyblock a lookup found, decoded once, with its keys' ids.

use crate::kbx::search::derived_key_id;
use crate::kbx::{parse_blob, Blob, KeyBlob};
use crate::openpgp::expiry::KeyLife;
use crate::openpgp::keyblock::Keyblock;

/// A keyblock a lookup found.
#[derive(Debug)]
pub struct Signer {
    /// The decoded keyblock.
    pub keyblock: Keyblock,
    /// The user id gpg prints for it.
    pub primary_uid: Vec<u8>,
    /// Key ids of all its keys (from the blob's key table).
    pub key_ids: Vec<[u8; 8]>,
    /// Fingerprints of all its keys.
    pub fingerprints: Vec<Vec<u8>>,
    /// When its primary key expires and whether it was revoked.
    pub life: KeyLife,
    /// Where its blob lies in the file (or its row's place in keyboxd's
    /// listing): gpg's listing comes to it in this order.
    pub offset: u64,
}

impl Signer {
    /// Decode a signer from its blob, which lies at `offset`.
    pub(crate) fn from_blob(blob: &KeyBlob<'_>, offset: u64) -> Self {
        let (key_ids, fingerprints) = key_table(blob);
        Self::new(Keyblock::parse(blob.data()), key_ids, fingerprints, offset)
    }

    /// [`Self::from_blob`] of the blob `image` holds, keeping `image`
    /// instead of copying the keyblock out of it
    /// (the keyblock's `held_bytes` gives it back); `None` if it holds no key
    /// blob.
    pub(crate) fn from_image(image: Vec<u8>, offset: u64) -> Option<Self> {
        let Ok(Blob::Key(blob)) = parse_blob(&image) else { return None };
        let (key_ids, fingerprints) = key_table(&blob);
        let start = blob.data().as_ptr() as usize - image.as_ptr() as usize;
        let within = start..start + blob.data().len();
        Some(Self::new(Keyblock::parse_in(image, within), key_ids, fingerprints, offset))
    }

    fn new(keyblock: Keyblock, key_ids: Vec<[u8; 8]>, fingerprints: Vec<Vec<u8>>, offset: u64) -> Self {
        Self {
            primary_uid: keyblock.primary_uid(),
            life: KeyLife::of(&keyblock),
            keyblock,
            key_ids,
            fingerprints,
            offset,
        }
    }
}

/// The key ids and fingerprints of a blob's key table.
fn key_table(blob: &KeyBlob<'_>) -> (Vec<[u8; 8]>, Vec<Vec<u8>>) {
    let ids = blob.keys().map(|k| crate::kbx::keypacket::key_id_of(derived_key_id(&k))).collect();
    (ids, blob.keys().map(|k| k.fingerprint.to_vec()).collect())
}
