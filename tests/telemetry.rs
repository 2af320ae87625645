//! The Prometheus exporter: `--metrics-out`, `--metrics-listen`, `--linger`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::common::{bin, fixture, run, stderr, tool};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn metrics_out_is_a_valid_exposition() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("kbx.prom");
    let o = run([
        "--metrics-out",
        prom.to_str().unwrap(),
        "--kbx-buffer-size",
        "16",
        "list",
        "--with-validation",
        "--at",
        "2026-12-01",
        "--trustlist",
        fixture("gnupg-deleted.trustlist.txt").to_str().unwrap(),
        fixture("gnupg-deleted.kbx").to_str().unwrap(),
    ]);
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
    if let Some(promtool) = tool("promtool", "metrics_out_is_a_valid_exposition") {
        let mut child = std::process::Command::new(promtool)
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

fn scrape(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
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
        if let Some(b) = scrape(port).filter(|b| b.contains("kbx_command_duration_seconds_count")) {
            body = Some(b);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let body = body.expect("metrics served within 15 s");
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(body.contains("kbx_file_events_total{op=\"read\",buffer_size=\"65536\"} 11"), "{body}");
}

crate::tests![
    metrics_out_is_a_valid_exposition needs ["promtool"],
    a_port_in_use_fails_before_any_work,
    metrics_listen_serves_the_final_values_while_lingering,
];
