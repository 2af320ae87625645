//! What the `pgp` crate makes of one packet of a keyblock, from the
//! packet's bytes: the crate's own parse without the reader its packet
//! parser puts around each packet, and, for a photo id, whether the crate
//! would decode it at all, answered without the crate copying the photo.
//! No I/O.

use pgp::packet::{Packet, PacketHeader, PacketParser};
use pgp::types::PacketLength;

/// One packet (header and body) decoded by the crate: what its packet
/// parser makes of it, without the reader the parser puts around each
/// packet (which copies the body) when its length is fixed.
pub(super) fn decode_packet(whole: &[u8]) -> Option<pgp::errors::Result<Packet>> {
    let mut body = whole;
    match PacketHeader::try_from_reader(&mut body) {
        Ok(header) if matches!(header.packet_length(), PacketLength::Fixed(_)) => {
            Some(Packet::from_reader(header, body))
        }
        _ => PacketParser::new(whole).next(),
    }
}

/// Whether the crate decodes a user attribute packet with this body
/// (`UserAttribute::try_from_reader`, then nothing may be left of the
/// body): one subpacket, with a type byte, running to the body's end (it
/// may claim more); for an image, a header of at least 4 bytes, there up
/// to what the crate reads of it (a JPEG header's 12 bytes after the
/// first 4; another header version's whole length).
pub(super) fn crate_decodes_uat(body: &[u8]) -> bool {
    let (len, at): (usize, usize) = match body {
        [l @ 0..=191, ..] => (usize::from(*l), 1),
        [l @ 192..=254, b, ..] => (((usize::from(*l) - 192) << 8) + 192 + usize::from(*b), 2),
        [255, a, b, c, d, ..] => (u32::from_be_bytes([*a, *b, *c, *d]) as usize, 5),
        _ => return false,
    };
    let sub = &body[at..body.len().min(at.saturating_add(len))];
    if at + sub.len() < body.len() {
        return false;
    }
    match sub {
        [1, rest @ ..] => {
            let [l0, l1, version, ..] = *rest else { return false };
            let header_len = usize::from(u16::from_le_bytes([l0, l1]));
            match (version, rest.get(3)) {
                _ if header_len < 4 => false,
                (1, Some(1)) => header_len - 4 >= 12 && rest.len() >= 4 + 12,
                (1, format) => format.is_some(),
                _ => rest.len() >= header_len,
            }
        }
        [_, ..] => true,
        [] => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A user attribute packet (new-format header, five-octet length) around `body`.
    fn packet(body: &[u8]) -> Vec<u8> {
        let mut p = vec![0xC0 | crate::kbx::keyblock::tag::USER_ATTRIBUTE, 255];
        p.extend((body.len() as u32).to_be_bytes());
        p.extend_from_slice(body);
        p
    }

    /// The crate's own answer.
    fn crate_decodes(body: &[u8]) -> bool {
        matches!(decode_packet(&packet(body)), Some(Ok(Packet::UserAttribute(_))))
    }

    /// Bodies around a photo id's: a subpacket length in each encoding,
    /// claiming a little more or less than there is, a type, an image
    /// header of any length, version and format, some image bytes, and the
    /// body cut anywhere.
    fn bodies() -> impl Strategy<Value = Vec<u8>> {
        let image_header = (0u16..24, prop_oneof![Just(1u8), any::<u8>()], prop_oneof![Just(1u8), any::<u8>()]);
        let subpacket = (prop_oneof![Just(1u8), any::<u8>()], image_header, 0usize..40);
        (0u8..3, -2i64..3, subpacket, any::<prop::sample::Index>()).prop_map(
            |(encoding, delta, (typ, (header_len, version, format), data), cut)| {
                let mut content = vec![typ];
                content.extend(header_len.to_le_bytes());
                content.extend([version, format]);
                content.extend(std::iter::repeat_n(0xAB, data));
                let claimed = u32::try_from((content.len() as i64 + delta).max(0)).unwrap_or(0);
                let mut body = match encoding {
                    0 => vec![claimed.min(191) as u8],
                    1 => {
                        let v = claimed.clamp(192, 16319) - 192;
                        vec![(v >> 8) as u8 + 192, (v & 0xFF) as u8]
                    }
                    _ => [vec![255], claimed.to_be_bytes().to_vec()].concat(),
                };
                body.extend(content);
                body.truncate(cut.index(body.len() + 1));
                body
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        /// Whether a photo id decodes is the crate's answer, without the
        /// crate copying the photo.
        #[test]
        fn user_attributes_decode_as_the_crate_says(body in prop_oneof![bodies(), prop::collection::vec(any::<u8>(), 0..24)]) {
            prop_assert_eq!(crate_decodes_uat(&body), crate_decodes(&body), "body {:02x?}", body);
        }
    }

    #[test]
    fn a_gnupg_photo_id_decodes() {
        // GnuPG's photo id: a two-octet subpacket length, type 1, the
        // 16-byte JPEG header (length 16, version 1, format 1, 12 zeros).
        let mut content = vec![1, 16, 0, 1, 1];
        content.extend([0; 12]);
        content.extend([0xFF, 0xD8, 0xFF, 0xE0].repeat(100));
        let v = content.len() as u32 - 192;
        let mut body = vec![(v >> 8) as u8 + 192, (v & 0xFF) as u8];
        body.extend(&content);
        assert!(crate_decodes(&body));
        assert!(crate_decodes_uat(&body));
    }
}
