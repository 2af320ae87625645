//! An OpenPGP keyblock as gpg's `--list-sigs` walks it: the primary key,
//! then each component (direct signatures, user ids, photo ids, subkeys)
//! with its signatures in keyblock order, and the primary user id gpg
//! would pick for it (`merge_selfsigs`' rule).
//!
//! Decoded packet by packet with the `pgp` crate's packet parser, so a
//! packet the crate cannot decode (a v5 key or signature, an unknown
//! algorithm, a corrupt signature) is kept, undecoded, instead of ending
//! the keyblock. The keyblock's bytes are kept too, with where each
//! packet's body lies, for what [`super::raw`] reads from them. No I/O.

pub(super) use crate::kbx::keypacket::key_id_of;
use std::ops::Range;

use pgp::packet::{Packet, PacketParser, PublicKey, PublicSubkey, Signature, UserAttribute, UserId};
use pgp::ser::Serialize;
use pgp::types::{Fingerprint, KeyDetails, KeyVersion};

use super::packet_decode::{crate_decodes_uat, decode_packet};
use super::primary::primary_user;
use super::raw::KeyPacket;

/// What a group of signatures is attached to.
#[derive(Debug, Clone)]
pub enum Component {
    /// The primary key itself (direct-key signatures, key revocations).
    Key,
    /// A user id.
    Uid(UserId),
    /// A user attribute (photo id): decoded by the crate only where the
    /// keyblock's framing was not read; else its bytes are read where they
    /// lie (they are most of a keyblock with a photo, and the crate would
    /// copy them).
    Uat(Option<UserAttribute>),
    /// A subkey; `None` when the crate could not decode it.
    Subkey(Option<Box<PublicSubkey>>),
}

/// Why the `pgp` crate did not decode a signature packet.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Undecoded {
    /// A version the crate keeps as bytes only (v5).
    #[error("signature version {0} is not decoded")]
    Version(u8),
    /// The crate's own error.
    #[error("{0}")]
    Crate(std::sync::Arc<pgp::errors::Error>),
}

/// One signature packet, decoded or not.
#[derive(Debug, Clone)]
pub struct Part {
    /// The signature as the crate decoded it, or why it could not.
    pub decoded: Result<Box<Signature>, Undecoded>,
    /// gpg's cached verdict from the ring-trust packet after it
    /// (`Some(valid)` when gpg checked it).
    pub cached: Option<bool>,
    /// Where its body lies in the keyblock's bytes (`None` when the
    /// framing was not read).
    pub body: Option<Range<usize>>,
}

/// A component and its signatures.
#[derive(Debug, Clone)]
pub struct Group {
    /// What is signed.
    pub component: Component,
    /// Its signature packets in keyblock order.
    pub sigs: Vec<Part>,
    /// Where the component's packet body lies in the keyblock's bytes
    /// (`None` for [`Component::Key`] and when the framing was not read).
    pub body: Option<Range<usize>>,
    /// A photo whose bytes were let go of: gpg's name for it and the name
    /// hash its validity is filed under.
    pub photo: Option<(String, [u8; 20])>,
}

/// A key the crate decoded, with what is made of it once, where the crate
/// would make it again for every signature: its serialization as the crate
/// writes it (what a signature's digest takes of the key), its fingerprint
/// and its key id.
#[derive(Debug, Clone)]
pub(super) struct DecodedKey {
    /// The 64-bit key id, as the crate's `legacy_key_id` gives it.
    pub(super) id: [u8; 8],
    /// The fingerprint, as the crate's `fingerprint` gives it.
    pub(super) fingerprint: Fingerprint,
    /// The key packet's body as the crate's `to_writer` writes it.
    pub(super) serialized: Vec<u8>,
    /// `None` for the primary key, else the index of the subkey's group.
    pub(super) group: Option<usize>,
    /// The key as aws-lc-rs verifies with it, parsed on first use (RSA).
    pub(super) rsa: crate::crypto::ParsedRsa,
}

impl DecodedKey {
    /// What is made of `key`, the key of `group`; `None` if the crate
    /// cannot serialize it.
    pub(super) fn of(key: &(impl KeyDetails + Serialize), group: Option<usize>) -> Option<Self> {
        let fingerprint = key.fingerprint();
        // The crate's `legacy_key_id`, without hashing the key again.
        let id = match (key.version(), fingerprint.as_bytes()) {
            (KeyVersion::V4, f) if f.len() == 20 => key_id_of(&f[12..]),
            (KeyVersion::V6, f) if f.len() >= 8 => key_id_of(&f[..8]),
            _ => key_id_of(key.legacy_key_id().as_ref()),
        };
        Some(Self { id, fingerprint, serialized: key.to_bytes().ok()?, group, rsa: Default::default() })
    }
}

/// A decoded keyblock.
#[derive(Debug, Clone)]
pub struct Keyblock {
    /// The primary key; `None` when the crate cannot decode it (the key
    /// is still listed from the blob's key table).
    pub primary: Option<Box<PublicKey>>,
    /// The groups in keyblock order, starting with [`Component::Key`].
    pub groups: Vec<Group>,
    /// The bytes the keyblock lies in (its blob, when handed over whole):
    /// every body range is into them.
    image: Vec<u8>,
    /// Where the primary key packet's body lies in them.
    primary_body: Option<Range<usize>>,
    /// [`Self::decoded_keys`].
    decoded: Vec<DecodedKey>,
    /// Whether the crate decoded every packet and they come in the order
    /// its composed-key parser reads whole (the primary v4 key first, its
    /// signatures, user ids and photo ids, then subkeys): the parser would
    /// then see just these packets (see [`Self::as_composed`]).
    composed: bool,
    /// [`Self::primary_uid_group`], found once when the keyblock is decoded.
    primary_uid: Option<usize>,
}

impl Keyblock {
    /// Decode a keyblock image. GnuPG's ring-trust packets are not
    /// decoded as packets; the one after a signature gives its cached
    /// verdict (the "sigcache" byte: bit 0 checked, bit 1 valid).
    pub fn parse(image: &[u8]) -> Self {
        Self::parse_in(image.to_vec(), 0..image.len())
    }

    /// [`Self::parse`] of the keyblock at `within` of `bytes` (a blob's
    /// image), keeping `bytes` instead of copying the keyblock out of them.
    /// An empty keyblock if `within` is not in `bytes`.
    pub(crate) fn parse_in(bytes: Vec<u8>, within: Range<usize>) -> Self {
        let within = if bytes.get(within.clone()).is_some() { within } else { 0..0 };
        let base = within.start;
        let mut kb = Keyblock {
            primary: None,
            groups: vec![Group { component: Component::Key, sigs: Vec::new(), body: None, photo: None }],
            image: Vec::new(),
            primary_body: None,
            decoded: Vec::new(),
            composed: true,
            primary_uid: None,
        };
        let image = &bytes[within];
        let Ok(packets) = crate::kbx::keyblock::split_packets(image) else {
            kb.composed = false;
            // Framing the splitter does not read (e.g. partial lengths):
            // the crate's parser alone, without the cached verdicts.
            for p in PacketParser::new(image) {
                kb.add(p, None, None);
            }
            kb.image = bytes;
            kb.primary_uid = kb.find_primary_uid();
            return kb;
        };
        let mut start = 0;
        for p in packets {
            let body_start = p.body.as_ptr() as usize - image.as_ptr() as usize;
            let end = body_start + p.body.len();
            let whole = &image[start..end];
            start = end;
            if p.tag == crate::kbx::keyblock::tag::TRUST {
                if let (Some(&cache), Some(Part { cached, .. })) =
                    (p.body.get(1), kb.groups.last_mut().and_then(|g| g.sigs.last_mut()))
                {
                    if cached.is_none() && cache & 1 != 0 {
                        *cached = Some(cache & 2 != 0);
                    }
                }
                continue;
            }
            if p.tag == crate::kbx::keyblock::tag::USER_ATTRIBUTE {
                kb.add_user_attribute(crate_decodes_uat(p.body), base + body_start..base + end);
                continue;
            }
            if let Some(item) = decode_packet(whole) {
                kb.add(item, Some(p.tag), Some(base + body_start..base + end));
            }
        }
        kb.image = bytes;
        kb.composed &= kb.primary.as_ref().is_some_and(|k| k.version() == KeyVersion::V4);
        // A key's id and fingerprint are hashes of its serialization: made
        // once here, not for every signature it makes or is signed with.
        let primary = kb.primary.iter().filter_map(|k| DecodedKey::of(k.as_ref(), None));
        let subkeys = kb.groups.iter().enumerate().filter_map(|(i, g)| match &g.component {
            Component::Subkey(Some(k)) => DecodedKey::of(k.as_ref(), Some(i)),
            _ => None,
        });
        kb.decoded = primary.chain(subkeys).collect();
        kb.primary_uid = kb.find_primary_uid();
        kb
    }

    /// The keys the crate decoded, the primary key first.
    pub(super) fn decoded_keys(&self) -> &[DecodedKey] {
        &self.decoded
    }

    /// The decoded key of a group (`None`: the primary key), if the crate
    /// decoded it.
    pub(super) fn decoded_key(&self, group: Option<usize>) -> Option<&DecodedKey> {
        self.decoded.iter().find(|k| k.group == group)
    }

    /// Whether the `pgp` crate's composed-key parser, given this
    /// keyblock's packets, would read exactly the primary key and the
    /// groups held here (before its own rules: it drops components without
    /// signatures). `false` for anything it might read otherwise: a packet
    /// it cannot decode, one it does not expect, a user id after a subkey,
    /// a key that is not v4.
    pub(crate) fn as_composed(&self) -> bool {
        self.composed
    }

    /// Add one packet the crate parsed (or failed to); `tag` is its tag
    /// when the framing is known, which says what a packet the crate could
    /// not decode was, and `body` where its body lies.
    fn add(&mut self, p: pgp::errors::Result<Packet>, tag: Option<u8>, body: Option<Range<usize>>) {
        use crate::kbx::keyblock::tag as t;
        // What the composed-key parser would not read as these groups hold it.
        let before_primary = self.primary.is_none();
        let after_subkey = self.after_subkey();
        match &p {
            Ok(Packet::PublicKey(_)) if before_primary => {}
            Ok(Packet::Signature(s)) if !before_primary && s.config().is_some() => {}
            Ok(Packet::UserId(_) | Packet::UserAttribute(_)) if !before_primary && !after_subkey => {}
            Ok(Packet::PublicSubkey(_)) if !before_primary => {}
            _ => self.composed = false,
        }
        let component = match p {
            Ok(Packet::PublicKey(k)) if self.primary.is_none() && self.primary_body.is_none() => {
                self.primary = Some(Box::new(k));
                self.primary_body = body;
                return;
            }
            Ok(Packet::Signature(s)) => {
                // The crate keeps a version it does not read (v5) as bytes only.
                let decoded = match s.config() {
                    // The crate's parser reserves room for 32 subpackets in
                    // each area of every signature; its clone holds just the
                    // ones there (on a 42 MiB keybox the room was 80 of the
                    // 216 MB an index held).
                    Some(_) => Ok(Box::new(s.clone())),
                    None => Err(Undecoded::Version(u8::from(s.version()))),
                };
                self.push_sig(Part { decoded, cached: None, body });
                return;
            }
            Ok(Packet::UserId(u)) => Component::Uid(u),
            Ok(Packet::UserAttribute(u)) => Component::Uat(Some(u)),
            Ok(Packet::PublicSubkey(k)) => Component::Subkey(Some(Box::new(k))),
            Ok(_) => return,
            Err(e) => {
                let text = e.to_string();
                let is = |want: u8, words: &[&str]| {
                    tag.map_or_else(|| words.iter().any(|w| text.contains(w)), |t| t == want)
                };
                if is(t::SIGNATURE, &["Signature", "signature"]) {
                    self.push_sig(Part { decoded: Err(Undecoded::Crate(std::sync::Arc::new(e))), cached: None, body });
                } else if is(t::PUBLIC_SUBKEY, &["ubkey"]) {
                    self.groups.push(Group { component: Component::Subkey(None), sigs: Vec::new(), body, photo: None });
                } else if tag == Some(t::PUBLIC_KEY) && self.primary.is_none() && self.primary_body.is_none() {
                    self.primary_body = body;
                }
                return;
            }
        };
        self.groups.push(Group { component, sigs: Vec::new(), body, photo: None });
    }

    /// Whether a subkey came before.
    fn after_subkey(&self) -> bool {
        self.groups.iter().any(|g| matches!(g.component, Component::Subkey(_)))
    }

    /// Add a user attribute packet whose body lies at `body`, as [`Self::add`]
    /// adds one the crate decoded (`decodes`) or failed to.
    fn add_user_attribute(&mut self, decodes: bool, body: Range<usize>) {
        if !decodes || self.primary.is_none() || self.after_subkey() {
            self.composed = false;
        }
        if decodes {
            self.groups.push(Group {
                component: Component::Uat(None),
                sigs: Vec::new(),
                body: Some(body),
                photo: None,
            });
        }
    }

    fn push_sig(&mut self, part: Part) {
        if let Some(g) = self.groups.last_mut() {
            g.sigs.push(part);
        }
    }

    /// The bytes the keyblock was decoded in: its own, or the blob image
    /// handed to [`Self::parse_in`] (until [`Self::let_go_of_photos`]).
    pub(crate) fn held_bytes(&self) -> &[u8] {
        &self.image
    }

    /// Keep a copy of just the bytes later checks may read: without the
    /// photo ids whose every signature comes with gpg's cached verdict
    /// (their bytes are never read again; on a keybox with photos they are
    /// most of it). The bytes held before are freed, to be used again.
    pub(crate) fn let_go_of_photos(&mut self) {
        let unread =
            |g: &Group| matches!(g.component, Component::Uat(None)) && g.sigs.iter().all(|p| p.cached.is_some());
        let mut gone: Vec<Range<usize>> =
            self.groups.iter().filter(|g| unread(g)).filter_map(|g| g.body.clone()).collect();
        if gone.is_empty() {
            return;
        }
        gone.sort_by_key(|r| r.start);
        let mut kept = Vec::with_capacity(self.image.len() - gone.iter().map(ExactSizeIterator::len).sum::<usize>());
        let mut at = 0;
        for r in &gone {
            kept.extend_from_slice(&self.image[at..r.start]);
            at = r.end;
        }
        kept.extend_from_slice(&self.image[at..]);
        // Where a kept range lies now: before it, the bytes let go of.
        let moved = |r: &mut Range<usize>| {
            let before: usize = gone.iter().filter(|g| g.end <= r.start).map(ExactSizeIterator::len).sum();
            *r = r.start - before..r.end - before;
        };
        for g in &mut self.groups {
            if unread(g) {
                if let Some(b) = g.body.take() {
                    let bytes = &self.image[b];
                    g.photo = Some((super::attribute_name(bytes), super::name_hash(bytes)));
                }
            }
            g.body.iter_mut().chain(g.sigs.iter_mut().filter_map(|p| p.body.as_mut())).for_each(moved);
        }
        self.primary_body.iter_mut().for_each(moved);
        self.image = kept;
    }

    /// The bytes of a packet body recorded at parse time.
    pub fn bytes(&self, body: &Range<usize>) -> &[u8] {
        &self.image[body.clone()]
    }

    /// The primary key read from its packet, decoded by the crate or not.
    pub(crate) fn raw_primary(&self) -> Option<KeyPacket> {
        KeyPacket::parse(self.bytes(self.primary_body.as_ref()?)).ok()
    }

    /// Every key packet (primary first, then subkeys) read from its bytes.
    pub(crate) fn raw_keys(&self) -> impl Iterator<Item = KeyPacket> + '_ {
        let subkeys = self.groups.iter().filter(|g| matches!(g.component, Component::Subkey(_)));
        self.primary_body
            .iter()
            .chain(subkeys.filter_map(|g| g.body.as_ref()))
            .filter_map(|b| KeyPacket::parse(self.bytes(b)).ok())
    }

    /// The key (primary or subkey) with key id `kid`, read from its bytes.
    pub(crate) fn raw_key(&self, kid: &[u8; 8]) -> Option<KeyPacket> {
        self.raw_keys().find(|k| k.key_id == *kid)
    }

    /// Whether the crate decoded every key of the keyblock.
    fn all_keys_decoded(&self) -> bool {
        self.primary.is_some() && !self.groups.iter().any(|g| matches!(g.component, Component::Subkey(None)))
    }

    /// The key ids of all its keys: the crate's, or read from the bytes
    /// when it could not decode a key.
    pub(crate) fn key_ids(&self) -> Vec<[u8; 8]> {
        if !self.all_keys_decoded() {
            return self.raw_keys().map(|k| k.key_id).collect();
        }
        self.decoded.iter().map(|k| k.id).collect()
    }

    /// The primary key's creation time, Unix seconds (read from its bytes
    /// when the crate could not decode it).
    pub fn created(&self) -> Option<i64> {
        match &self.primary {
            Some(p) => Some(i64::from(p.created_at().as_secs())),
            None => self.raw_primary().map(|k| i64::from(k.created)),
        }
    }

    /// The primary key's 64-bit key id (read from its bytes when the crate
    /// could not decode it).
    pub fn key_id(&self) -> Option<[u8; 8]> {
        match self.decoded.first() {
            Some(DecodedKey { id, group: None, .. }) => Some(*id),
            _ => self.raw_primary().map(|k| k.key_id),
        }
    }

    /// The user id gpg shows for this key (`get_primary_uid`): the one of
    /// [`Self::primary_uid_group`], else the one that sorts last (length,
    /// then bytes); `[User ID not found]` when the key has no user id.
    pub(crate) fn primary_uid(&self) -> Vec<u8> {
        if let Some(i) = self.primary_uid_group() {
            if let Component::Uid(u) = &self.groups[i].component {
                return u.id().to_vec();
            }
        }
        let sorts_after = |a: &[u8], b: &[u8]| (a.len(), a) > (b.len(), b);
        let mut best: Option<&[u8]> = None;
        for g in self.groups.iter().take_while(|g| !matches!(g.component, Component::Subkey(_))) {
            if let Component::Uid(u) = &g.component {
                if best.is_none_or(|b| sorts_after(u.id(), b)) {
                    best = Some(u.id());
                }
            }
        }
        best.map_or_else(|| b"[User ID not found]".to_vec(), <[u8]>::to_vec)
    }

    /// The group of the user id gpg takes as primary, which its listings
    /// move to the front (see [`primary_user`]). `None` when no user id
    /// qualifies.
    pub(crate) fn primary_uid_group(&self) -> Option<usize> {
        self.primary_uid
    }

    /// [`Self::primary_uid_group`], from the user ids and their signatures.
    fn find_primary_uid(&self) -> Option<usize> {
        let own = self.key_id()?;
        // The user ids before the first subkey, with their groups' indexes.
        let uids: Vec<(usize, &[u8])> = self
            .groups
            .iter()
            .enumerate()
            .take_while(|(_, g)| !matches!(g.component, Component::Subkey(_)))
            .filter_map(|(i, g)| match &g.component {
                Component::Uid(u) => Some((i, u.id())),
                _ => None,
            })
            .collect();
        let sigs = |i: usize| self.groups[i].sigs.iter().filter_map(|p| p.decoded.as_deref().ok());
        let chosen = primary_user(own, uids.iter().map(|&(i, id)| (id, sigs(i))))?;
        Some(uids[chosen].0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every range a keyblock records, with its bytes (`None`: let go of).
    fn recorded(kb: &Keyblock) -> Vec<Option<Vec<u8>>> {
        let bytes = |r: &Option<Range<usize>>| r.as_ref().map(|r| kb.bytes(r).to_vec());
        let groups = kb.groups.iter().flat_map(|g| std::iter::once(&g.body).chain(g.sigs.iter().map(|p| &p.body)));
        std::iter::once(&kb.primary_body).chain(groups).map(bytes).collect()
    }

    #[test]
    fn photos_are_let_go_of_only_when_no_check_reads_them() {
        let mut photos = 0;
        for data in [
            &include_bytes!("../../tests/fixtures/gnupg-mixed.kbx")[..],
            &include_bytes!("../../tests/fixtures/gnupg-deleted.kbx")[..],
        ] {
            let mut at = 0;
            while at + 5 <= data.len() {
                let len = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
                let image = &data[at..at + len];
                at += len.max(5);
                let Ok(crate::kbx::Blob::Key(b)) = crate::kbx::parse_blob(image) else { continue };
                if b.blob_type != crate::kbx::BlobType::OpenPgp {
                    continue;
                }
                let start = b.data().as_ptr() as usize - image.as_ptr() as usize;
                let kb = Keyblock::parse_in(image.to_vec(), start..start + b.data().len());
                let is_photo: Vec<bool> = std::iter::once(false)
                    .chain(kb.groups.iter().flat_map(|g| {
                        let photo = matches!(g.component, Component::Uat(None));
                        std::iter::once(photo).chain(g.sigs.iter().map(|_| false))
                    }))
                    .collect();
                // As GnuPG left it: every photo's signatures cached.
                let mut all_cached = kb.clone();
                all_cached.let_go_of_photos();
                let mut gone = 0;
                for ((before, after), photo) in recorded(&kb).into_iter().zip(recorded(&all_cached)).zip(&is_photo) {
                    match (&before, after) {
                        (Some(_), None) => {
                            assert!(*photo, "only a photo's bytes are let go of");
                            gone += 1;
                        }
                        (_, after) => assert_eq!(after, before, "every other range reads the same bytes"),
                    }
                }
                assert!(gone == 0 || all_cached.held_bytes().len() < kb.held_bytes().len());
                photos += gone;
                // A photo signature without a cached verdict is verified from
                // the photo's bytes: they are kept.
                let mut uncached = kb.clone();
                for g in uncached.groups.iter_mut().filter(|g| matches!(g.component, Component::Uat(None))) {
                    g.sigs.iter_mut().for_each(|p| p.cached = None);
                }
                uncached.let_go_of_photos();
                assert_eq!(recorded(&uncached), recorded(&kb));
            }
        }
        assert!(photos >= 5, "the fixtures hold photo ids let go of ({photos})");
    }
}
