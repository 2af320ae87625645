//! A keyboxd database made from a keybox's keys and certificates: the
//! rows keyboxd 2.4 stores for each (GnuPG's `kbx/backend-sqlite.c`, facts
//! only), so that the same keys can be read from either store.
//!
//! * `pubkey`: `ubid` (the first 20 bytes of the primary fingerprint; a
//!   certificate's SHA-1 fingerprint), `type` (1 OpenPGP, 2 X.509),
//!   `ephemeral` from the blob's flag, `revoked` 0, `keyblob` the keyblock
//!   or certificate exactly as the keybox holds it.
//! * `fingerprint`: one row per key packet (`subkey` 0 for the primary
//!   key, then 1, 2, … in keyblock order) with its fingerprint and key id
//!   (a v4 fingerprint's last 8 bytes, a v5 one's first 8; a certificate's
//!   SHA-1 fingerprint's last 8), and its `keygrip` (`keygrip.rs`:
//!   libgcrypt's, for RSA, DSA, Elgamal and EC keys on the curves it knows).
//! * `userid`: an OpenPGP key's user ids (`uidno` 1, 2, … in keyblock
//!   order, `addrspec` the lower-cased mail address or NULL); a
//!   certificate's subject (`uidno` 1), then, when the subject holds an
//!   emailAddress, the subject again with that `<mail>` as `addrspec`,
//!   then its subjectAltNames as the keybox stores them (`<mail>`, or an
//!   S-expression), each but that same mail again, numbered on; `addrspec`
//!   is the mail address taken from the `uid` as for OpenPGP.
//! * `issuer`: a certificate's serial number (upper-case hex) and issuer.
//! * `config`: `dbversion` 1 and `created`.
//!
//! The database is built in memory and handed back as the bytes of its
//! file (SQLite's own serialization, page size 4096, rollback journal):
//! the caller writes them, through a temporary file.

use rusqlite::{params, Connection};

use super::keygrip::{keygrip, of_certificate};
use super::server::STARTUP;
use crate::kbx::create::email_kludge;
use crate::kbx::dump::hex_upper;
use crate::kbx::keyblock::{split_packets, tag};
use crate::kbx::keypacket::{key_packet, KeyPacketError};
use crate::kbx::{parse_blob, Blob, BlobType, KeyBlob};

/// Why no database could be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the database: {0}")]
pub struct BuildError(#[from] rusqlite::Error);

/// A database made from a keybox.
#[derive(Debug, Clone)]
pub struct Written {
    /// The database file's bytes.
    pub bytes: Vec<u8>,
    /// OpenPGP keys stored.
    pub openpgp: u64,
    /// Certificates stored.
    pub x509: u64,
    /// Key blobs not stored: (blob index, byte offset, why).
    pub skipped: Vec<(u64, u64, String)>,
}

/// The mail address GnuPG takes from an OpenPGP user id (lower-cased):
/// the part in angle brackets, or the whole user id when it is a bare
/// address; `None` when there is none.
pub(super) fn addrspec(uid: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(uid);
    let inner = match (text.rfind('<'), text.rfind('>')) {
        (Some(l), Some(r)) if l < r => &text[l + 1..r],
        _ if !text.contains(char::is_whitespace) => &text[..],
        _ => return None,
    };
    let (local, domain) = inner.split_once('@')?;
    (!local.is_empty() && domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.'))
        .then(|| inner.to_ascii_lowercase())
}

/// A `fingerprint` row's fingerprint, key id and keygrip.
pub(crate) type KeyRow = (Vec<u8>, Vec<u8>, [u8; 20]);
/// A `userid` row's uid, addrspec and uidno.
pub(crate) type UidRow = (Vec<u8>, Option<String>, i64);

/// The rows keyboxd stores for one key or certificate.
pub(crate) struct Rows {
    /// `pubkey.type`: 1 OpenPGP, 2 X.509.
    pub(crate) kind: i64,
    /// The first 20 bytes of the primary fingerprint.
    pub(crate) ubid: Vec<u8>,
    /// `fingerprint` rows, the primary key first (`subkey` 0, 1, …).
    pub(crate) keys: Vec<KeyRow>,
    /// `userid` rows.
    pub(crate) uids: Vec<UidRow>,
    /// A certificate's `issuer` row: serial (upper-case hex) and issuer.
    pub(crate) issuer: Option<(String, Vec<u8>)>,
}

/// Why keyboxd stores no rows for a blob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RowsError {
    /// The keyblock's packets do not frame.
    #[error("its keyblock does not frame")]
    Unframed,
    /// A key packet does not decode.
    #[error("key packet {index}: {error}")]
    KeyPacket {
        /// The key's index in the keyblock (0: the primary key).
        index: usize,
        /// Why.
        error: KeyPacketError,
    },
    /// A blob of another type.
    #[error("neither OpenPGP nor X.509")]
    OtherType,
    /// No key in the keyblock.
    #[error("its keyblock holds no key")]
    NoKey,
}

/// The rows keyboxd stores for the key or certificate of `blob`, or why
/// it stores none.
pub(crate) fn rows_of(blob: &KeyBlob<'_>) -> Result<Rows, RowsError> {
    let data = blob.data();
    let (kind, keys, uids, issuer): (i64, Vec<KeyRow>, Vec<UidRow>, _) = match blob.blob_type {
        BlobType::OpenPgp => {
            let Ok(packets) = split_packets(data) else {
                return Err(RowsError::Unframed);
            };
            let mut keys = Vec::new();
            let mut uids = Vec::new();
            for p in &packets {
                match p.tag {
                    tag::PUBLIC_KEY | tag::PUBLIC_SUBKEY => match key_packet(p.body) {
                        Ok(k) => {
                            let grip = keygrip(k.algo, &p.body[k.material_start.min(p.body.len())..]);
                            keys.push((k.fingerprint, k.key_id.to_vec(), grip));
                        }
                        Err(error) => return Err(RowsError::KeyPacket { index: keys.len(), error }),
                    },
                    tag::USER_ID => uids.push((p.body.to_vec(), addrspec(p.body), uids.len() as i64 + 1)),
                    _ => {}
                }
            }
            (1, keys, uids, None)
        }
        BlobType::X509 => {
            let fpr = blob.key(0).fingerprint.to_vec();
            let kid = fpr[fpr.len().saturating_sub(8)..].to_vec();
            let subject = blob.x509_subject().unwrap_or_default().to_vec();
            // keyboxd's rows: the subject, the mail GnuPG's "email
            // kludge" finds in it (the subject again as uid), then the
            // subjectAltNames other than that mail, numbered on.
            let kludge = email_kludge(&String::from_utf8_lossy(&subject));
            let mut uids = vec![(subject.clone(), addrspec(&subject), 1)];
            if let Some(mail) = &kludge {
                uids.push((subject.clone(), Some(String::from_utf8_lossy(mail).into_owned()), 2));
            }
            for u in blob.uids().skip(2 + usize::from(kludge.is_some())) {
                if kludge.as_deref() != Some(u.name) {
                    uids.push((u.name.to_vec(), addrspec(u.name), uids.len() as i64 + 1));
                }
            }
            let issuer = (hex_upper(blob.serial()), blob.x509_issuer().unwrap_or_default().to_vec());
            (2, vec![(fpr, kid, of_certificate(data))], uids, Some(issuer))
        }
        _ => return Err(RowsError::OtherType),
    };
    let Some((primary, _, _)) = keys.first() else { return Err(RowsError::NoKey) };
    let ubid = primary[..primary.len().min(20)].to_vec();
    Ok(Rows { kind, ubid, keys, uids, issuer })
}

struct Builder {
    conn: Connection,
}

/// What became of one key blob.
enum Added {
    /// Stored.
    Stored,
    /// A key with the same `ubid` was stored already.
    SameUbid,
    /// Not stored, and why.
    Skipped(String),
}

impl Builder {
    fn new(created: &str) -> Result<Self, BuildError> {
        let conn = Connection::open_in_memory()?;
        for sql in STARTUP.iter().filter(|s| s.starts_with("CREATE")) {
            conn.execute(sql, [])?;
        }
        conn.execute("INSERT INTO config(name,value) VALUES('dbversion','1')", [])?;
        conn.execute("INSERT INTO config(name,value) VALUES('created',?1)", [created])?;
        Ok(Self { conn })
    }

    /// Store one key blob; `Ok(false)` when its `ubid` is stored already.
    fn add(&self, blob: &KeyBlob<'_>) -> Result<Added, BuildError> {
        let rows = match rows_of(blob) {
            Ok(r) => r,
            Err(why) => return Ok(Added::Skipped(why.to_string())),
        };
        let Rows { kind, ubid, keys, uids, issuer } = rows;
        let (ubid, data) = (&ubid[..], blob.data());
        let stored = self.conn.execute(
            "INSERT OR IGNORE INTO pubkey(ubid,type,ephemeral,revoked,keyblob) VALUES(?1,?2,?3,0,?4)",
            params![ubid, kind, i64::from(blob.is_ephemeral()), data],
        )?;
        if stored == 0 {
            return Ok(Added::SameUbid);
        }
        for (i, (fpr, kid, grip)) in keys.iter().enumerate() {
            self.conn.execute(
                "INSERT OR IGNORE INTO fingerprint(fpr,kid,keygrip,subkey,ubid) VALUES(?1,?2,?3,?4,?5)",
                params![fpr, kid, grip, i as i64, ubid],
            )?;
        }
        for (uid, addr, uidno) in uids {
            self.conn.execute(
                "INSERT INTO userid(uid,addrspec,type,uidno,ubid) VALUES(?1,?2,?3,?4,?5)",
                params![String::from_utf8_lossy(&uid), addr, kind, uidno, ubid],
            )?;
        }
        if let Some((sn, dn)) = issuer {
            self.conn.execute(
                "INSERT INTO issuer(sn,dn,ubid) VALUES(?1,?2,?3)",
                params![sn, String::from_utf8_lossy(&dn), ubid],
            )?;
        }
        Ok(Added::Stored)
    }
}

/// The keyboxd database holding every key and certificate of the keybox
/// image `keybox`, in the keybox's order; `created` is the `config`
/// table's creation time (`YYYY-MM-DD HH:MM:SS`, UTC).
///
/// # Errors
/// SQLite's error while building it (keys that cannot be stored are
/// listed in [`Written::skipped`]).
pub fn database(keybox: &[u8], created: &str) -> Result<Written, BuildError> {
    let b = Builder::new(created)?;
    let mut out = Written { bytes: Vec::new(), openpgp: 0, x509: 0, skipped: Vec::new() };
    b.conn.execute_batch("BEGIN")?;
    let (mut at, mut index) = (0usize, 0u64);
    while at + 5 <= keybox.len() {
        let len = u32::from_be_bytes(keybox[at..at + 4].try_into().expect("4 bytes")) as usize;
        let Some(image) = keybox.get(at..at.saturating_add(len)).filter(|_| len >= 5) else {
            out.skipped.push((index, at as u64, "the keybox ends inside this blob".into()));
            break;
        };
        if let Ok(Blob::Key(k)) = parse_blob(image) {
            match b.add(&k)? {
                Added::Stored if k.blob_type == BlobType::X509 => out.x509 += 1,
                Added::Stored => out.openpgp += 1,
                Added::SameUbid => out.skipped.push((index, at as u64, "a key with the same ubid came first".into())),
                Added::Skipped(why) => out.skipped.push((index, at as u64, why)),
            }
        }
        at += len;
        index += 1;
    }
    b.conn.execute_batch("COMMIT")?;
    out.bytes = b.conn.serialize("main")?.to_vec();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::addrspec;

    #[test]
    fn mail_addresses_as_gnupg_takes_them() {
        assert_eq!(addrspec(b"Greta Weiss <Greta.Weiss@Example.ORG>").as_deref(), Some("greta.weiss@example.org"));
        assert_eq!(addrspec(b"alice@example.org").as_deref(), Some("alice@example.org"));
        assert_eq!(addrspec(b"Alice (no mail)"), None);
        assert_eq!(addrspec(b"Bob <bob>"), None);
    }
}
