use super::*;

/// A database as gpg lays one out: the version record, the hash table
/// (records 1–29), then `keys` trust records (fingerprint bytes all `b`,
/// owner trust `t`), each with one validity record after it.
fn db(keys: &[(u8, u8)]) -> Vec<u8> {
    let mut out = vec![0u8; RECORD_LEN * (1 + HASH_TABLE_RECORDS as usize)];
    out[..5].copy_from_slice(b"\x01gpg\x03");
    (out[5], out[6], out[7], out[8]) = (3, 1, 5, 1);
    out[36..40].copy_from_slice(&1u32.to_be_bytes());
    for n in 1..=HASH_TABLE_RECORDS as usize {
        out[n * RECORD_LEN] = 10;
    }
    for &(b, t) in keys {
        let rec = (out.len() / RECORD_LEN) as u32;
        let mut r = [0u8; RECORD_LEN];
        r[0] = 12;
        r[2..22].copy_from_slice(&[b; 20]);
        r[22] = t;
        r[26..30].copy_from_slice(&(rec + 1).to_be_bytes());
        out.extend_from_slice(&r);
        let mut v = [0u8; RECORD_LEN];
        v[0] = 13;
        v[22] = 5;
        out.extend_from_slice(&v);
        let slot = b as usize;
        let at = (1 + slot / HASH_TABLE_ITEMS) * RECORD_LEN + 2 + 4 * (slot % HASH_TABLE_ITEMS);
        out[at..at + 4].copy_from_slice(&rec.to_be_bytes());
    }
    out
}

#[test]
fn keys_validities_and_ownertrust() {
    let t = read(&db(&[(0x11, 6), (0x22, 0), (0xfe, 4 | 128)])).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert_eq!(t.keys.len(), 3);
    assert_eq!(t.keys[0].validities.len(), 1);
    assert_eq!(t.ownertrust(), vec![([0x11; 20], 6), ([0xfe; 20], 4 | 128)]);
    assert_eq!(t.by_type.iter().find(|(n, _)| *n == "hash table"), Some(&("hash table", 29)));
}

#[test]
fn damage_is_named_with_its_record() {
    // A validity list that loops, a key the table does not lead to, an
    // unknown record type, and half a record at the end.
    let mut bytes = db(&[(0x11, 6), (0x22, 5)]);
    let key = 1 + HASH_TABLE_RECORDS as usize;
    let valid = (key + 1) * RECORD_LEN;
    bytes[valid + 23..valid + 27].copy_from_slice(&((key + 1) as u32).to_be_bytes());
    let slot22 = (1 + 0x22 / HASH_TABLE_ITEMS) * RECORD_LEN + 2 + 4 * (0x22 % HASH_TABLE_ITEMS);
    bytes[slot22..slot22 + 4].copy_from_slice(&0u32.to_be_bytes());
    let mut odd = [0u8; RECORD_LEN];
    odd[0] = 99;
    bytes.extend_from_slice(&odd);
    bytes.extend_from_slice(&[0u8; 7]);
    let t = read(&bytes).unwrap();
    let said: Vec<(u32, String)> = t.damage.iter().map(|d| (d.record, d.what.to_string())).collect();
    assert!(said.iter().any(|(r, w)| *r == key as u32 && w.contains("loops back")), "{said:?}");
    assert!(said.iter().any(|(r, w)| *r == key as u32 + 2 && w.contains("does not find it")), "{said:?}");
    assert!(said.iter().any(|(r, w)| *r == key as u32 + 4 && w.contains("unknown record type 99")), "{said:?}");
    assert!(said.iter().any(|(r, w)| *r == key as u32 + 5 && w.contains("partial record of 7 bytes")), "{said:?}");
    // gpg's export reads up to the unknown record: both keys come before it.
    assert_eq!(t.ownertrust().len(), 2);
}

#[test]
fn a_header_that_is_not_gpgs_stops_it() {
    assert!(matches!(read(&[0u8; 80]), Err(HeaderError::NotVersion { .. })));
    assert_eq!(read(b"\x01gpg").unwrap_err(), HeaderError::Short(4));
}

#[test]
fn validities_as_each_model_shows_them() {
    // Each key's one validity record: name hash all zeros, validity full.
    let t = read(&db(&[(0x11, 6), (0x22, 3 | 128)])).unwrap();
    let (filed, other) = ([0u8; 20], [1u8; 20]);
    let ok = KeyState::default();
    let pgp = Validities::new(Some(&t), Model::of_database(Some(&t)));
    assert_eq!(pgp.model(), Model::Pgp);
    assert_eq!(pgp.user_id(&[0x11; 20], ok, &filed, false, false), Some(Validity::Full));
    assert_eq!(pgp.user_id(&[0x11; 20], ok, &other, false, false), Some(Validity::Unknown));
    assert_eq!(pgp.user_id(&[0x33; 20], ok, &filed, false, false), Some(Validity::Unknown), "no trust record");
    assert_eq!(pgp.key(&[0x22; 20], ok), Some(Validity::Full), "the best of its records");
    let direct = Validities::new(Some(&t), Model::Direct);
    assert_eq!(direct.user_id(&[0x11; 20], ok, &other, false, false), Some(Validity::Ultimate));
    assert_eq!(direct.key(&[0x22; 20], ok), Some(Validity::Never), "the disabled bit is no validity");
    let always = Validities::new(Some(&t), Model::Always);
    assert_eq!(always.user_id(&[0x11; 20], ok, &filed, false, false), Some(Validity::Unknown));
    // Revoked, then expired, before anything stored; in every model.
    let revoked = KeyState { revoked: true, expired: true };
    assert_eq!(pgp.user_id(&[0x11; 20], revoked, &filed, false, false), Some(Validity::Revoked));
    assert_eq!(direct.user_id(&[0x11; 20], ok, &filed, false, true), Some(Validity::Expired));
    assert_eq!(always.key(&[0x11; 20], KeyState { revoked: false, expired: true }), Some(Validity::Expired));
    // Without a database: unknown; tofu: not computed.
    assert_eq!(Validities::new(None, Model::Pgp).key(&[0x11; 20], ok), Some(Validity::Unknown));
    let tofu = Validities::new(Some(&t), Model::from_option("tofu").unwrap());
    assert!(!tofu.computed());
    assert_eq!(tofu.key(&[0x11; 20], ok), None);
    assert_eq!(Model::from_option("auto"), None);
    // No next check scheduled (0): never due.
    assert_eq!(pgp.check_due(i64::MAX), None);
    assert_eq!((Validity::Marginal.column(), Validity::Marginal.letter()), ("[marginal]", 'm'));
}

#[test]
fn keys_are_filed_under_gpgs_20_bytes() {
    let v4: Vec<u8> = (0..20).collect();
    assert_eq!(fpr20(&v4).to_vec(), v4);
    // A v5 fingerprint: bytes 20-31, then its key id (bytes 0-7).
    let v5: Vec<u8> = (0..32).collect();
    let want: Vec<u8> = (20..32).chain(0..8).collect();
    assert_eq!(fpr20(&v5).to_vec(), want);
    // A v3 one (16 bytes): zeros after it.
    let v3 = [7u8; 16];
    assert_eq!(fpr20(&v3)[..16], v3);
    assert_eq!(fpr20(&v3)[16..], [0; 4]);
}
