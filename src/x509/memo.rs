//! Decoded certificates and signature checks, each done once per run.

use std::collections::{HashMap, HashSet};

use super::certinfo::{Cert, CertDecodeError, CertInfo};
use super::pool::{CheckPool, PairKey, SignatureCheck};

/// Decoded certificates and signature checks, each done once per run.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    infos: HashMap<[u8; 20], Result<CertInfo, CertDecodeError>>,
    signatures: HashMap<PairKey, bool>,
    /// Checks handed to a [`CheckPool`] whose results are not in yet.
    queued: HashSet<PairKey>,
}

impl Memo {
    /// The decoded certificate.
    ///
    /// # Errors
    /// The decoding error.
    pub(crate) fn info(&mut self, cert: &Cert) -> Result<&CertInfo, CertDecodeError> {
        self.infos.entry(cert.fpr).or_insert_with(|| CertInfo::decode(&cert.der)).as_ref().map_err(Clone::clone)
    }

    /// Remember a certificate decoded elsewhere (the listing pass), so that
    /// it is not decoded again.
    pub(crate) fn learn(&mut self, cert: &Cert, info: Result<CertInfo, CertDecodeError>) {
        self.infos.entry(cert.fpr).or_insert(info);
    }

    /// Whether `issuer`'s key verifies `child`'s signature.
    pub(crate) fn signature_ok(&mut self, child: &Cert, issuer: &Cert) -> bool {
        let key = (child.fpr, issuer.fpr);
        if let Some(&ok) = self.signatures.get(&key) {
            return ok;
        }
        let ok = self.check(child, issuer).is_some_and(|c| c.run());
        self.signatures.insert(key, ok);
        ok
    }

    /// Hand the check of `child`'s signature by `issuer` to `pool`, unless
    /// it is done or queued already. A certificate that does not decode
    /// is not queued ([`signature_ok`](Self::signature_ok) answers false).
    pub(crate) fn queue(&mut self, pool: &CheckPool, child: &Cert, issuer: &Cert) {
        let key = (child.fpr, issuer.fpr);
        if self.signatures.contains_key(&key) || self.queued.contains(&key) {
            return;
        }
        if let Some(check) = self.check(child, issuer) {
            self.queued.insert(key);
            pool.submit(check);
        }
    }

    /// Take the results of a finished pool.
    pub(crate) fn absorb(&mut self, results: Vec<(PairKey, bool)>) {
        for (key, ok) in results {
            self.queued.remove(&key);
            self.signatures.insert(key, ok);
        }
    }

    /// The check of `child`'s signature with `issuer`'s key, if both decode.
    fn check(&mut self, child: &Cert, issuer: &Cert) -> Option<SignatureCheck> {
        let tbs = self.info(child).ok()?.tbs.clone();
        let spki = self.info(issuer).ok()?.spki.clone();
        Some(SignatureCheck { child: child.clone(), tbs, issuer: issuer.clone(), spki })
    }
}
