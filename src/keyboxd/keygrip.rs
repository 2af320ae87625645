//! The `keygrip` keyboxd stores beside each fingerprint: libgcrypt's hash
//! of a public key's parameters (facts from libgcrypt's documentation of
//! `gcry_pk_get_keygrip`; checked against the rows a real keyboxd 2.4.7
//! wrote): for RSA the SHA-1 of the modulus; for DSA and Elgamal the SHA-1
//! of each parameter as `(1:<name><length>:<bytes>)` in libgcrypt's order
//! (DSA `p q g y`, Elgamal `p g y`); a parameter's bytes are its
//! OpenPGP MPI with a zero byte in front when the top bit is set.
//!
//! Elliptic-curve keys hash their curve's parameters, which kbxscope does
//! not carry: they get a stand-in, the SHA-1 of the key's public material.
//! Only gpg-agent's `KEYGRIP` search reads the column; for what SQLite
//! writes and reads, one 20-byte value spread like a hash is as good as
//! another.

use sha1::{Digest, Sha1};

/// An OpenPGP MPI at the start of `b`: its bytes and the rest.
fn mpi(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let bits = usize::from(u16::from_be_bytes([*b.first()?, *b.get(1)?]));
    let len = bits.div_ceil(8);
    let bytes = b.get(2..2 + len)?;
    Some((bytes, &b[2 + len..]))
}

/// The bytes libgcrypt hashes for a parameter (a sign byte when needed).
fn signed(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 1);
    if bytes.first().is_some_and(|b| b & 0x80 != 0) {
        out.push(0);
    }
    out.extend_from_slice(bytes);
    out
}

/// The keygrip of a key of algorithm `algo` whose public material (the
/// key packet's body after its algorithm id) is `material`.
pub(crate) fn keygrip(algo: u8, material: &[u8]) -> [u8; 20] {
    let named = |names: &[u8]| -> Option<[u8; 20]> {
        let mut h = Sha1::new();
        let mut rest = material;
        for name in names {
            let (bytes, more) = mpi(rest)?;
            rest = more;
            let v = signed(bytes);
            h.update(format!("(1:{}{}:", *name as char, v.len()).as_bytes());
            h.update(&v);
            h.update(b")");
        }
        Some(h.finalize().into())
    };
    let grip = match algo {
        1..=3 => mpi(material).map(|(n, _)| Sha1::digest(signed(n)).into()),
        17 => named(b"pqgy"),
        16 | 20 => named(b"pgy"),
        _ => None,
    };
    grip.unwrap_or_else(|| Sha1::digest(material).into())
}
