//! The GnuPG keybox format (`pubring.kbx`), as pure functions over byte
//! slices: bytes in, typed values out.
//!
//! This crate owns the format and nothing else. It opens, reads and seeks
//! no file (it has no I/O at all, and depends on nothing of kbxscope's):
//! callers hand it the bytes of one blob and get typed values or a
//! [`ParseError`] back; how those bytes are read is the caller's business
//! (kbxscope's instrumented I/O layer). It stands to kbxscope as
//! `csv-core` stands to `csv`.
//!
//! Invariants: every length, table entry and offset read from a blob is
//! bounds-checked before use; nothing allocates more than the blob it was
//! given (plus output text); no function panics on any input (fuzzed).
//!
//! * [`blob`]: decode a blob ([`parse_blob`]) with every length, table and
//!   offset bounds-checked;
//! * [`checksum`]: the SHA-1 (or legacy MD5) blob checksum;
//! * [`stats`]: `kbxutil --stats` counters and text;
//! * [`dump`]: `kbxutil`'s per-blob dump;
//! * [`search`]: GnuPG-style search patterns and matching;
//! * [`keyblock`]: the OpenPGP packet framing of a keyblock;
//! * [`keypacket`]: a key packet's fingerprint and key id;
//! * [`encode`]: blobs written as GnuPG writes them;
//! * [`dn`]: distinguished names in libksba's string form (what X.509
//!   blobs store and gpgsm's searches compare).

pub mod blob;
pub mod checksum;
pub mod create;
pub mod dn;
pub mod dump;
pub mod encode;
pub mod error;
pub mod keyblock;
pub mod keypacket;
pub mod search;
pub mod stats;

pub use blob::{parse_blob, Blob, BlobType, HeaderBlob, KeyBlob, KeyInfo, UidInfo, IMAGELEN_LIMIT};
pub use error::{ParseError, ParseErrorKind};
