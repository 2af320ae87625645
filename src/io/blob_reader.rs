//! Reading one blob at a time, the way GnuPG's `_keybox_read_blob` does:
//! the one blob reader every pass and every lookup goes through.
//!
//! Each call reads the 5-byte prefix (length and type) as one logical
//! read, then:
//! * type 0 (deleted): skips the rest with a relative seek and reports it;
//! * a length over 5 MiB: skips it the same way and reports it;
//! * otherwise does with the remaining `length − 5` bytes what the caller's
//!   policy says for the blob's type ([`Take`]): copy them into the
//!   caller's buffer (one logical read; the buffer is reused from blob to
//!   blob), consume them with the same system calls but no copy, or pass
//!   over them unread.
//!
//! Invariants: the length is checked against the 5 MiB cap *before*
//! anything is allocated, so memory stays bounded by one blob plus the
//! read buffer; a blob that is skipped or passed over must still end
//! inside the file as it was at open (GnuPG would seek past the end and
//! call it the end of the keybox; kbxscope reports it).

use std::io;

use super::buffered::BufferedReader;
use super::raw_read::RawRead;
use crate::kbx::blob::{key_table_len, read_prefix, BlobType, BLOB_PREFIX_LEN, IMAGELEN_LIMIT, KEY_TABLE_OFFSET};

/// A trace span for reading one blob (target `kbx::blob`).
pub(super) fn blob_span(offset: u64) -> tracing::Span {
    tracing::info_span!(target: "kbx::blob", "blob", offset)
}

/// What the next position of the file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// A blob, now complete in the caller's buffer.
    Blob {
        /// File offset of the blob's first byte.
        offset: u64,
    },
    /// A deleted blob (type 0), skipped.
    Deleted {
        /// File offset of the blob.
        offset: u64,
        /// Its length field.
        length: u32,
    },
    /// A blob longer than 5 MiB, skipped as GnuPG skips it.
    TooLarge {
        /// File offset of the blob.
        offset: u64,
        /// Its length field.
        length: u32,
    },
    /// A blob the caller's policy did not copy: consumed or passed over
    /// ([`Take`]).
    Passed {
        /// File offset of the blob.
        offset: u64,
        /// Its type.
        blob_type: BlobType,
    },
    /// The end of the file, at a blob boundary.
    Eof,
}

/// A blob that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadBlobError {
    /// The system failed a read or seek.
    #[error("read error: {source}")]
    Io {
        /// File offset of the blob.
        offset: u64,
        /// The system's error.
        source: io::Error,
    },
    /// The file ends inside the 5-byte length and type prefix.
    #[error("the file ends after {got} byte(s) of a blob's 5-byte length and type")]
    TruncatedPrefix {
        /// File offset of the blob.
        offset: u64,
        /// Bytes present.
        got: usize,
    },
    /// The length field is below 5.
    #[error("length field {length} is shorter than the 5-byte length and type")]
    LengthTooShort {
        /// File offset of the blob.
        offset: u64,
        /// The length field.
        length: u32,
    },
    /// The file ends inside a blob.
    #[error("blob of {length} bytes is truncated: the file ends after {got} of them")]
    Truncated {
        /// File offset of the blob.
        offset: u64,
        /// The length field.
        length: u32,
        /// Bytes present.
        got: u64,
    },
}

impl ReadBlobError {
    /// File offset of the blob concerned.
    pub fn offset(&self) -> u64 {
        match self {
            Self::Io { offset, .. }
            | Self::TruncatedPrefix { offset, .. }
            | Self::LengthTooShort { offset, .. }
            | Self::Truncated { offset, .. } => *offset,
        }
    }
}

/// What to do with a blob's body once its type is known.
#[derive(Clone, Copy)]
pub(crate) enum Take<'a> {
    /// Read it into the caller's buffer ([`Next::Blob`]).
    Copy,
    /// Read it with exactly the system calls a copy would make, without
    /// copying it anywhere ([`Next::Passed`]): GnuPG reads every blob of
    /// a search completely, whatever its type.
    Consume,
    /// Pass over it the cheapest way: from the buffer, or with one
    /// `lseek(2)` when it reaches far beyond it ([`Next::Passed`]; see
    /// [`BufferedReader::pass_over`]).
    PassOver,
    /// Read the blob's header and key table into the caller's buffer, show
    /// them to the predicate, then copy the rest if it says yes
    /// ([`Next::Blob`]) or consume it ([`Next::Passed`]): a search for a
    /// key copies only the blob that has it, with the same system calls.
    CopyIf(&'a dyn Fn(&[u8]) -> bool),
}

impl Take<'_> {
    /// Copy every blob (the tests' policy).
    #[cfg(test)]
    pub(crate) fn all(_: BlobType) -> Take<'static> {
        Take::Copy
    }
}

/// Read the blob at the current position. Deleted and over-long blobs
/// are skipped; for any other blob `policy` says, by its type, whether it
/// is copied into `image` (cleared first; it then holds exactly the blob),
/// consumed or passed over.
///
/// # Errors
/// [`ReadBlobError`] for truncated or malformed framing and system errors.
pub(crate) fn read_blob<'a, F: RawRead>(
    r: &mut BufferedReader<F>,
    image: &mut Vec<u8>,
    policy: impl FnOnce(BlobType) -> Take<'a>,
) -> Result<Next, ReadBlobError> {
    let offset = r.position();
    // No blob span for the read that finds the end of the file (at or past
    // the size the file had at open): that read belongs to the pass.
    let span = (r.traces_blobs() && offset < r.limit()).then(|| blob_span(offset));
    let _in = span.as_ref().map(tracing::Span::enter);
    let io = |source| ReadBlobError::Io { offset, source };
    let mut prefix = [0u8; BLOB_PREFIX_LEN];
    let got = r.read(&mut prefix).map_err(io)?;
    if got == 0 {
        return Ok(Next::Eof);
    }
    let Some((length, ty)) = read_prefix(&prefix[..got]) else {
        return Err(ReadBlobError::TruncatedPrefix { offset, got });
    };
    if (length as usize) < BLOB_PREFIX_LEN {
        return Err(ReadBlobError::LengthTooShort { offset, length });
    }
    let rest = u64::from(length) - BLOB_PREFIX_LEN as u64;
    let take = if ty == BlobType::Empty || length > IMAGELEN_LIMIT { Take::PassOver } else { policy(ty) };
    // A blob that is skipped, not read, must still end inside the file:
    // GnuPG would seek past the end and call it the end of the keybox.
    if matches!(take, Take::PassOver) && offset.saturating_add(u64::from(length)) > r.limit() {
        return Err(ReadBlobError::Truncated { offset, length, got: r.limit() - offset });
    }
    if ty == BlobType::Empty {
        r.skip(rest).map_err(io)?;
        return Ok(Next::Deleted { offset, length });
    }
    if length > IMAGELEN_LIMIT {
        r.skip(rest).map_err(io)?;
        return Ok(Next::TooLarge { offset, length });
    }
    let truncated = |got: usize| ReadBlobError::Truncated { offset, length, got: got as u64 };
    image.clear();
    image.extend_from_slice(&prefix);
    match take {
        Take::Consume | Take::PassOver => {
            // A passed-over blob ends inside the file as it was at open
            // (checked above); a file cut short since then shows here.
            let consume = matches!(take, Take::Consume);
            let done = if consume { r.consume(rest) } else { r.pass_over(rest) }.map_err(io)?;
            if done < rest {
                return Err(ReadBlobError::Truncated { offset, length, got: BLOB_PREFIX_LEN as u64 + done });
            }
            if consume {
                r.count_blob(ty);
            }
            return Ok(Next::Passed { offset, blob_type: ty });
        }
        Take::CopyIf(wanted) => {
            // The header up to the key table, then the key table.
            let head = (rest as usize).min(KEY_TABLE_OFFSET - BLOB_PREFIX_LEN);
            image.resize(BLOB_PREFIX_LEN + head, 0);
            let got = r.read(&mut image[BLOB_PREFIX_LEN..]).map_err(io)?;
            if got < head {
                return Err(truncated(BLOB_PREFIX_LEN + got));
            }
            let table = key_table_len(image).min(rest as usize - head);
            image.resize(BLOB_PREFIX_LEN + head + table, 0);
            let got = r.read(&mut image[BLOB_PREFIX_LEN + head..]).map_err(io)?;
            if got < table {
                return Err(truncated(BLOB_PREFIX_LEN + head + got));
            }
            r.count_blob(ty);
            if !wanted(image) {
                let left = rest - (head + table) as u64;
                let done = r.consume(left).map_err(io)?;
                if done < left {
                    return Err(truncated(image.len() + done as usize));
                }
                return Ok(Next::Passed { offset, blob_type: ty });
            }
        }
        Take::Copy => r.count_blob(ty),
    }
    let start = image.len();
    let body = r.read_append(image, length as usize - start).map_err(io)?;
    if start + body < length as usize {
        return Err(truncated(start + body));
    }
    Ok(Next::Blob { offset })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::BufferSize;
    use std::io::Cursor;

    fn blob(len: u32, ty: u8) -> Vec<u8> {
        let mut b = vec![0xAAu8; len as usize];
        b[..4].copy_from_slice(&len.to_be_bytes());
        b[4] = ty;
        b
    }

    fn only_x509(ty: BlobType) -> Take<'static> {
        if ty == BlobType::X509 {
            Take::Copy
        } else {
            Take::PassOver
        }
    }

    fn reader(bytes: Vec<u8>) -> BufferedReader<Cursor<Vec<u8>>> {
        BufferedReader::new(Cursor::new(bytes), BufferSize::Bytes(64))
    }

    #[test]
    fn walks_blobs_and_skips_deleted() {
        let file = [blob(32, 1), blob(40, 0), blob(100, 2)].concat();
        let mut r = reader(file);
        let mut img = Vec::new();
        assert_eq!(read_blob(&mut r, &mut img, Take::all).unwrap(), Next::Blob { offset: 0 });
        assert_eq!(img.len(), 32);
        assert_eq!(read_blob(&mut r, &mut img, Take::all).unwrap(), Next::Deleted { offset: 32, length: 40 });
        assert_eq!(read_blob(&mut r, &mut img, Take::all).unwrap(), Next::Blob { offset: 72 });
        assert_eq!(img, blob(100, 2));
        assert_eq!(read_blob(&mut r, &mut img, Take::all).unwrap(), Next::Eof);
    }

    #[test]
    fn skips_over_limit_without_allocating() {
        let mut file = (IMAGELEN_LIMIT + 1).to_be_bytes().to_vec();
        file.push(2);
        let mut r = reader(file);
        let mut img = Vec::new();
        assert_eq!(
            read_blob(&mut r, &mut img, Take::all).unwrap(),
            Next::TooLarge { offset: 0, length: IMAGELEN_LIMIT + 1 }
        );
        assert!(img.capacity() < 1024);
        assert_eq!(read_blob(&mut r, &mut img, Take::all).unwrap(), Next::Eof);
    }

    #[test]
    fn passes_over_other_types_without_copying() {
        // Buffer of 64: the 1000-byte OpenPGP blob reaches far beyond it
        // (one lseek), the 40-byte one is consumed from reads the scan
        // makes anyway (no seek).
        let file = [blob(32, 1), blob(1000, 2), blob(100, 3), blob(40, 2), blob(100, 3)].concat();
        let mut r = reader(file.clone());
        let mut img = Vec::new();
        assert_eq!(
            read_blob(&mut r, &mut img, only_x509).unwrap(),
            Next::Passed { offset: 0, blob_type: BlobType::Header }
        );
        assert_eq!(
            read_blob(&mut r, &mut img, only_x509).unwrap(),
            Next::Passed { offset: 32, blob_type: BlobType::OpenPgp }
        );
        assert_eq!(r.stats().events.seek, 1);
        assert_eq!(read_blob(&mut r, &mut img, only_x509).unwrap(), Next::Blob { offset: 1032 });
        assert_eq!(img, blob(100, 3));
        assert_eq!(
            read_blob(&mut r, &mut img, only_x509).unwrap(),
            Next::Passed { offset: 1132, blob_type: BlobType::OpenPgp }
        );
        assert_eq!(read_blob(&mut r, &mut img, only_x509).unwrap(), Next::Blob { offset: 1172 });
        assert_eq!(read_blob(&mut r, &mut img, only_x509).unwrap(), Next::Eof);
        let s = r.stats();
        assert_eq!(s.events.seek, 1);
        assert!(s.bytes_read < file.len() as u64 - 900, "{} bytes read", s.bytes_read);
        // Never more system calls than reading everything.
        let mut all = reader(file);
        while read_blob(&mut all, &mut img, Take::all).unwrap() != Next::Eof {}
        assert!(s.events.total() <= all.stats().events.total(), "{:?} vs {:?}", s.events, all.stats().events);
    }

    #[test]
    fn a_passed_over_blob_must_end_inside_the_file() {
        let mut file = [blob(100, 3), blob(1000, 2)].concat();
        file.truncate(700);
        let mut img = Vec::new();
        for size in [BufferSize::Bytes(64), BufferSize::Bytes(4096), BufferSize::Unbuffered] {
            // A keybox handle's limit is the file's size at open.
            let mut r = BufferedReader::new(Cursor::new(file.clone()), size).with_limit(file.len() as u64);
            assert_eq!(read_blob(&mut r, &mut img, only_x509).unwrap(), Next::Blob { offset: 0 });
            let e = read_blob(&mut r, &mut img, only_x509).unwrap_err();
            assert!(matches!(e, ReadBlobError::Truncated { offset: 100, length: 1000, got: 600 }), "{size}: {e:?}");
        }
    }

    /// `CopyIf` shows the header and key table, copies only the wanted
    /// blob and makes exactly the system calls of copying every blob.
    #[test]
    fn copy_if_copies_only_what_the_key_table_wants() {
        let mut key = blob(300, 2);
        key[16..20].copy_from_slice(&[0, 1, 0, 28]); // one key-table entry of 28 bytes
        let mut other = key.clone();
        key[20] = 0x42;
        other[20] = 0x17;
        let file = [blob(32, 1), other.clone(), key.clone(), blob(100, 3)].concat();
        let mut img = Vec::new();
        let mut all = reader(file.clone());
        while read_blob(&mut all, &mut img, Take::all).unwrap() != Next::Eof {}
        let seen = std::cell::RefCell::new(Vec::new());
        let wanted = |head: &[u8]| {
            seen.borrow_mut().push(head.len());
            head[20] == 0x42
        };
        let mut r = reader(file);
        let policy = |ty| if ty == BlobType::OpenPgp { Take::CopyIf(&wanted) } else { Take::Consume };
        let header = Next::Passed { offset: 0, blob_type: BlobType::Header };
        assert_eq!(read_blob(&mut r, &mut img, policy).unwrap(), header);
        let other_at = Next::Passed { offset: 32, blob_type: BlobType::OpenPgp };
        assert_eq!(read_blob(&mut r, &mut img, policy).unwrap(), other_at);
        assert_eq!(read_blob(&mut r, &mut img, policy).unwrap(), Next::Blob { offset: 332 });
        assert_eq!(img, key);
        assert_eq!(
            read_blob(&mut r, &mut img, policy).unwrap(),
            Next::Passed { offset: 632, blob_type: BlobType::X509 }
        );
        assert_eq!(read_blob(&mut r, &mut img, policy).unwrap(), Next::Eof);
        assert_eq!(*seen.borrow(), [48, 48], "header and one 28-byte entry, for each OpenPGP blob");
        assert_eq!(r.stats().events, all.stats().events);
    }

    #[test]
    fn framing_errors() {
        let mut img = Vec::new();
        let e = read_blob(&mut reader(vec![0, 0, 1]), &mut img, Take::all).unwrap_err();
        assert!(matches!(e, ReadBlobError::TruncatedPrefix { offset: 0, got: 3 }));
        let e = read_blob(&mut reader(vec![0, 0, 0, 4, 2]), &mut img, Take::all).unwrap_err();
        assert!(matches!(e, ReadBlobError::LengthTooShort { length: 4, .. }));
        let mut file = blob(100, 2);
        file.truncate(60);
        let e = read_blob(&mut reader(file), &mut img, Take::all).unwrap_err();
        assert!(matches!(e, ReadBlobError::Truncated { length: 100, got: 60, .. }));
    }
}
