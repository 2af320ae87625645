//! `kbxscope trustdb` against gpg's own view of its trust database: the
//! owner trusts equal `gpg --export-ownertrust`'s lines, the header equals
//! the `tru` record of `gpg --with-colons --list-keys`, the output imports
//! back with `gpg --import-ownertrust`; damage is named with its record
//! and the database is never changed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{cmd, fixture, stderr, stdout, stop_gnupg_daemons};

crate::tests!(
    owner_trusts_and_header_equal_gpgs needs ["gpg"],
    the_output_imports_back_into_gpg needs ["gpg"],
    damage_is_named_and_nothing_changes needs ["gpg"],
    listings_show_gpgs_validity_in_each_trust_model needs ["gpg"],
    the_validity_column_on_bad_input,
    validity_equals_gpgs_on_the_arch_linux_web_of_trust needs ["gpg", "/usr/share/keyrings/archlinux.gpg", "/usr/share/keyrings/archlinux-trusted", "/usr/share/keyrings/archlinux-revoked"],
    the_check_equals_gnupg24s_through_keyboxd needs ["gpg"],
    the_check_equals_gpgs_on_the_fixture needs ["gpg"],
    the_check_equals_gnupg24s_on_the_arch_linux_web_of_trust needs ["/usr/share/keyrings/archlinux.gpg", "/usr/share/keyrings/archlinux-trusted", "/usr/share/keyrings/archlinux-revoked"],
    owner_trusts_and_header_equal_gnupg24s,
);

fn gpg(home: &Path, args: &[&str]) -> std::process::Output {
    let o = Command::new("gpg")
        .args(["--homedir", home.to_str().unwrap(), "--batch", "--yes"])
        .args(args)
        .output()
        .expect("run gpg");
    assert!(o.status.success(), "gpg {args:?}: {}", stderr(&o));
    o
}

/// A home holding the mixed fixture's keys, owner trusts of every level
/// imported (one key disabled), and the trust database checked: trust
/// and validity records for the web of trust gpg computed.
fn trusted_home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir(&home).unwrap();
    private(&home);
    std::fs::copy(fixture("gnupg-mixed.kbx"), home.join("pubring.kbx")).unwrap();
    let listing = stdout(&gpg(&home, &["--with-colons", "--list-keys"]));
    let fprs: Vec<&str> = listing
        .lines()
        .scan(false, |after_pub, l| {
            let f: Vec<&str> = l.split(':').collect();
            let out = (*after_pub && f[0] == "fpr").then(|| f[9]);
            *after_pub = match f[0] {
                "pub" => true,
                "fpr" => false,
                _ => *after_pub,
            };
            Some(out)
        })
        .flatten()
        .collect();
    assert!(fprs.len() >= 6, "{listing}");
    let levels = [6, 5, 4, 3, 2, 6];
    let text: String = fprs.iter().zip(levels).map(|(f, t)| format!("{f}:{t}:\n")).collect();
    let file = dir.join("ownertrust.txt");
    std::fs::write(&file, text).unwrap();
    gpg(&home, &["--import-ownertrust", file.to_str().unwrap()]);
    gpg(&home, &["--check-trustdb"]);
    gpg(&home, &["--edit-key", fprs[2], "disable", "save"]);
    stop_gnupg_daemons(&home);
    home
}

/// A copy of HOME's keybox and trust database at DIR/NAME.
fn copy_home(home: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::create_dir(&to).unwrap();
    private(&to);
    for f in ["pubring.kbx", "trustdb.gpg"] {
        std::fs::copy(home.join(f), to.join(f)).unwrap();
    }
    to
}

/// Per key (fingerprint): field 2 of its `pub` record and of each `uid`
/// record, from gpg's colon listing.
fn colon_validities(listing: &str) -> Vec<(String, String, Vec<String>)> {
    let mut out: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut pending: Option<String> = None;
    for l in listing.lines() {
        let f: Vec<&str> = l.split(':').collect();
        match f[0] {
            "pub" => pending = Some(f[1].to_string()),
            "fpr" => {
                if let Some(v) = pending.take() {
                    out.push((f[9].to_string(), v, Vec::new()));
                }
            }
            "uid" => out.last_mut().unwrap().2.push(f[1].to_string()),
            _ => {}
        }
    }
    out
}

/// The validity column of kbxscope's listings equals gpg 2.2's in each
/// trust model gpg users run: `list` against `gpg -k` line for line (the
/// column included), `--json`'s validities against the colon listing's
/// field 2 of every key and user id, and `--with-sigs` / `--check-sigs`
/// against `gpg --list-sigs` / `--check-sigs` in the pgp model. The home:
/// owner trusts of every level, one key disabled, the database checked.
fn listings_show_gpgs_validity_in_each_trust_model() {
    let dir = tempfile::tempdir().unwrap();
    let home = trusted_home(dir.path());
    let mut seen = std::collections::BTreeSet::new();
    for model in ["pgp", "classic", "direct", "always"] {
        // A copy each: gpg rewrites the database for another model.
        let h = copy_home(&home, dir.path(), model);
        let keybox = h.join("pubring.kbx");
        // gpg prints user ids in the locale's charset unless told.
        let theirs = stdout(&gpg(&h, &["--display-charset", "utf-8", "--trust-model", model, "--list-keys"]));
        let colons = stdout(&gpg(&h, &["--trust-model", model, "--with-colons", "--list-keys"]));
        stop_gnupg_daemons(&h);
        let list = |extra: &[&str]| list_openpgp(&keybox, &[&["--trust-model", model], extra].concat());
        let ours = list(&[]);
        assert_eq!(ours, theirs, "trust model {model}");
        let want = colon_validities(&colons);
        let got = json_validities(&list(&["--json"]));
        assert_eq!(got, want, "trust model {model}");
        seen.extend(want.iter().flat_map(|(_, k, u)| std::iter::once(k.clone()).chain(u.iter().cloned())));
        if model == "pgp" {
            for (ours, theirs) in [("--with-sigs", "--list-sigs"), ("--check-sigs", "--check-sigs")] {
                let want = stdout(&gpg(&h, &["--display-charset", "utf-8", theirs]));
                let o = cmd().args(["--gnupg-version", "2.2", "list", ours]).arg(&keybox).output().unwrap();
                assert!(o.status.success(), "{}", stderr(&o));
                assert_eq!(stdout(&o), want.lines().skip(2).map(|l| format!("{l}\n")).collect::<String>(), "{ours}");
            }
            stop_gnupg_daemons(&h);
        }
    }
    // The home shows more than one value, or the comparison says little.
    assert!(seen.len() >= 4, "validities seen: {seen:?}");
}

/// A real web of trust, set up as `pacman-key --init` and `--populate
/// archlinux` set one up: a local master key (ultimately trusted), Arch
/// Linux's keyring imported, its master keys given marginal owner trust
/// and signed locally by the local key, its revoked keys disabled, the
/// database checked. Before gpg's check, `trustdb --check` computes it:
/// its walk equals gpg's `depth:` lines, and what it computes for every
/// user id (validity, complete and marginal counts) is what gpg then
/// stores; `list`, with the check due, shows what `gpg -k` shows after
/// it. After it, every user id's validity column in `list` equals
/// `gpg -k`'s (full, marginal, undefined through keys of unknown owner
/// trust, expired, revoked, unknown), and `--json`'s validities the
/// colon listing's.
fn validity_equals_gpgs_on_the_arch_linux_web_of_trust() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    private(&home);
    pacman_key_populate(&|args| drop(gpg(&home, args)), "/usr/share/keyrings");
    let keybox = home.join("pubring.kbx");
    let run = |extra: &[&str]| list_openpgp(&keybox, extra);
    let uid_lines = |t: &str| t.lines().filter(|l| l.starts_with("uid ")).map(String::from).collect::<Vec<_>>();
    // The check gpg is about to run, computed beforehand from the keybox
    // and the owner trusts, against gpg's; and the listing gpg would show
    // after it.
    let listed_before = uid_lines(&run(&[]));
    check_before_gpg(&home, "2.2", &|| gpg_check_trustdb(&home));
    let theirs = stdout(&gpg(&home, &["--display-charset", "utf-8", "--list-keys"]));
    let colons = stdout(&gpg(&home, &["--with-colons", "--list-keys"]));
    stop_gnupg_daemons(&home);
    let ours = run(&[]);
    let (ours, theirs) = (uid_lines(&ours), uid_lines(&theirs));
    assert!(theirs.len() > 300, "{} user ids", theirs.len());
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "user id line {i}");
    }
    assert_eq!(ours.len(), theirs.len());
    assert_eq!(listed_before, theirs, "listed while the check was due: as gpg lists after it");
    let want = colon_validities(&colons);
    let got = json_validities(&run(&["--json"]));
    assert_eq!(got, want);
    let seen: std::collections::BTreeSet<&str> = theirs.iter().filter_map(|l| l.get(14..24)).collect();
    for v in ["[  full  ]", "[marginal]", "[  undef ]", "[ultimate]", "[ expired]", "[ revoked]", "[ unknown]"] {
        assert!(seen.contains(v), "{v} among {seen:?}");
    }
}

/// What `pacman-key --init` and `--populate archlinux` do to a home, with
/// `gpg` running gpg with the arguments given; `keyrings` is where gpg
/// finds Arch Linux's keyring files (read here from /usr/share/keyrings).
fn pacman_key_populate(gpg: &dyn Fn(&[&str]), keyrings: &str) {
    let master = "Pacman Keyring Master Key <pacman@localhost>";
    gpg(&["--passphrase", "", "--quick-gen-key", master, "ed25519", "sign", "never"]);
    gpg(&["--import", &format!("{keyrings}/archlinux.gpg")]);
    let trusted = std::fs::read_to_string("/usr/share/keyrings/archlinux-trusted").unwrap();
    gpg(&["--import-ownertrust", &format!("{keyrings}/archlinux-trusted")]);
    for fpr in trusted.lines().filter_map(|l| l.split(':').next()).filter(|f| !f.is_empty()) {
        gpg(&["--quick-lsign-key", fpr]);
    }
    let revoked = std::fs::read_to_string("/usr/share/keyrings/archlinux-revoked").unwrap();
    for fpr in revoked.split_whitespace() {
        gpg(&["--edit-key", fpr, "disable", "quit"]);
    }
}

/// The `depth:` lines of gpg's check (or of `trustdb --check`).
fn depth_lines(text: &str) -> Vec<String> {
    text.lines().map(|l| l.trim_start_matches("gpg: ")).filter(|l| l.starts_with("depth: ")).map(String::from).collect()
}

/// Per user id of `trustdb --check --json`: its name hash and `field`
/// (`stored` or `computed`).
fn check_rows(v: &serde_json::Value, field: &str) -> Vec<(String, String)> {
    v["user_ids"].as_array().unwrap().iter().map(|r| (r["name_hash"].to_string(), r[field].to_string())).collect()
}

/// The same as gpg 2.4.7 from the Debian 13 chroot (when
/// KBXSCOPE_GNUPG24_CHROOT names one): computed before gpg 2.4.7's check,
/// its `depth:` lines and every user id's record equal what gpg 2.4.7 then
/// prints and stores, and `list --gnupg-version 2.4`'s validity column
/// equals its `gpg -k`'s.
fn the_check_equals_gnupg24s_on_the_arch_linux_web_of_trust() {
    let Some((chroot, inner, outer)) = crate::common::gnupg24_dir("the_check_equals_gnupg24s", "arch") else {
        return;
    };
    private(&outer);
    for f in ["archlinux.gpg", "archlinux-trusted", "archlinux-revoked"] {
        std::fs::copy(Path::new("/usr/share/keyrings").join(f), outer.join(f)).unwrap();
    }
    let gpg24 = |args: &[&str]| run_gpg24(&chroot, &inner, args);
    pacman_key_populate(&|args| drop(gpg24(args)), &inner);
    check_before_gpg(&outer, "2.4", &|| stderr(&gpg24(&["--check-trustdb"])));
    let theirs = stdout(&gpg24(&["--display-charset", "utf-8", "--list-keys"]));
    let o = cmd()
        .args(["--gnupg-version", "2.4", "list", "--type", "openpgp"])
        .arg(outer.join("pubring.kbx"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let uid_lines = |t: &str| t.lines().filter(|l| l.starts_with("uid ")).map(String::from).collect::<Vec<_>>();
    assert_eq!(uid_lines(&stdout(&o)), uid_lines(&theirs));
    let _ = Command::new("chroot").arg(&chroot).args(["gpgconf", "--homedir", &inner, "--kill", "all"]).output();
    std::fs::remove_dir_all(&outer).unwrap();
}

/// GnuPG 2.4.7 through keyboxd (the Debian 13 chroot, optional): keyboxd's
/// search has no skip list, so gpg's check walks every key at every level,
/// ultimately trusted ones included (a trusted key certified by a key of
/// unknown owner trust ends up `undefined`). Computed before gpg 2.4.7's
/// check on the mixed fixture's keys in a `use-keyboxd` home: its `depth:`
/// lines and every user id's record equal gpg's.
fn the_check_equals_gnupg24s_through_keyboxd() {
    let Some((chroot, inner, outer)) = crate::common::gnupg24_dir("the_check_equals_gnupg24s_through_keyboxd", "kbd")
    else {
        return;
    };
    private(&outer);
    std::fs::write(outer.join("common.conf"), "use-keyboxd\n").unwrap();
    let keys = Command::new("gpg")
        .args(["--homedir", outer.to_str().unwrap(), "--batch", "--no-default-keyring", "--keyring"])
        .arg(fixture("gnupg-mixed.kbx"))
        .arg("--export")
        .output()
        .unwrap();
    assert!(keys.status.success() && !keys.stdout.is_empty(), "{}", stderr(&keys));
    std::fs::write(outer.join("keys.gpg"), &keys.stdout).unwrap();
    let gpg24 = |args: &[&str]| run_gpg24(&chroot, &inner, args);
    gpg24(&["--import", &format!("{inner}/keys.gpg")]);
    std::fs::write(outer.join("ownertrust.txt"), TWO_TRUSTED).unwrap();
    gpg24(&["--import-ownertrust", &format!("{inner}/ownertrust.txt")]);
    check_before_gpg(&outer, "2.4", &|| stderr(&gpg24(&["--check-trustdb"])));
    let _ = Command::new("chroot").arg(&chroot).args(["gpgconf", "--homedir", &inner, "--kill", "all"]).output();
    std::fs::remove_dir_all(&outer).unwrap();
}

/// `trustdb --check` on HOME before gpg's check (`run`, which returns
/// gpg's stderr) and after it, as GnuPG `version`: the `depth:` lines
/// equal gpg's, what was computed before is what gpg stored, and nothing
/// differs after.
fn check_before_gpg(home: &Path, version: &str, run: &dyn Fn() -> String) {
    let check = |json: bool| {
        let mut c = cmd();
        c.args(["--gnupg-version", version, "trustdb", "--check"]);
        if json {
            c.arg("--json");
        }
        let o = c.arg(home).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let predicted: serde_json::Value = serde_json::from_str(&check(true)).unwrap();
    let lines = check(false);
    let theirs = run();
    assert_eq!(depth_lines(&lines), depth_lines(&theirs), "gpg {version}'s walk");
    assert!(!depth_lines(&lines).is_empty(), "{lines}");
    let after: serde_json::Value = serde_json::from_str(&check(true)).unwrap();
    assert_eq!(check_rows(&predicted, "computed"), check_rows(&after, "stored"), "gpg {version}");
    assert_eq!(after["differ"], 0, "{after:#}");
}

/// gpg 2.2.40 on the mixed fixture's keybox with two keys ultimately
/// trusted (one with a photo id whose bytes the signature walk lets go
/// of): computed before gpg's check, equal to what gpg prints and stores.
fn the_check_equals_gpgs_on_the_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    private(&home);
    std::fs::copy(fixture("gnupg-mixed.kbx"), home.join("pubring.kbx")).unwrap();
    std::fs::write(home.join("ownertrust.txt"), TWO_TRUSTED).unwrap();
    gpg(&home, &["--import-ownertrust", home.join("ownertrust.txt").to_str().unwrap()]);
    check_before_gpg(&home, "2.2", &|| gpg_check_trustdb(&home));
    stop_gnupg_daemons(&home);
}

/// Two keys of the mixed fixture to trust ultimately: one is certified by
/// keys only the second level reaches, one has a photo id.
const TWO_TRUSTED: &str = "0B26DE4287D9CC3D0591DC149859E46E2E1D2E54:6:\n1855DEFD906B04902057ADCC87871F7B33C3ED33:6:\n";

/// Only its owner may enter `dir` (gpg warns of a home others may read).
fn private(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
}

/// gpg 2.4.7 in `chroot` on the home `inner` (its path there), in the C
/// locale; it must succeed.
fn run_gpg24(chroot: &Path, inner: &str, args: &[&str]) -> std::process::Output {
    let o = Command::new("chroot")
        .arg(chroot)
        .args(["gpg", "--homedir", inner, "--batch", "--yes"])
        .args(args)
        .env("LC_ALL", "C")
        .env("LANGUAGE", "C")
        .output()
        .expect("run chroot gpg");
    assert!(o.status.success(), "gpg 2.4 {args:?}: {}", stderr(&o));
    o
}

/// `gpg --check-trustdb` (2.2) on `home` in the C locale: its stderr.
fn gpg_check_trustdb(home: &Path) -> String {
    let o = Command::new("gpg")
        .args(["--homedir", home.to_str().unwrap(), "--batch", "--check-trustdb"])
        .env("LC_ALL", "C")
        .env("LANGUAGE", "C")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stderr(&o)
}

/// `kbxscope --gnupg-version 2.2 list --type openpgp ARGS KEYBOX`'s output;
/// it must succeed.
fn list_openpgp(keybox: &Path, args: &[&str]) -> String {
    let o =
        cmd().args(["--gnupg-version", "2.2", "list", "--type", "openpgp"]).args(args).arg(keybox).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// Per key of `list --json`'s lines: its fingerprint, and the colon
/// letters of its validity and of its user ids' ([`colon_validities`]'s form).
fn json_validities(lines: &str) -> Vec<(String, String, Vec<String>)> {
    lines
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let letter = |x: &serde_json::Value| letter(x.as_str().unwrap()).to_string();
            let uids = v["user_id_validity"].as_array().unwrap().iter().map(letter).collect();
            (v["fingerprint"].as_str().unwrap().to_string(), letter(&v["validity"]), uids)
        })
        .collect()
}

/// Bad input for the validity column: a named database that is not there,
/// a file that is no trust database beside the keybox (gpg stops on it
/// too), a model kbxscope does not compute: one line each; the same file
/// as a home's database for `trustdb --check`: one line.
fn the_validity_column_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let keybox = dir.path().join("pubring.kbx");
    std::fs::copy(fixture("gnupg-mixed.kbx"), &keybox).unwrap();
    let one_line = |args: &[&str], code: i32, names: &str| {
        let o = cmd().args(args).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
        stdout(&o)
    };
    let k = keybox.to_str().unwrap();
    one_line(&["list", "--trustdb", "/nonexistent/trustdb.gpg", k], 1, "/nonexistent/trustdb.gpg");
    let listed = one_line(&["list", "--type", "openpgp", "--trust-model", "tofu", k], 0, "trust model tofu");
    assert!(listed.contains("\nuid           Dieter Núñez"), "no column: {listed}");
    let db = dir.path().join("trustdb.gpg");
    std::fs::write(&db, b"not a trust database, forty bytes long...").unwrap();
    one_line(&["list", k], 1, db.to_str().unwrap());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::copy(&db, empty.join("trustdb.gpg")).unwrap();
    one_line(&["trustdb", "--check", empty.to_str().unwrap()], 1, "trustdb.gpg");
}

/// gpg's colon letter of a validity word of kbxscope's JSON.
fn letter(word: &str) -> char {
    match word {
        "unknown" => '-',
        "expired" => 'e',
        "undefined" => 'q',
        "never" => 'n',
        "marginal" => 'm',
        "full" => 'f',
        "ultimate" => 'u',
        "revoked" => 'r',
        other => panic!("validity {other}"),
    }
}

/// The lines of an owner-trust export that are not comments.
fn entries(text: &str) -> Vec<String> {
    text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).map(String::from).collect()
}

fn owner_trusts_and_header_equal_gpgs() {
    let dir = tempfile::tempdir().unwrap();
    let home = trusted_home(dir.path());
    let theirs = entries(&stdout(&gpg(&home, &["--export-ownertrust"])));
    let o = cmd().args(["trustdb", home.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(entries(&stdout(&o)), theirs);
    assert!(theirs.iter().any(|l| l.ends_with(":132:")), "the disabled key's byte (4 | 128): {theirs:?}");
    // The header against gpg's `tru` record, with the check pending and
    // after gpg ran it.
    header_equals_gpgs(&home);
    gpg(&home, &["--check-trustdb"]);
    let v = header_equals_gpgs(&home);
    // Every key gpg keeps a record for, with its user ids' validities.
    let keys = v["keys"].as_array().unwrap();
    assert!(keys.len() >= 6);
    assert!(keys.iter().any(|k| !k["validities"].as_array().unwrap().is_empty()), "{v:#}");
    assert_eq!(v["damage"].as_array().unwrap().len(), 0);
}

/// kbxscope's header of HOME's database against the `tru` record of
/// `gpg --with-colons --list-keys` (model, created, next check,
/// marginals, completes, depth); kbxscope's JSON.
fn header_equals_gpgs(home: &Path) -> serde_json::Value {
    // gpg prints the record as it finds it, then runs the pending check:
    // kbxscope reads the database before gpg's listing changes it.
    let o = cmd().args(["trustdb", "--json", home.join("trustdb.gpg").to_str().unwrap()]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let listing = stdout(&gpg(home, &["--with-colons", "--list-keys"]));
    let tru: Vec<&str> = listing.lines().find(|l| l.starts_with("tru:")).expect("a tru record").split(':').collect();
    let h = &v["header"];
    let model = match h["model"].as_str().unwrap() {
        "classic" => "0",
        "pgp" => "1",
        other => panic!("model {other}"),
    };
    let ours = [model.to_string(), h["created"].to_string(), h["next_check"].to_string()]
        .into_iter()
        .chain(["marginals", "completes", "max_depth"].map(|k| h[k].to_string()));
    let theirs: Vec<String> = tru[2..8].iter().map(|s| s.to_string()).collect();
    assert_eq!(ours.collect::<Vec<_>>(), theirs, "{listing}");
    v
}

fn the_output_imports_back_into_gpg() {
    let dir = tempfile::tempdir().unwrap();
    let home = trusted_home(dir.path());
    let o = cmd().args(["trustdb", home.to_str().unwrap()]).output().unwrap();
    let export = dir.path().join("ours.txt");
    std::fs::write(&export, &o.stdout).unwrap();
    // A fresh home with the same keys takes our output as gpg's own export.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::copy(fixture("gnupg-mixed.kbx"), other.join("pubring.kbx")).unwrap();
    gpg(&other, &["--import-ownertrust", export.to_str().unwrap()]);
    let theirs = entries(&stdout(&gpg(&home, &["--export-ownertrust"])));
    assert_eq!(entries(&stdout(&gpg(&other, &["--export-ownertrust"]))), theirs);
    stop_gnupg_daemons(&other);
}

fn damage_is_named_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let home = trusted_home(dir.path());
    let db = std::fs::read(home.join("trustdb.gpg")).unwrap();
    let records = db.len() / 40;
    // An unknown record type in the last record, and a partial record.
    let mut bad = db.clone();
    bad[(records - 1) * 40] = 99;
    bad.extend_from_slice(&[0u8; 13]);
    let path = dir.path().join("damaged.gpg");
    std::fs::write(&path, &bad).unwrap();
    let o = cmd().args(["trustdb", path.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let last = records - 1;
    assert!(
        err.contains(&format!("record {last} (byte offset {}): gpg cannot read it: unknown record type 99", last * 40)),
        "{err}"
    );
    assert!(
        err.contains(&format!("record {records} (byte offset {}): a partial record of 13 bytes", records * 40)),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bad, "only read");
    // doctor names the first damage `trustdb --json` lists, and counts it all.
    #[cfg(target_os = "linux")]
    {
        let o = cmd().args(["trustdb", "--json", path.to_str().unwrap()]).output().unwrap();
        let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let damage = listed["damage"].as_array().unwrap();
        assert!(damage.iter().any(|d| d["record"].as_u64() == Some(last as u64)), "{listed:#}");
        std::fs::write(home.join("trustdb.gpg"), &bad).unwrap();
        let o = cmd().args(["doctor", "--quick", "--json", home.to_str().unwrap()]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let f = v["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "damaged-trustdb").expect("a finding");
        assert_eq!(f["evidence"]["record"], damage[0]["record"], "{f:#}");
        assert_eq!(f["evidence"]["damage"].as_u64(), Some(damage.len() as u64), "{f:#}");
    }
    // Not a trust database: one line, exit 1.
    std::fs::write(&path, b"not a trust database at all, forty bytes plus").unwrap();
    let o = cmd().args(["trustdb", path.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("damaged.gpg: record 0 is not gpg's version record"), "{err}");
    // A home without one.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = cmd().args(["trustdb", empty.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// The same with gpg 2.4.7 from the Debian 13 chroot (when
/// KBXSCOPE_GNUPG24_CHROOT names one): its database, its export, its
/// `tru` record, and its listing's validity column (pgp and direct).
fn owner_trusts_and_header_equal_gnupg24s() {
    let Some((chroot, inner, outer)) = crate::common::gnupg24_dir("owner_trusts_and_header_equal_gnupg24s", "trustdb")
    else {
        return;
    };
    private(&outer);
    std::fs::copy(fixture("gnupg-mixed.kbx"), outer.join("pubring.kbx")).unwrap();
    let gpg24 = |args: &[&str]| {
        let o = Command::new("chroot")
            .arg(&chroot)
            .args(["gpg", "--homedir", &inner, "--batch", "--yes"])
            .args(args)
            .output()
            .expect("run chroot gpg");
        assert!(o.status.success(), "gpg 2.4 {args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let listing = gpg24(&["--with-colons", "--list-keys"]);
    let lines: Vec<&str> = listing.lines().collect();
    // The primary keys' fingerprints: the fpr line after each pub line.
    let fprs: Vec<String> = lines
        .windows(2)
        .filter(|w| w[0].starts_with("pub:") && w[1].starts_with("fpr:"))
        .map(|w| w[1].split(':').nth(9).unwrap().to_string())
        .collect();
    let text: String = fprs.iter().take(5).zip([6, 5, 4, 3, 2]).map(|(f, t)| format!("{f}:{t}:\n")).collect();
    std::fs::write(outer.join("ownertrust.txt"), text).unwrap();
    gpg24(&["--import-ownertrust", &format!("{inner}/ownertrust.txt")]);
    gpg24(&["--check-trustdb"]);
    let o = cmd().args(["trustdb", "--json", outer.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let theirs = entries(&gpg24(&["--export-ownertrust"]));
    let ours: Vec<String> = v["ownertrust"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| format!("{}:{}:", t["fingerprint"].as_str().unwrap(), t["ownertrust"]))
        .collect();
    assert_eq!(ours, theirs);
    let listing = gpg24(&["--with-colons", "--list-keys"]);
    let tru: Vec<&str> = listing.lines().find(|l| l.starts_with("tru:")).expect("a tru record").split(':').collect();
    let h = &v["header"];
    assert_eq!(h["model"], "pgp");
    let ours: Vec<String> =
        ["created", "next_check", "marginals", "completes", "max_depth"].iter().map(|k| h[k].to_string()).collect();
    assert_eq!(ours, tru[3..8].iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{listing}");
    // The validity column of gpg 2.4's listing, the title aside (gpg names
    // the keybox by its path inside the chroot).
    for model in ["pgp", "direct"] {
        let theirs = gpg24(&["--display-charset", "utf-8", "--trust-model", model, "--list-keys"]);
        let o = cmd()
            .args(["--gnupg-version", "2.4", "list", "--type", "openpgp", "--trust-model", model])
            .arg(outer.join("pubring.kbx"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let body = |t: &str| t.lines().skip(2).map(|l| format!("{l}\n")).collect::<String>();
        assert_eq!(body(&stdout(&o)), body(&theirs), "gpg 2.4.7, trust model {model}");
    }
    let _ = Command::new("chroot").arg(&chroot).args(["gpgconf", "--homedir", &inner, "--kill", "all"]).output();
    std::fs::remove_dir_all(&outer).unwrap();
}
