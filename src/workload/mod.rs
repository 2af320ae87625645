//! What a user does with a keybox: count, dump, list, find.
//!
//! Workloads take a [`BufferedReader`](crate::io::BufferedReader) — never a
//! path — and return values or hand records to a callback; they print
//! nothing. Every pass reads the file the way GnuPG does: blob by blob,
//! each blob completely, deleted blobs skipped with a seek.

pub mod dump;
pub mod find;
pub mod list;
pub mod openpgp;
pub mod scan;
pub mod stats;
pub mod x509;

pub use list::{KeyDetails, ListOutcome, Listed, TypeFilter};
pub use scan::{Item, ScanError, ScanErrorKind, Scanner};
