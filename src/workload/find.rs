//! `find`: GnuPG-style search from the start of the file.
//!
//! Like GnuPG's `keybox_search`, the scan reads every blob completely,
//! skips blobs that are not keys, tests each pattern (a blob matches if
//! any pattern does) and stops at the first match — unless `all` is set,
//! then it goes on to the end.

use crate::io::{Opener, RawRead};

use super::list::{describe, key_blob, ListOutcome, Listed, TypeFilter};
use super::places::Ran;
use super::scan::{Item, ScanError, Scanner};
use crate::io::BufferedReader;
use crate::kbx::search::Pattern;
use crate::keyboxd::{Filter, KeyboxImage};
use crate::store::{Store, StoreError};

/// Search `store` for keys matching any of `patterns` (a database's rows
/// in `ubid` order, as keyboxd lists them).
///
/// # Errors
/// The store cannot be read; later problems are in the outcome.
pub fn run(
    store: &Store,
    patterns: &[Pattern],
    all: bool,
    emit: impl FnMut(Listed),
) -> Result<Ran<ListOutcome>, StoreError> {
    match store {
        Store::Keybox { opener, .. } => Ok(Ran::keybox(pass(&mut *opener.open()?, patterns, all, emit))),
        Store::Keyboxd { db, .. } => {
            let image = KeyboxImage::read(db, Filter::All)?;
            let outcome = pass(&mut *image.opener().open()?, patterns, all, emit);
            Ok(Ran::rows(outcome, image.map))
        }
    }
}

/// Search one reader for blobs matching any of `patterns`.
///
/// Blobs that do not decode count as "no match" (as in GnuPG) and are
/// reported in [`ListOutcome::problems`].
pub fn pass<F: RawRead>(
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
