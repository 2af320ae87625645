//! Decoding one blob from a byte slice (no I/O).
//!
//! [`parse_blob`] takes the complete image of one blob (exactly as many
//! bytes as its length field says) and bounds-checks every length, table
//! and offset before anything is handed out. Once a [`KeyBlob`] exists,
//! every accessor is infallible: the tables were validated up front.
//!
//! Layout reference: the top comment of GnuPG's `kbx/keybox-blob.c`.

use super::error::{ParseError, ParseErrorKind};

/// Bytes of the common blob prefix: u32 length and u8 type.
pub const BLOB_PREFIX_LEN: usize = 5;
/// GnuPG's `IMAGELEN_LIMIT`: blobs longer than this (5 MiB) are skipped.
pub const IMAGELEN_LIMIT: u32 = 5 * 1024 * 1024;
/// Size of a header blob as GnuPG writes it.
pub const HEADER_BLOB_LEN: usize = 32;
/// Offset of the key table in a key blob.
pub const KEY_TABLE_OFFSET: usize = 20;

/// Bytes of the key table a key blob's header announces (keys × entry
/// size), given at least the blob's first [`KEY_TABLE_OFFSET`] bytes; 0
/// when `head` is too short to say. Not checked against the blob's
/// length: callers cap it.
#[inline]
pub fn key_table_len(head: &[u8]) -> usize {
    if head.len() < KEY_TABLE_OFFSET {
        return 0;
    }
    let keys = usize::from(u16::from_be_bytes([head[16], head[17]]));
    let size = usize::from(u16::from_be_bytes([head[18], head[19]]));
    keys * size
}

/// The blob flags of a blob head (bytes 6–7), 0 when `head` is too short.
pub fn head_flags(head: &[u8]) -> u16 {
    head.get(6..8).map_or(0, |f| u16::from_be_bytes([f[0], f[1]]))
}

/// Whether a blob head carries [`BLOB_FLAG_EPHEMERAL`].
pub fn head_is_ephemeral(head: &[u8]) -> bool {
    head_flags(head) & BLOB_FLAG_EPHEMERAL != 0
}

/// The fingerprints of a blob's key table, read from `head` (the blob up
/// to the end of its key table, [`key_table_len`]) the way GnuPG's keybox
/// search reads them: version 1 entries hold 20 bytes, version 2 entries
/// 32 when their flags (bytes 32–33, bit 0x80) say so. Entries too small
/// to hold one are left out (the full parse rejects such a blob).
pub fn key_table_fingerprints(head: &[u8]) -> impl Iterator<Item = &[u8]> {
    let version = head.get(5).copied().unwrap_or(0);
    let size = if head.len() >= KEY_TABLE_OFFSET { usize::from(u16::from_be_bytes([head[18], head[19]])) } else { 0 };
    let keys = head.len().saturating_sub(KEY_TABLE_OFFSET).checked_div(size).unwrap_or(0);
    (0..keys).filter_map(move |i| {
        let e = &head[KEY_TABLE_OFFSET + i * size..KEY_TABLE_OFFSET + (i + 1) * size];
        match version {
            1 if size >= 28 => Some(&e[..20]),
            v if v >= 2 && size >= 36 => {
                Some(if u16::from_be_bytes([e[32], e[33]]) & 0x80 != 0 { &e[..32] } else { &e[..20] })
            }
            _ => None,
        }
    })
}

/// Blob flag bit: secret key material (never set by GnuPG).
pub const BLOB_FLAG_SECRET: u16 = 1;
/// Blob flag bit: ephemeral (imported only for a validation, not "really" there).
pub const BLOB_FLAG_EPHEMERAL: u16 = 2;

/// The type byte at offset 4 of every blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlobType {
    /// Type 0: a deleted blob.
    Empty,
    /// Type 1: the file header.
    Header,
    /// Type 2: an OpenPGP keyblock.
    OpenPgp,
    /// Type 3: an X.509 certificate.
    X509,
    /// Any other type byte.
    Unknown(u8),
}

impl BlobType {
    /// Classify a type byte.
    #[inline]
    pub fn from_byte(b: u8) -> Self {
        match b {
            0 => Self::Empty,
            1 => Self::Header,
            2 => Self::OpenPgp,
            3 => Self::X509,
            other => Self::Unknown(other),
        }
    }

    /// A short lowercase name (`empty`, `header`, `openpgp`, `x509`, `unknown`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::Header => "header",
            Self::OpenPgp => "openpgp",
            Self::X509 => "x509",
            Self::Unknown(_) => "unknown",
        }
    }
}

/// A decoded header blob (type 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderBlob {
    /// Header version (GnuPG writes 1).
    pub version: u8,
    /// Header flags; bit 1 (0x0002) means "used for OpenPGP".
    pub flags: u16,
    /// The four magic bytes; GnuPG writes `KBXf`.
    pub magic: [u8; 4],
    /// File creation time (Unix seconds).
    pub created_at: u32,
    /// Time of the last maintenance run (Unix seconds).
    pub last_maintenance: u32,
}

impl HeaderBlob {
    /// Whether the magic is `KBXf`.
    pub fn magic_ok(&self) -> bool {
        &self.magic == b"KBXf"
    }
}

/// Any decoded blob.
#[derive(Debug, Clone)]
pub enum Blob<'a> {
    /// A header blob.
    Header(HeaderBlob),
    /// An OpenPGP or X.509 blob.
    Key(KeyBlob<'a>),
    /// A deleted blob (type 0); its contents are meaningless.
    Empty,
    /// A blob of a type this parser does not know.
    Unknown(u8),
}

/// Read big-endian integers with bounds checks and blob-relative offsets.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ParseError> {
        let have = self.b.len().saturating_sub(self.pos);
        if n > have {
            return Err(ParseError { offset: self.pos, kind: ParseErrorKind::TooShort { what, need: n, have } });
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    #[inline]
    fn u8(&mut self, what: &'static str) -> Result<u8, ParseError> {
        Ok(self.take(1, what)?[0])
    }
    #[inline]
    fn u16(&mut self, what: &'static str) -> Result<u16, ParseError> {
        let s = self.take(2, what)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    #[inline]
    fn u32(&mut self, what: &'static str) -> Result<u32, ParseError> {
        let s = self.take(4, what)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
}

#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Check that `start..start+len` lies inside a blob of `blob_len` bytes.
#[inline]
fn check_range(
    what: impl FnOnce() -> String,
    at: usize,
    start: u64,
    len: u64,
    blob_len: usize,
) -> Result<(), ParseError> {
    if start.checked_add(len).is_none_or(|end| end > blob_len as u64) {
        return Err(ParseError {
            offset: at,
            kind: ParseErrorKind::RangeOutOfBounds { what: what(), start, len, blob_len },
        });
    }
    Ok(())
}

/// Read the length field and type byte of a blob prefix.
///
/// Returns `None` when fewer than [`BLOB_PREFIX_LEN`] bytes are given.
#[inline]
pub fn read_prefix(b: &[u8]) -> Option<(u32, BlobType)> {
    if b.len() < BLOB_PREFIX_LEN {
        return None;
    }
    Some((be32(b, 0), BlobType::from_byte(b[4])))
}

/// Decode the complete image of one blob.
///
/// `image` must hold exactly the number of bytes given by the blob's
/// length field.
///
/// # Errors
/// A [`ParseError`] naming the first structure that is inconsistent, with
/// its offset inside the blob.
pub fn parse_blob(image: &[u8]) -> Result<Blob<'_>, ParseError> {
    let mut r = Reader { b: image, pos: 0 };
    let length = r.u32("length field")?;
    let ty = BlobType::from_byte(r.u8("type byte")?);
    if length as usize != image.len() {
        return Err(ParseError {
            offset: 0,
            kind: ParseErrorKind::LengthMismatch { field: length, have: image.len() },
        });
    }
    match ty {
        BlobType::Empty => Ok(Blob::Empty),
        BlobType::Unknown(t) => Ok(Blob::Unknown(t)),
        BlobType::Header => parse_header(&mut r).map(Blob::Header),
        BlobType::OpenPgp | BlobType::X509 => parse_key_blob(image, ty).map(Blob::Key),
    }
}

fn parse_header(r: &mut Reader<'_>) -> Result<HeaderBlob, ParseError> {
    if r.b.len() < HEADER_BLOB_LEN {
        return Err(ParseError {
            offset: r.b.len(),
            kind: ParseErrorKind::TooShort { what: "header blob", need: HEADER_BLOB_LEN, have: r.b.len() },
        });
    }
    let version = r.u8("header version")?;
    let flags = r.u16("header flags")?;
    let magic = r.take(4, "magic")?;
    let _rfu = r.u32("reserved")?;
    let created_at = r.u32("created-at")?;
    let last_maintenance = r.u32("last-maint")?;
    Ok(HeaderBlob { version, flags, magic: [magic[0], magic[1], magic[2], magic[3]], created_at, last_maintenance })
}

/// An OpenPGP (type 2) or X.509 (type 3) blob, validated.
///
/// Holds the blob's bytes and the positions of its tables; accessors read
/// from the bytes on demand, so decoding allocates nothing.
#[derive(Debug, Clone)]
pub struct KeyBlob<'a> {
    image: &'a [u8],
    /// [`BlobType::OpenPgp`] or [`BlobType::X509`].
    pub blob_type: BlobType,
    /// Blob version: 1 (20-byte fingerprints) or 2 (32-byte slots).
    pub version: u8,
    /// Blob flags (bit 0 secret, bit 1 ephemeral).
    pub flags: u16,
    /// Offset of the keyblock or certificate image inside the blob.
    pub data_offset: u32,
    /// Length of that image.
    pub data_length: u32,
    key_count: u16,
    keyinfo_size: u16,
    serial: (usize, usize),
    uid_count: u16,
    uidinfo_size: u16,
    uid_table: usize,
    sig_count: u16,
    siginfo_size: u16,
    sig_table: usize,
    /// Ownertrust byte (unused by GnuPG; 0).
    pub ownertrust: u8,
    /// All-validity byte (X.509: 0x20 = revoked).
    pub all_validity: u8,
    /// Recheck-after time (Unix seconds; 0).
    pub recheck_after: u32,
    /// Latest timestamp in the keyblock (0).
    pub latest_timestamp: u32,
    /// When the blob was created (Unix seconds).
    pub created_at: u32,
    /// Size of the reserved space.
    pub reserved_size: u32,
}

/// One entry of the key table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyInfo<'a> {
    /// The fingerprint: 20 bytes, or 32 for a v5 key in a version-2 blob.
    pub fingerprint: &'a [u8],
    /// The 8-byte key id.
    pub key_id: &'a [u8],
    /// Where a version-1 entry says the key id is (`None` in version 2).
    pub key_id_offset: Option<u32>,
    /// Key flags (bit 0 "qualified"; in version 2, 0x80 = 32-byte fingerprint).
    pub flags: u16,
}

/// One entry of the user-id table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UidInfo<'a> {
    /// Offset of the name inside the blob.
    pub offset: u32,
    /// Length of the name.
    pub length: u32,
    /// Uid flags (unused).
    pub flags: u16,
    /// Validity byte.
    pub validity: u8,
    /// The name's bytes (OpenPGP user id, or an X.509 DN / `<mail>` string).
    pub name: &'a [u8],
}

fn parse_key_blob(image: &[u8], blob_type: BlobType) -> Result<KeyBlob<'_>, ParseError> {
    let blob_len = image.len();
    let mut r = Reader { b: image, pos: BLOB_PREFIX_LEN };
    let version = r.u8("blob version")?;
    let flags = r.u16("blob flags")?;
    let data_offset = r.u32("data offset")?;
    let data_length = r.u32("data length")?;
    let key_count = r.u16("key count")?;
    let keyinfo_size = r.u16("key-info size")?;
    let min_keyinfo: u16 = match version {
        1 => 28,
        2 if blob_type == BlobType::OpenPgp => 56,
        v => return Err(ParseError { offset: 5, kind: ParseErrorKind::UnsupportedVersion(v) }),
    };
    if key_count == 0 {
        return Err(ParseError { offset: 16, kind: ParseErrorKind::NoKeys });
    }
    if blob_type == BlobType::X509 && key_count != 1 {
        return Err(ParseError { offset: 16, kind: ParseErrorKind::X509KeyCount(key_count) });
    }
    if keyinfo_size < min_keyinfo {
        return Err(ParseError {
            offset: 18,
            kind: ParseErrorKind::EntryTooSmall { table: "key-info", size: keyinfo_size, min: min_keyinfo },
        });
    }
    let keys_start = r.pos;
    let keys_len = key_count as usize * keyinfo_size as usize;
    table_fits("key table", keys_start, keys_len, blob_len)?;
    if version == 1 {
        for i in 0..key_count as usize {
            let entry = keys_start + i * keyinfo_size as usize;
            let kid_off = be32(image, entry + 20);
            check_range(|| format!("key id {i}"), entry + 20, kid_off.into(), 8, blob_len)?;
        }
    }
    r.pos = keys_start + keys_len;

    let serial_len = r.u16("serial number length")? as usize;
    let serial_start = r.pos;
    r.take(serial_len, "serial number")?;

    let uid_count = r.u16("uid count")?;
    let uidinfo_size = r.u16("uid-info size")?;
    if uidinfo_size < 12 && uid_count > 0 {
        return Err(ParseError {
            offset: r.pos - 2,
            kind: ParseErrorKind::EntryTooSmall { table: "uid-info", size: uidinfo_size, min: 12 },
        });
    }
    let uid_table = r.pos;
    let uids_len = uid_count as usize * uidinfo_size as usize;
    table_fits("uid table", uid_table, uids_len, blob_len)?;
    for i in 0..uid_count as usize {
        let entry = uid_table + i * uidinfo_size as usize;
        let (off, len) = (be32(image, entry), be32(image, entry + 4));
        check_range(|| format!("user id {i}"), entry, off.into(), len.into(), blob_len)?;
    }
    r.pos = uid_table + uids_len;

    let sig_count = r.u16("signature count")?;
    let siginfo_size = r.u16("sig-info size")?;
    if siginfo_size < 4 && sig_count > 0 {
        return Err(ParseError {
            offset: r.pos - 2,
            kind: ParseErrorKind::EntryTooSmall { table: "sig-info", size: siginfo_size, min: 4 },
        });
    }
    let sig_table = r.pos;
    let sigs_len = sig_count as usize * siginfo_size as usize;
    table_fits("signature table", sig_table, sigs_len, blob_len)?;
    r.pos = sig_table + sigs_len;

    let ownertrust = r.u8("ownertrust")?;
    let all_validity = r.u8("all-validity")?;
    let _rfu = r.u16("reserved")?;
    let recheck_after = r.u32("recheck-after")?;
    let latest_timestamp = r.u32("latest timestamp")?;
    let created_at = r.u32("created-at")?;
    let reserved_size = r.u32("reserved-space size")?;
    r.take(reserved_size as usize, "reserved space")?;
    check_range(|| "data".to_string(), 8, data_offset.into(), data_length.into(), blob_len)?;

    Ok(KeyBlob {
        image,
        blob_type,
        version,
        flags,
        data_offset,
        data_length,
        key_count,
        keyinfo_size,
        serial: (serial_start, serial_len),
        uid_count,
        uidinfo_size,
        uid_table,
        sig_count,
        siginfo_size,
        sig_table,
        ownertrust,
        all_validity,
        recheck_after,
        latest_timestamp,
        created_at,
        reserved_size,
    })
}

#[inline]
fn table_fits(table: &'static str, start: usize, len: usize, blob_len: usize) -> Result<(), ParseError> {
    let end = start + len; // both < 2^16 * 2^16 + blob_len: no overflow on 64-bit
    if end > blob_len {
        return Err(ParseError { offset: start, kind: ParseErrorKind::TableOutOfBounds { table, end, blob_len } });
    }
    Ok(())
}

impl<'a> KeyBlob<'a> {
    /// The whole blob image.
    pub fn image(&self) -> &'a [u8] {
        self.image
    }

    /// The keyblock (OpenPGP) or DER certificate (X.509).
    pub fn data(&self) -> &'a [u8] {
        let start = self.data_offset as usize;
        &self.image[start..start + self.data_length as usize]
    }

    /// Number of keys in the key table.
    pub fn key_count(&self) -> usize {
        self.key_count as usize
    }

    /// Size of one key-info entry.
    pub fn keyinfo_size(&self) -> u16 {
        self.keyinfo_size
    }

    /// Key-info entry `i` (panics if `i >= key_count()`).
    pub fn key(&self, i: usize) -> KeyInfo<'a> {
        assert!(i < self.key_count(), "key index out of range");
        let entry = KEY_TABLE_OFFSET + i * self.keyinfo_size as usize;
        let img = self.image;
        if self.version == 1 {
            let kid_off = be32(img, entry + 20);
            KeyInfo {
                fingerprint: &img[entry..entry + 20],
                key_id: &img[kid_off as usize..kid_off as usize + 8],
                key_id_offset: Some(kid_off),
                flags: be16(img, entry + 24),
            }
        } else {
            let flags = be16(img, entry + 32);
            let (fingerprint, key_id) = if flags & 0x80 != 0 {
                (&img[entry..entry + 32], &img[entry..entry + 8])
            } else {
                (&img[entry..entry + 20], &img[entry + 12..entry + 20])
            };
            KeyInfo { fingerprint, key_id, key_id_offset: None, flags }
        }
    }

    /// All key-info entries, primary key first.
    pub fn keys(&self) -> impl Iterator<Item = KeyInfo<'a>> + '_ {
        (0..self.key_count()).map(|i| self.key(i))
    }

    /// The X.509 serial number as stored (empty for OpenPGP).
    #[inline]
    pub fn serial(&self) -> &'a [u8] {
        &self.image[self.serial.0..self.serial.0 + self.serial.1]
    }

    /// Number of user-id entries.
    #[inline]
    pub fn uid_count(&self) -> usize {
        self.uid_count as usize
    }

    /// Size of one uid-info entry.
    pub fn uidinfo_size(&self) -> u16 {
        self.uidinfo_size
    }

    /// Uid entry `i` (panics if `i >= uid_count()`).
    #[inline]
    pub fn uid(&self, i: usize) -> UidInfo<'a> {
        assert!(i < self.uid_count(), "uid index out of range");
        let entry = self.uid_table + i * self.uidinfo_size as usize;
        let img = self.image;
        let (offset, length) = (be32(img, entry), be32(img, entry + 4));
        UidInfo {
            offset,
            length,
            flags: be16(img, entry + 8),
            validity: img[entry + 10],
            name: &img[offset as usize..offset as usize + length as usize],
        }
    }

    /// All uid entries. For X.509: issuer, subject, then mail addresses
    /// (`<addr>`) and other alternative names.
    pub fn uids(&self) -> impl Iterator<Item = UidInfo<'a>> + '_ {
        (0..self.uid_count()).map(|i| self.uid(i))
    }

    /// Number of signature entries.
    pub fn sig_count(&self) -> usize {
        self.sig_count as usize
    }

    /// Size of one sig-info entry.
    pub fn siginfo_size(&self) -> u16 {
        self.siginfo_size
    }

    /// The signature "expiration" values (0 = not checked).
    pub fn sig_expirations(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.sig_count()).map(|i| be32(self.image, self.sig_table + i * self.siginfo_size as usize))
    }

    /// Whether the ephemeral flag is set.
    #[inline]
    pub fn is_ephemeral(&self) -> bool {
        self.flags & BLOB_FLAG_EPHEMERAL != 0
    }

    /// For X.509: the issuer DN as GnuPG stored it (uid 0).
    #[inline]
    pub fn x509_issuer(&self) -> Option<&'a [u8]> {
        (self.blob_type == BlobType::X509 && self.uid_count() > 0).then(|| self.uid(0).name)
    }

    /// For X.509: the subject DN as GnuPG stored it (uid 1).
    #[inline]
    pub fn x509_subject(&self) -> Option<&'a [u8]> {
        (self.blob_type == BlobType::X509 && self.uid_count() > 1).then(|| self.uid(1).name)
    }

    /// Bytes after the data image (normally the 20-byte checksum).
    pub fn unhashed_len(&self) -> usize {
        self.image.len() - self.data_offset as usize - self.data_length as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::dump_blob;
    use crate::search::Pattern;
    use crate::stats::KbxStats;
    use proptest::prelude::*;

    const MIXED: &[u8] = include_bytes!("../../../tests/fixtures/gnupg-mixed.kbx");

    /// The blobs of the mixed fixture.
    fn fixture_blobs() -> Vec<&'static [u8]> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < MIXED.len() {
            let len = be32(MIXED, at) as usize;
            out.push(&MIXED[at..at + len]);
            at += len;
        }
        out
    }

    #[test]
    fn decodes_gnupg_blobs() {
        let blobs = fixture_blobs();
        let Blob::Header(h) = parse_blob(blobs[0]).unwrap() else { panic!("blob 0 is not a header") };
        assert!(h.magic_ok());
        assert_eq!((h.version, h.flags), (1, 2));
        let Blob::Key(cert) = parse_blob(blobs[1]).unwrap() else { panic!("blob 1 is not a key blob") };
        assert_eq!(cert.blob_type, BlobType::X509);
        assert_eq!(cert.key_count(), 1);
        assert_eq!(cert.x509_subject().unwrap(), b"CN=Alpha Trust Issuing CA 1-3,O=Alpha Trust,C=DE");
        assert_eq!(cert.serial().len(), 20);
        assert_eq!(cert.unhashed_len(), 20);
        assert_eq!(cert.data()[0], 0x30, "DER SEQUENCE");
        let Blob::Key(pgp) = parse_blob(blobs[2]).unwrap() else { panic!("blob 2 is not a key blob") };
        assert_eq!(pgp.blob_type, BlobType::OpenPgp);
        assert_eq!(pgp.key_count(), 2);
        assert_eq!(pgp.key(0).key_id_offset, Some(32));
        assert_eq!(pgp.key(0).key_id, &pgp.key(0).fingerprint[12..]);
        assert_eq!(pgp.uid(0).name, "Dieter Núñez <greta.weiss10008@bar.example>".as_bytes());
    }

    #[test]
    fn length_field_must_match() {
        let mut b = fixture_blobs()[1].to_vec();
        b.push(0);
        assert!(matches!(parse_blob(&b).unwrap_err().kind, ParseErrorKind::LengthMismatch { .. }));
    }

    fn check_no_panic(bytes: &[u8]) {
        let mut stats = KbxStats::default();
        stats.record_blob(bytes);
        let _ = dump_blob(bytes);
        if let Ok(Blob::Key(k)) = parse_blob(bytes) {
            let _ = k.keys().count() + k.uids().count() + k.sig_expirations().count();
            let _ = (k.data(), k.serial(), k.unhashed_len(), k.x509_issuer(), k.x509_subject());
            for p in ["alice", "<a@b>", "@b", "/CN=x", "#01/CN=y", "0x12345678", "1234567890ABCDEF"] {
                let _ = Pattern::parse(p).unwrap().matches(&k);
            }
            let _ = crate::checksum::verify(bytes, k.unhashed_len());
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            check_no_panic(&bytes);
            // with a consistent length field, so parsing goes deeper
            if bytes.len() >= 5 {
                let mut b = bytes.clone();
                let len = b.len() as u32;
                b[..4].copy_from_slice(&len.to_be_bytes());
                b[4] = 2 + (b[4] & 1);
                check_no_panic(&b);
            }
        }

        #[test]
        fn mutated_gnupg_blobs_never_panic(which in 1usize..45, flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
            let mut b = fixture_blobs()[which].to_vec();
            for (at, v) in flips {
                let i = at.index(b.len());
                // keep the length field mostly intact so the tables get parsed
                if i >= 4 { b[i] = v; }
            }
            check_no_panic(&b);
        }
    }
}
