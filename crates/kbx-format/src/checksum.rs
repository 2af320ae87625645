//! The blob checksum, checked the way `kbxutil` checks it.
//!
//! GnuPG ≥ 2.1 stores a SHA-1 over the blob minus its last 20 bytes;
//! blobs written before 2.1 end in an MD5 digest and have no unhashed
//! trailer. `kbxutil` decides which by the bytes after the data image
//! ("unhashed"): 0 → MD5 of everything but the last 16 bytes; 1–19 → an
//! error; otherwise SHA-1 of everything up to `length - unhashed`.

use md5::Md5;
use sha1::{Digest, Sha1};

/// What the checksum of a blob says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    /// A SHA-1 checksum (GnuPG ≥ 2.1).
    Sha1 {
        /// The stored digest (the last 20 bytes).
        stored: [u8; 20],
        /// Whether it matches.
        valid: bool,
    },
    /// A pre-2.1 MD5 checksum.
    Md5 {
        /// The stored digest (the last 16 bytes).
        stored: [u8; 16],
        /// Whether it matches.
        valid: bool,
    },
    /// Between 1 and 19 unhashed bytes: no room for a SHA-1.
    UnhashedTooShort,
    /// The blob is too short to hold a checksum.
    BlobTooShort,
}

impl Checksum {
    /// Whether a checksum is present and matches.
    pub fn is_valid(&self) -> bool {
        matches!(self, Self::Sha1 { valid: true, .. } | Self::Md5 { valid: true, .. })
    }
}

/// Check the checksum of `image` given its unhashed trailer length
/// (`length - data_offset - data_length`).
pub fn verify(image: &[u8], unhashed: usize) -> Checksum {
    let length = image.len();
    if unhashed > 0 && unhashed < 20 {
        return Checksum::UnhashedTooShort;
    }
    let (unhashed, hashlen) = if unhashed == 0 { (16, 16) } else { (unhashed, 20) };
    if length < 5 + unhashed {
        return Checksum::BlobTooShort;
    }
    let tail = &image[length - hashlen..];
    if hashlen == 16 {
        let digest = Md5::digest(&image[..length - 16]);
        let mut stored = [0u8; 16];
        stored.copy_from_slice(tail);
        Checksum::Md5 { stored, valid: digest.as_slice() == tail }
    } else {
        let digest = Sha1::digest(&image[..length - unhashed]);
        let mut stored = [0u8; 20];
        stored.copy_from_slice(tail);
        Checksum::Sha1 { stored, valid: digest.as_slice() == tail }
    }
}

/// Append the SHA-1 checksum GnuPG's writer stores: over everything so far.
pub fn sha1_of(bytes: &[u8]) -> [u8; 20] {
    Sha1::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_valid_and_bad() {
        let mut blob = b"0123456789abcdef".to_vec();
        let sum = sha1_of(&blob);
        blob.extend_from_slice(&sum);
        assert!(verify(&blob, 20).is_valid());
        blob[3] ^= 1;
        assert_eq!(verify(&blob, 20), Checksum::Sha1 { stored: sum, valid: false });
    }

    #[test]
    fn md5_when_no_unhashed_bytes() {
        let mut blob = b"legacy blob body".to_vec();
        let d: [u8; 16] = Md5::digest(&blob).into();
        blob.extend_from_slice(&d);
        assert_eq!(verify(&blob, 0), Checksum::Md5 { stored: d, valid: true });
    }

    #[test]
    fn short_cases() {
        assert_eq!(verify(&[0; 40], 7), Checksum::UnhashedTooShort);
        assert_eq!(verify(&[0; 22], 20), Checksum::BlobTooShort);
    }
}
