//! gpg-agent's `trustlist.txt`: which root certificates are trusted, read
//! exactly as gpg-agent 2.2.40 reads it (`agent/trustlist.c`, checked
//! form by form against a live gpgsm).
//!
//! * Lines end in LF (a CR before it is dropped); a line of 254 bytes or
//!   more, or a last line without LF, is "Line too long". Leading spaces
//!   and tabs are skipped; empty lines and `#` comments are ignored.
//! * `include-default` reads the system trustlist at that point (the
//!   caller supplies its text); inside the system list it is ignored.
//! * An entry: an optional `!` (disabled) and spaces, a SHA-1 fingerprint
//!   of 40 hex digits, either contiguous or with a colon between every
//!   two (any case), then white space or the end; then one flag: none or
//!   `*`, `S`/`s`, `P`/`p` (alone, followed by white space or the end);
//!   then words: `relax` and `cm` are kept, others (`qual`, `de-vs`, …)
//!   ignored, `NAME=VALUE` is an error.
//! * gpg-agent 2.2 does not look at the flag when gpgsm asks: the first
//!   entry with the fingerprint decides — trusted unless disabled.
//! * One bad line makes gpg-agent refuse the whole list: gpgsm then says
//!   "checking the trust list failed" and every certificate whose chain
//!   reaches a root is bad with that error ("Bad data", "Line too long").

use std::collections::HashMap;
use std::fmt;

/// What gpg-agent keeps of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    disabled: bool,
    relax: bool,
}

/// The trusted root fingerprints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustList {
    /// First entry of each fingerprint (the one gpg-agent finds).
    entries: HashMap<[u8; 20], Entry>,
    /// The first line gpg-agent rejects, if any.
    broken: Option<TrustListError>,
    /// Whether an `include-default` line asked for the system list.
    includes_default: bool,
}

/// A line gpg-agent rejects (it then rejects the whole list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustListError {
    /// 1-based line number.
    pub line: usize,
    /// gpg-agent's message for the line.
    pub reason: &'static str,
    /// The error gpgsm reports for every certificate ("Bad data", "Line
    /// too long").
    pub code: &'static str,
    /// Whether the line is in the system trustlist (`include-default`).
    pub in_system_list: bool,
}

impl fmt::Display for TrustListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let which = if self.in_system_list { "system trustlist " } else { "" };
        write!(f, "{which}line {}: {} ({})", self.line, self.reason, self.code)
    }
}

impl std::error::Error for TrustListError {}

const BAD_DATA: &str = "Bad data";

/// gpg-agent's `spacep`: space or tab.
fn spacep(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// GnuPG's `hexcolon2bin` for 20 bytes: the fingerprint and how many
/// bytes it took (with one delimiter), or `None`.
fn hexcolon2bin(s: &[u8]) -> Option<([u8; 20], usize)> {
    let mut out = [0u8; 20];
    let (mut at, mut need_colon) = (0usize, false);
    let hex = |b: Option<&u8>| b.and_then(|&b| (b as char).to_digit(16));
    for (i, o) in out.iter_mut().enumerate() {
        if i == 1 && s.get(at) == Some(&b':') {
            need_colon = true;
            at += 1;
        } else if need_colon && s.get(at) == Some(&b':') {
            at += 1;
        } else if need_colon {
            return None;
        }
        let (hi, lo) = (hex(s.get(at))?, hex(s.get(at + 1))?);
        *o = (hi * 16 + lo) as u8;
        at += 2;
    }
    match s.get(at) {
        None => Some((out, at)),
        Some(b':') => None,
        Some(&b) if b.is_ascii_whitespace() || b == 0x0b => Some((out, at + 1)),
        Some(_) => None,
    }
}

impl TrustList {
    /// Parse the text of a trustlist strictly.
    ///
    /// # Errors
    /// The first line gpg-agent rejects.
    pub fn parse(text: &str) -> Result<Self, TrustListError> {
        let list = Self::read(text, None);
        match list.broken {
            Some(e) => Err(e),
            None => Ok(list),
        }
    }

    /// Read a user trustlist as gpg-agent does; `system` is the text of
    /// the system trustlist, read where `include-default` says. A list
    /// gpg-agent rejects keeps the reason ([`broken`](Self::broken)).
    pub fn read(text: &str, system: Option<&str>) -> Self {
        let mut list = Self::default();
        list.read_one(text.as_bytes(), system, false);
        list
    }

    fn read_one(&mut self, text: &[u8], system: Option<&str>, systrust: bool) {
        let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        let last = lines.pop().unwrap_or_default();
        let fail = |list: &mut Self, line: usize, reason: &'static str, code: &'static str| {
            if list.broken.is_none() {
                list.broken = Some(TrustListError { line, reason, code, in_system_list: systrust });
            }
        };
        for (n, raw) in lines.iter().chain((!last.is_empty()).then_some(&last)).enumerate() {
            let lnr = n + 1;
            if raw.len() >= 254 || n == lines.len() {
                fail(self, lnr, "line too long or without a line feed", "Line too long");
                continue;
            }
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            let mut p = &line[line.iter().position(|&b| !spacep(b)).unwrap_or(line.len())..];
            if p.is_empty() || p[0] == b'#' {
                continue;
            }
            if p.starts_with(b"include-default") && p.get(15).is_none_or(|&b| spacep(b)) {
                if !systrust {
                    self.includes_default = true;
                    if let Some(sys) = system {
                        self.read_one(sys.as_bytes(), None, true);
                    }
                }
                continue;
            }
            let mut entry = Entry { disabled: false, relax: false };
            if let Some(rest) = p.strip_prefix(b"!") {
                entry.disabled = true;
                p = &rest[rest.iter().position(|&b| !spacep(b)).unwrap_or(rest.len())..];
            }
            let Some((fpr, used)) = hexcolon2bin(p) else {
                fail(self, lnr, "bad fingerprint", BAD_DATA);
                continue;
            };
            p = &p[used..];
            p = &p[p.iter().position(|&b| !spacep(b)).unwrap_or(p.len())..];
            match p.first() {
                None | Some(b'*' | b'P' | b'p' | b'S' | b's') => {}
                Some(_) => {
                    fail(self, lnr, "invalid keyflag", BAD_DATA);
                    continue;
                }
            }
            if !p.is_empty() {
                p = &p[1..];
                if p.first().is_some_and(|&b| !spacep(b)) {
                    fail(self, lnr, "invalid keyflag", BAD_DATA);
                    continue;
                }
            }
            let mut bad_word = false;
            for word in p.split(|&b| spacep(b)).filter(|w| !w.is_empty()) {
                if word.contains(&b'=') {
                    bad_word = true;
                } else if word == b"relax" {
                    entry.relax = true;
                }
            }
            if bad_word {
                fail(self, lnr, "assigning a value to a flag is not yet supported", BAD_DATA);
                continue;
            }
            self.entries.entry(fpr).or_insert(entry);
        }
    }

    /// The first line gpg-agent rejected: it then trusts nothing and gpgsm
    /// reports the error's code for every chain reaching a root.
    pub fn broken(&self) -> Option<&TrustListError> {
        self.broken.as_ref()
    }

    /// Whether an `include-default` line asks for the system trustlist.
    pub fn includes_default(&self) -> bool {
        self.includes_default
    }

    /// Whether the root with this SHA-1 fingerprint is trusted for X.509.
    pub(crate) fn trusts(&self, fpr: &[u8]) -> bool {
        self.broken.is_none() && self.first(fpr).is_some_and(|e| !e.disabled)
    }

    /// Whether the root's entry carries `relax` (gpgsm then accepts it
    /// without the CA flag in basicConstraints).
    pub(crate) fn relaxes(&self, fpr: &[u8]) -> bool {
        self.broken.is_none() && self.first(fpr).is_some_and(|e| e.relax)
    }

    fn first(&self, fpr: &[u8]) -> Option<&Entry> {
        <[u8; 20]>::try_from(fpr).ok().and_then(|f| self.entries.get(&f))
    }

    /// Number of trusted roots.
    pub fn len(&self) -> usize {
        if self.broken.is_some() {
            return 0;
        }
        self.entries.values().filter(|e| !e.disabled).count()
    }

    /// Whether nothing is trusted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fpr(s: &str) -> Vec<u8> {
        (0..20).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
    }

    const A: &str = "98BCD9D96AD206EB811A467D5A41F0854969C897";

    #[test]
    fn parses_gpg_agent_format() {
        let text = "# comment\n\n98:BC:D9:D9:6A:D2:06:EB:81:1A:46:7D:5A:41:F0:85:49:69:C8:97 S\n\
                    052149109f40f01baafc1d48cba77355a8b5f718 s relax\n\
                    1111111111111111111111111111111111111111 P\n\
                    !2222222222222222222222222222222222222222 S\n\
                    \t 3333333333333333333333333333333333333333\t*  cm qual de-vs\r\n\
                    4444444444444444444444444444444444444444\n";
        let t = TrustList::parse(text).unwrap();
        assert!(t.trusts(&fpr(A)));
        assert!(t.trusts(&fpr("052149109F40F01BAAFC1D48CBA77355A8B5F718")));
        assert!(t.trusts(&fpr("1111111111111111111111111111111111111111")), "gpg-agent 2.2 ignores the flag");
        assert!(!t.trusts(&fpr("2222222222222222222222222222222222222222")), "disabled");
        assert!(t.trusts(&fpr("3333333333333333333333333333333333333333")));
        assert!(t.trusts(&fpr("4444444444444444444444444444444444444444")), "no flag means *");
        assert_eq!(t.len(), 5);
        assert!(t.relaxes(&fpr("052149109F40F01BAAFC1D48CBA77355A8B5F718")));
        assert!(!t.relaxes(&fpr(A)));
    }

    #[test]
    fn the_first_entry_decides() {
        assert!(TrustList::parse(&format!("{A} S\n!{A} S\n")).unwrap().trusts(&fpr(A)));
        assert!(!TrustList::parse(&format!("! {A} S\n{A} S\n")).unwrap().trusts(&fpr(A)));
    }

    #[test]
    fn rejects_what_gpg_agent_rejects_with_its_line_number() {
        let err = |t: &str| TrustList::parse(t).unwrap_err();
        assert_eq!(err("hello S\n").line, 1);
        assert_eq!(err("# x\n\n98BC D9D9 6AD2 06EB 811A 467D 5A41 F085 4969 C897 S\n").line, 3);
        assert_eq!(err("# x\n98BC S\n").reason, "bad fingerprint");
        assert_eq!(err(&format!("{A}0 S\n")).reason, "bad fingerprint");
        assert_eq!(err("98BC:D9:D9:6A:D2:06:EB:81:1A:46:7D:5A:41:F0:85:49:69:C8:97 S\n").reason, "bad fingerprint");
        assert_eq!(err(&format!("{A} X\n")).reason, "invalid keyflag");
        assert_eq!(err(&format!("{A} SP\n")).reason, "invalid keyflag");
        assert_eq!(err(&format!("{A} S a=b\n")).code, "Bad data");
        let no_lf = err(&format!("{A} S\n{A} S"));
        assert_eq!((no_lf.line, no_lf.code), (2, "Line too long"));
        assert_eq!(err(&format!("{A} S {}\n", "x".repeat(220))).code, "Line too long");
        let broken = TrustList::read(&format!("{A} S\nbad\n"), None);
        assert!(!broken.trusts(&fpr(A)) && broken.is_empty());
    }

    #[test]
    fn include_default_reads_the_system_list_in_place() {
        let system = format!("{A} S relax\ninclude-default\n");
        let t = TrustList::read(&format!("include-default\n!{A} S\n"), Some(&system));
        assert!(t.includes_default() && t.trusts(&fpr(A)) && t.relaxes(&fpr(A)));
        let bad = TrustList::read("include-default\n", Some("junk\n"));
        assert!(bad.broken().unwrap().in_system_list);
        assert!(TrustList::read("include-default  \n", None).includes_default());
    }
}
