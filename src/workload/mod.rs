//! What a user does with a keybox: count, dump, list, find, validate the
//! certificates, list or check the signatures.
//!
//! Each workload has one entry point, `run`, that takes a
//! [`Store`](crate::store::Store) — a keybox or keyboxd's database — and
//! returns values or hands records to a callback; they print nothing. A
//! pass over one [`BufferedReader`](crate::io::BufferedReader) is `pass`
//! (a keybox's handle, or a database's rows as blobs in memory). Every pass reads the file the way GnuPG does: blob by blob,
//! each blob completely, deleted blobs skipped with a seek.

mod cores;
pub mod delete;
pub mod delete_x509;
pub mod dump;
pub mod find;
pub mod health;
pub mod import;
pub mod import_x509;
pub mod keyboxd;
pub mod keyboxd_import;
pub mod keyboxd_x509;
pub mod list;
mod places;
mod scan;
pub mod sigs;
mod startup;
pub mod stats;
pub mod trust_check;
pub mod validate;

pub use list::{KeyDetails, ListOutcome, Listed, TypeFilter};
pub use places::{Places, Ran};
pub use scan::ContentError;
pub use scan::NotAKeybox;
pub use scan::ScanErrorKind;
pub use scan::{Item, ScanError};

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use proptest::prelude::*;

    use crate::io::{BufferSize, BufferedReader};
    use crate::kbx::search::Pattern;

    const DELETED: &[u8] = include_bytes!("../../tests/fixtures/gnupg-deleted.kbx");

    /// Run every workload over `file`; none may panic or loop.
    fn all_workloads(file: &[u8], size: BufferSize) {
        let reader = || BufferedReader::new(Cursor::new(file.to_vec()), size);
        let _ = super::stats::pass(&mut reader());
        let _ = super::dump::pass(&mut reader(), |_| {});
        let _ = super::list::pass(&mut reader(), super::TypeFilter::All, |_| {});
        let patterns = [Pattern::parse("example").unwrap()];
        let _ = super::find::pass(&mut reader(), &patterns, true, |_| {});
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn arbitrary_files_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
            all_workloads(&bytes, BufferSize::Bytes(512));
        }

        #[test]
        fn damaged_keyboxes_never_panic(cut in 0usize..DELETED.len(), flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6)) {
            let mut file = DELETED[..cut].to_vec();
            for (at, v) in flips {
                if !file.is_empty() {
                    let i = at.index(file.len());
                    file[i] = v;
                }
            }
            all_workloads(&file, BufferSize::Bytes(4096));
        }
    }

    #[test]
    fn stats_of_the_deleted_fixture() {
        let mut r = BufferedReader::new(Cursor::new(DELETED.to_vec()), BufferSize::Bytes(8192));
        let out = super::stats::pass(&mut r);
        assert!(out.fatal.is_none());
        assert_eq!((out.stats.total, out.stats.empty, out.stats.deleted_blobs), (48, 2, 3));
        // Blob 6 (deleted) lies inside the first 8 KiB buffer: skipped for free.
        // Blobs 33 and 34 (30 KiB and 21 KiB, deleted) each end beyond the
        // buffer: one lseek each, and the data they skip is never read.
        let s = r.stats();
        assert_eq!(s.events.seek, 2);
        assert!(s.bytes_read < DELETED.len() as u64 - 30_000, "{}", s.bytes_read);
    }
}
