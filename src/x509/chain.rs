//! Chain building and verdicts, as gpgsm does it in list mode.
//!
//! From the certificate up: a root (issuer = subject, and no
//! authorityKeyIdentifier or one that points at itself) ends the chain; it
//! must be a CA (unless its trustlist entry says `relax`) and be in the
//! trustlist, and its self-signature is checked when it is not. Any other
//! certificate needs its issuer (found by authorityKeyIdentifier issuer +
//! serial, else key id, else issuer name), whose key must verify its
//! signature and which must be a CA allowed to have this many CAs below
//! it. Validity periods are checked at `at`: a certificate not valid yet
//! ends the walk, an expired one is reported only if nothing worse was
//! found; critical extensions gpgsm does not know make a certificate
//! unsupported, and critical certificate policies are reported last.
//! Chains are at most 50 certificates long and may not loop. The order of
//! the checks, and so which reason wins, is gpgsm's (`do_validate_chain`
//! in its sm/certchain.c), compared with a live gpgsm in the tests.

use serde::Serialize;

use super::certinfo::{Cert, CertInfo};
use super::lookup::IssuerLookup;
use super::memo::Memo;
use super::pool::CheckPool;
use super::trustlist::TrustList;
use crate::kbx::dump::hex_upper;
use crate::lookup::LookupError;

/// gpgsm's longest chain.
pub(super) const MAX_CHAIN: usize = 50;

/// Why a certificate is bad, with gpgsm's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Problem {
    /// No issuer certificate in the keybox.
    MissingIssuer,
    /// The issuer is not a CA.
    BadCa,
    /// The chain is too long, loops, or exceeds a CA's path length.
    BadChain,
    /// The root is not (or no longer) in the trustlist.
    NotTrusted,
    /// A certificate in the chain has expired.
    Expired,
    /// A certificate in the chain is not valid yet.
    TooYoung,
    /// A certificate does not decode, or a root's self-signature is bad.
    BadCertificate,
    /// A certificate has a critical extension gpgsm does not know.
    Unsupported,
    /// A certificate's policies are critical and none is allowed (gpgsm
    /// without a `policies.txt`).
    NoPolicyMatch,
    /// gpg-agent rejected the trustlist; gpgsm reports its error ("Bad
    /// data", "Line too long") for every chain reaching a root.
    TrustList(&'static str),
}

impl Problem {
    /// The text gpgsm prints after `[certificate is bad: `.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::MissingIssuer => "Missing issuer certificate",
            Self::BadCa => "Bad CA certificate",
            Self::BadChain => "Bad certificate chain",
            Self::NotTrusted => "Not trusted",
            Self::Expired => "Certificate expired",
            Self::TooYoung => "Certificate too young",
            Self::BadCertificate => "Bad certificate",
            Self::Unsupported => "Unsupported certificate",
            Self::NoPolicyMatch => "No policy match",
            Self::TrustList(code) => code,
        }
    }
}

/// The verdict on one certificate (`--json`: the `validation` object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Validation {
    /// `"good"` or `"bad"`.
    pub status: &'static str,
    /// gpgsm's reason when bad.
    pub reason: Option<&'static str>,
    /// Fingerprints from the certificate up to where the chain ended.
    pub chain: Vec<String>,
    /// What gpgsm notes on the way, in its words and order (the bracketed
    /// lines it prints before the verdict).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Validation {
    fn new(problem: Option<Problem>, chain: &[Cert], notes: Vec<String>) -> Self {
        Self {
            status: if problem.is_none() { "good" } else { "bad" },
            reason: problem.map(Problem::reason),
            chain: chain.iter().map(|c| hex_upper(&c.fpr)).collect(),
            notes,
        }
    }

    /// Whether the certificate is good.
    pub(crate) fn is_good(&self) -> bool {
        self.status == "good"
    }
}

/// Validates certificates against a trustlist at a point in time.
#[derive(Debug)]
pub(crate) struct Validator<'t> {
    trust: &'t TrustList,
    at: i64,
    memo: Memo,
}

impl<'t> Validator<'t> {
    /// A validator trusting `trust`, checking validity at `at` (Unix seconds).
    pub(crate) fn new(trust: &'t TrustList, at: i64) -> Self {
        Self { trust, at, memo: Memo::default() }
    }

    /// Validate `target`, looking issuers up with `search`.
    ///
    /// # Errors
    /// I/O errors of the lookups.
    pub(crate) fn validate(
        &mut self,
        target: &Cert,
        search: &mut impl IssuerLookup,
    ) -> Result<Validation, LookupError> {
        search.begin_cert();
        let result = self.walk(target, search);
        search.end_cert();
        result
    }

    fn walk(&mut self, target: &Cert, search: &mut impl IssuerLookup) -> Result<Validation, LookupError> {
        let mut chain = vec![target.clone()];
        let mut notes = Vec::new();
        let mut expired = false;
        let mut no_policy = false;
        let mut at_root = false;
        let verdict = loop {
            let subject = chain.last().expect("chain is never empty").clone();
            let Ok(info) = self.memo.info(&subject).cloned() else {
                break Some(Problem::BadCertificate);
            };
            let is_root = is_root(&subject, &info);
            // gpgsm's order: validity (a certificate not valid yet ends the
            // walk at once, an expired one only marks it), critical
            // extensions, policies (marked only), then the root's checks or
            // the issuer.
            let (young, old) = match (chain.len(), is_root) {
                (1, _) => ("certificate not yet valid", "certificate has expired"),
                (_, true) => ("root certificate not yet valid", "root certificate has expired"),
                _ => ("intermediate certificate not yet valid", "intermediate certificate has expired"),
            };
            if info.not_before > self.at {
                notes.push(young.into());
                break Some(Problem::TooYoung);
            }
            if info.not_after < self.at {
                notes.push(old.into());
                expired = true;
            }
            if !info.unknown_critical.is_empty() {
                notes.extend(
                    info.unknown_critical
                        .iter()
                        .map(|oid| format!("critical certificate extension {oid} is not supported")),
                );
                break Some(Problem::Unsupported);
            }
            match info.policies {
                Some(true) => {
                    notes.push("certificate policy not allowed".into());
                    no_policy = true;
                }
                Some(false) => notes.push("Note: non-critical certificate policy not allowed".into()),
                None => {}
            }
            if is_root {
                at_root = true;
                break self.root_problem(&subject, &info, chain.len(), &mut notes).or_else(|| {
                    if expired {
                        Some(Problem::Expired)
                    } else {
                        no_policy.then_some(Problem::NoPolicyMatch)
                    }
                });
            }
            if chain.len() >= MAX_CHAIN {
                notes.push("certificate chain too long".into());
                break Some(Problem::BadChain);
            }
            // gpgsm resets the handle before each step's lookup.
            search.reset()?;
            let Some(issuer) = self.find_up(&subject, search)? else {
                notes.push("issuer certificate not found".into());
                break Some(Problem::MissingIssuer);
            };
            if chain.iter().any(|c| c.fpr == issuer.fpr) {
                notes.push("certificate chain too long".into());
                break Some(Problem::BadChain);
            }
            let signed = self.memo.signature_ok(&subject, &issuer);
            let issuer_info = self.memo.info(&issuer).cloned();
            // CAs below this issuer: every chain element but the target.
            let cas_below = chain.len() - 1;
            let relaxed_root = self.trust.relaxes(&issuer.fpr) && issuer.issuer == issuer.subject;
            chain.push(issuer);
            if !signed {
                // gpgsm reports a bad signature as a bad chain.
                notes.push("certificate has a BAD signature".into());
                break Some(Problem::BadChain);
            }
            let Ok(issuer_info) = issuer_info else { break Some(Problem::BadCertificate) };
            if !issuer_info.is_ca && !relaxed_root {
                notes.push("issuer certificate is not marked as a CA".into());
                break Some(Problem::BadCa);
            }
            if let Some(n) = issuer_info.path_len.filter(|&n| issuer_info.is_ca && (n as usize) < cas_below) {
                notes.push(format!("certificate chain longer than allowed by CA ({n})"));
                break Some(Problem::BadChain);
            }
            // "For the next round the current issuer becomes the new
            // subject": another reset.
            search.reset()?;
        };
        // gpgsm clears the ephemeral flag of every certificate of a chain
        // that reached a root, whatever the verdict.
        if at_root {
            let span = tracing::info_span!(target: "kbx::lookup", "chain_done", length = chain.len());
            let _in = span.enter();
            search.chain_done(&chain)?;
        }
        Ok(Validation::new(verdict, &chain, notes))
    }
    /// What is wrong with a root, in gpgsm's order: the self-signature
    /// (checked only if the root is not trusted), the CA flag (unless the
    /// trustlist says `relax`), trust.
    fn root_problem(
        &mut self,
        root: &Cert,
        info: &CertInfo,
        chain_len: usize,
        notes: &mut Vec<String>,
    ) -> Option<Problem> {
        let trusted = self.trust.trusts(&root.fpr);
        if !trusted && !self.memo.signature_ok(root, root) {
            notes.push("self-signed certificate has a BAD signature".into());
            return Some(if chain_len == 1 { Problem::BadCertificate } else { Problem::BadChain });
        }
        if !info.is_ca && !self.trust.relaxes(&root.fpr) {
            notes.push("issuer certificate is not marked as a CA".into());
            return Some(Problem::BadCa);
        }
        if let Some(broken) = self.trust.broken() {
            // gpgsm: "checking the trust list failed", no bracketed note.
            return Some(Problem::TrustList(broken.code));
        }
        if !trusted {
            notes.push("root certificate is not marked trusted".into());
            return Some(Problem::NotTrusted);
        }
        None
    }

    /// Remember a certificate decoded by the caller.
    pub(crate) fn learn(&mut self, cert: &Cert, info: Result<CertInfo, super::certinfo::CertDecodeError>) {
        self.memo.learn(cert, info);
    }

    /// Queue on `pool` the check of `cert`'s signature by the issuer that
    /// `search` finds for it now (an index still being built may find
    /// another one later: then that pair is checked too, and this result
    /// is only unused). Returns whether an issuer was found.
    ///
    /// # Errors
    /// Errors of the lookups (none for an index).
    pub(crate) fn queue_check(
        &mut self,
        cert: &Cert,
        search: &mut impl IssuerLookup,
        pool: &CheckPool,
    ) -> Result<bool, LookupError> {
        if cert.issuer == cert.subject {
            return Ok(true);
        }
        let Some(issuer) = self.find_up(cert, search)? else { return Ok(false) };
        self.memo.queue(pool, cert, &issuer);
        Ok(true)
    }

    /// Before validating `certs` from an in-memory index: queue on `pool`
    /// the signature check of every (certificate, issuer) pair their chains
    /// need and wait until all are done, this thread helping. The verdicts
    /// are the same; only the order of the work changes.
    ///
    /// # Errors
    /// Errors of the lookups (none for an index).
    pub(crate) fn prefetch(
        &mut self,
        certs: &[Cert],
        search: &mut impl IssuerLookup,
        pool: CheckPool,
    ) -> Result<(), LookupError> {
        let mut seen = std::collections::HashSet::new();
        for target in certs {
            let mut cert = target.clone();
            for _ in 0..MAX_CHAIN {
                if !seen.insert(cert.fpr) || cert.issuer == cert.subject {
                    break;
                }
                let Some(issuer) = self.find_up(&cert, search)? else { break };
                self.memo.queue(&pool, &cert, &issuer);
                cert = issuer;
            }
        }
        self.memo.absorb(pool.finish());
        Ok(())
    }

    /// Whether `cert` is a root, as gpgsm's `is_root_cert` decides (a
    /// certificate that does not decode is not).
    pub(crate) fn is_root(&mut self, cert: &Cert) -> bool {
        self.memo.info(cert).is_ok_and(|info| is_root(cert, info))
    }

    /// Whether `issuer`'s key verifies `cert`'s signature.
    pub(crate) fn signed_by(&mut self, cert: &Cert, issuer: &Cert) -> bool {
        self.memo.signature_ok(cert, issuer)
    }

    /// gpgsm's `find_up`: authorityKeyIdentifier issuer + serial, then key
    /// id, then the issuer name.
    ///
    /// # Errors
    /// I/O errors of the lookups.
    pub(crate) fn find_up(&mut self, cert: &Cert, search: &mut impl IssuerLookup) -> Result<Option<Cert>, LookupError> {
        let info = match self.memo.info(cert) {
            Ok(i) => i.clone(),
            Err(_) => return Ok(None),
        };
        let span = tracing::info_span!(target: "kbx::lookup", "find_issuer", subject = %String::from_utf8_lossy(&cert.subject));
        let _in = span.enter();
        if let Some((issuer, serial)) = &info.aki_issuer_sn {
            if let Some(c) = search.by_issuer_sn(issuer, serial)? {
                return Ok(Some(c));
            }
        }
        if let Some(keyid) = &info.aki_keyid {
            if let Some(c) = search.by_subject_keyid(&mut self.memo, &cert.issuer, keyid, self.at)? {
                return Ok(Some(c));
            }
        }
        let after_aki = info.aki_keyid.is_some() || info.aki_issuer_sn.is_some();
        search.by_subject(&cert.issuer, after_aki)
    }
}

/// gpgsm's `is_root_cert`: issuer and subject equal, and no
/// authorityKeyIdentifier, or one that names the certificate itself (its
/// issuer and serial, or its own subjectKeyIdentifier).
fn is_root(cert: &Cert, info: &CertInfo) -> bool {
    cert.issuer == cert.subject
        && (info.aki_keyid.is_none() && info.aki_issuer_sn.is_none()
            || info.aki_keyid.is_some() && info.aki_keyid == info.ski
            || info
                .aki_issuer_sn
                .as_ref()
                .is_some_and(|(i, s)| *i == cert.issuer && super::certinfo::serial_eq(s, &cert.serial)))
}
