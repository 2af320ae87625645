//! `find`: GnuPG-style search from the start of the file.
//!
//! Like GnuPG's `keybox_search`, the scan reads every blob completely,
//! skips blobs that are not keys, tests each pattern (a blob matches if
//! any pattern does) and stops at the first match — unless `all` is set,
//! then it goes on to the end.

use crate::io::RawRead;

use super::list::{describe, key_blob, ListOutcome, Listed, TypeFilter};
use super::scan::{Item, ScanError, Scanner};
use crate::io::BufferedReader;
use crate::kbx::search::Pattern;

/// Search the keybox for blobs matching any of `patterns`.
///
/// Blobs that do not decode count as "no match" (as in GnuPG) and are
/// reported in [`ListOutcome::problems`].
pub fn run<F: RawRead>(
    reader: &mut BufferedReader<F>,
    patterns: &[Pattern],
    all: bool,
    mut emit: impl FnMut(Listed),
) -> ListOutcome {
    let mut out = ListOutcome::default();
    let mut scan = Scanner::new(reader);
    loop {
        let (index, offset) = match scan.next_item() {
            Ok(None) => break,
            Ok(Some(Item::TooLarge { .. })) => continue,
            Ok(Some(Item::Blob { index, offset, .. })) => (index, offset),
            Err(e) => {
                out.fatal = Some(e);
                break;
            }
        };
        let blob = match key_blob(scan.image(), TypeFilter::All) {
            None => continue,
            Some(Err(e)) => {
                out.problems.push(ScanError::parse(index, offset, e));
                continue;
            }
            Some(Ok(blob)) => blob,
        };
        if !patterns.iter().any(|p| p.matches(&blob)) {
            continue;
        }
        match describe(index, offset, &blob) {
            Ok(listed) => {
                out.listed += 1;
                emit(listed);
            }
            Err(e) => out.problems.push(e),
        }
        if !all {
            break;
        }
    }
    out
}
