//! keyboxd's database from arbitrary bytes: written to a temporary file
//! (SQLite reads files), opened read-only through kbxscope's counting
//! layer, and read by every workload a database serves: stats, dump, the
//! listing (rows made into blobs), and keyboxd's replayed searches for
//! validation and --check-sigs. None may panic, hang or write beside the
//! file. Seed it with the fixtures' databases and `convert`'s output
//! (fuzz/seed-corpus.py does).
#![no_main]

use libfuzzer_sys::fuzz_target;

use kbxscope::io::{BufferSize, IoTally};
use kbxscope::lookup::Strategy;
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::openpgp::{Judge, Mode};
use kbxscope::store::{Store, StoreKind};
use kbxscope::workload;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else { return };
    let path = dir.path().join("pubring.db");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let tally = IoTally::new(BufferSize::default());
    let Ok(db) = Store::open_as(&path, StoreKind::Keyboxd, &tally, None) else { return };
    let _ = workload::stats::run(&db);
    let _ = workload::dump::run(&db, |_, _| {});
    let _ = workload::list::run(&db, workload::TypeFilter::All, |_| {});
    let version = kbxscope::gnupg_version::GnupgVersion::V2_4;
    let _ = workload::validate::run(&db, Strategy::Gnupg, &Default::default(), 1_800_000_000, version, false, |_| {});
    let _ = workload::sigs::run(&db, Mode::CheckSigs, Strategy::Gnupg, Judge { version: GnupgVersion::V2_4, now: 1_800_000_000 }, |_| {});
    drop(db);
    let names: Vec<_> = std::fs::read_dir(dir.path()).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert_eq!(names.len(), 1, "something was written beside the database");
});
