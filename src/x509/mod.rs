//! X.509: certificates as gpgsm lists and validates them.
//!
//! * [`describe`](describe()): a certificate's listing fields (`list`);
//! * `trustlist`: gpg-agent's `trustlist.txt` ([`TrustList`]);
//! * `certinfo`: the parts of a certificate validation looks at
//!   (`CertInfo`);
//! * [`incoming`]: the certificates of a file gpgsm imports;
//! * `memo`: certificates decoded and signatures checked once per run (`Memo`);
//! * `chain`: chain building and gpgsm's verdicts (`Validator`);
//! * `sigcheck`: signature checks with exactly the algorithms gpgsm
//!   verifies (the arithmetic is [`crate::crypto`]'s);
//! * `pool`: signature checks on worker threads, queued while the
//!   `index` strategy is still reading (`CheckPool`);
//! * `lookup`: the issuer lookups (`IssuerLookup`), one per
//!   [`crate::lookup::Strategy`] — what the buffer size acts on.
//!
//! Uses `crypto`, `lookup`, `io`, `telemetry` and the format crate; never
//! `openpgp`.

mod certinfo;
mod chain;
mod describe;
pub mod incoming;
mod keyboxd;
pub(crate) mod lookup;
mod memo;
mod pool;
mod sigcheck;
mod trustlist;

#[cfg(test)]
mod tests;

pub(crate) use certinfo::{Cert, CertInfo};

pub use certinfo::CertDecodeError;
pub use chain::Validation;
pub(crate) use chain::Validator;
pub use describe::describe;
pub(crate) use describe::describe_decoded;
pub use describe::X509Cert;
pub(crate) use keyboxd::Keyboxd as KeyboxdIssuers;
pub(crate) use lookup::IssuerLookup;
pub(crate) use pool::CheckPool;
pub use sigcheck::verify_der;
pub use trustlist::TrustList;
