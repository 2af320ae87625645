//! What gpg prints in a user attribute's place (a photo id): the name its
//! packet parser gives the attribute (facts from GnuPG's
//! `g10/parse-packet.c`, `g10/photoid.c`). The packet body is a list of
//! subpackets framed as a signature's (a length of 1, 2 or 5 bytes, then
//! the type); an image subpacket (type 1) starts with a header whose
//! length is little-endian, then its version (1) and the image type (1:
//! JPEG).

/// gpg's name for the attribute packet `body`: `[jpeg image of size N]`,
/// `[unknown image of size N]`, `[invalid image]`, `[unknown attribute of
/// size N]`, `[K attributes of size N]` or `[bad attribute packet of size
/// N]`.
pub fn attribute_name(body: &[u8]) -> String {
    let subpackets = subpackets(body);
    match subpackets.as_slice() {
        [] => format!("[bad attribute packet of size {}]", body.len()),
        [(1, data)] => match image(data) {
            Some((kind, len)) => format!("[{kind} image of size {len}]"),
            None => "[invalid image]".into(),
        },
        [(_, data)] => format!("[unknown attribute of size {}]", data.len()),
        more => format!("[{} attributes of size {}]", more.len(), body.len()),
    }
}

/// The RIPEMD-160 of a user id's or attribute's bytes: gpg's name hash,
/// which its trust database files their validity under.
pub fn name_hash(bytes: &[u8]) -> [u8; 20] {
    use ripemd::{Digest, Ripemd160};
    Ripemd160::digest(bytes).into()
}

/// The subpackets gpg reads: (type, data), up to the first that does not
/// fit.
fn subpackets(mut b: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    while let Some((&first, rest)) = b.split_first() {
        let (n, rest) = match first {
            255 => match rest.get(..4) {
                Some(l) => (u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize, &rest[4..]),
                None => break,
            },
            192.. => match rest.split_first() {
                Some((&second, rest)) => ((usize::from(first - 192) << 8) + usize::from(second) + 192, rest),
                None => break,
            },
            _ => (usize::from(first), rest),
        };
        if rest.len() < n || n == 0 {
            break;
        }
        out.push((rest[0], &rest[1..n]));
        b = &rest[n..];
    }
    out
}

/// An image subpacket's type name and the image's length (after its
/// header); `None` where gpg calls the image invalid.
fn image(data: &[u8]) -> Option<(&'static str, usize)> {
    if data.len() < 3 {
        return None;
    }
    let header = usize::from(u16::from_le_bytes([data[0], data[1]]));
    let len = data.len().checked_sub(header).filter(|l| *l > 0)?;
    let kind = match (data.get(2), data.get(3)) {
        (Some(1), Some(1)) => "jpeg",
        _ => "unknown",
    };
    Some((kind, len))
}

#[cfg(test)]
mod tests {
    use super::attribute_name;

    /// A JPEG subpacket of `len` image bytes, as gpg makes photo ids.
    fn jpeg(len: usize) -> Vec<u8> {
        let mut data = vec![1u8, 0x10, 0x00, 0x01, 0x01];
        data.extend([0u8; 12]);
        data.extend(std::iter::repeat_n(0xff, len));
        let n = data.len();
        let mut body = if n < 192 {
            vec![n as u8]
        } else if n < 8384 {
            vec![(((n - 192) >> 8) + 192) as u8, ((n - 192) & 0xff) as u8]
        } else {
            let mut v = vec![255];
            v.extend((n as u32).to_be_bytes());
            v
        };
        body.extend(data);
        body
    }

    #[test]
    fn name_hash_is_ripemd160() {
        // RIPEMD-160's own test vector.
        assert_eq!(kbx_format::dump::hex_lower(&super::name_hash(b"abc")), "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc");
    }

    #[test]
    fn names_as_gpg_gives_them() {
        assert_eq!(attribute_name(&jpeg(100)), "[jpeg image of size 100]");
        assert_eq!(attribute_name(&jpeg(6588)), "[jpeg image of size 6588]");
        assert_eq!(attribute_name(&jpeg(276_307)), "[jpeg image of size 276307]");
        let two = [jpeg(10), jpeg(20)].concat();
        assert_eq!(attribute_name(&two), format!("[2 attributes of size {}]", two.len()));
        assert_eq!(attribute_name(&[3, 7, 1, 2]), "[unknown attribute of size 2]");
        assert_eq!(attribute_name(&[]), "[bad attribute packet of size 0]");
        assert_eq!(attribute_name(&[2, 1, 0]), "[invalid image]");
        // A header that claims more than the subpacket holds.
        assert_eq!(attribute_name(&[5, 1, 0x20, 0, 1, 1]), "[invalid image]");
    }
}
