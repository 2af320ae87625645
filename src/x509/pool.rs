//! Signature checks on worker threads that start before all the work is
//! known.
//!
//! The `index` strategy queues checks while its single pass over the file
//! is still running (the issuer of a certificate is often already in the
//! index when the certificate is read), then queues the rest and helps the
//! workers empty the queue. A check is a pure function of the two
//! certificates, so the order of the work never changes a verdict.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use x509_parser::der_parser::asn1_rs::BitString;
use x509_parser::prelude::{AlgorithmIdentifier, FromDer, SubjectPublicKeyInfo};

use super::certinfo::Cert;

/// (child, issuer) fingerprints of a signature check.
pub(super) type PairKey = ([u8; 20], [u8; 20]);

/// One signature to check: `child`'s signed part against `issuer`'s key.
#[derive(Debug, Clone)]
pub(crate) struct SignatureCheck {
    /// The signed certificate.
    pub child: Cert,
    /// Where its tbsCertificate is in its DER.
    pub tbs: Range<usize>,
    /// The issuing certificate.
    pub issuer: Cert,
    /// Where its subjectPublicKeyInfo is in its DER.
    pub spki: Range<usize>,
}

impl SignatureCheck {
    /// The memo key of this check.
    pub(crate) fn key(&self) -> PairKey {
        (self.child.fpr, self.issuer.fpr)
    }

    /// Whether the issuer's key verifies the child's signature. Only the
    /// three small parts a check needs are decoded (signature algorithm,
    /// signature value, public key), not the whole certificates again.
    pub(crate) fn run(&self) -> bool {
        let der = &self.child.der;
        let (Some(tbs), Some(after_tbs), Some(spki)) =
            (der.get(self.tbs.clone()), der.get(self.tbs.end..), self.issuer.der.get(self.spki.clone()))
        else {
            return false;
        };
        let Ok((rest, algorithm)) = AlgorithmIdentifier::from_der(after_tbs) else { return false };
        let Ok((_, signature)) = BitString::from_der(rest) else { return false };
        let Ok((_, key)) = SubjectPublicKeyInfo::from_der(spki) else { return false };
        super::sigcheck::verify(&key, &algorithm, signature.as_ref(), tbs)
    }
}

/// Checks waiting for a worker, and whether more may come.
#[derive(Default)]
struct Queue {
    checks: VecDeque<SignatureCheck>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

impl Shared {
    /// The next check; `None` once the queue is closed and empty.
    fn next(&self) -> Option<SignatureCheck> {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(c) = q.checks.pop_front() {
                return Some(c);
            }
            if q.closed {
                return None;
            }
            q = self.ready.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Run checks until the queue is closed and empty.
    fn work(&self) -> Vec<(PairKey, bool)> {
        let mut done = Vec::new();
        while let Some(c) = self.next() {
            let _check = tracing::info_span!(target: "kbx::lookup", "check_signature").entered();
            done.push((c.key(), c.run()));
        }
        done
    }

    fn close(&self) {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).closed = true;
        self.ready.notify_all();
    }
}

/// Worker threads checking signatures from a shared queue.
pub(crate) struct CheckPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<Vec<(PairKey, bool)>>>,
}

impl std::fmt::Debug for CheckPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckPool").field("workers", &self.workers.len()).finish_non_exhaustive()
    }
}

impl CheckPool {
    /// Start `workers` threads (at least one). The caller's thread joins
    /// them in [`finish`](Self::finish).
    pub(crate) fn start(workers: usize) -> Self {
        let shared = Arc::new(Shared::default());
        let workers = (0..workers.max(1))
            .filter_map(|i| {
                let shared = Arc::clone(&shared);
                // Named, so a trace shows each worker as its own track. A
                // worker that cannot start leaves its share to the others
                // and to the caller (`finish` works the queue too).
                std::thread::Builder::new().name(format!("sigcheck-{}", i + 1)).spawn(move || shared.work()).ok()
            })
            .collect();
        Self { shared, workers }
    }

    /// One worker per core but the caller's: the caller is busy reading the
    /// file while the workers check.
    pub(crate) fn beside_caller() -> Self {
        Self::start(std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1))
    }

    /// Queue a check.
    pub(crate) fn submit(&self, check: SignatureCheck) {
        self.shared.queue.lock().unwrap_or_else(PoisonError::into_inner).checks.push_back(check);
        self.shared.ready.notify_one();
    }

    /// No more checks: work on the queue on this thread too until it is
    /// empty, wait for the workers, and return every result.
    pub(crate) fn finish(mut self) -> Vec<(PairKey, bool)> {
        self.shared.close();
        let mut done = self.shared.work();
        for w in std::mem::take(&mut self.workers) {
            // A worker that panicked lost its results; those checks are
            // done again on demand (Memo::signature_ok), so none is lost.
            done.extend(w.join().unwrap_or_default());
        }
        done
    }
}

impl Drop for CheckPool {
    /// A pool dropped without [`finish`](CheckPool::finish) (an error ended
    /// the work) lets its workers end instead of waiting forever.
    fn drop(&mut self) {
        self.shared.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::cert_blob;
    use crate::generate::x509::{issue, AkiStyle, CertSpec};
    use crate::kbx::{parse_blob, Blob};
    use crate::x509::CertInfo;
    use rand::SeedableRng;

    fn cert(der_blob: &[u8]) -> (Cert, CertInfo) {
        let Ok(Blob::Key(k)) = parse_blob(der_blob) else { panic!("not a key blob") };
        let c = Cert::from_blob(&k, 0).unwrap();
        let info = CertInfo::decode(&c.der).unwrap();
        (c, info)
    }

    fn check(child: &(Cert, CertInfo), issuer: &(Cert, CertInfo)) -> SignatureCheck {
        SignatureCheck {
            child: child.0.clone(),
            tbs: child.1.tbs.clone(),
            issuer: issuer.0.clone(),
            spki: issuer.1.spki.clone(),
        }
    }

    fn spec(cn: &str, key: crate::generate::signer::KeyKind, ca: bool) -> CertSpec {
        CertSpec {
            subject: vec![(rcgen::DnType::CommonName, cn.into())],
            key,
            ca: ca.then_some(None),
            not_before: 0,
            not_after: 2_000_000_000,
            mail: None,
            aki: AkiStyle::KeyId,
        }
    }

    #[test]
    fn checks_every_key_kind_on_worker_threads() {
        use crate::generate::signer::KeyKind;
        let mut r = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let mut certs = Vec::new();
        for key in [KeyKind::P256, KeyKind::P384, KeyKind::Rsa(0), KeyKind::Rsa(4)] {
            let root = issue(&spec("Root", key, true), None, &mut r).unwrap();
            let leaf = issue(&spec("Leaf", KeyKind::P256, false), Some(&root), &mut r).unwrap();
            certs.push((cert(&cert_blob(&root, 1)), cert(&cert_blob(&leaf, 1))));
        }
        let pool = CheckPool::start(2);
        let mut want = Vec::new();
        for (i, (root, leaf)) in certs.iter().enumerate() {
            let good = check(leaf, root);
            let wrong_key = check(leaf, &certs[(i + 1) % certs.len()].0);
            let self_signed = check(root, root);
            want.extend([(good.key(), true), (wrong_key.key(), false), (self_signed.key(), true)]);
            for c in [good, wrong_key, self_signed] {
                assert_eq!(c.run(), want.iter().find(|w| w.0 == c.key()).unwrap().1, "{:?}", c.key());
                pool.submit(c);
            }
        }
        let mut got = pool.finish();
        got.sort();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn a_pool_dropped_unfinished_lets_its_workers_end() {
        let pool = CheckPool::start(3);
        let shared = Arc::downgrade(&pool.shared);
        drop(pool);
        let start = std::time::Instant::now();
        while shared.upgrade().is_some() {
            assert!(start.elapsed() < std::time::Duration::from_secs(10), "workers still waiting");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
