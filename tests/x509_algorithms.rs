//! Certificate signature algorithms against a live gpgsm: a trusted RSA
//! root issues one CA per algorithm, each CA signs a leaf with its
//! algorithm; gpgsm imports them (leaves first: an issuer that is not
//! there yet is not checked at import) and lists them with validation;
//! kbxscope must print the same bracketed notes for every certificate.

use std::path::Path;
use std::process::Command;

use rsa::pkcs8::EncodePublicKey;
use rsa::{Pkcs1v15Sign, Pss};
use sha2::{Digest, Sha256, Sha384, Sha512};

use crate::common::{gpgsm_listing, gpgsm_text_notes, run, stderr, stdout, validation_args};

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    let n = content.len();
    if n < 0x80 {
        v.push(n as u8);
    } else if n < 0x100 {
        v.extend([0x81, n as u8]);
    } else {
        v.extend([0x82, (n >> 8) as u8, n as u8]);
    }
    v.extend_from_slice(content);
    v
}

fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

fn oid(dotted: &str) -> Vec<u8> {
    let arcs: Vec<u64> = dotted.split('.').map(|a| a.parse().unwrap()).collect();
    let mut body = vec![(arcs[0] * 40 + arcs[1]) as u8];
    for &a in &arcs[2..] {
        let mut bytes = vec![(a & 0x7f) as u8];
        let mut rest = a >> 7;
        while rest > 0 {
            bytes.push((rest & 0x7f) as u8 | 0x80);
            rest >>= 7;
        }
        bytes.reverse();
        body.extend(bytes);
    }
    tlv(0x06, &body)
}

fn uint(bytes: &[u8]) -> Vec<u8> {
    let b = &bytes[bytes.iter().position(|&x| x != 0).unwrap_or(bytes.len() - 1)..];
    let mut v = if b[0] & 0x80 != 0 { vec![0] } else { vec![] };
    v.extend_from_slice(b);
    tlv(0x02, &v)
}

fn bits(content: &[u8]) -> Vec<u8> {
    tlv(0x03, &[&[0u8][..], content].concat())
}

fn name(cn: &str) -> Vec<u8> {
    seq(&[&tlv(0x31, &seq(&[&oid("2.5.4.3"), &tlv(0x0c, cn.as_bytes())]))])
}

/// A key that signs: RSA, or ECDSA on a curve (its OID, the secret scalar).
enum Key {
    Rsa(Box<rsa::RsaPrivateKey>),
    Ec(&'static str, Vec<u8>),
    /// An Ed25519 public key with no secret (gpgsm 2.2.40 refuses the
    /// algorithm whatever the signature).
    Ed25519,
}

impl Key {
    fn spki(&self) -> Vec<u8> {
        match self {
            Key::Rsa(k) => k.to_public_key().to_public_key_der().unwrap().as_bytes().to_vec(),
            Key::Ec(curve, d) => {
                seq(&[&seq(&[&oid("1.2.840.10045.2.1"), &oid(curve)]), &bits(&ec_ops(curve, d, &[]).0)])
            }
            Key::Ed25519 => seq(&[&seq(&[&oid("1.3.101.112")]), &bits(&[0x11; 32])]),
        }
    }
}

/// How a case signs: (algorithm identifier DER, signature over tbs).
#[derive(Clone, Copy)]
enum How {
    Pkcs1(&'static str),
    Pss(&'static str, usize),
    Ecdsa(&'static str),
    Raw(&'static str),
}

fn hash_of(name: &str, data: &[u8]) -> Vec<u8> {
    use kbxscope::crypto::Hash;
    let h = match name {
        "md5" => Hash::Md5,
        "sha1" => Hash::Sha1,
        "rmd160" => Hash::Ripemd160,
        "sha224" => Hash::Sha224,
        "sha256" => Hash::Sha256,
        "sha384" => Hash::Sha384,
        "sha512" => Hash::Sha512,
        _ => unreachable!(),
    };
    h.digest(data)
}

fn sign(key: &Key, how: How, tbs: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let null = [0x05u8, 0x00];
    match (key, how) {
        (Key::Rsa(k), How::Pkcs1(h)) => {
            let (alg, scheme) = match h {
                "md5" => ("1.2.840.113549.1.1.4", Pkcs1v15Sign::new::<md5::Md5>()),
                "sha1" => ("1.2.840.113549.1.1.5", Pkcs1v15Sign::new::<sha1::Sha1>()),
                "rmd160" => ("1.3.36.3.3.1.2", Pkcs1v15Sign::new::<ripemd::Ripemd160>()),
                "sha224" => ("1.2.840.113549.1.1.14", Pkcs1v15Sign::new::<sha2::Sha224>()),
                "sha256" => ("1.2.840.113549.1.1.11", Pkcs1v15Sign::new::<Sha256>()),
                "sha384" => ("1.2.840.113549.1.1.12", Pkcs1v15Sign::new::<Sha384>()),
                _ => ("1.2.840.113549.1.1.13", Pkcs1v15Sign::new::<Sha512>()),
            };
            (seq(&[&oid(alg), &null]), k.sign(scheme, &hash_of(h, tbs)).unwrap())
        }
        (Key::Rsa(k), How::Pss(h, salt)) => {
            let (hoid, len) = match h {
                "sha256" => ("2.16.840.1.101.3.4.2.1", 32),
                "sha384" => ("2.16.840.1.101.3.4.2.2", 48),
                _ => ("2.16.840.1.101.3.4.2.3", 64),
            };
            let halg = seq(&[&oid(hoid), &null]);
            let params = seq(&[
                &tlv(0xa0, &halg),
                &tlv(0xa1, &seq(&[&oid("1.2.840.113549.1.1.8"), &halg])),
                &tlv(0xa2, &uint(&[salt as u8])),
            ]);
            let mut rng = rand::rngs::OsRng;
            let digest = hash_of(h, tbs);
            assert_eq!(digest.len(), len);
            let sig = match h {
                "sha256" => k.sign_with_rng(&mut rng, Pss::new_with_salt::<Sha256>(salt), &digest),
                "sha384" => k.sign_with_rng(&mut rng, Pss::new_with_salt::<Sha384>(salt), &digest),
                _ => k.sign_with_rng(&mut rng, Pss::new_with_salt::<Sha512>(salt), &digest),
            };
            (seq(&[&oid("1.2.840.113549.1.1.10"), &params]), sig.unwrap())
        }
        (Key::Ec(curve, d), How::Ecdsa(h)) => {
            let alg = match h {
                "sha1" => "1.2.840.10045.4.1",
                "sha224" => "1.2.840.10045.4.3.1",
                "sha256" => "1.2.840.10045.4.3.2",
                "sha384" => "1.2.840.10045.4.3.3",
                _ => "1.2.840.10045.4.3.4",
            };
            let (_, rs) = ec_ops(curve, d, &hash_of(h, tbs));
            let (r, s) = rs.split_at(rs.len() / 2);
            (seq(&[&oid(alg)]), seq(&[&uint(r), &uint(s)]))
        }
        (_, How::Raw(alg)) => (seq(&[&oid(alg)]), vec![0x22; 64]),
        _ => unreachable!("case mixes key and scheme"),
    }
}

/// A certificate: subject `cn` with `key`'s public key, issued by
/// `issuer` (name, key, how it signs).
fn cert(serial: u8, cn: &str, subject_key: &[u8], ca: bool, issuer: &str, key: &Key, how: How) -> Vec<u8> {
    let validity = seq(&[&tlv(0x17, b"250101000000Z"), &tlv(0x18, b"20491231235959Z")]);
    let bc = if ca { seq(&[&tlv(0x01, &[0xff])]) } else { seq(&[]) };
    let ext = tlv(0xa3, &seq(&[&seq(&[&oid("2.5.29.19"), &tlv(0x01, &[0xff]), &tlv(0x04, &bc)])]));
    let (alg, _) = sign(key, how, b"");
    let tbs =
        seq(&[&tlv(0xa0, &uint(&[2])), &uint(&[serial]), &alg, &name(issuer), &validity, &name(cn), subject_key, &ext]);
    let (alg, sig) = sign(key, how, &tbs);
    seq(&[&tbs, &alg, &bits(&sig)])
}

/// ECDSA with one RustCrypto curve: the SEC1 public key of the secret
/// scalar `$d`, and the signature `r‖s` over `$digest` (cut or padded to
/// the order's length, as verification takes it).
macro_rules! ec_with {
    ($ecdsa:path, $curve:ty, $d:expr, $digest:expr) => {{
        use ecdsa::signature::hazmat::PrehashSigner;
        use $ecdsa as ecdsa;
        let key = ecdsa::SigningKey::<$curve>::from_slice($d).unwrap();
        let size = $d.len();
        let mut prehash = vec![0u8; size.saturating_sub($digest.len())];
        prehash.extend_from_slice(&$digest[..$digest.len().min(size)]);
        let sig: ecdsa::Signature<$curve> = key.sign_prehash(&prehash).unwrap();
        (key.verifying_key().to_sec1_bytes().to_vec(), sig.to_bytes().to_vec())
    }};
}

/// ECDSA on P-192, whose crate verifies but does not sign: the textbook
/// formula over the crate's own scalar and point arithmetic, with a fixed
/// nonce (a test certificate, not a secret).
fn p192_sign(d: &[u8], digest: &[u8]) -> (Vec<u8>, Vec<u8>) {
    use p192::elliptic_curve::bigint::U192;
    use p192::elliptic_curve::ops::Reduce;
    use p192::elliptic_curve::point::AffineCoordinates;
    use p192::elliptic_curve::sec1::ToEncodedPoint;
    use p192::elliptic_curve::PrimeField;
    use p192::{FieldBytes, ProjectivePoint, Scalar};
    let scalar = |b: &[u8]| {
        let mut v = vec![0u8; 24usize.saturating_sub(b.len())];
        v.extend_from_slice(&b[..b.len().min(24)]);
        <Scalar as Reduce<U192>>::reduce_bytes(FieldBytes::from_slice(&v))
    };
    let (d, z, k) = (scalar(d), scalar(digest), scalar(&Sha256::digest(digest)));
    let public = (ProjectivePoint::GENERATOR * d).to_affine().to_encoded_point(false).as_bytes().to_vec();
    let r = <Scalar as Reduce<U192>>::reduce_bytes(&(ProjectivePoint::GENERATOR * k).to_affine().x());
    let s = k.invert().unwrap() * (z + r * d);
    (public, [r.to_repr().to_vec(), s.to_repr().to_vec()].concat())
}

/// (public key, signature `r‖s` over `digest`) on the curve `oid`.
fn ec_ops(oid: &str, d: &[u8], digest: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let digest = if digest.is_empty() { &[1u8][..] } else { digest };
    match oid {
        "1.2.840.10045.3.1.1" => p192_sign(d, digest),
        "1.3.132.0.33" => ec_with!(ecdsa_016, p224::NistP224, d, digest),
        "1.2.840.10045.3.1.7" => ec_with!(ecdsa_016, p256::NistP256, d, digest),
        "1.3.132.0.34" => ec_with!(ecdsa_016, p384::NistP384, d, digest),
        "1.3.132.0.10" => ec_with!(ecdsa_016, k256::Secp256k1, d, digest),
        "1.3.36.3.3.2.8.1.1.7" => ec_with!(ecdsa_017, bp256::BrainpoolP256r1, d, digest),
        "1.3.36.3.3.2.8.1.1.11" => ec_with!(ecdsa_017, bp384::BrainpoolP384r1, d, digest),
        "1.3.36.3.3.2.8.1.1.13" => ec_with!(ecdsa_017, kbxscope::crypto::bp512::BrainpoolP512r1, d, digest),
        _ => unreachable!("no RustCrypto curve {oid}"),
    }
}

/// A key on curve `oid` of `size` bytes: a fixed secret scalar.
fn ec(oid: &'static str, size: usize, seed: u8) -> Key {
    let mut d = vec![0u8];
    d.resize(size, seed);
    Key::Ec(oid, d)
}

/// (name, the CA's key, how the CA signs its leaf).
fn cases() -> Vec<(&'static str, Key, How)> {
    let rsa = |i| Key::Rsa(Box::new(kbxscope::generate::signer::rsa_key(i)));
    vec![
        ("rsa-md5", rsa(1), How::Pkcs1("md5")),
        ("rsa-sha1", rsa(1), How::Pkcs1("sha1")),
        ("rsa-rmd160", rsa(1), How::Pkcs1("rmd160")),
        ("rsa-sha224", rsa(1), How::Pkcs1("sha224")),
        ("rsa-sha256", rsa(1), How::Pkcs1("sha256")),
        ("rsa-sha384", rsa(1), How::Pkcs1("sha384")),
        ("rsa-sha512", rsa(1), How::Pkcs1("sha512")),
        ("pss-sha256", rsa(2), How::Pss("sha256", 32)),
        ("pss-sha384", rsa(2), How::Pss("sha384", 48)),
        ("pss-sha512", rsa(2), How::Pss("sha512", 64)),
        ("pss-sha256-salt20", rsa(2), How::Pss("sha256", 20)),
        ("p192-sha256", ec("1.2.840.10045.3.1.1", 24, 3), How::Ecdsa("sha256")),
        ("p224-sha224", ec("1.3.132.0.33", 28, 4), How::Ecdsa("sha224")),
        ("p256-sha256", ec("1.2.840.10045.3.1.7", 32, 5), How::Ecdsa("sha256")),
        ("p256-sha512", ec("1.2.840.10045.3.1.7", 32, 5), How::Ecdsa("sha512")),
        ("p384-sha384", ec("1.3.132.0.34", 48, 6), How::Ecdsa("sha384")),
        ("p384-sha1", ec("1.3.132.0.34", 48, 6), How::Ecdsa("sha1")),
        ("secp256k1-sha256", ec("1.3.132.0.10", 32, 7), How::Ecdsa("sha256")),
        ("bp256-sha256", ec("1.3.36.3.3.2.8.1.1.7", 32, 8), How::Ecdsa("sha256")),
        ("bp384-sha384", ec("1.3.36.3.3.2.8.1.1.11", 48, 9), How::Ecdsa("sha384")),
        ("bp512-sha512", ec("1.3.36.3.3.2.8.1.1.13", 64, 10), How::Ecdsa("sha512")),
        ("bp512-sha256", ec("1.3.36.3.3.2.8.1.1.13", 64, 10), How::Ecdsa("sha256")),
        ("ed25519", Key::Ed25519, How::Raw("1.3.101.112")),
    ]
}

/// What gpgsm 2.2.40 verifies (the others it reports as bad signatures).
const VERIFIED: [&str; 20] = [
    "rsa-md5",
    "rsa-sha1",
    "rsa-rmd160",
    "rsa-sha256",
    "rsa-sha384",
    "rsa-sha512",
    "pss-sha256",
    "pss-sha384",
    "pss-sha512",
    "p192-sha256",
    "p224-sha224",
    "p256-sha256",
    "p256-sha512",
    "p384-sha384",
    "p384-sha1",
    "secp256k1-sha256",
    "bp256-sha256",
    "bp384-sha384",
    "bp512-sha512",
    "bp512-sha256",
];

fn import(home: &Path, ders: &[Vec<u8>]) {
    for der in ders {
        let f = home.join("import.der");
        std::fs::write(&f, der).unwrap();
        let o = Command::new("gpgsm")
            .args([
                "--homedir",
                home.to_str().unwrap(),
                "--batch",
                "--disable-dirmngr",
                "--import",
                f.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "import: {}", String::from_utf8_lossy(&o.stderr));
    }
}

fn every_signature_algorithm_gets_gpgsms_verdict() {
    let root_key = Key::Rsa(Box::new(kbxscope::generate::signer::rsa_key(0)));
    let root_how = How::Pkcs1("sha256");
    let root = cert(1, "Algorithm Root", &root_key.spki(), true, "Algorithm Root", &root_key, root_how);
    let leaf_key = ec("1.2.840.10045.3.1.7", 32, 11).spki();
    let (mut cas, mut leaves) = (Vec::new(), Vec::new());
    for (i, (case, key, how)) in cases().into_iter().enumerate() {
        let ca_name = format!("CA {case}");
        cas.push(cert(10 + i as u8, &ca_name, &key.spki(), true, "Algorithm Root", &root_key, root_how));
        leaves.push(cert(100 + i as u8, &format!("Leaf {case}"), &leaf_key, false, &ca_name, &key, how));
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    import(&home, &leaves);
    import(&home, &cas);
    import(&home, std::slice::from_ref(&root));
    let fpr = kbxscope::kbx::dump::hex_upper(&sha1::Sha1::digest(&root));
    let trust = home.join("trustlist.txt");
    std::fs::write(&trust, format!("{fpr} S\n")).unwrap();
    let listing = gpgsm_listing(&home);
    let theirs = gpgsm_text_notes(&listing);
    assert_eq!(theirs.len(), 2 * cases().len() + 1, "{listing}");
    // gpgsm verifies what we say it does, and refuses the rest.
    for (case, _, _) in cases() {
        let block = listing.split("Subject: /CN=").find(|b| b.starts_with(&format!("Leaf {case}\n"))).unwrap();
        let good = block.contains("[certificate is good]");
        assert_eq!(good, VERIFIED.contains(&case), "gpgsm on {case}: {block}");
    }
    let kbx = home.join("pubring.kbx");
    let o = run(validation_args(&[], &kbx, &trust));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(gpgsm_text_notes(&stdout(&o)), theirs);
}

fn generated_signatures_verify_only_with_the_right_key_and_data() {
    use kbxscope::x509::verify_der;
    for (case, key, how) in cases() {
        let tbs = b"to be signed";
        let (alg, sig) = sign(&key, how, tbs);
        let want = VERIFIED.contains(&case);
        assert_eq!(verify_der(&key.spki(), &alg, &sig, tbs), want, "{case}");
        assert!(!verify_der(&key.spki(), &alg, &sig, b"other data"), "{case}");
    }
}

crate::tests![
    every_signature_algorithm_gets_gpgsms_verdict needs ["gpgsm"],
    generated_signatures_verify_only_with_the_right_key_and_data,
];
