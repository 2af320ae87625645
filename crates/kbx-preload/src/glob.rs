//! A tiny allocation-free glob: `*` (any run of bytes, `/` included), `?`
//! (one byte), `[...]` (a set: ranges `a-z`, negation `[!...]` or `[^...]`,
//! `]` first is literal). A `[` without its `]` is a literal `[`. No escapes.
//!
//! Written here rather than using libc's `fnmatch`, which may allocate and
//! consult the locale (not async-signal-safe), and which we would have to
//! keep out of the interposed paths anyway.

/// Whether the whole of `s` matches `pat`.
pub fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    // Backtrack point: position after the last `*`, and where it resumed in s.
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        let step = match pat.get(p) {
            Some(b'*') => {
                star = Some((p + 1, i));
                p += 1;
                continue;
            }
            Some(b'?') => Some(p + 1),
            Some(b'[') => match class(pat, p, s[i]) {
                Some((true, next)) => Some(next),
                Some((false, _)) => None,
                None if s[i] == b'[' => Some(p + 1),
                None => None,
            },
            Some(&c) if c == s[i] => Some(p + 1),
            _ => None,
        };
        match step {
            Some(np) => {
                p = np;
                i += 1;
            }
            None => match star {
                Some((sp, si)) => {
                    p = sp;
                    i = si + 1;
                    star = Some((sp, si + 1));
                }
                None => return false,
            },
        }
    }
    while pat.get(p) == Some(&b'*') {
        p += 1;
    }
    p == pat.len()
}

/// Match byte `c` against the class starting at `pat[p] == b'['`.
/// Returns (matched, index after `]`), or None if the class is unterminated.
fn class(pat: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let negate = matches!(pat.get(j), Some(b'!') | Some(b'^'));
    if negate {
        j += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let lo = *pat.get(j)?;
        if lo == b']' && !first {
            return Some((matched != negate, j + 1));
        }
        first = false;
        if pat.get(j + 1) == Some(&b'-') && pat.get(j + 2).is_some_and(|&h| h != b']') {
            let hi = pat[j + 2];
            if lo <= c && c <= hi {
                matched = true;
            }
            j += 3;
        } else {
            if lo == c {
                matched = true;
            }
            j += 1;
        }
    }
}

/// The basename of a path: the bytes after the last `/`.
pub fn basename(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// Iterate the non-empty `:`-separated patterns of a pattern list.
pub fn patterns(list: &[u8]) -> impl Iterator<Item = &[u8]> {
    list.split(|&b| b == b':').filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        glob_match(p.as_bytes(), s.as_bytes())
    }

    #[test]
    fn literals_and_wildcards() {
        assert!(m("pubring.kbx", "pubring.kbx"));
        assert!(!m("pubring.kbx", "pubring.kbx~"));
        assert!(!m("pubring.kbx", "pubring.kb"));
        assert!(m("pubring.*", "pubring.db-wal"));
        assert!(m("*", ""));
        assert!(!m("?", ""));
        assert!(m("pubring.kb?", "pubring.kbx"));
        assert!(m("*.kbx", "a.b.kbx"));
        assert!(!m("*.kbx", "a.kbx.lock"));
        assert!(m("*a*b*c", "xxaxxbxxbxc"));
        assert!(!m("*a*b*c", "xxaxxbxxbx"));
        assert!(m("/tmp/*/pubring.kbx", "/tmp/a/b/pubring.kbx"));
        assert!(m("**", "abc"));
        assert!(!m("", "a"));
        assert!(m("", ""));
    }

    #[test]
    fn classes() {
        assert!(m("pubring.db[-]*", "pubring.db-wal"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[a-c]x", "dx"));
        assert!(m("[!a-c]x", "dx"));
        assert!(!m("[^a-c]x", "ax"));
        assert!(m("[]]", "]"));
        assert!(m("[a-]", "-"));
        assert!(m("[", "["));
        assert!(m("a[", "a["));
        assert!(!m("[ab", "a"));
        assert!(m("*[0-9]", "file7"));
    }

    #[test]
    fn helpers() {
        assert_eq!(basename(b"/a/b/pubring.kbx"), b"pubring.kbx");
        assert_eq!(basename(b"pubring.kbx"), b"pubring.kbx");
        assert_eq!(basename(b"dir/"), b"");
        let v: Vec<&[u8]> = patterns(b"a::b/c:").collect();
        assert_eq!(v, vec![&b"a"[..], &b"b/c"[..]]);
    }
}
