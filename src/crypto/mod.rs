//! The signature checks X.509 and OpenPGP share, kept apart from either
//! protocol's parsing: hashes ([`enum@Hash`]), RSA (aws-lc-rs's PKCS#1 v1.5
//! parameters for the fast path, PSS), ECDSA on every curve gpgsm and gpg
//! verify (brainpoolP512r1 defined in-tree, [`bp512`]) and Ed448 over any
//! hash; and the [`tally`] of what was verified. No I/O, nothing of ours
//! below it: `x509` and `openpgp` call in, never each other.

pub mod bp512;
mod ecdsa;
mod eddsa;
mod hash;
mod rsa;
pub mod tally;

pub(crate) use ecdsa::{fit_left, verify_ecdsa};
pub(crate) use eddsa::verify_ed448;
pub use hash::Hash;
pub(crate) use rsa::{aws_rsa_pkcs1, verify_pkcs1_large, verify_pss, ParsedRsa};
