//! What GnuPG's keybox writer stores for a keyblock or a certificate
//! (`keybox-blob.c`, facts only): the [`KeyBlobSpec`] of the blob it would
//! write, from the keyblock or DER certificate alone. keyboxd's database
//! holds exactly those (`pubkey.keyblob`), so a row becomes the blob the
//! same key has in a keybox.
//!
//! * OpenPGP: one key-table entry per key packet (primary, then subkeys, in
//!   keyblock order) with its fingerprint; one uid entry per user-id packet
//!   (user attributes get none), pointing at the packet's body in the
//!   keyblock; the signature count is the number of signature packets.
//! * X.509: the SHA-1 fingerprint; the serial number's bytes; the uids are
//!   the issuer and the subject in libksba's string form ([`crate::dn`]),
//!   then the subject's e-mail address as `<addr>` when the subject's first
//!   printed RDN is an emailAddress (GnuPG's "email kludge"), then the
//!   subjectAltName entries: rfc822Name as `<addr>`, dNSName and URI as
//!   libksba's S-expressions `(8:dns-name…)` and `(3:uri…)`.

use sha1::{Digest, Sha1};
use x509_parser::prelude::{FromDer, GeneralName, ParsedExtension, X509Certificate};

use crate::blob::BlobType;
use crate::encode::{KeyBlobSpec, UidSource};
use crate::keyblock::{split_packets, tag, FramingError};
use crate::keypacket::{key_packet, KeyPacketError};

/// Why no blob can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CreateError {
    /// The keyblock's packets do not frame.
    #[error(transparent)]
    Framing(#[from] FramingError),
    /// A key packet does not decode.
    #[error("key packet {index}: {source}")]
    KeyPacket {
        /// Which key packet (0 = the primary key).
        index: usize,
        /// Why.
        source: KeyPacketError,
    },
    /// The keyblock has no key packet.
    #[error("the keyblock holds no key packet")]
    NoKey,
    /// The certificate does not decode.
    #[error("the certificate does not decode: {0}")]
    Certificate(String),
    /// Too large for a keybox blob's 16- and 32-bit fields.
    #[error("too large for a keybox blob")]
    TooLarge,
}

/// The blob GnuPG writes for the OpenPGP keyblock `keyblock`.
///
/// # Errors
/// [`CreateError`] when the keyblock does not frame or a key packet does not decode.
pub fn openpgp_spec(keyblock: &[u8], ephemeral: bool) -> Result<KeyBlobSpec, CreateError> {
    let packets = split_packets(keyblock)?;
    let mut fingerprints = Vec::new();
    let mut uids = Vec::new();
    let mut sigs = 0usize;
    for p in &packets {
        match p.tag {
            tag::PUBLIC_KEY | tag::PUBLIC_SUBKEY => {
                let info = key_packet(p.body)
                    .map_err(|source| CreateError::KeyPacket { index: fingerprints.len(), source })?;
                let mut fpr = info.fingerprint;
                // v2/v3 fingerprints (MD5, 16 bytes) fill a 20-byte slot.
                fpr.resize(fpr.len().max(20), 0);
                fingerprints.push(fpr);
            }
            tag::USER_ID => {
                // The body is a subslice of `keyblock`: its offset is the distance.
                let offset = p.body.as_ptr() as usize - keyblock.as_ptr() as usize;
                let (offset, length) = (u32::try_from(offset), u32::try_from(p.body.len()));
                let (Ok(offset), Ok(length)) = (offset, length) else { return Err(CreateError::TooLarge) };
                uids.push(UidSource::InData { offset, length });
            }
            tag::SIGNATURE => sigs += 1,
            _ => {}
        }
    }
    if fingerprints.is_empty() {
        return Err(CreateError::NoKey);
    }
    if fingerprints.len() > usize::from(u16::MAX) || uids.len() > usize::from(u16::MAX) {
        return Err(CreateError::TooLarge);
    }
    Ok(KeyBlobSpec {
        blob_type: BlobType::OpenPgp,
        ephemeral,
        fingerprints,
        serial: Vec::new(),
        uids,
        sig_count: u16::try_from(sigs).unwrap_or(u16::MAX),
        validity: 0,
        created_at: 0,
        data: keyblock.to_vec(),
    })
}

/// The e-mail address in a libksba subject string whose first RDN is an
/// emailAddress (`1.2.840.113549.1.9.1=#HEX…`), as `<addr>`.
pub fn email_kludge(subject: &str) -> Option<Vec<u8>> {
    let hex = subject.strip_prefix("1.2.840.113549.1.9.1=#")?;
    let hex = &hex[..hex.find([',', '+']).unwrap_or(hex.len())];
    if hex.is_empty() || hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect();
    let mut out = b"<".to_vec();
    out.extend(bytes?);
    out.push(b'>');
    Some(out)
}

/// A canonical S-expression of one list: `(len:word len:value)`.
fn sexp(word: &str, value: &[u8]) -> Vec<u8> {
    let mut out = format!("({}:{word}{}:", word.len(), value.len()).into_bytes();
    out.extend_from_slice(value);
    out.push(b')');
    out
}

/// The blob GnuPG writes for the DER certificate `der`.
///
/// # Errors
/// [`CreateError::Certificate`] when the certificate does not decode.
pub fn x509_spec(der: &[u8], ephemeral: bool) -> Result<KeyBlobSpec, CreateError> {
    let (_, cert) = X509Certificate::from_der(der).map_err(|e| CreateError::Certificate(e.to_string()))?;
    let subject = crate::dn::gnupg_dn_bytes(cert.subject());
    let mut uids =
        vec![UidSource::Stored(crate::dn::gnupg_dn_bytes(cert.issuer())), UidSource::Stored(subject.clone())];
    if let Some(mail) = email_kludge(&String::from_utf8_lossy(&subject)) {
        uids.push(UidSource::Stored(mail));
    }
    for ext in cert.extensions() {
        if let ParsedExtension::SubjectAlternativeName(san) = ext.parsed_extension() {
            for name in &san.general_names {
                let stored = match name {
                    GeneralName::RFC822Name(m) => format!("<{m}>").into_bytes(),
                    GeneralName::DNSName(d) => sexp("dns-name", d.as_bytes()),
                    GeneralName::URI(u) => sexp("uri", u.as_bytes()),
                    _ => continue,
                };
                uids.push(UidSource::Stored(stored));
            }
        }
    }
    if uids.len() > usize::from(u16::MAX) {
        return Err(CreateError::TooLarge);
    }
    Ok(KeyBlobSpec {
        blob_type: BlobType::X509,
        ephemeral,
        fingerprints: vec![Sha1::digest(der).to_vec()],
        serial: cert.raw_serial().to_vec(),
        uids,
        sig_count: 1,
        validity: 0,
        created_at: 0,
        data: der.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_blob, Blob};

    /// Every key blob of a GnuPG-made keybox: the blob GnuPG wrote.
    fn key_blobs(file: &[u8]) -> Vec<crate::KeyBlob<'_>> {
        let mut out = Vec::new();
        let mut at = 0;
        while at + 4 <= file.len() {
            let len = u32::from_be_bytes(file[at..at + 4].try_into().unwrap()) as usize;
            if let Ok(Blob::Key(k)) = parse_blob(&file[at..at + len]) {
                out.push(k);
            }
            at += len;
        }
        out
    }

    /// For every key and certificate GnuPG stored, the spec made from the
    /// keyblock or certificate alone has the key table, serial, uids and
    /// signature count GnuPG wrote.
    #[test]
    fn specs_match_what_gnupg_wrote() {
        let files: [&[u8]; 3] = [
            include_bytes!("../../../tests/fixtures/gnupg-mixed.kbx"),
            include_bytes!("../../../tests/fixtures/gnupg-deleted.kbx"),
            include_bytes!("../../../tests/fixtures/gnupg24-v5.kbx"),
        ];
        let mut checked = 0;
        for file in files {
            for k in key_blobs(file) {
                let spec = match k.blob_type {
                    BlobType::X509 => x509_spec(k.data(), k.is_ephemeral()).unwrap(),
                    _ => openpgp_spec(k.data(), k.is_ephemeral()).unwrap(),
                };
                let fprs: Vec<Vec<u8>> = (0..k.key_count()).map(|i| k.key(i).fingerprint.to_vec()).collect();
                assert_eq!(spec.fingerprints, fprs, "blob {checked}");
                assert_eq!(spec.serial, k.serial(), "blob {checked}");
                let uids: Vec<Vec<u8>> = spec
                    .uids
                    .iter()
                    .map(|u| match u {
                        UidSource::Stored(s) => s.clone(),
                        UidSource::InData { offset, length } => {
                            k.data()[*offset as usize..(*offset + *length) as usize].to_vec()
                        }
                    })
                    .collect();
                let want: Vec<Vec<u8>> = k.uids().map(|u| u.name.to_vec()).collect();
                assert_eq!(uids, want, "blob {checked}");
                if k.blob_type == BlobType::OpenPgp {
                    assert_eq!(usize::from(spec.sig_count), k.sig_count(), "blob {checked}");
                }
                checked += 1;
            }
        }
        assert!(checked > 80, "{checked}");
    }

    #[test]
    fn bad_input() {
        assert!(matches!(openpgp_spec(&[0x98], false), Err(CreateError::Framing(_))));
        assert_eq!(openpgp_spec(&[], false), Err(CreateError::NoKey));
        assert!(matches!(x509_spec(b"not der", false), Err(CreateError::Certificate(_))));
        assert_eq!(email_kludge("1.2.840.113549.1.9.1=#61406200,CN=x"), Some(b"<a@b\0>".to_vec()));
        assert_eq!(email_kludge("CN=x"), None);
        assert_eq!(sexp("uri", b"http://x"), b"(3:uri8:http://x)");
    }
}
