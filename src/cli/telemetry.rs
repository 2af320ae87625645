//! Installing the Prometheus exporter (`--metrics-listen`, `--metrics-out`,
//! `--linger`). Without those flags nothing is installed: no recorder, no
//! thread, no port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::output::write_file;
use kbxscope::telemetry::{self, DURATION_BUCKETS, READ_SIZE, SIZE_BUCKETS};

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct TelemetryOptions {
    /// Serve `/metrics` on this address while the command runs.
    pub listen: Option<SocketAddr>,
    /// Keep serving this long after the work.
    pub linger: Option<Duration>,
    /// Write the exposition here at exit.
    pub out: Option<PathBuf>,
}

/// The installed exporter, if any.
pub struct Telemetry {
    handle: Option<PrometheusHandle>,
    options: TelemetryOptions,
}

/// How often histogram samples are drained into their buckets. The
/// exporter keeps every sample until then (its default is 5 s: tens of
/// megabytes at a million file events a second).
const UPKEEP: Duration = Duration::from_millis(100);

fn builder() -> Result<PrometheusBuilder> {
    Ok(PrometheusBuilder::new()
        .upkeep_timeout(UPKEEP)
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &DURATION_BUCKETS)?
        .set_buckets_for_metric(Matcher::Full(READ_SIZE.into()), &SIZE_BUCKETS)?)
}

impl Telemetry {
    /// Install the exporter if any option asks for one. A port in use is an
    /// error here, before any work starts.
    ///
    /// # Errors
    /// The exporter cannot be built or the address cannot be bound.
    pub fn install(options: TelemetryOptions) -> Result<Self> {
        if options.listen.is_none() && options.out.is_none() {
            return Ok(Self { handle: None, options });
        }
        let handle = match options.listen {
            Some(addr) => {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                let (recorder, exporter) = {
                    let _guard = runtime.enter();
                    builder()?
                        .with_http_listener(addr)
                        .build()
                        .with_context(|| format!("cannot serve metrics on {addr}"))?
                };
                let handle = recorder.handle();
                std::thread::Builder::new().name("metrics-http".into()).spawn(move || runtime.block_on(exporter))?;
                metrics::set_global_recorder(recorder)?;
                handle
            }
            None => {
                let recorder = builder()?.build_recorder();
                let handle = recorder.handle();
                metrics::set_global_recorder(recorder)?;
                // Without the HTTP listener no upkeep task is spawned:
                // drain the histogram samples here.
                let upkeep = handle.clone();
                std::thread::Builder::new().name("metrics-upkeep".into()).spawn(move || loop {
                    std::thread::sleep(UPKEEP);
                    upkeep.run_upkeep();
                })?;
                handle
            }
        };
        telemetry::sink::start()?;
        telemetry::enable();
        telemetry::describe();
        telemetry::build_info();
        Ok(Self { handle: Some(handle), options })
    }

    /// After the work: linger for scrapers, then write `--metrics-out`.
    ///
    /// # Errors
    /// The exposition file cannot be written.
    pub fn finish(self) -> Result<()> {
        let Some(handle) = self.handle else { return Ok(()) };
        telemetry::sink::drain();
        handle.run_upkeep();
        if let (Some(addr), Some(linger)) = (self.options.listen, self.options.linger) {
            eprintln!("kbxscope: serving metrics on http://{addr}/metrics for {:.0?} more (Ctrl-C ends it)", linger);
            std::thread::sleep(linger);
        }
        if let Some(path) = &self.options.out {
            write_file(path, handle.render().as_bytes(), true)?;
        }
        Ok(())
    }
}

/// `--linger`: `30s`, `500ms`, `2m`, or a number of seconds; at most a day.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    kbxscope::units::duration(s)
        .ok()
        .filter(|d| *d <= Duration::from_secs(86_400))
        .ok_or_else(|| format!("expected a duration such as 30s, 500ms, 2m or 1h (at most 24h); got '{s}'"))
}

/// `--metrics-listen`: an address with a port; the default is loopback.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|_| format!("expected an IP address and port such as 127.0.0.1:9464 or [::1]:9464; got '{s}'"))
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
    fn addresses() {
        assert!(parse_listen("127.0.0.1:9464").is_ok());
        assert!(parse_listen("[::1]:9000").is_ok());
        assert!(parse_listen("localhost").is_err());
    }
}
