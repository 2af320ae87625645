//! The shape of a generated PKI: which certificates exist, who issues
//! whom, and what gpgsm is expected to say about each.
//!
//! # Calibration (the `seed` preset)
//!
//! The seed's run of `gpgsm -k --with-validation` read the 42 MiB keybox
//! about 911 times: its seven rows fit `events ≈ 911 × S/B + 11 500`. What
//! each listed certificate costs in full-file reads follows from gpgsm's
//! chain walk (see `crate::x509::search`), with `p(x)` the
//! position of certificate `x` in the file as a fraction of its size:
//!
//! * the listing itself: one pass (1.0 in total);
//! * each step up the chain (`find_up`): with an authorityKeyIdentifier
//!   that also names the issuer certificate by its issuer and serial
//!   number, a search that stops at the issuer, `p(issuer)`; with a key
//!   identifier only, a scan to the end of the file, 1.0;
//! * after a chain that reaches a root (a root itself included; trusted or
//!   not, whatever the verdict),
//!   one fingerprint search per chain element, `Σ p(element)`;
//! * a missing issuer: key-id scan, ephemeral key-id scan, subject scan,
//!   ephemeral subject scan: 4.0, and no fingerprint searches.
//!
//! CA certificates are imported just before their first end entity, so
//! they sit early (`p ≈ 0.05`); end entities lie around `p ≈ 0.6` on
//! average. An end entity under an intermediate then costs about
//! `1 + 0.05 + 0.6 + 0.1 = 1.75` when its own identifier is key-id-only and
//! `0.05 + 0.05 + 0.6 + 0.1 = 0.8` with issuer and serial (intermediates
//! always carry issuer and serial). With the seed's 803 certificates (6
//! roots, 12 intermediates, 785 end entities of which 13 have a missing
//! issuer and 8 have expired), the total is about
//! `1 + 13·4 + 772·(0.8 + k)` full reads for a key-id-only share `k`:
//! `k = 0.35` gives ≈ 910 (911 wanted). Summing the model above over the
//! actual positions of `gen --preset seed` (seed 1) gives 910 full reads,
//! 4.89 M reads of 8 KiB; before the intermediates got issuer and serial
//! (every leaf under one paying a full scan) the model said 1408 and
//! gpgsm 2.2.40 under strace counted 7 507 512 reads (1397 full reads):
//! the model is within 1 % of GnuPG. Other seeds give 830–980.

use rand::seq::SliceRandom;
use rand::Rng;
use rcgen::DnType;

use super::config::Pki;
use super::names::{person, ORGS};
use super::signer::KeyKind;
use super::x509::{chance, AkiStyle, CertSpec, MailIn};

/// 2015-01-01T00:00:00Z.
const Y2015: i64 = 1_420_070_400;
/// One (Julian) year in seconds.
const YEAR: i64 = 31_557_600;

/// The role of a certificate in the PKI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// A self-signed root CA (listed in the trustlist).
    Root,
    /// A CA under a root.
    Intermediate,
    /// An end entity.
    Leaf,
}

/// What gpgsm is expected to report for a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expected {
    /// `[certificate is good]`.
    Good,
    /// Its issuer is not in the keybox.
    MissingIssuer,
    /// It has expired.
    Expired,
}

/// One certificate of the plan.
#[derive(Debug, Clone)]
pub(super) struct PlannedCert {
    /// What goes into it.
    pub spec: CertSpec,
    /// Index of the issuer in the plan (`None` = self-signed).
    pub parent: Option<usize>,
    /// Its role.
    pub role: Role,
    /// Whether it is written to the keybox (hidden CAs issue the
    /// certificates whose issuer is missing).
    pub emitted: bool,
    /// What gpgsm should say.
    pub expected: Expected,
}

/// The certificates in issuing order (every issuer before what it issues).
#[derive(Debug, Clone, Default)]
pub(super) struct PkiPlan {
    /// All certificates, emitted or not.
    pub certs: Vec<PlannedCert>,
}

fn ca_spec(
    org: &str,
    country: &str,
    cn: String,
    ou: Option<String>,
    key: KeyKind,
    years: (i64, i64),
    path: Option<u8>,
) -> CertSpec {
    let mut subject = vec![(DnType::CountryName, country.to_string()), (DnType::OrganizationName, org.to_string())];
    if let Some(ou) = ou {
        subject.push((DnType::OrganizationalUnitName, ou));
    }
    subject.push((DnType::CommonName, cn));
    CertSpec {
        subject,
        key,
        ca: Some(path),
        not_before: Y2015 + years.0 * YEAR,
        not_after: Y2015 + years.1 * YEAR,
        mail: None,
        aki: AkiStyle::KeyId,
    }
}

/// Plan `n` emitted certificates with the keys and identifier forms of `pki`.
pub(super) fn plan(n: usize, pki: Pki, rng: &mut impl Rng) -> PkiPlan {
    let keyid_share = pki.keyid_only_share();
    let mut p = PkiPlan::default();
    if n == 0 {
        return p;
    }
    let roots = ((n + 67) / 134).clamp(1, 8);
    let per_root = match n {
        0..=7 => 0,
        8..=39 => 1,
        _ => 2,
    };
    let cas = roots * (1 + per_root);
    let leaves = n.saturating_sub(cas);
    let missing = if n >= 10 { (n / 60).max(1) } else { 0 };
    let expired = if n >= 10 { (n / 100).max(1) } else { 0 };
    let mut issuers = Vec::new(); // (index, weight) of CAs that issue end entities
    for r in 0..roots.min(n) {
        let (org, cc) = ORGS[r % ORGS.len()];
        let spec = ca_spec(
            org,
            cc,
            format!("{org} Root CA {}", r + 1),
            Some(format!("{org} Root")),
            pki.root_key(r),
            (0, 30),
            None,
        );
        let root = p.certs.len();
        p.certs.push(PlannedCert { spec, parent: None, role: Role::Root, emitted: true, expected: Expected::Good });
        issuers.push((root, 1));
        for i in 0..per_root {
            let cn = format!("{org} Issuing CA {}-{}", r + 1, i + 1);
            let mut spec = ca_spec(org, cc, cn, None, pki.issuing_key(r * per_root + i), (3, 15), Some(0));
            spec.aki = AkiStyle::KeyIdIssuerSerial;
            let idx = p.certs.len();
            p.certs.push(PlannedCert {
                spec,
                parent: Some(root),
                role: Role::Intermediate,
                emitted: true,
                expected: Expected::Good,
            });
            issuers.push((idx, 6));
        }
    }
    // A CA that is never written: it issues the certificates whose issuer is missing.
    let hidden = (missing > 0).then(|| {
        let spec = ca_spec(
            "Omega Unknown",
            "US",
            "Omega Unknown CA Issuing CA 3-1".into(),
            None,
            KeyKind::P256,
            (2, 20),
            None,
        );
        p.certs.push(PlannedCert { spec, parent: None, role: Role::Root, emitted: false, expected: Expected::Good });
        p.certs.len() - 1
    });
    let total_weight: usize = issuers.iter().map(|w| w.1).sum();
    for l in 0..leaves {
        let (expected, parent) = if l < missing {
            (Expected::MissingIssuer, hidden.unwrap_or(0))
        } else {
            let mut pick = rng.gen_range(0..total_weight.max(1));
            let parent = issuers.iter().find(|(_, w)| {
                let hit = pick < *w;
                pick = pick.saturating_sub(*w);
                hit
            });
            let expected = if l < missing + expired { Expected::Expired } else { Expected::Good };
            (expected, parent.map_or(0, |x| x.0))
        };
        let (name, mail) = person(rng, l);
        let parent_subject = &p.certs[parent].spec.subject;
        let org = parent_subject
            .iter()
            .find(|(t, _)| *t == DnType::OrganizationName)
            .map(|x| x.1.clone())
            .unwrap_or_default();
        let cc = parent_subject[0].1.clone();
        let (nb, na) = if expected == Expected::Expired {
            let nb = Y2015 + 5 * YEAR + rng.gen_range(0..2 * YEAR);
            (nb, nb + 2 * YEAR + rng.gen_range(0..YEAR))
        } else {
            let nb = Y2015 + 9 * YEAR + rng.gen_range(0..2 * YEAR);
            (nb, nb + 4 * YEAR + rng.gen_range(0..2 * YEAR))
        };
        let key = pki.leaf_key(rng.gen_range(0..100));
        let spec = CertSpec {
            subject: vec![
                (DnType::CountryName, cc),
                (DnType::OrganizationName, org),
                (
                    DnType::OrganizationalUnitName,
                    ["People", "Staff", "Persons", "Engineering"].choose(rng).copied().unwrap_or("People").into(),
                ),
                (DnType::CommonName, name),
            ],
            key,
            ca: None,
            not_before: nb,
            not_after: na,
            mail: Some((mail, if chance(rng, 0.5) { MailIn::Subject } else { MailIn::AltName })),
            aki: if chance(rng, keyid_share) || expected == Expected::MissingIssuer {
                AkiStyle::KeyId
            } else {
                AkiStyle::KeyIdIssuerSerial
            },
        };
        p.certs.push(PlannedCert { spec, parent: Some(parent), role: Role::Leaf, emitted: true, expected });
    }
    p
}

impl PkiPlan {
    /// Number of certificates written to the keybox.
    pub(super) fn emitted(&self) -> usize {
        self.certs.iter().filter(|c| c.emitted).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn seed_composition() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let p = plan(803, Pki::Seed, &mut rng);
        assert_eq!(p.emitted(), 803);
        let count = |r: Role| p.certs.iter().filter(|c| c.emitted && c.role == r).count();
        assert_eq!((count(Role::Root), count(Role::Intermediate)), (6, 12));
        assert_eq!(p.certs.iter().filter(|c| c.expected == Expected::MissingIssuer).count(), 13);
        assert_eq!(p.certs.iter().filter(|c| c.expected == Expected::Expired).count(), 8);
        for (i, c) in p.certs.iter().enumerate() {
            assert!(c.parent.is_none_or(|parent| parent < i), "issuers come first");
        }
    }

    #[test]
    fn tiny_composition() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        for n in [1, 2, 5, 12, 16] {
            assert_eq!(plan(n, Pki::Mixed, &mut rng).emitted(), n, "n = {n}");
        }
    }
}
