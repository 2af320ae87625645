//! What validation needs from a certificate, decoded once per certificate.

use std::collections::HashMap;

use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::gen::dn::gnupg_dn;
use crate::kbx::KeyBlob;

/// A certificate found in the keybox, with the strings GnuPG stored for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cert {
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
    pub fn from_blob(blob: &KeyBlob<'_>, offset: u64) -> Option<Self> {
        let fpr: [u8; 20] = blob.key(0).fingerprint.try_into().ok()?;
        Some(Self {
            fpr,
            issuer: blob.x509_issuer()?.to_vec(),
            subject: blob.x509_subject()?.to_vec(),
            serial: blob.serial().to_vec(),
            der: blob.data().to_vec(),
            offset,
            ephemeral: blob.is_ephemeral(),
        })
    }
}

/// The decoded parts of a certificate that validation looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
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
}

impl CertInfo {
    /// Decode `der`.
    ///
    /// # Errors
    /// A message if the certificate does not decode.
    pub fn decode(der: &[u8]) -> Result<Self, String> {
        let (_, cert) = X509Certificate::from_der(der).map_err(|e| format!("certificate does not decode: {e}"))?;
        let bc = cert.basic_constraints().ok().flatten().map(|b| b.value.clone());
        let mut info = CertInfo {
            not_before: cert.validity().not_before.timestamp(),
            not_after: cert.validity().not_after.timestamp(),
            is_ca: bc.as_ref().is_some_and(|b| b.ca),
            path_len: bc.and_then(|b| b.path_len_constraint),
            ski: None,
            aki_keyid: None,
            aki_issuer_sn: None,
        };
        for ext in cert.extensions() {
            match ext.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(k) => info.ski = Some(k.0.to_vec()),
                ParsedExtension::AuthorityKeyIdentifier(a) => {
                    info.aki_keyid = a.key_identifier.as_ref().map(|k| k.0.to_vec());
                    let name = a.authority_cert_issuer.as_ref().and_then(|names| {
                        names.iter().find_map(|n| match n {
                            GeneralName::DirectoryName(dn) => Some(gnupg_dn(dn).into_bytes()),
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
        Ok(info)
    }

    /// Whether the validity period covers `at`.
    pub fn valid_at(&self, at: i64) -> bool {
        self.not_before <= at && at <= self.not_after
    }
}

/// (child, issuer) fingerprints of a signature check.
type PairKey = ([u8; 20], [u8; 20]);

/// Decoded certificates and signature checks, each done once per run.
#[derive(Debug, Default)]
pub struct Memo {
    infos: HashMap<[u8; 20], Result<CertInfo, String>>,
    signatures: HashMap<PairKey, bool>,
}

impl Memo {
    /// The decoded certificate.
    ///
    /// # Errors
    /// The decoding error, as a message.
    pub fn info(&mut self, cert: &Cert) -> Result<&CertInfo, String> {
        self.infos.entry(cert.fpr).or_insert_with(|| CertInfo::decode(&cert.der)).as_ref().map_err(Clone::clone)
    }

    /// Whether `issuer`'s key verifies `child`'s signature.
    pub fn signature_ok(&mut self, child: &Cert, issuer: &Cert) -> bool {
        *self.signatures.entry((child.fpr, issuer.fpr)).or_insert_with(|| verify(child, issuer))
    }

    /// Check many (child, issuer) signatures at once, on all cores, and
    /// remember the results. Pairs already checked are skipped.
    pub fn prefetch_signatures(&mut self, pairs: Vec<(Cert, Cert)>) {
        let todo: Vec<(Cert, Cert)> =
            pairs.into_iter().filter(|(c, i)| !self.signatures.contains_key(&(c.fpr, i.fpr))).collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(todo.len().max(1));
        // Each thread takes the next unchecked pair: the costly ones (P-384
        // and large RSA keys) cluster in the keybox, so fixed halves would
        // leave one core idle.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<Vec<(PairKey, bool)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some((c, i)) = todo.get(k) else { return out };
                            out.push(((c.fpr, i.fpr), verify(c, i)));
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
        });
        self.signatures.extend(results.into_iter().flatten());
    }
}

/// Whether `issuer`'s key verifies `child`'s signature (no memo).
fn verify(child: &Cert, issuer: &Cert) -> bool {
    let (Ok((_, c)), Ok((_, i))) = (X509Certificate::from_der(&child.der), X509Certificate::from_der(&issuer.der))
    else {
        return false;
    };
    c.verify_signature(Some(i.public_key())).is_ok()
}

/// Strip leading zero bytes of a serial number.
pub fn serial_eq(a: &[u8], b: &[u8]) -> bool {
    let strip = |s: &[u8]| s[s.iter().position(|&x| x != 0).unwrap_or(s.len())..].to_vec();
    strip(a) == strip(b)
}
