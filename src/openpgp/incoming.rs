//! Keys to import: the transferable public keys of a file's bytes (binary
//! or ASCII-armored OpenPGP, as `gpg --import` reads them), split into
//! keyblocks, and how gpg merges one into the keyblock it already holds
//! (GnuPG 2.2's `g10/import.c` `merge_blocks`; facts only). No I/O.

use crate::kbx::keyblock::{split_packets, tag, Packet};
use crate::kbx::keypacket::key_packet;

/// The largest keyblock GnuPG's keybox takes (`IMAGELEN_LIMIT`, 5 MiB).
pub const KEYBLOCK_LIMIT: usize = 5 * 1024 * 1024;

/// Why a file's keys cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum IncomingError {
    /// The armor does not decode.
    #[error("the ASCII armor does not decode: {0}")]
    Armor(String),
    /// The packets do not frame.
    #[error("byte offset {offset}: {reason}")]
    Framing {
        /// Where.
        offset: usize,
        /// Why.
        reason: &'static str,
    },
    /// A packet that is not part of a public key.
    #[error("byte offset {offset}: packet type {tag} is not part of a public key (only public keys can be imported)")]
    NotAKey {
        /// Where.
        offset: usize,
        /// The packet's tag.
        tag: u8,
    },
    /// A key packet does not decode.
    #[error("byte offset {offset}: the key packet does not decode: {why}")]
    KeyPacket {
        /// Where.
        offset: usize,
        /// Why.
        why: String,
    },
    /// A keyblock larger than GnuPG takes.
    #[error("byte offset {offset}: a keyblock of {len} bytes is larger than GnuPG's limit of {KEYBLOCK_LIMIT}")]
    TooLarge {
        /// Where.
        offset: usize,
        /// Its length.
        len: usize,
    },
    /// Nothing to import.
    #[error("no OpenPGP public key in it")]
    Empty,
}

/// One component of a keyblock: the primary key (first), a user id, a
/// user attribute or a subkey, with the signatures that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// The packet's tag.
    pub tag: u8,
    /// The packet's body.
    pub body: Vec<u8>,
    /// The bodies of its signatures, in order.
    pub sigs: Vec<Vec<u8>>,
}

/// A keyblock to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingKey {
    /// Where it starts in the (dearmored) input.
    pub offset: usize,
    /// Its components: the primary key first.
    pub components: Vec<Component>,
    /// The primary key's fingerprint.
    pub fingerprint: Vec<u8>,
    /// The primary key's key id.
    pub key_id: [u8; 8],
}

impl IncomingKey {
    /// The packets in keyblock order (no trust packets).
    pub fn packets(&self) -> Vec<Packet<'_>> {
        let mut out = Vec::new();
        for c in &self.components {
            out.push(Packet { tag: c.tag, body: &c.body });
            out.extend(c.sigs.iter().map(|s| Packet { tag: tag::SIGNATURE, body: s }));
        }
        out
    }

    /// Its first user id, if any.
    pub fn first_user_id(&self) -> Option<&[u8]> {
        self.components.iter().find(|c| c.tag == tag::USER_ID).map(|c| c.body.as_slice())
    }
}

/// The bytes of an import file with any ASCII armor removed.
///
/// # Errors
/// The armor does not decode.
pub fn dearmor(bytes: &[u8]) -> Result<Vec<u8>, IncomingError> {
    let text_start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(0);
    if !bytes[text_start..].starts_with(b"-----BEGIN PGP") {
        return Ok(bytes.to_vec());
    }
    let mut out = Vec::new();
    // Every armored block in the file, one after another.
    let mut rest = &bytes[text_start..];
    while let Some(at) = find(rest, b"-----BEGIN PGP") {
        rest = &rest[at..];
        let mut d = pgp::armor::Dearmor::new(std::io::BufReader::new(rest));
        std::io::Read::read_to_end(&mut d, &mut out).map_err(|e| IncomingError::Armor(e.to_string()))?;
        let Some(end) = find(rest, b"-----END PGP") else { break };
        rest = &rest[end + 12..];
    }
    Ok(out)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The public keys in `bytes` (dearmored), one per primary-key packet;
/// trust packets are dropped, as gpg does.
///
/// # Errors
/// [`IncomingError`] naming the byte offset of the first problem.
pub fn keyblocks(bytes: &[u8]) -> Result<Vec<IncomingKey>, IncomingError> {
    let packets = split_packets(bytes).map_err(|e| IncomingError::Framing { offset: e.offset, reason: e.reason })?;
    let mut out: Vec<IncomingKey> = Vec::new();
    let mut size = 0usize;
    for p in packets {
        let offset = p.body.as_ptr() as usize - bytes.as_ptr() as usize;
        match p.tag {
            tag::PUBLIC_KEY => {
                let info = key_packet(p.body).map_err(|e| IncomingError::KeyPacket { offset, why: e.to_string() })?;
                let mut key_id = [0u8; 8];
                key_id.copy_from_slice(&info.key_id);
                size = 0;
                out.push(IncomingKey {
                    offset,
                    components: vec![Component { tag: p.tag, body: p.body.to_vec(), sigs: Vec::new() }],
                    fingerprint: info.fingerprint,
                    key_id,
                });
            }
            tag::TRUST => continue,
            tag::USER_ID | tag::USER_ATTRIBUTE | tag::PUBLIC_SUBKEY | tag::SIGNATURE => {
                let Some(key) = out.last_mut() else { return Err(IncomingError::NotAKey { offset, tag: p.tag }) };
                if p.tag == tag::SIGNATURE {
                    if let Some(c) = key.components.last_mut() {
                        c.sigs.push(p.body.to_vec());
                    }
                } else {
                    key.components.push(Component { tag: p.tag, body: p.body.to_vec(), sigs: Vec::new() });
                }
            }
            other => return Err(IncomingError::NotAKey { offset, tag: other }),
        }
        size += p.body.len() + 6;
        if size > KEYBLOCK_LIMIT {
            let key_at = out.last().map_or(0, |k| k.offset);
            return Err(IncomingError::TooLarge { offset: key_at, len: size });
        }
    }
    if out.is_empty() {
        return Err(IncomingError::Empty);
    }
    Ok(out)
}

/// What a merge added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Added {
    /// New user ids (and user attributes).
    pub user_ids: u64,
    /// New subkeys.
    pub subkeys: u64,
    /// New signatures on components already there.
    pub signatures: u64,
}

impl Added {
    /// Whether anything was added.
    pub fn any(&self) -> bool {
        self.user_ids + self.subkeys + self.signatures > 0
    }
}

/// Merge `new` into `old` as gpg does: user ids, user attributes and
/// subkeys not there yet are appended (user ids after the last user id
/// or attribute, subkeys at the end), with their signatures; signatures
/// not there yet are appended to their component's.
pub fn merge(old: &mut IncomingKey, new: &IncomingKey) -> Added {
    let mut added = Added::default();
    for c in &new.components {
        let same = |o: &Component| o.tag == c.tag && o.body == c.body;
        match old.components.iter_mut().find(|o| same(o)) {
            Some(o) => {
                for s in &c.sigs {
                    if !o.sigs.contains(s) {
                        o.sigs.push(s.clone());
                        added.signatures += 1;
                    }
                }
            }
            None if c.tag == tag::PUBLIC_SUBKEY => {
                old.components.push(c.clone());
                added.subkeys += 1;
            }
            None => {
                let after = old
                    .components
                    .iter()
                    .rposition(|o| matches!(o.tag, tag::USER_ID | tag::USER_ATTRIBUTE | tag::PUBLIC_KEY))
                    .unwrap_or(0);
                old.components.insert(after + 1, c.clone());
                added.user_ids += 1;
            }
        }
    }
    added
}
