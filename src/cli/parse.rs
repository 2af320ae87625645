//! What the user typed, as values: every value parser of the command line
//! (clap calls them) and the one-line error they give. No other module of
//! the command line is used here.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kbxscope::io::FileApi;
use kbxscope::sweep::{SweepSize, WorkloadKind};

/// A command-line value that does not parse: the one-line message clap
/// shows after "invalid value … for …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadValue(pub String);

/// A point in time: RFC 3339, or a date (midnight UTC).
pub fn parse_time(s: &str) -> Result<i64, BadValue> {
    use time::format_description::well_known::Rfc3339;
    let full = if s.len() == 10 { format!("{s}T00:00:00Z") } else { s.to_string() };
    time::OffsetDateTime::parse(&full, &Rfc3339).map(|t| t.unix_timestamp()).map_err(|_| {
        BadValue(format!("expected an RFC 3339 time (2026-12-01T00:00:00Z) or a date (2026-12-01); got '{s}'"))
    })
}

/// A whole number for a count option, with a message that says so.
pub fn count(s: &str) -> Result<u64, BadValue> {
    s.parse().map_err(|_| BadValue(format!("expected a whole number (0, 1, 2, …); got '{s}'")))
}

/// Like [`count`], for counts held in a `usize`.
pub fn count_usize(s: &str) -> Result<usize, BadValue> {
    count(s).and_then(|n| usize::try_from(n).map_err(|_| BadValue(format!("{n} is too large"))))
}

/// A file size: bytes, or a number with a unit (k, kb, KiB, M, …: powers of
/// 1024), at most 4 GiB.
pub fn parse_file_size(s: &str) -> Result<u64, BadValue> {
    kbxscope::units::size(s, 1).ok().filter(|v| *v <= 4 << 30).ok_or_else(|| {
        BadValue(format!(
            "expected a size in bytes or with a unit (500000, 512k, 512KiB, 42M, 1G), at most 4 GiB; got '{s}'"
        ))
    })
}

pub fn keybox_path(s: &str) -> Result<PathBuf, BadValue> {
    match s {
        "" => Err(BadValue("the keybox path is empty".into())),
        "-" => Err(BadValue("'-' is not a keybox: kbxscope reads keyboxes from files, not from standard input".into())),
        _ => Ok(PathBuf::from(s)),
    }
}

/// Parse `--workload`.
pub fn parse_workload(s: &str) -> Result<WorkloadKind, BadValue> {
    WorkloadKind::parse(s).ok_or_else(|| BadValue(format!("expected {}; got '{s}'", WorkloadKind::names())))
}

/// `--workload`'s help, from the workload table.
pub fn workload_help() -> String {
    let each: Vec<String> = WorkloadKind::TABLE
        .iter()
        .map(|(name, does)| if name == does { name.to_string() } else { format!("{name} ({does})") })
        .collect();
    format!("What each run does: {}", each.join(", "))
}

/// One `--file-api` name (whether this system has it is resolve's question).
pub fn parse_file_api(s: &str) -> Result<FileApi, BadValue> {
    FileApi::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = FileApi::ALL.iter().map(|a| a.name()).collect();
        BadValue(format!("unknown file API (one of: {})", names.join(", ")))
    })
}

/// Parse one `--sizes` entry, keeping how it was written.
pub fn parse_size(s: &str) -> Result<SweepSize, BadValue> {
    s.parse().map(|size| SweepSize { label: s.to_string(), size, api: None }).map_err(|e| BadValue(format!("{e}")))
}

/// `--linger`: `30s`, `500ms`, `2m`, or a number of seconds; at most a day.
pub fn parse_duration(s: &str) -> Result<Duration, BadValue> {
    kbxscope::units::duration(s)
        .ok()
        .filter(|d| *d <= Duration::from_secs(86_400))
        .ok_or_else(|| BadValue(format!("expected a duration such as 30s, 500ms, 2m or 1h (at most 24h); got '{s}'")))
}

/// `--metrics-listen`: an address with a port; the default is loopback.
pub fn parse_listen(s: &str) -> Result<SocketAddr, BadValue> {
    s.parse().map_err(|_| {
        BadValue(format!("expected an IP address and port such as 127.0.0.1:9464 or [::1]:9464; got '{s}'"))
    })
}

/// `--metrics-push`: a Pushgateway's `http://HOST:PORT[/PREFIX]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUrl {
    /// `HOST:PORT`, as given.
    pub(crate) authority: String,
    /// The path before `/metrics/job/…`, without a trailing slash.
    pub(crate) prefix: String,
}

impl std::fmt::Display for PushUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}{}", self.authority, self.prefix)
    }
}

/// `--metrics-push`: `http://HOST:PORT` with an optional path prefix.
pub fn parse_push_url(s: &str) -> Result<PushUrl, BadValue> {
    let bad = || BadValue(format!("expected a Pushgateway URL such as http://127.0.0.1:9091; got '{s}'"));
    let rest = s.strip_prefix("http://").ok_or_else(bad)?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let port = authority.rsplit_once(':').map(|(_, p)| p).ok_or_else(bad)?;
    if port.parse::<u16>().is_err() || authority.starts_with(':') || path.contains(['?', '#', ' ']) {
        return Err(bad());
    }
    Ok(PushUrl { authority: authority.to_string(), prefix: path.trim_end_matches('/').to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("2026-12-01"), Ok(1_796_083_200));
        assert_eq!(parse_time("2026-12-01T00:00:00Z"), Ok(1_796_083_200));
        assert_eq!(parse_time("2026-12-01T01:00:00+01:00"), Ok(1_796_083_200));
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn file_sizes() {
        assert_eq!(parse_file_size("1000"), Ok(1000));
        assert_eq!(parse_file_size("42M"), Ok(42 << 20));
        assert_eq!(parse_file_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_file_size("512kb"), Ok(512 << 10));
        assert!(parse_file_size("5G").is_err());
        assert!(parse_file_size("-1").is_err());
        assert!(parse_file_size("1.5M").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("25h").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn push_urls() {
        let u = parse_push_url("http://127.0.0.1:9091").unwrap();
        assert_eq!((u.authority.as_str(), u.prefix.as_str()), ("127.0.0.1:9091", ""));
        assert_eq!(parse_push_url("http://gw.example:80/pg/").unwrap().prefix, "/pg");
        for bad in ["https://h:1", "http://h", "http://:9091", "http://h:x", "h:9091", "http://h:1/a?b"] {
            assert!(parse_push_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses() {
        assert!(parse_listen("127.0.0.1:9464").is_ok());
        assert!(parse_listen("[::1]:9000").is_ok());
        assert!(parse_listen("localhost").is_err());
    }
}
