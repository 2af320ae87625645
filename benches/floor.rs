//! What this machine's hardware allows: the unit costs of the cost model
//! in BENCHMARKS ("Where each second goes").
//!
//! * `read(2)` from the page cache, as a cost per call plus a cost per
//!   byte, at their best: passes over the first 2 MiB of a warm file (the
//!   keybox named by `KBXSCOPE_FLOOR_FILE`, else a 64 MiB temporary file),
//!   small enough to stay in the CPU's caches as a lookup's repeated scans
//!   of a keybox's start do, with 1 MiB reads (the bytes) and with 8 KiB
//!   reads (the rest is the calls). How a file sits in the page cache
//!   changes both, so the cost model measures a fresh copy of the keybox
//!   it models;
//! * `lseek(2)`, and an open + `fstat(2)` + close of that file;
//! * one signature verification per algorithm kbxscope meets, with the
//!   fastest well-kept crate for it (each candidate is measured; the table
//!   marks the fastest), on one core and on both cores at once.
//!
//! `cargo bench --bench floor` prints a table; `-- --json` one JSON object
//! (what `benches/cost-model.sh` reads). A small harness of its own, like
//! `overhead`: each figure is the median of 7 samples of at least 50 ms.

use std::fs::File;
use std::hint::black_box;
use std::io::{Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self as aws, KeyPair};
use rsa::pkcs1::EncodeRsaPublicKey;
use rsa::signature::{SignatureEncoding, Signer, Verifier};

const SAMPLES: usize = 7;
const SAMPLE_TIME: Duration = Duration::from_millis(50);

/// Median seconds per iteration of `f` (which runs `batch` iterations).
fn per_op(batch: u64, mut f: impl FnMut()) -> f64 {
    f(); // warm-up
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        if t.elapsed() >= SAMPLE_TIME {
            break;
        }
        iters *= 2;
    }
    let mut samples: Vec<f64> = (0..SAMPLES)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() / (iters * batch) as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[SAMPLES / 2]
}

/// Seconds per operation when every core runs `f` at once (throughput).
fn per_op_all_cores(f: impl Fn() + Sync) -> f64 {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let one = per_op(1, &f);
    let n = ((0.3 / one) as u64).max(20);
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..cores {
            s.spawn(|| {
                for _ in 0..n {
                    f();
                }
            });
        }
    });
    t.elapsed().as_secs_f64() / (n * cores as u64) as f64
}

/// The system-call and copy costs, on a warm file.
fn io_costs() -> Vec<(&'static str, f64)> {
    let mut tmp = None;
    let path = match std::env::var_os("KBXSCOPE_FLOOR_FILE") {
        Some(p) => std::path::PathBuf::from(p),
        None => {
            let mut t = tempfile::NamedTempFile::new().expect("temp file");
            let chunk = vec![0x5au8; 1 << 20];
            for _ in 0..64 {
                t.write_all(&chunk).expect("write temp file");
            }
            t.flush().expect("flush");
            tmp.insert(t).path().to_path_buf()
        }
    };
    let mut f = File::open(&path).expect("open the file");
    let size = f.metadata().expect("fstat").len().min(2 << 20);
    let mut big = vec![0u8; 1 << 20];
    let whole = |f: &mut File, buf: &mut [u8]| {
        f.seek(SeekFrom::Start(0)).expect("seek");
        let mut at = 0;
        while at < size {
            let n = f.read(buf).expect("read");
            if n == 0 {
                break;
            }
            at += n as u64;
        }
    };
    whole(&mut f, &mut big); // into the page cache
    let per_byte = per_op(size, || whole(&mut f, &mut big));
    let mut small = vec![0u8; 8192];
    let calls = size.div_ceil(8192);
    let pass_8k = per_op(1, || whole(&mut f, &mut small));
    let read_8k = pass_8k / calls as f64;
    let per_call = (pass_8k - size as f64 * per_byte) / calls as f64;
    let seek = per_op(1, || {
        black_box(f.seek(SeekFrom::Start(4096)).expect("seek"));
    });
    let open = per_op(1, || {
        let f = File::open(&path).expect("open");
        black_box(f.metadata().expect("fstat").len());
    });
    drop(tmp);
    vec![
        ("copy_ns_per_byte", per_byte * 1e9),
        ("read_8k_ns", read_8k * 1e9),
        ("read_call_ns", per_call.max(0.0) * 1e9),
        ("lseek_ns", seek * 1e9),
        ("open_fstat_close_ns", open * 1e9),
    ]
}

/// One candidate: its name, the crate, and a verification to repeat.
struct Candidate {
    class: &'static str,
    how: &'static str,
    verify: Box<dyn Fn() + Sync>,
}

fn rsa_candidates(class: &'static str, key: usize) -> Vec<Candidate> {
    let private = kbxscope::generate::signer::rsa_key(key);
    let signer = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(private.clone());
    let msg = b"a certification's hashed data";
    let sig = signer.sign(msg).to_vec();
    let der = private.to_public_key().to_pkcs1_der().expect("pkcs1").as_bytes().to_vec();
    let (der2, sig2) = (der.clone(), sig.clone());
    let verifying = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(private.to_public_key());
    let rsa_sig = rsa::pkcs1v15::Signature::try_from(sig.as_slice()).expect("signature");
    vec![
        Candidate {
            class,
            how: "aws-lc-rs",
            verify: Box::new(move || {
                aws::UnparsedPublicKey::new(&aws::RSA_PKCS1_2048_8192_SHA256, &der2)
                    .verify(msg, &sig2)
                    .expect("verifies");
            }),
        },
        Candidate {
            class,
            how: "rsa (RustCrypto)",
            verify: Box::new(move || verifying.verify(msg, &rsa_sig).expect("verifies")),
        },
    ]
}

fn ecdsa_candidates() -> Vec<Candidate> {
    let rng = SystemRandom::new();
    let msg = b"a certificate's to-be-signed bytes";
    let mut out = Vec::new();
    for (class, sign_alg, verify_alg) in [
        ("p256", &aws::ECDSA_P256_SHA256_ASN1_SIGNING, &aws::ECDSA_P256_SHA256_ASN1),
        ("p384", &aws::ECDSA_P384_SHA384_ASN1_SIGNING, &aws::ECDSA_P384_SHA384_ASN1),
    ] {
        let pkcs8 = aws::EcdsaKeyPair::generate_pkcs8(sign_alg, &rng).expect("key");
        let pair = aws::EcdsaKeyPair::from_pkcs8(sign_alg, pkcs8.as_ref()).expect("key");
        let sig = pair.sign(&rng, msg).expect("sign").as_ref().to_vec();
        let public = pair.public_key().as_ref().to_vec();
        let (p2, s2) = (public.clone(), sig.clone());
        out.push(Candidate {
            class,
            how: "aws-lc-rs",
            verify: Box::new(move || {
                aws::UnparsedPublicKey::new(verify_alg, &p2).verify(msg, &s2).expect("verifies");
            }),
        });
        let rust: Box<dyn Fn() + Sync> = if class == "p256" {
            let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&public).expect("point");
            let sig = p256::ecdsa::Signature::from_der(&sig).expect("der");
            Box::new(move || key.verify(msg, &sig).expect("verifies"))
        } else {
            let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(&public).expect("point");
            let sig = p384::ecdsa::Signature::from_der(&sig).expect("der");
            Box::new(move || key.verify(msg, &sig).expect("verifies"))
        };
        out.push(Candidate { class, how: "p256/p384 (RustCrypto)", verify: rust });
    }
    out
}

fn ed25519_candidates() -> Vec<Candidate> {
    let msg = [7u8; 32]; // gpg signs a digest
    let dalek = ed25519_dalek::SigningKey::from_bytes(&[42u8; 32]);
    let sig = ed25519_dalek::Signer::sign(&dalek, &msg);
    let public = dalek.verifying_key();
    let aws_pair = aws::Ed25519KeyPair::from_seed_unchecked(&[42u8; 32]).expect("seed");
    let aws_sig = aws_pair.sign(&msg).as_ref().to_vec();
    let aws_public = aws_pair.public_key().as_ref().to_vec();
    let public_bytes = public.to_bytes();
    vec![
        Candidate {
            class: "ed25519",
            how: "ed25519-dalek (as the pgp crate calls it)",
            verify: Box::new(move || {
                let key = ed25519_dalek::VerifyingKey::from_bytes(&public_bytes).expect("point");
                ed25519_dalek::Verifier::verify(&key, &msg, &sig).expect("verifies");
            }),
        },
        Candidate {
            class: "ed25519",
            how: "ed25519-dalek, key decoded once",
            verify: Box::new(move || ed25519_dalek::Verifier::verify(&public, &msg, &sig).expect("verifies")),
        },
        Candidate {
            class: "ed25519",
            how: "aws-lc-rs",
            verify: Box::new(move || {
                aws::UnparsedPublicKey::new(&aws::ED25519, &aws_public).verify(&msg, &aws_sig).expect("verifies");
            }),
        },
    ]
}

fn main() {
    let json = std::env::args().any(|a| a == "--json");
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let io = io_costs();
    let mut candidates = rsa_candidates("rsa-2048", 0);
    candidates.extend(rsa_candidates("rsa-3072", 2));
    candidates.extend(rsa_candidates("rsa-4096", 4));
    candidates.extend(ecdsa_candidates());
    candidates.extend(ed25519_candidates());
    let measured: Vec<(&Candidate, f64, f64)> =
        candidates.iter().map(|c| (c, per_op(1, &c.verify), per_op_all_cores(&c.verify))).collect();
    let best = |class: &str| {
        measured.iter().filter(|m| m.0.class == class).min_by(|a, b| a.2.total_cmp(&b.2)).map(|m| (m.0.how, m.1, m.2))
    };
    let classes = ["rsa-2048", "rsa-3072", "rsa-4096", "p256", "p384", "ed25519"];
    if json {
        let mut o = serde_json::Map::new();
        o.insert("cores".into(), cores.into());
        for (k, v) in &io {
            o.insert((*k).into(), (*v).into());
        }
        let mut v = serde_json::Map::new();
        for class in classes {
            if let Some((how, one, all)) = best(class) {
                v.insert(
                    class.into(),
                    serde_json::json!({"crate": how, "us_one_core": one * 1e6, "us_all_cores": all * 1e6}),
                );
            }
        }
        o.insert("verify".into(), v.into());
        println!("{}", serde_json::Value::Object(o));
        return;
    }
    println!("system calls and copies (warm page cache):");
    for (k, v) in &io {
        println!("  {k:<22} {v:>10.3}");
    }
    println!("  => copy rate {:.2} GB/s", 1.0 / io[0].1);
    println!("signature verifications ({cores} cores):");
    println!("  {:<9} {:<42} {:>12} {:>22}", "class", "crate", "µs, 1 core", "µs each, all cores");
    for (c, one, all) in &measured {
        let mark = if best(c.class).is_some_and(|b| b.0 == c.how) { " (fastest)" } else { "" };
        println!("  {:<9} {:<42} {:>12.1} {:>12.1}{mark}", c.class, c.how, one * 1e6, all * 1e6);
    }
}
