//! GnuPG's keybox maintenance pass (`keybox_compress`, run at every gpg
//! and gpgsm start when the lock is free; facts only), on a private copy:
//! the header blob read; when its maintenance stamp is less than three
//! hours old, nothing more. Otherwise the keybox is read again from the
//! start (one `lseek`) and copied blob by blob into `pubring.kbx.tmp`,
//! the header with a new stamp, deleted blobs passed over (one `lseek`
//! each, as estream seeks) and ephemeral blobs older than a day dropped.
//! If something was dropped the copy replaces the keybox (backup and
//! renames); if not it is removed, and the stamp stays old, so the next
//! start copies again.

use std::io;

use super::copy::Streams;
use super::files::{Access, Role, WriteMode};
use super::{failed, KeyboxWriter, UpdateError};
use crate::kbx::blob::IMAGELEN_LIMIT;

/// What the maintenance pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Compressed {
    /// The stamp was old: the keybox was copied.
    pub copied: bool,
    /// Blobs dropped (deleted, or ephemeral and older than a day).
    pub dropped: u64,
    /// The copy replaced the keybox.
    pub replaced: bool,
}

/// Blob type byte of a deleted blob, and of the header.
const EMPTY: u8 = 0;
const HEADER: u8 = 1;

impl KeyboxWriter {
    /// The maintenance pass at `now` (Unix seconds). `openpgp`: the
    /// program is gpg (the header's OpenPGP flag is set in the copy).
    ///
    /// # Errors
    /// A system call failed, or a blob's length is out of bounds; the
    /// temporary file is removed.
    pub fn compress(&mut self, now: u32, openpgp: bool) -> Result<Compressed, UpdateError> {
        let store = self.files.paths.store.clone();
        self.files.access(Role::Store, Access::Writable).map_err(failed("write", &store))?;
        let source = match self.files.open(Role::Store, None) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Compressed::default()),
            Err(e) => return Err(UpdateError { what: "read", path: store, error: e }),
        };
        let buffer = self.tally.buffer_size().bytes().max(1);
        let tmp_path = self.files.paths.tmp.clone();
        let mut s = Streams::new(&mut self.files, source, None, buffer);
        let mut out = Compressed::default();
        let result = (|| -> Result<(), (Role, io::Error)> {
            // The quick test: the header's stamp.
            if let Some(first) = next_blob(&mut s, &mut 0, &mut false)? {
                if first.get(4) == Some(&HEADER) && first.len() >= 24 {
                    let stamp = u32::from_be_bytes([first[20], first[21], first[22], first[23]]);
                    if u64::from(stamp) + 3 * 3600 > u64::from(now) {
                        return Ok(());
                    }
                }
                s.seek_to(0)?;
            }
            out.copied = true;
            let tmp = s.files().open(Role::Tmp, Some(WriteMode::Truncate(0o664))).map_err(|e| (Role::Tmp, e))?;
            s.set_target(tmp);
            let cut = now.saturating_sub(86_400);
            let (mut at, mut first) = (0u64, true);
            loop {
                let mut skipped = false;
                let Some(mut blob) = next_blob(&mut s, &mut at, &mut skipped)? else { break };
                out.dropped += u64::from(skipped);
                if std::mem::take(&mut first) {
                    if blob.get(4) == Some(&HEADER) && blob.len() >= 24 {
                        blob[20..24].copy_from_slice(&now.to_be_bytes());
                        if openpgp {
                            blob[7] |= 0x02;
                        }
                        s.put(&blob)?;
                        continue;
                    }
                    // No header: one is written first (a change).
                    s.put(&crate::kbx::encode::encode_header(&crate::kbx::encode::HeaderSpec {
                        openpgp,
                        created_at: now,
                        last_maintenance: now,
                    }))?;
                    out.dropped += 1;
                } else if blob.get(4) == Some(&HEADER) {
                    out.dropped += 1;
                    continue;
                }
                if is_old_ephemeral(&blob, cut) {
                    out.dropped += 1;
                    continue;
                }
                s.put(&blob)?;
            }
            Ok(())
        })();
        let closed = s.close();
        if let Err((role, e)) = result.and(closed) {
            if out.copied {
                let _ = self.files.unlink(Role::Tmp);
            }
            let path = if role == Role::Tmp { tmp_path } else { store };
            return Err(UpdateError { what: "compress", path, error: e });
        }
        if !out.copied {
            return Ok(out);
        }
        if out.dropped == 0 {
            self.files.unlink(Role::Tmp).map_err(failed("remove", &tmp_path))?;
        } else {
            self.files.rename(Role::Store, Role::Backup).map_err(failed("rename", &store))?;
            self.files.rename(Role::Tmp, Role::Store).map_err(failed("rename", &tmp_path))?;
            out.replaced = true;
            if !self.files.paths.reads_in_place() {
                // The replay reads its private keybox from now on.
                self.moved = true;
                self.tally.rebase_watch();
            }
        }
        Ok(out)
    }
}

/// The next blob that is not deleted (`_keybox_read_blob`): its 4-byte
/// length and type read, a deleted one passed over with an `lseek`
/// (`skipped` set); `None` at the end of the file. `at` is the position.
fn next_blob(s: &mut Streams<'_>, at: &mut u64, skipped: &mut bool) -> Result<Option<Vec<u8>>, (Role, io::Error)> {
    loop {
        let mut head = [0u8; 5];
        let n = s.fill(&mut head)?;
        if n == 0 {
            return Ok(None);
        }
        let bad =
            |why: &str| (Role::Store, io::Error::new(io::ErrorKind::InvalidData, format!("byte offset {at}: {why}")));
        if n < 5 {
            return Err(bad("a blob is cut short"));
        }
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        if len < 5 {
            return Err(bad("a blob shorter than 5 bytes"));
        }
        if head[4] == EMPTY || len > IMAGELEN_LIMIT {
            if len > IMAGELEN_LIMIT {
                return Err(bad("a blob larger than GnuPG's limit"));
            }
            *at += u64::from(len);
            s.seek_to(*at)?;
            *skipped = true;
            continue;
        }
        let mut blob = vec![0u8; len as usize];
        blob[..5].copy_from_slice(&head);
        if s.fill(&mut blob[5..])? < blob.len() - 5 {
            return Err(bad("a blob is cut short"));
        }
        *at += u64::from(len);
        return Ok(Some(blob));
    }
}

/// An ephemeral blob (flags bit 1) made before `cut`.
fn is_old_ephemeral(blob: &[u8], cut: u32) -> bool {
    match crate::kbx::parse_blob(blob) {
        Ok(crate::kbx::Blob::Key(k)) => k.is_ephemeral() && k.created_at != 0 && k.created_at < cut,
        _ => false,
    }
}
