//! `--kbx-buffer-size`: how large the read buffer is.
//!
//! A bare number is KiB with GnuPG's meaning (`keybox_set_buffersize`): 0
//! keeps the stream default of 8 KiB, other values round *up* to a
//! multiple of 8 KiB. A number with a unit is exact: `4096B`, `12k`,
//! `12kb` or `12KiB` (12288 bytes), `1M` or `1MiB`, `1G` or `1GiB`
//! ([`crate::units`]). `unbuffered`
//! sends every logical read to the operating system. The largest size is
//! 1 GiB.

use std::fmt;
use std::str::FromStr;

use crate::gnupg_version::GnupgVersion;

/// One KiB.
const KIB: u64 = 1024;
/// The stream layer's default buffer (estream's `BUFFER_BLOCK_SIZE`).
pub(super) const STREAM_DEFAULT: usize = 8 * 1024;
/// The largest buffer accepted.
pub(super) const MAX_BUFFER: u64 = 1024 * 1024 * 1024;

/// The read buffer of a keybox handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufferSize {
    /// No buffer: every logical read is one or more `read(2)` calls.
    Unbuffered,
    /// A buffer of this many bytes (at least 1).
    Bytes(usize),
}

impl Default for BufferSize {
    /// 64 KiB, GnuPG's default on Unix since 2.4.2 / 2.2.42.
    fn default() -> Self {
        Self::Bytes(64 * 1024)
    }
}

impl BufferSize {
    /// The buffer's capacity in bytes (0 when unbuffered).
    pub fn bytes(self) -> usize {
        match self {
            Self::Unbuffered => 0,
            Self::Bytes(n) => n,
        }
    }

    /// The buffer `version` reads a keybox through when none is given, on
    /// this system: 2.2's 8 KiB stream buffer, or 2.4's `--kbx-buffer-size`
    /// default (64 KiB on Unix, 128 KiB on Windows).
    pub fn gnupg_default(version: GnupgVersion) -> Self {
        match version {
            GnupgVersion::V2_2 => Self::Bytes(STREAM_DEFAULT),
            GnupgVersion::V2_4 => Self::Bytes(super::sys::GNUPG_KBX_BUFFER_KIB * KIB as usize),
        }
    }

    /// GnuPG's `--kbx-buffer-size N` (N in KiB): 0 → 8 KiB default,
    /// otherwise rounded up to a multiple of 8 KiB.
    pub(crate) fn from_gnupg_kib(kib: u64) -> Result<Self, BufferSizeError> {
        if kib == 0 {
            return Ok(Self::Bytes(STREAM_DEFAULT));
        }
        let rounded = kib.checked_add(7).map(|k| k / 8 * 8).ok_or(BufferSizeError::TooLarge)?;
        let bytes = rounded.checked_mul(KIB).filter(|b| *b <= MAX_BUFFER).ok_or(BufferSizeError::TooLarge)?;
        Ok(Self::Bytes(bytes as usize))
    }
}

impl fmt::Display for BufferSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Unbuffered => f.write_str("unbuffered"),
            Self::Bytes(n) if n % (1024 * 1024) == 0 => write!(f, "{} MiB", n / (1024 * 1024)),
            Self::Bytes(n) if n % 1024 == 0 => write!(f, "{} KiB", n / 1024),
            Self::Bytes(n) => write!(f, "{n} B"),
        }
    }
}

/// Why a buffer size was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BufferSizeError {
    /// Not a number, a unit or `unbuffered`.
    #[error("expected a number of KiB (0 = the 8 KiB stream default; rounded up to a multiple of 8 KiB), a size with a unit (4096B, 12k, 12kb, 12KiB, 1M, 1MiB, 1G) or 'unbuffered'")]
    Syntax,
    /// Zero with a unit.
    #[error(
        "a size with a unit must be at least 1 byte (use 0 without a unit for the 8 KiB default, or 'unbuffered')"
    )]
    Zero,
    /// More than 1 GiB.
    #[error("the largest buffer is 1 GiB")]
    TooLarge,
}

impl FromStr for BufferSize {
    type Err = BufferSizeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("unbuffered") {
            return Ok(Self::Unbuffered);
        }
        let (n, unit) = crate::units::split(s).map_err(|e| match e {
            crate::units::UnitError::Syntax => BufferSizeError::Syntax,
            crate::units::UnitError::TooLarge => BufferSizeError::TooLarge,
        })?;
        if unit.is_empty() {
            return Self::from_gnupg_kib(n);
        }
        let multiplier = crate::units::size_unit(unit).ok_or(BufferSizeError::Syntax)?;
        if n == 0 {
            return Err(BufferSizeError::Zero);
        }
        let bytes = n.checked_mul(multiplier).filter(|b| *b <= MAX_BUFFER).ok_or(BufferSizeError::TooLarge)?;
        Ok(Self::Bytes(bytes as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<usize, BufferSizeError> {
        s.parse::<BufferSize>().map(BufferSize::bytes)
    }

    #[test]
    fn gnupg_kib_meaning() {
        assert_eq!(p("0"), Ok(8192));
        assert_eq!(p("1"), Ok(8192));
        assert_eq!(p("8"), Ok(8192));
        assert_eq!(p("9"), Ok(16384));
        assert_eq!(p("16"), Ok(16384));
        assert_eq!(p("64"), Ok(65536));
        assert_eq!(p("512"), Ok(524288));
        assert_eq!(p("1048576"), Ok(1 << 30));
        assert_eq!(p("1048577"), Err(BufferSizeError::TooLarge));
    }

    #[test]
    fn exact_units() {
        assert_eq!(p("4096B"), Ok(4096));
        assert_eq!(p("1b"), Ok(1));
        assert_eq!(p("12k"), Ok(12288));
        assert_eq!(p("12KiB"), Ok(12288));
        assert_eq!(p("1M"), Ok(1 << 20));
        assert_eq!(p("1MiB"), Ok(1 << 20));
        assert_eq!(p("1G"), Ok(1 << 30));
        assert_eq!(p("unbuffered"), Ok(0));
        assert_eq!("unbuffered".parse(), Ok(BufferSize::Unbuffered));
    }

    #[test]
    fn rejects_bad_values() {
        for bad in ["", "-1", "-8", "abc", "12kx", "1.5M", " 8", "8 ", "k", "0x10"] {
            assert_eq!(p(bad), Err(BufferSizeError::Syntax), "{bad:?}");
        }
        // kb, KB and KiB alike (issue #16).
        assert_eq!(p("12kb"), Ok(12288));
        assert_eq!(p("12KB"), Ok(12288));
        assert_eq!(p("0B"), Err(BufferSizeError::Zero));
        assert_eq!(p("0k"), Err(BufferSizeError::Zero));
        assert_eq!(p("2G"), Err(BufferSizeError::TooLarge));
        assert_eq!(p("1025M"), Err(BufferSizeError::TooLarge));
        assert_eq!(p("99999999999999999999999"), Err(BufferSizeError::TooLarge));
    }

    #[test]
    fn display() {
        assert_eq!(BufferSize::Bytes(65536).to_string(), "64 KiB");
        assert_eq!(BufferSize::Bytes(4096 + 1).to_string(), "4097 B");
        assert_eq!(BufferSize::Bytes(1 << 20).to_string(), "1 MiB");
        assert_eq!(BufferSize::Unbuffered.to_string(), "unbuffered");
    }
}
