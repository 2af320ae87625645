//! How issuers are looked up: the three strategies behind `--lookup`.
//!
//! * [`Gnupg`] reproduces gpgsm 2.4's keybox access read-only: a
//!   handle per validated certificate (opened by its first search, closed
//!   at the end), every lookup a rewind and a scan that reads every blob
//!   completely, the repeat scans in "ephemeral mode" when nothing is found,
//!   a key-id lookup scanning to the end of the file (plus a fingerprint
//!   search when it must swap an expired newest candidate for a valid
//!   one), and after a chain that reached a root (trusted or not, whatever
//!   the verdict, as gpgsm's `do_validate_chain` does) one new handle and
//!   one fingerprint search from the start per chain element (where gpgsm
//!   clears the ephemeral flag; kbxscope only reads). Given a
//!   `SearchLock` ([`Gnupg::locking`]), every search takes gpgsm 2.2's
//!   keybox lock when it is not held and every handle's release lets it
//!   go, as gpgsm 2.2's `keydb_search` and `keydb_release` do.
//! * [`Scan`] is the simple honest reader: one rescan per lookup, on
//!   one extra handle, and nothing else.
//! * [`Index`] answers from memory what one forward pass over the
//!   file put in it (`workload::validate` makes that pass).
//!
//! All three apply the same matching rules (those of GnuPG's keybox
//! search), so verdicts do not depend on the strategy. Scans stay lean:
//! non-X.509 blobs are consumed without being copied (the same `read(2)`
//! calls as GnuPG's complete reads), X.509 blobs are decoded only as far
//! as the match needs.

use crate::io::RawRead;
use std::collections::HashMap;

use super::certinfo::{serial_eq, Cert};
use super::memo::Memo;
use crate::io::{read_blob, BufferedReader, Next, Opener, Take};
use crate::kbx::blob::key_table_fingerprints;
use crate::kbx::{parse_blob, Blob, BlobType, KeyBlob};
use crate::lookup::{Handle, LookupError, SearchLock, Sought, Strategy};
use std::rc::Rc;

/// The lookups chain building needs.
pub(crate) trait IssuerLookup {
    /// A certificate's validation starts.
    fn begin_cert(&mut self) {}
    /// It ended (handles are closed).
    fn end_cert(&mut self) {}
    /// The certificate whose issuer is `issuer` and serial `serial`.
    ///
    /// # Errors
    /// I/O errors.
    fn by_issuer_sn(&mut self, issuer: &[u8], serial: &[u8]) -> Result<Option<Cert>, LookupError>;
    /// Among certificates with subject `subject`, the one whose
    /// subjectKeyIdentifier is `keyid` (if several: the newest, unless it
    /// has expired at `at` and an older one has not).
    ///
    /// # Errors
    /// I/O errors.
    fn by_subject_keyid(
        &mut self,
        memo: &mut Memo,
        subject: &[u8],
        keyid: &[u8],
        at: i64,
    ) -> Result<Option<Cert>, LookupError>;
    /// The first certificate with subject `subject`. `after_aki` says that
    /// lookups by authorityKeyIdentifier came first and found nothing.
    ///
    /// # Errors
    /// I/O errors.
    fn by_subject(&mut self, subject: &[u8], after_aki: bool) -> Result<Option<Cert>, LookupError>;
    /// A chain reached a root, whatever the verdict.
    ///
    /// # Errors
    /// I/O errors.
    fn chain_done(&mut self, _chain: &[Cert]) -> Result<(), LookupError> {
        Ok(())
    }
    /// gpgsm's `keydb_search_reset` of the validation handle before and
    /// after each step up the chain.
    ///
    /// # Errors
    /// I/O errors.
    fn reset(&mut self) -> Result<(), LookupError> {
        Ok(())
    }
}

/// What a scan does with each X.509 blob it meets.
enum Step {
    /// Go on.
    Next,
    /// Stop here.
    Stop,
}

/// Scan from the start of the file (the reader has just been rewound) to
/// the end, or until `f` says stop, reading every blob completely as
/// GnuPG's searches do: X.509 blobs are copied and handed to `f`, the
/// others consumed with the same system calls. With `fpr`, only X.509
/// blobs whose key table holds that fingerprint are copied (the others are
/// consumed after their key table, with the same system calls): a
/// fingerprint search decodes one blob, not every certificate. Ephemeral
/// blobs are passed over unless `ephemeral`. Returns whether `f` stopped
/// it.
fn scan_x509<F: RawRead>(
    r: &mut BufferedReader<F>,
    image: &mut Vec<u8>,
    ephemeral: bool,
    fpr: Option<&[u8; 20]>,
    mut f: impl FnMut(&KeyBlob<'_>, u64) -> Step,
) -> Result<bool, LookupError> {
    let want = fpr.map(|f| &f[..]);
    let has_fpr = |head: &[u8]| key_table_fingerprints(head).next() == want;
    let x509 = if want.is_some() { Take::CopyIf(&has_fpr) } else { Take::Copy };
    let policy = |ty| if ty == BlobType::X509 { x509 } else { Take::Consume };
    let mut index = 0;
    loop {
        let next = read_blob(r, image, policy).map_err(|source| LookupError::Blob {
            sought: Sought::Issuer,
            index: Some(index),
            source,
        })?;
        index += 1;
        let offset = match next {
            Next::Eof => return Ok(false),
            Next::Blob { offset } => offset,
            Next::Deleted { .. } | Next::TooLarge { .. } | Next::Passed { .. } => continue,
        };
        let Ok(Blob::Key(blob)) = parse_blob(image) else { continue };
        if blob.is_ephemeral() && !ephemeral {
            continue;
        }
        if let Step::Stop = f(&blob, offset) {
            return Ok(true);
        }
    }
}

/// Among candidates (in file order), gpgsm's choice: the newest notBefore
/// (the first of equals); if that one has expired at `at`, the newest
/// non-expired one instead. Returns the choice and whether it is not the
/// plain newest (gpgsm then has to search for it again by fingerprint).
fn best(memo: &mut Memo, candidates: Vec<Cert>, at: i64) -> Option<(Cert, bool)> {
    let mut newest: Option<(i64, i64, Cert)> = None;
    let mut newest_valid: Option<(i64, Cert)> = None;
    for c in candidates {
        let Ok(info) = memo.info(&c) else { continue };
        let (nb, na) = (info.not_before, info.not_after);
        if newest.as_ref().is_none_or(|(b, _, _)| *b < nb) {
            newest = Some((nb, na, c.clone()));
        }
        if na >= at && newest_valid.as_ref().is_none_or(|(b, _)| *b < nb) {
            newest_valid = Some((nb, c));
        }
    }
    let (_, na, found) = newest?;
    match newest_valid {
        Some((_, valid)) if na < at && valid.fpr != found.fpr => Some((valid, true)),
        _ => Some((found, false)),
    }
}

/// The two searches gpgsm's lookup by subject and key id makes, as a
/// strategy makes them.
pub(super) trait SubjectSearches {
    /// Every certificate with this subject, in ephemeral mode or not.
    ///
    /// # Errors
    /// The search failed.
    fn all_with_subject(&mut self, subject: &[u8], ephemeral: bool) -> Result<Vec<Cert>, LookupError>;

    /// The certificate `chosen` searched again by its fingerprint.
    ///
    /// # Errors
    /// The search failed.
    fn again_by_fpr(&mut self, chosen: &Cert) -> Result<Option<Cert>, LookupError>;
}

/// gpgsm's lookup by subject and key id: every certificate of the subject
/// (normal mode, then ephemeral mode), of which the best with the key id
/// is taken; gpgsm keeps its search at the newest candidate and searches
/// again (by fingerprint) only to replace an expired newest one with a
/// valid older one.
pub(super) fn subject_keyid(
    lookup: &mut impl SubjectSearches,
    memo: &mut Memo,
    subject: &[u8],
    keyid: &[u8],
    at: i64,
) -> Result<Option<Cert>, LookupError> {
    for ephemeral in [false, true] {
        let mut candidates = lookup.all_with_subject(subject, ephemeral)?;
        candidates.retain(|c| ski_matches(memo, c, keyid));
        match best(memo, candidates, at) {
            Some((chosen, false)) => return Ok(Some(chosen)),
            Some((chosen, true)) => return lookup.again_by_fpr(&chosen),
            None => {}
        }
    }
    Ok(None)
}

/// Among key-id candidates: the best non-ephemeral one, else the best
/// ephemeral one (what gpgsm's normal then ephemeral scans pick).
fn best_by_keyid(memo: &mut Memo, candidates: Vec<Cert>, keyid: &[u8], at: i64) -> Option<Cert> {
    let (normal, eph): (Vec<Cert>, Vec<Cert>) =
        candidates.into_iter().filter(|c| ski_matches(memo, c, keyid)).partition(|c| !c.ephemeral);
    best(memo, normal, at).or_else(|| best(memo, eph, at)).map(|b| b.0)
}

/// GnuPG's ISSUER_SN match: the blob's issuer and serial number.
fn is_issuer_sn(b: &KeyBlob<'_>, issuer: &[u8], serial: &[u8]) -> bool {
    b.x509_issuer() == Some(issuer) && serial_eq(b.serial(), serial)
}

/// GnuPG's SUBJECT match.
fn is_subject(b: &KeyBlob<'_>, subject: &[u8]) -> bool {
    b.x509_subject() == Some(subject)
}

fn ski_matches(memo: &mut Memo, c: &Cert, keyid: &[u8]) -> bool {
    memo.info(c).is_ok_and(|i| i.ski.as_deref() == Some(keyid))
}

/// gpgsm 2.4's access pattern; see the module docs.
pub(crate) struct Gnupg<O: Opener> {
    handle: Handle<O>,
    image: Vec<u8>,
    /// gpgsm 2.2's lock around each search, when replayed.
    lock: Option<Rc<dyn SearchLock>>,
    /// Each of gpgsm's `keydb_search_reset`s an `lseek` at once (2.4:
    /// Debian 13's estream seeks when asked); else the seek waits for the
    /// next read and resets in a row make one (2.2).
    eager: bool,
}

impl<O: Opener> Gnupg<O> {
    /// A strategy opening its handles with `opener`.
    pub(crate) fn new(opener: O) -> Self {
        Self { handle: Handle::new(opener, Sought::Issuer), image: Vec::new(), lock: None, eager: false }
    }

    /// The same, each reset an `lseek` at once when `eager` (gpgsm 2.4).
    pub(crate) fn eager_resets(self, eager: bool) -> Self {
        Self { eager, ..self }
    }

    /// One of gpgsm's `keydb_search_reset`s: with eager resets, an
    /// `lseek` to the start if the file is open (the buffer dropped); else
    /// nothing now (the next search rewinds).
    fn reset_point(&mut self) -> Result<(), LookupError> {
        if self.eager {
            self.handle.reset()?;
        }
        Ok(())
    }

    /// The same, taking gpgsm 2.2's lock at each search and letting it go
    /// as each handle is released.
    pub(crate) fn locking(opener: O, lock: Rc<dyn SearchLock>) -> Self {
        Self { lock: Some(lock), ..Self::new(opener) }
    }

    /// The validation handle, opened on first use, rewound (gpgsm's
    /// `keydb_search_reset` before each search).
    fn rewound(&mut self) -> Result<&mut BufferedReader<O::File>, LookupError> {
        if let Some(lock) = &self.lock {
            lock.take();
        }
        let r = self.handle.rewound()?;
        crate::telemetry::scan_started(Strategy::Gnupg.name(), r.stats().buffer_size);
        Ok(r)
    }

    /// Scan for the first blob `matches` accepts, once per mode in `modes`
    /// (only blobs with fingerprint `fpr` decoded, if given).
    fn first_in(
        &mut self,
        modes: &[bool],
        fpr: Option<&[u8; 20]>,
        matches: impl Fn(&KeyBlob<'_>) -> bool,
    ) -> Result<Option<Cert>, LookupError> {
        for &ephemeral in modes {
            let mut found = None;
            let mut image = std::mem::take(&mut self.image);
            let r = self.rewound()?;
            let res = scan_x509(r, &mut image, ephemeral, fpr, |b, off| {
                if matches(b) {
                    found = Cert::from_blob(b, off);
                    Step::Stop
                } else {
                    Step::Next
                }
            });
            self.image = image;
            res?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// gpgsm's `keydb_search_fpr` on a handle in ephemeral mode (every
    /// certificate, ephemeral or not, as `keydb_store_cert` searches):
    /// from the start, to the certificate or the end of the file.
    ///
    /// # Errors
    /// The search failed.
    pub(crate) fn by_fingerprint(&mut self, fpr: &[u8; 20]) -> Result<Option<Cert>, LookupError> {
        self.first_in(&[true], Some(fpr), |b| b.key(0).fingerprint == fpr)
    }

    /// gpgsm's `keydb_search_reset` before it writes (`keydb_locate_writable`,
    /// `delete_one`): one `lseek(2)` to the start at once if the file is
    /// open, in either version.
    ///
    /// # Errors
    /// The rewind failed.
    pub(crate) fn reset_now(&mut self) -> Result<(), LookupError> {
        self.handle.reset()
    }

    /// The handle's file closed (gpgsm's keybox closes it before a write).
    pub(crate) fn close(&mut self) {
        self.handle.close();
    }
}

impl<O: Opener> SubjectSearches for Gnupg<O> {
    fn all_with_subject(&mut self, subject: &[u8], ephemeral: bool) -> Result<Vec<Cert>, LookupError> {
        // `find_up_search_by_keyid` resets, then loops over every
        // certificate with this subject until EOF.
        self.reset_point()?;
        let mut candidates = Vec::new();
        let mut image = std::mem::take(&mut self.image);
        let r = self.rewound()?;
        let res = scan_x509(r, &mut image, ephemeral, None, |b, off| {
            if is_subject(b, subject) {
                candidates.extend(Cert::from_blob(b, off));
            }
            Step::Next
        });
        self.image = image;
        res?;
        Ok(candidates)
    }

    fn again_by_fpr(&mut self, chosen: &Cert) -> Result<Option<Cert>, LookupError> {
        self.reset_point()?;
        self.first_in(&[false, true], Some(&chosen.fpr), |b| b.key(0).fingerprint == chosen.fpr)
    }
}

impl<O: Opener> IssuerLookup for Gnupg<O> {
    fn begin_cert(&mut self) {
        self.handle.close();
    }

    fn end_cert(&mut self) {
        self.handle.close();
        if let Some(lock) = &self.lock {
            lock.release();
        }
    }

    fn by_issuer_sn(&mut self, issuer: &[u8], serial: &[u8]) -> Result<Option<Cert>, LookupError> {
        // Normal mode, then ephemeral mode, a reset after each that fails.
        for ephemeral in [false, true] {
            if let Some(c) = self.first_in(&[ephemeral], None, |b| is_issuer_sn(b, issuer, serial))? {
                return Ok(Some(c));
            }
            self.reset_point()?;
        }
        Ok(None)
    }

    fn by_subject_keyid(
        &mut self,
        memo: &mut Memo,
        subject: &[u8],
        keyid: &[u8],
        at: i64,
    ) -> Result<Option<Cert>, LookupError> {
        subject_keyid(self, memo, subject, keyid, at)
    }

    fn by_subject(&mut self, subject: &[u8], after_aki: bool) -> Result<Option<Cert>, LookupError> {
        if !after_aki {
            if let Some(c) = self.first_in(&[false], None, |b| is_subject(b, subject))? {
                return Ok(Some(c));
            }
        }
        // After failed lookups by authorityKeyIdentifier, gpgsm searches
        // the subject on the handle they left at end of file (a no-op:
        // the end is sticky until a reset). Then a reset, and the search
        // in ephemeral mode.
        self.reset_point()?;
        self.first_in(&[true], None, |b| is_subject(b, subject))
    }

    fn reset(&mut self) -> Result<(), LookupError> {
        self.reset_point()
    }

    fn chain_done(&mut self, chain: &[Cert]) -> Result<(), LookupError> {
        for c in chain {
            // gpgsm 2.2 locks the keybox for the flag it would clear.
            if let Some(lock) = &self.lock {
                lock.take();
            }
            let mut h = self.handle.opener().open()?;
            crate::telemetry::scan_started(Strategy::Gnupg.name(), h.stats().buffer_size);
            scan_x509(&mut h, &mut self.image, true, Some(&c.fpr), |b, _| {
                if b.key(0).fingerprint == c.fpr {
                    Step::Stop
                } else {
                    Step::Next
                }
            })?;
            drop(h);
            if let Some(lock) = &self.lock {
                lock.release();
            }
        }
        Ok(())
    }
}

/// One rescan per lookup on one extra handle; see the module docs.
pub(crate) struct Scan<O: Opener> {
    handle: Handle<O>,
    image: Vec<u8>,
}

impl<O: Opener> Scan<O> {
    /// A strategy opening its one handle with `opener` when first needed.
    pub(crate) fn new(opener: O) -> Self {
        Self { handle: Handle::new(opener, Sought::Issuer), image: Vec::new() }
    }

    /// One pass from the start: the first non-ephemeral match, else the
    /// first ephemeral one; `to_end` keeps going and collects every match.
    fn pass(&mut self, to_end: bool, matches: impl Fn(&KeyBlob<'_>) -> bool) -> Result<Vec<Cert>, LookupError> {
        let r = self.handle.rewound()?;
        crate::telemetry::scan_started(Strategy::Scan.name(), r.stats().buffer_size);
        let (mut normal, mut ephemeral) = (Vec::new(), Vec::new());
        scan_x509(r, &mut self.image, true, None, |b, off| {
            if !matches(b) {
                return Step::Next;
            }
            let list = if b.is_ephemeral() { &mut ephemeral } else { &mut normal };
            list.extend(Cert::from_blob(b, off));
            if !to_end && !normal.is_empty() {
                Step::Stop
            } else {
                Step::Next
            }
        })?;
        normal.extend(ephemeral);
        Ok(normal)
    }
}

impl<O: Opener> IssuerLookup for Scan<O> {
    fn by_issuer_sn(&mut self, issuer: &[u8], serial: &[u8]) -> Result<Option<Cert>, LookupError> {
        Ok(self.pass(false, |b| is_issuer_sn(b, issuer, serial))?.into_iter().next())
    }

    fn by_subject_keyid(
        &mut self,
        memo: &mut Memo,
        subject: &[u8],
        keyid: &[u8],
        at: i64,
    ) -> Result<Option<Cert>, LookupError> {
        let all = self.pass(true, |b| is_subject(b, subject))?;
        Ok(best_by_keyid(memo, all, keyid, at))
    }

    fn by_subject(&mut self, subject: &[u8], _after_aki: bool) -> Result<Option<Cert>, LookupError> {
        Ok(self.pass(false, |b| is_subject(b, subject))?.into_iter().next())
    }
}

/// Every certificate in memory, with maps for each kind of lookup.
#[derive(Debug, Default)]
pub(crate) struct Index {
    certs: Vec<Cert>,
    by_subject: HashMap<Vec<u8>, Vec<usize>>,
    by_issuer: HashMap<Vec<u8>, Vec<usize>>,
}

impl Index {
    /// Add a certificate (in file order).
    pub(crate) fn add(&mut self, cert: Cert) {
        let i = self.certs.len();
        self.by_subject.entry(cert.subject.clone()).or_default().push(i);
        self.by_issuer.entry(cert.issuer.clone()).or_default().push(i);
        self.certs.push(cert);
    }

    /// The first non-ephemeral, else the first ephemeral, of `idx`.
    fn first(&self, idx: impl Iterator<Item = usize> + Clone) -> Option<Cert> {
        let pick = |eph: bool| idx.clone().map(|i| &self.certs[i]).find(|c| c.ephemeral == eph).cloned();
        pick(false).or_else(|| pick(true))
    }
}

impl IssuerLookup for Index {
    fn by_issuer_sn(&mut self, issuer: &[u8], serial: &[u8]) -> Result<Option<Cert>, LookupError> {
        let idx = self.by_issuer.get(issuer).map(Vec::as_slice).unwrap_or(&[]);
        Ok(self.first(idx.iter().copied().filter(|&i| serial_eq(&self.certs[i].serial, serial))))
    }

    fn by_subject_keyid(
        &mut self,
        memo: &mut Memo,
        subject: &[u8],
        keyid: &[u8],
        at: i64,
    ) -> Result<Option<Cert>, LookupError> {
        let idx = self.by_subject.get(subject).map(Vec::as_slice).unwrap_or(&[]);
        let candidates = idx.iter().map(|&i| self.certs[i].clone()).collect();
        Ok(best_by_keyid(memo, candidates, keyid, at))
    }

    fn by_subject(&mut self, subject: &[u8], _after_aki: bool) -> Result<Option<Cert>, LookupError> {
        let idx = self.by_subject.get(subject).map(Vec::as_slice).unwrap_or(&[]);
        Ok(self.first(idx.iter().copied()))
    }
}
