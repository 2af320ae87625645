//! `/metrics` on std's `TcpListener`: a small HTTP/1.1 responder.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use anyhow::Result;

use super::sources::Sources;

/// The content type of the Prometheus text format.
pub(super) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Requests larger than this are refused (a scrape is a few hundred bytes).
const MAX_REQUEST: usize = 8192;

/// Answer one connection: read the request head, answer, close.
fn answer(mut stream: TcpStream, sources: &Sources) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk)?;
        if n == 0 || head.len() + n > MAX_REQUEST {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|b| *b == b' ');
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let path = target.split(|b| *b == b'?').next().unwrap_or_default();
    let (status, body, extra) = match (path == b"/metrics", method) {
        (true, b"GET" | b"HEAD") => ("200 OK", sources.render(), ""),
        (true, _) => ("405 Method Not Allowed", "use GET /metrics\n".to_string(), "Allow: GET, HEAD\r\n"),
        (false, _) => ("404 Not Found", "kbxscope serves /metrics only\n".to_string(), ""),
    };
    let content_type = if status.starts_with("200") { CONTENT_TYPE } else { "text/plain; charset=utf-8" };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != b"HEAD" {
        response.extend_from_slice(body.as_bytes());
    }
    stream.write_all(&response)
}

/// Serve `/metrics` on `listener` from a thread of its own, one short
/// thread per connection.
pub(super) fn serve(listener: TcpListener, sources: Sources) -> Result<()> {
    std::thread::Builder::new().name("metrics-http".into()).spawn(move || {
        for stream in listener.incoming().flatten() {
            let sources = sources.clone();
            // A client error only ends its own connection.
            let _ = std::thread::Builder::new().name("metrics-conn".into()).spawn(move || answer(stream, &sources));
        }
    })?;
    Ok(())
}
