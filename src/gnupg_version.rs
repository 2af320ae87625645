//! Which GnuPG kbxscope reproduces: `--gnupg-version 2.2|2.4`.
//!
//! The two versions read a keybox with the same code but judge some
//! signatures differently, and that changes what they read too (read in
//! GnuPG's sources, `g10/sig-check.c`, `g10/getkey.c`, and measured with
//! gpg 2.2.40 of Debian 12 and gpg 2.4.7 of Debian 13 on Debian's
//! 905-key developer keyring; see `docs/gnupg-versions.md`):
//!
//! * **SHA-1 certifications.** Both reject a third-party certification
//!   of a user id made with SHA-1 (`%`, "third-party key signatures using
//!   the SHA1 algorithm are rejected"); 2.2 only those made after
//!   2019-01-19, 2.4 all of them.
//! * **Signers whose key expired or was revoked.** A certification's
//!   signer is looked up for certifying. gpg 2.2 passes over a primary
//!   key that has expired or was revoked (the certification is `?`, and
//!   the search goes on to the end of the file), unless its key cache
//!   already holds the key: gpg puts a key there when it looked it up for
//!   its user id, which it does when it lists that key. Debian's gpg
//!   2.4.7 takes such a key for verifying.
//! * **The read buffer.** 2.2 reads a keybox through an 8 KiB stream
//!   buffer; 2.4 has `--kbx-buffer-size`, 64 KiB by default.

use std::fmt;
use std::str::FromStr;

/// A GnuPG version whose judgements and reads kbxscope reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GnupgVersion {
    /// GnuPG 2.2 (Debian 12, Ubuntu LTS).
    V2_2,
    /// GnuPG 2.4 (Debian 13, Fedora, Arch): the default.
    #[default]
    V2_4,
}

/// 2019-01-19, the date after which gpg 2.2 rejects a SHA-1
/// certification (`sig->timestamp > 1547856000`).
const SHA1_CUTOFF_2_2: u32 = 1_547_856_000;

impl GnupgVersion {
    /// Both, oldest first.
    pub const ALL: [Self; 2] = [Self::V2_2, Self::V2_4];

    /// Whether a third-party certification of a user id made with SHA-1 at
    /// `created` (Unix seconds) is rejected.
    pub fn rejects_sha1_certification(self, created: u32) -> bool {
        match self {
            Self::V2_2 => created > SHA1_CUTOFF_2_2,
            Self::V2_4 => true,
        }
    }

    /// Whether the lookup of a certification's signer takes a primary key
    /// that has expired or was revoked.
    pub fn certifies_with_expired_keys(self) -> bool {
        self == Self::V2_4
    }

    /// The version of a GnuPG program from the first line of its
    /// `--version` output (`gpg (GnuPG) 2.2.40`); `None` for versions
    /// kbxscope does not model.
    pub fn from_version_line(line: &str) -> Option<Self> {
        let v = line.split_whitespace().last()?;
        let mut parts = v.split('.');
        match (parts.next()?, parts.next()?) {
            ("2", "2") => Some(Self::V2_2),
            ("2", minor) if minor.parse::<u32>().is_ok_and(|m| m >= 3) => Some(Self::V2_4),
            _ => None,
        }
    }
}

impl fmt::Display for GnupgVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::V2_2 => "2.2",
            Self::V2_4 => "2.4",
        })
    }
}

/// A version kbxscope does not model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown GnuPG version '{0}' (expected 2.2 or 2.4)")]
pub struct UnknownVersion(pub String);

impl FromStr for GnupgVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "2.2" => Ok(Self::V2_2),
            "2.4" => Ok(Self::V2_4),
            other => Err(UnknownVersion(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GnupgVersion;

    #[test]
    fn versions_parse_and_print() {
        for v in GnupgVersion::ALL {
            assert_eq!(v.to_string().parse::<GnupgVersion>(), Ok(v));
        }
        assert!("2.3.1".parse::<GnupgVersion>().is_err());
        assert_eq!(GnupgVersion::from_version_line("gpg (GnuPG) 2.2.40"), Some(GnupgVersion::V2_2));
        assert_eq!(GnupgVersion::from_version_line("gpgsm (GnuPG) 2.4.7"), Some(GnupgVersion::V2_4));
        assert_eq!(GnupgVersion::from_version_line("gpg (GnuPG) 1.4.23"), None);
    }

    #[test]
    fn the_sha1_cutoff_is_2_2s_only() {
        assert!(!GnupgVersion::V2_2.rejects_sha1_certification(1_547_856_000));
        assert!(GnupgVersion::V2_2.rejects_sha1_certification(1_547_856_001));
        assert!(GnupgVersion::V2_4.rejects_sha1_certification(1_000_000_000));
    }
}
