//! `dump` of version-2 blobs (GnuPG 2.3+: v5 keys, 32-byte fingerprint
//! slots) and of signature expiry values, byte for byte against a live
//! kbxutil; `list` shows the v5 key.

use std::process::Command;

use kbxscope::kbx::encode::{encode_header, encode_key_blob, HeaderSpec, KeyBlobSpec, UidSource};
use kbxscope::kbx::BlobType;
use sha1::Digest;

use crate::common::{run, stderr, stdout};

/// A new-format OpenPGP packet.
fn pkt(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![0xC0 | tag, 0xFF];
    v.extend((body.len() as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// A v5 key packet body: Ed448 (algo 28) or X448 (26).
fn v5_key(created: u32, algo: u8, fill: u8) -> Vec<u8> {
    let len = if algo == 28 { 57 } else { 56 };
    let mut b = vec![5u8];
    b.extend(created.to_be_bytes());
    b.push(algo);
    b.extend((len as u32).to_be_bytes());
    b.extend(vec![fill; len]);
    b
}

fn v5_fpr(body: &[u8]) -> Vec<u8> {
    let mut h = sha2::Sha256::new();
    h.update([0x9A]);
    h.update((body.len() as u32).to_be_bytes());
    h.update(body);
    h.finalize().to_vec()
}

/// A keybox with a v2 blob (v5 Ed448 key, X448 subkey, one 20-byte slot)
/// and a v1 blob whose signature entries hold every kind of expiry.
fn keybox() -> (Vec<u8>, String) {
    let primary = v5_key(1_700_000_000, 28, 0x42);
    let sub = v5_key(1_700_000_100, 26, 0x24);
    let uid = b"Ed Four-Four-Eight <ed448@example.org>";
    let uid_pkt = pkt(13, uid);
    let block = [pkt(6, &primary), uid_pkt.clone(), pkt(14, &sub)].concat();
    let uid_at = pkt(6, &primary).len() as u32 + 6;
    let v2 = encode_key_blob(&KeyBlobSpec {
        blob_type: BlobType::OpenPgp,
        ephemeral: false,
        fingerprints: vec![v5_fpr(&primary), v5_fpr(&sub), vec![0xAB; 20]],
        serial: Vec::new(),
        uids: vec![UidSource::InData { offset: uid_at, length: uid.len() as u32 }],
        sig_count: 2,
        validity: 0,
        created_at: 1_700_000_200,
        data: block.clone(),
    });
    let mut v1 = encode_key_blob(&KeyBlobSpec {
        blob_type: BlobType::OpenPgp,
        ephemeral: false,
        fingerprints: vec![vec![0x11; 20]],
        serial: Vec::new(),
        uids: vec![UidSource::InData { offset: uid_at, length: uid.len() as u32 }],
        sig_count: 6,
        validity: 0,
        created_at: 1_700_000_300,
        data: block,
    });
    // Signature table: after the key table (20 + 28), serial (2), uid
    // count and size (4) and one uid entry (12), count and size (4).
    let sigs = 20 + 28 + 2 + 4 + 12 + 4;
    for (i, v) in [0u32, 1, 2, 0x0FFF_FFFF, 0x6000_0000, 0xFFFF_FFFF].iter().enumerate() {
        v1[sigs + 4 * i..sigs + 4 * i + 4].copy_from_slice(&v.to_be_bytes());
    }
    let n = v1.len();
    let sum = sha1::Sha1::digest(&v1[..n - 20]);
    v1[n - 20..].copy_from_slice(&sum);
    let header =
        encode_header(&HeaderSpec { openpgp: true, created_at: 1_700_000_000, last_maintenance: 1_700_000_000 });
    ([header, v2, v1].concat(), kbxscope::kbx::dump::hex_upper(&v5_fpr(&primary)))
}

fn version_2_blobs_and_expiries_dump_like_kbxutil() {
    let (bytes, fpr) = keybox();
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("v2.kbx");
    std::fs::write(&kbx, &bytes).unwrap();
    let ours = run(["dump", kbx.to_str().unwrap()]);
    assert!(ours.status.success(), "{}", stderr(&ours));
    let text = stdout(&ours);
    assert!(text.contains(&format!("Key-Fpr[0]: {fpr}\nKey-Flags[0]: 0080\n")), "{text}");
    assert!(text.contains(&format!("Key-Fpr[2]: {}\nKey-Flags[2]: 0000\n", "AB".repeat(20))), "{text}");
    assert!(text.contains("Sig-Expire[5]: [good - expires at 4294967295]"), "{text}");
    let theirs = Command::new("kbxutil").arg(&kbx).output().unwrap();
    assert_eq!(text, String::from_utf8_lossy(&theirs.stdout));
    // list shows the v5 key with its 32-byte fingerprint and key id.
    let o = run(["list", "--json", kbx.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(first["fingerprint"], fpr.as_str());
    assert_eq!(first["key_id"], &fpr[..16]);
    assert_eq!(first["algorithm"], "ed448");
    assert_eq!(first["subkeys"][0]["algorithm"], "cv448");
    assert_eq!(first["user_ids"][0], "Ed Four-Four-Eight <ed448@example.org>");
    // find by the v5 fingerprint and by the mail.
    for pattern in [fpr.as_str(), "<ed448@example.org>"] {
        let o = run(["find", "--json", kbx.to_str().unwrap(), pattern]);
        assert!(o.status.success(), "{pattern}: {}", stderr(&o));
        assert_eq!(stdout(&o).lines().count(), 1, "{pattern}");
    }
}

crate::tests![
    version_2_blobs_and_expiries_dump_like_kbxutil needs ["kbxutil"],
];
