//! `dashboards/kbxscope.json`: structure, and every query evaluated by a real
//! Prometheus scraping a real kbxscope run.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, fixture, tool};

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
        kbxscope::telemetry::LOGICAL_READS,
        kbxscope::telemetry::READ_SIZE,
        kbxscope::telemetry::BLOBS_READ,
        kbxscope::telemetry::KEYBOX_SCANS,
        kbxscope::telemetry::CERTIFICATES_VALIDATED,
        kbxscope::telemetry::COMMAND_DURATION,
        kbxscope::telemetry::BUILD_INFO,
    ];
    for e in exprs(&d) {
        let names = metric_names(&e);
        assert!(!names.is_empty(), "{e}");
        for n in names {
            assert!(exported.contains(&n.as_str()), "{e}: {n} is not a metric kbxscope exports");
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
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

/// Kills a child process when dropped (the test must not leave servers behind).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn every_dashboard_query_returns_data_from_a_real_prometheus() {
    let Some(prometheus) = tool("prometheus", "every_dashboard_query_returns_data_from_a_real_prometheus") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (kbx_port, prom_port) = (free_port(), free_port());
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: kbxscope\n    static_configs:\n      - targets: ['127.0.0.1:{kbx_port}']\n"),
    )
    .unwrap();
    let _prom = Killed(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let _kbx = Killed(
        bin()
            .args([
                &format!("--metrics-listen=127.0.0.1:{kbx_port}"),
                "--linger",
                "60s",
                "--kbx-buffer-size",
                "16",
                "list",
                "--with-validation",
                "--trustlist",
                fixture("gnupg-deleted.trustlist.txt").to_str().unwrap(),
                fixture("gnupg-deleted.kbx").to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let queries: Vec<String> = exprs(&dashboard())
        .into_iter()
        .map(|e| e.replace("$__rate_interval", "10s").replace("$__interval", "2s").replace("$__range", "5m"))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(45);
    let mut missing = queries.clone();
    while !missing.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1000));
        missing.retain(|q| {
            let body = http_get(prom_port, &format!("/api/v1/query?query={}", urlencode(q)));
            let v: Option<Value> = body.and_then(|b| serde_json::from_str(&b).ok());
            let ok = v.as_ref().is_some_and(|v| {
                v["status"] == "success" && v["data"]["result"].as_array().is_some_and(|r| !r.is_empty())
            });
            if let Some(v) = &v {
                assert_ne!(v["status"], "error", "Prometheus rejects {q}: {v}");
            }
            !ok
        });
    }
    assert!(missing.is_empty(), "queries without data after 45 s: {missing:#?}");
}

crate::tests![
    dashboard_structure,
    every_dashboard_query_returns_data_from_a_real_prometheus needs ["prometheus"],
];
