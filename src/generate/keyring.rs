//! The OpenPGP keys: made, certified by one another and by keys from
//! outside the keybox (a heavy-tailed web), photo ids added to fill the
//! size.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::constants::{NEWEST, OLDEST_KEY, OUTSIDE_SHARE, PHOTO_OVERHEAD, PHOTO_SHARE, SIGNER_POOL};
use super::error::{GenError, Progress};
use super::names;
use super::openpgp::{make_key, BuiltKey, KeySpec};

/// Numbers of certifications made.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Certifications {
    pub(super) total: usize,
    pub(super) outside: usize,
}

/// Keys, and the certifications made. The keys from outside the keybox
/// come from a second stream of `seed`, so that the main stream, and with
/// it everything else in the file, is the same as without them.
pub(super) fn make_keys(
    n: usize,
    seed: u64,
    rng: &mut ChaCha20Rng,
    progress: Progress<'_>,
) -> Result<(Vec<BuiltKey>, Certifications), GenError> {
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        progress("making OpenPGP keys", i, n);
        let uids = match rng.gen_range(0..100) {
            0..=59 => 1,
            60..=84 => 2,
            85..=94 => 3,
            _ => 4,
        };
        keys.push(make_key(&key_spec(rng, i, uids), rng)?);
    }
    // Heavy-tailed certification counts: most keys few, a few hundreds.
    let pool = n.min(SIGNER_POOL);
    let mut outside_rng = ChaCha20Rng::seed_from_u64(seed);
    outside_rng.set_stream(1);
    let mut outside = Vec::with_capacity(pool);
    for j in 0..pool {
        progress("making keys from outside the keybox", j, pool);
        outside.push(make_key(&key_spec(&mut outside_rng, n + j, 1), &mut outside_rng)?);
    }
    let mut made = Certifications::default();
    let mut signers: Vec<usize> = (0..pool).collect();
    for i in 0..n {
        progress("certifying user ids", i, n);
        let u: f64 = rng.gen_range(1e-4..1.0);
        let wanted = ((u.powf(-1.0 / 1.16) - 1.0) * 6.0) as usize;
        let count = wanted.min(pool.saturating_sub(1));
        signers.shuffle(rng);
        for &s in signers.iter().filter(|&&s| s != i).take(count) {
            let stranger = outside_rng.gen_bool(OUTSIDE_SHARE).then(|| outside_rng.gen_range(0..pool));
            let signer_created = stranger.map_or(keys[s].created(), |o| outside[o].created());
            let when = keys[i].created().max(signer_created) + rng.gen_range(86_400..86_400 * 365);
            let uid = if rng.gen_bool(0.6) { 0 } else { rng.gen_range(0..keys[i].user_count()) };
            let (signee, signer) = pair_mut(&mut keys, i, s);
            let signer = stranger.map_or(signer, |o| &outside[o]);
            signee.certify(uid, &signer.primary, when.min(NEWEST))?;
            made.total += 1;
            made.outside += usize::from(stranger.is_some());
        }
    }
    Ok((keys, made))
}

/// A key's creation time, algorithm and `uids` user ids (the `serial`-th person).
fn key_spec(rng: &mut ChaCha20Rng, serial: usize, uids: usize) -> KeySpec {
    KeySpec {
        created: rng.gen_range(OLDEST_KEY..NEWEST - 86_400 * 400),
        rsa: rng.gen_bool(0.08).then(|| rng.gen_range(0..4)),
        user_ids: names::user_ids(rng, serial, uids),
    }
}

/// A mutable and a shared reference to two different keys.
fn pair_mut(keys: &mut [BuiltKey], a: usize, b: usize) -> (&mut BuiltKey, &BuiltKey) {
    if a < b {
        let (lo, hi) = keys.split_at_mut(b);
        (&mut lo[a], &hi[0])
    } else {
        let (lo, hi) = keys.split_at_mut(a);
        (&mut hi[0], &lo[b])
    }
}

/// Give a share of the keys photo ids that together fill `budget` bytes.
pub(super) fn add_photos(
    keys: &mut [BuiltKey],
    budget: u64,
    rng: &mut ChaCha20Rng,
    progress: Progress<'_>,
) -> Result<usize, GenError> {
    let chosen: Vec<usize> = (0..keys.len()).filter(|_| rng.gen_bool(PHOTO_SHARE)).collect();
    let weights: Vec<f64> = chosen.iter().map(|_| (rng.gen_range(-1.2f64..1.2)).exp()).collect();
    let count = chosen.len().min((budget / (2048 + PHOTO_OVERHEAD)) as usize);
    if count == 0 {
        return Ok(0);
    }
    let jpeg_budget = budget - count as u64 * PHOTO_OVERHEAD;
    let sum: f64 = weights[..count].iter().sum();
    for (n, (&k, w)) in chosen.iter().zip(&weights).take(count).enumerate() {
        progress("adding photo ids", n, count);
        let len = ((jpeg_budget as f64 * w / sum) as usize).clamp(2048, 3 * 1024 * 1024);
        keys[k].add_photo(len, rng)?;
    }
    Ok(count)
}
