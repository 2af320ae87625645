//! Distinguished names in the string form GnuPG stores in X.509 blobs.
//!
//! libksba renders a DN in RFC 2253 style: RDNs in *reverse* DER order,
//! joined by `,` without a space, multi-valued RDNs joined by `+`, short
//! names for the common attributes and `OID=#HEX` (upper-case hex of the
//! value bytes) for the others, e.g. an emailAddress. Special characters
//! are escaped with a backslash. gpgsm's subject and issuer searches
//! compare these strings byte for byte, so the blob must hold exactly this
//! form. (`x509-parser`'s `to_string()` is a different form.)

use x509_parser::der_parser::asn1_rs::Tag;
use x509_parser::x509::X509Name;

fn short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "STREET",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// Append byte `b` as two upper-case hex digits.
fn push_hex(b: u8, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.extend([HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

/// Append the ASCII byte `b` as libksba quotes it: RFC 2253's specials
/// behind a backslash, control characters and DEL as `\XX`.
fn quoted(b: u8, out: &mut Vec<u8>) {
    if !(b' '..=126).contains(&b) {
        out.push(b'\\');
        push_hex(b, out);
    } else {
        if b",+\"\\<>;".contains(&b) {
            out.push(b'\\');
        }
        out.push(b);
    }
}

/// Append code point `c` in UTF-8, up to six bytes as libksba encodes
/// values beyond Unicode.
fn push_utf8(c: u32, out: &mut Vec<u8>) {
    if let Some(ch) = char::from_u32(c) {
        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
        return;
    }
    let (lead, n): (u8, u32) = match c {
        _ if c < 1 << 11 => (0xC0, 1),
        _ if c < 1 << 16 => (0xE0, 2),
        _ if c < 1 << 21 => (0xF0, 3),
        _ if c < 1 << 26 => (0xF8, 4),
        _ => (0xFC, 5),
    };
    out.push(lead | (c >> (6 * n)) as u8);
    for k in (0..n).rev() {
        out.push(0x80 | ((c >> (6 * k)) & 0x3F) as u8);
    }
}

/// libksba's handling of a value's ends, for a value of `len` characters
/// whose code points are `at(i)`: a leading space or `#` is escaped and
/// dropped; then, if the value (as it now starts) ends — for one-byte
/// strings — or starts — for two- and four-byte (`wide`) strings, as
/// libksba checks — with a space, `\ ` is written first and the last
/// character dropped. Returns the characters left, as a range.
fn ends(len: usize, at: impl Fn(usize) -> u32, out: &mut Vec<u8>, wide: bool) -> std::ops::Range<usize> {
    let (mut from, mut to) = (0, len);
    if to > from && (at(from) == u32::from(b' ') || at(from) == u32::from(b'#')) {
        // libksba writes the value's first byte: for two- and four-byte
        // strings, a NUL.
        out.extend([b'\\', if wide { 0 } else { at(from) as u8 }]);
        from += 1;
    }
    let probe = if wide { from } else { to.wrapping_sub(1) };
    if to > from && at(probe) == u32::from(b' ') {
        out.extend_from_slice(b"\\ ");
        to -= 1;
    }
    from..to
}

/// A value of code points `chars` (UCS-2 or UCS-4) as libksba writes it:
/// ASCII quoted, the rest as UTF-8; a value whose first character is not
/// ASCII stops at once with a 0xFF byte (libksba's check, kept).
fn wide_value(chars: &[u32], out: &mut Vec<u8>) {
    let range = ends(chars.len(), |i| chars[i], out, true);
    for (n, &c) in chars[range].iter().enumerate() {
        match c {
            _ if c < 0x80 => quoted(c as u8, out),
            _ if n == 0 => return out.push(0xFF),
            _ => push_utf8(c, out),
        }
    }
}

/// A UTF8String as libksba writes it: ASCII quoted, each multi-byte
/// sequence copied as far as its continuation bytes go, a byte that
/// starts none as `\XX`.
fn utf8_value(bytes: &[u8], out: &mut Vec<u8>) {
    let range = ends(bytes.len(), |i| u32::from(bytes[i]), out, false);
    let mut v = bytes[range].iter().copied().peekable();
    while let Some(b) = v.next() {
        let more = match b {
            _ if b < 0x80 => {
                quoted(b, out);
                continue;
            }
            _ if b & 0xE0 == 0xC0 => 1,
            _ if b & 0xF0 == 0xE0 => 2,
            _ if b & 0xF8 == 0xF0 => 3,
            _ if b & 0xFC == 0xF8 => 4,
            _ if b & 0xFE == 0xFC => 5,
            _ => {
                out.push(b'\\');
                push_hex(b, out);
                continue;
            }
        };
        out.push(b);
        for _ in 0..more {
            match v.next_if(|c| c & 0xC0 == 0x80) {
                Some(c) => out.push(c),
                None => break,
            }
        }
    }
}

/// A PrintableString, IA5String or TeletexString as libksba writes it:
/// its bytes taken as Latin-1, ASCII quoted.
fn latin1_value(bytes: &[u8], out: &mut Vec<u8>) {
    let range = ends(bytes.len(), |i| u32::from(bytes[i]), out, false);
    for &b in &bytes[range] {
        if b < 0x80 {
            quoted(b, out);
        } else {
            push_utf8(u32::from(b), out);
        }
    }
}

/// Code points of `unit`-byte big-endian characters (a trailing partial
/// one dropped).
fn code_points(bytes: &[u8], unit: usize) -> Vec<u32> {
    bytes.chunks_exact(unit).map(|c| c.iter().fold(0u32, |v, &b| v << 8 | u32::from(b))).collect()
}

/// Render `name` as libksba does (its bytes: a value may hold bytes that
/// are not UTF-8, as libksba writes them).
pub fn gnupg_dn_bytes(name: &X509Name<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    let rdns: Vec<_> = name.iter().collect();
    for (i, rdn) in rdns.into_iter().rev().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        for (j, atv) in rdn.iter().enumerate() {
            if j > 0 {
                out.push(b'+');
            }
            let oid = atv.attr_type().to_id_string();
            let value = atv.attr_value();
            let data: &[u8] = value.data;
            let Some(short) = short_name(&oid) else {
                out.extend_from_slice(oid.as_bytes());
                out.extend_from_slice(b"=#");
                hex(data, &mut out);
                continue;
            };
            out.extend_from_slice(short.as_bytes());
            out.push(b'=');
            match value.header.tag() {
                Tag::Utf8String => utf8_value(data, &mut out),
                Tag::PrintableString | Tag::Ia5String | Tag::TeletexString => latin1_value(data, &mut out),
                Tag::UniversalString => wide_value(&code_points(data, 4), &mut out),
                Tag::BmpString => wide_value(&code_points(data, 2), &mut out),
                _ => {
                    out.push(b'#');
                    hex(data, &mut out);
                }
            }
        }
    }
    out
}

fn hex(data: &[u8], out: &mut Vec<u8>) {
    for &b in data {
        push_hex(b, out);
    }
}

/// Render `name` as libksba does, as text (bytes that are not UTF-8
/// replaced; see [`gnupg_dn_bytes`]).
pub fn gnupg_dn(name: &X509Name<'_>) -> String {
    String::from_utf8_lossy(&gnupg_dn_bytes(name)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::{FromDer, X509Certificate};

    const MIXED: &[u8] = include_bytes!("../../../tests/fixtures/gnupg-mixed.kbx");

    /// For every certificate GnuPG stored, our rendering of issuer and
    /// subject equals the strings in the blob.
    #[test]
    fn matches_libksba_on_gnupg_blobs() {
        let mut at = 0;
        let mut checked = 0;
        while at < MIXED.len() {
            let len = u32::from_be_bytes(MIXED[at..at + 4].try_into().unwrap()) as usize;
            if let Ok(crate::Blob::Key(k)) = crate::parse_blob(&MIXED[at..at + len]) {
                if k.blob_type == crate::BlobType::X509 {
                    let (_, cert) = X509Certificate::from_der(k.data()).unwrap();
                    assert_eq!(gnupg_dn(cert.issuer()).as_bytes(), k.x509_issuer().unwrap());
                    assert_eq!(gnupg_dn(cert.subject()).as_bytes(), k.x509_subject().unwrap());
                    checked += 1;
                }
            }
            at += len;
        }
        assert_eq!(checked, 24);
    }

    /// A subject of one RDN: `oid` (DER body) with a value of `tag`.
    fn one_rdn(oid: &[u8], tag: u8, value: &[u8]) -> Vec<u8> {
        let tlv = |t: u8, body: &[u8]| {
            let mut v = vec![t, body.len() as u8];
            v.extend_from_slice(body);
            v
        };
        let atv = [tlv(0x06, oid), tlv(tag, value)].concat();
        tlv(0x30, &tlv(0x31, &tlv(0x30, &atv)))
    }

    fn render(oid: &[u8], tag: u8, value: &[u8]) -> Vec<u8> {
        let der = one_rdn(oid, tag, value);
        let (_, name) = X509Name::from_der(&der).unwrap();
        gnupg_dn_bytes(&name)
    }

    const CN: &[u8] = &[0x55, 0x04, 0x03];

    #[test]
    fn values_as_libksba_writes_them() {
        let cn = |v: &[u8]| [b"CN=".as_slice(), v].concat();
        // Specials, a leading '#', control characters.
        assert_eq!(render(CN, 0x0C, b"#a, b+c \"x\" <y>;\\"), cn(b"\\#a\\, b\\+c \\\"x\\\" \\<y\\>\\;\\\\"));
        assert_eq!(render(CN, 0x13, b"a\nb\x7f"), cn(b"a\\0Ab\\7F"));
        // A trailing space: libksba writes its escape first.
        assert_eq!(render(CN, 0x13, b"abc "), cn(b"\\ abc"));
        // TeletexString and IA5String as Latin-1; UTF8String kept.
        assert_eq!(render(CN, 0x14, b"M\xfcller"), cn("Müller".as_bytes()));
        assert_eq!(render(CN, 0x16, b"M\xfcller"), cn("Müller".as_bytes()));
        assert_eq!(render(CN, 0x0C, "Müller".as_bytes()), cn("Müller".as_bytes()));
        assert_eq!(render(CN, 0x0C, b"a\xffb"), cn(b"a\\FFb"));
        // BMPString and UniversalString to UTF-8; a first character that
        // is not ASCII stops with 0xFF, as in libksba.
        assert_eq!(render(CN, 0x1E, &[0, b'M', 0, 0xFC, 0, b'l']), cn("Mül".as_bytes()));
        assert_eq!(render(CN, 0x1E, &[0, 0xFC, 0, b'l']), cn(b"\xff"));
        assert_eq!(render(CN, 0x1C, &[0, 0, 0, b'A', 0, 0, 0x20, 0xAC]), cn("A€".as_bytes()));
        assert_eq!(render(CN, 0x1E, &[0, b'#', 0, b'a']), cn(b"\\\0a"));
        // An attribute without a short name, and an unknown string type.
        assert_eq!(render(&[0x55, 0x04, 0x04], 0x0C, b"Doe"), b"2.5.4.4=#446F65");
        assert_eq!(render(CN, 0x04, b"ab"), cn(b"#6162"));
    }
}
