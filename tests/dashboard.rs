//! `dashboards/kbxscope.json`: structure, and every query evaluated by a real
//! Prometheus scraping a real kbxscope run.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, fixture, free_port, samples, Killed};

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("dashboards/kbxscope.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).expect("the dashboard is JSON")
}

fn exprs(d: &Value) -> Vec<String> {
    d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter().map(|t| t["expr"].as_str().unwrap().to_string()))
        .collect()
}

/// Metric names an expression uses (identifiers starting with `kbx_`),
/// with histogram suffixes removed.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while let Some(pos) = expr[i..].find("kbx_") {
        let start = i + pos;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        let mut name = &expr[start..end];
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(n) = name.strip_suffix(suffix) {
                name = n;
            }
        }
        out.insert(name.to_string());
        i = end;
    }
    out
}

fn dashboard_structure() {
    let d = dashboard();
    assert!(d["schemaVersion"].as_u64().unwrap() >= 36);
    assert!(d["uid"].is_string());
    let vars = d["templating"]["list"].as_array().unwrap();
    assert!(vars.iter().any(|v| v["type"] == "datasource" && v["name"] == "datasource" && v["query"] == "prometheus"));
    for name in ["job", "instance"] {
        assert!(vars.iter().any(|v| v["name"] == name && v["type"] == "query"), "no ${name} variable");
    }
    let text = serde_json::to_string(&d).unwrap();
    assert!(!text.contains("\"uid\":\"P"), "no hard-coded datasource uid");
    let panels = d["panels"].as_array().unwrap();
    let ids: BTreeSet<u64> = panels.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), panels.len(), "unique panel ids");
    for p in panels {
        let g = &p["gridPos"];
        assert!(g["x"].as_u64().unwrap() + g["w"].as_u64().unwrap() <= 24, "{}", p["title"]);
        assert_eq!(p["datasource"]["uid"], "${datasource}");
        for t in p["targets"].as_array().unwrap() {
            assert!(t["refId"].is_string() && t["expr"].is_string());
        }
    }
    let exported = [
        kbxscope::telemetry::FILE_EVENTS,
        kbxscope::telemetry::FILE_EVENT_DURATION,
        kbxscope::telemetry::FILE_READ_BYTES,
        kbxscope::telemetry::FILE_WRITTEN_BYTES,
        kbxscope::telemetry::LOCK_WAITS,
        kbxscope::telemetry::LOCK_WAIT_SECONDS,
        kbxscope::telemetry::LOGICAL_READS,
        kbxscope::telemetry::READ_SIZE,
        kbxscope::telemetry::BLOBS_READ,
        kbxscope::telemetry::KEYBOX_SCANS,
        kbxscope::telemetry::CERTIFICATES_VALIDATED,
        kbxscope::telemetry::COMMAND_DURATION,
        kbxscope::telemetry::BUILD_INFO,
    ];
    for e in exprs(&d) {
        let uses = e.matches("kbx_").count();
        assert_eq!(e.matches("{job=~\"$job\",instance=~\"$instance\"").count(), uses, "one process only: {e}");
        let names = metric_names(&e);
        assert!(!names.is_empty(), "{e}");
        for n in names {
            assert!(exported.contains(&n.as_str()), "{e}: {n} is not a metric kbxscope exports");
        }
    }
}

/// GET a path from 127.0.0.1:port; the body, if any.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split_once("\r\n\r\n").map(|(_, body)| body.to_string())
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A panel title, the labels of the series to check, the expected value.
type Expected<'a> = (&'a str, Vec<(&'a str, &'a str)>, f64);

/// A panel's query as a total: `rate(X[$__rate_interval])` becomes `X`, so
/// a finished one-shot run has one exact value to compare.
fn total_form(expr: &str) -> String {
    let mut out = expr.to_string();
    while let Some(start) = out.find("rate(") {
        let end = out[start..].find("[$__rate_interval])").map(|e| start + e).unwrap();
        out = format!("{}{}{}", &out[..start], &out[start + 5..end], &out[end + "[$__rate_interval])".len()..]);
    }
    out
}

/// The dashboard's queries, evaluated by a real Prometheus scraping a real
/// kbxscope run, each compared with a value worked out from kbxscope's own
/// exposition (scraped directly): events per scan of the size that ran,
/// cumulative read sizes, the mean command time, and every panel's series
/// as totals. `$job` and `$instance` pick the one process.
fn every_dashboard_query_returns_data_from_a_real_prometheus() {
    let dir = tempfile::tempdir().unwrap();
    // A sweep over two sizes: each size's events per scan must be its own.
    let kbx = dir.path().join("k.kbx");
    std::fs::copy(fixture("gnupg-deleted.kbx"), &kbx).unwrap();
    std::fs::copy(fixture("gnupg-deleted.trustlist.txt"), dir.path().join("k.kbx.trustlist.txt")).unwrap();
    let (kbx_port, prom_port) = (free_port(), free_port());
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: kbxscope\n    static_configs:\n      - targets: ['127.0.0.1:{kbx_port}']\n"),
    )
    .unwrap();
    let _prom = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut kbx = Killed(
        bin()
            .args([
                &format!("--metrics-listen=127.0.0.1:{kbx_port}"),
                "--linger",
                "120s",
                "sweep",
                kbx.to_str().unwrap(),
                "--sizes",
                "0,16",
                "--runs",
                "1",
                "--warmup",
                "0",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // The run is over when kbxscope says it lingers.
    {
        use std::io::BufRead;
        let err = std::io::BufReader::new(kbx.0.stderr.take().unwrap());
        let lingering = err.lines().map_while(Result::ok).any(|l| l.contains("more (Ctrl-C ends it)"));
        assert!(lingering, "kbxscope ended before lingering");
    }
    let direct = samples(&http_get(kbx_port, "/metrics").expect("kbxscope's /metrics"));
    let d = |k: &str| direct.get(k).copied().unwrap_or_else(|| panic!("no {k} in kbxscope's exposition"));
    let per_scan = |size: &str| {
        // Every operation: the reads' and those of GnuPG's start beside
        // the keybox (access, write, link, unlink).
        let events: f64 = direct
            .iter()
            .filter(|(k, _)| k.starts_with("kbx_file_events_total{") && k.contains(&format!("buffer_size=\"{size}\"")))
            .map(|(_, v)| v)
            .sum();
        let scans: f64 = direct
            .iter()
            .filter(|(k, _)| k.starts_with("kbx_keybox_scans_total{") && k.contains(&format!("buffer_size=\"{size}\"")))
            .map(|(_, v)| v)
            .sum();
        assert!(scans > 0.0 && events / scans > 1.0, "{events} events, {scans} scans at {size}");
        events / scans
    };
    let size = "buffer_size=\"16384\"";
    let reads = d(&format!("kbx_file_events_total{{op=\"read\",{size}}}"));
    let all_reads = reads + d("kbx_file_events_total{op=\"read\",buffer_size=\"8192\"}");
    let command = "command=\"sweep\",buffer_size=\"sweep\"";
    // (panel title, labels of the series to check, expected value)
    let expected: Vec<Expected> = vec![
        ("File events per second by operation", vec![("op", "read")], all_reads),
        ("File events per keybox scan, by buffer size", vec![("buffer_size", "16384")], per_scan("16384")),
        ("File events per keybox scan, by buffer size", vec![("buffer_size", "8192")], per_scan("8192")),
        ("Bytes read per second", vec![("buffer_size", "16384")], d(&format!("kbx_file_read_bytes_total{{{size}}}"))),
        (
            "Logical reads vs read(2) calls",
            vec![("buffer_size", "16384")],
            d(&format!("kbx_logical_reads_total{{{size}}}")),
        ),
        ("Blobs read per second by type", vec![("type", "x509")], d("kbx_blobs_read_total{type=\"x509\"}")),
        ("Certificates validated", vec![("result", "good")], d("kbx_certificates_validated_total{result=\"good\"}")),
        ("read(2) calls returning at most N bytes (cumulative)", vec![("le", "+Inf")], all_reads),
        (
            "Command wall time",
            vec![("command", "sweep")],
            d(&format!("kbx_command_duration_seconds_sum{{{command}}}"))
                / d(&format!("kbx_command_duration_seconds_count{{{command}}}")),
        ),
        (
            "Writes by operation (keybox copies, keyboxd's database and journal)",
            vec![("op", "write")],
            d("kbx_file_events_total{op=\"write\",buffer_size=\"8192\"}")
                + d(&format!("kbx_file_events_total{{op=\"write\",{size}}}")),
        ),
        // No other process held the lock: zero waits, zero seconds.
        ("Lock waits and time waited", vec![("buffer_size", "16384")], d(&format!("kbx_lock_waits_total{{{size}}}"))),
        (
            "Keybox scans by lookup strategy",
            vec![("lookup", "gnupg")],
            d("kbx_keybox_scans_total{lookup=\"gnupg\",buffer_size=\"8192\"}")
                + d(&format!("kbx_keybox_scans_total{{lookup=\"gnupg\",{size}}}")),
        ),
    ];
    let dash = dashboard();
    let instance = format!("127.0.0.1:{kbx_port}");
    let query = |expr: &str| -> Option<Vec<Value>> {
        let q = total_form(expr).replace("$job", "kbxscope").replace("$instance", &instance);
        let body = http_get(prom_port, &format!("/api/v1/query?query={}", urlencode(&q)))?;
        let v: Value = serde_json::from_str(&body).ok()?;
        assert_ne!(v["status"], "error", "Prometheus rejects {q}: {v}");
        v["data"]["result"].as_array().filter(|r| !r.is_empty()).cloned()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    for panel in dash["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap();
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let wants: Vec<(&[(&str, &str)], f64)> = expected
                .iter()
                .filter(|(t, _, _)| *t == title)
                .map(|(_, labels, want)| {
                    // the second query of the logical-reads panel counts read(2) calls
                    let w = if expr.contains("op=\"read\"") && title.starts_with("Logical") { reads } else { *want };
                    (labels.as_slice(), w)
                })
                .collect();
            let series = |r: &[Value], labels: &[(&str, &str)]| -> Option<f64> {
                let s = r.iter().find(|s| labels.iter().all(|(k, v)| s["metric"][*k] == *v))?;
                s["value"][1].as_str()?.parse().ok()
            };
            let close = |got: f64, want: f64| (got - want).abs() <= 1e-9 * want.abs();
            // Prometheus scrapes every second: wait for the final values.
            let result = loop {
                let r = query(expr);
                let settled = r
                    .as_ref()
                    .is_some_and(|r| wants.iter().all(|(labels, w)| series(r, labels).is_some_and(|v| close(v, *w))));
                if settled || Instant::now() > deadline {
                    break r;
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            let result = result.unwrap_or_else(|| panic!("{title}: no data for {expr}"));
            for (labels, w) in &wants {
                let got = series(&result, labels).unwrap_or_else(|| panic!("{title}: no {labels:?} in {result:?}"));
                assert!(close(got, *w), "{title}: {got} instead of {w} for {expr}");
            }
            match wants.first() {
                Some(_) => {}
                None => {
                    // the latency quantiles: within the bucket range, p50 <= p99
                    assert!(title.starts_with("read(2) latency"), "{title} has no expected value");
                    let v: f64 = result[0]["value"][1].as_str().unwrap().parse().unwrap();
                    assert!(v > 0.0 && v <= 1.0, "{title}: {v}");
                }
            }
        }
    }
}

crate::tests![
    dashboard_structure,
    every_dashboard_query_returns_data_from_a_real_prometheus needs ["prometheus"],
];
