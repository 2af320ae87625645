//! What validation needs from a certificate, decoded once per certificate.

use std::ops::{Deref, Range};
use std::sync::Arc;

use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::kbx::dn::gnupg_dn_bytes;
use crate::kbx::KeyBlob;

/// A certificate found in the keybox, with the strings GnuPG stored for it.
///
/// Cheap to clone (the contents are shared): chains, indexes and
/// signature-check queues all hold the same copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cert(Arc<CertData>);

/// The contents of a [`Cert`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct CertData {
    /// SHA-1 fingerprint (from the key table).
    pub fpr: [u8; 20],
    /// Issuer DN as stored in the blob (GnuPG's string form).
    pub issuer: Vec<u8>,
    /// Subject DN as stored in the blob.
    pub subject: Vec<u8>,
    /// Serial number as stored in the blob.
    pub serial: Vec<u8>,
    /// The DER certificate.
    pub der: Vec<u8>,
    /// File offset of the blob.
    pub offset: u64,
    /// Whether the blob is flagged ephemeral.
    pub ephemeral: bool,
}

impl Cert {
    /// Take a certificate out of an X.509 blob (`None` for other blobs).
    pub(crate) fn from_blob(blob: &KeyBlob<'_>, offset: u64) -> Option<Self> {
        let fpr: [u8; 20] = blob.key(0).fingerprint.try_into().ok()?;
        Some(Self(Arc::new(CertData {
            fpr,
            issuer: blob.x509_issuer()?.to_vec(),
            subject: blob.x509_subject()?.to_vec(),
            serial: blob.serial().to_vec(),
            der: blob.data().to_vec(),
            offset,
            ephemeral: blob.is_ephemeral(),
        })))
    }
}

impl Deref for Cert {
    type Target = CertData;

    fn deref(&self) -> &CertData {
        &self.0
    }
}

/// The critical extensions gpgsm understands (`unknown_criticals` in its
/// sm/certchain.c): keyUsage, subjectAltName, basicConstraints,
/// certificatePolicies, extendedKeyUsage, and its own validityModel.
const GPGSM_KNOWN_CRITICAL: [&str; 6] =
    ["2.5.29.15", "2.5.29.17", "2.5.29.19", "2.5.29.32", "2.5.29.37", "1.3.6.1.4.1.8301.3.5"];

/// The decoded parts of a certificate that validation looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertInfo {
    /// Validity start (Unix seconds).
    pub not_before: i64,
    /// Validity end (Unix seconds).
    pub not_after: i64,
    /// basicConstraints CA flag.
    pub is_ca: bool,
    /// basicConstraints path length.
    pub path_len: Option<u32>,
    /// subjectKeyIdentifier.
    pub ski: Option<Vec<u8>>,
    /// authorityKeyIdentifier key id.
    pub aki_keyid: Option<Vec<u8>>,
    /// authorityKeyIdentifier issuer (GnuPG's string form) and serial.
    pub aki_issuer_sn: Option<(Vec<u8>, Vec<u8>)>,
    /// Critical extensions gpgsm does not support (it then calls the
    /// certificate unsupported), as dotted OIDs.
    pub unknown_critical: Vec<String>,
    /// Whether a certificatePolicies extension is present, and if so
    /// whether it is critical (gpgsm, without a `policies.txt` naming the
    /// policies, then reports "No policy match").
    pub policies: Option<bool>,
    /// Where the signed part (tbsCertificate) is in the DER.
    pub tbs: Range<usize>,
    /// Where the subjectPublicKeyInfo is in the DER.
    pub spki: Range<usize>,
}

impl CertInfo {
    /// Decode `der`.
    ///
    /// # Errors
    /// [`CertDecodeError`] if the certificate does not decode.
    pub(crate) fn decode(der: &[u8]) -> Result<Self, CertDecodeError> {
        let (_, cert) = X509Certificate::from_der(der)?;
        Ok(Self::of(&cert))
    }

    /// Take what validation needs from an already decoded certificate.
    pub(crate) fn of(cert: &X509Certificate<'_>) -> Self {
        let bc = cert.basic_constraints().ok().flatten().map(|b| b.value.clone());
        let mut info = CertInfo {
            not_before: cert.validity().not_before.timestamp(),
            not_after: cert.validity().not_after.timestamp(),
            is_ca: bc.as_ref().is_some_and(|b| b.ca),
            path_len: bc.and_then(|b| b.path_len_constraint),
            ski: None,
            aki_keyid: None,
            aki_issuer_sn: None,
            unknown_critical: cert
                .extensions()
                .iter()
                .filter(|e| e.critical)
                .map(|e| e.oid.to_id_string())
                .filter(|oid| !GPGSM_KNOWN_CRITICAL.contains(&oid.as_str()))
                .collect(),
            policies: cert.extensions().iter().find(|e| e.oid.to_id_string() == "2.5.29.32").map(|e| e.critical),
            tbs: range_in(cert.as_raw(), cert.tbs_certificate.as_ref()),
            spki: range_in(cert.as_raw(), cert.public_key().raw),
        };
        for ext in cert.extensions() {
            match ext.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(k) => info.ski = Some(k.0.to_vec()),
                ParsedExtension::AuthorityKeyIdentifier(a) => {
                    info.aki_keyid = a.key_identifier.as_ref().map(|k| k.0.to_vec());
                    let name = a.authority_cert_issuer.as_ref().and_then(|names| {
                        names.iter().find_map(|n| match n {
                            GeneralName::DirectoryName(dn) => Some(gnupg_dn_bytes(dn)),
                            _ => None,
                        })
                    });
                    if let (Some(name), Some(serial)) = (name, a.authority_cert_serial) {
                        info.aki_issuer_sn = Some((name, serial.to_vec()));
                    }
                }
                _ => {}
            }
        }
        info
    }
}

/// Why a certificate does not decode: x509-parser's own message, never
/// the parser's `Debug` form (nom's `Display` is `Debug`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CertDecodeError {
    /// The DER is malformed or not a certificate.
    #[error("certificate does not decode: {0}")]
    Der(x509_parser::error::X509Error),
    /// The DER ends early.
    #[error("certificate does not decode: it is truncated")]
    Truncated,
}

impl From<x509_parser::nom::Err<x509_parser::error::X509Error>> for CertDecodeError {
    fn from(e: x509_parser::nom::Err<x509_parser::error::X509Error>) -> Self {
        use x509_parser::nom::Err;
        match e {
            Err::Error(e) | Err::Failure(e) => CertDecodeError::Der(e),
            Err::Incomplete(_) => CertDecodeError::Truncated,
        }
    }
}

/// Where `part` (a slice of `whole`) lies in `whole`.
fn range_in(whole: &[u8], part: &[u8]) -> Range<usize> {
    let start = (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize).min(whole.len());
    start..(start + part.len()).min(whole.len())
}

/// Strip leading zero bytes of a serial number.
pub(super) fn serial_eq(a: &[u8], b: &[u8]) -> bool {
    let strip = |s: &[u8]| s[s.iter().position(|&x| x != 0).unwrap_or(s.len())..].to_vec();
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A self-signed certificate with one extra extension (content NULL).
    fn with_extension(oid: &[u64], critical: bool) -> Vec<u8> {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let key = crate::generate::signer::CertKey::generate(crate::generate::signer::KeyKind::P256, &mut rng);
        let mut params = rcgen::CertificateParams::default();
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&[1]));
        let mut ext = rcgen::CustomExtension::from_oid_content(oid, vec![0x05, 0x00]);
        ext.set_criticality(critical);
        params.custom_extensions.push(ext);
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn critical_extensions_gpgsm_does_not_know_are_noticed() {
        let info = |oid: &[u64], critical| CertInfo::decode(&with_extension(oid, critical)).unwrap();
        assert_eq!(info(&[1, 2, 3, 4], true).unknown_critical, ["1.2.3.4"]);
        assert!(info(&[1, 2, 3, 4], false).unknown_critical.is_empty());
        // nameConstraints is not in gpgsm's list; its validityModel is.
        assert_eq!(info(&[2, 5, 29, 30], true).unknown_critical, ["2.5.29.30"]);
        assert!(info(&[1, 3, 6, 1, 4, 1, 8301, 3, 5], true).unknown_critical.is_empty());
    }

    #[test]
    fn critical_certificate_policies_are_noticed() {
        // certificatePolicies with one policy, 1.2.3.4 (DER, as the content).
        let policies = vec![0x30, 0x07, 0x30, 0x05, 0x06, 0x03, 0x2A, 0x03, 0x04];
        let der = |critical| {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
            let key = crate::generate::signer::CertKey::generate(crate::generate::signer::KeyKind::P256, &mut rng);
            let mut params = rcgen::CertificateParams::default();
            params.serial_number = Some(rcgen::SerialNumber::from_slice(&[1]));
            let mut ext = rcgen::CustomExtension::from_oid_content(&[2, 5, 29, 32], policies.clone());
            ext.set_criticality(critical);
            params.custom_extensions.push(ext);
            params.self_signed(&key).unwrap().der().to_vec()
        };
        let critical = CertInfo::decode(&der(true)).unwrap();
        assert_eq!(critical.policies, Some(true));
        assert!(critical.unknown_critical.is_empty());
        assert_eq!(CertInfo::decode(&der(false)).unwrap().policies, Some(false));
    }

    #[test]
    fn signed_part_and_key_ranges_point_into_the_der() {
        let der = with_extension(&[1, 2, 3, 4], false);
        let info = CertInfo::decode(&der).unwrap();
        let (_, cert) = X509Certificate::from_der(&der).unwrap();
        assert_eq!(&der[info.tbs.clone()], cert.tbs_certificate.as_ref());
        assert_eq!(&der[info.spki.clone()], cert.public_key().raw);
    }
}
