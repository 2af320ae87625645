//! A whole-file scan through the instrumented I/O layer over an in-memory
//! file: `stats`, `list`, `dump` and validation with the `index` and
//! `gnupg` lookups. Never panics, never loops: every pass ends.
#![no_main]

use libfuzzer_sys::fuzz_target;

use kbxscope::io::{BufferSize, BufferedReader, MemoryOpener};
use kbxscope::x509::{Lookup, TrustList};

fuzz_target!(|data: &[u8]| {
    // A small buffer makes refills and in-buffer seeks happen often.
    for size in [BufferSize::Bytes(64), BufferSize::Bytes(8192)] {
        let mut r = BufferedReader::new(std::io::Cursor::new(data), size);
        let _ = kbxscope::workload::stats::pass(&mut r);
        r.rewind().unwrap();
        let _ = kbxscope::workload::list::pass(&mut r, kbxscope::workload::TypeFilter::All, |_| {});
        r.rewind().unwrap();
        let _ = kbxscope::workload::dump::pass(&mut r, |_| {});
    }
    let opener = MemoryOpener::new(data, BufferSize::Bytes(512));
    for lookup in [Lookup::Index, Lookup::Gnupg] {
        let _ = kbxscope::workload::validate::on_keybox(&opener, lookup, &TrustList::default(), 1_700_000_000, |_| {});
    }
});
