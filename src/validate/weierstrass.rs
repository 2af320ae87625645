//! ECDSA on the short Weierstrass curves gpgsm verifies for which no
//! RustCrypto crate of the generation we use has arithmetic: NIST P-192
//! and P-224, secp256k1 and brainpoolP256r1/P384r1/P512r1. (P-256 and
//! P-384 are here too, to check this code against the `p256`/`p384`
//! crates and to sign test certificates; [`super::sigverify`] verifies
//! them with those crates.)
//!
//! Verification only handles public values, so plain big-integer
//! arithmetic (Jacobian coordinates, one inversion at the end) is enough;
//! it is not constant-time and must not be used with secret keys outside
//! tests ([`Curve::sign_prehash`] exists to make test certificates).

use rsa::BigUint;

/// A curve `y² = x³ + ax + b` over the prime field of `p`, with base point
/// `g` of prime order `n`.
#[derive(Debug, Clone)]
pub struct Curve {
    /// The curve's name as GnuPG prints it.
    pub name: &'static str,
    p: BigUint,
    a: BigUint,
    b: BigUint,
    g: (BigUint, BigUint),
    n: BigUint,
    /// Field element size in bytes.
    pub size: usize,
}

/// (name, OID, p, a, b, Gx‖Gy, n), from SEC 2 and RFC 5639.
const CURVES: [(&str, &str, &str, &str, &str, &str, &str); 8] = [
    (
        "NIST P-192",
        "1.2.840.10045.3.1.1",
        "fffffffffffffffffffffffffffffffeffffffffffffffff",
        "fffffffffffffffffffffffffffffffefffffffffffffffc",
        "64210519e59c80e70fa7e9ab72243049feb8deecc146b9b1",
        "188da80eb03090f67cbf20eb43a18800f4ff0afd82ff101207192b95ffc8da78631011ed6b24cdd573f977a11e794811",
        "ffffffffffffffffffffffff99def836146bc9b1b4d22831",
    ),
    (
        "NIST P-224",
        "1.3.132.0.33",
        "ffffffffffffffffffffffffffffffff000000000000000000000001",
        "fffffffffffffffffffffffffffffffefffffffffffffffffffffffe",
        "b4050a850c04b3abf54132565044b0b7d7bfd8ba270b39432355ffb4",
        "b70e0cbd6bb4bf7f321390b94a03c1d356c21122343280d6115c1d21bd376388b5f723fb4c22dfe6cd4375a05a07476444d5819985007e34",
        "ffffffffffffffffffffffffffff16a2e0b8f03e13dd29455c5c2a3d",
    ),
    (
        "NIST P-256",
        "1.2.840.10045.3.1.7",
        "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff",
        "ffffffff00000001000000000000000000000000fffffffffffffffffffffffc",
        "5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b",
        "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c2964fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5",
        "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551",
    ),
    (
        "NIST P-384",
        "1.3.132.0.34",
        "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffff",
        "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000fffffffc",
        "b3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aef",
        "aa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab73617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5f",
        "ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973",
    ),
    (
        "secp256k1",
        "1.3.132.0.10",
        "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f",
        "00",
        "07",
        "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8",
        "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141",
    ),
    (
        "brainpoolP256r1",
        "1.3.36.3.3.2.8.1.1.7",
        "a9fb57dba1eea9bc3e660a909d838d726e3bf623d52620282013481d1f6e5377",
        "7d5a0975fc2c3057eef67530417affe7fb8055c126dc5c6ce94a4b44f330b5d9",
        "26dc5c6ce94a4b44f330b5d9bbd77cbf958416295cf7e1ce6bccdc18ff8c07b6",
        "8bd2aeb9cb7e57cb2c4b482ffc81b7afb9de27e1e3bd23c23a4453bd9ace3262547ef835c3dac4fd97f8461a14611dc9c27745132ded8e545c1d54c72f046997",
        "a9fb57dba1eea9bc3e660a909d838d718c397aa3b561a6f7901e0e82974856a7",
    ),
    (
        "brainpoolP384r1",
        "1.3.36.3.3.2.8.1.1.11",
        "8cb91e82a3386d280f5d6f7e50e641df152f7109ed5456b412b1da197fb71123acd3a729901d1a71874700133107ec53",
        "7bc382c63d8c150c3c72080ace05afa0c2bea28e4fb22787139165efba91f90f8aa5814a503ad4eb04a8c7dd22ce2826",
        "04a8c7dd22ce28268b39b55416f0447c2fb77de107dcd2a62e880ea53eeb62d57cb4390295dbc9943ab78696fa504c11",
        "1d1c64f068cf45ffa2a63a81b7c13f6b8847a3e77ef14fe3db7fcafe0cbd10e8e826e03436d646aaef87b2e247d4af1e8abe1d7520f9c2a45cb1eb8e95cfd55262b70b29feec5864e19c054ff99129280e4646217791811142820341263c5315",
        "8cb91e82a3386d280f5d6f7e50e641df152f7109ed5456b31f166e6cac0425a7cf3ab6af6b7fc3103b883202e9046565",
    ),
    (
        "brainpoolP512r1",
        "1.3.36.3.3.2.8.1.1.13",
        "aadd9db8dbe9c48b3fd4e6ae33c9fc07cb308db3b3c9d20ed6639cca703308717d4d9b009bc66842aecda12ae6a380e62881ff2f2d82c68528aa6056583a48f3",
        "7830a3318b603b89e2327145ac234cc594cbdd8d3df91610a83441caea9863bc2ded5d5aa8253aa10a2ef1c98b9ac8b57f1117a72bf2c7b9e7c1ac4d77fc94ca",
        "3df91610a83441caea9863bc2ded5d5aa8253aa10a2ef1c98b9ac8b57f1117a72bf2c7b9e7c1ac4d77fc94cadc083e67984050b75ebae5dd2809bd638016f723",
        "81aee4bdd82ed9645a21322e9c4c6a9385ed9f70b5d916c1b43b62eef4d0098eff3b1f78e2d0d48d50d1687b93b97d5f7c6d5047406a5e688b352209bcb9f8227dde385d566332ecc0eabfa9cf7822fdf209f70024a57b1aa000c55b881f8111b2dcde494a5f485e5bca4bd88a2763aed1ca2b2fa8f0540678cd1e0f3ad80892",
        "aadd9db8dbe9c48b3fd4e6ae33c9fc07cb308db3b3c9d20ed6639cca70330870553e5c414ca92619418661197fac10471db1d381085ddaddb58796829ca90069",
    ),
];

fn hex(s: &str) -> BigUint {
    BigUint::parse_bytes(s.as_bytes(), 16).expect("curve constants are hex")
}

/// A point in Jacobian coordinates; `z == 0` is the point at infinity.
#[derive(Clone)]
struct Jacobian {
    x: BigUint,
    y: BigUint,
    z: BigUint,
}

impl Curve {
    /// The curve with this dotted OID (named-curve parameter of an EC key),
    /// if it is one of ours.
    pub fn by_oid(oid: &str) -> Option<Self> {
        let &(name, _, p, a, b, g, n) = CURVES.iter().find(|c| c.1 == oid)?;
        let (gx, gy) = g.split_at(g.len() / 2);
        Some(Self { name, p: hex(p), a: hex(a), b: hex(b), g: (hex(gx), hex(gy)), n: hex(n), size: p.len() / 2 })
    }

    /// The dotted OIDs of the curves this module knows.
    pub fn oids() -> impl Iterator<Item = &'static str> {
        CURVES.iter().map(|c| c.1)
    }

    fn sub(&self, a: &BigUint, b: &BigUint) -> BigUint {
        ((a % &self.p) + &self.p - (b % &self.p)) % &self.p
    }

    fn mul(&self, a: &BigUint, b: &BigUint) -> BigUint {
        (a * b) % &self.p
    }

    fn double(&self, q: &Jacobian) -> Jacobian {
        if q.z == BigUint::from(0u8) || q.y == BigUint::from(0u8) {
            return Jacobian { x: 1u8.into(), y: 1u8.into(), z: 0u8.into() };
        }
        let yy = self.mul(&q.y, &q.y);
        let s = self.mul(&(BigUint::from(4u8) * &q.x), &yy);
        let zz = self.mul(&q.z, &q.z);
        let m = (BigUint::from(3u8) * self.mul(&q.x, &q.x) + self.mul(&self.a, &self.mul(&zz, &zz))) % &self.p;
        let x = self.sub(&self.mul(&m, &m), &(BigUint::from(2u8) * &s));
        let y = self.sub(&self.mul(&m, &self.sub(&s, &x)), &(BigUint::from(8u8) * self.mul(&yy, &yy)));
        let z = self.mul(&(BigUint::from(2u8) * &q.y), &q.z);
        Jacobian { x, y, z }
    }

    fn add(&self, a: &Jacobian, b: &Jacobian) -> Jacobian {
        let zero = BigUint::from(0u8);
        if a.z == zero {
            return b.clone();
        }
        if b.z == zero {
            return a.clone();
        }
        let (z1z1, z2z2) = (self.mul(&a.z, &a.z), self.mul(&b.z, &b.z));
        let (u1, u2) = (self.mul(&a.x, &z2z2), self.mul(&b.x, &z1z1));
        let s1 = self.mul(&a.y, &self.mul(&b.z, &z2z2));
        let s2 = self.mul(&b.y, &self.mul(&a.z, &z1z1));
        if u1 == u2 {
            return if s1 == s2 { self.double(a) } else { Jacobian { x: 1u8.into(), y: 1u8.into(), z: zero } };
        }
        let h = self.sub(&u2, &u1);
        let r = self.sub(&s2, &s1);
        let hh = self.mul(&h, &h);
        let hhh = self.mul(&h, &hh);
        let v = self.mul(&u1, &hh);
        let x = self.sub(&self.sub(&self.mul(&r, &r), &hhh), &(BigUint::from(2u8) * &v));
        let y = self.sub(&self.mul(&r, &self.sub(&v, &x)), &self.mul(&s1, &hhh));
        let z = self.mul(&h, &self.mul(&a.z, &b.z));
        Jacobian { x, y, z }
    }

    fn scalar(&self, k: &BigUint, point: &(BigUint, BigUint)) -> Jacobian {
        let base = Jacobian { x: point.0.clone(), y: point.1.clone(), z: 1u8.into() };
        let mut acc = Jacobian { x: 1u8.into(), y: 1u8.into(), z: 0u8.into() };
        for i in (0..k.bits()).rev() {
            acc = self.double(&acc);
            if (k >> i) & BigUint::from(1u8) == BigUint::from(1u8) {
                acc = self.add(&acc, &base);
            }
        }
        acc
    }

    /// The affine x coordinate (`None` at infinity).
    fn affine_x(&self, q: &Jacobian) -> Option<BigUint> {
        if q.z == BigUint::from(0u8) {
            return None;
        }
        let zinv = q.z.modpow(&(&self.p - BigUint::from(2u8)), &self.p);
        Some(self.mul(&q.x, &self.mul(&zinv, &zinv)))
    }

    /// Decode an uncompressed point (`04 ‖ X ‖ Y`) that lies on the curve.
    fn point(&self, sec1: &[u8]) -> Option<(BigUint, BigUint)> {
        if sec1.len() != 1 + 2 * self.size || sec1[0] != 4 {
            return None;
        }
        let x = BigUint::from_bytes_be(&sec1[1..=self.size]);
        let y = BigUint::from_bytes_be(&sec1[1 + self.size..]);
        if x >= self.p || y >= self.p {
            return None;
        }
        let rhs = (self.mul(&self.mul(&x, &x), &x) + self.mul(&self.a, &x) + &self.b) % &self.p;
        (self.mul(&y, &y) == rhs).then_some((x, y))
    }

    /// The hash as an integer mod n, as ECDSA takes it: its leftmost
    /// bits up to the order's length.
    fn hash_int(&self, hash: &[u8]) -> BigUint {
        let e = BigUint::from_bytes_be(hash);
        let (hbits, nbits) = (8 * hash.len(), self.n.bits());
        let e = if hbits > nbits { e >> (hbits - nbits) } else { e };
        e % &self.n
    }

    /// Whether `(r, s)` is a valid signature of `hash` by the public key
    /// `sec1` (an uncompressed point).
    pub fn verify_prehash(&self, sec1: &[u8], hash: &[u8], r: &[u8], s: &[u8]) -> bool {
        let Some(q) = self.point(sec1) else { return false };
        let (r, s) = (BigUint::from_bytes_be(r), BigUint::from_bytes_be(s));
        let zero = BigUint::from(0u8);
        if r == zero || s == zero || r >= self.n || s >= self.n {
            return false;
        }
        let w = s.modpow(&(&self.n - BigUint::from(2u8)), &self.n);
        let u1 = (self.hash_int(hash) * &w) % &self.n;
        let u2 = (&r * &w) % &self.n;
        let sum = self.add(&self.scalar(&u1, &self.g), &self.scalar(&u2, &q));
        self.affine_x(&sum).is_some_and(|x| x % &self.n == r)
    }

    /// The uncompressed public point of the secret scalar `d` (tests).
    pub fn public_key(&self, d: &[u8]) -> Vec<u8> {
        let q = self.scalar(&BigUint::from_bytes_be(d), &self.g);
        let zinv = q.z.modpow(&(&self.p - BigUint::from(2u8)), &self.p);
        let z2 = self.mul(&zinv, &zinv);
        let (x, y) = (self.mul(&q.x, &z2), self.mul(&q.y, &self.mul(&z2, &zinv)));
        let mut out = vec![4u8];
        for c in [x, y] {
            let bytes = c.to_bytes_be();
            out.extend(std::iter::repeat_n(0u8, self.size - bytes.len()));
            out.extend(bytes);
        }
        out
    }

    /// Sign `hash` with secret `d` and nonce `k` (both big-endian, below
    /// the order): `(r, s)` big-endian. Not constant-time: for making test
    /// certificates only.
    pub fn sign_prehash(&self, d: &[u8], k: &[u8], hash: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let k = BigUint::from_bytes_be(k) % &self.n;
        let r = self.affine_x(&self.scalar(&k, &self.g)).unwrap_or_default() % &self.n;
        let kinv = k.modpow(&(&self.n - BigUint::from(2u8)), &self.n);
        let s = (kinv * (self.hash_int(hash) + &r * BigUint::from_bytes_be(d))) % &self.n;
        (r.to_bytes_be(), s.to_bytes_be())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_points_lie_on_their_curves_and_have_their_order() {
        for oid in Curve::oids() {
            let c = Curve::by_oid(oid).unwrap();
            let mut g = vec![4u8];
            for v in [&c.g.0, &c.g.1] {
                let b = v.to_bytes_be();
                g.extend(std::iter::repeat_n(0u8, c.size - b.len()));
                g.extend(b);
            }
            assert!(c.point(&g).is_some(), "{}", c.name);
            assert!(c.affine_x(&c.scalar(&c.n, &c.g)).is_none(), "{}: n·G is infinity", c.name);
        }
    }

    #[test]
    fn signatures_verify_and_tampered_ones_do_not() {
        for oid in Curve::oids() {
            let c = Curve::by_oid(oid).unwrap();
            let d = [7u8; 20];
            let q = c.public_key(&d);
            let hash = [0xA5u8; 32];
            let (r, s) = c.sign_prehash(&d, &[0x3Cu8; 20], &hash);
            assert!(c.verify_prehash(&q, &hash, &r, &s), "{}", c.name);
            let mut other = hash;
            other[0] ^= 1;
            assert!(!c.verify_prehash(&q, &other, &r, &s), "{}", c.name);
        }
    }

    #[test]
    fn generic_p256_and_p384_agree_with_the_rustcrypto_crates() {
        use p256::ecdsa::signature::hazmat::PrehashSigner;
        let d = [9u8; 32];
        let key = p256::ecdsa::SigningKey::from_slice(&d).unwrap();
        let point = key.verifying_key().to_encoded_point(false);
        let c = Curve::by_oid("1.2.840.10045.3.1.7").unwrap();
        assert_eq!(c.public_key(&d), point.as_bytes());
        let hash = [0x42u8; 32];
        let sig: p256::ecdsa::Signature = key.sign_prehash(&hash).unwrap();
        let (r, s) = sig.split_bytes();
        assert!(c.verify_prehash(point.as_bytes(), &hash, &r, &s));
        let d = [5u8; 48];
        let key = p384::ecdsa::SigningKey::from_slice(&d).unwrap();
        let c = Curve::by_oid("1.3.132.0.34").unwrap();
        assert_eq!(c.public_key(&d), key.verifying_key().to_encoded_point(false).as_bytes());
    }

    #[test]
    fn secp256k1_matches_a_known_public_key() {
        // d = 1: the public key is the base point.
        let c = Curve::by_oid("1.3.132.0.10").unwrap();
        let q = c.public_key(&[1]);
        assert_eq!(
            &crate::kbx::dump::hex_upper(&q[1..33]),
            "79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798"
        );
    }
}
