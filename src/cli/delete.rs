//! `delete FINGERPRINT…`: gpg's deletion replayed on a private copy.

use std::process::ExitCode;

use anyhow::{bail, Result};

use super::args::DeleteArgs;
use super::import::{on_private_copy, Onto};
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::io::IoTally;
use kbxscope::workload::delete::{self, KeyDeleted};
use kbxscope::workload::{delete_x509, keyboxd_x509};

/// `delete`.
pub(super) fn run(a: &DeleteArgs, version: GnupgVersion, now: i64, tally: &IoTally) -> Result<ExitCode> {
    let fingerprints = a.fingerprints.iter().map(|f| fingerprint(f)).collect::<Result<Vec<_>>>()?;
    let onto = Onto::resolve(Some(&a.onto), version)?;
    if a.gpgsm {
        return run_gpgsm(a, &fingerprints, &onto, version, now, tally);
    }
    let now = u32::try_from(now.max(0)).unwrap_or(u32::MAX);
    // gpg's words for a key not there: the keybox's error, or keyboxd's.
    let why = if matches!(onto, Onto::Keyboxd(_)) { "Not found" } else { "No public key" };
    let line = |k: &KeyDeleted| match k.deleted {
        true => format!("kbxscope: key {} deleted", k.fingerprint),
        false => format!("kbxscope: key \"{}\" not found: {why}", k.fingerprint),
    };
    reported(line, |emit| {
        on_private_copy(&onto, &a.replay, tally, |store| match onto {
            Onto::Keybox(_) => delete::from_keybox(store, tally, &fingerprints, now, emit),
            Onto::Keyboxd(_) => delete::from_keyboxd(store, tally, &fingerprints, now, emit),
        })
    })
}

/// Run `replay`, `line`'s words for each fingerprint on stderr; exit 1 if
/// one was not found.
fn reported(
    line: impl Fn(&KeyDeleted) -> String,
    replay: impl FnOnce(&mut dyn FnMut(&KeyDeleted)) -> Result<u64>,
) -> Result<ExitCode> {
    let mut missing = 0;
    replay(&mut |k: &KeyDeleted| {
        missing += u64::from(!k.deleted);
        eprintln!("{}", line(k));
    })?;
    Ok(if missing == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `delete --gpgsm`: gpgsm's deletion of certificates from a keybox or,
/// with keyboxd, from its database.
fn run_gpgsm(
    a: &DeleteArgs,
    fingerprints: &[Vec<u8>],
    onto: &Onto,
    version: GnupgVersion,
    now: i64,
    tally: &IoTally,
) -> Result<ExitCode> {
    let Some(fprs) = fingerprints.iter().map(|f| <[u8; 20]>::try_from(f.as_slice()).ok()).collect::<Option<Vec<_>>>()
    else {
        bail!("gpgsm's certificates have SHA-1 fingerprints (40 hex digits)");
    };
    let line = |k: &KeyDeleted| match k.deleted {
        true => format!("kbxscope: certificate '{}' deleted", k.fingerprint),
        false => format!("kbxscope: certificate '{}' not found: No public key", k.fingerprint),
    };
    reported(line, |emit| {
        on_private_copy(onto, &a.replay, tally, |store| match onto {
            Onto::Keybox(_) => delete_x509::from_keybox(store, tally, &fprs, now, version, emit),
            Onto::Keyboxd(_) => keyboxd_x509::from_keyboxd(store, tally, &fprs, now, emit),
        })
    })
}

/// A fingerprint's bytes from its hex (spaces and a `0x` allowed).
fn fingerprint(text: &str) -> Result<Vec<u8>> {
    let hex: String = text.trim_start_matches("0x").chars().filter(|c| !c.is_whitespace()).collect();
    if !matches!(hex.len(), 40 | 64) || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        bail!("'{text}' is not a fingerprint (40 or 64 hex digits): gpg deletes in batch mode only by fingerprint");
    }
    Ok((0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0)).collect())
}
