//! The keybox format, as pure functions over byte slices.
//!
//! Nothing in this module opens, reads or seeks a file: callers hand it the
//! bytes of one blob and get typed values or a [`ParseError`] back. The
//! I/O layer ([`crate::io`]) decides how those bytes are read.
//!
//! * [`blob`]: decode a blob ([`parse_blob`]) with every length, table and
//!   offset bounds-checked;
//! * [`checksum`]: the SHA-1 (or legacy MD5) blob checksum;
//! * [`stats`]: `kbxutil --stats` counters and text;
//! * [`dump`]: `kbxutil`'s per-blob dump;
//! * [`search`]: GnuPG-style search patterns and matching.

pub mod blob;
pub mod checksum;
pub mod dump;
pub mod encode;
pub mod error;
pub mod keyblock;
pub mod search;
pub mod stats;

pub use blob::{parse_blob, Blob, BlobType, HeaderBlob, KeyBlob, KeyInfo, UidInfo, IMAGELEN_LIMIT};
pub use error::{ParseError, ParseErrorKind};
