//! The hashes signatures are made over, named once for both protocols.

use md5::Md5;
use ripemd::Ripemd160;
use rsa::Pkcs1v15Sign;
use sha1::Sha1;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

/// The digests X.509 and OpenPGP signatures use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    /// MD5.
    Md5,
    /// SHA-1.
    Sha1,
    /// RIPEMD-160.
    Ripemd160,
    /// SHA-224.
    Sha224,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl Hash {
    /// The digest of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Md5 => Md5::digest(data).to_vec(),
            Hash::Sha1 => Sha1::digest(data).to_vec(),
            Hash::Ripemd160 => Ripemd160::digest(data).to_vec(),
            Hash::Sha224 => Sha224::digest(data).to_vec(),
            Hash::Sha256 => Sha256::digest(data).to_vec(),
            Hash::Sha384 => Sha384::digest(data).to_vec(),
            Hash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// The hash of an OpenPGP hash algorithm; `None` for one not here.
    pub(crate) fn of_openpgp(h: pgp::crypto::hash::HashAlgorithm) -> Option<Self> {
        use pgp::crypto::hash::HashAlgorithm as H;
        Some(match h {
            H::Md5 => Hash::Md5,
            H::Sha1 => Hash::Sha1,
            H::Ripemd160 => Hash::Ripemd160,
            H::Sha224 => Hash::Sha224,
            H::Sha256 => Hash::Sha256,
            H::Sha384 => Hash::Sha384,
            H::Sha512 => Hash::Sha512,
            _ => return None,
        })
    }

    /// The hash with this dotted digest-algorithm OID.
    pub(crate) fn by_oid(oid: &str) -> Option<Self> {
        Some(match oid {
            "1.2.840.113549.2.5" => Hash::Md5,
            "1.3.14.3.2.26" => Hash::Sha1,
            "1.3.36.3.2.1" => Hash::Ripemd160,
            "2.16.840.1.101.3.4.2.4" => Hash::Sha224,
            "2.16.840.1.101.3.4.2.1" => Hash::Sha256,
            "2.16.840.1.101.3.4.2.2" => Hash::Sha384,
            "2.16.840.1.101.3.4.2.3" => Hash::Sha512,
            _ => return None,
        })
    }

    /// The PKCS#1 v1.5 padding scheme with this hash's DigestInfo.
    pub fn pkcs1(self) -> Pkcs1v15Sign {
        match self {
            Hash::Md5 => Pkcs1v15Sign::new::<Md5>(),
            Hash::Sha1 => Pkcs1v15Sign::new::<Sha1>(),
            Hash::Ripemd160 => Pkcs1v15Sign::new::<Ripemd160>(),
            Hash::Sha224 => Pkcs1v15Sign::new::<Sha224>(),
            Hash::Sha256 => Pkcs1v15Sign::new::<Sha256>(),
            Hash::Sha384 => Pkcs1v15Sign::new::<Sha384>(),
            Hash::Sha512 => Pkcs1v15Sign::new::<Sha512>(),
        }
    }
}
