//! X.509 validation as gpgsm does it, with three ways to look issuers up.
//!
//! * [`trustlist`]: gpg-agent's `trustlist.txt`;
//! * [`certinfo`]: the parts of a certificate validation looks at, decoded
//!   and signature-checked once per run;
//! * [`chain`]: chain building and gpgsm's verdicts;
//! * [`sigverify`]: signature checks with the algorithms gpgsm verifies,
//!   each through its RustCrypto crate;
//! * [`pool`]: signature checks on worker threads, queued while the
//!   `index` strategy is still reading;
//! * [`search`]: the `gnupg`, `scan` and `index` lookup strategies — what
//!   the buffer size acts on.

pub mod bp512;
pub mod certinfo;
pub mod chain;
pub mod pool;
pub mod search;
pub mod sigverify;
pub mod trustlist;

#[cfg(test)]
mod tests;

pub use certinfo::{Cert, CertInfo, Memo};
pub use chain::{Problem, Validation, Validator};
pub use pool::CheckPool;
pub use search::{GnupgSearch, IndexSearch, IssuerSearch, ScanSearch, SearchError};
pub use trustlist::TrustList;

/// Which lookup strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// gpgsm 2.4's access pattern.
    Gnupg,
    /// One rescan per lookup.
    Scan,
    /// One pass, then memory.
    Index,
}

impl Lookup {
    /// The strategy's name (`gnupg`, `scan`, `index`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Gnupg => "gnupg",
            Self::Scan => "scan",
            Self::Index => "index",
        }
    }
}
