//! What `list` shows of an X.509 certificate, decoded with `x509-parser`.
//!
//! Issuer and subject are taken from the blob, where GnuPG stored them in
//! libksba's RFC 2253 form (`CN=…,O=…,C=…`): that is what gpgsm prints and
//! what its searches compare. `x509-parser`'s own `to_string()` uses a
//! different form and is not used for names.

use serde::Serialize;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::certinfo::CertDecodeError;
use crate::kbx::dump::hex_upper;
use crate::kbx::search::mail_of;
use crate::kbx::KeyBlob;
use crate::timefmt::rfc3339;

/// One certificate as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct X509Cert {
    /// SHA-1 fingerprint of the DER, upper-case hex (as in the key table).
    pub fingerprint: String,
    /// gpgsm's short id: the last 4 bytes of the fingerprint.
    pub key_id: String,
    /// Serial number, upper-case hex, as stored in the blob.
    pub serial: String,
    /// Issuer DN (GnuPG's stored form).
    pub issuer: String,
    /// Subject DN (GnuPG's stored form).
    pub subject: String,
    /// Mail addresses (from the subject's emailAddress and the subjectAltName).
    pub emails: Vec<String>,
    /// Start of validity, RFC 3339 UTC.
    pub not_before: String,
    /// End of validity, RFC 3339 UTC.
    pub not_after: String,
    /// Key algorithm as gpgsm/gpg names it (`rsa3072`, `nistp256`, `ed25519`, …).
    pub key_algorithm: String,
    /// Whether basicConstraints marks it as a CA.
    pub is_ca: bool,
}

/// Decode the certificate of an X.509 blob.
///
/// # Errors
/// [`CertDecodeError`] when the DER does not decode.
pub fn describe(blob: &KeyBlob<'_>) -> Result<X509Cert, CertDecodeError> {
    let (_, cert) = X509Certificate::from_der(blob.data())?;
    Ok(describe_decoded(blob, &cert))
}

/// What `list` shows of an X.509 blob whose certificate `cert` the caller
/// has decoded already.
pub(crate) fn describe_decoded(blob: &KeyBlob<'_>, cert: &X509Certificate<'_>) -> X509Cert {
    let fpr = blob.key(0).fingerprint;
    let text = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
    let validity = cert.validity();
    X509Cert {
        fingerprint: hex_upper(fpr),
        key_id: hex_upper(&fpr[fpr.len() - 4..]),
        serial: hex_upper(blob.serial()),
        issuer: text(blob.x509_issuer()),
        subject: text(blob.x509_subject()),
        emails: blob
            .uids()
            .skip(2)
            .filter_map(|u| u.name.starts_with(b"<").then(|| mail_of(u.name)).flatten())
            .map(|m| String::from_utf8_lossy(m).into_owned())
            .collect(),
        not_before: rfc3339(validity.not_before.timestamp()),
        not_after: rfc3339(validity.not_after.timestamp()),
        key_algorithm: key_algorithm(cert),
        is_ca: cert.is_ca(),
    }
}

fn key_algorithm(cert: &X509Certificate<'_>) -> String {
    let spki = cert.public_key();
    let oid = spki.algorithm.algorithm.to_id_string();
    let curve = spki.algorithm.parameters.as_ref().and_then(|p| p.as_oid().ok()).map(|o| o.to_id_string());
    match (oid.as_str(), curve.as_deref()) {
        ("1.2.840.113549.1.1.1" | "1.2.840.113549.1.1.10", _) => {
            let bits = spki.parsed().map(|k| k.key_size()).unwrap_or(0);
            format!("rsa{bits}")
        }
        ("1.2.840.10045.2.1", Some("1.2.840.10045.3.1.7")) => "nistp256".into(),
        ("1.2.840.10045.2.1", Some("1.3.132.0.34")) => "nistp384".into(),
        ("1.2.840.10045.2.1", Some("1.3.132.0.35")) => "nistp521".into(),
        ("1.2.840.10045.2.1", Some(c)) => format!("ecc({c})"),
        ("1.3.101.112", _) => "ed25519".into(),
        ("1.3.101.113", _) => "ed448".into(),
        (other, _) => other.to_string(),
    }
}
