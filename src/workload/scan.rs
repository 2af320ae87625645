//! A pass over a keybox, blob by blob, with blob indexes and offsets.

use crate::io::RawRead;
use std::fmt;

use crate::io::{read_blob, BufferedReader, Next, ReadBlobError, Take};
use crate::kbx::blob::IMAGELEN_LIMIT;
use crate::kbx::{BlobType, ParseError};

/// What a scan yields at each stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// A blob, available from `Scanner::image`.
    Blob {
        /// Physical index (0 = the first blob of the file; deleted blobs count).
        index: u64,
        /// File offset.
        offset: u64,
        /// How many deleted blobs were skipped just before it.
        deleted_before: u64,
    },
    /// A blob over 5 MiB, skipped.
    TooLarge {
        /// Physical index.
        index: u64,
        /// File offset.
        offset: u64,
        /// Its length field.
        length: u32,
        /// How many deleted blobs were skipped just before it.
        deleted_before: u64,
    },
}

/// What went wrong with one blob.
#[derive(Debug)]
pub enum ScanErrorKind {
    /// The framing could not be read.
    Read(ReadBlobError),
    /// The blob's contents do not decode.
    Parse(ParseError),
    /// The keyblock or certificate inside the blob does not decode, or a
    /// lookup made for it failed.
    Content(ContentError),
    /// The file does not start like a keybox.
    NotAKeybox(NotAKeybox),
}

/// Why a blob's keyblock or certificate could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    /// The certificate does not decode (why, when the decoder said).
    #[error("{}", .0.as_ref().map_or_else(|| "certificate does not decode".to_string(), ToString::to_string))]
    Certificate(Option<crate::x509::CertDecodeError>),
    /// The OpenPGP keyblock does not decode.
    #[error(transparent)]
    Keyblock(#[from] crate::openpgp::KeyblockError),
    /// A lookup made for the blob (an issuer while validating the
    /// certificate, a signer while listing the key's signatures) failed.
    #[error(transparent)]
    Lookup(#[from] crate::lookup::LookupError),
}

/// Why a file is not taken for a keybox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAKeybox {
    /// It has no bytes.
    #[error("the file is empty")]
    Empty,
    /// The first blob claims more than a blob may have.
    #[error("the first blob claims {length} bytes, more than the 5 MiB a keybox blob may have")]
    FirstBlobTooLarge {
        /// Its length field.
        length: u32,
    },
    /// The first blob is neither a header nor a key blob.
    #[error(
        "the first blob is neither a header (type 1, magic KBXf) nor a key blob (type byte {type_byte}, length {length})"
    )]
    FirstBlobNotKeybox {
        /// Its type byte.
        type_byte: u8,
        /// Its length.
        length: usize,
    },
}

/// An error located at a blob: its physical index and a file byte offset.
#[derive(Debug)]
pub struct ScanError {
    /// Physical index of the blob.
    pub index: u64,
    /// File offset of the problem (the blob's offset plus the offset inside it).
    pub offset: u64,
    /// What is wrong.
    pub kind: ScanErrorKind,
}

impl ScanError {
    /// A decoding error of the blob at `index`, starting at `blob_offset`.
    pub fn parse(index: u64, blob_offset: u64, e: ParseError) -> Self {
        Self { index, offset: blob_offset + e.offset as u64, kind: ScanErrorKind::Parse(e) }
    }

    /// A content error (keyblock, certificate, lookup) of the blob at `index`.
    pub fn content(index: u64, blob_offset: u64, e: impl Into<ContentError>) -> Self {
        Self { index, offset: blob_offset, kind: ScanErrorKind::Content(e.into()) }
    }
}

impl ScanError {
    /// What is wrong, without where (for a caller that names the place
    /// itself: a database's row).
    pub fn what(&self) -> String {
        match &self.kind {
            ScanErrorKind::Read(e) => e.to_string(),
            ScanErrorKind::Parse(e) => e.kind.to_string(),
            ScanErrorKind::Content(e) => e.to_string(),
            ScanErrorKind::NotAKeybox(e) => format!("not a keybox: {e}"),
        }
    }
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "blob {} at byte offset {}: {}", self.index, self.offset, self.what())
    }
}

impl std::error::Error for ScanError {}

/// Walks a keybox from the reader's current position to the end.
///
/// Deleted blobs are skipped (and counted in `deleted_before`), as GnuPG
/// skips them; the blob buffer is reused from blob to blob.
///
/// GnuPG itself never checks that a file is a keybox. The scanner does,
/// on the first blob only: an empty file, or one whose first blob is
/// neither a header (type 1, magic `KBXf`), nor an OpenPGP or X.509 blob,
/// nor a deleted blob, is reported as "not a keybox" instead of being
/// skipped as one giant blob (which is what a PNG or a text file would
/// otherwise look like).
#[derive(Debug)]
pub(crate) struct Scanner<'r, F> {
    reader: &'r mut BufferedReader<F>,
    image: Vec<u8>,
    index: u64,
    trailing_deleted: u64,
    keep: Option<BlobType>,
    _pass: tracing::span::EnteredSpan,
}

/// A header blob with the right magic, or an OpenPGP or X.509 blob.
fn plausible_first_blob(image: &[u8]) -> bool {
    match BlobType::from_byte(image[4]) {
        BlobType::Header => image.len() >= 12 && &image[8..12] == b"KBXf",
        BlobType::OpenPgp | BlobType::X509 => true,
        BlobType::Empty | BlobType::Unknown(_) => false,
    }
}

impl<'r, F: RawRead> Scanner<'r, F> {
    fn not_a_keybox(&self, offset: u64, why: NotAKeybox) -> ScanError {
        ScanError { index: 0, offset, kind: ScanErrorKind::NotAKeybox(why) }
    }

    /// Start a scan at the reader's position, which is taken to be blob 0
    /// (counted as a `sequential` pass in `kbx_keybox_scans_total`).
    pub(crate) fn new(reader: &'r mut BufferedReader<F>) -> Self {
        crate::telemetry::scan_started("sequential", reader.stats().buffer_size);
        let pass = tracing::info_span!(target: "kbx::lookup", "pass", start = reader.position()).entered();
        Self { reader, image: Vec::new(), index: 0, trailing_deleted: 0, keep: None, _pass: pass }
    }

    /// A scan that yields only blobs of type `keep` (and the first blob,
    /// which shows whether the file is a keybox): the others are passed
    /// over unread, in the buffer or with a seek (see
    /// [`BufferedReader::pass_over`]), but still counted in blob indexes.
    pub(crate) fn only(reader: &'r mut BufferedReader<F>, keep: BlobType) -> Self {
        Self { keep: Some(keep), ..Self::new(reader) }
    }

    /// The blob of the last [`Item::Blob`].
    pub(crate) fn image(&self) -> &[u8] {
        &self.image
    }

    /// The blob of the last [`Item::Blob`], handed over (the next blob is
    /// read into a new buffer).
    pub(crate) fn take_image(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.image)
    }

    /// Deleted blobs after the last blob of the file (known at the end).
    pub(crate) fn trailing_deleted(&self) -> u64 {
        self.trailing_deleted
    }

    /// The next blob, or `None` at the end of the file.
    ///
    /// # Errors
    /// A [`ScanError`] for framing or system errors; the scan cannot go on
    /// after one.
    pub(crate) fn next_item(&mut self) -> Result<Option<Item>, ScanError> {
        let mut deleted = 0;
        loop {
            let index = self.index;
            // The first blob is always read: it shows whether this is a keybox.
            let keep = self.keep.filter(|_| index > 0);
            let read = read_blob(self.reader, &mut self.image, |ty| match keep {
                Some(keep) if keep != ty => Take::PassOver,
                _ => Take::Copy,
            });
            let next = match read {
                Ok(next) => next,
                // A first blob over the limit says "not a keybox" louder
                // than that it is cut short.
                Err(ReadBlobError::Truncated { offset, length, .. }) if index == 0 && length > IMAGELEN_LIMIT => {
                    Next::TooLarge { offset, length }
                }
                Err(e) => return Err(ScanError { index, offset: e.offset(), kind: ScanErrorKind::Read(e) }),
            };
            match next {
                Next::Eof if index == 0 && !self.reader.is_from_store() => {
                    return Err(self.not_a_keybox(0, NotAKeybox::Empty));
                }
                Next::TooLarge { offset, length } if index == 0 => {
                    return Err(self.not_a_keybox(offset, NotAKeybox::FirstBlobTooLarge { length }));
                }
                Next::Blob { offset } if index == 0 && !plausible_first_blob(&self.image) => {
                    let why = NotAKeybox::FirstBlobNotKeybox { type_byte: self.image[4], length: self.image.len() };
                    return Err(self.not_a_keybox(offset, why));
                }
                Next::Eof => {
                    self.trailing_deleted = deleted;
                    return Ok(None);
                }
                Next::Deleted { .. } => {
                    deleted += 1;
                    self.index += 1;
                }
                Next::Passed { .. } => {
                    deleted = 0;
                    self.index += 1;
                }
                Next::Blob { offset } => {
                    self.index += 1;
                    return Ok(Some(Item::Blob { index, offset, deleted_before: deleted }));
                }
                Next::TooLarge { offset, length } => {
                    self.index += 1;
                    return Ok(Some(Item::TooLarge { index, offset, length, deleted_before: deleted }));
                }
            }
        }
    }
}
