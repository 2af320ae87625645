//! Why a sweep stopped ([`SweepError`]).

use super::program::ProgramError;
use crate::io::BufferSize;
use crate::kbx::search::PatternError;
use crate::store::StoreError;
use crate::workload::ScanError;

/// Why a sweep stopped. The CLI words it; the variants say what and where.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The store cannot be opened or read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A run met an error in the keybox (it names the blob and offset).
    #[error("{error}")]
    Scan {
        /// The buffer size of the run.
        size: BufferSize,
        /// What the workload reported.
        error: ScanError,
    },
    /// The find workload's pattern is not a valid search pattern.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// A GnuPG program (`--with-gpgsm`, `--with-gpg`, `--program`) could
    /// not be run at a size, or failed: its own words.
    #[error(transparent)]
    Program(ProgramError),
    /// The import workload's private copy of the keybox could not be made.
    #[error("cannot make a private copy of the keybox: {error}")]
    Private {
        /// What the system said.
        error: std::io::Error,
    },
    /// The import workload failed.
    #[error(transparent)]
    Import(#[from] crate::workload::import::ImportError),
}
