//! The store a command reads: the one the user named (a keybox, a
//! database, a GnuPG home: [`kbxscope::store::Store`] tells them apart),
//! or the built-in keybox, generated into the cache directory the first
//! time.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};

use super::keybox;
use kbxscope::io::IoTally;
use kbxscope::store::Store;

/// Open the store the user named, or the built-in default keybox —
/// generating it first if it is not in the cache yet. The probe for the
/// cached file is a real open and is counted like any other.
///
/// # Errors
/// The store cannot be opened, or the built-in keybox cannot be made.
pub fn open(file: Option<&Path>, tally: &IoTally) -> Result<Store> {
    if let Some(path) = file {
        return Ok(Store::open(path, tally)?);
    }
    let path = keybox::builtin_path()?;
    match Store::open(&path, tally) {
        Ok(store) => {
            eprintln!("kbxscope: using the built-in default keybox {}", path.display());
            return Ok(store);
        }
        Err(e) if e.is_missing() => {}
        Err(e) => return Err(e.into()),
    }
    keybox::generate_builtin(&path)?;
    Ok(Store::open(&path, tally)?)
}

/// The GnuPG home a command examines: the one given, else GnuPG's own
/// (`$GNUPGHOME`, else the system's).
///
/// # Errors
/// None was given and there is no home directory.
pub fn gnupg_home(given: Option<&Path>) -> Result<PathBuf> {
    match given {
        Some(h) => Ok(h.to_path_buf()),
        None => kbxscope::io::gnupg_home()
            .ok_or_else(|| anyhow!("no GnuPG home: GNUPGHOME is not set and there is no home directory")),
    }
}
