//! A GnuPG program beside kbxscope's runs ([`GnupgProgram`]): the library
//! asks for its numbers at each size, the CLI runs it (a temporary home,
//! the program, its counter).

use super::result::{GnupgRow, ProgramRow, SweepSize};

/// Why a GnuPG program gave no numbers: whatever its runner met, boxed.
pub type ProgramError = Box<dyn std::error::Error + Send + Sync>;

/// A GnuPG program (gpgsm or gpg) the sweep measures at each size, beside
/// kbxscope's own run (`sweep --with-gpgsm`, `--with-gpg`) or as the rows
/// themselves (`sweep --program`, kbxscope's run then the model).
pub trait GnupgProgram {
    /// Its numbers beside kbxscope's at `size` (one timed run, one
    /// counted); `None` when it cannot read with that size.
    ///
    /// # Errors
    /// The program or its counter cannot be run, or failed.
    fn gnupg_row(&mut self, size: &SweepSize) -> Result<Option<GnupgRow>, ProgramError>;

    /// Its own row at `size`: `warmup` untimed runs, `runs` timed ones, one
    /// counted; or a row saying why it cannot run with that size
    /// ([`ProgramRow::not_run`]).
    ///
    /// # Errors
    /// The program or its counter cannot be run, or failed.
    fn program_row(&mut self, size: &SweepSize, warmup: usize, runs: usize) -> Result<ProgramRow, ProgramError>;

    /// The command each run is, with the program's version and how its
    /// events are counted: `gpgsm -k --with-validation --disable-dirmngr
    /// (gpgsm (GnuPG) 2.2.40), counted with record`.
    fn describe(&self) -> String;
}
