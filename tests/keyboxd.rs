//! keyboxd's `pubring.db`: every workload on the databases a real keyboxd
//! (GnuPG 2.4.7) made from the fixtures' keys (`tests/fixtures/keyboxd/`,
//! `benches/keyboxd-fixtures.sh`), compared with what gpg and gpgsm 2.4.7
//! printed with `use-keyboxd`, with keyboxd's own calls on the file (strace
//! on the real keyboxd), with strace on kbxscope, and the promise that
//! nothing is ever written beside a database.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{fixture, io_summary, run, stderr, stdout, AT};
use crate::gpg_live::{gpg_colons, ours};
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::openpgp::Judge;

/// The databases, by the name of the keybox their keys came from.
const DATABASES: [&str; 3] = ["gnupg-mixed", "gnupg-deleted", "gnupg24-v5"];

fn db(name: &str) -> PathBuf {
    fixture(&format!("keyboxd/{name}.db"))
}

fn recorded(name: &str) -> String {
    std::fs::read_to_string(fixture(&format!("keyboxd/{name}"))).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A copy of a fixture database in a directory of its own.
fn db_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pubring.db");
    std::fs::copy(db(name), &path).unwrap();
    (dir, path)
}

/// Field `n` (1-based) of colon lines starting with `tag:`, in order.
fn colon_field(text: &str, tag: &str, n: usize) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{tag}:")))
        .map(|l| l.split(':').nth(n - 1).unwrap().to_string())
        .collect()
}

/// The fingerprint following each `first:` line of a colon listing, in order.
fn primary_fprs(text: &str, first: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut want = false;
    for l in text.lines() {
        let tag = l.split(':').next().unwrap();
        if tag == first {
            want = true;
        } else if tag == "fpr" && want {
            out.push(l.split(':').nth(9).unwrap().to_string());
            want = false;
        }
    }
    out
}

fn listed(path: &Path, key_type: &str) -> Vec<serde_json::Value> {
    let o = run(["list", "--json", "--type", key_type, path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `list` on a database: the keys and certificates gpg and gpgsm 2.4.7
/// listed from it, in keyboxd's order (ascending `ubid`), with every user id.
fn listings_equal_gnupg24_with_keyboxd() {
    for name in DATABASES {
        let gpg = recorded(&format!("{name}.gpg24-k-colons.txt"));
        let keys = listed(&db(name), "openpgp");
        let fprs: Vec<String> = keys.iter().map(|k| k["fingerprint"].as_str().unwrap().to_string()).collect();
        assert_eq!(fprs, primary_fprs(&gpg, "pub"), "{name}: keys or their order differ from gpg's");
        let mut uids: Vec<String> = keys
            .iter()
            .flat_map(|k| k["user_ids"].as_array().unwrap().iter().map(|u| u.as_str().unwrap().to_string()))
            .collect();
        let mut want: Vec<String> = colon_field(&gpg, "uid", 10).into_iter().filter(|u| !u.contains('\\')).collect();
        uids.retain(|u| want.contains(u));
        uids.sort();
        want.sort();
        assert_eq!(uids, want, "{name}: user ids");
        let gpgsm = recorded(&format!("{name}.gpgsm24-k-colons.txt"));
        let certs: Vec<String> =
            listed(&db(name), "x509").iter().map(|k| k["fingerprint"].as_str().unwrap().to_string()).collect();
        assert_eq!(certs, primary_fprs(&gpgsm, "crt"), "{name}: certificates or their order differ from gpgsm's");
    }
}

/// `--check-sigs` on a database, every lookup: gpg 2.4.7's statuses with keyboxd.
fn check_sigs_equal_gpg24_with_keyboxd() {
    for name in DATABASES {
        let want = gpg_colons(&recorded(&format!("{name}.gpg24-check-sigs-colons.txt")));
        assert!(!want.is_empty());
        for lookup in ["gnupg", "index", "scan"] {
            let o = run(["list", "--check-sigs", "--json", "--lookup", lookup, db(name).to_str().unwrap()]);
            assert!(o.status.success(), "{name} {lookup}: {}", stderr(&o));
            assert_eq!(ours(&stdout(&o)), want, "{name} --lookup {lookup}: statuses differ from gpg 2.4.7's");
        }
    }
}

/// Every bracketed line gpgsm 2.4 printed per certificate (by SHA-1
/// fingerprint: 2.4 prints `sha1 fpr:`), sorted by fingerprint.
fn gpgsm24_notes(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut notes = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(f) = line.strip_prefix("sha1 fpr: ").or_else(|| line.strip_prefix("fingerprint: ")) {
            out.push((f.replace(':', ""), std::mem::take(&mut notes)));
        } else if let Some(n) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if n != "keyboxd" {
                out.last_mut().expect("a certificate before its notes").1.push(n.to_string());
            }
        }
    }
    out.sort();
    out
}

/// `list --with-validation` on a database, every lookup: gpgsm 2.4.7's
/// verdicts and notes with keyboxd.
fn validation_equals_gpgsm24_with_keyboxd() {
    for name in ["gnupg-mixed", "gnupg-deleted"] {
        let want = gpgsm24_notes(&recorded(&format!("{name}.gpgsm24-k-validation.txt")));
        assert!(want.len() > 20, "{name}");
        let trust = fixture(&format!("{name}.trustlist.txt"));
        for lookup in ["gnupg", "index", "scan"] {
            let o = run([
                "list",
                "--with-validation",
                "--at",
                AT,
                "--lookup",
                lookup,
                "--trustlist",
                trust.to_str().unwrap(),
                db(name).to_str().unwrap(),
            ]);
            assert!(o.status.code() == Some(0), "{name} {lookup}: {}", stderr(&o));
            assert_eq!(
                gpgsm24_notes(&stdout(&o)),
                want,
                "{name} --lookup {lookup}: verdicts differ from gpgsm 2.4.7's"
            );
        }
    }
}

/// SQLite's events on the database file in kbxscope's JSON summary.
fn db_file_events(summary: &serde_json::Value, db: &Path) -> serde_json::Value {
    let files = summary["files"].as_array().expect("per-file events");
    let f = files.iter().find(|f| f["path"] == db.to_str().unwrap()).expect("the database among the files");
    f["events"].clone()
}

/// What strace saw keyboxd do on `pubring.db` for one workload (the
/// fixture's `NAME.keyboxd-events.txt`): its `totals on pubring.db` line.
fn keyboxd_totals(name: &str, workload: &str) -> BTreeMap<String, u64> {
    let text = recorded(&format!("{name}.keyboxd-events.txt"));
    let section = text.split("\n## ").find(|s| s.starts_with(workload)).unwrap_or_else(|| panic!("{name}: {workload}"));
    let line = section.lines().find_map(|l| l.strip_prefix("totals on pubring.db: ")).expect("totals line");
    line.split(", ")
        .map(|kv| {
            let (k, v) = kv.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

/// `--lookup gnupg` on a database replays keyboxd: SQLite's `pread`s equal
/// those of the real keyboxd, counted by strace, for gpg's `--check-sigs`
/// and gpgsm's validation; all its calls on the file are within 5%
/// (kbxscope adds one read transaction to check the schema, and closes).
fn gnupg_lookup_reads_what_keyboxd_read() {
    for name in ["gnupg-mixed", "gnupg-deleted"] {
        let (_dir, path) = db_copy(name);
        let trust = fixture(&format!("{name}.trustlist.txt"));
        let p = path.to_str().unwrap();
        let runs: [(&str, Vec<&str>); 2] = [
            (
                "gpg --homedir /tmp/keyboxd-fixtures/home --batch --with-colons --check-sigs",
                vec!["list", "--check-sigs", p],
            ),
            (
                "gpgsm --homedir /tmp/keyboxd-fixtures/home --batch -k --with-validation",
                vec!["list", "--with-validation", "--at", AT, "--trustlist", trust.to_str().unwrap(), p],
            ),
        ];
        for (workload, args) in runs {
            let mut full = vec!["--io-summary=json"];
            full.extend(args);
            let o = run(&full);
            assert!(o.status.success(), "{name}: {}", stderr(&o));
            let ours = db_file_events(&io_summary(&o), &path);
            let theirs = keyboxd_totals(name, workload);
            assert_eq!(ours["read"], theirs["pread64"], "{name} {workload}: preads");
            let their_total: u64 = theirs.values().sum();
            let our_total = ours["total"].as_u64().unwrap();
            let off = (our_total as f64 - their_total as f64).abs() / their_total as f64;
            assert!(off <= 0.05, "{name} {workload}: {our_total} events against keyboxd's {their_total}");
            eprintln!(
                "{name} {workload}: preads {} (keyboxd's too), events {our_total} against {their_total}",
                ours["read"]
            );
        }
    }
}

/// Calls strace saw on `file` (by kbxscope's operation names): every call
/// naming the path or a descriptor on it (strace -y).
fn strace_ops(trace: &str, file: &Path) -> BTreeMap<&'static str, u64> {
    let quoted = format!("\"{}\"", file.display());
    let fd_tag = format!("<{}>", file.display());
    let mut ops = BTreeMap::new();
    for line in trace.lines() {
        let line = line.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
        let Some(paren) = line.find('(') else { continue };
        let (call, args) = (&line[..paren], &line[paren + 1..]);
        if call.starts_with("exec") {
            continue;
        }
        let on_fd = args.trim_start_matches(|c: char| c.is_ascii_digit()).starts_with(&fd_tag);
        let named = args.starts_with(&quoted) || args.starts_with("AT_FDCWD<") && args.contains(&quoted);
        if !(on_fd || named) {
            continue;
        }
        let op = match call {
            "open" | "openat" => "open",
            "read" | "pread64" => "read",
            "close" => "close",
            "fstat" | "newfstatat" | "statx" | "stat" | "lstat" | "readlink" => "stat",
            "fcntl" => "lock",
            "access" | "faccessat" | "faccessat2" => "access",
            "lseek" => "seek",
            other => panic!("unexpected call on {}: {other}: {line}", file.display()),
        };
        *ops.entry(op).or_default() += 1;
    }
    ops
}

/// Every call kbxscope makes on a database and its journal, counted by
/// strace, equals its own summary: SQLite's events per file, plus its own
/// look at the first bytes (open, fstat, read, close).
fn database_events_equal_strace() {
    let (_dir, path) = db_copy("gnupg-mixed");
    let journal = PathBuf::from(format!("{}-journal", path.display()));
    for args in [vec!["stats"], vec!["list", "--check-sigs"], vec!["list", "--with-validation", "--lookup", "index"]] {
        let trace = tempfile::NamedTempFile::new().unwrap();
        let mut full =
            vec!["-f", "-y", "-o", trace.path().to_str().unwrap(), env!("CARGO_BIN_EXE_kbxscope"), "--io-summary=json"];
        full.extend(&args);
        full.push(path.to_str().unwrap());
        let o = Command::new("strace").args(&full).env("KBXSCOPE_CACHE_DIR", std::env::temp_dir()).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let summary = io_summary(&o);
        let text = std::fs::read_to_string(trace.path()).unwrap();
        let seen = strace_ops(&text, &path);
        let mut ours: BTreeMap<&'static str, u64> = BTreeMap::new();
        let sqlite = db_file_events(&summary, &path);
        for op in ["open", "read", "close", "stat", "lock", "access", "seek"] {
            let n = sqlite[op].as_u64().unwrap_or(0) + u64::from(matches!(op, "open" | "read" | "close" | "stat"));
            if n > 0 {
                ours.insert(op, n);
            }
        }
        assert_eq!(ours, seen, "{args:?}: kbxscope's count (SQLite's and its look) against strace's on the database");
        let journal_seen = strace_ops(&text, &journal);
        let journal_ours = summary["files"].as_array().unwrap().iter().find(|f| f["path"] == journal.to_str().unwrap());
        let n = journal_ours.map_or(0, |f| f["events"]["stat"].as_u64().unwrap());
        assert_eq!(journal_seen.get("stat").copied().unwrap_or(0), n, "{args:?}: the journal");
        assert!(n > 0, "SQLite checks for a hot journal");
    }
}

/// sha256, size and modification time of every file in `dir`.
pub(crate) fn snapshot(dir: &Path) -> Vec<(String, u64, std::time::SystemTime, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            let bytes = if meta.is_dir() { Vec::new() } else { std::fs::read(e.path()).unwrap() };
            use sha2::Digest;
            (
                e.file_name().to_string_lossy().into_owned(),
                meta.len(),
                meta.modified().unwrap(),
                sha2::Sha256::digest(&bytes).to_vec(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Nothing is ever written beside a database: after every command (and a
/// GnuPG home given as the directory), the directory holds the same files
/// with the same bytes and times — no journal, WAL, `-shm` or lock file.
fn a_database_is_only_read() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("common.conf"), "use-keyboxd\n").unwrap();
    let store = home.path().join("public-keys.d");
    std::fs::create_dir(&store).unwrap();
    let path = store.join("pubring.db");
    std::fs::copy(db("gnupg-mixed"), &path).unwrap();
    let (before_home, before) = (snapshot(home.path()), snapshot(&store));
    let p = path.to_str().unwrap();
    let h = home.path().to_str().unwrap();
    for args in [
        vec!["stats", p],
        vec!["stats", "--json", h],
        vec!["dump", p],
        vec!["list", h],
        vec!["find", p, "Alpha"],
        vec!["list", "--with-sigs", p],
        vec!["list", "--check-sigs", "--lookup", "gnupg", h],
        vec!["list", "--check-sigs", "--lookup", "scan", p],
        vec!["list", "--with-validation", "--lookup", "gnupg", h],
        vec!["list", "--with-validation", "--lookup", "index", p],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_eq!(snapshot(&store), before, "{args:?} changed public-keys.d");
        assert_eq!(snapshot(home.path()), before_home, "{args:?} changed the home");
    }
}

/// A GnuPG home resolves to its store as gpg resolves it: `use-keyboxd` in
/// `common.conf` → `public-keys.d/pubring.db`, else `pubring.kbx`.
fn a_gnupg_home_resolves_to_its_store() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("public-keys.d")).unwrap();
    std::fs::copy(db("gnupg-mixed"), home.path().join("public-keys.d/pubring.db")).unwrap();
    std::fs::copy(fixture("gnupg-deleted.kbx"), home.path().join("pubring.kbx")).unwrap();
    let count = |home: &Path| stdout(&run(["list", "--json", home.to_str().unwrap()])).lines().count();
    assert_eq!(count(home.path()), 45, "no common.conf: pubring.kbx (gnupg-deleted's 45 keys)");
    std::fs::write(home.path().join("common.conf"), "# keys in keyboxd\nuse-keyboxd\n").unwrap();
    assert_eq!(count(home.path()), 44, "use-keyboxd: public-keys.d/pubring.db (gnupg-mixed's 44)");
    let empty = tempfile::tempdir().unwrap();
    let o = run(["list", empty.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("is not a keybox: it is a directory") && err.contains("no GnuPG home either"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `stats` and `dump` of a database: what its tables hold.
fn stats_and_dump_of_a_database() {
    let o = run(["stats", "--json", db("gnupg-mixed").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // the fixture's schema file counts the same rows with sqlite3
    let schema = recorded("gnupg-mixed.sqlite-schema.txt");
    let rows = |table: &str| -> u64 {
        schema.lines().find_map(|l| l.strip_prefix(&format!("{table}|"))).unwrap().parse().unwrap()
    };
    assert_eq!(v["total"], rows("pubkey"));
    assert_eq!(v["fingerprints"], rows("fingerprint"));
    assert_eq!(v["user_ids"], rows("userid"));
    assert_eq!(v["issuers"], rows("issuer"));
    assert_eq!((v["openpgp"].as_u64(), v["x509"].as_u64()), (Some(20), Some(24)));
    let o = run(["dump", db("gnupg-mixed").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.matches("BEGIN-RECORD").count(), 44);
    assert!(text.contains("Ubid: 26A969FE5E2EAB2E5552D6C33259459D85592A97\nType: 1 (OpenPGP)\n"), "{text}");
    assert!(text.contains("Uid[0].uid: \"Dieter Núñez <greta.weiss10008@bar.example>\""));
    assert!(text.contains("Issuer[0].sn: \"75566A8CA8F500DC7AF753816111B6F111BE34BE\""));
}

/// A database changed with SQLite (`rusqlite`) on a copy.
fn altered(sql: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = db_copy("gnupg-mixed");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(sql).unwrap();
    drop(c);
    (dir, path)
}

fn one_line_error(args: &[&str], want: &str) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(want), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Bad databases: a clear one-line error naming the file (and row), or the
/// listing with the bad row named; nothing written beside them.
fn bad_databases_get_one_line_errors() {
    // another schema
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (x);").unwrap();
    one_line_error(
        &["list", other.to_str().unwrap()],
        "is an SQLite database but not keyboxd's: no table 'pubkey' (its tables: t)",
    );
    // a column missing
    let (_d, path) = altered("ALTER TABLE issuer RENAME COLUMN sn TO serial;");
    one_line_error(&["stats", path.to_str().unwrap()], "table 'issuer' has no column 'sn'");
    // truncated
    let (_d, path) = db_copy("gnupg-mixed");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..8192]).unwrap();
    for cmd in ["stats", "list", "dump"] {
        one_line_error(&[cmd, path.to_str().unwrap()], "the database is damaged");
    }
    // a keyblob that is no keyblock: the row is named, the others listed
    let (_d, path) =
        altered("UPDATE pubkey SET keyblob = x'DEADBEEF' WHERE ubid = x'26A969FE5E2EAB2E5552D6C33259459D85592A97';");
    let o = run(["list", "--json", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o).lines().count(), 43);
    let err = stderr(&o);
    assert!(
        err.contains("(ubid 26A969FE5E2EAB2E5552D6C33259459D85592A97): its keyblob is no OpenPGP keyblock"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // a column of the wrong type
    let (_d, path) = altered("UPDATE pubkey SET type = 'x' WHERE ubid = x'26A969FE5E2EAB2E5552D6C33259459D85592A97';");
    one_line_error(&["list", path.to_str().unwrap()], "column 'type' holds text");
    // WAL mode: a reader would have to write the -shm file
    let (dir, path) = altered("PRAGMA journal_mode = WAL;");
    let files = snapshot(dir.path());
    one_line_error(&["list", path.to_str().unwrap()], "the database is in WAL mode");
    assert_eq!(snapshot(dir.path()), files, "nothing created beside a WAL database");
}

/// A database another process holds a write lock on: kbxscope waits 5 s
/// for the writer (SQLite's busy timeout), then says so in one line.
fn a_locked_database_is_a_clear_error() {
    let (_dir, path) = db_copy("gnupg-mixed");
    let mut writer = Command::new("sqlite3")
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::{BufRead, Write};
    let mut input = writer.stdin.take().unwrap();
    input.write_all(b"BEGIN EXCLUSIVE;\nSELECT 'locked';\n").unwrap();
    input.flush().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(writer.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "locked");
    one_line_error(
        &["list", path.to_str().unwrap()],
        "database is locked (another process, such as keyboxd, holds a write lock",
    );
    drop(input);
    writer.wait().unwrap();
}

/// The rows of `sql` in a database, each as text, sorted.
fn table(path: &Path, sql: &str) -> Vec<Vec<String>> {
    let c = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = c.prepare(sql).unwrap();
    let n = stmt.column_count();
    let mut rows: Vec<Vec<String>> = stmt
        .query_map([], |r| {
            Ok((0..n)
                .map(|i| match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => "NULL".to_string(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Blob(b) => b.iter().map(|x| format!("{x:02X}")).collect(),
                    rusqlite::types::ValueRef::Real(f) => f.to_string(),
                })
                .collect())
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.sort();
    rows
}

/// A keyblock without its ring-trust packets (GnuPG's local verdict
/// caches, which differ between a keybox gpg checked and a fresh import).
fn without_trust_packets(hex: &str) -> Vec<u8> {
    let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    let mut out = Vec::new();
    for p in kbxscope::kbx::keyblock::split_packets(&bytes).unwrap() {
        if p.tag != kbxscope::kbx::keyblock::tag::TRUST {
            out.push(p.tag);
            out.extend_from_slice(p.body);
        }
    }
    out
}

/// `convert` writes the tables keyboxd wrote for the same keys: every row
/// of `pubkey`, `fingerprint` (libgcrypt's keygrips too: RSA, DSA,
/// Elgamal, every curve of the fixtures, OpenPGP keys and certificates),
/// `userid` and `issuer` equal to the real keyboxd's.
fn convert_writes_keyboxds_rows() {
    for name in DATABASES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pubring.db");
        let o = run(["convert", fixture(&format!("{name}.kbx")).to_str().unwrap(), out.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let theirs = db(name);
        for sql in [
            "SELECT hex(ubid), type, ephemeral, revoked FROM pubkey",
            "SELECT fpr, kid, keygrip, subkey, ubid FROM fingerprint",
            "SELECT uid, addrspec, type, uidno, ubid FROM userid",
            "SELECT sn, dn, ubid FROM issuer",
            "SELECT name FROM config",
        ] {
            assert_eq!(table(&out, sql), table(&theirs, sql), "{name}: {sql}");
        }
        let keyblobs = |p: &Path| -> Vec<Vec<u8>> {
            let mut v: Vec<Vec<u8>> = table(p, "SELECT keyblob FROM pubkey WHERE type = 1")
                .iter()
                .map(|r| without_trust_packets(&r[0]))
                .collect();
            v.extend(table(p, "SELECT keyblob FROM pubkey WHERE type = 2").iter().map(|r| r[0].as_bytes().to_vec()));
            v.sort();
            v
        };
        assert_eq!(keyblobs(&out), keyblobs(&theirs), "{name}: keyblobs");
        assert_eq!(table(&out, "PRAGMA page_size"), [["4096"]]);
        assert_eq!(table(&out, "PRAGMA journal_mode"), [["delete"]]);
    }
}

/// `convert` never overwrites without --force, writes nothing when it
/// fails, and refuses a database as its input.
fn convert_writes_only_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pubring.db");
    std::fs::write(&out, b"mine").unwrap();
    let kbx = fixture("gnupg-mixed.kbx");
    let o = run(["convert", kbx.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("exists; not replacing it"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), b"mine");
    let o = run(["convert", "--force", kbx.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(["convert", db("gnupg-mixed").to_str().unwrap(), dir.path().join("again.db").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is keyboxd's database already"), "{}", stderr(&o));
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["pubring.db"], "nothing left behind");
}

/// `gen --keyboxd` writes the generated keys as a database: the same keys
/// and verdicts as the keybox `gen` makes with the same options.
fn gen_writes_the_same_keys_as_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let (kbx, dbp) = (dir.path().join("tiny.kbx"), dir.path().join("tiny.db"));
    for (out, extra) in [(&kbx, None), (&dbp, Some("--keyboxd"))] {
        let mut args = vec!["gen", "--preset", "tiny", out.to_str().unwrap()];
        args.extend(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let trust = dir.path().join("tiny.kbx.trustlist.txt");
    let verdicts = |p: &Path, lookup: &str| {
        let o = run([
            "list",
            "--with-validation",
            "--json",
            "--lookup",
            lookup,
            "--trustlist",
            trust.to_str().unwrap(),
            p.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut v: Vec<(String, String)> = stdout(&o)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .map(|k| (k["fingerprint"].as_str().unwrap().to_string(), k["validation"].to_string()))
            .collect();
        v.sort();
        v
    };
    let want = verdicts(&kbx, "index");
    assert!(want.len() > 10);
    for lookup in ["gnupg", "index"] {
        assert_eq!(verdicts(&dbp, lookup), want, "--lookup {lookup}");
    }
    let sigs = |p: &Path| {
        let mut s = ours(&stdout(&run(["list", "--check-sigs", "--json", "--lookup", "index", p.to_str().unwrap()])));
        s.sort();
        s
    };
    assert_eq!(sigs(&dbp), sigs(&kbx));
}

/// `sweep` on a database: each size is SQLite's page cache; at SQLite's
/// default (keyboxd's, 2000 KiB) `--lookup gnupg`'s reads are the real
/// keyboxd's for gpg's `--check-sigs`, and a smaller cache reads more.
fn sweep_of_a_database_sweeps_the_page_cache() {
    let o = run([
        "sweep",
        db("gnupg-mixed").to_str().unwrap(),
        "--workload",
        "check-sigs",
        "--sizes",
        "16k,2000k",
        "--runs",
        "1",
        "--warmup",
        "1",
        "--export-json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["keyboxd"], true);
    let reads = |i: usize| v["results"][i]["events"]["read"].as_u64().unwrap();
    let theirs =
        keyboxd_totals("gnupg-mixed", "gpg --homedir /tmp/keyboxd-fixtures/home --batch --with-colons --check-sigs");
    assert_eq!(reads(1), theirs["pread64"], "2000 KiB: keyboxd's reads");
    assert!(reads(0) > reads(1), "a 16 KiB cache reads more: {} vs {}", reads(0), reads(1));
    // Its other calls are its locks: fcntl's on Linux, LockFileEx's and
    // UnlockFileEx's on Windows (as many: the same lock steps).
    assert_eq!(v["results"][1]["other_events"], theirs["fcntl"], "keyboxd's fcntl locks");
    let table = stderr(&o);
    assert!(table.contains("buffer = SQLite's page cache"), "{table}");
}

/// Every workload, in process, over `path`: whatever the damage, a clean
/// read or errors that are one line; nothing written beside the file.
fn every_workload_on(path: &Path, case: &str) -> usize {
    use kbxscope::io::{BufferSize, IoTally};
    use kbxscope::lookup::Strategy;
    use kbxscope::openpgp::Mode;
    use kbxscope::store::{Store, StoreKind};
    use kbxscope::workload::{self, stats::StoreStats};
    let tally = IoTally::new(BufferSize::default());
    let mut errors: Vec<String> = Vec::new();
    match Store::open_as(path, StoreKind::Keyboxd, &tally, None) {
        Err(e) => errors.push(e.to_string()),
        Ok(store) => {
            match workload::stats::run(&store) {
                Ok(StoreStats::Keyboxd(_)) => {}
                Ok(StoreStats::Keybox(_)) => panic!("{case}: a database counted as a keybox"),
                Err(e) => errors.push(e.to_string()),
            }
            match workload::dump::run(&store, |_, _| {}) {
                Ok(out) => errors.extend(out.rows.iter().map(ToString::to_string)),
                Err(e) => errors.push(e.to_string()),
            }
            match workload::list::run(&store, workload::TypeFilter::All, |_| {}) {
                Err(e) => errors.push(e.to_string()),
                Ok(ran) => {
                    let out = &ran.outcome;
                    errors.extend(out.problems.iter().chain(&out.fatal).map(|e| ran.places.describe(e)));
                    errors.extend(ran.places.row_problems().iter().map(ToString::to_string));
                }
            }
            for lookup in [Strategy::Gnupg, Strategy::Index] {
                match workload::validate::run(
                    &store,
                    lookup,
                    &Default::default(),
                    1_800_000_000,
                    GnupgVersion::V2_4,
                    false,
                    |_| {},
                ) {
                    Ok(ran) => errors
                        .extend(ran.outcome.problems.iter().chain(&ran.outcome.fatal).map(|e| ran.places.describe(e))),
                    Err(e) => errors.push(e.to_string()),
                }
                match workload::sigs::run(
                    &store,
                    Mode::CheckSigs,
                    lookup,
                    Judge { version: GnupgVersion::V2_4, now: 1_800_000_000 },
                    |_| {},
                ) {
                    Ok(ran) => errors.extend(ran.outcome.fatal.iter().map(|e| ran.places.describe(e))),
                    Err(e) => errors.push(e.to_string()),
                }
            }
        }
    }
    for e in &errors {
        assert!(!e.contains('\n'), "{case}: an error of more than one line: {e}");
        assert!(!e.is_empty(), "{case}: an empty error");
    }
    errors.len()
}

/// The corruption corpus for databases: every truncation at a page
/// boundary and in the middle of a page, and byte flips spread over every
/// page of a keyboxd-made database, through every workload (stats, dump,
/// list, validation and --check-sigs with keyboxd's pattern and the
/// index): never a panic, every error one line, nothing written.
fn database_corruption_corpus() {
    let original = std::fs::read(db("gnupg24-v5")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pubring.db");
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for cut in (0..original.len()).step_by(4096).chain((2048..original.len()).step_by(4096)).chain([1, 15, 16, 99, 100])
    {
        cases.push((format!("cut at {cut}"), original[..cut].to_vec()));
    }
    // A deterministic spread of flips: every page, many places in each.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..300 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = (x as usize) % original.len();
        let mut bytes = original.clone();
        bytes[at] ^= 1 << (i % 8);
        cases.push((format!("bit {} of byte {at}", i % 8), bytes));
    }
    let mut failed = 0;
    for (case, bytes) in &cases {
        std::fs::write(&path, bytes).unwrap();
        failed += usize::from(every_workload_on(&path, case) > 0);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["pubring.db"], "{case}: something was written beside the database");
    }
    eprintln!("database corruption corpus: {} cases, {failed} reported errors", cases.len());
    assert!(failed > 10, "the damage was seen");
}

/// A database without keys (made from a keybox holding only its header):
/// every command reads it cleanly and lists nothing.
fn an_empty_database_lists_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let kbx = dir.path().join("empty.kbx");
    let mut header = vec![0u8; 32];
    header[3] = 32;
    header[4] = 1;
    header[5] = 1;
    header[8..12].copy_from_slice(b"KBXf");
    std::fs::write(&kbx, &header).unwrap();
    let dbp = dir.path().join("empty.db");
    let o = run(["convert", kbx.to_str().unwrap(), dbp.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for args in [
        vec!["stats", "--json"],
        vec!["dump"],
        vec!["list"],
        vec!["list", "--check-sigs"],
        vec!["list", "--check-sigs", "--lookup", "index"],
        vec!["list", "--with-validation"],
        vec!["list", "--with-validation", "--lookup", "scan"],
    ] {
        let mut full = args.clone();
        full.push(dbp.to_str().unwrap());
        let o = run(&full);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(args[0] == "stats" || out.trim().is_empty(), "{args:?}: {out}");
    }
}

/// `sweep --versus-keyboxd`: the workload on the keybox at its buffer
/// sizes and on a database of the same keys at its page-cache sizes, in one
/// command: two tables and a verdict, both in the JSON (`versus`), the CSV
/// (`store`) and the plot; the temporary database is gone afterwards.
fn sweep_versus_keyboxd_shows_both_stores() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let (json, csv, svg) = (out.path().join("s.json"), out.path().join("s.csv"), out.path().join("s.svg"));
    let o = crate::common::bin()
        .env("TMPDIR", tmp.path())
        .args([
            "sweep",
            fixture("gnupg-mixed.kbx").to_str().unwrap(),
            "--workload",
            "check-sigs",
            "--versus-keyboxd",
            "--sizes",
            "0,64",
            "--cache-sizes",
            "64k,2000k",
            "--runs",
            "1",
            "--warmup",
            "1",
            "--export-json",
            json.to_str().unwrap(),
            "--export-csv",
            csv.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(table.contains("as keyboxd's database") && table.contains("keybox or keyboxd?"), "{table}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    assert_eq!(v["versus"]["keyboxd"], true);
    // The converted database is laid out as kbxscope's SQLite writes it, not
    // as keyboxd's import did: at 2000 KiB its reads are within 1% of what
    // the real keyboxd read from its own database of these keys.
    let theirs =
        keyboxd_totals("gnupg-mixed", "gpg --homedir /tmp/keyboxd-fixtures/home --batch --with-colons --check-sigs");
    let ours = v["versus"]["results"][1]["events"]["read"].as_u64().unwrap();
    assert!(
        ours.abs_diff(theirs["pread64"]) * 100 <= theirs["pread64"],
        "{ours} against keyboxd's {}",
        theirs["pread64"]
    );
    let csv = std::fs::read_to_string(&csv).unwrap();
    let stores: Vec<&str> = csv.lines().map(|l| l.rsplit(',').next().unwrap()).collect();
    assert_eq!(stores, ["store", "keybox", "keybox", "keyboxd", "keyboxd"]);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.contains("keyboxd&apos;s database") || svg.contains("keyboxd's database"),
        "the plot draws the database"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "the temporary database is removed");
}

/// GnuPG 2.4 with keyboxd, live, where a Debian 13 chroot is given in
/// `KBXSCOPE_GNUPG24_CHROOT` (with `/proc` mounted; see
/// `benches/keyboxd-gnupg24.sh`): on a fixture database and on the database
/// `convert` makes of the same keys, the real gpg's `--check-sigs` statuses
/// and gpgsm's verdicts equal kbxscope's, the real gpg lists every key of
/// the converted database, and kbxscope reads a database the running
/// keyboxd holds open without changing a byte of it. Optional in CI (the live tests): without
/// the chroot it says SKIPPED and checks nothing.
fn live_gnupg24_with_keyboxd() {
    let Some(chroot) = std::env::var_os("KBXSCOPE_GNUPG24_CHROOT").map(PathBuf::from) else {
        eprintln!("SKIPPED live_gnupg24_with_keyboxd: KBXSCOPE_GNUPG24_CHROOT is not set (optional)");
        return;
    };
    assert!(chroot.join("proc/self/stat").exists(), "{}/proc is not mounted", chroot.display());
    let inner = format!("/tmp/kbxscope-live-{}", std::process::id());
    let outer = chroot.join(inner.trim_start_matches('/'));
    let g = |args: &[&str]| Command::new("chroot").arg(&chroot).args(args).output().unwrap();
    let converted = tempfile::tempdir().unwrap();
    let mixed_db = converted.path().join("mixed.db");
    let o = run(["convert", fixture("gnupg-mixed.kbx").to_str().unwrap(), mixed_db.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (label, source) in [("keyboxd-made", db("gnupg-mixed")), ("converted", mixed_db)] {
        let home = outer.join("home");
        std::fs::create_dir_all(home.join("public-keys.d")).unwrap();
        std::fs::copy(&source, home.join("public-keys.d/pubring.db")).unwrap();
        std::fs::write(home.join("common.conf"), "use-keyboxd\n").unwrap();
        std::fs::copy(fixture("gnupg-mixed.trustlist.txt"), home.join("trustlist.txt")).unwrap();
        let h = format!("{inner}/home");
        let cs = g(&["gpg", "--homedir", &h, "--batch", "--with-colons", "--check-sigs"]);
        let k = g(&["gpg", "--homedir", &h, "--batch", "--with-colons", "-k"]);
        let v = g(&["gpgsm", "--homedir", &h, "--batch", "-k", "--with-validation", "--disable-dirmngr"]);
        let ours_db = home.join("public-keys.d/pubring.db");
        // keyboxd is still running and holds the database open: kbxscope
        // reads it beside keyboxd and changes nothing.
        let keys = home.join("public-keys.d");
        let before = snapshot(&keys);
        let o = run(["list", "--check-sigs", ours_db.to_str().unwrap()]);
        assert!(o.status.success(), "{label}: beside a running keyboxd: {}", stderr(&o));
        assert_eq!(snapshot(&keys), before, "{label}: public-keys.d changed while keyboxd held it");
        let again = g(&["gpg", "--homedir", &h, "--batch", "--with-colons", "-k"]);
        assert_eq!(again.stdout, k.stdout, "{label}: keyboxd serves the same keys after kbxscope's read");
        g(&["gpgconf", "--homedir", &h, "--kill", "all"]);
        let o = run(["list", "--check-sigs", "--json", ours_db.to_str().unwrap()]);
        assert_eq!(
            ours(&stdout(&o)),
            gpg_colons(&String::from_utf8_lossy(&cs.stdout)),
            "{label}: --check-sigs statuses"
        );
        let fprs: Vec<String> =
            listed(&ours_db, "openpgp").iter().map(|k| k["fingerprint"].as_str().unwrap().to_string()).collect();
        assert_eq!(fprs, primary_fprs(&String::from_utf8_lossy(&k.stdout), "pub"), "{label}: gpg -k");
        let trust = home.join("trustlist.txt");
        let o = run(["list", "--with-validation", "--trustlist", trust.to_str().unwrap(), ours_db.to_str().unwrap()]);
        assert_eq!(gpgsm24_notes(&stdout(&o)), gpgsm24_notes(&String::from_utf8_lossy(&v.stdout)), "{label}: verdicts");
        std::fs::remove_dir_all(&outer).unwrap();
        eprintln!("live gpg/gpgsm 2.4 with keyboxd on the {label} database: statuses, listing and verdicts equal");
    }
}

/// SQLite's calls in a trace: one `kbx::event` span each, named by its
/// operation, with the file it touched; as many as the summary counts.
fn database_calls_are_traced_per_file() {
    let (dir, path) = db_copy("gnupg-mixed");
    let trace = dir.path().join("t.json");
    let o = run([
        "--trace-out",
        trace.to_str().unwrap(),
        "--trace-level",
        "event",
        "--io-summary=json",
        "list",
        "--check-sigs",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let events: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let on_db = |name: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "B" && e["name"] == name && e["args"]["file"] == path.to_str().unwrap())
            .count() as u64
    };
    let summary = db_file_events(&io_summary(&o), &path);
    for op in ["read", "lock", "stat", "open"] {
        assert_eq!(on_db(op), summary[op].as_u64().unwrap(), "{op} spans on the database");
    }
}

/// GnuPG 2.2 has no keyboxd: `--gnupg-version 2.2` on a database is a
/// one-line error (the listing and the signature sweep), not a replay of
/// something that never happens.
fn gnupg_22_on_a_database_is_an_error() {
    let p = db("gnupg-mixed");
    let p = p.to_str().unwrap();
    for args in [
        vec!["--gnupg-version", "2.2", "list", "--check-sigs", p],
        vec!["--gnupg-version", "2.2", "sweep", p, "--workload", "check-sigs", "--sizes", "64", "--runs", "1"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("GnuPG 2.2") && err.contains("keyboxd"), "{args:?}: {err}");
    }
}

/// The keygrips `convert` writes equal gpg's own (`--with-keygrip`, which
/// asks libgcrypt) for every key of the fixture of curves (RSA, DSA,
/// secp256k1, brainpoolP256r1/384r1/512r1, NIST P-521, Ed25519) and of the
/// mixed one (Ed25519, Curve25519, RSA).
fn keygrips_equal_gpgs() {
    for name in ["gnupg-curves", "gnupg-mixed"] {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        std::fs::copy(fixture(&format!("{name}.kbx")), home.join("pubring.kbx")).unwrap();
        let listed = Command::new("gpg")
            .arg("--homedir")
            .arg(&home)
            .args(["--batch", "--with-colons", "--with-keygrip", "-k"])
            .output()
            .unwrap();
        crate::common::stop_gnupg_daemons(&home);
        let text = String::from_utf8_lossy(&listed.stdout).into_owned();
        let mut theirs = BTreeMap::new();
        let mut fpr = String::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split(':').collect();
            match f[0] {
                "fpr" => fpr = f[9].to_string(),
                "grp" => {
                    theirs.insert(fpr.clone(), f[9].to_string());
                }
                _ => {}
            }
        }
        assert!(theirs.len() > 5, "{name}: gpg lists keygrips: {text}");
        let db = dir.path().join("k.db");
        let o = run(["convert", fixture(&format!("{name}.kbx")).to_str().unwrap(), db.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let ours: BTreeMap<String, String> = table(&db, "SELECT hex(fpr), hex(keygrip) FROM fingerprint")
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .filter(|(f, _)| theirs.contains_key(f))
            .collect();
        assert_eq!(ours, theirs, "{name}");
    }
}

crate::tests![
    gnupg_22_on_a_database_is_an_error,
    keygrips_equal_gpgs needs ["gpg"],
    database_calls_are_traced_per_file,
    live_gnupg24_with_keyboxd,
    sweep_versus_keyboxd_shows_both_stores,
    an_empty_database_lists_nothing,
    database_corruption_corpus,
    sweep_of_a_database_sweeps_the_page_cache,
    convert_writes_keyboxds_rows,
    convert_writes_only_a_new_file,
    gen_writes_the_same_keys_as_a_database,
    listings_equal_gnupg24_with_keyboxd,
    check_sigs_equal_gpg24_with_keyboxd,
    validation_equals_gpgsm24_with_keyboxd,
    gnupg_lookup_reads_what_keyboxd_read,
    database_events_equal_strace needs ["strace"],
    a_database_is_only_read,
    a_gnupg_home_resolves_to_its_store,
    stats_and_dump_of_a_database,
    bad_databases_get_one_line_errors,
    a_locked_database_is_a_clear_error needs ["sqlite3"],
];
