//! Installing the metrics (`--metrics-listen`, `--metrics-out`,
//! `--linger`). Without those flags nothing is installed: no recorder, no
//! observer, no thread, no port.
//!
//! Two sources make one exposition: kbxscope's own file-event families
//! ([`IoMetrics`], fed by the I/O layer as an observer) and the Prometheus
//! exporter's recorder for the few families emitted through the `metrics`
//! facade. `/metrics` is served here, by a small HTTP/1.1 responder on
//! std's `TcpListener`: `GET` or `HEAD /metrics` answers the exposition
//! with the text format's content type (`version=0.0.4`), any other path
//! 404, another method on `/metrics` 405.

use super::args::BadValue;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::output::write_file;
use kbxscope::telemetry::{self, IoMetrics, COMMAND_BUCKETS, COMMAND_DURATION};

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct TelemetryOptions {
    /// Serve `/metrics` on this address while the command runs.
    pub listen: Option<SocketAddr>,
    /// Keep serving this long after the work.
    pub linger: Option<Duration>,
    /// Write the exposition here at exit.
    pub out: Option<PathBuf>,
    /// Push the exposition to this Pushgateway at exit.
    pub push: Option<PushUrl>,
}

/// `--metrics-push`: a Pushgateway's `http://HOST:PORT[/PREFIX]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUrl {
    /// `HOST:PORT`, as given.
    authority: String,
    /// The path before `/metrics/job/…`, without a trailing slash.
    prefix: String,
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
fn push(url: &PushUrl, body: &str) -> Result<()> {
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

/// Both sources of the exposition.
#[derive(Clone)]
struct Sources {
    exporter: PrometheusHandle,
    io: Arc<IoMetrics>,
}

impl Sources {
    fn render(&self) -> String {
        let mut text = self.exporter.render();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text + &self.io.render()
    }
}

/// The installed metrics, if any.
pub struct Telemetry {
    sources: Option<Sources>,
    /// The address actually bound (the real port for `:0`).
    bound: Option<SocketAddr>,
    options: TelemetryOptions,
}

/// The content type of the Prometheus text format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

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
fn serve(listener: TcpListener, sources: Sources) -> Result<()> {
    std::thread::Builder::new().name("metrics-http".into()).spawn(move || {
        for stream in listener.incoming().flatten() {
            let sources = sources.clone();
            // A client error only ends its own connection.
            let _ = std::thread::Builder::new().name("metrics-conn".into()).spawn(move || answer(stream, &sources));
        }
    })?;
    Ok(())
}

impl Telemetry {
    /// Install the metrics if any option asks for them. A port in use is an
    /// error here, before any work starts.
    ///
    /// # Errors
    /// The exporter cannot be built or the address cannot be bound.
    pub fn install(options: TelemetryOptions) -> Result<Self> {
        if options.listen.is_none() && options.out.is_none() && options.push.is_none() {
            return Ok(Self { sources: None, bound: None, options });
        }
        let listener = match options.listen {
            Some(addr) => Some(TcpListener::bind(addr).with_context(|| format!("cannot serve metrics on {addr}"))?),
            None => None,
        };
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(COMMAND_DURATION.into()), &COMMAND_BUCKETS)?
            .build_recorder();
        let sources = Sources { exporter: recorder.handle(), io: Arc::new(IoMetrics::default()) };
        metrics::set_global_recorder(recorder)?;
        if kbxscope::events::set_observer(sources.io.clone()).is_err() {
            anyhow::bail!("metrics were already installed");
        }
        telemetry::describe();
        telemetry::zero_series();
        telemetry::build_info();
        let mut bound = None;
        if let Some(listener) = listener {
            let addr = listener.local_addr()?;
            if !addr.ip().is_loopback() {
                eprintln!(
                    "kbxscope: warning: metrics on {addr} are reachable from other hosts, without authentication"
                );
            }
            eprintln!("kbxscope: serving metrics on http://{addr}/metrics");
            serve(listener, sources.clone())?;
            bound = Some(addr);
        }
        Ok(Self { sources: Some(sources), bound, options })
    }

    /// After the work: set the batch-job gauges (`success`: the command
    /// succeeded), linger for scrapers, write `--metrics-out`, push to
    /// `--metrics-push`.
    ///
    /// # Errors
    /// The exposition file cannot be written or the push failed.
    pub fn finish(self, success: bool) -> Result<()> {
        let Some(sources) = self.sources else { return Ok(()) };
        telemetry::run_ended(success);
        if let (Some(addr), Some(linger)) = (self.bound, self.options.linger) {
            eprintln!("kbxscope: serving metrics on http://{addr}/metrics for {:.0?} more (Ctrl-C ends it)", linger);
            std::thread::sleep(linger);
        }
        if let Some(path) = &self.options.out {
            write_file(path, sources.render().as_bytes(), true)?;
        }
        if let Some(url) = &self.options.push {
            push(url, &sources.render())?;
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
