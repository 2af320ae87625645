//! gpgsm's issuer lookups sent to keyboxd: the requests gpgsm 2.4 makes
//! where its keybox pattern ([`super::lookup`]'s `Gnupg`) scans the file,
//! answered by the replayed keyboxd ([`crate::keyboxd::server`]).
//!
//! * By issuer and serial number: `SEARCH` in ISSUER_SN mode, once in
//!   normal mode (an ephemeral certificate is passed over with `NEXT`)
//!   and, if that finds nothing, once more in ephemeral mode.
//! * By subject and key id: `SEARCH` in SUBJECT mode, then `NEXT` to the
//!   end, collecting every certificate of that subject (normal mode, then
//!   ephemeral mode); a fingerprint `SEARCH` follows when an expired
//!   newest candidate must be swapped for a valid one.
//! * By subject: `SEARCH` in SUBJECT mode (after failed key-id lookups:
//!   one `NEXT` on the exhausted search first, then ephemeral mode only).
//! * After a chain reached a root: one fingerprint `SEARCH` per chain
//!   element.

use super::certinfo::Cert;
use super::lookup::{subject_keyid, IssuerLookup, SubjectSearches};
use super::memo::Memo;
use crate::kbx::{parse_blob, Blob};
use crate::keyboxd::server::{Found, Search, Server, Session};
use crate::lookup::{LookupError, Sought};

/// gpgsm's lookups through keyboxd: one client session for the lookups.
pub(crate) struct Keyboxd<'s, 'db> {
    server: &'s Server<'db>,
    session: Session,
}

impl<'s, 'db> Keyboxd<'s, 'db> {
    /// Lookups on a new session of `server`.
    pub(crate) fn new(server: &'s Server<'db>) -> Self {
        Self { server, session: server.connect() }
    }

    /// The keyboxd the lookups are sent to.
    pub(crate) fn server(&self) -> &'s Server<'db> {
        self.server
    }

    /// The connection they go over.
    pub(crate) fn session(&self) -> Session {
        self.session
    }

    fn error(source: crate::io::sqlite::DbError) -> LookupError {
        LookupError::Keyboxd { sought: Sought::Issuer, source: Box::new(source) }
    }

    fn cert(found: &Found) -> Option<Cert> {
        match parse_blob(&found.blob) {
            Ok(Blob::Key(b)) => Cert::from_blob(&b, 0),
            _ => None,
        }
    }

    /// `SEARCH`, then `NEXT` while `take` refuses; the certificate taken.
    fn search_until(&self, what: &Search, take: impl Fn(&Cert) -> bool) -> Result<Option<Cert>, LookupError> {
        let mut found = self.server.search(self.session, what).map_err(Self::error)?;
        while let Some(f) = found {
            if let Some(c) = Self::cert(&f).filter(&take) {
                return Ok(Some(c));
            }
            found = self.server.next(self.session).map_err(Self::error)?;
        }
        Ok(None)
    }

    /// The first certificate `what` finds: normal mode, then ephemeral mode.
    fn first_in(&self, modes: &[bool], what: &Search) -> Result<Option<Cert>, LookupError> {
        for &ephemeral in modes {
            if let Some(c) = self.search_until(what, |c| ephemeral || !c.ephemeral)? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    /// Every certificate `what` finds (`SEARCH`, `NEXT` to the end).
    fn all(&self, what: &Search, ephemeral: bool) -> Result<Vec<Cert>, LookupError> {
        let mut out = Vec::new();
        let mut found = self.server.search(self.session, what).map_err(Self::error)?;
        while let Some(f) = found {
            out.extend(Self::cert(&f).filter(|c| ephemeral || !c.ephemeral));
            found = self.server.next(self.session).map_err(Self::error)?;
        }
        Ok(out)
    }
}

impl SubjectSearches for Keyboxd<'_, '_> {
    fn all_with_subject(&mut self, subject: &[u8], ephemeral: bool) -> Result<Vec<Cert>, LookupError> {
        self.all(&Search::Subject(subject.to_vec()), ephemeral)
    }

    fn again_by_fpr(&mut self, chosen: &Cert) -> Result<Option<Cert>, LookupError> {
        self.first_in(&[false, true], &Search::Fpr(chosen.fpr.to_vec()))
    }
}

impl IssuerLookup for Keyboxd<'_, '_> {
    fn by_issuer_sn(&mut self, issuer: &[u8], serial: &[u8]) -> Result<Option<Cert>, LookupError> {
        self.first_in(&[false, true], &Search::IssuerSn { dn: issuer.to_vec(), serial: serial.to_vec() })
    }

    fn by_subject(&mut self, subject: &[u8], after_aki: bool) -> Result<Option<Cert>, LookupError> {
        if after_aki {
            // gpgsm first searches on where the failed lookups left off:
            // the end, which keyboxd answers without SQLite.
            self.server.next(self.session).map_err(Self::error)?;
            return self.first_in(&[true], &Search::Subject(subject.to_vec()));
        }
        self.first_in(&[false, true], &Search::Subject(subject.to_vec()))
    }

    fn chain_done(&mut self, chain: &[Cert]) -> Result<(), LookupError> {
        for c in chain {
            self.server.search(self.session, &Search::Fpr(c.fpr.to_vec())).map_err(Self::error)?;
        }
        Ok(())
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
}
