//! What telemetry costs on the hot path: GnuPG-style rescans of a keybox
//! file through the instrumented layer at 8 KiB (the most file events per
//! byte), with metrics off, with metrics on (the handles report to
//! [`IoMetrics`], as with `--metrics-listen`), and with tracing at each
//! level (Chrome layer writing to a sink).
//!
//! `cargo bench --bench overhead`; the numbers are in BENCHMARKS.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

use kbxscope::io::{BufferSize, IoObserver, IoTally, KeyboxFile};
use kbxscope::telemetry::IoMetrics;

/// A `small` keybox (5 MiB), made once.
fn keybox() -> PathBuf {
    let path = std::env::temp_dir().join(format!("kbxscope-bench-small-v{}.kbx", kbxscope::gen::GENERATOR_VERSION));
    if !path.exists() {
        let g = kbxscope::gen::generate(&kbxscope::gen::Preset::Small.config(), &mut |_, _, _| {}).unwrap();
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
        let out = kbxscope::workload::stats::run(&mut f);
        assert!(out.error.is_none());
    }
    drop(f);
    tally.snapshot().events.total()
}

fn overhead(c: &mut Criterion) {
    let path = keybox();
    let size = std::fs::metadata(&path).unwrap().len();
    let mut g = c.benchmark_group("rescans_8k");
    g.throughput(Throughput::Bytes(10 * size)).sample_size(15).measurement_time(Duration::from_secs(4));
    // Telemetry off: the binary without --metrics-*; no observer.
    g.bench_function("metrics off", |b| b.iter(|| rescans(&path, None)));
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
            g.bench_function(format!("tracing {level}"), |b| b.iter(|| rescans(&path, None)));
        });
        drop(guard);
    }
    // Metrics on: every handle buckets its events and reports to IoMetrics;
    // rendering once per iteration stands in for a scrape.
    let metrics = Arc::new(IoMetrics::default());
    g.bench_function("metrics on", |b| {
        b.iter(|| {
            let n = rescans(&path, Some(metrics.clone()));
            std::hint::black_box(metrics.render());
            n
        })
    });
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
