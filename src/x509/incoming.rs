//! Certificates as gpgsm reads them for an import: the PEM blocks of a
//! file (any number, `CERTIFICATE` or `X509 CERTIFICATE`), or one DER
//! certificate. Each becomes a `Cert` with the strings GnuPG stores for
//! it, and the blob gpgsm would write. No I/O: the bytes come from the
//! caller.

use x509_parser::pem::Pem;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::certinfo::Cert;
use crate::kbx::create::x509_spec;
use crate::kbx::encode::encode_key_blob;
use crate::kbx::{parse_blob, Blob};

/// Why a file holds no certificate gpgsm would import.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IncomingCertError {
    /// A PEM block that does not decode.
    #[error("PEM block {index}: {why}")]
    Pem {
        /// 1-based.
        index: usize,
        /// What is wrong.
        why: String,
    },
    /// A PEM block of another kind (a key, a CMS message).
    #[error("PEM block {index} is a '{label}', not a certificate (only certificates are read)")]
    Label {
        /// 1-based.
        index: usize,
        /// Its label.
        label: String,
    },
    /// A certificate that does not decode.
    #[error("certificate {index}: {why}")]
    Certificate {
        /// 1-based.
        index: usize,
        /// What is wrong.
        why: String,
    },
    /// Nothing in the file.
    #[error("no certificate in it")]
    Empty,
}

/// One certificate to import.
#[derive(Debug, Clone)]
pub struct IncomingCert {
    /// As lookups see it.
    pub(crate) cert: Cert,
}

impl IncomingCert {
    /// Its SHA-1 fingerprint.
    #[must_use]
    pub fn fingerprint(&self) -> [u8; 20] {
        self.cert.fpr
    }

    /// Its subject, in GnuPG's string form.
    #[must_use]
    pub fn subject(&self) -> String {
        String::from_utf8_lossy(&self.cert.subject).into_owned()
    }
}

/// The blob gpgsm stores for the DER certificate `der`, made at `now`.
///
/// # Errors
/// The certificate does not decode.
pub(crate) fn stored_blob(der: &[u8], now: u32) -> Result<Vec<u8>, crate::kbx::create::CreateError> {
    let mut spec = x509_spec(der, false)?;
    spec.created_at = now;
    Ok(encode_key_blob(&spec))
}

/// Whether `bytes` are for gpgsm rather than gpg: PEM that is not an
/// OpenPGP armor (certificates, or something [`certificates`] names and
/// refuses), or a DER certificate.
#[must_use]
pub fn looks_like_certificates(bytes: &[u8]) -> bool {
    let has = |label: &[u8]| bytes.windows(label.len()).any(|w| w == label);
    has(b"-----BEGIN ") && !has(b"-----BEGIN PGP ")
        || bytes.first() == Some(&0x30) && X509Certificate::from_der(bytes).is_ok()
}

/// The certificates of a file, in its order.
///
/// # Errors
/// A block or certificate that does not decode, or none at all.
pub fn certificates(bytes: &[u8]) -> Result<Vec<IncomingCert>, IncomingCertError> {
    let ders = if bytes.first() == Some(&0x30) { vec![bytes.to_vec()] } else { pem_blocks(bytes)? };
    if ders.is_empty() {
        return Err(IncomingCertError::Empty);
    }
    ders.into_iter().enumerate().map(|(i, der)| one(i + 1, der)).collect()
}

fn pem_blocks(bytes: &[u8]) -> Result<Vec<Vec<u8>>, IncomingCertError> {
    let mut out = Vec::new();
    for (i, block) in Pem::iter_from_buffer(bytes).enumerate() {
        let index = i + 1;
        let pem = block.map_err(|e| IncomingCertError::Pem { index, why: e.to_string() })?;
        if pem.label != "CERTIFICATE" && pem.label != "X509 CERTIFICATE" {
            return Err(IncomingCertError::Label { index, label: pem.label });
        }
        out.push(pem.contents);
    }
    Ok(out)
}

fn one(index: usize, der: Vec<u8>) -> Result<IncomingCert, IncomingCertError> {
    let bad = |why: String| IncomingCertError::Certificate { index, why };
    let image = stored_blob(&der, 0).map_err(|e| bad(e.to_string()))?;
    let cert = match parse_blob(&image) {
        Ok(Blob::Key(b)) => Cert::from_blob(&b, 0),
        _ => None,
    };
    let cert = cert.ok_or_else(|| bad("its blob does not decode".into()))?;
    Ok(IncomingCert { cert })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gpgsm's `--armor --export` of the mixed fixture's 24 certificates,
    /// and its binary export (the first certificate only).
    const PEM: &[u8] = include_bytes!("../../tests/fixtures/gnupg-mixed.certs.pem");
    const DER: &[u8] = include_bytes!("../../tests/fixtures/gnupg-mixed.first-cert.der");

    #[test]
    fn pem_and_der_give_the_same_certificates() {
        assert!(looks_like_certificates(PEM) && looks_like_certificates(DER));
        let all = certificates(PEM).unwrap();
        assert_eq!(all.len(), 24);
        let one = certificates(DER).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].fingerprint(), all[0].fingerprint());
        assert_eq!(stored_blob(&one[0].cert.der, 7).unwrap(), stored_blob(&all[0].cert.der, 7).unwrap());
    }

    #[test]
    fn other_files_are_refused_in_one_line() {
        assert!(!looks_like_certificates(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n"));
        let key = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert!(looks_like_certificates(key));
        assert!(matches!(certificates(key), Err(IncomingCertError::Label { index: 1, .. })));
        assert_eq!(certificates(b"nothing here").unwrap_err(), IncomingCertError::Empty);
        let bad = certificates(&[0x30, 0x03, 1, 2, 3]).unwrap_err();
        assert!(matches!(bad, IncomingCertError::Certificate { index: 1, .. }));
    }
}
