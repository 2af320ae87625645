//! The Prometheus exporter: `--metrics-out`, `--metrics-listen`, `--linger`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::common::{bin, fixture, free_port, run, samples, stderr, validation_args, Killed, AT};

fn metrics_out_is_a_valid_exposition() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("kbx.prom");
    let (kbx, trust) = (fixture("gnupg-deleted.kbx"), fixture("gnupg-deleted.trustlist.txt"));
    let mut args = vec!["--metrics-out", prom.to_str().unwrap(), "--kbx-buffer-size", "16"];
    args.extend(validation_args(&["--at", AT], &kbx, &trust));
    let o = run(args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&prom).unwrap();
    for line in [
        "# TYPE kbx_file_events_total counter",
        "# TYPE kbx_file_event_duration_seconds histogram",
        "# TYPE kbx_read_size_bytes histogram",
        "# TYPE kbx_command_duration_seconds histogram",
        "kbx_certificates_validated_total{result=\"good\"} 38",
        "kbx_certificates_validated_total{result=\"bad\"} 1",
        "kbx_build_info{version=\"",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert!(text.contains("kbx_file_event_duration_seconds_bucket{op=\"read\",buffer_size=\"16384\",le=\"0.000001\"}"));
    assert!(!text.contains("quantile="), "histograms, never summaries");
    for name in text.lines().filter(|l| l.starts_with("# TYPE")).map(|l| l.split(' ').nth(2).unwrap()) {
        assert!(text.contains(&format!("# HELP {name} ")), "{name} is not described");
    }
    let names: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
    assert_eq!(names.len(), names.iter().collect::<std::collections::BTreeSet<_>>().len(), "one TYPE per family");
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "no lint warnings");
}

fn a_port_in_use_fails_before_any_work() {
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap();
    let o = run([
        format!("--metrics-listen={addr}"),
        "--io-summary=json".into(),
        "stats".into(),
        fixture("gnupg-mixed.kbx").to_str().unwrap().into(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&format!("cannot serve metrics on {addr}")), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "no work was done");
    assert!(!stderr(&o).contains("buffer_size"), "no keybox was opened");
}

fn metrics_listen_serves_the_final_values_while_lingering() {
    let port = free_port();
    let mut child = bin()
        .args([
            &format!("--metrics-listen=127.0.0.1:{port}"),
            "--linger",
            "20s",
            "stats",
            fixture("gnupg-mixed.kbx").to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut body = None;
    while start.elapsed() < Duration::from_secs(15) {
        if let Some(b) = http_get(port, "/metrics").filter(|b| b.contains("kbx_command_duration_seconds_count")) {
            body = Some(b);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let body = body.expect("metrics served within 15 s");
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    // GnuPG's default buffer: 64 KiB, 128 KiB on Windows.
    let (size, reads) = if cfg!(windows) { (131_072, 6) } else { (65_536, 11) };
    assert!(body.contains(&format!("kbx_file_events_total{{op=\"read\",buffer_size=\"{size}\"}} {reads}")), "{body}");
}

/// One scrape's file-event families agree with themselves: for every op
/// and size, the duration histogram's `_count` and `+Inf` bucket equal the
/// counter and its buckets never fall; the read-size histogram counts
/// every read. Returns the total events seen.
fn check_consistent(text: &str) -> u64 {
    let s = samples(text);
    let mut total = 0;
    for (series, events) in s.iter().filter(|(k, _)| k.starts_with("kbx_file_events_total{")) {
        let labels = &series["kbx_file_events_total{".len()..series.len() - 1];
        let get = |name: &str| s.get(name).copied().unwrap_or_else(|| panic!("no {name} in\n{text}"));
        let count = get(&format!("kbx_file_event_duration_seconds_count{{{labels}}}"));
        let inf = get(&format!("kbx_file_event_duration_seconds_bucket{{{labels},le=\"+Inf\"}}"));
        assert_eq!((count, inf), (*events, *events), "{labels}: _count and +Inf against the counter in\n{text}");
        let buckets: Vec<f64> = s
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("kbx_file_event_duration_seconds_bucket{{{labels},")))
            .map(|(_, v)| *v)
            .collect();
        assert!(buckets.iter().all(|v| *v <= inf), "{labels}: a bucket above +Inf");
        if labels.starts_with("op=\"read\"") {
            let size = labels.trim_start_matches("op=\"read\",");
            assert_eq!(get(&format!("kbx_read_size_bytes_count{{{size}}}")), *events, "read sizes at {size}");
            assert_eq!(
                get(&format!("kbx_read_size_bytes_sum{{{size}}}")),
                get(&format!("kbx_file_read_bytes_total{{{size}}}")),
                "bytes at {size}"
            );
        }
        total += *events as u64;
    }
    total
}

/// Issue #14's lost samples: sweeps over several sizes, scraped without
/// pause while they run. Every scrape is consistent (`_count` equals the
/// counter for every op and size), some scrapes land mid-run, and the last
/// one equals the sweep's own rows exactly. Three sweeps, every time.
fn no_sample_is_lost_under_concurrent_scrapes() {
    use std::io::BufRead;
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("sweep.json");
        let (warmup, runs) = (1u64, 2u64);
        let mut child = bin()
            .args([
                "--metrics-listen=127.0.0.1:0",
                "--linger",
                "60s",
                "sweep",
                fixture("gnupg-mixed.kbx").to_str().unwrap(),
                "--sizes",
                "unbuffered,1k,0,64",
                "--warmup",
                &warmup.to_string(),
                "--runs",
                &runs.to_string(),
                "--export-json",
                json.to_str().unwrap(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let err = std::io::BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // The real port, printed at start.
        let port: u16 = loop {
            let line = rx.recv_timeout(Duration::from_secs(30)).expect("a start line");
            if let Some(rest) = line.strip_prefix("kbxscope: serving metrics on http://127.0.0.1:") {
                break rest.trim_end_matches("/metrics").parse().unwrap();
            }
        };
        let (mut scrapes, mut mid_run) = (0u32, std::collections::BTreeSet::new());
        let last = loop {
            let lingering = rx.try_iter().any(|l| l.contains(" more (Ctrl-C ends it)"));
            let body = http_get(port, "/metrics").expect("a scrape");
            let (head, text) = body.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            assert!(head.contains("text/plain; version=0.0.4"), "{head}");
            let total = check_consistent(text);
            scrapes += 1;
            if lingering {
                break text.to_string();
            }
            mid_run.insert(total);
        };
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(mid_run.len() >= 3, "round {round}: {scrapes} scrapes saw only {mid_run:?} mid-run");
        let s = samples(&last);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        for row in v["results"].as_array().unwrap() {
            let size = row["buffer_size"].as_u64().unwrap();
            for op in ["open", "read", "seek", "close", "stat"] {
                let want = row["events"][op].as_u64().unwrap() * (warmup + runs);
                let series = format!("kbx_file_events_total{{op=\"{op}\",buffer_size=\"{size}\"}}");
                assert_eq!(s.get(&series).copied(), Some(want as f64), "round {round}: {series}");
            }
        }
    }
}

fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

/// `--metrics-push` against a real Pushgateway (Debian's
/// `prometheus-pushgateway`, started here on loopback): the pushed
/// counters and the batch-job gauges are what the gateway then serves; a
/// gateway that is not there is a one-line error and exit 1.
fn metrics_push_reaches_a_real_pushgateway() {
    let port = free_port();
    let _gw = Killed(
        std::process::Command::new("prometheus-pushgateway")
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    while !http_get(port, "/-/ready").is_some_and(|b| b.starts_with("HTTP/1.1 200")) {
        assert!(start.elapsed() < Duration::from_secs(60), "the Pushgateway did not start within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}");
    let o = run(["--metrics-push", &url, "stats", fixture("gnupg-mixed.kbx").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let served = http_get(port, "/metrics").unwrap();
    let value = |name: &str, labels: &[&str]| -> f64 {
        let line = served
            .lines()
            .find(|l| {
                l.starts_with(&format!("{name}{{"))
                    && l.contains("job=\"kbxscope\"")
                    && labels.iter().all(|x| l.contains(x))
            })
            .unwrap_or_else(|| panic!("no {name} {labels:?} in\n{served}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(value("kbx_file_events_total", &["op=\"read\"", "buffer_size=\"65536\""]), 11.0);
    assert_eq!(value("kbx_file_event_duration_seconds_count", &["op=\"read\"", "buffer_size=\"65536\""]), 11.0);
    assert_eq!(value("kbx_blobs_read_total", &["type=\"x509\""]), 24.0);
    assert_eq!(value("kbx_last_run_success", &[]), 1.0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let ended = value("kbx_last_run_timestamp_seconds", &[]);
    assert!(ended <= now && ended > now - 3600.0, "{ended} vs {now}");
    // A failing command is pushed too, as a failure.
    let o = run(["--metrics-push", &url, "stats", "/nonexistent/k.kbx"]);
    assert_eq!(o.status.code(), Some(1));
    let served = http_get(port, "/metrics").unwrap();
    assert!(served.lines().any(|l| l.starts_with("kbx_last_run_success{") && l.ends_with(" 0")), "{served}");
    // Nobody listening: one line, exit 1.
    let o = run([
        "--metrics-push",
        &format!("http://127.0.0.1:{}", free_port()),
        "stats",
        fixture("gnupg-mixed.kbx").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("cannot push metrics to http://127.0.0.1:"), "{err}");
    assert_eq!(err.lines().filter(|l| l.contains("push")).count(), 1, "{err}");
}

/// `--metrics-out` for cron: the batch-job gauges say when and how the
/// last run ended.
fn metrics_out_has_the_batch_job_gauges() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("kbx.prom");
    let o = run([
        "--metrics-out",
        prom.to_str().unwrap(),
        "find",
        fixture("gnupg-mixed.kbx").to_str().unwrap(),
        "nobody@nowhere.invalid",
    ]);
    assert_eq!(o.status.code(), Some(1), "no match: exit 1");
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(text.lines().any(|l| l == "kbx_last_run_success 0"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("kbx_last_run_timestamp_seconds 1")), "{text}");
    assert!(text.contains("kbx_certificates_validated_total{result=\"good\"} 0"), "zeroed at start:\n{text}");
}

/// `/metrics` only, with the text format's content type; the real port of
/// `:0` is printed.
fn the_listener_answers_metrics_only_and_prints_its_port() {
    use std::io::BufRead;
    let mut child = bin()
        .args([
            "--metrics-listen=127.0.0.1:0",
            "--linger",
            "60s",
            "stats",
            fixture("gnupg-mixed.kbx").to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let mut child = Killed(child);
    let port: u16 = line
        .trim()
        .strip_prefix("kbxscope: serving metrics on http://127.0.0.1:")
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .unwrap();
    assert_ne!(port, 0);
    let ok = http_get(port, "/metrics").unwrap();
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(ok.to_lowercase().contains("content-type: text/plain; version=0.0.4"), "{ok}");
    assert!(http_get(port, "/").unwrap().starts_with("HTTP/1.1 404"));
    assert!(http_get(port, "/metricsx").unwrap().starts_with("HTTP/1.1 404"));
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    assert!(body.starts_with("HTTP/1.1 405"), "{body}");
    let _ = child.0.kill();
}

crate::tests![
    metrics_out_is_a_valid_exposition needs ["promtool"],
    a_port_in_use_fails_before_any_work,
    metrics_listen_serves_the_final_values_while_lingering,
    no_sample_is_lost_under_concurrent_scrapes,
    metrics_push_reaches_a_real_pushgateway needs ["prometheus-pushgateway"],
    metrics_out_has_the_batch_job_gauges,
    the_listener_answers_metrics_only_and_prints_its_port,
];
