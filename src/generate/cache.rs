//! Where the built-in default keybox lives.
//!
//! Commands given no keybox use the `seed` preset keybox, generated once
//! into the user's cache directory: `$KBXSCOPE_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/kbxscope`, else `$HOME/.cache/kbxscope`. The file
//! name carries the generator version, so a new generator makes a new file.

use std::ffi::OsString;
use std::path::PathBuf;

use super::{Preset, GENERATOR_VERSION};

/// The cache directory, from environment variables (`env` looks one up).
pub fn cache_dir(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("KBXSCOPE_CACHE_DIR")
        .or_else(|| set("XDG_CACHE_HOME").map(|d| d.join("kbxscope")))
        .or_else(|| set("HOME").map(|d| d.join(".cache").join("kbxscope")))
}

/// The default keybox's file name for this generator version.
pub fn default_keybox_name() -> String {
    let cfg = Preset::Seed.config();
    format!("{}-v{GENERATOR_VERSION}-seed{}.kbx", Preset::Seed.name(), cfg.seed)
}

/// The default keybox's path, from environment variables.
pub fn default_keybox_path(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    cache_dir(env).map(|d| d.join(default_keybox_name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn lookup_order() {
        let name = default_keybox_name();
        assert_eq!(name, format!("seed-v{GENERATOR_VERSION}-seed1.kbx"));
        let all = [("KBXSCOPE_CACHE_DIR", "/k"), ("XDG_CACHE_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(default_keybox_path(env(&all)), Some(PathBuf::from("/k").join(&name)));
        assert_eq!(default_keybox_path(env(&all[1..])), Some(PathBuf::from("/x/kbxscope").join(&name)));
        assert_eq!(default_keybox_path(env(&all[2..])), Some(PathBuf::from("/h/.cache/kbxscope").join(&name)));
        assert_eq!(
            default_keybox_path(env(&[("XDG_CACHE_HOME", ""), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/kbxscope").join(&name))
        );
        assert_eq!(default_keybox_path(env(&[])), None);
    }
}
