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
