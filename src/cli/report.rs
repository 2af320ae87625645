//! Problems already said: each on one line of stderr naming the file,
//! and the error a command returns for them (exit 1, nothing said again).

use std::path::Path;

use anyhow::Result;

use kbxscope::workload::{Places, ScanError};

/// A failure already reported on stderr (its message, for the trace):
/// exit 1 without another message.
#[derive(Debug)]
pub struct Reported(pub String);

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Reported {}

/// Print a located error as one line naming the file; the error to return.
pub fn report(path: &Path, e: &ScanError, places: &Places) -> Reported {
    say(path, &places.describe(e))
}

/// Print `what` as one line naming the file; the error to return.
pub fn say(path: &Path, what: &dyn std::fmt::Display) -> Reported {
    let message = format!("{}: {what}", path.display());
    eprintln!("kbxscope: {message}");
    Reported(message)
}

/// The error for the problems reported (each already on stderr, one line
/// each); `Ok` if none.
pub fn reported(path: &Path, mut reported: Vec<Reported>) -> Result<()> {
    match (reported.pop(), reported.len()) {
        (None, _) => Ok(()),
        (Some(only), 0) => Err(only.into()),
        (Some(_), more) => Err(Reported(format!("{}: {} problems (see stderr)", path.display(), more + 1)).into()),
    }
}
