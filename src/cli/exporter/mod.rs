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
//! 404, another method on `/metrics` 405 (`serve`); `--metrics-push` PUTs
//! the exposition at exit (`push`).

mod push;
mod serve;
mod sources;

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

use super::output::write_file;
use super::parse::PushUrl;
use kbxscope::telemetry::{self, IoMetrics, COMMAND_BUCKETS, COMMAND_DURATION};
use push::push;
use serve::serve;
use sources::Sources;

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

/// The installed metrics, if any.
pub struct Telemetry {
    sources: Option<Sources>,
    /// The address actually bound (the real port for `:0`).
    bound: Option<SocketAddr>,
    options: TelemetryOptions,
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
        let sources = Sources::new(recorder.handle(), Arc::new(IoMetrics::default()));
        metrics::set_global_recorder(recorder)?;
        if kbxscope::events::set_observer(sources.io()).is_err() {
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
