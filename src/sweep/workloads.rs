//! What each run of a sweep does: [`Workload`] (with its lookup strategy)
//! and [`WorkloadKind`], the one table of workload names.

use serde::{Serialize, Serializer};

use crate::lookup::Strategy;

/// What each run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// `list --with-validation --lookup L`.
    Validate(Strategy),
    /// `list`.
    List,
    /// `stats`.
    Stats,
    /// `find PATTERN`.
    Find(String),
    /// `list --with-sigs` or `list --check-sigs`, with `--lookup L`.
    Sigs(crate::openpgp::Mode, Strategy),
    /// `import FILE --onto KEYBOX`, each run on a fresh private copy of
    /// the keybox (the keys are read once, by the caller).
    Import(String),
}

/// A workload as `--workload` names it, before its lookup strategy is
/// known: the one table of workload names ([`WorkloadKind::TABLE`]) that
/// parsing, the help and the exports use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `list --with-validation`.
    Validate,
    /// `list`.
    List,
    /// `stats`.
    Stats,
    /// `find PATTERN`.
    Find(String),
    /// `list --with-sigs`.
    WithSigs,
    /// `list --check-sigs`.
    CheckSigs,
    /// `import FILE --onto KEYBOX`.
    Import(String),
}

impl WorkloadKind {
    /// Every workload: its name for `--workload` and what a run does, in
    /// the order the help lists them.
    pub const TABLE: [(&'static str, &'static str); 7] = [
        ("validate", "list --with-validation"),
        ("list", "list"),
        ("stats", "stats"),
        ("find:PATTERN", "find PATTERN"),
        ("with-sigs", "list --with-sigs"),
        ("check-sigs", "list --check-sigs"),
        ("import:FILE", "import FILE --onto the store, on a fresh private copy each run"),
    ];

    /// The workload `--workload NAME` names (`find:` with a non-empty
    /// pattern, `import:` with a file).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "validate" => Self::Validate,
            "list" => Self::List,
            "stats" => Self::Stats,
            "with-sigs" => Self::WithSigs,
            "check-sigs" => Self::CheckSigs,
            _ => match (s.strip_prefix("find:"), s.strip_prefix("import:")) {
                (Some(p), _) if !p.is_empty() => Self::Find(p.to_string()),
                (_, Some(f)) if !f.is_empty() => Self::Import(f.to_string()),
                _ => return None,
            },
        })
    }

    /// The names [`WorkloadKind::parse`] takes, as a sentence's list:
    /// `validate, list, …, check-sigs or import:FILE`.
    pub fn names() -> String {
        let names: Vec<&str> = Self::TABLE.iter().map(|(n, _)| *n).collect();
        let (last, rest) = names.split_last().expect("a table of seven");
        format!("{} or {last}", rest.join(", "))
    }

    /// This workload with its lookup strategy (used by the validate and
    /// signature workloads).
    pub fn with(self, lookup: Strategy) -> Workload {
        match self {
            Self::Validate => Workload::Validate(lookup),
            Self::List => Workload::List,
            Self::Stats => Workload::Stats,
            Self::Find(p) => Workload::Find(p),
            Self::WithSigs => Workload::Sigs(crate::openpgp::Mode::WithSigs, lookup),
            Self::CheckSigs => Workload::Sigs(crate::openpgp::Mode::CheckSigs, lookup),
            Self::Import(f) => Workload::Import(f),
        }
    }
}

impl Workload {
    /// `validate`, `list`, `stats`, `find:PATTERN`, `with-sigs`,
    /// `check-sigs` or `import:FILE` (the names of [`WorkloadKind::TABLE`]).
    pub fn name(&self) -> String {
        match self {
            Self::Sigs(crate::openpgp::Mode::WithSigs, _) => WorkloadKind::TABLE[4].0.into(),
            Self::Sigs(crate::openpgp::Mode::CheckSigs, _) => WorkloadKind::TABLE[5].0.into(),
            Self::Validate(_) => WorkloadKind::TABLE[0].0.into(),
            Self::List => WorkloadKind::TABLE[1].0.into(),
            Self::Stats => WorkloadKind::TABLE[2].0.into(),
            Self::Find(p) => format!("find:{p}"),
            Self::Import(f) => format!("import:{f}"),
        }
    }

    /// The command a run amounts to: `list --with-validation --lookup
    /// gnupg`, `list`, `stats`, `find 'PATTERN'`.
    pub fn command(&self) -> String {
        match self {
            Self::Validate(l) => format!("list --with-validation --lookup {}", l.name()),
            Self::List => "list".into(),
            Self::Stats => "stats".into(),
            Self::Find(p) => format!("find '{p}'"),
            Self::Sigs(crate::openpgp::Mode::WithSigs, l) => format!("list --with-sigs --lookup {}", l.name()),
            Self::Sigs(crate::openpgp::Mode::CheckSigs, l) => format!("list --check-sigs --lookup {}", l.name()),
            Self::Import(f) => format!("import '{f}' --onto a fresh copy"),
        }
    }

    /// The lookup strategy of the validate and signature workloads.
    pub fn lookup(&self) -> Option<Strategy> {
        match self {
            Self::Validate(l) | Self::Sigs(_, l) => Some(*l),
            _ => None,
        }
    }
}

impl Serialize for Workload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}
