//! What a generated keybox holds: its trustlist and its [`Summary`].

use super::blobs::fpr_hex;
use super::keyring::Certifications;
use super::pki::{Expected, PkiPlan, Role};
use super::x509::IssuedCert;

/// Counts of what was generated.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Blobs, header included.
    pub blobs: usize,
    /// OpenPGP keys.
    pub openpgp: usize,
    /// X.509 certificates written.
    pub x509: usize,
    /// Root CAs (all trusted).
    pub roots: usize,
    /// Intermediate CAs.
    pub intermediates: usize,
    /// End entities.
    pub leaves: usize,
    /// SHA-1 fingerprints (hex) of certificates whose issuer is missing.
    pub missing_issuer: Vec<String>,
    /// SHA-1 fingerprints (hex) of expired certificates.
    pub expired: Vec<String>,
    /// Third-party certifications on OpenPGP user ids.
    pub certifications: usize,
    /// Of those, the ones made by keys that are not in the keybox.
    pub outside_certifications: usize,
    /// Photo ids.
    pub photos: usize,
    /// File size in bytes.
    pub size: u64,
}

/// gpg-agent `trustlist.txt` lines marking the root CAs trusted.
pub(super) fn trustlist(plan: &PkiPlan, certs: &[IssuedCert]) -> String {
    let mut s = String::from("# Root CAs of a keybox made by kbxscope gen (SHA-1 fingerprint, S = S/MIME)\n");
    for (p, c) in plan.certs.iter().zip(certs) {
        if p.emitted && p.role == Role::Root {
            let hex = fpr_hex(&c.der);
            let colons: Vec<&str> = (0..hex.len()).step_by(2).map(|i| &hex[i..i + 2]).collect();
            s.push_str(&format!("{} S\n", colons.join(":")));
        }
    }
    s
}

/// The counts of what was made.
pub(super) fn summarize(
    plan: &PkiPlan,
    certs: &[IssuedCert],
    keys: usize,
    blobs: usize,
    certifications: Certifications,
    photos: usize,
    size: usize,
) -> Summary {
    let emitted = || plan.certs.iter().zip(certs).filter(|(p, _)| p.emitted);
    let role = |r: Role| emitted().filter(|(p, _)| p.role == r).count();
    let expected = |e: Expected| emitted().filter(|(p, _)| p.expected == e).map(|(_, c)| fpr_hex(&c.der)).collect();
    Summary {
        blobs,
        openpgp: keys,
        x509: plan.emitted(),
        roots: role(Role::Root),
        intermediates: role(Role::Intermediate),
        leaves: role(Role::Leaf),
        missing_issuer: expected(Expected::MissingIssuer),
        expired: expected(Expected::Expired),
        certifications: certifications.total,
        outside_certifications: certifications.outside,
        photos,
        size: size as u64,
    }
}
