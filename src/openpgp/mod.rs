//! OpenPGP: keys as gpg lists them, and their signatures as gpg lists and
//! checks them.
//!
//! * [`describe`](describe()): a keyblock's listing fields (`list`), from
//!   the `pgp` crate where it decodes the key, else from the packets
//!   (`packets`);
//! * `keyblock`: a keyblock split into components and signatures (no
//!   I/O); `primary`: the primary user id picked as gpg does, which every
//!   listing puts first; `expiry`: when a primary key expires and whether
//!   it was revoked, as gpg works it out; `issuer`: who made a signature; `packet_decode`: what the
//!   `pgp` crate makes of each packet, from its bytes;
//! * `raw`: key and signature packets read from their bytes, and the
//!   digest gpg computes where the `pgp` crate cannot (v5);
//! * `verify`: one signature checked with the signer's key (the
//!   arithmetic is [`crate::crypto`]'s or the `pgp` crate's);
//! * `lookup`: the signer lookups (`SignerLookup`), one per
//!   [`crate::lookup::Strategy`] (gpg's own pattern documented there);
//! * `check_keyblock`: one keyblock's signatures listed or checked.
//!
//! Uses `crypto`, `lookup`, `io`, `telemetry` and the format crate; never
//! `x509`.

mod attribute;
mod cert_facts;
mod describe;
mod expiry;
pub mod import_clean;
pub mod incoming;
mod issuer;
mod keyblock;
pub(crate) mod lookup;
mod packet_decode;
mod packets;
mod primary;
mod raw;
mod sigs;
mod verify;

pub use attribute::{attribute_name, name_hash};
pub use cert_facts::CertFacts;
pub use describe::describe;
pub(crate) use describe::describe_keyblock;
pub use describe::KeyblockError;
pub use describe::OpenPgpKey;
pub use describe::OpenPgpSubkey;
pub use expiry::{KeyLife, UidLife};
pub use lookup::Signer;
pub(crate) use lookup::SignerLookup;
pub use packets::WalkError;
pub use raw::SigPacketError;
pub use raw::{KeyPacket, SigPacket};
pub(crate) use sigs::check_keyblock;
pub use sigs::{Judge, Mode, SigCounts, SigGroup, SigLine, SigStatus};
