//! The interposer, `libkbx_preload.so`, built by `build.rs` from
//! `crates/kbx-preload` and embedded in the binary: `record` writes it once
//! into the cache directory under a name carrying its SHA-256, so two
//! kbxscope versions never share one and a half-written file is never
//! loaded (it is written to a temporary name and renamed into place).

use sha2::{Digest, Sha256};

/// The library's bytes.
pub const LIBRARY: &[u8] = include_bytes!(env!("KBX_PRELOAD_SO"));

/// The file name for [`LIBRARY`]: `libkbx_preload-<first 16 hex digits of
/// its SHA-256>.so`.
pub fn file_name() -> String {
    let digest = Sha256::digest(LIBRARY);
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("libkbx_preload-{hex}.so")
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_is_a_shared_object() {
        assert_eq!(&super::LIBRARY[..4], b"\x7fELF");
        assert_eq!(super::super::elf::is_static(super::LIBRARY), Some(true), "a shared object has no PT_INTERP");
        assert!(super::file_name().starts_with("libkbx_preload-"));
    }
}
