//! Where a home's keys live and what else lies there: the store each
//! program uses and the file that decided it, stores left behind, the
//! buffer size in effect, the home's permissions, the daemons serving it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::conf::Conf;
use super::locks::{Process, Processes};
use crate::gnupg_version::GnupgVersion;
use crate::io::home::Entry;
use crate::io::BufferSize;
use crate::store::StoreKind;

/// The configuration files of a home.
#[derive(Debug, Default)]
pub struct Confs {
    /// `gpg.conf`.
    pub gpg: Conf,
    /// `gpgsm.conf`.
    pub gpgsm: Conf,
    /// `common.conf` (GnuPG 2.4).
    pub common: Conf,
}

/// The store one program uses.
#[derive(Debug, Clone, Serialize)]
pub struct StoreUse {
    /// `gpg` or `gpgsm`.
    pub program: &'static str,
    /// `keybox`, `keyboxd` or `keyring` (gpg's legacy `pubring.gpg`).
    pub kind: &'static str,
    /// The file.
    pub path: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    /// What decided it: a configuration line, or GnuPG's default.
    pub decided_by: String,
}

impl StoreUse {
    /// The kind of store kbxscope reads (none for a legacy keyring).
    pub fn store_kind(&self) -> Option<StoreKind> {
        match self.kind {
            "keybox" => Some(StoreKind::Keybox),
            "keyboxd" => Some(StoreKind::Keyboxd),
            _ => None,
        }
    }
}

/// Where gpg and gpgsm keep their keys in `home`, for `version`
/// (`g10/keydb.c`'s `keydb_add_resource`, facts only): keyboxd when 2.4's
/// `common.conf` says `use-keyboxd`; gpg's `keyring` files when
/// `no-default-keyring` drops the default; else gpg's `pubring.gpg` when
/// it exists, unless `pubring.kbx` exists too and is marked for OpenPGP
/// (`kbx_openpgp`); else `pubring.kbx`. gpgsm always uses `pubring.kbx`
/// (or its `keyring`).
pub fn stores(
    home: &Path,
    confs: &Confs,
    version: GnupgVersion,
    exists: &dyn Fn(&Path) -> bool,
    kbx_openpgp: bool,
) -> Vec<StoreUse> {
    let db = home.join("public-keys.d").join("pubring.db");
    let kbx = home.join("pubring.kbx");
    let legacy = home.join("pubring.gpg");
    let keyboxd = (version == GnupgVersion::V2_4)
        .then(|| {
            // 2.4 takes it from common.conf only (in gpg.conf it is
            // overridden, with a note to move it).
            confs.common.flag("use-keyboxd").filter(|(on, _)| *on).map(|(_, l)| confs.common.cite(l))
        })
        .flatten();
    let made = |program, kind, path: PathBuf, decided_by: String| StoreUse {
        program,
        kind,
        exists: exists(&path),
        path,
        decided_by,
    };
    let mut out = Vec::new();
    // gpg
    let keyrings = confs.gpg.all("keyring");
    let no_default = confs.gpg.flag("no-default-keyring").filter(|(on, _)| *on);
    out.push(if let Some(why) = &keyboxd {
        made("gpg", "keyboxd", db.clone(), why.clone())
    } else if let (Some((_, line)), Some((first, _))) = (no_default, keyrings.first()) {
        let path = resolve(home, first);
        let kind = if path.extension().is_some_and(|e| e == "kbx") || !exists(&path) { "keybox" } else { "keyring" };
        made("gpg", kind, path, confs.gpg.cite(line))
    } else if exists(&legacy) && !(exists(&kbx) && kbx_openpgp) {
        let why = if exists(&kbx) {
            "GnuPG's default: pubring.gpg exists, and pubring.kbx is not marked for OpenPGP keys"
        } else {
            "GnuPG's default: pubring.gpg exists and pubring.kbx does not"
        };
        made("gpg", "keyring", legacy.clone(), why.into())
    } else {
        made("gpg", "keybox", kbx.clone(), "GnuPG's default".into())
    });
    // gpgsm
    let sm_keyring = confs.gpgsm.all("keyring").first().map(|(k, l)| (resolve(home, k), *l));
    out.push(if let Some(why) = &keyboxd {
        made("gpgsm", "keyboxd", db, why.clone())
    } else if let Some((path, line)) = sm_keyring {
        made("gpgsm", "keybox", path, confs.gpgsm.cite(line))
    } else {
        made("gpgsm", "keybox", kbx, "GnuPG's default".into())
    });
    out
}

/// A keyring named in a configuration file: absolute, `~/`, or in the home.
fn resolve(home: &Path, name: &str) -> PathBuf {
    match name.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map_or_else(|| home.join(rest), |h| PathBuf::from(h).join(rest)),
        None => home.join(name),
    }
}

/// The buffer size GnuPG reads the keybox with, and what decided it.
#[derive(Debug, Clone, Serialize)]
pub struct Buffer {
    /// KiB.
    pub kib: u64,
    /// A configuration line, or the version's default.
    pub decided_by: String,
}

/// The keybox buffer of `version` in this home: `kbx-buffer-size` in
/// `gpg.conf` (gpg 2.4.2 and later, rounded up to a multiple of 8 KiB;
/// gpg 2.2 has no such option), else the version's default.
pub fn buffer(confs: &Confs, version: GnupgVersion) -> Buffer {
    let default = BufferSize::gnupg_default(version);
    let set = (version == GnupgVersion::V2_4)
        .then(|| confs.gpg.last("kbx-buffer-size"))
        .flatten()
        .and_then(|(v, l)| Some((v?.parse::<u64>().ok()?, l)));
    match set {
        Some((kib, line)) => {
            Buffer { kib: if kib == 0 { 8 } else { kib.div_ceil(8) * 8 }, decided_by: confs.gpg.cite(line) }
        }
        None => Buffer { kib: default.bytes() as u64 / 1024, decided_by: format!("GnuPG {version}'s default") },
    }
}

/// A permission problem GnuPG warns of.
#[derive(Debug, Clone, Serialize)]
pub struct Permission {
    /// The file or directory.
    pub path: PathBuf,
    /// Its permission bits, octal.
    pub mode: String,
    /// Its owner.
    pub uid: Option<u32>,
    /// `ownership` or `permissions`, as GnuPG's warning says.
    pub what: &'static str,
}

/// The home's permission problem, as gpg's `check_permissions` finds it
/// (`g10/gpg.c`, facts only): "unsafe ownership on homedir" when the home
/// is not the user's own (root's is no exception), "unsafe permissions on
/// homedir" when it grants the group or others any access. Files inside
/// the home take the home's verdict; gpgsm checks nothing.
pub fn permissions(home: &Entry, uid: Option<u32>) -> Option<Permission> {
    let (Some(mode), Some(own)) = (home.mode, home.uid) else { return None };
    let what = if uid.is_some_and(|u| u != own) {
        "ownership"
    } else if mode & 0o077 != 0 {
        "permissions"
    } else {
        return None;
    };
    Some(Permission { path: home.path.clone(), mode: format!("{mode:04o}"), uid: Some(own), what })
}

/// A daemon serving the home.
#[derive(Debug, Clone, Serialize)]
pub struct Daemon {
    /// The process.
    #[serde(flatten)]
    pub process: Process,
    /// The socket it serves the home on.
    pub socket: PathBuf,
}

/// GnuPG's socket names.
const SOCKETS: [&str; 3] = ["S.gpg-agent", "S.keyboxd", "S.dirmngr"];

/// Where the home's sockets may be: the home itself, and the run
/// directory GnuPG prefers (`/run/user/UID/gnupg`, with `d.HASH` for a
/// home other than `~/.gnupg`).
pub fn socket_candidates(home: &Path, uid: Option<u32>, default_home: bool) -> Vec<PathBuf> {
    let mut dirs = vec![home.to_path_buf()];
    if let Some(uid) = uid {
        let run = PathBuf::from(format!("/run/user/{uid}/gnupg"));
        dirs.push(if default_home { run } else { run.join(format!("d.{}", socket_hash(home))) });
    }
    dirs.iter().flat_map(|d| SOCKETS.iter().map(move |s| d.join(s))).collect()
}

/// GnuPG's name for a home's socket directory: the first 24 characters of
/// the z-base-32 form of the SHA-1 of the home's path.
pub fn socket_hash(home: &Path) -> String {
    const ALPHABET: &[u8; 32] = b"ybndrfg8ejkmcpqxot1uwisza345h769";
    let digest = crate::kbx::checksum::sha1_of(home.to_string_lossy().as_bytes());
    let mut out = String::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in digest {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((acc >> bits) & 31) as usize] as char);
        }
    }
    out.truncate(24);
    out
}

/// The GnuPG daemons serving the home (found by their sockets).
pub fn daemons(candidates: &[PathBuf], ps: &dyn Processes) -> Vec<Daemon> {
    let mut out: Vec<Daemon> = ps
        .serving(candidates)
        .into_iter()
        .filter(|(p, _)| matches!(p.program.as_str(), "gpg-agent" | "keyboxd" | "dirmngr"))
        .map(|(process, socket)| Daemon { process, socket })
        .collect();
    out.sort_by_key(|d| d.process.pid);
    out.dedup_by_key(|d| d.process.pid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_directory_hash_is_gnupgs() {
        // gpgconf --homedir /tmp/h --list-dirs socketdir on GnuPG 2.2.40:
        // /run/user/0/gnupg/d.mbhgw89f63w8318no56i98wz
        assert_eq!(socket_hash(Path::new("/tmp/h")), "mbhgw89f63w8318no56i98wz");
    }

    #[test]
    fn keyboxd_only_for_2_4_and_the_line_that_said_it() {
        let confs = Confs { common: Conf::parse("common.conf", "use-keyboxd\n"), ..Default::default() };
        let home = Path::new("/h");
        let s = stores(home, &confs, GnupgVersion::V2_4, &|_| true, true);
        assert_eq!((s[0].kind, s[0].decided_by.as_str()), ("keyboxd", "common.conf:1: use-keyboxd"));
        let s = stores(home, &confs, GnupgVersion::V2_2, &|_| true, true);
        assert_eq!((s[0].kind, s[1].kind), ("keybox", "keybox"));
    }

    #[test]
    fn a_legacy_keyring_when_there_is_no_keybox() {
        let home = Path::new("/h");
        let s = stores(home, &Confs::default(), GnupgVersion::V2_2, &|p| p.ends_with("pubring.gpg"), false);
        assert_eq!(s[0].kind, "keyring");
        // A keybox gpgsm made (not marked for OpenPGP) does not win over it.
        let s = stores(home, &Confs::default(), GnupgVersion::V2_2, &|_| true, false);
        assert_eq!((s[0].kind, s[1].kind), ("keyring", "keybox"));
        let s = stores(home, &Confs::default(), GnupgVersion::V2_2, &|_| true, true);
        assert_eq!(s[0].kind, "keybox");
    }
}
