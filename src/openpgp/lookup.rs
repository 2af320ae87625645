//! How signers are looked up: the three strategies behind `--lookup` of
//! `list --with-sigs` / `--check-sigs`.
//!
//! # What gpg 2.2 / 2.4 does (read from g10/getkey.c, g10/keydb.c,
//! # kbx/keybox-search.c, kbx/keybox-update.c; checked under strace)
//!
//! * **Startup** (`keydb_add_resource`): one open of the keybox to
//!   recognise its type (one read, close), then, under the lock, GnuPG's
//!   maintenance pass (see [`crate::workload`]'s `startup`: on a clean
//!   keybox whose stamp is three hours old, a full copy into
//!   `pubring.kbx.tmp`, removed again, so every gpg run repeats it).
//! * **The listing** (`list_all`): a handle of its own, opened by its
//!   first search, reading every blob from the start to the end with
//!   `FIRST`/`NEXT` (no seek), closed at the end.
//! * **A signer's user id** (`get_user_id`, for every signature listed
//!   by `--list-sigs`, and for the text of `--check-sigs`): first the
//!   *user-id cache*, keyed by the key ids of the primary key and all
//!   subkeys of every keyblock a lookup found (`cache_user_id`, at most
//!   4096 keyblocks — when full, the newest entry is dropped). On a miss,
//!   `get_pubkey` without a key: a key-id search (`LONG_KID`) through the
//!   *cached lookup handle* (`ctrl->cached_getkey_kdb`): the first one is
//!   a new handle (its file is opened by the search, no seek); each later
//!   one reuses it after a `keybox_search_reset`, one `lseek(0)` even when
//!   the answer then comes from a cache. The search reads every blob
//!   completely from the start (header, X.509 and ephemeral blobs are
//!   read and passed over) up to the first OpenPGP blob with that key id
//!   in its key table, or to the end of the file. A key id not found is
//!   remembered in the *kid-not-found cache* (`kid_not_found_insert`):
//!   later searches for it cost only the rewind. The user-id cache is not
//!   filled by the listing itself: a key's own self-signatures cost one
//!   lookup of that key.
//! * **A signer's key** (`get_pubkey_for_sig`, `--check-sigs` only, for
//!   every signature not made by the key itself or one of its subkeys;
//!   self-signatures are checked with the keyblock's own key): with an
//!   issuer-fingerprint subpacket (every signature gpg 2.2+ makes), a
//!   fingerprint search on a **new handle** (`keydb_new`: the file is
//!   opened again, read from the start up to the signer's blob or the end)
//!   which then becomes the cached lookup handle if none is cached, else is
//!   closed — there is no cache in front of it. If it finds nothing,
//!   `get_pubkey` with the key id follows: the *public-key cache* (4096
//!   keys, the older half dropped when full) first, then the key-id search
//!   on the cached handle as above. Found keyblocks also fill the user-id
//!   cache, so the user id printed after the check comes from memory.
//!   A keyblock gpg would not take (`finish_lookup`: a primary key made in
//!   the future, which has no self-signature gpg accepts yet; for gpg 2.2
//!   also one that has expired or was revoked, see
//!   [`crate::gnupg_version`]) is passed over and the search goes on, to
//!   the next match or the end of the file, on the same handle; a key-id
//!   search that ends there does not put the key id in the kid-not-found
//!   cache (only a search whose first step from the reset finds nothing
//!   does). The key cache hands out what it holds without that check: a
//!   key looked up for its user id (`get_pubkey` without a key, which
//!   takes any keyblock) is there, so gpg 2.2 checks certifications by an
//!   expired key once it has listed that key.
//!
//! kbxscope reproduces this read-only; it models neither the dotlock
//! files nor `trustdb.gpg`, and verifies every signature (gpg also keeps a
//! per-process result cache, which only saves CPU). It saves CPU where gpg
//! does not, never a read: the caches are hash maps with gpg's eviction
//! rules, and a signer's blob that a search reads again is decoded again
//! only if its bytes changed.
//!
//! # The other strategies
//!
//! * [`Scan`]: one rescan from the start per lookup, on one extra
//!   handle, and nothing else (no caches, no startup passes).
//! * [`Index`]: answers from memory what the one listing pass put in
//!   it (key ids and fingerprints of every key of every keyblock).
//!
//! All three apply the same matching rules, so the statuses do not depend
//! on the strategy.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::io::{read_blob, BufferedReader, Next, Opener, ReadBlobError, Take};
use crate::kbx::blob::{head_is_ephemeral, key_table_fingerprints};
use crate::kbx::search::fingerprint_key_id;
use crate::kbx::{parse_blob, Blob, BlobType};
use crate::lookup::{Handle, LookupError, Sought, Strategy};

use cache::{PkCache, UidCache};
pub(crate) use keyboxd::KeyboxdSearches;
pub use signer::Signer;

mod cache;
mod import;
mod keyboxd;
mod signer;

/// What a lookup answers: the signer, or `None` when none is found.
pub(crate) type Found = Result<Option<Arc<Signer>>, LookupError>;

/// Whether gpg's key lookup takes a keyblock it found.
pub(crate) type Usable<'a> = dyn Fn(&Signer) -> bool + 'a;

/// The lookups listing signatures needs.
pub(crate) trait SignerLookup {
    /// A signer by key id, for its user id (gpg's `get_user_id`).
    ///
    /// # Errors
    /// I/O errors.
    fn user_id_of(&mut self, kid: [u8; 8]) -> Found;
    /// A signer's key to verify a signature (gpg's `get_pubkey_for_sig`):
    /// by issuer fingerprint if the signature has one, else (or if that
    /// finds nothing) by key id; `None` when gpg would find none it takes.
    /// `usable` says whether gpg's search would take a keyblock it found
    /// (`finish_lookup`); where a strategy follows gpg's searches it
    /// searches on past one it would not take. gpg's key cache, in front of
    /// the key-id search, hands out what it holds without asking `usable`:
    /// [`Gnupg`] keeps that cache; the strategies that do not take an
    /// unusable keyblock where `held` says the cache would hold it.
    ///
    /// # Errors
    /// I/O errors.
    fn key_for_sig(&mut self, fpr: Option<&[u8]>, kid: [u8; 8], usable: &Usable<'_>, held: &Usable<'_>) -> Found;
}

/// Keyblocks already decoded, by file offset, with the bytes they were
/// decoded from: gpg decodes a signer's keyblock every time a search
/// finds it, kbxscope once per distinct blob (a hit is taken only when
/// the bytes just read are the same). Reads are not affected: every
/// search still reads and copies the blob.
#[derive(Default)]
struct Decoded {
    by_offset: HashMap<u64, (Vec<u8>, Arc<Signer>)>,
}

/// What a strategy's searches reuse: the blob buffer and the decoded keyblocks.
#[derive(Default)]
struct Scratch {
    image: Vec<u8>,
    decoded: Decoded,
}

impl Decoded {
    /// The signer in `image`, the blob read at `offset`.
    fn signer(&mut self, offset: u64, image: &[u8]) -> Option<Arc<Signer>> {
        if let Some((bytes, s)) = self.by_offset.get(&offset) {
            if bytes.as_slice() == image {
                return Some(s.clone());
            }
        }
        let Ok(Blob::Key(blob)) = parse_blob(image) else { return None };
        let s = Arc::new(Signer::from_blob(&blob, offset));
        self.by_offset.insert(offset, (image.to_vec(), s.clone()));
        Some(s)
    }
}

/// Read blobs from the reader's position until an OpenPGP blob (not
/// ephemeral) has a key whose fingerprint `matches` accepts, or the file
/// ends. Every blob is read completely, as GnuPG's keybox search does —
/// with the same `read(2)` calls — but only a matching blob is copied out
/// of the buffer: of the others only the header and key table are looked
/// at, the rest is consumed in the buffer.
fn search<F: crate::io::RawRead>(
    strategy: Strategy,
    r: &mut BufferedReader<F>,
    scratch: &mut Scratch,
    matches: impl Fn(&[u8]) -> bool,
) -> Result<Option<Arc<Signer>>, ReadBlobError> {
    let Scratch { image, decoded } = scratch;
    crate::telemetry::scan_started(strategy.name(), r.stats().buffer_size);
    // A blob is copied only when its key table has a wanted fingerprint
    // and it is not ephemeral (flags bit 1).
    let wanted = |head: &[u8]| !head_is_ephemeral(head) && key_table_fingerprints(head).any(&matches);
    let policy = |ty| if ty == BlobType::OpenPgp { Take::CopyIf(&wanted) } else { Take::Consume };
    loop {
        match read_blob(r, image, policy)? {
            Next::Eof => return Ok(None),
            Next::Blob { offset } => {
                if let Some(s) = decoded.signer(offset, image) {
                    return Ok(Some(s));
                }
            }
            Next::Deleted { .. } | Next::TooLarge { .. } | Next::Passed { .. } => {}
        }
    }
}

fn by_kid(kid: [u8; 8]) -> impl Fn(&[u8]) -> bool {
    move |f| fingerprint_key_id(f) == kid
}

fn by_fpr(fpr: &[u8]) -> impl Fn(&[u8]) -> bool + '_ {
    move |f| f == fpr
}

/// A search on a handle (opened by it if it is not open yet): see [`search`].
fn search_on<O: Opener>(
    h: &mut Handle<O>,
    strategy: Strategy,
    scratch: &mut Scratch,
    matches: impl Fn(&[u8]) -> bool,
) -> Found {
    let r = h.reader()?;
    search(strategy, r, scratch, matches).map_err(|source| LookupError::Blob {
        sought: Sought::Signer,
        index: None,
        source,
    })
}

/// What one of gpg's searches came to: the keyblock it took, and whether
/// it passed over one it would not take on the way.
pub(crate) struct Searched {
    /// The keyblock taken.
    pub(crate) found: Option<Arc<Signer>>,
    /// Whether a matching keyblock was passed over.
    pub(crate) passed_over: bool,
}

/// [`search_on`] on past matches gpg would not take, as its `lookup`
/// loop does: the first usable one, or `None` at the end.
fn search_usable<O: Opener>(
    h: &mut Handle<O>,
    scratch: &mut Scratch,
    matches: impl Fn(&[u8]) -> bool,
    usable: &Usable<'_>,
) -> Result<Searched, LookupError> {
    let mut passed_over = false;
    loop {
        match search_on(h, Strategy::Gnupg, scratch, &matches)? {
            Some(s) if !usable(&s) => passed_over = true,
            found => return Ok(Searched { found, passed_over }),
        }
    }
}

/// Where gpg's two searches go: a keybox, read as gpg reads it
/// ([`KeyboxSearches`]), or keyboxd (`keyboxd::Searches`). gpg's caches
/// in front of them ([`Gnupg`]) are the same for both.
pub(crate) trait Searches {
    /// `get_pubkey`'s key-id search through the cached lookup handle: the
    /// handle reset, then (unless the key id is `known_missing`) a search
    /// on past keyblocks gpg would not take.
    fn kid_search(&mut self, kid: [u8; 8], known_missing: bool, usable: &Usable<'_>) -> Result<Searched, LookupError>;
    /// `get_pubkey_for_sig`'s fingerprint search on a new handle.
    fn fpr_search(&mut self, fpr: &[u8], usable: &Usable<'_>) -> Found;
}

/// gpg's searches in a keybox; see the module docs.
pub(crate) struct KeyboxSearches<O: Opener> {
    opener: O,
    scratch: Scratch,
    /// `ctrl->cached_getkey_kdb`.
    cached: Option<Handle<O>>,
}

impl<O: Opener + Clone> Searches for KeyboxSearches<O> {
    fn kid_search(&mut self, kid: [u8; 8], known_missing: bool, usable: &Usable<'_>) -> Result<Searched, LookupError> {
        let mut h = match self.cached.take() {
            Some(mut h) => {
                h.reset()?;
                h
            }
            None => Handle::new(self.opener.clone(), Sought::Signer),
        };
        let searched = if known_missing {
            Searched { found: None, passed_over: false }
        } else {
            search_usable(&mut h, &mut self.scratch, by_kid(kid), usable)?
        };
        self.cached = Some(h);
        Ok(searched)
    }

    fn fpr_search(&mut self, fpr: &[u8], usable: &Usable<'_>) -> Found {
        let mut h = Handle::new(self.opener.clone(), Sought::Signer);
        let found = search_usable(&mut h, &mut self.scratch, by_fpr(fpr), usable)?.found;
        if self.cached.is_none() {
            self.cached = Some(h);
        }
        Ok(found)
    }
}

/// gpg's access pattern; see the module docs.
pub(crate) struct Gnupg<S> {
    searches: S,
    uid_cache: UidCache,
    pk_cache: PkCache,
    kid_not_found: HashSet<[u8; 8]>,
}

impl<O: Opener + Clone> Gnupg<KeyboxSearches<O>> {
    /// A strategy opening its handles with `opener`.
    pub(crate) fn new(opener: O) -> Self {
        Self::with(KeyboxSearches { opener, scratch: Scratch::default(), cached: None })
    }

    /// gpg's resource probe: an open, one read of the magic, a close.
    ///
    /// # Errors
    /// The keybox cannot be opened.
    pub(crate) fn probe(&mut self) -> Result<(), LookupError> {
        let mut probe = self.searches.opener.open()?;
        // gpg reads the magic through stdio: one read, whatever it holds
        // (unbuffered: the first blob's prefix, as kbxscope's own first
        // look at a store reads it).
        let _ = probe.read(&mut [0u8; crate::kbx::blob::BLOB_PREFIX_LEN]);
        Ok(())
    }
}

impl<S: Searches> Gnupg<S> {
    /// gpg's caches in front of `searches`.
    pub(crate) fn with(searches: S) -> Self {
        Self { searches, uid_cache: UidCache::default(), pk_cache: PkCache::default(), kid_not_found: HashSet::new() }
    }

    /// `get_pubkey`'s key-id search through the cached handle.
    fn kid_search(&mut self, kid: [u8; 8], usable: &Usable<'_>) -> Found {
        let _span = tracing::info_span!(target: "kbx::lookup", "kid_search", kid = %crate::kbx::dump::hex_upper(&kid))
            .entered();
        let known_missing = self.kid_not_found.contains(&kid);
        let Searched { found, passed_over } = self.searches.kid_search(kid, known_missing, usable)?;
        // gpg's keydb remembers a key id only when the search's first
        // step, the one from the reset, finds nothing: a search that went
        // on past a keyblock it would not take leaves no trace.
        if found.is_none() && !known_missing && !passed_over {
            self.kid_not_found.insert(kid);
        }
        if let Some(s) = &found {
            self.uid_cache.insert(s);
        }
        Ok(found)
    }
}

impl<S: Searches> SignerLookup for Gnupg<S> {
    fn user_id_of(&mut self, kid: [u8; 8]) -> Found {
        if let Some(s) = self.uid_cache.get(&kid) {
            return Ok(Some(s));
        }
        // `get_pubkey` without a key: any keyblock will do, and the key
        // found goes into the key cache.
        if let Some(s) = self.kid_search(kid, &|_| true)? {
            self.pk_cache.insert(kid, &s);
        }
        Ok(self.uid_cache.get(&kid))
    }

    fn key_for_sig(&mut self, fpr: Option<&[u8]>, kid: [u8; 8], usable: &Usable<'_>, _: &Usable<'_>) -> Found {
        if let Some(fpr) = fpr {
            let _span =
                tracing::info_span!(target: "kbx::lookup", "fpr_search", fpr = %crate::kbx::dump::hex_upper(fpr))
                    .entered();
            if let Some(s) = self.searches.fpr_search(fpr, usable)? {
                self.uid_cache.insert(&s);
                return Ok(Some(s));
            }
        }
        if let Some(s) = self.pk_cache.get(&kid) {
            return Ok(Some(s));
        }
        let found = self.kid_search(kid, usable)?;
        if let Some(s) = &found {
            self.pk_cache.insert(kid, s);
        }
        Ok(found)
    }
}

/// One rescan per lookup on one extra handle; nothing else.
pub(crate) struct Scan<O: Opener> {
    handle: Handle<O>,
    scratch: Scratch,
}

impl<O: Opener> Scan<O> {
    /// A strategy opening its handle with `opener`.
    pub(crate) fn new(opener: O) -> Self {
        Self { handle: Handle::new(opener, Sought::Signer), scratch: Scratch::default() }
    }

    fn rescan(&mut self, matches: impl Fn(&[u8]) -> bool) -> Found {
        let _span = tracing::info_span!(target: "kbx::lookup", "scan").entered();
        self.handle.rewound()?;
        search_on(&mut self.handle, Strategy::Scan, &mut self.scratch, matches)
    }
}

impl<O: Opener> SignerLookup for Scan<O> {
    fn user_id_of(&mut self, kid: [u8; 8]) -> Found {
        self.rescan(by_kid(kid))
    }

    fn key_for_sig(&mut self, fpr: Option<&[u8]>, kid: [u8; 8], usable: &Usable<'_>, held: &Usable<'_>) -> Found {
        let taken = |s: &Arc<Signer>| usable(s) || held(s);
        if let Some(fpr) = fpr {
            if let Some(s) = self.rescan(by_fpr(fpr))?.filter(taken) {
                return Ok(Some(s));
            }
        }
        Ok(self.rescan(by_kid(kid))?.filter(taken))
    }
}

/// Answers from memory; filled by the listing pass.
#[derive(Default)]
pub(crate) struct Index {
    by_kid: HashMap<[u8; 8], Arc<Signer>>,
    by_fpr: HashMap<Vec<u8>, Arc<Signer>>,
}

impl Index {
    /// Index a keyblock (the first one with a key id or fingerprint wins,
    /// as a search from the start finds it).
    pub(crate) fn insert(&mut self, s: &Arc<Signer>) {
        for k in &s.key_ids {
            self.by_kid.entry(*k).or_insert_with(|| s.clone());
        }
        for f in &s.fingerprints {
            self.by_fpr.entry(f.clone()).or_insert_with(|| s.clone());
        }
    }
}

/// The index answers from memory and never changes after the pass, so
/// threads can share it.
impl SignerLookup for &Index {
    fn user_id_of(&mut self, kid: [u8; 8]) -> Found {
        Ok(self.by_kid.get(&kid).cloned())
    }

    fn key_for_sig(&mut self, fpr: Option<&[u8]>, kid: [u8; 8], usable: &Usable<'_>, held: &Usable<'_>) -> Found {
        let taken = |s: &&Arc<Signer>| usable(s) || held(s);
        if let Some(s) = fpr.and_then(|f| self.by_fpr.get(f)).filter(taken) {
            return Ok(Some(s.clone()));
        }
        Ok(self.by_kid.get(&kid).filter(taken).cloned())
    }
}

impl SignerLookup for Index {
    fn user_id_of(&mut self, kid: [u8; 8]) -> Found {
        (&*self).user_id_of(kid)
    }

    fn key_for_sig(&mut self, fpr: Option<&[u8]>, kid: [u8; 8], usable: &Usable<'_>, held: &Usable<'_>) -> Found {
        (&*self).key_for_sig(fpr, kid, usable, held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decoded_keyblock_is_reused_only_for_the_same_bytes() {
        let file = include_bytes!("../../tests/fixtures/gnupg-mixed.kbx");
        let mut blobs = Vec::new();
        let mut at = 0;
        while at + 5 <= file.len() {
            let len = u32::from_be_bytes(file[at..at + 4].try_into().unwrap()) as usize;
            if file[at + 4] == 2 {
                blobs.push(&file[at..at + len]);
            }
            at += len;
        }
        let (a, b) = (blobs[0], blobs[1]);
        let mut d = Decoded::default();
        let first = d.signer(32, a).unwrap();
        assert!(Arc::ptr_eq(&first, &d.signer(32, a).unwrap()), "same offset, same bytes: reused");
        let other = d.signer(32, b).unwrap();
        assert_ne!(other.fingerprints, first.fingerprints, "same offset, other bytes: decoded anew");
        assert!(Arc::ptr_eq(&other, &d.signer(32, b).unwrap()));
    }
}
