//! Where a workload's problems are: a keybox names the blob and its byte
//! offset; a keyboxd database names the row each blob was made from.

use super::scan::ScanError;
use crate::keyboxd::{RowMap, RowProblem};

/// Where the errors of a pass on a store are.
#[derive(Debug, Clone)]
pub enum Places {
    /// In a keybox: the errors name the blob and byte offset.
    Keybox,
    /// In a database: its rows as the pass met them, and the rows no
    /// blob could be made from.
    Rows(RowMap),
}

impl Places {
    /// The error, located.
    pub fn describe(&self, e: &ScanError) -> String {
        match self {
            Places::Keybox => e.to_string(),
            Places::Rows(map) => format!("{}: {}", map.row_name(e.index), e.what()),
        }
    }

    /// The database's rows that could not be taken (none for a keybox).
    pub fn row_problems(&self) -> &[RowProblem] {
        match self {
            Places::Keybox => &[],
            Places::Rows(map) => &map.problems,
        }
    }
}

/// What a workload's pass on a store gave, and where its errors are.
#[derive(Debug)]
pub struct Ran<T> {
    /// The pass's outcome.
    pub outcome: T,
    /// Where its errors are.
    pub places: Places,
}

impl<T> Ran<T> {
    /// A pass on a keybox.
    pub(crate) fn keybox(outcome: T) -> Self {
        Self { outcome, places: Places::Keybox }
    }

    /// A pass on a database's rows.
    pub(crate) fn rows(outcome: T, map: RowMap) -> Self {
        Self { outcome, places: Places::Rows(map) }
    }
}
