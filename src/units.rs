//! Numbers with units, as the command line takes them: one parser for sizes
//! (`4096B`, `512k`, `64kb`, `64KiB`, `1M`) and durations (`500ms`, `30s`,
//! `2m`, `1h`).
//!
//! Size units are binary whatever their spelling (`k`, `kb`, `KB`, `KiB`
//! all mean 1024 bytes) and case-insensitive; duration units are
//! lower-case. What a bare number means is the caller's choice (KiB for
//! `--kbx-buffer-size`, bytes for `gen --size`, seconds for `--linger`).

use std::time::Duration;

/// Why a number with a unit was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitError {
    /// No leading digits, or a unit that is not known.
    Syntax,
    /// The value does not fit (in 64 bits).
    TooLarge,
}

/// Split `s` into its leading decimal digits and the unit after them.
///
/// # Errors
/// [`UnitError::Syntax`] without digits; [`UnitError::TooLarge`] when the
/// number does not fit in a `u64`.
pub fn split(s: &str) -> Result<(u64, &str), UnitError> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return Err(UnitError::Syntax);
    }
    // Digits only: a parse failure can only be an overflow.
    let n = s[..end].parse().map_err(|_| UnitError::TooLarge)?;
    Ok((n, &s[end..]))
}

/// Bytes per unit of a size unit: `b`; `k`, `kb`, `kib`; `m`, `mb`, `mib`;
/// `g`, `gb`, `gib` (any case, powers of 1024). `None` for anything else,
/// including no unit.
pub(crate) fn size_unit(unit: &str) -> Option<u64> {
    match unit.to_ascii_lowercase().as_str() {
        "b" => Some(1),
        "k" | "kb" | "kib" => Some(1 << 10),
        "m" | "mb" | "mib" => Some(1 << 20),
        "g" | "gb" | "gib" => Some(1 << 30),
        _ => None,
    }
}

/// A size in bytes; a bare number is `bare` bytes each (1 for bytes, 1024
/// for KiB).
///
/// # Errors
/// [`UnitError`] for a bad syntax, an unknown unit or an overflow.
pub fn size(s: &str, bare: u64) -> Result<u64, UnitError> {
    let (n, unit) = split(s)?;
    let mult = if unit.is_empty() { bare } else { size_unit(unit).ok_or(UnitError::Syntax)? };
    n.checked_mul(mult).ok_or(UnitError::TooLarge)
}

/// A duration: `ms`, `s`, `m`, `h`; a bare number is seconds.
///
/// # Errors
/// [`UnitError`] for a bad syntax, an unknown unit or an overflow.
pub fn duration(s: &str) -> Result<Duration, UnitError> {
    let (n, unit) = split(s)?;
    let secs = |mult: u64| n.checked_mul(mult).map(Duration::from_secs).ok_or(UnitError::TooLarge);
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "" | "s" => secs(1),
        "m" => secs(60),
        "h" => secs(3600),
        _ => Err(UnitError::Syntax),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_every_spelling() {
        for s in ["64k", "64K", "64kb", "64KB", "64KiB", "64kib", "65536B", "65536b"] {
            assert_eq!(size(s, 1), Ok(64 << 10), "{s}");
        }
        assert_eq!(size("64", 1024), Ok(64 << 10));
        assert_eq!(size("1MB", 1), Ok(1 << 20));
        assert_eq!(size("2GiB", 1), Ok(2 << 30));
        assert_eq!(size("1.5M", 1), Err(UnitError::Syntax));
        assert_eq!(size("-1", 1), Err(UnitError::Syntax));
        assert_eq!(size("12x", 1), Err(UnitError::Syntax));
        assert_eq!(size("99999999999999999999", 1), Err(UnitError::TooLarge));
        assert_eq!(size("99999999999G", 1), Err(UnitError::TooLarge));
    }

    #[test]
    fn durations() {
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("5"), Ok(Duration::from_secs(5)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(duration("1d"), Err(UnitError::Syntax));
        assert_eq!(duration("soon"), Err(UnitError::Syntax));
    }
}
