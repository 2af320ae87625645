//! Unix timestamps as text (UTC).

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// `2026-11-30T07:17:58Z`; out-of-range values are shown as the number.
pub fn rfc3339(secs: i64) -> String {
    OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| format!("@{secs}"))
}

/// `2026-11-30`, the date part of [`rfc3339`].
pub fn date(secs: i64) -> String {
    let full = rfc3339(secs);
    full.split('T').next().unwrap_or(&full).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1796023078), "2026-11-30T07:17:58Z");
        assert_eq!(date(1796023078), "2026-11-30");
    }
}
