//! gpg's two searches sent to keyboxd (gpg 2.4 with `use-keyboxd`): the
//! key-id search a `SEARCH` in LONG_KID mode on the session of gpg's
//! cached lookup handle (its reset costs no request), the fingerprint
//! search a `SEARCH` in FPR mode on another session; either goes on with
//! `NEXT` past keyblocks gpg would not take. gpg's caches in front of them
//! are [`super::Gnupg`]'s, as for a keybox.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Found, Searched, Searches, Signer, Usable};
use crate::io::sqlite::DbError;
use crate::kbx::{parse_blob, Blob};
use crate::keyboxd::server::{self, Search, Server, Session};
use crate::lookup::{LookupError, Sought};

/// gpg's searches through the replayed keyboxd.
pub(crate) struct KeyboxdSearches<'s, 'db> {
    server: &'s Server<'db>,
    /// The session of gpg's cached lookup handle (key-id searches).
    cached: Session,
    /// The session of the handles `get_pubkey_for_sig` makes anew.
    fresh: Session,
    /// Keyblocks decoded, by `ubid`, with the keyblob they came from.
    decoded: HashMap<Vec<u8>, (Vec<u8>, Arc<Signer>)>,
}

impl<'s, 'db> KeyboxdSearches<'s, 'db> {
    /// Searches on two new sessions of `server`.
    pub(crate) fn new(server: &'s Server<'db>) -> Self {
        Self { server, cached: server.connect(), fresh: server.connect(), decoded: HashMap::new() }
    }

    fn signer(&mut self, found: &server::Found) -> Option<Arc<Signer>> {
        if let Some((keyblob, s)) = self.decoded.get(&found.row.ubid) {
            if *keyblob == found.row.keyblob {
                return Some(s.clone());
            }
        }
        let Ok(Blob::Key(blob)) = parse_blob(&found.blob) else { return None };
        // Placed nowhere: only the strategies without gpg's caches ask
        // where a signer lies, and keyboxd's replay has the caches.
        let s = Arc::new(Signer::from_blob(&blob, u64::MAX));
        self.decoded.insert(found.row.ubid.clone(), (found.row.keyblob.clone(), s.clone()));
        Some(s)
    }

    /// `SEARCH` on `session`, then `NEXT` past what gpg would not take.
    fn search_usable(&mut self, session: Session, what: &Search, usable: &Usable<'_>) -> Result<Searched, LookupError> {
        let error = |source: DbError| LookupError::Keyboxd { sought: Sought::Signer, source: Box::new(source) };
        let mut found = self.server.search(session, what).map_err(error)?;
        let mut passed_over = false;
        while let Some(f) = found {
            match self.signer(&f) {
                Some(s) if usable(&s) => return Ok(Searched { found: Some(s), passed_over }),
                Some(_) => passed_over = true,
                None => {}
            }
            found = self.server.next(session).map_err(error)?;
        }
        Ok(Searched { found: None, passed_over })
    }
}

impl Searches for KeyboxdSearches<'_, '_> {
    fn kid_search(&mut self, kid: [u8; 8], known_missing: bool, usable: &Usable<'_>) -> Result<Searched, LookupError> {
        if known_missing {
            return Ok(Searched { found: None, passed_over: false });
        }
        self.search_usable(self.cached, &Search::LongKid(kid), usable)
    }

    fn fpr_search(&mut self, fpr: &[u8], usable: &Usable<'_>) -> Found {
        Ok(self.search_usable(self.fresh, &Search::Fpr(fpr.to_vec()), usable)?.found)
    }
}
