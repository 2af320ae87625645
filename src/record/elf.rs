//! Static or dynamic: a program without a `PT_INTERP` program header is not
//! started by the dynamic linker, so `LD_PRELOAD` never loads into it.

/// `Some(true)` if `head` (the start of an executable, at least up to its
/// program headers) is an ELF file without `PT_INTERP`; `Some(false)` for
/// a dynamic ELF; `None` if it is not a 64-bit little-endian ELF we can
/// read (a script, another format: run it and see).
pub fn is_static(head: &[u8]) -> Option<bool> {
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| head.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| head.get(o..o + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let u64_at = |o: usize| head.get(o..o + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    if phentsize < 4 {
        return None;
    }
    let mut interp = false;
    for i in 0..phnum {
        // PT_INTERP = 3
        interp |= u32_at(phoff.checked_add(i.checked_mul(phentsize)?)?)? == 3;
    }
    Some(!interp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(types: &[u32]) -> Vec<u8> {
        let mut b = vec![0u8; 64 + 56 * types.len()];
        b[..6].copy_from_slice(b"\x7fELF\x02\x01");
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&(types.len() as u16).to_le_bytes());
        for (i, t) in types.iter().enumerate() {
            b[64 + 56 * i..68 + 56 * i].copy_from_slice(&t.to_le_bytes());
        }
        b
    }

    #[test]
    fn tells_static_from_dynamic() {
        assert_eq!(is_static(&elf(&[6, 3, 1, 2])), Some(false));
        assert_eq!(is_static(&elf(&[1, 1, 4])), Some(true));
        assert_eq!(is_static(b"#!/bin/sh\necho hi\n"), None);
        let mut cut = elf(&[1, 3]);
        cut.truncate(100);
        assert_eq!(is_static(&cut), None, "headers beyond what was read");
    }
}
