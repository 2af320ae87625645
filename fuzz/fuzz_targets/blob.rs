//! The blob parser on arbitrary bytes: never panics, and what it accepts
//! re-encodes within its own bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(blob) = kbxscope::kbx::blob::parse_blob(data) {
        // Everything a caller can ask of a parsed blob must be in bounds.
        let _ = format!("{blob:?}");
    }
});
