//! GnuPG-style search patterns and how they match a blob (no I/O).
//!
//! The syntax follows GnuPG's `classify_user_id`:
//!
//! | pattern | meaning |
//! |---|---|
//! | `0x` + 8 hex | short key id (last 4 bytes of the key id) |
//! | `0x` + 16 hex | long key id |
//! | 40 or 64 hex (optional `0x`, `:` or spaces between groups) | fingerprint |
//! | `<alice@example.org>` | exact mail address (case-insensitive) |
//! | `@example.org` | substring of a mail address |
//! | `/CN=…,O=…` | exact X.509 subject, in GnuPG's stored string form |
//! | `#SERIAL` or `#SERIAL/ISSUER-DN` | X.509 serial number (hex), optionally with issuer |
//! | `=text` | a user id equal to `text` |
//! | `*text` or plain text | case-insensitive substring of a user id or subject |
//!
//! Bare hex strings of 8 or 16 digits are key ids, as in GnuPG. Like
//! GnuPG's keybox search, an X.509 blob's issuer (uid 0) is only compared by
//! the `#serial/issuer` form; the other forms look at its subject and mail
//! addresses.

use std::fmt;

use super::blob::{BlobType, KeyBlob, KeyInfo};

/// A parsed search pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// A 20- or 32-byte fingerprint.
    Fingerprint(Vec<u8>),
    /// A 64-bit key id.
    LongKeyId([u8; 8]),
    /// A 32-bit key id (the low half of the key id).
    ShortKeyId([u8; 4]),
    /// An exact mail address (stored lower-case).
    Mail(String),
    /// A substring of a mail address (stored lower-case).
    MailSubstring(String),
    /// An exact X.509 subject DN.
    Subject(Vec<u8>),
    /// An X.509 serial number, optionally with the issuer DN.
    SerialIssuer {
        /// Serial number bytes, leading zero bytes removed.
        serial: Vec<u8>,
        /// Issuer DN, if given.
        issuer: Option<Vec<u8>>,
    },
    /// A user id that equals this text exactly.
    Exact(Vec<u8>),
    /// A case-insensitive substring of a user id (stored lower-case).
    Substring(Vec<u8>),
}

/// Why a pattern cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid pattern '{}': {}", self.pattern, self.reason)
    }
}

impl std::error::Error for PatternError {}

fn strip_leading_zeros(b: &[u8]) -> Vec<u8> {
    let first = b.iter().position(|&x| x != 0).unwrap_or(b.len());
    b[first..].to_vec()
}

impl Pattern {
    /// Classify a pattern string the way GnuPG does.
    ///
    /// # Errors
    /// An empty pattern, an unterminated `<mail`, or a malformed `#serial`.
    pub fn parse(input: &str) -> Result<Self, PatternError> {
        let err = |reason| PatternError { pattern: input.to_string(), reason };
        let s = input.trim_start();
        if s.is_empty() {
            return Err(err("the pattern is empty"));
        }
        let rest = &s[1..];
        match s.as_bytes()[0] {
            b'<' => {
                let mail = rest
                    .strip_suffix('>')
                    .ok_or_else(|| err("a mail address pattern must look like <user@example.org>"))?;
                if mail.is_empty() {
                    return Err(err("the mail address is empty"));
                }
                return Ok(Self::Mail(mail.to_ascii_lowercase()));
            }
            b'@' if !rest.is_empty() => return Ok(Self::MailSubstring(rest.to_ascii_lowercase())),
            b'/' if !rest.is_empty() => return Ok(Self::Subject(rest.as_bytes().to_vec())),
            b'=' if !rest.is_empty() => return Ok(Self::Exact(rest.as_bytes().to_vec())),
            b'*' if !rest.is_empty() => return Ok(Self::Substring(rest.to_ascii_lowercase().into_bytes())),
            b'#' => {
                let (serial, issuer) = match rest.split_once('/') {
                    Some((sn, dn)) => (sn, Some(dn.as_bytes().to_vec())),
                    None => (rest, None),
                };
                let padded = if !serial.len().is_multiple_of(2) { format!("0{serial}") } else { serial.to_string() };
                let serial = crate::dump::parse_hex(&padded)
                    .filter(|b| !b.is_empty())
                    .ok_or_else(|| err("expected #SERIAL or #SERIAL/ISSUER with SERIAL in hex"))?;
                return Ok(Self::SerialIssuer { serial: strip_leading_zeros(&serial), issuer });
            }
            _ => {}
        }
        let hexpart = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
        let compact: String = hexpart.chars().filter(|c| *c != ':' && *c != ' ').collect();
        if let Some(bytes) = crate::dump::parse_hex(&compact) {
            let grouped = compact.len() != hexpart.len();
            match (bytes.len(), grouped) {
                (4, false) => return Ok(Self::ShortKeyId([bytes[0], bytes[1], bytes[2], bytes[3]])),
                (8, false) => {
                    let mut id = [0u8; 8];
                    id.copy_from_slice(&bytes);
                    return Ok(Self::LongKeyId(id));
                }
                (20 | 32, _) => return Ok(Self::Fingerprint(bytes)),
                _ => {}
            }
        }
        Ok(Self::Substring(s.to_ascii_lowercase().into_bytes()))
    }

    /// Whether this pattern matches a key blob.
    pub fn matches(&self, blob: &KeyBlob<'_>) -> bool {
        match self {
            Self::Fingerprint(fpr) => blob.keys().any(|k| k.fingerprint == fpr.as_slice()),
            Self::LongKeyId(id) => blob.keys().any(|k| derived_key_id(&k) == id),
            Self::ShortKeyId(id) => blob.keys().any(|k| &derived_key_id(&k)[4..] == id),
            Self::Mail(mail) => {
                searchable_uids(blob).any(|u| mail_of(u).is_some_and(|m| m.eq_ignore_ascii_case(mail.as_bytes())))
            }
            Self::MailSubstring(part) => {
                searchable_uids(blob).any(|u| mail_of(u).is_some_and(|m| contains_ignore_case(m, part.as_bytes())))
            }
            Self::Subject(dn) => blob.x509_subject() == Some(dn.as_slice()),
            Self::SerialIssuer { serial, issuer } => {
                blob.blob_type == BlobType::X509
                    && strip_leading_zeros(blob.serial()) == *serial
                    && issuer.as_ref().is_none_or(|dn| blob.x509_issuer() == Some(dn.as_slice()))
            }
            Self::Exact(text) => searchable_uids(blob).any(|u| u == text.as_slice()),
            Self::Substring(text) => searchable_uids(blob).any(|u| contains_ignore_case(u, text)),
        }
    }
}

/// The key id GnuPG's search compares for a fingerprint: its first 8
/// bytes for a 32-byte (v5) fingerprint, its last 8 otherwise.
pub fn fingerprint_key_id(f: &[u8]) -> &[u8] {
    if f.len() == 32 {
        &f[..8]
    } else {
        &f[f.len().saturating_sub(8)..]
    }
}

/// The key id GnuPG's search compares: the last 8 bytes of a 20-byte
/// fingerprint, the first 8 of a 32-byte one.
pub fn derived_key_id<'a>(k: &KeyInfo<'a>) -> &'a [u8] {
    if k.fingerprint.len() == 32 {
        &k.fingerprint[..8]
    } else {
        &k.fingerprint[12..20]
    }
}

/// User ids a text search looks at: all for OpenPGP; for X.509 all but
/// the issuer (uid 0).
fn searchable_uids<'a>(blob: &'a KeyBlob<'_>) -> impl Iterator<Item = &'a [u8]> + 'a {
    let skip = usize::from(blob.blob_type == BlobType::X509);
    blob.uids().skip(skip).map(|u| u.name)
}

/// The mail address in a user id: what is inside the last `<…>`, or the
/// whole id if it is a bare address.
pub fn mail_of(uid: &[u8]) -> Option<&[u8]> {
    if let Some(open) = uid.iter().rposition(|&c| c == b'<') {
        let inner = &uid[open + 1..];
        let close = inner.iter().position(|&c| c == b'>')?;
        return Some(&inner[..close]);
    }
    (uid.contains(&b'@') && !uid.contains(&b' ')).then_some(uid)
}

fn contains_ignore_case(hay: &[u8], needle_lower: &[u8]) -> bool {
    needle_lower.is_empty()
        || hay
            .windows(needle_lower.len())
            .any(|w| w.iter().zip(needle_lower).all(|(a, b)| a.to_ascii_lowercase() == *b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_like_gnupg() {
        assert_eq!(Pattern::parse("0x704571A5").unwrap(), Pattern::ShortKeyId([0x70, 0x45, 0x71, 0xA5]));
        assert!(matches!(Pattern::parse("76257FC4704571A5").unwrap(), Pattern::LongKeyId(_)));
        assert!(matches!(
            Pattern::parse("DC:72:41:18:AF:31:B2:AF:C7:CA:8C:55:76:25:7F:C4:70:45:71:A5").unwrap(),
            Pattern::Fingerprint(f) if f.len() == 20
        ));
        assert!(matches!(Pattern::parse(&"ab".repeat(32)).unwrap(), Pattern::Fingerprint(f) if f.len() == 32));
        assert_eq!(Pattern::parse("<A@B.example>").unwrap(), Pattern::Mail("a@b.example".into()));
        assert_eq!(Pattern::parse("@b.EXAMPLE").unwrap(), Pattern::MailSubstring("b.example".into()));
        assert_eq!(
            Pattern::parse("#00AB/CN=x").unwrap(),
            Pattern::SerialIssuer { serial: vec![0xab], issuer: Some(b"CN=x".to_vec()) }
        );
        assert_eq!(Pattern::parse("Alice").unwrap(), Pattern::Substring(b"alice".to_vec()));
        assert_eq!(Pattern::parse("deadbeefcafe").unwrap(), Pattern::Substring(b"deadbeefcafe".to_vec()));
        assert!(Pattern::parse("").is_err());
        assert!(Pattern::parse("<no-end").is_err());
        assert!(Pattern::parse("#xyz").is_err());
    }

    #[test]
    fn mail_extraction() {
        assert_eq!(mail_of(b"Alice <alice@example.org>"), Some(&b"alice@example.org"[..]));
        assert_eq!(mail_of(b"<bob@x.example>"), Some(&b"bob@x.example"[..]));
        assert_eq!(mail_of(b"carol@example.org"), Some(&b"carol@example.org"[..]));
        assert_eq!(mail_of(b"Dave"), None);
        assert_eq!(mail_of(b"Broken <x@y"), None);
    }
}
