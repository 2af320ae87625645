//! Distinguished names in the string form GnuPG stores in X.509 blobs.
//!
//! libksba renders a DN in RFC 2253 style: RDNs in *reverse* DER order,
//! joined by `,` without a space, multi-valued RDNs joined by `+`, short
//! names for the common attributes and `OID=#HEX` (upper-case hex of the
//! value bytes) for the others, e.g. an emailAddress. Special characters
//! are escaped with a backslash. gpgsm's subject and issuer searches
//! compare these strings byte for byte, so the blob must hold exactly this
//! form. (`x509-parser`'s `to_string()` is a different form.)

use std::fmt::Write as _;

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

/// Escape a string value the way libksba does (RFC 2253 specials, a
/// leading `#` or space, a trailing space).
fn escape(value: &str, out: &mut String) {
    let last = value.len().saturating_sub(1);
    for (i, c) in value.char_indices() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
}

/// Render `name` as libksba does.
pub fn gnupg_dn(name: &X509Name<'_>) -> String {
    let mut out = String::new();
    let rdns: Vec<_> = name.iter().collect();
    for (i, rdn) in rdns.into_iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, atv) in rdn.iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            let oid = atv.attr_type().to_id_string();
            match (short_name(&oid), atv.as_str()) {
                (Some(short), Ok(text)) => {
                    out.push_str(short);
                    out.push('=');
                    escape(text, &mut out);
                }
                _ => {
                    let _ = write!(out, "{oid}=#");
                    for b in atv.attr_value().data.iter() {
                        let _ = write!(out, "{b:02X}");
                    }
                }
            }
        }
    }
    out
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

    #[test]
    fn escapes() {
        let mut s = String::new();
        escape("#a, b+c \"x\" <y>;\\ ", &mut s);
        assert_eq!(s, "\\#a\\, b\\+c \\\"x\\\" \\<y\\>\\;\\\\\\ ");
    }
}
