//! Certificates for generated keyboxes, made with `rcgen`.
//!
//! Each certificate carries a subjectKeyIdentifier (SHA-1 of its key) and,
//! unless self-signed, an authorityKeyIdentifier written by hand so that
//! both forms seen in the wild can be made: the key identifier alone
//! (openssl's default; gpgsm then scans the whole keybox for the issuer)
//! or the key identifier plus the issuer certificate's own issuer name and
//! serial number (gpgsm stops at the issuer). CAs get basicConstraints CA:TRUE (gpgsm insists),
//! end entities CA:FALSE, a mail address in the subject (emailAddress) or in
//! the subjectAltName, and S/MIME key usage.

use rand::{CryptoRng, Rng, RngCore};
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DistinguishedName, DnType, DnValue, ExtendedKeyUsagePurpose,
    IsCa, Issuer, KeyIdMethod, KeyUsagePurpose, SanType, SerialNumber,
};
use time::OffsetDateTime;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::signer::{CertKey, KeyKind};
use crate::kbx::dn::gnupg_dn;

/// How the authorityKeyIdentifier names the issuer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AkiStyle {
    /// keyIdentifier only.
    KeyId,
    /// keyIdentifier, authorityCertIssuer and authorityCertSerialNumber.
    KeyIdIssuerSerial,
}

/// Where an end entity's mail address goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailIn {
    /// An emailAddress attribute in the subject.
    Subject,
    /// An rfc822Name in the subjectAltName.
    AltName,
}

/// What to put into one certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertSpec {
    /// Subject attributes in DER order (e.g. C, O, OU, CN).
    pub subject: Vec<(DnType, String)>,
    /// The certified key.
    pub key: KeyKind,
    /// `Some(path length)` for a CA (`None` inside = unlimited), `None` for an end entity.
    pub ca: Option<Option<u8>>,
    /// Validity start (Unix seconds).
    pub not_before: i64,
    /// Validity end (Unix seconds).
    pub not_after: i64,
    /// An end entity's mail address and where it goes.
    pub mail: Option<(String, MailIn)>,
    /// The authorityKeyIdentifier form (ignored when self-signed).
    pub aki: AkiStyle,
}

/// A made certificate, with what is needed to issue below it.
pub struct IssuedCert {
    /// The DER certificate.
    pub der: Vec<u8>,
    /// The serial number (INTEGER content bytes).
    pub serial: Vec<u8>,
    /// Issuer DN in GnuPG's string form.
    pub issuer_dn: String,
    /// Subject DN in GnuPG's string form.
    pub subject_dn: String,
    /// Mail addresses, as they go into the blob (without `<>`).
    pub mails: Vec<String>,
    params: CertificateParams,
    key: CertKey,
}

impl std::fmt::Debug for IssuedCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedCert").field("subject", &self.subject_dn).finish()
    }
}

/// Errors from certificate generation.
#[derive(Debug, thiserror::Error)]
#[error("cannot make certificate '{subject}': {reason}")]
pub struct CertError {
    subject: String,
    reason: String,
}

fn der_len(n: usize, out: &mut Vec<u8>) {
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes = (n as u32).to_be_bytes();
        let skip = bytes.iter().position(|&b| b != 0).unwrap_or(3);
        out.push(0x80 | (4 - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    der_len(content.len(), &mut out);
    out.extend_from_slice(content);
    out
}

/// The DER value of an authorityKeyIdentifier extension.
fn authority_key_id(key_id: &[u8], issuer: Option<(&[u8], &[u8])>) -> Vec<u8> {
    let mut content = tlv(0x80, key_id);
    if let Some((issuer_name_der, serial)) = issuer {
        content.extend(tlv(0xA1, &tlv(0xA4, issuer_name_der)));
        content.extend(tlv(0x82, serial));
    }
    tlv(0x30, &content)
}

/// A positive serial number of 16 random bytes.
pub(crate) fn random_serial(rng: &mut impl RngCore) -> Vec<u8> {
    let mut s = vec![0u8; 16];
    rng.fill_bytes(&mut s);
    s[0] = (s[0] & 0x7f).max(1);
    s
}

fn datetime(secs: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(secs).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// Make a certificate for `spec`, signed by `issuer` (self-signed if `None`).
///
/// # Errors
/// A [`CertError`] if rcgen refuses the parameters.
pub fn issue(
    spec: &CertSpec,
    issuer: Option<&IssuedCert>,
    rng: &mut (impl RngCore + CryptoRng),
) -> Result<IssuedCert, CertError> {
    issue_with(spec, issuer, Vec::new(), rng)
}

/// [`issue`] with extra extensions (tests use it for what `gen` never
/// makes, such as critical certificate policies).
///
/// # Errors
/// A [`CertError`] if rcgen refuses the parameters.
pub fn issue_with(
    spec: &CertSpec,
    issuer: Option<&IssuedCert>,
    extra: Vec<CustomExtension>,
    rng: &mut (impl RngCore + CryptoRng),
) -> Result<IssuedCert, CertError> {
    let err = |reason: String| CertError { subject: format!("{:?}", spec.subject), reason };
    let key = CertKey::generate(spec.key, rng);
    let serial = random_serial(rng);
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    for (ty, value) in &spec.subject {
        params.distinguished_name.push(ty.clone(), DnValue::Utf8String(value.clone()));
    }
    params.serial_number = Some(SerialNumber::from_slice(&serial));
    params.not_before = datetime(spec.not_before);
    params.not_after = datetime(spec.not_after);
    params.key_identifier_method = KeyIdMethod::PreSpecified(key.key_id());
    params.use_authority_key_identifier_extension = false;
    params.custom_extensions = extra;
    let mut mails = Vec::new();
    match spec.ca {
        Some(path) => {
            params.is_ca = IsCa::Ca(path.map_or(BasicConstraints::Unconstrained, BasicConstraints::Constrained));
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        }
        None => {
            params.is_ca = IsCa::ExplicitNoCa;
            params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::EmailProtection];
        }
    }
    if let Some((mail, place)) = &spec.mail {
        let ia5 = rcgen::string::Ia5String::try_from(mail.as_str()).map_err(|e| err(e.to_string()))?;
        match place {
            MailIn::Subject => params
                .distinguished_name
                .push(DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]), DnValue::Ia5String(ia5)),
            MailIn::AltName => params.subject_alt_names = vec![SanType::Rfc822Name(ia5)],
        }
        mails.push(mail.clone());
    }
    let cert = match issuer {
        None => params.self_signed(&key),
        Some(ca) => {
            let (_, ca_cert) = X509Certificate::from_der(&ca.der).map_err(|e| err(e.to_string()))?;
            // authorityCertIssuer + serial identify the issuer *certificate*:
            // the name of the issuer's own issuer, and the issuer's serial.
            let ca_name = ca_cert.issuer().as_raw();
            let issuer_serial = (spec.aki == AkiStyle::KeyIdIssuerSerial).then_some((ca_name, ca.serial.as_slice()));
            let aki = authority_key_id(&ca.key.key_id(), issuer_serial);
            params.custom_extensions.push(CustomExtension::from_oid_content(&[2, 5, 29, 35], aki));
            params.signed_by(&key, &Issuer::from_params(&ca.params, &ca.key))
        }
    }
    .map_err(|e| err(e.to_string()))?;
    let der = cert.der().to_vec();
    let (_, parsed) = X509Certificate::from_der(&der).map_err(|e| err(e.to_string()))?;
    Ok(IssuedCert {
        issuer_dn: gnupg_dn(parsed.issuer()),
        subject_dn: gnupg_dn(parsed.subject()),
        der,
        serial,
        mails,
        params,
        key,
    })
}

/// A random choice helper: `true` with probability `p`.
pub(crate) fn chance(rng: &mut impl Rng, p: f64) -> bool {
    rng.gen_bool(p.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use x509_parser::extensions::ParsedExtension;

    fn spec(cn: &str, ca: bool, aki: AkiStyle, mail: Option<(String, MailIn)>) -> CertSpec {
        CertSpec {
            subject: vec![
                (DnType::CountryName, "DE".into()),
                (DnType::OrganizationName, "Test".into()),
                (DnType::CommonName, cn.into()),
            ],
            key: KeyKind::P256,
            ca: ca.then_some(None),
            not_before: 1_700_000_000,
            not_after: 2_000_000_000,
            mail,
            aki,
        }
    }

    #[test]
    fn chain_verifies_and_carries_both_aki_forms() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let root = issue(&spec("Root", true, AkiStyle::KeyId, None), None, &mut rng).unwrap();
        let leaf_a = issue(
            &spec("A", false, AkiStyle::KeyId, Some(("a@example.org".into(), MailIn::AltName))),
            Some(&root),
            &mut rng,
        )
        .unwrap();
        let leaf_b = issue(
            &spec("B", false, AkiStyle::KeyIdIssuerSerial, Some(("b@example.org".into(), MailIn::Subject))),
            Some(&root),
            &mut rng,
        )
        .unwrap();
        assert_eq!(root.subject_dn, "CN=Root,O=Test,C=DE");
        assert_eq!(leaf_a.issuer_dn, root.subject_dn);
        assert_eq!(leaf_b.subject_dn, "1.2.840.113549.1.9.1=#62406578616D706C652E6F7267,CN=B,O=Test,C=DE");
        let (_, r) = X509Certificate::from_der(&root.der).unwrap();
        for (leaf, issuer_serial) in [(&leaf_a, false), (&leaf_b, true)] {
            let (_, c) = X509Certificate::from_der(&leaf.der).unwrap();
            c.verify_signature(Some(r.public_key())).unwrap();
            let aki = c.extensions().iter().find_map(|e| match e.parsed_extension() {
                ParsedExtension::AuthorityKeyIdentifier(a) => Some(a.clone()),
                _ => None,
            });
            let aki = aki.expect("leaf has an AKI");
            assert!(aki.key_identifier.is_some());
            assert_eq!(aki.authority_cert_serial.is_some(), issuer_serial);
            assert!(c.basic_constraints().unwrap().is_some());
        }
        r.verify_signature(None).unwrap();
    }

    #[test]
    fn rsa_and_p384_issue_and_verify() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
        let mut s = spec("R", true, AkiStyle::KeyId, None);
        s.key = KeyKind::Rsa(0);
        let root = issue(&s, None, &mut rng).unwrap();
        let mut l = spec("L", false, AkiStyle::KeyIdIssuerSerial, None);
        l.key = KeyKind::P384;
        let leaf = issue(&l, Some(&root), &mut rng).unwrap();
        let (_, r) = X509Certificate::from_der(&root.der).unwrap();
        let (_, c) = X509Certificate::from_der(&leaf.der).unwrap();
        c.verify_signature(Some(r.public_key())).unwrap();
    }
}
