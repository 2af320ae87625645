//! The blob parser on arbitrary bytes, and everything that reads a parsed
//! blob: kbxutil's dump of it, its checksum, and the decoding of the
//! certificate or keyblock it holds. None may panic or read out of bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;

use kbxscope::kbx::blob::{parse_blob, Blob, BlobType};

fuzz_target!(|data: &[u8]| {
    let _ = kbxscope::kbx::dump::dump_blob(data);
    if let Ok(blob) = parse_blob(data) {
        let _ = format!("{blob:?}");
        if let Blob::Key(key) = &blob {
            let covered = u64::from(key.data_offset) + u64::from(key.data_length);
            let unhashed = (data.len() as u64).saturating_sub(covered);
            let _ = kbxscope::kbx::checksum::verify(data, usize::try_from(unhashed).unwrap_or(usize::MAX));
            match key.blob_type {
                BlobType::X509 => {
                    let _ = kbxscope::x509::describe(key);
                }
                BlobType::OpenPgp => {
                    let _ = kbxscope::openpgp::describe(data);
                }
                _ => {}
            }
        }
    }
});
