//! The counts of `--io-summary` against what `strace` sees, and the
//! promise that the keybox is only ever read.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{io_summary, temp_copy};

/// System calls strace saw on `keybox` and on the files GnuPG writes
/// beside it (which kbxscope writes in a private directory of its own,
/// `kbxscope-replay-…`), by kbxscope's operation names, plus every call
/// that touched the keybox's directory in any other way.
#[derive(Debug, Default)]
struct Seen {
    ops: BTreeMap<&'static str, u64>,
    /// Every call on the keybox, in order: (operation, the strace line).
    sequence: Vec<(&'static str, String)>,
    opens: Vec<String>,
    other: Vec<String>,
}

fn classify(syscall: &str) -> Option<&'static str> {
    Some(match syscall {
        "open" | "openat" | "openat2" => "open",
        "read" | "pread64" | "readv" | "preadv" | "preadv2" => "read",
        "lseek" | "_llseek" => "seek",
        "close" => "close",
        "fstat" | "newfstatat" | "statx" | "fstatat64" | "stat" | "lstat" => "stat",
        "access" | "faccessat" | "faccessat2" => "access",
        "write" | "pwrite64" => "write",
        "link" | "linkat" => "link",
        "unlink" | "unlinkat" => "unlink",
        "rename" | "renameat" | "renameat2" => "rename",
        _ => return None,
    })
}

fn parse_trace(trace: &str, keybox: &Path) -> Seen {
    let quoted = format!("\"{}\"", keybox.display());
    let fd_tag = format!("<{}>", keybox.display());
    let dir = keybox.parent().unwrap().display().to_string();
    let mut seen = Seen::default();
    for line in trace.lines() {
        // strace -f prefixes the pid
        let line = line.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
        let Some(paren) = line.find('(') else { continue };
        let syscall = &line[..paren];
        let args = &line[paren + 1..];
        if syscall.starts_with("exec") {
            continue; // the command line names the keybox
        }
        let after_fd = args.trim_start_matches(|c: char| c.is_ascii_digit());
        let on_keybox = after_fd.starts_with(&fd_tag) || args.contains(&quoted);
        match private_file(args) {
            // kbxscope's own making and removing of its private directory
            // (and the empty stand-in a replaced keybox's rename takes):
            // no GnuPG call, not counted.
            Some(false) => continue,
            Some(true) if !on_keybox => {
                if let Some(op) = classify(syscall).filter(|_| !syscall.starts_with("unlinkat")) {
                    *seen.ops.entry(op).or_default() += 1;
                    seen.sequence.push((op, line.to_string()));
                }
                continue;
            }
            _ => {}
        }
        if on_keybox {
            match classify(syscall) {
                Some(op) => {
                    *seen.ops.entry(op).or_default() += 1;
                    seen.sequence.push((op, line.to_string()));
                }
                None => seen.other.push(line.to_string()),
            }
            if op_is_open(syscall) {
                seen.opens.push(line.to_string());
            }
        } else if args.contains(&dir) && !on_other_fd(args) {
            seen.other.push(line.to_string());
        }
    }
    seen
}

/// Whether the call's first path or descriptor is in a replay's private
/// directory: `Some(true)` a file in it, `Some(false)` the directory itself
/// (its making, listing and removal); `None` elsewhere.
fn private_file(args: &str) -> Option<bool> {
    let args = args.trim_start_matches(|c: char| c.is_ascii_digit());
    let args = match args.strip_prefix("AT_FDCWD") {
        Some(rest) => rest.split_once(", ").map_or("", |(_, r)| r),
        None => args,
    };
    let close = match args.chars().next()? {
        '"' => '"',
        '<' => '>',
        _ => return None,
    };
    let token = &args[1..];
    let token = &token[..token.find(close).unwrap_or(token.len())];
    let at = token.find("/kbxscope-replay-")?;
    Some(token[at + 1..].contains('/'))
}

/// Whether the call's first argument is a descriptor (of another file):
/// its data may mention the directory (e.g. the listing on stdout).
fn on_other_fd(args: &str) -> bool {
    let rest = args.trim_start_matches(|c: char| c.is_ascii_digit());
    rest.len() < args.len() && rest.starts_with('<')
}

fn op_is_open(syscall: &str) -> bool {
    classify(syscall) == Some("open")
}

/// Run kbxscope under strace; return the trace and the io summary.
fn traced(dir: &Path, args: &[String]) -> (String, serde_json::Value) {
    let (trace, o) = traced_output(dir, args);
    (trace, io_summary(&o))
}

/// Run kbxscope under strace; return the trace and what kbxscope printed.
fn traced_output(dir: &Path, args: &[String]) -> (String, std::process::Output) {
    let trace_file = dir.join("trace.txt");
    let o = Command::new("strace")
        .args(["-f", "-y", "-qq", "-e", "trace=%file,%desc,lseek", "-o"])
        .arg(&trace_file)
        .arg(env!("CARGO_BIN_EXE_kbxscope"))
        .args(args)
        .output()
        .expect("run strace");
    (std::fs::read_to_string(&trace_file).unwrap(), o)
}

/// The operations compared (a keybox read's, and those of the files a
/// GnuPG start writes beside it).
const OPS: [&str; 10] = ["open", "read", "seek", "close", "stat", "access", "write", "link", "unlink", "rename"];

const SIZES: [&str; 5] = ["unbuffered", "0", "16", "128", "4096B"];

fn commands(keybox: &str) -> Vec<Vec<String>> {
    let k = keybox.to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        [s(&["stats"]), vec![k.clone()]].concat(),
        [s(&["dump"]), vec![k.clone()]].concat(),
        [s(&["list", "--json"]), vec![k.clone()]].concat(),
        [s(&["find"]), vec![k.clone()], s(&["Lange"])].concat(),
        [s(&["find", "--all"]), vec![k.clone()], s(&["@example"])].concat(),
    ]
}

fn io_summary_equals_strace_exactly() {
    // Unbuffered, GnuPG's lookups read a few bytes a call: over a million
    // calls on a fixture, 2-3 minutes under strace. Only the keybox of a
    // few certificates (every path of it) runs them.
    let (fixture, small) = (false, true);
    let keyboxes =
        [(temp_copy("gnupg-mixed"), fixture), (temp_copy("gnupg-deleted"), fixture), (crate::common::gen_few(), small)];
    for ((dir, path), small) in &keyboxes {
        let kbx = path.file_name().unwrap().to_string_lossy();
        let k = path.to_str().unwrap();
        let mut every = commands(k);
        // Validation too: many handles (gnupg), rescans (scan), and the
        // index's seeks past OpenPGP blobs.
        for lookup in ["gnupg", "scan", "index"] {
            every.push(["list", "--with-validation", "--lookup", lookup, k].map(String::from).to_vec());
        }
        for cmd in every {
            for size in SIZES {
                let unbuffered_lookups = size == "unbuffered" && cmd.iter().any(|a| a == "gnupg");
                if unbuffered_lookups && !small {
                    continue;
                }
                let args: Vec<String> =
                    [vec![format!("--kbx-buffer-size={size}"), "--io-summary=json".into()], cmd.clone()].concat();
                let (trace, summary) = traced(dir.path(), &args);
                let mut seen = parse_trace(&trace, path);
                // Validation looks for a trustlist beside the keybox
                // (KEYBOX.trustlist.txt, then STEM.trustlist.txt); the
                // OpenPGP listings for the home's trust database and
                // gpg.conf (the validity column).
                seen.other.retain(|l| !HOME_FILES.iter().any(|f| l.contains(f)));
                assert!(seen.other.is_empty(), "{kbx} {args:?}: unexpected calls: {:#?}", seen.other);
                for op in OPS {
                    let ours = summary["events"][op].as_u64().unwrap_or(0);
                    let theirs = seen.ops.get(op).copied().unwrap_or(0);
                    assert_eq!(ours, theirs, "{kbx} {args:?}: {op}: io-summary {ours}, strace {theirs}");
                }
                assert!(summary["events"]["read"].as_u64().unwrap() > 0);
            }
        }
    }
}

/// The files of the keybox's home that listings read beside it (the
/// trustlist for validation; the trust database and gpg.conf for the
/// OpenPGP listings' validity column); their calls are not the keybox's.
const HOME_FILES: [&str; 3] = ["trustlist.txt", "/trustdb.gpg", "/gpg.conf"];

fn the_keybox_is_only_ever_read() {
    let (dir, path) = temp_copy("gnupg-deleted");
    // its trustlist beside it, as `gen` writes one: validation reads it
    let trust = dir.path().join("gnupg-deleted.kbx.trustlist.txt");
    std::fs::copy(crate::common::fixture("gnupg-deleted.trustlist.txt"), &trust).unwrap();
    let before = std::fs::read(&path).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    let (mtime, atime, ctime) =
        (meta.modified().unwrap(), meta.accessed().unwrap(), std::os::unix::fs::MetadataExt::ctime(&meta));
    let k = path.to_str().unwrap();
    let mut every = commands(k);
    for lookup in ["gnupg", "scan", "index"] {
        every.push(["list", "--with-validation", "--lookup", lookup, k].map(String::from).to_vec());
    }
    every.push(["sweep", k, "--sizes", "0,64", "--runs", "1", "--warmup", "0"].map(String::from).to_vec());
    every.push(["sweep", k, "--workload", "stats", "--sizes", "unbuffered", "--runs", "1"].map(String::from).to_vec());
    for cmd in every {
        let (trace, o) = traced_output(dir.path(), &cmd);
        assert!(o.status.success(), "{cmd:?}: {}", crate::common::stderr(&o));
        let mut seen = parse_trace(&trace, &path);
        // Reading the trustlist, trust database and gpg.conf beside the
        // keybox is allowed; only reading.
        let writes = ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC"];
        seen.other.retain(|l| !HOME_FILES.iter().any(|f| l.contains(f)) || writes.iter().any(|w| l.contains(w)));
        assert!(!seen.opens.is_empty());
        for open in &seen.opens {
            assert!(open.contains("O_RDONLY"), "{cmd:?}: not a read-only open: {open}");
            for bad in ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"] {
                assert!(!open.contains(bad), "{cmd:?}: {open}");
            }
        }
        assert!(seen.other.is_empty(), "{cmd:?}: touched the directory: {:#?}", seen.other);
    }
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 3, "only the keybox, its trustlist and the trace file: {names:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.modified().unwrap(), mtime);
    assert_eq!(std::os::unix::fs::MetadataExt::ctime(&meta), ctime);
    // O_NOATIME: not even the access time moves (we own the copy).
    assert_eq!(meta.accessed().unwrap(), atime);
}

/// The requested length of a traced `read(fd<…>, "…"…, N) = n`.
fn requested(line: &str) -> Option<u64> {
    let (call, _) = line.rsplit_once(") = ")?;
    call.rsplit_once(", ")?.1.trim().parse().ok()
}

fn a_whole_sweep_counts_what_strace_sees() {
    // A few keys: the sweep's unbuffered runs make a call every few bytes.
    let (dir, kbx) = crate::common::gen_few();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("sweep.json");
    let (warmup, runs) = (1u64, 2u64);
    let sizes = ["unbuffered", "0", "16", "64", "4096B"];
    let args: Vec<String> = [
        "sweep",
        kbx.to_str().unwrap(),
        "--sizes",
        &sizes.join(","),
        "--warmup",
        &warmup.to_string(),
        "--runs",
        &runs.to_string(),
        "--export-json",
        json.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (trace, o) = traced_output(dir.path(), &args);
    assert!(o.status.success(), "{}", crate::common::stderr(&o));
    let seen = parse_trace(&trace, &kbx);
    let other: Vec<_> = seen.other.iter().filter(|l| !l.contains("few.kbx.trustlist.txt")).collect();
    assert!(other.is_empty(), "unexpected calls: {other:#?}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), sizes.len());
    // First kbxscope's look at the file (is it a keybox or a database?),
    // reported apart; then the sizes, one after the other, each warmup +
    // runs times: cut strace's sequence into the rows' shares and compare
    // them op by op.
    let probe = &v["probe_events"];
    let looked = probe["total"].as_u64().unwrap() as usize;
    let (first, mut rest) = seen.sequence.split_at(looked);
    for op in OPS {
        let theirs = first.iter().filter(|(o, _)| *o == op).count() as u64;
        assert_eq!(probe[op].as_u64().unwrap_or(0), theirs, "the look at the file: {op}");
    }
    for (row, size) in rows.iter().zip(sizes) {
        // The keybox's five operations, and the others GnuPG's start makes
        // beside it (access, write, link, unlink, rename), reported apart.
        let others = row["other_events"].as_u64().unwrap_or(0);
        let per_run = row["events"]["total"].as_u64().unwrap() + others;
        let n = (per_run * (warmup + runs)) as usize;
        assert!(rest.len() >= n, "{size}: strace saw fewer events than the sweep reported");
        let (mine, later) = rest.split_at(n);
        rest = later;
        for op in &OPS[..5] {
            let theirs = mine.iter().filter(|(o, _)| o == op).count() as u64;
            let ours = row["events"][op].as_u64().unwrap() * (warmup + runs);
            assert_eq!(ours, theirs, "size {size}: {op}: sweep {ours}, strace {theirs}");
        }
        let theirs = mine.iter().filter(|(o, _)| OPS[5..].contains(o)).count() as u64;
        assert_eq!(others * (warmup + runs), theirs, "size {size}: the other operations");
        let buffer = row["buffer_size"].as_u64().unwrap();
        if buffer > 0 {
            let tag = format!("<{}>", kbx.display());
            for (_, line) in mine.iter().filter(|(o, l)| *o == "read" && l.contains(&tag)) {
                assert_eq!(requested(line), Some(buffer), "size {size}: {line}");
            }
        }
    }
    assert!(rest.is_empty(), "strace saw {} events after the last size", rest.len());
}

crate::tests![
    io_summary_equals_strace_exactly needs ["strace"],
    the_keybox_is_only_ever_read needs ["strace"],
    a_whole_sweep_counts_what_strace_sees needs ["strace"],
];
