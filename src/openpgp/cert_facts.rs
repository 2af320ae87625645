//! What gpg's trust-database check reads of a certification besides its
//! class, signer and verdict: when it was made and expires, whether it
//! may be revoked, and a trust signature's depth, amount and regular
//! expression (hashed subpackets only, as gpg reads them).

/// What gpg's trust-database check reads of a certification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertFacts {
    /// Creation time, Unix seconds.
    pub created: u32,
    /// When it expires (its hashed expiration after its creation), if it does.
    pub expires: Option<u32>,
    /// Whether its signer may revoke it.
    pub revocable: bool,
    /// A trust signature's depth and amount.
    pub trust: Option<(u8, u8)>,
    /// A trust signature's regular expression (its bytes, without the
    /// terminating NUL).
    pub regexp: Option<Vec<u8>>,
}

impl CertFacts {
    /// The facts of a decoded signature.
    pub(super) fn of(sig: &pgp::packet::Signature) -> Self {
        let created = sig.created().map_or(0, |t| t.as_secs());
        let expires = sig.signature_expiration_time().map(|d| d.as_secs()).filter(|d| *d != 0);
        Self {
            created,
            expires: expires.map(|d| created.saturating_add(d)),
            revocable: sig.is_revocable(),
            trust: sig.trust_signature(),
            regexp: sig.regular_expression().map(|r| r.iter().copied().take_while(|b| *b != 0).collect()),
        }
    }
}
