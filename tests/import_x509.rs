//! `import` of X.509 certificates: gpgsm's import replayed on a private
//! copy, held against the real gpgsm (the machine's 2.2.40, and 2.4.7 from
//! a Debian 13 chroot when there is one) importing the same files under
//! strace: per file and operation, every count equal; the summary equal;
//! the keybox made equal to gpgsm's blob by blob apart from the times in
//! it; the store named with `--onto` only read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{fixture, io_summary, run, stderr};
use crate::import::{replay_counts_named, strace_counts};

/// gpgsm's armored export of the mixed fixture's 24 certificates.
const MIXED_PEM: &str = "gnupg-mixed.certs.pem";
/// Debian's `ca-certificates`: Mozilla's roots, one PEM file each.
const DEBIAN_ROOTS: &str = "/usr/share/ca-certificates/mozilla";

/// A home for gpgsm in `dir` (its keybox a copy of `start`, if any) that
/// never asks dirmngr, as the replay assumes.
fn home(dir: &Path, start: Option<&Path>) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("gpgsm.conf"), "disable-dirmngr\n").unwrap();
    if let Some(s) = start {
        std::fs::copy(s, home.join("pubring.kbx")).unwrap();
    }
    home
}

/// gpgsm 2.2 importing `files` into `home` under strace: strace's counts
/// and gpgsm's stderr.
fn gpgsm_import_traced(home: &Path, files: &[PathBuf]) -> (BTreeMap<(String, String), u64>, String) {
    let log = home.with_extension("strace");
    let o = Command::new("strace")
        .args(["-o", log.to_str().unwrap(), "-e", "trace=%file,%desc", "gpgsm", "--homedir"])
        .arg(home)
        .args(["--batch", "--import"])
        .args(files)
        .output()
        .unwrap();
    crate::common::stop_gnupg_daemons(home);
    // gpgsm exits 2 after any error it logged, a certificate it refused
    // or a root's hash it does not like; the summary says what it did.
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.contains("total number processed"), "{err}");
    (strace_counts(&std::fs::read_to_string(&log).unwrap()), err)
}

/// The replay of the same import at `version`'s buffer: its counts, its
/// stderr, and the keybox it made (in `dir`).
fn replay(
    dir: &Path,
    version: &str,
    onto: Option<&Path>,
    files: &[PathBuf],
) -> (BTreeMap<(String, String), u64>, String, PathBuf) {
    let made = dir.join("made.kbx");
    let mut args = vec!["--gnupg-version", version, "--io-summary=json", "import", "--out", made.to_str().unwrap()];
    if let Some(o) = onto {
        args.extend(["--onto", o.to_str().unwrap()]);
    }
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let name = onto.map_or("pubring.kbx".into(), |p| p.file_name().unwrap().to_string_lossy().into_owned());
    (replay_counts_named(&io_summary(&o), &name), stderr(&o), made)
}

/// gpgsm's closing statistics ("total number processed", "imported",
/// "unchanged", "not imported") from its stderr or the replay's.
fn summary(text: &str, prefix: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(str::trim)
        .filter(|l| {
            ["total number processed", "imported:", "unchanged:", "not imported:"].iter().any(|s| l.starts_with(s))
        })
        .map(String::from)
        .collect()
}

/// Where a key blob keeps its creation time: after the key table, the
/// serial number, the user-id and signature tables, and 12 bytes of trust
/// and timestamps.
fn created_at(blob: &[u8]) -> usize {
    let u16_at = |i: usize| usize::from(u16::from_be_bytes([blob[i], blob[i + 1]]));
    let mut p = 20 + u16_at(16) * u16_at(18);
    p += 2 + u16_at(p);
    p += 4 + u16_at(p) * u16_at(p + 2);
    p += 4 + u16_at(p) * u16_at(p + 2);
    p + 12
}

/// The blobs of two keyboxes are equal apart from the times in them (the
/// header's two, each key blob's creation time and so its checksum).
fn same_blobs(gpgsms: &Path, ours: &Path) {
    let (a, b) = (std::fs::read(gpgsms).unwrap(), std::fs::read(ours).unwrap());
    let (a, b) = (crate::common::split_blobs(&a), crate::common::split_blobs(&b));
    assert_eq!(a.len(), b.len(), "blob count");
    let mask = |blob: &[u8]| {
        let mut m = blob.to_vec();
        if m[4] == 1 {
            m[16..24].fill(0);
        } else if m[4] != 0 {
            let at = created_at(&m);
            m[at..at + 4].fill(0);
            let n = m.len();
            m[n - 20..].fill(0);
        }
        m
    };
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x.len(), y.len(), "blob {i}: length");
        assert!(mask(x) == mask(y), "blob {i} differs beyond its times");
    }
}

/// One import against gpgsm 2.2.40: the counts, the summary and the blobs.
fn equal_to_gpgsm(start: Option<&Path>, files: &[PathBuf]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let home = home(dir.path(), start);
    // The replay starts from the keybox gpgsm starts from.
    let onto = start.map(|s| {
        let copy = dir.path().join("pubring.kbx");
        std::fs::copy(s, &copy).unwrap();
        copy
    });
    let (theirs, gpgsm_err) = gpgsm_import_traced(&home, files);
    let (ours, our_err, made) = replay(dir.path(), "2.2", onto.as_deref(), files);
    assert_eq!(ours, theirs, "per file and operation\ngpgsm: {gpgsm_err}");
    assert_eq!(summary(&our_err, "kbxscope: "), summary(&gpgsm_err, "gpgsm: "));
    same_blobs(&home.join("pubring.kbx"), &made);
    gpgsm_err
}

/// gpgsm 2.2.40 imports the mixed fixture's 24 certificates (four PKIs:
/// roots, intermediates, people, some issuers missing) into an empty home,
/// and onto the deleted fixture (one certificate is refused there: its
/// issuer in that keybox does not verify its signature).
fn import_makes_gpgsms_calls() {
    let pem = vec![fixture(MIXED_PEM)];
    let err = equal_to_gpgsm(None, &pem);
    assert!(err.contains("imported: 24"), "{err}");
    let err = equal_to_gpgsm(Some(&fixture("gnupg-deleted.kbx")), &pem);
    assert!(err.contains("not imported: 1"), "{err}");
    // Again onto the keybox that holds them: every one unchanged, each
    // searched for twice under the lock (the store, the flag).
    let err = equal_to_gpgsm(Some(&fixture("gnupg-mixed.kbx")), &pem);
    assert!(err.contains("unchanged: 24"), "{err}");
}

/// Debian's 142 Mozilla roots (`ca-certificates`, one file each) into an
/// empty home: each a root whose self-signature gpgsm checks, stored
/// through a full copy of a keybox that grows to 200 KB.
fn debian_roots_make_gpgsms_calls() {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(DEBIAN_ROOTS).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    assert!(files.len() > 100, "{} roots", files.len());
    let err = equal_to_gpgsm(None, &files);
    assert!(err.contains(&format!("total number processed: {}", files.len())), "{err}");
}

/// A certificate stored ephemeral (as gpgsm stores what dirmngr finds)
/// and then imported: gpgsm clears the flag in place (two bytes written
/// where the blob's flags are) and leaves everything else; so does the
/// replay, byte for byte. The keybox's maintenance stamp is fresh, so the
/// pass does not drop the ephemeral blob first.
fn the_ephemeral_flag_is_cleared_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let der = fixture("gnupg-mixed.first-cert.der");
    let cert = std::fs::read(&der).unwrap();
    let mut kbx = std::fs::read(fixture("gnupg-mixed.kbx")).unwrap();
    let now = u32::try_from(time::OffsetDateTime::now_utc().unix_timestamp()).unwrap();
    kbx[20..24].copy_from_slice(&now.to_be_bytes());
    let mut at = 0;
    let mut flagged = 0;
    while at + 8 <= kbx.len() {
        let len = u32::from_be_bytes(kbx[at..at + 4].try_into().unwrap()) as usize;
        let blob = &kbx[at..at + len];
        if blob[4] == 3 && blob.windows(cert.len()).any(|w| w == cert.as_slice()) {
            kbx[at + 7] |= 2;
            let sum = kbx_format::checksum::sha1_of(&kbx[at..at + len - 20]);
            kbx[at + len - 20..at + len].copy_from_slice(&sum);
            flagged += 1;
        }
        at += len;
    }
    assert_eq!(flagged, 1);
    let start = dir.path().join("ephemeral.kbx");
    std::fs::write(&start, &kbx).unwrap();
    let err = equal_to_gpgsm(Some(&start), &[der]);
    assert!(err.contains("unchanged: 1"), "{err}");
}

/// gpgsm 2.4.7 from the Debian 13 chroot named by `KBXSCOPE_GNUPG24_CHROOT`
/// (`/proc` mounted, strace in it) imports the mixed certificates into an
/// empty home and onto the deleted fixture; `--gnupg-version 2.4` (64 KiB,
/// `access(W_OK)` around each lock, no lock around searches) makes the same
/// calls. Optional in CI: without the chroot it says SKIPPED.
fn import_equals_live_gpgsm24() {
    let Some(chroot) = std::env::var_os("KBXSCOPE_GNUPG24_CHROOT").map(PathBuf::from) else {
        eprintln!("SKIPPED import_equals_live_gpgsm24: KBXSCOPE_GNUPG24_CHROOT is not set (optional)");
        return;
    };
    assert!(chroot.join("proc/self/stat").exists(), "{}/proc is not mounted", chroot.display());
    for start in [None, Some(fixture("gnupg-deleted.kbx"))] {
        let dir = tempfile::tempdir().unwrap();
        let inner = format!("/tmp/kbxscope-gpgsm-import-{}", std::process::id());
        let outer = chroot.join(inner.trim_start_matches('/'));
        let _ = std::fs::remove_dir_all(&outer);
        std::fs::create_dir_all(&outer).unwrap();
        home(&outer, start.as_deref());
        std::fs::copy(fixture(MIXED_PEM), outer.join("certs.pem")).unwrap();
        let (home, log) = (format!("{inner}/home"), format!("{inner}/strace.log"));
        let o = Command::new("chroot")
            .arg(&chroot)
            .args(["strace", "-o", &log, "-e", "trace=%file,%desc", "gpgsm", "--homedir", &home, "--batch"])
            .args(["--import", &format!("{inner}/certs.pem")])
            .output()
            .unwrap();
        let _ = Command::new("chroot").arg(&chroot).args(["gpgconf", "--homedir", &home, "--kill", "all"]).output();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("total number processed"), "{err}");
        let theirs = strace_counts(&std::fs::read_to_string(outer.join("strace.log")).unwrap());
        let made = outer.join("home/pubring.kbx");
        let onto = start.as_ref().map(|s| {
            let copy = dir.path().join("pubring.kbx");
            std::fs::copy(s, &copy).unwrap();
            copy
        });
        let (ours, _, ours_made) = replay(dir.path(), "2.4", onto.as_deref(), &[fixture(MIXED_PEM)]);
        same_blobs(&made, &ours_made);
        let _ = std::fs::remove_dir_all(&outer);
        assert_eq!(ours, theirs, "starting from {start:?}");
    }
}

/// Imported onto a copy of a keybox: the keybox named keeps its bytes and
/// modification time; nothing is left in the temporary directory.
fn onto_reads_the_keybox_only() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let store = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-deleted.kbx"), &store).unwrap();
    let before = (std::fs::read(&store).unwrap(), std::fs::metadata(&store).unwrap().modified().unwrap());
    let o = crate::common::bin()
        .env("TMPDIR", &tmp)
        .args(["import", "--onto", store.to_str().unwrap(), fixture(MIXED_PEM).to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("imported: 23"), "{}", stderr(&o));
    let after = (std::fs::read(&store).unwrap(), std::fs::metadata(&store).unwrap().modified().unwrap());
    assert!(before == after, "the keybox named with --onto changed");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "a private directory was left behind");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "only the keybox and tmp");
}

/// Files gpgsm would not import get one line and exit 1: a PEM private
/// key, and certificates mixed with OpenPGP keys in one import; keyboxd
/// with GnuPG 2.2 (which has none) and gpg's bulk import are refused for
/// certificates, also in one line.
fn other_files_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key.pem");
    std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").unwrap();
    let keys = crate::import::export_subset(dir.path(), 1);
    let pem = fixture(MIXED_PEM);
    let (key, keys, pem) = (key.to_str().unwrap(), keys.to_str().unwrap(), pem.to_str().unwrap());
    for (args, says) in [
        (vec!["import", key], "PRIVATE KEY"),
        (vec!["import", pem, keys], "certificates and OpenPGP keys"),
        (vec!["--gnupg-version", "2.2", "import", "--onto", "keyboxd", pem], "keyboxd came with GnuPG 2.3"),
        (vec!["import", "--onto", "keyboxd", "--bulk-import", pem], "gpgsm has no such option"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// gpgsm 2.2.40 deletes certificates from the mixed fixture by
/// fingerprint (`--delete-keys` takes them last first and stops at one it
/// cannot find): the replay makes the same calls (the not-found search
/// meets the blob deleted just before at the very end of its buffer: one
/// `lseek`, as estream seeks) and leaves the same bytes. With the chroot,
/// gpgsm 2.4.7 too.
fn delete_makes_gpgsms_calls() {
    let first = "DC724118AF31B2AFC7CA8C5576257FC4704571A5";
    let missing = "0000000000000000000000000000000000000001";
    let last = "23772DCB9D901AEBFE7EB947872590F35D208C25";
    let dir = tempfile::tempdir().unwrap();
    let home = home(dir.path(), Some(&fixture("gnupg-mixed.kbx")));
    let log = dir.path().join("delete.strace");
    let o = Command::new("strace")
        .args(["-o", log.to_str().unwrap(), "-e", "trace=%file,%desc", "gpgsm", "--homedir"])
        .arg(&home)
        .args(["--batch", "--delete-keys", first, missing, last])
        .output()
        .unwrap();
    crate::common::stop_gnupg_daemons(&home);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("certificate '{missing}' not found")), "{err}");
    let theirs = strace_counts(&std::fs::read_to_string(&log).unwrap());
    let onto = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &onto).unwrap();
    let made = dir.path().join("made.kbx");
    let (onto_s, made_s) = (onto.to_str().unwrap(), made.to_str().unwrap());
    let args = ["--gnupg-version", "2.2", "--io-summary=json", "delete", "--gpgsm", "--onto", onto_s, "--out", made_s];
    let o = run(args.iter().copied().chain([first, missing, last]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stderr(&o);
    assert!(out.contains(&format!("certificate '{last}' deleted")), "{out}");
    assert!(out.contains(&format!("certificate '{missing}' not found")), "{out}");
    assert!(!out.contains(first), "gpgsm stops at the first it cannot find: {out}");
    assert_eq!(replay_counts_named(&io_summary(&o), "pubring.kbx"), theirs);
    assert!(std::fs::read(&made).unwrap() == std::fs::read(home.join("pubring.kbx")).unwrap(), "the same bytes");
}

/// `sweep --workload import:CERTS --with-gpgsm`: gpgsm 2.2.40's count,
/// by strace and by the interposer, equals the replay's calls on the same
/// files (the keybox, `.tmp`, `~`, `.lock`).
fn sweep_import_with_gpgsm_counts_gpgsms_calls() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.kbx");
    std::fs::copy(fixture("gnupg-deleted.kbx"), &store).unwrap();
    let pem = fixture(MIXED_PEM);
    let ours = crate::import::single_import_calls(&store, &pem);
    for counter in ["strace", "record"] {
        let rows = crate::import::sweep_import_beside(&store, &pem, "--with-gpgsm", counter, "8");
        assert_eq!(rows[0]["gnupg"]["events"].as_u64(), Some(ours), "{counter}: {}", rows[0]);
    }
    let workload = format!("import:{}", pem.display());
    // gpg does not import certificates: one line.
    let o = run(["sweep", store.to_str().unwrap(), "--workload", &workload, "--with-gpg", "--runs", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("gpgsm imports them"), "{}", stderr(&o));
}

crate::tests![
    import_makes_gpgsms_calls needs ["gpgsm", "strace"],
    debian_roots_make_gpgsms_calls needs ["gpgsm", "strace", "/usr/share/ca-certificates/mozilla"],
    the_ephemeral_flag_is_cleared_in_place needs ["gpgsm", "strace"],
    import_equals_live_gpgsm24 needs ["gpgsm"],
    onto_reads_the_keybox_only,
    other_files_are_one_line needs ["gpg"],
    delete_makes_gpgsms_calls needs ["gpgsm", "strace"],
    sweep_import_with_gpgsm_counts_gpgsms_calls needs ["gpgsm", "gpg", "strace"],
];
