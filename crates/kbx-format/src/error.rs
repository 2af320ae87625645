//! Errors of the pure format layer.
//!
//! A [`ParseError`] says what is wrong with one blob and at which byte *of
//! that blob*; the scanning code above adds the blob index and the blob's
//! file offset (see `workload::ScanError`).

use std::fmt;

/// What is wrong with a blob.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The blob (or a structure inside it) ends before `need` bytes.
    TooShort {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The length field disagrees with the bytes handed to the parser.
    LengthMismatch {
        /// The blob's length field.
        field: u32,
        /// Bytes handed to the parser.
        have: usize,
    },
    /// A key blob version the parser does not know.
    UnsupportedVersion(u8),
    /// A key blob without keys.
    NoKeys,
    /// An X.509 blob with more than one key.
    X509KeyCount(u16),
    /// A table entry size below the minimum the format requires.
    EntryTooSmall {
        /// Which table.
        table: &'static str,
        /// The stored entry size.
        size: u16,
        /// The minimum.
        min: u16,
    },
    /// A table runs past the end of the blob.
    TableOutOfBounds {
        /// Which table.
        table: &'static str,
        /// Where it would end.
        end: usize,
        /// The blob length.
        blob_len: usize,
    },
    /// An offset/length pair inside the blob points outside it.
    RangeOutOfBounds {
        /// What the range describes (e.g. "user id 2", "key id 0", "data").
        what: String,
        /// Start of the range.
        start: u64,
        /// Length of the range.
        len: u64,
        /// The blob length.
        blob_len: usize,
    },
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooShort { what, need, have } => {
                write!(f, "{what} needs {need} bytes but only {have} are left")
            }
            Self::LengthMismatch { field, have } => {
                write!(f, "length field says {field} bytes but the blob has {have}")
            }
            Self::UnsupportedVersion(v) => write!(f, "unsupported key blob version {v}"),
            Self::NoKeys => write!(f, "key blob has no keys"),
            Self::X509KeyCount(n) => write!(f, "X.509 blob has {n} keys (exactly 1 allowed)"),
            Self::EntryTooSmall { table, size, min } => {
                write!(f, "{table} entry size {size} is below the minimum of {min}")
            }
            Self::TableOutOfBounds { table, end, blob_len } => {
                write!(f, "{table} ends at byte {end}, past the blob's {blob_len} bytes")
            }
            Self::RangeOutOfBounds { what, start, len, blob_len } => {
                write!(f, "{what} ({len} bytes at {start}) lies outside the blob's {blob_len} bytes")
            }
        }
    }
}

/// A blob that cannot be decoded, with the byte offset (relative to the
/// blob's first byte) where the problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Offset inside the blob.
    pub offset: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (byte {} of the blob)", self.kind, self.offset)
    }
}

impl std::error::Error for ParseError {}
