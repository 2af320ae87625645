//! `--metrics-push`: the Pushgateway URL and the one PUT at exit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, Result};

use super::serve::CONTENT_TYPE;
use crate::cli::parse::PushUrl;

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
