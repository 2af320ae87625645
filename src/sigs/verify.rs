//! Verifying one key signature with the signer's key, the checks gpg's
//! `check_key_signature` makes, through the `pgp` crate. No I/O.

use pgp::errors::Error;
use pgp::packet::{PublicKey, PublicSubkey, Signature};
use pgp::types::{KeyDetails, Tag};

use super::keyblock::{key_id_bytes, Component, Keyblock};

/// A key that can verify: a primary key or a subkey.
#[derive(Clone, Copy)]
pub enum SignerKey<'a> {
    /// A primary key.
    Primary(&'a PublicKey),
    /// A subkey.
    Sub(&'a PublicSubkey),
}

impl<'a> SignerKey<'a> {
    /// The key of `kb` (primary or subkey) whose key id is `kid`.
    pub fn find(kb: &'a Keyblock, kid: &[u8; 8]) -> Option<Self> {
        if let Some(p) = kb.primary.as_deref() {
            if key_id_bytes(p.legacy_key_id().as_ref()) == *kid {
                return Some(Self::Primary(p));
            }
        }
        kb.groups.iter().find_map(|g| match &g.component {
            Component::Subkey(Some(k)) if key_id_bytes(k.legacy_key_id().as_ref()) == *kid => {
                Some(Self::Sub(k.as_ref()))
            }
            _ => None,
        })
    }
}

/// How a verification ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The signature is good.
    Good,
    /// The signature does not verify.
    Bad,
    /// It cannot be checked (unsupported algorithm, wrong class, …), with
    /// gpg's words where it has them.
    Error(String),
}

/// Verify `sig`, attached to `component` of the keyblock whose primary
/// key is `primary`, with `signer`.
pub fn verify(primary: &PublicKey, component: &Component, sig: &Signature, signer: SignerKey<'_>) -> Verdict {
    let class = sig.typ().map_or(0, u8::from);
    macro_rules! with_signer {
        ($k:ident => $e:expr) => {
            match signer {
                SignerKey::Primary($k) => $e,
                SignerKey::Sub($k) => $e,
            }
        };
    }
    let r = match (component, class) {
        (Component::Key, 0x1F | 0x20) => with_signer!(k => sig.verify_key_third_party(primary, k)),
        (Component::Uid(u), 0x10..=0x13 | 0x30) => {
            with_signer!(k => sig.verify_third_party_certification(primary, k, Tag::UserId, u))
        }
        (Component::Uat(u), 0x10..=0x13 | 0x30) => {
            with_signer!(k => sig.verify_third_party_certification(primary, k, Tag::UserAttribute, u))
        }
        (Component::Subkey(Some(sub)), 0x18 | 0x28) => with_signer!(k => sig.verify_subkey_binding(k, sub.as_ref())),
        (Component::Subkey(None), 0x18 | 0x28) => return Verdict::Error("Unknown public key algorithm".into()),
        _ => return Verdict::Error("Invalid signature class".into()),
    };
    match r {
        Ok(()) => Verdict::Good,
        Err(e) => classify(&e),
    }
}

/// gpg's reading of a failure: unsupported algorithms are errors (`%`),
/// everything else a bad signature (`-`).
fn classify(e: &Error) -> Verdict {
    match e {
        Error::Unimplemented { .. } | Error::Unsupported { .. } => {
            let text = e.to_string();
            if text.to_ascii_lowercase().contains("hash") || text.to_ascii_lowercase().contains("digest") {
                Verdict::Error("Invalid digest algorithm".into())
            } else {
                Verdict::Error("Unknown public key algorithm".into())
            }
        }
        _ => Verdict::Bad,
    }
}
