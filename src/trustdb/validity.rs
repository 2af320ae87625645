//! The validity gpg shows beside a key's user ids (`uid [ unknown] …`,
//! the colon listings' second field), for the trust models whose validity
//! gpg reads from the trust database or the owner trust (facts from
//! GnuPG's `g10/trust.c` and `g10/trustdb.c`):
//!
//! * **pgp** and **classic**: the validity record of the user id (found
//!   by its name hash, the RIPEMD-160 of its bytes) in the
//!   list of the key's trust record; no trust record or no such validity
//!   record is `unknown`. What the last check computed is what a listing
//!   shows, unless a check is due: then gpg checks first ([`Validities::check_due`]).
//! * **direct**: the key's own owner trust, for every user id.
//! * **always**: `unknown`.
//!
//! Then, as gpg's listing does: a revoked user id or key is `revoked`,
//! an expired user id or key `expired`. tofu and the other models are not
//! computed here ([`Validities::computed`] is `false`).

use std::collections::HashMap;

use serde::Serialize;

use super::{Problem, TrustDb};

/// The trust models gpg users choose (`--trust-model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// The web of trust with trust signatures (gpg's default).
    Pgp,
    /// The web of trust without them.
    Classic,
    /// A key is as valid as its owner trust says.
    Direct,
    /// Every key counts as valid; the listing says `unknown`.
    Always,
    /// A model kbxscope does not compute (tofu, tofu+pgp, external, …),
    /// by gpg's name.
    #[serde(untagged)]
    Other(&'static str),
}

impl Model {
    /// The model gpg's `--trust-model NAME` names; `auto` is `None` (the
    /// database's model then decides, [`Model::of_database`]).
    pub fn from_option(name: &str) -> Option<Model> {
        Some(match name {
            "pgp" => Model::Pgp,
            "classic" => Model::Classic,
            "direct" => Model::Direct,
            "always" => Model::Always,
            "auto" => return None,
            "tofu" => Model::Other("tofu"),
            "tofu+pgp" => Model::Other("tofu+pgp"),
            "external" => Model::Other("external"),
            _ => Model::Other("unknown"),
        })
    }

    /// What `trust-model auto` (gpg's default) makes of the model the
    /// database records: that model where gpg knows it, else pgp; a home
    /// without a database is pgp (gpg creates it with that model).
    pub fn of_database(db: Option<&TrustDb>) -> Model {
        match db.map(|d| d.header.model) {
            None | Some("auto" | "unknown") => Model::Pgp,
            Some(name) => Model::from_option(name).unwrap_or(Model::Pgp),
        }
    }

    /// gpg's name of the model.
    pub fn name(self) -> &'static str {
        match self {
            Model::Pgp => "pgp",
            Model::Classic => "classic",
            Model::Direct => "direct",
            Model::Always => "always",
            Model::Other(name) => name,
        }
    }
}

/// A validity as gpg shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Validity {
    /// Nothing known (gpg's 0).
    Unknown,
    /// The key or user id expired (1).
    Expired,
    /// Not enough known to say (2).
    Undefined,
    /// Never valid (3).
    Never,
    /// Marginally valid (4).
    Marginal,
    /// Fully valid (5).
    Full,
    /// Ultimately valid: one of the user's own keys (6).
    Ultimate,
    /// The key or user id is revoked (a flag beside the value in gpg).
    Revoked,
}

impl Validity {
    /// The value a trust database byte holds (its low four bits).
    pub fn of_byte(b: u8) -> Validity {
        match b & 15 {
            1 => Validity::Expired,
            2 => Validity::Undefined,
            3 => Validity::Never,
            4 => Validity::Marginal,
            5 => Validity::Full,
            6 => Validity::Ultimate,
            _ => Validity::Unknown,
        }
    }

    /// The fixed-width column of gpg's text listings (`[ unknown]`).
    pub fn column(self) -> &'static str {
        match self {
            Validity::Unknown => "[ unknown]",
            Validity::Expired => "[ expired]",
            Validity::Undefined => "[  undef ]",
            Validity::Never => "[  never ]",
            Validity::Marginal => "[marginal]",
            Validity::Full => "[  full  ]",
            Validity::Ultimate => "[ultimate]",
            Validity::Revoked => "[ revoked]",
        }
    }

    /// The letter of gpg's colon listings (field 2).
    pub fn letter(self) -> char {
        match self {
            Validity::Unknown => '-',
            Validity::Expired => 'e',
            Validity::Undefined => 'q',
            Validity::Never => 'n',
            Validity::Marginal => 'm',
            Validity::Full => 'f',
            Validity::Ultimate => 'u',
            Validity::Revoked => 'r',
        }
    }
}

/// The 20 bytes a key's trust record is filed under (gpg's
/// `fpr20_from_fpr`): a v4 fingerprint as it is; of a v5 (32-byte) one,
/// bytes 20–31 and then 0–7 (its key id last, as a v4 fingerprint ends in
/// its key id); a shorter one (v3) filled up with zeros.
pub fn fpr20(fingerprint: &[u8]) -> [u8; 20] {
    let mut out = [0u8; 20];
    if fingerprint.len() >= 32 {
        out[..12].copy_from_slice(&fingerprint[20..32]);
        out[12..].copy_from_slice(&fingerprint[..8]);
    } else {
        let n = fingerprint.len().min(20);
        out[..n].copy_from_slice(&fingerprint[..n]);
    }
    out
}

/// A validity record as a check stores it: the key's [`fpr20`], the user
/// id's name hash, the validity.
pub type CheckedRecord = ([u8; 20], [u8; 20], u8);

/// How a key stands apart from the trust database.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyState {
    /// The key revoked itself.
    pub revoked: bool,
    /// The key has expired.
    pub expired: bool,
}

/// The validities of one home: its trust database (if any) read under a
/// trust model.
#[derive(Debug, Clone)]
pub struct Validities {
    model: Model,
    /// The database's next-check time (`None`: no database).
    next_check: Option<u32>,
    /// A key's owner trust byte and validity records, by the 20 bytes
    /// gpg files it under ([`fpr20`]); only keys gpg's hash table leads to.
    keys: HashMap<[u8; 20], Stored>,
}

/// One key's owner trust byte and its validity records (name hash,
/// validity byte), in list order.
type Stored = (u8, Vec<([u8; 20], u8)>);

impl Validities {
    /// The validities `db` holds (`None`: the home has no trust database)
    /// under `model`.
    pub fn new(db: Option<&TrustDb>, model: Model) -> Self {
        let mut keys = HashMap::new();
        if let Some(db) = db {
            let lost: Vec<u32> = db
                .damage
                .iter()
                .filter(|d| {
                    matches!(d.what, Problem::NotInTable(_) | Problem::HashListLoops(_) | Problem::HashListLeadsTo(_))
                })
                .map(|d| d.record)
                .collect();
            for k in db.keys.iter().filter(|k| !lost.contains(&k.record)) {
                let list = k.validities.iter().map(|v| (v.name_hash, v.validity)).collect();
                keys.entry(k.trust.fingerprint).or_insert((k.trust.ownertrust, list));
            }
        }
        Self { model, next_check: db.map(|d| d.header.next_check), keys }
    }

    /// The same with the validity records a trust-database check computed
    /// (the key's [`fpr20`], name hash, validity) in place of
    /// the stored ones: what gpg shows after its automatic check.
    pub fn with_checked(mut self, records: impl IntoIterator<Item = CheckedRecord>) -> Self {
        for (_, list) in self.keys.values_mut() {
            list.clear();
        }
        for (fpr, name, validity) in records {
            self.keys.entry(fpr).or_insert((0, Vec::new())).1.push((name, validity));
        }
        self.next_check = None;
        self
    }

    /// The model in effect.
    pub fn model(&self) -> Model {
        self.model
    }

    /// Whether kbxscope computes this model's validity (not tofu, …).
    pub fn computed(&self) -> bool {
        !matches!(self.model, Model::Other(_))
    }

    /// The next check's time when it is due at `now` (pgp and classic
    /// only: the models gpg checks): gpg would check the database before
    /// showing a validity, so what it shows may differ from what is stored.
    pub fn check_due(&self, now: i64) -> Option<u32> {
        let next = self.next_check?;
        let due = next != 0 && i64::from(next) <= now;
        (due && matches!(self.model, Model::Pgp | Model::Classic)).then_some(next)
    }

    /// The validity of the user id whose bytes hash to `name` on the key
    /// with `fingerprint`, as gpg's listing shows it; `uid_revoked` and
    /// `uid_expired` are the user id's own state. `None` for a model not
    /// computed.
    pub fn user_id(
        &self,
        fingerprint: &[u8],
        key: KeyState,
        name: &[u8; 20],
        uid_revoked: bool,
        uid_expired: bool,
    ) -> Option<Validity> {
        if !self.computed() {
            return None;
        }
        if uid_revoked || key.revoked {
            return Some(Validity::Revoked);
        }
        if uid_expired || key.expired {
            return Some(Validity::Expired);
        }
        Some(self.stored(fingerprint, Some(name)))
    }

    /// The key's validity (gpg's `pub` field 2): the best of its user ids'
    /// records, `r` for a revoked key, `e` for an expired one.
    pub fn key(&self, fingerprint: &[u8], key: KeyState) -> Option<Validity> {
        if !self.computed() {
            return None;
        }
        if key.revoked {
            return Some(Validity::Revoked);
        }
        if key.expired {
            return Some(Validity::Expired);
        }
        Some(self.stored(fingerprint, None))
    }

    /// What the database (or, for direct, the owner trust) says: of one
    /// user id, or the best over the key's records.
    fn stored(&self, fingerprint: &[u8], name: Option<&[u8; 20]>) -> Validity {
        let Some((ownertrust, list)) = self.keys.get(&fpr20(fingerprint)) else { return Validity::Unknown };
        match self.model {
            Model::Direct => Validity::of_byte(*ownertrust),
            Model::Pgp | Model::Classic => match name {
                Some(name) => {
                    list.iter().find(|(h, _)| h == name).map_or(Validity::Unknown, |(_, v)| Validity::of_byte(*v))
                }
                None => list.iter().map(|(_, v)| Validity::of_byte(*v)).max().unwrap_or(Validity::Unknown),
            },
            Model::Always | Model::Other(_) => Validity::Unknown,
        }
    }
}
