//! What gpg's import does with its key database besides checking
//! signatures (GnuPG 2.2's `g10/import.c`, `getkey.c`, `keydb.c`; facts
//! only): the search for the key being imported, the handles an update
//! closes, the caches it empties, and the user id its messages print.

use std::sync::Arc;

use super::{by_fpr, search_on, Gnupg, KeyboxSearches, Signer};
use crate::io::Opener;
use crate::lookup::{Handle, LookupError, Sought, Strategy};
use crate::openpgp::incoming::IncomingKey;
use crate::openpgp::SigPacket;

/// The key an import found already in the keybox.
pub(crate) struct Present {
    /// Its decoded keyblock (with the blob's offset).
    pub(crate) signer: Arc<Signer>,
    /// The blob's bytes.
    pub(crate) image: Vec<u8>,
}

impl<O: Opener + Clone> Gnupg<KeyboxSearches<O>> {
    /// `get_keyblock_byfprint_fast`: a new handle searching for `fpr`
    /// from the start, without gpg's caches; the handle is handed back
    /// (the import updates through it, then releases it).
    pub(crate) fn fast_search(&mut self, fpr: &[u8]) -> Result<(Handle<O>, Option<Present>), LookupError> {
        let _span = tracing::info_span!(target: "kbx::lookup", "fast_search").entered();
        let mut h = Handle::new(self.searches.opener.clone(), Sought::Signer);
        let scratch = &mut self.searches.scratch;
        let found = search_on(&mut h, Strategy::Gnupg, scratch, by_fpr(fpr))?;
        let present = found.map(|signer| Present { signer, image: scratch.image.clone() });
        Ok((h, present))
    }

    /// `keydb_update_keyblock`'s own search: the handle reset (one
    /// `lseek`) and the fingerprint searched for again from the start.
    pub(crate) fn search_again(&mut self, h: &mut Handle<O>, fpr: &[u8]) -> Result<(), LookupError> {
        h.reset()?;
        search_on(h, Strategy::Gnupg, &mut self.searches.scratch, by_fpr(fpr))?;
        Ok(())
    }

    /// `_keybox_close_file` before a write: every handle's file is closed
    /// (the cached lookup handle opens it again at its next search).
    pub(crate) fn close_files(&mut self) {
        if let Some(h) = self.searches.cached.as_mut() {
            h.close();
        }
    }

    /// `kid_not_found_flush`: an insert, update or delete empties the
    /// cache of key ids not found.
    pub(crate) fn forget_missing(&mut self) {
        self.kid_not_found.clear();
    }

    /// `key_check_all_keysigs` (import's `repair-keys`, the default): in
    /// keyblock order, every signature not made by the primary key itself
    /// has its signer fetched with `get_pubkey` by its key id — never by
    /// the issuer fingerprint. An import disables gpg's key cache
    /// (`getkey_disable_caches`), so each one is a key-id search on the
    /// cached handle (only the kid-not-found cache saves the scan), and no
    /// usage is asked for, so the first keyblock with that key id is taken.
    pub(crate) fn fetch_signers(&mut self, key: &IncomingKey) -> Result<(), LookupError> {
        let _span = tracing::info_span!(target: "kbx::lookup", "check_all_keysigs").entered();
        for sig in key.components.iter().flat_map(|c| &c.sigs) {
            let Some(kid) = SigPacket::parse(sig).ok().and_then(|s| s.issuer) else { continue };
            if kid != key.key_id {
                self.kid_search(kid, &|_| true)?;
            }
        }
        Ok(())
    }

    /// `have_secret_key_with_kid`, after a key was written: a new handle
    /// searching for the key id from the start to the end of the file
    /// (each keyblock found is asked of gpg-agent, which holds no secret
    /// key for a replay, so the search goes on), closed after it.
    pub(crate) fn secret_key_probe(&mut self, kid: [u8; 8]) -> Result<(), LookupError> {
        let _span = tracing::info_span!(target: "kbx::lookup", "secret_key_probe").entered();
        let mut h = Handle::new(self.searches.opener.clone(), Sought::Signer);
        let scratch = &mut self.searches.scratch;
        while search_on(&mut h, Strategy::Gnupg, scratch, super::by_kid(kid))?.is_some() {}
        Ok(())
    }

    /// `get_user_id_byfpr`: the user-id cache, else a search for the
    /// fingerprint on a new handle, closed after it. The primary user id
    /// gpg prints, if the key was found.
    pub(crate) fn user_id_by_fpr(&mut self, fpr: &[u8], kid: [u8; 8]) -> Result<Option<Vec<u8>>, LookupError> {
        if let Some(s) = self.uid_cache.get(&kid) {
            return Ok(Some(s.primary_uid.clone()));
        }
        let mut h = Handle::new(self.searches.opener.clone(), Sought::Signer);
        let found = search_on(&mut h, Strategy::Gnupg, &mut self.searches.scratch, by_fpr(fpr))?;
        if let Some(s) = &found {
            self.uid_cache.insert(s);
        }
        Ok(found.map(|s| s.primary_uid.clone()))
    }
}
