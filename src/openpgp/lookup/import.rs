//! What gpg's import does with its key database besides checking
//! signatures (GnuPG 2.2's `g10/import.c`, `getkey.c`, `keydb.c`; facts
//! only): the search for the key being imported, the handles an update
//! closes, the caches it empties, and the user id its messages print.

use std::sync::Arc;

use super::{by_fpr, search_on, Gnupg, KeyboxSearches, Scratch, Signer};
use crate::io::Opener;
use crate::lookup::{Handle, LookupError, Sought, Strategy};

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

    /// `have_secret_key_with_kid`, after a key was written: a new handle
    /// searching for the key id from the start to the end of the file
    /// (each keyblock found is asked of gpg-agent, which holds no secret
    /// key for a replay, so the search goes on), closed after it.
    pub(crate) fn secret_key_probe(&mut self, kid: [u8; 8]) -> Result<(), LookupError> {
        let _span = tracing::info_span!(target: "kbx::lookup", "secret_key_probe").entered();
        let mut h = Handle::new(self.searches.opener.clone(), Sought::Signer);
        let mut scratch = Scratch::default();
        while search_on(&mut h, Strategy::Gnupg, &mut scratch, super::by_kid(kid))?.is_some() {}
        Ok(())
    }

    /// `get_user_id_byfpr`: the user-id cache, else a search for the
    /// fingerprint on a new handle, closed after it.
    pub(crate) fn user_id_by_fpr(&mut self, fpr: &[u8], kid: [u8; 8]) -> Result<(), LookupError> {
        if self.uid_cache.get(&kid).is_some() {
            return Ok(());
        }
        let mut h = Handle::new(self.searches.opener.clone(), Sought::Signer);
        let mut scratch = Scratch::default();
        if let Some(s) = search_on(&mut h, Strategy::Gnupg, &mut scratch, by_fpr(fpr))? {
            self.uid_cache.insert(&s);
        }
        Ok(())
    }
}

/// gpg's import checks every signature (`key_check_all_keysigs`, import's
/// default `repair-keys`) with the signer found by key id — the key
/// cache, then a key-id search, passing over keyblocks as a certifier's
/// lookup does (measured: this matches gpg 2.2.40's reads within 1%) —
/// never by the issuer fingerprint, and prints nothing, so it looks no
/// signer's user id up.
pub(crate) struct WithoutUserIds<'a, L>(pub(crate) &'a mut L);

impl<L: super::SignerLookup> super::SignerLookup for WithoutUserIds<'_, L> {
    fn user_id_of(&mut self, _: [u8; 8]) -> super::Found {
        Ok(None)
    }

    fn key_for_sig(
        &mut self,
        _: Option<&[u8]>,
        kid: [u8; 8],
        usable: &super::Usable<'_>,
        held: &super::Usable<'_>,
    ) -> super::Found {
        self.0.key_for_sig(None, kid, usable, held)
    }
}
