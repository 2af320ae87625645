//! The numbers `kbxutil --stats` prints, with its counting rules.
//!
//! GnuPG's reader skips deleted blobs internally and only reports that it
//! skipped "at least one", so `kbxutil` counts a *run* of adjacent deleted
//! blobs as one empty blob (and a run at the very end, or one followed by
//! an over-long blob, not at all). Blobs shorter than 32 bytes are "too
//! short" and not in the total; over-5-MiB blobs are "skipped long" and not
//! in the total. [`KbxStats`] reproduces all of that and adds the exact
//! number of deleted blobs on the side.

use serde::Serialize;

use super::blob::{be16, be32, BlobType};

/// Counters of a whole-file pass, as `kbxutil --stats` keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KbxStats {
    /// "Total number of blobs" (kbxutil's rules).
    pub total: u64,
    /// Header blobs.
    pub header: u64,
    /// Empty blobs, one per run of adjacent deleted blobs (kbxutil's rule).
    pub empty: u64,
    /// OpenPGP blobs.
    pub openpgp: u64,
    /// X.509 blobs.
    pub x509: u64,
    /// Key blobs with no flags.
    pub non_flagged: u64,
    /// Key blobs with the secret flag.
    pub secret_flagged: u64,
    /// Key blobs with the ephemeral flag.
    pub ephemeral_flagged: u64,
    /// Blobs over 5 MiB, skipped.
    pub skipped_long_blobs: u64,
    /// Blobs of an unknown type.
    pub unknown_blob_types: u64,
    /// Blobs under 32 bytes (and key blobs under 40).
    pub too_short_blobs: u64,
    /// Blobs whose length field exceeds the bytes read (cannot happen with
    /// this reader; kept for the output format).
    pub too_large_blobs: u64,
    /// The exact number of deleted (type 0) blobs — not a kbxutil number.
    pub deleted_blobs: u64,
}

impl KbxStats {
    /// Count a run of `n` deleted blobs followed by a blob that was read.
    pub fn record_deleted_run(&mut self, n: u64) {
        if n > 0 {
            self.empty += 1;
            self.total += 1;
        }
        self.deleted_blobs += n;
    }

    /// Count deleted blobs that kbxutil does not count (at the end of the
    /// file, or followed by an over-long blob).
    pub fn record_uncounted_deleted(&mut self, n: u64) {
        self.deleted_blobs += n;
    }

    /// Count a blob over the 5 MiB limit.
    pub fn record_skipped_long(&mut self) {
        self.skipped_long_blobs += 1;
    }

    /// Count one blob read completely (`image` is the whole blob).
    pub fn record_blob(&mut self, image: &[u8]) {
        if image.len() < 32 {
            self.too_short_blobs += 1;
            return;
        }
        let n = be32(image, 0) as usize;
        if n > image.len() {
            self.too_large_blobs += 1;
        }
        self.total += 1;
        match BlobType::from_byte(image[4]) {
            BlobType::Empty => {
                self.empty += 1;
                return;
            }
            BlobType::Header => {
                self.header += 1;
                return;
            }
            BlobType::OpenPgp => self.openpgp += 1,
            BlobType::X509 => self.x509 += 1,
            BlobType::Unknown(_) => {
                self.unknown_blob_types += 1;
                return;
            }
        }
        if n.min(image.len()) < 40 {
            self.too_short_blobs += 1;
            return;
        }
        let flags = be16(image, 6);
        if flags == 0 {
            self.non_flagged += 1;
        } else {
            if flags & 1 != 0 {
                self.secret_flagged += 1;
            }
            if flags & 2 != 0 {
                self.ephemeral_flagged += 1;
            }
        }
    }

    /// The text `kbxutil --stats` prints for these numbers.
    pub fn render_kbxutil(&self) -> String {
        let mut s = String::new();
        let rows: [(&str, u64); 8] = [
            ("Total number of blobs", self.total),
            ("header", self.header),
            ("empty", self.empty),
            ("openpgp", self.openpgp),
            ("x509", self.x509),
            ("non flagged", self.non_flagged),
            ("secret flagged", self.secret_flagged),
            ("ephemeral flagged", self.ephemeral_flagged),
        ];
        for (label, v) in rows {
            s.push_str(&format!("{label:>21}: {v:8}\n"));
        }
        let optional: [(&str, u64, &str); 4] = [
            ("skipped long blobs", self.skipped_long_blobs, ""),
            ("unknown blob types", self.unknown_blob_types, ""),
            ("too short blobs", self.too_short_blobs, " (error)"),
            ("too large blobs", self.too_large_blobs, " (error)"),
        ];
        for (label, v, suffix) in optional {
            if v > 0 {
                s.push_str(&format!("{label:>21}: {v:8}{suffix}\n"));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(len: usize, ty: u8, flags: u16) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[..4].copy_from_slice(&(len as u32).to_be_bytes());
        b[4] = ty;
        b[6..8].copy_from_slice(&flags.to_be_bytes());
        b
    }

    #[test]
    fn counts_like_kbxutil() {
        let mut s = KbxStats::default();
        s.record_blob(&blob(32, 1, 2));
        s.record_blob(&blob(100, 2, 0));
        s.record_deleted_run(2);
        s.record_blob(&blob(100, 3, 2));
        s.record_blob(&blob(20, 3, 0));
        s.record_blob(&blob(36, 2, 0));
        s.record_blob(&blob(50, 9, 0));
        s.record_skipped_long();
        assert_eq!(s.total, 6);
        assert_eq!(s.empty, 1);
        assert_eq!(s.deleted_blobs, 2);
        assert_eq!((s.header, s.openpgp, s.x509, s.unknown_blob_types), (1, 2, 1, 1));
        assert_eq!((s.non_flagged, s.ephemeral_flagged), (1, 1));
        assert_eq!(s.too_short_blobs, 2);
        let text = s.render_kbxutil();
        assert!(text.starts_with("Total number of blobs:        6\n               header:        1\n"));
        assert!(text.contains("   skipped long blobs:        1\n"));
        assert!(text.ends_with("      too short blobs:        2 (error)\n"));
    }
}
