//! The `keygrip` keyboxd stores beside each fingerprint: libgcrypt's hash
//! of a public key's parameters (facts from libgcrypt's documentation of
//! `gcry_pk_get_keygrip`; checked against the rows a real keyboxd 2.4.7
//! wrote): for RSA the SHA-1 of the modulus; for DSA and Elgamal the SHA-1
//! of each parameter as `(1:<name><length>:<bytes>)` in libgcrypt's order
//! (DSA `p q g y`, Elgamal `p g y`); a parameter's bytes are its
//! OpenPGP MPI with a zero byte in front when the top bit is set.
//!
//! An elliptic-curve key hashes its curve's domain parameters and its
//! point the same way, `p a b g n q` ([`super::curves`]; a parameter's
//! bytes without a sign byte, the point as the key holds it, but an
//! Ed25519 EdDSA key's and a Curve25519 ECDH key's without their `0x40`
//! prefix). A certificate's key is the same key as the certificate holds
//! it ([`of_certificate`]). A key on a curve kbxscope does not know gets a
//! stand-in, the SHA-1 of its public material: only gpg-agent's
//! `KEYGRIP` search reads the column, and for what SQLite writes and
//! reads one 20-byte value spread like a hash is as good as another.

use sha1::{Digest, Sha1};

use super::curves;
use crate::kbx::keypacket::mpi;

/// The bytes libgcrypt hashes for a parameter (a sign byte when needed).
fn signed(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 1);
    if bytes.first().is_some_and(|b| b & 0x80 != 0) {
        out.push(0);
    }
    out.extend_from_slice(bytes);
    out
}

/// Hash `(1:<name><length>:<bytes>)` for each named parameter.
fn hash_named<'a>(params: impl IntoIterator<Item = (char, &'a [u8])>) -> [u8; 20] {
    let mut h = Sha1::new();
    for (name, bytes) in params {
        h.update(format!("(1:{name}{}:", bytes.len()).as_bytes());
        h.update(bytes);
        h.update(b")");
    }
    h.finalize().into()
}

/// A hex string's bytes (the curve table's: whole bytes, well-formed by
/// construction).
fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).filter_map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

/// A number's bytes as libgcrypt gives them: big-endian, no leading zeros.
fn magnitude(hex: &str) -> Vec<u8> {
    let mut b = unhex(hex);
    let zeros = b.iter().take_while(|&&x| x == 0).count();
    b.drain(..zeros);
    b
}

/// An elliptic-curve key's keygrip: its material is the curve's OID
/// (length, then body) and the point `q` as an MPI.
fn ecc(algo: u8, material: &[u8]) -> Option<[u8; 20]> {
    let (&len, rest) = material.split_first()?;
    let oid = rest.get(..usize::from(len))?;
    let curve = curves::by_oid(oid)?;
    let (q, _) = mpi(&rest[usize::from(len)..])?;
    // gpg gives libgcrypt an EdDSA Ed25519 key with its `eddsa` flag and a
    // Curve25519 ECDH key with `djb-tweak`: both points hashed without the
    // 0x40 prefix that marks them.
    let prefixed = q.len() > 1 && q.len() % 2 == 1 && q[0] == 0x40;
    let q = match (algo, curve.name) {
        (22, "Ed25519") | (18, "Curve25519") if prefixed => &q[1..],
        _ => q,
    };
    Some(ecc_grip(curve, q))
}

/// The keygrip of the point `q` on `curve`: its domain parameters and `q`.
fn ecc_grip(curve: &curves::Curve, q: &[u8]) -> [u8; 20] {
    let (p, a, b, g, n) =
        (magnitude(curve.p), magnitude(curve.a), magnitude(curve.b), unhex(curve.g), magnitude(curve.n));
    hash_named([('p', &p[..]), ('a', &a[..]), ('b', &b[..]), ('g', &g[..]), ('n', &n[..]), ('q', q)])
}

/// The keygrip of a certificate's key, as keyboxd stores it (ksba hands
/// libgcrypt the key as the certificate holds it): an RSA modulus as its
/// DER integer, an EC point with its named curve; for other keys and
/// curves kbxscope does not know, a stand-in (the certificate's SHA-1).
pub(crate) fn of_certificate(der: &[u8]) -> [u8; 20] {
    use x509_parser::prelude::{FromDer, X509Certificate};
    use x509_parser::public_key::PublicKey;
    let grip = || -> Option<[u8; 20]> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let spki = cert.public_key();
        match spki.parsed().ok()? {
            PublicKey::RSA(rsa) => {
                let zeros = rsa.modulus.iter().take_while(|&&b| b == 0).count();
                Some(Sha1::digest(signed(&rsa.modulus[zeros..])).into())
            }
            PublicKey::EC(point) => {
                let oid = spki.algorithm.parameters.as_ref()?.as_oid().ok()?;
                Some(ecc_grip(curves::by_oid(oid.as_bytes())?, point.data()))
            }
            _ => None,
        }
    };
    grip().unwrap_or_else(|| Sha1::digest(der).into())
}

/// The keygrip of a key of algorithm `algo` whose public material (the
/// key packet's body after its algorithm id) is `material`.
pub(crate) fn keygrip(algo: u8, material: &[u8]) -> [u8; 20] {
    let named = |names: &[u8]| -> Option<[u8; 20]> {
        let mut params = Vec::with_capacity(names.len());
        let mut rest = material;
        for name in names {
            let (bytes, more) = mpi(rest)?;
            rest = more;
            params.push((char::from(*name), signed(bytes)));
        }
        Some(hash_named(params.iter().map(|(n, v)| (*n, &v[..]))))
    };
    let grip = match algo {
        1..=3 => mpi(material).map(|(n, _)| Sha1::digest(signed(n)).into()),
        17 => named(b"pqgy"),
        16 | 20 => named(b"pgy"),
        18 | 19 | 22 => ecc(algo, material),
        _ => None,
    };
    grip.unwrap_or_else(|| Sha1::digest(material).into())
}
