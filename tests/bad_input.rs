//! Bad input: a one-line error naming the file (and blob and offset where
//! that applies), exit code 1, never a panic or a hang.

use std::path::Path;

use crate::common::{fixture, run, run_bounded, split_blobs, stderr, stdout, temp_copy};

/// Assert a clean failure: exit 1, one line on stderr containing `want`.
fn fails_with(args: &[&str], want: &str) -> std::process::Output {
    let o = run_bounded(args, 120);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: expected {want:?} in {err:?}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    let error_lines = err.lines().filter(|l| l.starts_with("kbxscope: ")).count();
    assert!(error_lines >= 1, "{err}");
    o
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

fn missing_files_and_directories() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.kbx");
    let m = missing.to_str().unwrap();
    for cmd in ["stats", "dump", "list"] {
        fails_with(&[cmd, m], &format!("cannot open '{m}': {}", crate::common::no_such_file()));
    }
    let d = dir.path().to_str().unwrap();
    fails_with(&["stats", d], &format!("'{d}' is not a keybox: it is a directory"));
}

/// Unix's special files: devices, FIFOs, symbolic-link loops.
fn special_files() {
    #[cfg(unix)]
    special_files_on_unix();
}

#[cfg(unix)]
fn special_files_on_unix() {
    let dir = tempfile::tempdir().unwrap();
    fails_with(&["list", "/dev/zero"], "'/dev/zero' is not a keybox: it is a character device");
    fails_with(&["stats", "/dev/urandom"], "it is a character device");
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    fails_with(&["stats", fifo.to_str().unwrap()], "it is a FIFO, not a regular file");
    let a = dir.path().join("loop-a");
    let b = dir.path().join("loop-b");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    fails_with(&["stats", a.to_str().unwrap()], "Too many levels of symbolic links");
}

fn files_that_are_not_keyboxes() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.kbx", b"");
    fails_with(&["stats", &empty], &format!("{empty}: blob 0 at byte offset 0: not a keybox: the file is empty"));
    let png = write(dir.path(), "pic.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0");
    fails_with(&["list", &png], "blob 0 at byte offset 0: not a keybox: the first blob claims 2303741511 bytes");
    let text = write(dir.path(), "notes.txt", b"\0\0\0\x0chello world\n");
    fails_with(&["find", &text, "x"], "not a keybox: the first blob is neither a header");
    let zeros = write(dir.path(), "zeros.kbx", &[0u8; 64]);
    fails_with(
        &["stats", &zeros],
        "blob 0 at byte offset 0: length field 0 is shorter than the 5-byte length and type",
    );
}

fn truncated_keybox_reports_what_came_before() {
    let bytes = std::fs::read(fixture("gnupg-mixed.kbx")).unwrap();
    let blobs = split_blobs(&bytes);
    let off5: usize = blobs[..5].iter().map(Vec::len).sum();
    let dir = tempfile::tempdir().unwrap();
    // cut in the middle of blob 5
    let cut = write(dir.path(), "cut.kbx", &bytes[..off5 + 100]);
    let o = fails_with(
        &["stats", &cut],
        &format!("{cut}: blob 5 at byte offset {off5}: blob of {} bytes is truncated", blobs[5].len()),
    );
    let out = stdout(&o);
    assert!(out.starts_with("Total number of blobs:        5\n"), "{out}");
    let o = fails_with(&["list", "--json", &cut], &format!("blob 5 at byte offset {off5}"));
    assert_eq!(stdout(&o).lines().count(), 4, "the four keys before the damage are listed");
    // cut inside the next blob's length field
    let cut = write(dir.path(), "cut2.kbx", &bytes[..off5 + 3]);
    fails_with(&["dump", &cut], &format!("blob 5 at byte offset {off5}: the file ends after 3 byte(s)"));
}

fn every_truncation_of_a_small_keybox_fails_cleanly() {
    let bytes = std::fs::read(fixture("gnupg-mixed.kbx")).unwrap();
    let blobs = split_blobs(&bytes);
    let small: Vec<u8> = blobs[..4].concat();
    let boundaries: Vec<usize> = (0..=4).map(|n| blobs[..n].iter().map(Vec::len).sum()).collect();
    let dir = tempfile::tempdir().unwrap();
    let step = 37; // every 37th byte keeps the test quick; boundaries are tested explicitly
    let cuts = (1..small.len()).step_by(step).chain(boundaries.iter().copied().filter(|&b| b > 0));
    for cut in cuts {
        let p = write(dir.path(), "t.kbx", &small[..cut]);
        let o = run_bounded(&["stats", &p], 120);
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "cut {cut}: {err}");
        if boundaries.contains(&cut) {
            assert!(o.status.success(), "cut at a blob boundary {cut} is a whole keybox: {err}");
        } else {
            assert_eq!(o.status.code(), Some(1), "cut {cut}");
            let blob = boundaries.iter().filter(|&&b| b <= cut).count() - 1;
            assert!(err.contains(&format!("blob {blob} at byte offset {}", boundaries[blob])), "cut {cut}: {err}");
        }
    }
}

fn a_corrupt_blob_in_the_middle_does_not_stop_the_listing() {
    let (_dir, path) = temp_copy("gnupg-mixed");
    let mut bytes = std::fs::read(&path).unwrap();
    let blobs = split_blobs(&bytes);
    let off3: usize = blobs[..3].iter().map(Vec::len).sum();
    // blob 3: point the data offset far outside the blob
    bytes[off3 + 8..off3 + 12].copy_from_slice(&0x7fff_0000u32.to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let p = path.to_str().unwrap();
    let o = fails_with(&["list", "--json", p], &format!("{p}: blob 3 at byte offset {}: data", off3 + 8));
    assert_eq!(stdout(&o).lines().count(), 43, "every other key is still listed");
    // stats does not decode key tables and is not disturbed
    let o = run(["stats", p]);
    assert!(o.status.success());
}

fn garbage_lengths_and_tables() {
    let bytes = std::fs::read(fixture("gnupg-mixed.kbx")).unwrap();
    let blobs = split_blobs(&bytes);
    let header = &blobs[0];
    let cert = &blobs[1];
    let dir = tempfile::tempdir().unwrap();
    // length fields 1..4 in blob 1
    for len in [1u32, 2, 3, 4] {
        let mut b = cert.clone();
        b[..4].copy_from_slice(&len.to_be_bytes());
        let p = write(dir.path(), "l.kbx", &[header.clone(), b].concat());
        fails_with(&["stats", &p], &format!("blob 1 at byte offset 32: length field {len} is shorter"));
    }
    // key count 0, a key table past the end, a uid table past the end
    // (where to patch, the patch, where the error is, what it says); blob 1
    // is an X.509 blob with a 20-byte serial, so its uid count is at 70.
    let cases: [(usize, &[u8], usize, &str); 4] = [
        (16, &[0, 0], 16, "key blob has no keys"),
        (18, &[0xff, 0xff], 20, "key table ends at byte"),
        (70, &[0xff, 0xff], 74, "uid table ends at byte"),
        (5, &[7], 5, "unsupported key blob version 7"),
    ];
    for (at, patch, err_at, want) in cases {
        let mut b = cert.clone();
        b[at..at + patch.len()].copy_from_slice(patch);
        let p = write(dir.path(), "t.kbx", &[header.clone(), b].concat());
        fails_with(&["list", &p], &format!("blob 1 at byte offset {}: {want}", 32 + err_at));
    }
}

/// Unix's permission bits (Windows' ACLs are not tested).
fn permission_denied() {
    #[cfg(unix)]
    permission_denied_on_unix();
}

#[cfg(unix)]
fn permission_denied_on_unix() {
    let (dir, path) = temp_copy("gnupg-mixed");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    let p = path.to_str().unwrap();
    let is_root = std::fs::read(&path).is_ok();
    if !is_root {
        fails_with(&["stats", p], &format!("cannot open '{p}': Permission denied"));
        return;
    }
    // As root, run the binary as 'nobody' (setpriv from util-linux). Only
    // a missing setpriv may skip, and not under CI; any other outcome fails.
    let Some(setpriv) = crate::common::tool("setpriv", "permission_denied") else { return };
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = std::process::Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_kbxscope"), "stats", p])
        .output()
        .expect("run setpriv");
    assert_eq!(o.status.code(), Some(1), "as nobody: {o:?}");
    assert!(stderr(&o).contains(&format!("cannot open '{p}': Permission denied")), "{}", stderr(&o));
}

/// Bad values for every option: exit 2, a message naming the option and
/// saying what it accepts.
fn usage_errors_exit_2() {
    let kib = "expected a number of KiB";
    let count = "expected a whole number";
    let table: &[(&[&str], &[&str])] = &[
        // keybox paths
        (&["stats", "-"], &["'-' is not a keybox", "from files"]),
        (&["stats", ""], &["[FILE]", "the keybox path is empty"]),
        (&["dump", "-"], &["'-' is not a keybox"]),
        (&["find", "-", "x"], &["[FILE]", "'-' is not a keybox"]),
        (&["sweep", "-"], &["'-' is not a keybox"]),
        // sizes
        (&["stats", "x.kbx", "--kbx-buffer-size=-1"], &["--kbx-buffer-size", kib]),
        (&["stats", "x.kbx", "--kbx-buffer-size", "abc"], &["--kbx-buffer-size", kib]),
        (&["stats", "x.kbx", "--kbx-buffer-size", "0B"], &["--kbx-buffer-size", "at least 1 byte"]),
        (&["stats", "x.kbx", "--kbx-buffer-size", "2G"], &["--kbx-buffer-size", "the largest buffer is 1 GiB"]),
        (&["stats", "x.kbx", "--kbx-buffer-size", "1048577"], &["--kbx-buffer-size", "the largest buffer is 1 GiB"]),
        (&["sweep", "x.kbx", "--sizes", "0,huge"], &["--sizes", kib]),
        (&["sweep", "x.kbx", "--sizes", ""], &["--sizes", kib]),
        (&["gen", "x.kbx", "--size", "5G"], &["--size", "at most 4 GiB"]),
        (&["gen", "x.kbx", "--size", "12 parsecs"], &["--size", "expected a size in bytes or with a unit"]),
        // formats, levels, presets, strategies, workloads
        (&["stats", "x.kbx", "--io-summary=xml"], &["--io-summary", "possible values: text, json"]),
        (&["list", "x.kbx", "--type", "pgp"], &["--type", "possible values: openpgp, x509, all"]),
        (&["gen", "x.kbx", "--preset", "huge"], &["--preset", "possible values: seed, small, tiny"]),
        (
            &["list", "x.kbx", "--with-validation", "--lookup", "magic"],
            &["--lookup", "possible values: gnupg, scan, index"],
        ),
        (&["sweep", "x.kbx", "--lookup", "none"], &["--lookup", "possible values: gnupg, scan, index"]),
        (
            &["sweep", "x.kbx", "--workload", "dance"],
            &["--workload", "expected validate, list, stats, find:PATTERN, with-sigs, check-sigs or import:FILE"],
        ),
        (&["sweep", "x.kbx", "--workload", "find:"], &["--workload", "find:PATTERN"]),
        (
            &["--trace-out", "t.json", "--trace-level", "deep", "stats"],
            &["--trace-level", "possible values: command, lookup, blob, event"],
        ),
        // counts
        (&["sweep", "x.kbx", "--runs", "0"], &["--runs", "0 is not in 1..=1000"]),
        (&["sweep", "x.kbx", "--warmup", "lots"], &["--warmup", "invalid digit"]),
        (&["gen", "x.kbx", "--x509", "many"], &["--x509", count]),
        (&["gen", "x.kbx", "--openpgp", "1.5"], &["--openpgp", count]),
        (&["gen", "x.kbx", "--seed", "ten"], &["--seed", count]),
        (&["--trace-out", "t.json", "--trace-max-events", "lots", "stats"], &["--trace-max-events", count]),
        // durations and times
        (&["--linger", "soon", "stats"], &["--linger", "expected a duration such as 30s"]),
        (&["--linger", "25h", "stats"], &["--linger", "at most 24h"]),
        (&["list", "x.kbx", "--with-validation", "--at", "yesterday"], &["--at", "expected an RFC 3339 time"]),
        (&["sweep", "x.kbx", "--at", "never"], &["--at", "expected an RFC 3339 time"]),
        // addresses
        (&["--metrics-listen=localhost", "stats"], &["--metrics-listen", "expected an IP address and port"]),
        (&["--metrics-listen=10.0.0.1", "stats"], &["--metrics-listen", "expected an IP address and port"]),
        // paths that must be given
        (&["--trace-out", "", "stats"], &["--trace-out", "a value is required"]),
        (&["--metrics-out", "", "stats"], &["--metrics-out", "a value is required"]),
        (&["list", "x.kbx", "--with-validation", "--trustlist", ""], &["--trustlist", "a value is required"]),
        (&["gen", ""], &["<OUT>", "a value is required"]),
        // patterns
        (&["find", "x.kbx", ""], &["<PATTERN>", "the pattern is empty"]),
        (&["find", "x.kbx", "#zz"], &["<PATTERN>", "expected #SERIAL or #SERIAL/ISSUER"]),
        (&["find"], &["PATTERN"]),
        // combinations
        (&["gen"], &["OUT"]),
        (&["list", "x.kbx", "--trustlist", "t.txt"], &["--with-validation"]),
        (&["--trace-level", "event", "stats"], &["--trace-out"]),
        (&["frobnicate"], &["unrecognized subcommand"]),
    ];
    for (args, wants) in table {
        let o = run(args.iter());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        for want in *wants {
            assert!(err.contains(want), "{args:?}: expected {want:?} in: {err}");
        }
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

fn a_closed_pipe_is_not_an_error() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = crate::common::bin()
        .args(["dump", fixture("gnupg-mixed.kbx").to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then drop: pipe closed
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty());
}

crate::tests![
    missing_files_and_directories,
    special_files needs ["unix"],
    files_that_are_not_keyboxes,
    truncated_keybox_reports_what_came_before,
    every_truncation_of_a_small_keybox_fails_cleanly,
    a_corrupt_blob_in_the_middle_does_not_stop_the_listing,
    garbage_lengths_and_tables,
    permission_denied needs ["unix"],
    usage_errors_exit_2,
    a_closed_pipe_is_not_an_error,
];
