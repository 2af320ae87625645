//! gpg-agent's `trustlist.txt`: which root certificates are trusted.
//!
//! One entry per line: a SHA-1 fingerprint in hex (colons or spaces
//! between the bytes allowed), then flags: `S` (trusted for S/MIME), `P`
//! (for PGP) or `*` (both), optionally followed by keywords such as
//! `relax`. A leading `!` disables an entry; `#` starts a comment. Only
//! entries marked `S` or `*` make a root trusted for X.509 validation.

use std::collections::HashSet;
use std::fmt;

/// The trusted root fingerprints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustList {
    trusted: HashSet<[u8; 20]>,
    disabled: HashSet<[u8; 20]>,
    /// Trusted roots whose entry carries the `relax` keyword.
    relaxed: HashSet<[u8; 20]>,
}

/// A line that is not a trustlist entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustListError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: &'static str,
}

impl fmt::Display for TrustListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for TrustListError {}

impl TrustList {
    /// Parse the text of a trustlist.
    ///
    /// # Errors
    /// The first line that is neither a comment nor an entry.
    pub fn parse(text: &str) -> Result<Self, TrustListError> {
        let mut list = Self::default();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |reason| TrustListError { line: n + 1, reason };
            let (disabled, line) = match line.strip_prefix('!') {
                Some(rest) => (true, rest.trim_start()),
                None => (false, line),
            };
            let mut hex = String::new();
            let mut rest = line;
            while hex.len() < 40 {
                let c = rest.chars().next().ok_or_else(|| err("the fingerprint is shorter than 40 hex digits"))?;
                rest = &rest[c.len_utf8()..];
                match c {
                    ':' | ' ' => {}
                    c if c.is_ascii_hexdigit() => hex.push(c),
                    _ => return Err(err("expected a SHA-1 fingerprint in hex")),
                }
            }
            if rest.starts_with(|c: char| c.is_ascii_hexdigit()) {
                return Err(err("the fingerprint is longer than 40 hex digits"));
            }
            let mut fpr = [0u8; 20];
            for (i, b) in fpr.iter_mut().enumerate() {
                *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| err("bad hex"))?;
            }
            let mut words = rest.split_whitespace();
            let flags = words.next().unwrap_or("");
            if flags.is_empty() {
                return Err(err("missing flag after the fingerprint (S, P or *)"));
            }
            if disabled {
                list.disabled.insert(fpr);
            } else if flags.contains('S') || flags.contains('*') {
                list.trusted.insert(fpr);
                if words.any(|w| w == "relax") {
                    list.relaxed.insert(fpr);
                }
            }
        }
        Ok(list)
    }

    /// Whether the root with this SHA-1 fingerprint is trusted for X.509.
    pub fn trusts(&self, fpr: &[u8]) -> bool {
        fpr.len() == 20 && self.trusted.contains(fpr) && !self.disabled.contains(fpr)
    }

    /// Whether the root is trusted with the `relax` keyword (gpgsm then
    /// accepts it without the CA flag in basicConstraints).
    pub fn relaxes(&self, fpr: &[u8]) -> bool {
        self.trusts(fpr) && self.relaxed.contains(fpr)
    }

    /// Number of trusted roots.
    pub fn len(&self) -> usize {
        self.trusted.len()
    }

    /// Whether nothing is trusted.
    pub fn is_empty(&self) -> bool {
        self.trusted.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_gpg_agent_format() {
        let text = "# comment\n\n98:BC:D9:D9:6A:D2:06:EB:81:1A:46:7D:5A:41:F0:85:49:69:C8:97 S\n\
                    0521 4910 9F40 F01B AAFC 1D48 CBA7 7355 A8B5 F718 S relax\n\
                    1111111111111111111111111111111111111111 P\n\
                    !2222222222222222222222222222222222222222 S\n\
                    3333333333333333333333333333333333333333 *\n";
        let t = TrustList::parse(text).unwrap();
        let fpr = |s: &str| (0..20).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect::<Vec<_>>();
        assert!(t.trusts(&fpr("98BCD9D96AD206EB811A467D5A41F0854969C897")));
        assert!(t.trusts(&fpr("052149109F40F01BAAFC1D48CBA77355A8B5F718")));
        assert!(!t.trusts(&fpr("1111111111111111111111111111111111111111")), "P is for PGP only");
        assert!(!t.trusts(&fpr("2222222222222222222222222222222222222222")), "disabled");
        assert!(t.trusts(&fpr("3333333333333333333333333333333333333333")));
        assert_eq!(t.len(), 3);
        assert!(t.relaxes(&fpr("052149109F40F01BAAFC1D48CBA77355A8B5F718")));
        assert!(!t.relaxes(&fpr("98BCD9D96AD206EB811A467D5A41F0854969C897")));
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(TrustList::parse("hello S").unwrap_err().line, 1);
        assert!(TrustList::parse("# x\n98BC S").is_err());
        assert!(TrustList::parse("98BCD9D96AD206EB811A467D5A41F0854969C897").is_err());
        assert!(TrustList::parse("98BCD9D96AD206EB811A467D5A41F0854969C8970 S").is_err());
    }
}
