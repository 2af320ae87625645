//! How signers are looked up: the three strategies behind `--lookup` of
//! `list --with-sigs` / `--check-sigs`.
//!
//! # What gpg 2.2 / 2.4 does (read from g10/getkey.c, g10/keydb.c,
//! # kbx/keybox-search.c, kbx/keybox-update.c; checked under strace)
//!
//! * **Startup** (`keydb_add_resource`): one open of the keybox to
//!   recognise its type (one read, close), then a *compress check*:
//!   open, read the header blob; when its last-maintenance time is three
//!   hours old or more (or there is no header), rewind and read every blob
//!   to the end of the file (`keybox_compress`, which renames a new file
//!   into place only if something changed — on a clean keybox nothing
//!   does, the header is never updated, so every gpg run repeats the full
//!   pass), close. It runs only if the keybox is writable.
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
//!
//! kbxscope reproduces this read-only; it models neither the dotlock
//! files nor `trustdb.gpg`, and verifies every signature (gpg also keeps a
//! per-process result cache, which only saves CPU).
//!
//! # The other strategies
//!
//! * [`ScanLookup`]: one rescan from the start per lookup, on one extra
//!   handle, and nothing else (no caches, no startup passes).
//! * [`IndexLookup`]: answers from memory what the one listing pass put in
//!   it (key ids and fingerprints of every key of every keyblock).
//!
//! All three apply the same matching rules, so the statuses do not depend
//! on the strategy.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::keyblock::Keyblock;
use crate::io::{read_blob, BufferedReader, Next, OpenError, Opener, ReadBlobError, Take};
use crate::kbx::blob::KEY_TABLE_OFFSET;
use crate::kbx::search::derived_key_id;
use crate::kbx::{parse_blob, Blob, BlobType, KeyBlob};

/// gpg's `PK_UID_CACHE_SIZE` (configure's default key cache size).
pub const CACHE_SIZE: usize = 4096;

/// Errors of a lookup.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// A handle could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A blob could not be read during a signer lookup.
    #[error("during a signer lookup, blob at byte offset {offset}: {source}", offset = .source.offset())]
    Read {
        /// What failed.
        #[from]
        source: ReadBlobError,
    },
}

/// A keyblock a lookup found.
#[derive(Debug)]
pub struct Signer {
    /// The decoded keyblock.
    pub keyblock: Keyblock,
    /// The user id gpg prints for it.
    pub primary_uid: Vec<u8>,
    /// Key ids of all its keys (from the blob's key table).
    pub key_ids: Vec<[u8; 8]>,
    /// Fingerprints of all its keys.
    pub fingerprints: Vec<Vec<u8>>,
}

impl Signer {
    /// Decode a signer from its blob.
    pub fn from_blob(blob: &KeyBlob<'_>) -> Self {
        let keyblock = Keyblock::parse(blob.data());
        let primary_uid = keyblock.primary_uid();
        Self {
            primary_uid,
            keyblock,
            key_ids: blob.keys().map(|k| super::keyblock::key_id_bytes(derived_key_id(&k))).collect(),
            fingerprints: blob.keys().map(|k| k.fingerprint.to_vec()).collect(),
        }
    }

    fn has_key_id(&self, kid: &[u8; 8]) -> bool {
        self.key_ids.contains(kid)
    }
}

/// The lookups listing signatures needs.
pub trait SignerLookup {
    /// A signer by key id, for its user id (gpg's `get_user_id`).
    ///
    /// # Errors
    /// I/O errors.
    fn user_id_of(&mut self, kid: [u8; 8]) -> Result<Option<Arc<Signer>>, LookupError>;
    /// A signer's key to verify a signature (gpg's `get_pubkey_for_sig`):
    /// by issuer fingerprint if the signature has one, else (or if that
    /// finds nothing) by key id.
    ///
    /// # Errors
    /// I/O errors.
    fn key_for_sig(&mut self, fpr: Option<&[u8]>, kid: [u8; 8]) -> Result<Option<Arc<Signer>>, LookupError>;
}

/// Read blobs from the reader's position until an OpenPGP blob (not
/// ephemeral) has a key whose fingerprint `matches` accepts, or the file
/// ends. Every blob is read completely, as GnuPG's keybox search does —
/// with the same `read(2)` calls — but only a matching blob is copied out
/// of the buffer: of the others only the header and key table are looked
/// at, the rest is consumed in the buffer.
fn search<F: std::io::Read + std::io::Seek>(
    strategy: &'static str,
    r: &mut BufferedReader<F>,
    image: &mut Vec<u8>,
    matches: impl Fn(&[u8]) -> bool,
) -> Result<Option<Arc<Signer>>, ReadBlobError> {
    crate::telemetry::scan_started(strategy, r.stats().buffer_size);
    // A blob is copied only when its key table has a wanted fingerprint
    // and it is not ephemeral (flags bit 1).
    let wanted = |head: &[u8]| {
        let ephemeral = head.get(6..8).is_some_and(|f| u16::from_be_bytes([f[0], f[1]]) & 2 != 0);
        !ephemeral && fingerprints(head).any(&matches)
    };
    let policy = |ty| if ty == BlobType::OpenPgp { Take::CopyIf(&wanted) } else { Take::Consume };
    loop {
        match read_blob(r, image, policy)? {
            Next::Eof => return Ok(None),
            Next::Blob { .. } => {
                if let Ok(Blob::Key(blob)) = parse_blob(image) {
                    return Ok(Some(Arc::new(Signer::from_blob(&blob))));
                }
            }
            Next::Deleted { .. } | Next::TooLarge { .. } | Next::Passed { .. } => {}
        }
    }
}

/// The fingerprints of a blob's key table (`head` holds the blob up to the
/// end of its key table), read as GnuPG's keybox search reads them:
/// version 1 entries hold 20 bytes, version 2 entries 32 when their flags
/// say so. Entries too small to hold one are left out (the full parse
/// rejects such a blob, so it never matches).
fn fingerprints(head: &[u8]) -> impl Iterator<Item = &[u8]> {
    let version = head.get(5).copied().unwrap_or(0);
    let size = if head.len() >= KEY_TABLE_OFFSET { usize::from(u16::from_be_bytes([head[18], head[19]])) } else { 0 };
    let keys = head.len().saturating_sub(KEY_TABLE_OFFSET).checked_div(size).unwrap_or(0);
    (0..keys).filter_map(move |i| {
        let e = &head[KEY_TABLE_OFFSET + i * size..KEY_TABLE_OFFSET + (i + 1) * size];
        match version {
            1 if size >= 28 => Some(&e[..20]),
            v if v >= 2 && size >= 36 => {
                Some(if u16::from_be_bytes([e[32], e[33]]) & 0x80 != 0 { &e[..32] } else { &e[..20] })
            }
            _ => None,
        }
    })
}

/// The key id GnuPG's search compares for a fingerprint: its last 8 bytes
/// (20-byte fingerprints), its first 8 (32-byte ones).
fn fpr_key_id(f: &[u8]) -> &[u8] {
    if f.len() == 32 {
        &f[..8]
    } else {
        &f[f.len().saturating_sub(8)..]
    }
}

fn by_kid(kid: [u8; 8]) -> impl Fn(&[u8]) -> bool {
    move |f| fpr_key_id(f) == kid
}

fn by_fpr(fpr: &[u8]) -> impl Fn(&[u8]) -> bool + '_ {
    move |f| f == fpr
}

/// A GnuPG keybox handle: its file is opened by the first search.
struct KbHandle<O: Opener> {
    file: Option<O::Handle>,
}

impl<O: Opener> KbHandle<O> {
    fn new() -> Self {
        Self { file: None }
    }

    /// `keybox_search_reset`: a rewind if the file is open.
    fn reset(&mut self) -> Result<(), LookupError> {
        if let Some(f) = self.file.as_mut() {
            f.rewind_unbuffered().map_err(|source| ReadBlobError::Io { offset: 0, source })?;
        }
        Ok(())
    }

    fn search(
        &mut self,
        opener: &O,
        image: &mut Vec<u8>,
        matches: impl Fn(&[u8]) -> bool,
    ) -> Result<Option<Arc<Signer>>, LookupError> {
        if self.file.is_none() {
            self.file = Some(opener.open()?);
        }
        let f = self.file.as_mut().expect("just opened");
        Ok(search("gnupg", f, image, matches)?)
    }
}

/// gpg's access pattern; see the module docs.
pub struct GnupgLookup<O: Opener> {
    opener: O,
    image: Vec<u8>,
    /// `ctrl->cached_getkey_kdb`.
    cached: Option<KbHandle<O>>,
    /// The user-id cache, oldest first.
    uid_cache: Vec<Arc<Signer>>,
    /// The public-key cache, oldest first (by key id).
    pk_cache: Vec<([u8; 8], Arc<Signer>)>,
    kid_not_found: HashSet<[u8; 8]>,
}

impl<O: Opener> GnupgLookup<O> {
    /// A strategy opening its handles with `opener`.
    pub fn new(opener: O) -> Self {
        Self {
            opener,
            image: Vec::new(),
            cached: None,
            uid_cache: Vec::new(),
            pk_cache: Vec::new(),
            kid_not_found: HashSet::new(),
        }
    }

    /// gpg's startup: the resource-type probe and the compress check (see
    /// the module docs). `now` is the current time in Unix seconds;
    /// `writable` whether gpg could write the keybox.
    ///
    /// # Errors
    /// I/O errors.
    pub fn startup(&mut self, now: i64, writable: bool) -> Result<(), LookupError> {
        let mut probe = self.opener.open()?;
        // gpg reads the magic through stdio: one read, whatever it holds.
        let _ = probe.read(&mut [0u8; 1]);
        drop(probe);
        if !writable {
            return Ok(());
        }
        // A keybox gpg cannot read through makes its compress run give up
        // quietly (the listing then reports the problem): read errors end
        // the check, only a failed open is an error.
        let mut f = self.opener.open()?;
        if !matches!(read_blob(&mut f, &mut self.image, Take::all), Ok(Next::Blob { .. })) {
            return Ok(());
        }
        if let Ok(Blob::Header(h)) = parse_blob(&self.image) {
            if i64::from(h.last_maintenance) + 3 * 3600 > now {
                return Ok(());
            }
        }
        if f.rewind_unbuffered().is_err() {
            return Ok(());
        }
        while matches!(read_blob(&mut f, &mut self.image, Take::all), Ok(n) if n != Next::Eof) {}
        Ok(())
    }

    fn uid_cached(&self, kid: &[u8; 8]) -> Option<Arc<Signer>> {
        self.uid_cache.iter().rev().find(|s| s.has_key_id(kid)).cloned()
    }

    /// `cache_user_id`: skipped if one of its fingerprints is cached; when
    /// full, the newest entry goes.
    fn cache_user_id(&mut self, s: &Arc<Signer>) {
        if self.uid_cache.iter().any(|c| c.fingerprints.iter().any(|f| s.fingerprints.contains(f))) {
            return;
        }
        if self.uid_cache.len() >= CACHE_SIZE {
            self.uid_cache.pop();
        }
        self.uid_cache.push(s.clone());
    }

    /// `cache_public_key`: when full, the older half goes.
    fn cache_public_key(&mut self, kid: [u8; 8], s: &Arc<Signer>) {
        if self.pk_cache.iter().any(|(k, _)| *k == kid) {
            return;
        }
        if self.pk_cache.len() >= CACHE_SIZE {
            let drop = self.pk_cache.len() - self.pk_cache.len() / 2;
            self.pk_cache.drain(..drop.saturating_sub(1));
        }
        self.pk_cache.push((kid, s.clone()));
    }

    /// `get_pubkey`'s key-id search through the cached handle.
    fn kid_search(&mut self, kid: [u8; 8]) -> Result<Option<Arc<Signer>>, LookupError> {
        let mut h = match self.cached.take() {
            Some(mut h) => {
                h.reset()?;
                h
            }
            None => KbHandle::new(),
        };
        let _span = tracing::info_span!(target: "kbx::lookup", "kid_search", kid = %crate::kbx::dump::hex_upper(&kid))
            .entered();
        let found = if self.kid_not_found.contains(&kid) {
            None
        } else {
            let found = h.search(&self.opener, &mut self.image, by_kid(kid))?;
            if found.is_none() {
                self.kid_not_found.insert(kid);
            }
            found
        };
        self.cached = Some(h);
        if let Some(s) = &found {
            self.cache_user_id(s);
        }
        Ok(found)
    }
}

impl<O: Opener> SignerLookup for GnupgLookup<O> {
    fn user_id_of(&mut self, kid: [u8; 8]) -> Result<Option<Arc<Signer>>, LookupError> {
        if let Some(s) = self.uid_cached(&kid) {
            return Ok(Some(s));
        }
        self.kid_search(kid)?;
        Ok(self.uid_cached(&kid))
    }

    fn key_for_sig(&mut self, fpr: Option<&[u8]>, kid: [u8; 8]) -> Result<Option<Arc<Signer>>, LookupError> {
        if let Some(fpr) = fpr {
            let _span =
                tracing::info_span!(target: "kbx::lookup", "fpr_search", fpr = %crate::kbx::dump::hex_upper(fpr))
                    .entered();
            let mut h = KbHandle::new();
            let found = h.search(&self.opener, &mut self.image, by_fpr(fpr))?;
            if self.cached.is_none() {
                self.cached = Some(h);
            }
            if let Some(s) = found {
                self.cache_user_id(&s);
                return Ok(Some(s));
            }
        }
        if let Some((_, s)) = self.pk_cache.iter().find(|(k, _)| *k == kid) {
            return Ok(Some(s.clone()));
        }
        let found = self.kid_search(kid)?;
        if let Some(s) = &found {
            self.cache_public_key(kid, s);
        }
        Ok(found)
    }
}

/// One rescan per lookup on one extra handle; nothing else.
pub struct ScanLookup<O: Opener> {
    opener: O,
    handle: Option<O::Handle>,
    image: Vec<u8>,
}

impl<O: Opener> ScanLookup<O> {
    /// A strategy opening its handle with `opener`.
    pub fn new(opener: O) -> Self {
        Self { opener, handle: None, image: Vec::new() }
    }

    fn rescan(&mut self, matches: impl Fn(&[u8]) -> bool) -> Result<Option<Arc<Signer>>, LookupError> {
        let _span = tracing::info_span!(target: "kbx::lookup", "scan").entered();
        if self.handle.is_none() {
            self.handle = Some(self.opener.open()?);
        }
        let h = self.handle.as_mut().expect("just opened");
        h.rewind().map_err(|source| ReadBlobError::Io { offset: 0, source })?;
        Ok(search("scan", h, &mut self.image, matches)?)
    }
}

impl<O: Opener> SignerLookup for ScanLookup<O> {
    fn user_id_of(&mut self, kid: [u8; 8]) -> Result<Option<Arc<Signer>>, LookupError> {
        self.rescan(by_kid(kid))
    }

    fn key_for_sig(&mut self, fpr: Option<&[u8]>, kid: [u8; 8]) -> Result<Option<Arc<Signer>>, LookupError> {
        if let Some(fpr) = fpr {
            if let Some(s) = self.rescan(by_fpr(fpr))? {
                return Ok(Some(s));
            }
        }
        self.rescan(by_kid(kid))
    }
}

/// Answers from memory; filled by the listing pass.
#[derive(Default)]
pub struct IndexLookup {
    by_kid: HashMap<[u8; 8], Arc<Signer>>,
    by_fpr: HashMap<Vec<u8>, Arc<Signer>>,
}

impl IndexLookup {
    /// Index a keyblock (the first one with a key id or fingerprint wins,
    /// as a search from the start finds it).
    pub fn insert(&mut self, s: &Arc<Signer>) {
        for k in &s.key_ids {
            self.by_kid.entry(*k).or_insert_with(|| s.clone());
        }
        for f in &s.fingerprints {
            self.by_fpr.entry(f.clone()).or_insert_with(|| s.clone());
        }
    }
}

impl SignerLookup for IndexLookup {
    fn user_id_of(&mut self, kid: [u8; 8]) -> Result<Option<Arc<Signer>>, LookupError> {
        Ok(self.by_kid.get(&kid).cloned())
    }

    fn key_for_sig(&mut self, fpr: Option<&[u8]>, kid: [u8; 8]) -> Result<Option<Arc<Signer>>, LookupError> {
        if let Some(s) = fpr.and_then(|f| self.by_fpr.get(f)) {
            return Ok(Some(s.clone()));
        }
        Ok(self.by_kid.get(&kid).cloned())
    }
}
