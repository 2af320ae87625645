//! What telemetry costs on the hot path: GnuPG-style rescans of a keybox
//! file through the instrumented layer at 8 KiB (the most file events per
//! byte), with no recorder, with the Prometheus recorder, and with tracing
//! at each level (Chrome layer writing to a sink).
//!
//! `cargo bench --bench overhead`; the numbers are in BENCHMARKS.md.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

use kbxscope::io::{BufferSize, IoTally, KeyboxFile};
use kbxscope::telemetry::{DURATION_BUCKETS, READ_SIZE, SIZE_BUCKETS};

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
fn rescans(path: &Path) -> u64 {
    let tally = IoTally::new(BufferSize::Bytes(8192));
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
    // Telemetry off: the binary without --metrics-*; no handles at all.
    g.bench_function("no recorder", |b| b.iter(|| rescans(&path)));
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
            g.bench_function(format!("tracing {level}"), |b| b.iter(|| rescans(&path)));
        });
        drop(guard);
    }
    // Metrics on: from here on tallies register handles.
    kbxscope::telemetry::enable();
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &DURATION_BUCKETS)
        .unwrap()
        .set_buckets_for_metric(Matcher::Full(READ_SIZE.into()), &SIZE_BUCKETS)
        .unwrap()
        .build_recorder();
    let handle = recorder.handle();
    // What the library does without the sink thread: every flush recorded
    // on the scanning thread.
    g.bench_function("prometheus recorder, inline", |b| {
        b.iter(|| {
            let n = metrics::with_local_recorder(&recorder, || rescans(&path));
            handle.run_upkeep();
            n
        })
    });
    // What the binary does: flushes recorded on the sink thread. The timed
    // iteration waits for the sink and drains the exporter's samples into
    // its buckets, so nothing is left for later.
    kbxscope::telemetry::sink::start().unwrap();
    g.bench_function("prometheus recorder", |b| {
        b.iter(|| {
            let n = metrics::with_local_recorder(&recorder, || rescans(&path));
            kbxscope::telemetry::sink::drain();
            handle.run_upkeep();
            n
        })
    });
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
