//! What telemetry costs on the hot path: GnuPG-style rescans of a keybox
//! file through the instrumented layer at 8 KiB (the most file events per
//! byte), with metrics off, with metrics on (the handles report to
//! [`IoMetrics`], as with `--metrics-listen`), and with tracing at each
//! level (Chrome layer writing to a sink).
//!
//! `cargo bench --bench overhead`; the numbers are in BENCHMARKS.md.
//!
//! A small harness of its own (no criterion: it doubled the test build's
//! dependencies): each variant is warmed up, then timed in `SAMPLES`
//! samples of enough iterations to last about `SAMPLE_TIME`; it prints the
//! median time per iteration with the fastest and slowest sample, and the
//! throughput. `cargo bench --bench overhead -- FILTER` runs the variants
//! whose name contains FILTER.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

use kbxscope::events::IoObserver;
use kbxscope::io::{BufferSize, IoTally, KeyboxFile};
use kbxscope::telemetry::IoMetrics;

/// A `small` keybox (5 MiB), made once.
fn keybox() -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("kbxscope-bench-small-v{}.kbx", kbxscope::generate::GENERATOR_VERSION));
    if !path.exists() {
        let g = kbxscope::generate::generate(&kbxscope::generate::Preset::Small.config(), &mut |_, _, _| {}).unwrap();
        std::fs::write(&path, &g.keybox).unwrap();
    }
    path
}

/// Ten GnuPG-style rescans: rewind, read every blob completely.
fn rescans(path: &Path, observer: Option<Arc<dyn IoObserver>>) -> u64 {
    let tally = IoTally::with_observer(BufferSize::Bytes(8192), observer);
    let mut f = KeyboxFile::open(path, &tally).unwrap();
    for _ in 0..10 {
        f.rewind().unwrap();
        let out = kbxscope::workload::stats::pass(&mut f);
        assert!(out.fatal.is_none());
    }
    drop(f);
    tally.snapshot().events.total()
}

/// Samples per variant.
const SAMPLES: usize = 15;
/// About how long one sample lasts.
const SAMPLE_TIME: Duration = Duration::from_millis(250);

/// The variants to run (from the command line) and the bytes one iteration reads.
struct Group {
    filter: Option<String>,
    bytes: u64,
}

impl Group {
    /// Time `f` unless the filter leaves it out; print one line.
    fn bench_function(&mut self, name: impl AsRef<str>, mut f: impl FnMut() -> u64) {
        let name = name.as_ref();
        if self.filter.as_deref().is_some_and(|want| !name.contains(want)) {
            return;
        }
        // Warm up for one sample's time; it also tells how many iterations fill a sample.
        let start = Instant::now();
        let mut warm = 0u32;
        while start.elapsed() < SAMPLE_TIME {
            black_box(f());
            warm += 1;
        }
        let per_sample =
            (SAMPLE_TIME.as_secs_f64() / (start.elapsed().as_secs_f64() / f64::from(warm))).ceil().max(1.0) as u32;
        let mut times: Vec<f64> = (0..SAMPLES)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..per_sample {
                    black_box(f());
                }
                t.elapsed().as_secs_f64() / f64::from(per_sample)
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let median = times[SAMPLES / 2];
        println!(
            "rescans_8k/{name:<30} {:>8.3} ms  [{:.3} … {:.3}]  {:>7.1} MiB/s",
            median * 1e3,
            times[0] * 1e3,
            times[SAMPLES - 1] * 1e3,
            self.bytes as f64 / median / (1024.0 * 1024.0),
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; anything else not starting with `-` is a filter.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let path = keybox();
    let size = std::fs::metadata(&path).unwrap().len();
    let mut g = Group { filter, bytes: 10 * size };
    // Telemetry off: the binary without --metrics-*; no observer.
    g.bench_function("metrics off", || rescans(&path, None));
    // Tracing alone (metrics still off).
    for (level, targets) in [
        ("command", &["kbx::command"][..]),
        ("lookup", &["kbx::command", "kbx::lookup"][..]),
        ("blob", &["kbx::command", "kbx::lookup", "kbx::blob"][..]),
        ("event", &["kbx::command", "kbx::lookup", "kbx::blob", "kbx::event"][..]),
    ] {
        let (chrome, guard) =
            tracing_chrome::ChromeLayerBuilder::new().writer(std::io::sink()).include_args(true).build();
        let filter = targets.iter().fold(Targets::new(), |t, target| t.with_target(*target, tracing::Level::TRACE));
        let subscriber = tracing_subscriber::registry().with(chrome.with_filter(filter));
        tracing::subscriber::with_default(subscriber, || {
            g.bench_function(format!("tracing {level}"), || rescans(&path, None));
        });
        drop(guard);
    }
    // Metrics on: every handle buckets its events and reports to IoMetrics;
    // rendering once per iteration stands in for a scrape.
    let metrics = Arc::new(IoMetrics::default());
    g.bench_function("metrics on", || {
        let n = rescans(&path, Some(metrics.clone()));
        std::hint::black_box(metrics.render());
        n
    });
}
