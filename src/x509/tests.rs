//! Chain building on purpose-made keyboxes, through all three strategies.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rcgen::DnType;

use crate::generate::cert_blob;
use crate::generate::x509::{issue, AkiStyle, CertSpec, IssuedCert, MailIn};
use crate::io::{BufferSize, MemoryOpener};
use crate::kbx::dump::hex_upper;
use crate::kbx::encode::{encode_header, HeaderSpec};
use crate::lookup::Strategy;
use crate::workload::validate::on_keybox as run;
use crate::x509::TrustList;

const NOW: i64 = 1_800_000_000;
const Y: i64 = 31_557_600;

fn spec(cn: &str, ca: Option<Option<u8>>, aki: AkiStyle) -> CertSpec {
    CertSpec {
        subject: vec![
            (DnType::CountryName, "DE".into()),
            (DnType::OrganizationName, "Test".into()),
            (DnType::CommonName, cn.into()),
        ],
        key: crate::generate::signer::KeyKind::P256,
        ca,
        not_before: NOW - Y,
        not_after: NOW + Y,
        mail: ca.is_none().then(|| (format!("{}@example.org", cn.to_lowercase().replace(' ', ".")), MailIn::AltName)),
        aki,
    }
}

fn ca(cn: &str) -> CertSpec {
    spec(cn, Some(None), AkiStyle::KeyId)
}

fn leaf(cn: &str, aki: AkiStyle) -> CertSpec {
    spec(cn, None, aki)
}

fn keybox(certs: &[&[u8]]) -> Vec<u8> {
    let mut kbx = encode_header(&HeaderSpec { openpgp: false, created_at: 1, last_maintenance: 1 });
    for c in certs {
        kbx.extend_from_slice(c);
    }
    kbx
}

fn blob(c: &IssuedCert) -> Vec<u8> {
    cert_blob(c, 1)
}

/// The blob of `c` with the ephemeral flag set (checksum recomputed).
fn ephemeral_blob(c: &IssuedCert) -> Vec<u8> {
    use sha1::Digest;
    let mut b = blob(c);
    b[6..8].copy_from_slice(&crate::kbx::blob::BLOB_FLAG_EPHEMERAL.to_be_bytes());
    let n = b.len() - 20;
    let sum = sha1::Sha1::digest(&b[..n]);
    b[n..].copy_from_slice(&sum);
    b
}

fn fpr(c: &IssuedCert) -> String {
    use sha1::Digest;
    hex_upper(&sha1::Sha1::digest(&c.der))
}

fn trust(roots: &[&IssuedCert]) -> TrustList {
    let text: String = roots.iter().map(|r| format!("{} S\n", fpr(r))).collect();
    TrustList::parse(&text).unwrap()
}

/// Verdicts (fingerprint, reason or "good") from every strategy; they must agree.
fn verdicts(kbx: &[u8], trust: &TrustList) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for lookup in [Strategy::Gnupg, Strategy::Scan, Strategy::Index] {
        let opener = MemoryOpener::new(kbx, BufferSize::Bytes(4096));
        let mut got = Vec::new();
        let out = run(&opener, lookup, trust, NOW, |l| {
            let v = l.validation.unwrap();
            let fpr = match l.key {
                crate::workload::KeyDetails::X509(c) => c.fingerprint,
                crate::workload::KeyDetails::Openpgp(_) => unreachable!(),
            };
            got.push((fpr, v.reason.unwrap_or("good").to_string()));
        })
        .unwrap();
        assert!(out.is_clean(), "{lookup:?}: {:?}", out.problems);
        all.push(got);
    }
    assert_eq!(all[0], all[1], "gnupg and scan agree");
    assert_eq!(all[0], all[2], "gnupg and index agree");
    all.remove(0)
}

fn verdict_of(v: &[(String, String)], c: &IssuedCert) -> String {
    v.iter()
        .find(|(f, _)| *f == fpr(c))
        .map(|x| x.1.clone())
        .unwrap_or_else(|| panic!("no verdict for {}", c.subject_dn))
}

fn rng() -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(11)
}

#[test]
fn good_chains_with_every_aki_form() {
    let mut r = rng();
    let root = issue(&ca("Root"), None, &mut r).unwrap();
    let int = issue(&spec("Int", Some(Some(0)), AkiStyle::KeyIdIssuerSerial), Some(&root), &mut r).unwrap();
    let a = issue(&leaf("A", AkiStyle::KeyId), Some(&int), &mut r).unwrap();
    let b = issue(&leaf("B", AkiStyle::KeyIdIssuerSerial), Some(&int), &mut r).unwrap();
    let c = issue(&leaf("C", AkiStyle::KeyId), Some(&root), &mut r).unwrap();
    let v = verdicts(&keybox(&[&blob(&a), &blob(&root), &blob(&b), &blob(&int), &blob(&c)]), &trust(&[&root]));
    assert_eq!(v.len(), 5);
    assert!(v.iter().all(|(_, r)| r == "good"), "{v:?}");
}

#[test]
fn an_issuer_kept_only_as_ephemeral_is_found_by_every_strategy() {
    // gpgsm looks again in ephemeral mode when the normal search finds no
    // issuer; the index must hold ephemeral certificates for that, though
    // it does not list them. The issuer comes after its child in the file.
    let mut r = rng();
    let root = issue(&ca("Root"), None, &mut r).unwrap();
    let int = issue(&spec("Int", Some(None), AkiStyle::KeyIdIssuerSerial), Some(&root), &mut r).unwrap();
    let a = issue(&leaf("A", AkiStyle::KeyId), Some(&int), &mut r).unwrap();
    let v = verdicts(&keybox(&[&blob(&a), &blob(&root), &ephemeral_blob(&int)]), &trust(&[&root]));
    assert_eq!(v.len(), 2, "the ephemeral certificate is not listed: {v:?}");
    assert_eq!(verdict_of(&v, &a), "good");
}

#[test]
fn missing_issuer_not_trusted_and_disabled_entries() {
    let mut r = rng();
    let root = issue(&ca("Root"), None, &mut r).unwrap();
    let hidden = issue(&ca("Hidden"), None, &mut r).unwrap();
    let orphan = issue(&leaf("Orphan", AkiStyle::KeyId), Some(&hidden), &mut r).unwrap();
    let a = issue(&leaf("A", AkiStyle::KeyIdIssuerSerial), Some(&root), &mut r).unwrap();
    let kbx = keybox(&[&blob(&root), &blob(&orphan), &blob(&a)]);
    let v = verdicts(&kbx, &trust(&[&root]));
    assert_eq!(verdict_of(&v, &orphan), "Missing issuer certificate");
    assert_eq!(verdict_of(&v, &a), "good");
    let v = verdicts(&kbx, &TrustList::default());
    assert_eq!(verdict_of(&v, &a), "Not trusted");
    assert_eq!(verdict_of(&v, &root), "Not trusted");
    let disabled = TrustList::parse(&format!("!{} S\n{} S\n", fpr(&root), fpr(&root))).unwrap();
    assert_eq!(verdict_of(&verdicts(&kbx, &disabled), &a), "Not trusted");
}

#[test]
fn expired_and_not_yet_valid() {
    let mut r = rng();
    let root = issue(&ca("Root"), None, &mut r).unwrap();
    let mut old = leaf("Old", AkiStyle::KeyId);
    old.not_after = NOW - 10;
    let old = issue(&old, Some(&root), &mut r).unwrap();
    let mut young = leaf("Young", AkiStyle::KeyId);
    young.not_before = NOW + 10;
    let young = issue(&young, Some(&root), &mut r).unwrap();
    let v = verdicts(&keybox(&[&blob(&root), &blob(&old), &blob(&young)]), &trust(&[&root]));
    assert_eq!(verdict_of(&v, &old), "Certificate expired");
    assert_eq!(verdict_of(&v, &young), "Certificate too young");
}

#[test]
fn bad_signature_bad_ca_and_path_length() {
    let mut r = rng();
    let root = issue(&ca("Root"), None, &mut r).unwrap();
    let mut flipped = issue(&leaf("Flipped", AkiStyle::KeyId), Some(&root), &mut r).unwrap();
    let last = flipped.der.len() - 3;
    flipped.der[last] ^= 0x55; // inside the signature value
    let not_ca = issue(&spec("NotCA", None, AkiStyle::KeyId), Some(&root), &mut r).unwrap();
    let below_not_ca = issue(&leaf("Below", AkiStyle::KeyId), Some(&not_ca), &mut r).unwrap();
    let int0 = issue(&spec("Int0", Some(Some(0)), AkiStyle::KeyId), Some(&root), &mut r).unwrap();
    let int1 = issue(&spec("Int1", Some(None), AkiStyle::KeyId), Some(&int0), &mut r).unwrap();
    let deep = issue(&leaf("Deep", AkiStyle::KeyId), Some(&int1), &mut r).unwrap();
    let kbx = keybox(&[
        &blob(&root),
        &blob(&flipped),
        &blob(&not_ca),
        &blob(&below_not_ca),
        &blob(&int0),
        &blob(&int1),
        &blob(&deep),
    ]);
    let v = verdicts(&kbx, &trust(&[&root]));
    // gpgsm reports a signature its issuer's key does not verify as a bad
    // chain (checked against gpgsm 2.2.40 on a keybox with a flipped byte).
    assert_eq!(verdict_of(&v, &flipped), "Bad certificate chain");
    assert_eq!(verdict_of(&v, &below_not_ca), "Bad CA certificate");
    assert_eq!(verdict_of(&v, &int1), "good", "nothing below int1 in its own chain");
    assert_eq!(verdict_of(&v, &deep), "Bad certificate chain", "int0's path length 0 forbids int1 below it");
}

#[test]
fn roots_are_checked_in_gpgsms_order() {
    let mut r = rng();
    let root = issue(&ca("Root"), None, &mut r).unwrap();
    // Self-signed end-entity certificates: no CA flag.
    let selfie = issue(&leaf("Selfie", AkiStyle::KeyId), None, &mut r).unwrap();
    let trusted_selfie = issue(&leaf("Trusted Selfie", AkiStyle::KeyId), None, &mut r).unwrap();
    let relaxed_selfie = issue(&leaf("Relaxed Selfie", AkiStyle::KeyId), None, &mut r).unwrap();
    // An untrusted root whose self-signature is broken, and a leaf below it.
    let mut broken_root = issue(&ca("Broken"), None, &mut r).unwrap();
    let below_broken = issue(&leaf("Below Broken", AkiStyle::KeyId), Some(&broken_root), &mut r).unwrap();
    let last = broken_root.der.len() - 3;
    broken_root.der[last] ^= 0x55;
    // A root not valid yet, trusted or not: too young before anything else.
    let mut young = ca("Young");
    young.not_before = NOW + 10;
    let young = issue(&young, None, &mut r).unwrap();
    // An intermediate not valid yet ends the walk before its issuer is
    // looked up: too young, not a missing issuer.
    let hidden = issue(&ca("Hidden"), None, &mut r).unwrap();
    let mut young_int = spec("Young Int", Some(None), AkiStyle::KeyId);
    young_int.not_before = NOW + 10;
    let young_int = issue(&young_int, Some(&hidden), &mut r).unwrap();
    let kbx = keybox(&[
        &blob(&root),
        &blob(&selfie),
        &blob(&trusted_selfie),
        &blob(&relaxed_selfie),
        &blob(&broken_root),
        &blob(&below_broken),
        &blob(&young),
        &blob(&young_int),
    ]);
    let text = format!("{} S\n{} S\n{} S relax\n", fpr(&root), fpr(&trusted_selfie), fpr(&relaxed_selfie));
    let v = verdicts(&kbx, &TrustList::parse(&text).unwrap());
    assert_eq!(verdict_of(&v, &selfie), "Bad CA certificate");
    assert_eq!(verdict_of(&v, &trusted_selfie), "Bad CA certificate");
    assert_eq!(verdict_of(&v, &relaxed_selfie), "good");
    assert_eq!(verdict_of(&v, &broken_root), "Bad certificate");
    assert_eq!(verdict_of(&v, &below_broken), "Bad certificate chain");
    assert_eq!(verdict_of(&v, &young), "Certificate too young");
    assert_eq!(verdict_of(&v, &young_int), "Certificate too young");
}

#[test]
fn ski_tie_break_prefers_the_valid_newest() {
    let mut r = rng();
    let root = issue(&ca("Root"), None, &mut r).unwrap();
    // Two certificates for the same CA key: an expired old one and a current one.
    let mut key_rng = rng();
    let mut old = spec("Int", Some(None), AkiStyle::KeyId);
    old.not_before = NOW - 5 * Y;
    old.not_after = NOW - Y;
    let old = issue(&old, Some(&root), &mut key_rng.clone()).unwrap();
    let new = issue(&spec("Int", Some(None), AkiStyle::KeyId), Some(&root), &mut key_rng).unwrap();
    let a = issue(&leaf("A", AkiStyle::KeyId), Some(&new), &mut r).unwrap();
    // the expired one comes first in the file
    let v = verdicts(&keybox(&[&blob(&root), &blob(&old), &blob(&new), &blob(&a)]), &trust(&[&root]));
    assert_eq!(verdict_of(&v, &a), "good");
    assert_eq!(verdict_of(&v, &old), "Certificate expired");
}

#[test]
fn loops_are_bad_chains() {
    let mut r = rng();
    let y_rng = ChaCha20Rng::seed_from_u64(99);
    let y_self = issue(&ca("Y"), None, &mut y_rng.clone()).unwrap();
    let x = issue(&spec("X", Some(None), AkiStyle::KeyId), Some(&y_self), &mut r).unwrap();
    let y = issue(&ca("Y"), Some(&x), &mut y_rng.clone()).unwrap();
    let v = verdicts(&keybox(&[&blob(&x), &blob(&y)]), &TrustList::default());
    assert_eq!(verdict_of(&v, &x), "Bad certificate chain");
    assert_eq!(verdict_of(&v, &y), "Bad certificate chain");
}
