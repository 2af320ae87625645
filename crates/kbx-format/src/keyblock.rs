//! OpenPGP packet framing as GnuPG stores keyblocks in a keybox (no I/O).
//!
//! A keybox keeps the keyblock as gpg wrote it: old-format packet headers
//! (CTB `0x80 | tag << 2 | length type`, shortest length form) for tags
//! below 16, new-format headers for the others (e.g. 0xD1 for a user
//! attribute), and a ring-trust packet (tag 12) after the primary key,
//! after every user id and user attribute, and after every signature. The
//! uid table of the blob points at the user-id packet *bodies* inside that
//! image. [`split_packets`] reads any framing; [`gnupg_keyblock`] writes
//! GnuPG's.

/// OpenPGP packet tags used here.
pub mod tag {
    /// Signature packet.
    pub const SIGNATURE: u8 = 2;
    /// Public-key packet.
    pub const PUBLIC_KEY: u8 = 6;
    /// Ring-trust packet (GnuPG's local packet).
    pub const TRUST: u8 = 12;
    /// User id packet.
    pub const USER_ID: u8 = 13;
    /// Public-subkey packet.
    pub const PUBLIC_SUBKEY: u8 = 14;
    /// User attribute packet (photo id).
    pub const USER_ATTRIBUTE: u8 = 17;
}

/// A packet's tag and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The packet tag.
    pub tag: u8,
    /// The body, without header.
    pub body: &'a [u8],
}

/// Why a packet stream cannot be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FramingError {
    /// Offset of the offending header.
    pub offset: usize,
    /// What is wrong.
    pub reason: &'static str,
}

impl std::fmt::Display for FramingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad OpenPGP packet at byte {}: {}", self.offset, self.reason)
    }
}

impl std::error::Error for FramingError {}

/// Split a packet stream (old or new format headers, no partial lengths).
///
/// # Errors
/// A [`FramingError`] for a bad header, a partial length, or a body that
/// runs past the end.
pub fn split_packets(b: &[u8]) -> Result<Vec<Packet<'_>>, FramingError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let err = |reason| FramingError { offset: i, reason };
        let ctb = b[i];
        if ctb & 0x80 == 0 {
            return Err(err("not a packet header (bit 7 clear)"));
        }
        let byte = |k: usize| b.get(i + k).copied().map(usize::from).ok_or_else(|| err("header is truncated"));
        let (tag, header, len) = if ctb & 0x40 != 0 {
            let l1 = byte(1)?;
            match l1 {
                0..=191 => (ctb & 0x3f, 2, l1),
                192..=223 => (ctb & 0x3f, 3, ((l1 - 192) << 8) + byte(2)? + 192),
                255 => (ctb & 0x3f, 6, (byte(2)? << 24) | (byte(3)? << 16) | (byte(4)? << 8) | byte(5)?),
                _ => return Err(err("partial body lengths are not used in keyblocks")),
            }
        } else {
            let tag = (ctb >> 2) & 0x0f;
            match ctb & 3 {
                0 => (tag, 2, byte(1)?),
                1 => (tag, 3, (byte(1)? << 8) | byte(2)?),
                2 => (tag, 5, (byte(1)? << 24) | (byte(2)? << 16) | (byte(3)? << 8) | byte(4)?),
                _ => return Err(err("indeterminate length")),
            }
        };
        let start = i + header;
        let end = start.checked_add(len).filter(|&e| e <= b.len()).ok_or_else(|| err("body runs past the end"))?;
        out.push(Packet { tag, body: &b[start..end] });
        i = end;
    }
    Ok(out)
}

/// Append a packet with GnuPG's header form.
fn push_packet(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    let len = body.len();
    if tag < 16 {
        let base = 0x80 | (tag << 2);
        if len < 0x100 {
            out.extend_from_slice(&[base, len as u8]);
        } else if len < 0x1_0000 {
            out.push(base | 1);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            out.push(base | 2);
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    } else {
        out.push(0xC0 | tag);
        if len < 192 {
            out.push(len as u8);
        } else if len < 8384 {
            let l = len - 192;
            out.extend_from_slice(&[(l >> 8) as u8 + 192, l as u8]);
        } else {
            out.push(255);
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }
    out.extend_from_slice(body);
}

/// The body of a ring-trust packet as gpg writes it.
///
/// Keys and user ids get the 12-byte form (subtype 1 or 2, key origin 0,
/// update time 0, no URL); signatures the 6-byte form with the
/// signature-cache byte (3 = checked and valid, 0 = not checked).
fn trust_body(after_tag: u8, sigcache: u8) -> Vec<u8> {
    match after_tag {
        tag::SIGNATURE => vec![0, sigcache, b'g', b'p', b'g', 0],
        tag::PUBLIC_KEY | tag::PUBLIC_SUBKEY => vec![0, 0, b'g', b'p', b'g', 1, 0, 0, 0, 0, 0, 0],
        _ => vec![0, 0, b'g', b'p', b'g', 2, 0, 0, 0, 0, 0, 0],
    }
}

/// A keyblock image in GnuPG's form, with where its user ids are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GnupgKeyblock {
    /// The image.
    pub bytes: Vec<u8>,
    /// (offset, length) of each user-id packet body, in order.
    pub user_ids: Vec<(u32, u32)>,
    /// Number of signature packets.
    pub signatures: u16,
}

/// Re-frame a transferable public key the way gpg stores it in a keybox.
///
/// `packets` is the key as any OpenPGP implementation serialized it
/// (existing trust packets are dropped); `self_sig` says which signatures
/// are self-signatures, which gpg marks as checked and valid in their
/// trust packet. As in keyboxes gpg writes, the primary key, user ids,
/// user attributes and signatures are followed by a trust packet; subkeys
/// are not.
pub fn gnupg_keyblock(packets: &[Packet<'_>], self_sig: impl Fn(usize) -> bool) -> GnupgKeyblock {
    let mut bytes = Vec::new();
    let mut user_ids = Vec::new();
    let mut signatures = 0u16;
    for (i, p) in packets.iter().enumerate() {
        if p.tag == tag::TRUST {
            continue;
        }
        let header_start = bytes.len();
        push_packet(&mut bytes, p.tag, p.body);
        if p.tag == tag::USER_ID {
            let body_at = bytes.len() - p.body.len();
            debug_assert!(body_at > header_start);
            user_ids.push((body_at as u32, p.body.len() as u32));
        }
        let trust = match p.tag {
            tag::SIGNATURE => {
                signatures += 1;
                Some(trust_body(tag::SIGNATURE, if self_sig(i) { 3 } else { 0 }))
            }
            tag::PUBLIC_KEY | tag::USER_ID | tag::USER_ATTRIBUTE => Some(trust_body(p.tag, 0)),
            _ => None,
        };
        if let Some(t) = trust {
            push_packet(&mut bytes, tag::TRUST, &t);
        }
    }
    GnupgKeyblock { bytes, user_ids, signatures }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_blob, Blob};

    const MIXED: &[u8] = include_bytes!("../../../tests/fixtures/gnupg-mixed.kbx");

    /// An OpenPGP blob's image, uid ranges (relative to the image) and signature count.
    type Image = (Vec<u8>, Vec<(u32, u32)>, u16);

    /// The OpenPGP blobs' images in the fixture.
    fn gnupg_images() -> Vec<Image> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < MIXED.len() {
            let len = u32::from_be_bytes(MIXED[at..at + 4].try_into().unwrap()) as usize;
            if let Ok(Blob::Key(k)) = parse_blob(&MIXED[at..at + len]) {
                if k.blob_type == crate::BlobType::OpenPgp {
                    let uids = k.uids().map(|u| (u.offset - k.data_offset, u.length)).collect();
                    out.push((k.data().to_vec(), uids, k.sig_count() as u16));
                }
            }
            at += len;
        }
        out
    }

    /// Splitting a gpg-written keyblock and framing it again gives the
    /// same bytes, uid offsets and signature count.
    #[test]
    fn reframes_gnupg_keyblocks_byte_for_byte() {
        let images = gnupg_images();
        assert_eq!(images.len(), 20);
        for (image, uids, sigs) in images {
            let packets = split_packets(&image).unwrap();
            // which signatures gpg marked "checked and valid" (sigcache 3)
            let valid: Vec<bool> = packets
                .iter()
                .enumerate()
                .map(|(i, p)| p.tag == tag::SIGNATURE && packets.get(i + 1).is_some_and(|t| t.body.get(1) == Some(&3)))
                .collect();
            let framed = gnupg_keyblock(&packets, |i| valid[i]);
            assert_eq!(framed.bytes, image);
            assert_eq!(framed.user_ids, uids);
            assert_eq!(framed.signatures, sigs);
        }
    }

    #[test]
    fn framing_errors() {
        assert!(split_packets(&[0x00]).is_err());
        assert!(split_packets(&[0x98]).is_err());
        assert!(split_packets(&[0x98, 5, 1]).is_err());
        assert!(split_packets(&[0xC2, 0xE0]).is_err());
        assert_eq!(split_packets(&[0xC2, 1, 7]).unwrap(), [Packet { tag: 2, body: &[7] }]);
    }
}
