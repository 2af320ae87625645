//! The external tools the side-by-side runs (`--with-gpgsm`, `--with-gpg`)
//! start: found once, with one message when missing.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};

/// `given` if the user named the program, else `name` on `PATH`; a
/// missing one is an error naming `option` and the Debian package (the
/// package is the program's name for every tool used here).
pub fn find(option: &str, name: &str, given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.is_file()))
        .ok_or_else(|| anyhow!("{option} needs '{name}', which is not installed (Debian: apt-get install {name})"))
}
