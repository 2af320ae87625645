//! `--metrics-push`: the Pushgateway URL and the one PUT at exit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, Result};

use super::serve::CONTENT_TYPE;
use crate::cli::args::BadValue;

/// `--metrics-push`: a Pushgateway's `http://HOST:PORT[/PREFIX]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUrl {
    /// `HOST:PORT`, as given.
    pub(super) authority: String,
    /// The path before `/metrics/job/…`, without a trailing slash.
    pub(super) prefix: String,
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

/// PUT `body` as job `kbxscope` (replacing the job's previous push).
pub(super) fn push(url: &PushUrl, body: &str) -> Result<()> {
    let fail = || format!("cannot push metrics to {url}");
    let mut stream = TcpStream::connect(url.authority.as_str()).with_context(fail)?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).with_context(fail)?;
    stream.set_write_timeout(Some(Duration::from_secs(10))).with_context(fail)?;
    let request = format!(
        "PUT {}/metrics/job/kbxscope HTTP/1.1\r\nHost: {}\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        url.prefix,
        url.authority,
        body.len()
    );
    stream.write_all(request.as_bytes()).with_context(fail)?;
    let mut answer = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut answer).with_context(fail)?;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.lines().next().unwrap_or_default();
    if !(status.starts_with("HTTP/1.1 2") || status.starts_with("HTTP/1.0 2")) {
        let why = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b.trim()).lines().next().unwrap_or_default();
        anyhow::bail!("{}: the Pushgateway answered '{status}' {why}", fail());
    }
    Ok(())
}
