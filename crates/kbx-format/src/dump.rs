//! One blob as `kbxutil` dumps it (`BEGIN-RECORD` … `END-RECORD` body).
//!
//! [`dump_blob`] reproduces the field names, order, number formats and
//! escaping of GnuPG's `_keybox_dump_blob`, including its quirks (an X.509
//! blob's "Key-Kid" shows the first 8 bytes of the blob). A version-2 blob
//! (GnuPG 2.3+) shows each fingerprint slot's 32 bytes when its key flags
//! have 0x80 set, else its first 20, and no key id lines. Where kbxutil
//! would read outside the blob, this prints
//! `[Error: <field> lies outside the blob]` and stops the record instead.

use super::blob::BlobType;
use super::checksum::{verify, Checksum};

/// A field needed bytes past the end of the blob.
struct OutOfBounds(&'static str);

/// Bounds-checked big-endian reads from the blob.
struct Img<'a>(&'a [u8]);

impl Img<'_> {
    fn bytes(&self, at: u64, n: u64, what: &'static str) -> Result<&[u8], OutOfBounds> {
        let end = at.checked_add(n).ok_or(OutOfBounds(what))?;
        if end > self.0.len() as u64 {
            return Err(OutOfBounds(what));
        }
        Ok(&self.0[at as usize..end as usize])
    }
    fn u8(&self, at: u64, what: &'static str) -> Result<u64, OutOfBounds> {
        Ok(self.bytes(at, 1, what)?[0].into())
    }
    fn u16(&self, at: u64, what: &'static str) -> Result<u64, OutOfBounds> {
        let b = self.bytes(at, 2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]).into())
    }
    fn u32(&self, at: u64, what: &'static str) -> Result<u64, OutOfBounds> {
        let b = self.bytes(at, 4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]).into())
    }
}

/// Render the body of one dump record (without `BEGIN-RECORD`/`END-RECORD`).
///
/// `image` is the complete blob as read from the file. The result is bytes,
/// not a `String`: user ids are copied as stored, like kbxutil does.
pub fn dump_blob(image: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if let Err(OutOfBounds(what)) = dump_into(image, &mut out) {
        out.extend_from_slice(format!("[Error: {what} lies outside the blob]\n").as_bytes());
    }
    out
}

fn line(out: &mut Vec<u8>, s: impl AsRef<str>) {
    out.extend_from_slice(s.as_ref().as_bytes());
}

fn dump_into(image: &[u8], out: &mut Vec<u8>) -> Result<(), OutOfBounds> {
    if image.len() < 32 {
        line(out, "[blob too short]\n");
        return Ok(());
    }
    let mut length = image.len() as u64;
    let n = u32::from_be_bytes([image[0], image[1], image[2], image[3]]) as u64;
    if n > length {
        line(out, "[blob larger than length - output truncated]\n");
    } else {
        length = n;
    }
    let buf = Img(&image[..length as usize]);
    line(out, format!("Length: {n}\n"));
    let ty = BlobType::from_byte(image[4]);
    match ty {
        BlobType::Empty => {
            line(out, "Type:   Empty\n");
            return Ok(());
        }
        BlobType::Header => {
            line(out, "Type:   Header\n");
            return dump_header(&buf, out);
        }
        BlobType::OpenPgp => line(out, "Type:   OpenPGP\n"),
        BlobType::X509 => line(out, "Type:   X.509\n"),
        BlobType::Unknown(t) => {
            line(out, format!("Type:   {t}\n[can't dump this blob type]\n"));
            return Ok(());
        }
    }
    line(out, format!("Version: {}\n", image[5]));
    if length < 40 {
        line(out, "[blob too short]\n");
        return Ok(());
    }
    let x509 = ty == BlobType::X509;
    let flags = buf.u16(6, "blob flags")?;
    line(out, format!("Blob-Flags: {flags:04X}"));
    if flags != 0 {
        let mut names = Vec::new();
        if flags & 1 != 0 {
            names.push("secret");
        }
        if flags & 2 != 0 {
            names.push("ephemeral");
        }
        line(out, format!(" ({})", names.join(",")));
    }
    line(out, "\n");
    let off = buf.u32(8, "data offset")?;
    let dlen = buf.u32(12, "data length")?;
    line(out, format!("Data-Offset: {off}\nData-Length: {dlen}\n"));
    if off > length || dlen > length || off + dlen > length || dlen + 4 > length || off + dlen + 4 > length {
        line(out, "[Error: raw data larger than blob]\n");
    }
    // kbxutil computes this in unsigned long arithmetic; keep its wrap-around.
    let unhashed = length.wrapping_sub(off).wrapping_sub(dlen);
    line(out, format!("Unhashed: {unhashed}\n"));

    let nkeys = buf.u16(16, "key count")?;
    line(out, format!("Key-Count: {nkeys}\n"));
    if nkeys == 0 {
        line(out, "[Error: no keys]\n");
    }
    if nkeys > 1 && x509 {
        line(out, "[Error: only one key allowed for X509]\n");
    }
    let keyinfolen = buf.u16(18, "key-info length")?;
    line(out, format!("Key-Info-Length: {keyinfolen}\n"));
    let mut p: u64 = 20;
    let fpr32 = buf.u8(5, "blob version")? == 2;
    for i in 0..nkeys {
        if fpr32 {
            let kflags = buf.u16(p + 32, "key flags")?;
            let fpr = buf.bytes(p, if kflags & 0x80 != 0 { 32 } else { 20 }, "key fingerprint")?;
            line(out, format!("Key-Fpr[{i}]: {}\nKey-Flags[{i}]: {kflags:04X}\n", hex_upper(fpr)));
            p += keyinfolen;
            continue;
        }
        let fpr = buf.bytes(p, 20, "key fingerprint")?;
        let kidoff = buf.u32(p + 20, "key id offset")?;
        let kid = buf.bytes(kidoff, 8, "key id")?;
        let kflags = buf.u16(p + 24, "key flags")?;
        line(
            out,
            format!(
                "Key-Fpr[{i}]: {}\nKey-Kid-Off[{i}]: {kidoff}\nKey-Kid[{i}]: {}\nKey-Flags[{i}]: {kflags:04X}\n",
                hex_upper(fpr),
                hex_upper(kid)
            ),
        );
        p += keyinfolen;
    }

    let nserial = buf.u16(p, "serial number length")?;
    let serial = buf.bytes(p + 2, nserial, "serial number")?;
    p += 2 + nserial;
    if serial.is_empty() {
        line(out, "Serial-No: none\n");
    } else {
        line(out, format!("Serial-No: {}\n", hex_upper(serial)));
    }

    let nuids = buf.u16(p, "uid count")?;
    let uidinfolen = buf.u16(p + 2, "uid-info length")?;
    line(out, format!("Uid-Count: {nuids}\nUid-Info-Length: {uidinfolen}\n"));
    p += 4;
    for i in 0..nuids {
        let uidoff = buf.u32(p, "uid offset")?;
        let uidlen = buf.u32(p + 4, "uid length")?;
        let label = match (x509, i) {
            (true, 0) => "Issuer".to_string(),
            (true, 1) => "Subject".to_string(),
            _ => String::new(),
        };
        if label.is_empty() {
            line(out, format!("Uid-Off[{i}]: {uidoff}\nUid-Len[{i}]: {uidlen}\nUid[{i}]: \""));
        } else {
            line(out, format!("{label}-Off: {uidoff}\n{label}-Len: {uidlen}\n{label}: \""));
        }
        print_string(out, buf.bytes(uidoff, uidlen, "user id")?, b'"');
        line(out, "\"\n");
        let uflags = buf.u16(p + 8, "uid flags")?;
        let validity = buf.u8(p + 10, "uid validity")?;
        if label.is_empty() {
            line(out, format!("Uid-Flags[{i}]: {uflags:04X}\nUid-Validity[{i}]: {validity}\n"));
        } else {
            line(out, format!("{label}-Flags: {uflags:04X}\n{label}-Validity: {validity}\n"));
        }
        p += uidinfolen;
    }

    let nsigs = buf.u16(p, "signature count")?;
    let siginfolen = buf.u16(p + 2, "sig-info length")?;
    line(out, format!("Sig-Count: {nsigs}\nSig-Info-Length: {siginfolen}\n"));
    p += 4;
    let mut range_start: Option<u64> = None;
    for i in 0..nsigs {
        let sflags = buf.u32(p, "signature info")?;
        p += siginfolen;
        if sflags == 0 {
            range_start.get_or_insert(i);
            continue;
        }
        if let Some(first) = range_start.take() {
            line(out, format!("Sig-Expire[{first}-{}]: [not checked]\n", i - 1));
        }
        let text = match sflags {
            1 => "[missing key]".to_string(),
            2 => "[bad signature]".to_string(),
            f if f < 0x1000_0000 => format!("[bad flag {f:x}]"),
            // kbxutil compares the 32-bit value with (ulong)-1, which on
            // 64-bit systems it never equals: 0xFFFFFFFF "expires" too.
            f => format!("[good - expires at {f}]"),
        };
        line(out, format!("Sig-Expire[{i}]: {text}\n"));
    }
    if let Some(first) = range_start {
        line(out, format!("Sig-Expire[{first}-{}]: [not checked]\n", nsigs - 1));
    }
    let ownertrust = buf.u8(p, "ownertrust")?;
    let validity = buf.u8(p + 1, "all-validity")?;
    line(out, format!("Ownertrust: {ownertrust}\nAll-Validity: {validity}\n"));
    p += 4;
    let recheck = buf.u32(p, "recheck-after")?;
    let latest = buf.u32(p + 4, "latest timestamp")?;
    let created = buf.u32(p + 8, "created-at")?;
    let reserved = buf.u32(p + 12, "reserved-space size")?;
    line(
        out,
        format!(
            "Recheck-After: {recheck}\nLatest-Timestamp: {latest}\nCreated-At: {created}\nReserved-Space: {reserved}\n"
        ),
    );
    if reserved >= 4 && unhashed >= 24 {
        let at = length.checked_sub(unhashed).ok_or(OutOfBounds("storage flags"))?;
        line(out, format!("Storage-Flags: {:08x}\n", buf.u32(at, "storage flags")?));
    }
    print_checksum(out, buf.0, unhashed);
    Ok(())
}

fn dump_header(buf: &Img<'_>, out: &mut Vec<u8>) -> Result<(), OutOfBounds> {
    line(out, format!("Version: {}\n", buf.u8(5, "header version")?));
    let flags = buf.u16(6, "header flags")?;
    line(out, format!("Flags:   {flags:04X}"));
    if flags != 0 {
        line(out, if flags & 2 != 0 { " (openpgp)" } else { " ()" });
    }
    line(out, "\n");
    if buf.bytes(8, 4, "magic")? != b"KBXf" {
        line(out, "[Error: invalid magic number]\n");
    }
    let created = buf.u32(16, "created-at")?;
    let maint = buf.u32(20, "last-maint")?;
    line(out, format!("created-at: {created}\nlast-maint: {maint}\n"));
    Ok(())
}

fn print_checksum(out: &mut Vec<u8>, image: &[u8], unhashed: u64) {
    line(out, "Checksum: ");
    let length = image.len() as u64;
    if unhashed > 0 && unhashed < 20 {
        line(out, "[specified unhashed sized too short]\n");
        return;
    }
    let needed = if unhashed == 0 { 16 } else { unhashed };
    if needed.checked_add(5).is_none_or(|n| length < n) {
        line(out, "[blob too short for a checksum]\n");
        return;
    }
    let (stored, valid): (&[u8], bool) = match verify(image, unhashed as usize) {
        Checksum::Sha1 { valid, .. } => (&image[image.len() - 20..], valid),
        Checksum::Md5 { valid, .. } => (&image[image.len() - 16..], valid),
        Checksum::UnhashedTooShort | Checksum::BlobTooShort => (&[], false),
    };
    line(out, hex_lower(stored));
    line(out, if valid { " [valid]\n" } else { " [bad]\n" });
}

/// kbxutil's `print_string`: control characters, C1 controls and the
/// delimiter are escaped; everything else is copied byte for byte.
fn print_string(out: &mut Vec<u8>, s: &[u8], delim: u8) {
    for &c in s {
        if c < 0x20 || (0x7f..0xa0).contains(&c) || c == delim {
            out.push(b'\\');
            match c {
                b'\n' => out.push(b'n'),
                b'\r' => out.push(b'r'),
                0x0c => out.push(b'f'),
                0x0b => out.push(b'v'),
                0x08 => out.push(b'b'),
                0 => out.push(b'0'),
                _ => out.extend_from_slice(format!("x{c:02x}").as_bytes()),
            }
        } else {
            out.push(c);
        }
    }
}

/// Upper-case hex, no separators.
pub fn hex_upper(b: &[u8]) -> String {
    hex_with(b, b"0123456789ABCDEF")
}

/// The bytes of a hex string (either case, no separators); `None` for an
/// odd length or a character that is no hex digit.
pub fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

/// Lower-case hex, no separators.
pub fn hex_lower(b: &[u8]) -> String {
    hex_with(b, b"0123456789abcdef")
}

/// Each byte as two of `digits`, in one allocation.
fn hex_with(b: &[u8], digits: &[u8; 16]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(char::from(digits[usize::from(x >> 4)]));
        s.push(char::from(digits[usize::from(x & 0x0F)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_digits_a_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let upper: String = all.iter().map(|x| format!("{x:02X}")).collect();
        assert_eq!(hex_upper(&all), upper);
        assert_eq!(hex_lower(&all), upper.to_lowercase());
        assert_eq!(hex_upper(&[]), "");
    }

    #[test]
    fn escapes_like_kbxutil() {
        let mut out = Vec::new();
        print_string(&mut out, b"a\"b\n\x01\x85\xc3\xa9", b'"');
        assert_eq!(out, b"a\\x22b\\n\\x01\\x85\xc3\xa9".to_vec());
    }

    #[test]
    fn short_and_unknown_blobs() {
        assert_eq!(dump_blob(&[0; 10]), b"[blob too short]\n");
        let mut b = vec![0u8; 40];
        b[3] = 40;
        b[4] = 9;
        assert_eq!(dump_blob(&b), b"Length: 40\nType:   9\n[can't dump this blob type]\n");
    }

    #[test]
    fn out_of_bounds_key_table_is_reported_not_read() {
        let mut b = vec![0u8; 48];
        b[3] = 48;
        b[4] = 2;
        b[5] = 1;
        b[17] = 200; // 200 keys
        b[19] = 28;
        let text = String::from_utf8(dump_blob(&b)).unwrap();
        assert!(text.ends_with("[Error: key fingerprint lies outside the blob]\n"), "{text}");
    }
}
