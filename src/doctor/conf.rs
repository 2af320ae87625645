//! GnuPG's configuration files as `doctor` reads them (`gpg.conf`,
//! `gpgsm.conf`, `common.conf`): one option a line, its name first (with
//! or without the command line's `--`), its value after white space; `#`
//! starts a comment line. The last of an option and its `no-` form wins.

/// One configuration file's options, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conf {
    /// The file's name (`gpg.conf`), for evidence.
    pub file: String,
    /// Each option: name, value, line number (1-based).
    pub options: Vec<(String, Option<String>, usize)>,
}

impl Conf {
    /// Parse the text of the file named `file`.
    pub fn parse(file: &str, text: &str) -> Self {
        let options = text
            .lines()
            .enumerate()
            .filter_map(|(i, line)| {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    return None;
                }
                let line = line.strip_prefix("--").unwrap_or(line);
                let (name, value) = match line.split_once(char::is_whitespace) {
                    Some((n, v)) => (n, Some(v.trim().trim_matches('"').to_string())),
                    None => (line, None),
                };
                Some((name.to_string(), value.filter(|v| !v.is_empty()), i + 1))
            })
            .collect();
        Self { file: file.to_string(), options }
    }

    /// The value and line of the last `name`.
    pub fn last(&self, name: &str) -> Option<(Option<&str>, usize)> {
        self.options.iter().rev().find(|(n, _, _)| n == name).map(|(_, v, l)| (v.as_deref(), *l))
    }

    /// Every value of `name`, with its line.
    pub fn all(&self, name: &str) -> Vec<(&str, usize)> {
        self.options.iter().filter(|(n, _, _)| n == name).filter_map(|(_, v, l)| Some((v.as_deref()?, *l))).collect()
    }

    /// Whether the flag `name` is on (its last mention is `name`, not
    /// `no-name`), with the line that says so.
    pub fn flag(&self, name: &str) -> Option<(bool, usize)> {
        let no = format!("no-{name}");
        self.options.iter().rev().find_map(|(n, _, l)| {
            if n == name {
                Some((true, *l))
            } else if *n == no {
                Some((false, *l))
            } else {
                None
            }
        })
    }

    /// `file:line: text` for evidence.
    pub fn cite(&self, line: usize) -> String {
        let text = self
            .options
            .iter()
            .find(|(_, _, l)| *l == line)
            .map(|(n, v, _)| v.as_ref().map_or_else(|| n.clone(), |v| format!("{n} {v}")))
            .unwrap_or_default();
        format!("{}:{line}: {text}", self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::Conf;

    #[test]
    fn options_flags_and_the_last_one_wins() {
        let c = Conf::parse(
            "gpg.conf",
            "# comment\nkeyring /x/a.kbx\n--trust-model direct\n\nuse-keyboxd\nno-use-keyboxd\nkeyring b.gpg\n",
        );
        assert_eq!(c.last("trust-model"), Some((Some("direct"), 3)));
        assert_eq!(c.flag("use-keyboxd"), Some((false, 6)));
        assert_eq!(c.all("keyring"), vec![("/x/a.kbx", 2), ("b.gpg", 7)]);
        assert_eq!(c.cite(3), "gpg.conf:3: trust-model direct");
        assert_eq!(c.flag("no-auto-check-trustdb"), None);
    }
}
