//! Reading small text files kbxscope is pointed at (a trustlist, a GnuPG
//! home's `common.conf`, strace's log). Not counted: they are no keybox.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a text file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read '{}': {reason}", path.display())]
pub struct ReadTextError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

/// Read a UTF-8 text file of at most `max` bytes.
///
/// # Errors
/// A missing or unreadable file, one over `max` bytes, or not UTF-8.
pub fn read_text(path: &Path, max: u64) -> Result<String, ReadTextError> {
    let err = |reason: String| ReadTextError { path: path.to_path_buf(), reason };
    let f = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes).map_err(|e| err(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(err(format!("larger than {max} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| err("not UTF-8 text".into()))
}

/// Count the lines of a (possibly huge) text file containing any of `needles`.
///
/// # Errors
/// The file cannot be read.
pub fn count_lines_containing(path: &Path, needles: &[String]) -> Result<u64, ReadTextError> {
    use std::io::BufRead;
    let err = |reason: String| ReadTextError { path: path.to_path_buf(), reason };
    let f = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    let mut count = 0;
    for line in std::io::BufReader::new(f).split(b'\n') {
        let line = line.map_err(|e| err(e.to_string()))?;
        let text = String::from_utf8_lossy(&line);
        if needles.iter().any(|n| text.contains(n.as_str())) {
            count += 1;
        }
    }
    Ok(count)
}

/// Whether `path` names an existing regular file.
pub fn is_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}
