//! `dashboards/kbxscope.rules.yml`: checked by `promtool check rules`, then
//! exercised by `promtool test rules` on the values of real kbxscope runs
//! (one that succeeds, one that fails), so the recorded ratios and the
//! alerts are computed by Prometheus's own rule engine from what kbxscope
//! exports.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use crate::common::{fixture, run, samples, stderr};

fn rules_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dashboards/kbxscope.rules.yml")
}

/// The exposition a `--metrics-out` run wrote, and whether it succeeded.
fn metrics_of(dir: &Path, name: &str, args: &[&str]) -> (bool, std::collections::BTreeMap<String, f64>) {
    let prom = dir.join(format!("{name}.prom"));
    let mut all = vec!["--metrics-out", prom.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = run(&all);
    let text = std::fs::read_to_string(&prom).unwrap_or_else(|e| panic!("{name}: no exposition ({e}): {}", stderr(&o)));
    (o.status.success(), samples(&text))
}

/// `name{a="b"}` with `job` and `instance` added, as a scrape adds them.
fn scraped(series: &str, instance: &str) -> String {
    let extra = format!("job=\"kbxscope\",instance=\"{instance}\"");
    match series.strip_suffix('}') {
        Some(head) => format!("{head},{extra}}}"),
        None => format!("{series}{{{extra}}}"),
    }
}

fn promtool(args: &[&str]) -> String {
    let o = Command::new("promtool").args(args).output().expect("promtool runs");
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "promtool {args:?}:\n{text}");
    text
}

fn rules_hold_on_real_runs() {
    assert!(promtool(&["check", "rules", rules_file().to_str().unwrap()]).contains("SUCCESS: 6 rules found"));

    let dir = tempfile::tempdir().unwrap();
    let keybox = fixture("gnupg-mixed.kbx");
    let (ok, good) = metrics_of(dir.path(), "good", &["--kbx-buffer-size", "8", "stats", keybox.to_str().unwrap()]);
    assert!(ok, "the stats run succeeds");
    let missing = dir.path().join("missing.kbx");
    let (ok, bad) = metrics_of(dir.path(), "bad", &["stats", missing.to_str().unwrap()]);
    assert!(!ok, "the run on a missing keybox fails");
    assert_eq!(bad["kbx_last_run_success"], 0.0);
    assert_eq!(good["kbx_last_run_success"], 1.0);

    // The ratios the recording rules must produce, from kbxscope's numbers.
    let size = "buffer_size=\"8192\"";
    let events: f64 =
        good.iter().filter(|(k, _)| k.starts_with("kbx_file_events_total{") && k.contains(size)).map(|(_, v)| v).sum();
    let scans: f64 =
        good.iter().filter(|(k, _)| k.starts_with("kbx_keybox_scans_total{") && k.contains(size)).map(|(_, v)| v).sum();
    let reads = good[&format!("kbx_file_events_total{{op=\"read\",{size}}}")];
    let bytes = good[&format!("kbx_file_read_bytes_total{{{size}}}")];
    assert!(scans >= 1.0 && reads >= 1.0, "{good:?}");

    // Both runs as a scrape would store them, constant for 30 hours; the
    // runs are taken to have ended at time 0 of the test.
    let mut series = String::new();
    for (instance, values) in [("good", &good), ("bad", &bad)] {
        for (k, v) in values.iter().filter(|(k, _)| !k.contains("_bucket{") && !k.starts_with("kbx_command_duration")) {
            let v = if k == "kbx_last_run_timestamp_seconds" { 0.0 } else { *v };
            let _ = writeln!(series, "      - series: '{}'\n        values: '{v}+0x1800'", scraped(k, instance));
        }
    }
    let labels = |instance: &str| format!("job: kbxscope\n              instance: {instance}");
    let test = format!(
        r#"rule_files:
  - {rules}
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
{series}
    promql_expr_test:
      - expr: job_instance_buffer_size:kbx_file_events_per_scan:ratio{{instance="good"}}
        eval_time: 5m
        exp_samples:
          - labels: 'job_instance_buffer_size:kbx_file_events_per_scan:ratio{{job="kbxscope",instance="good",buffer_size="8192"}}'
            value: {per_scan:e}
      - expr: job_instance_buffer_size:kbx_read_bytes_per_read:ratio{{instance="good"}}
        eval_time: 5m
        exp_samples:
          - labels: 'job_instance_buffer_size:kbx_read_bytes_per_read:ratio{{job="kbxscope",instance="good",buffer_size="8192"}}'
            value: {per_read:e}
    alert_rule_test:
      - alertname: KbxscopeLastRunFailed
        eval_time: 10m
        exp_alerts:
          - exp_labels:
              severity: warning
              {bad_labels}
            exp_annotations:
              summary: "kbxscope's last run on bad failed"
              description: "kbx_last_run_success is 0 for job kbxscope: run the command by hand to see its one-line error."
      - alertname: KbxscopeNotRunRecently
        eval_time: 25h
        exp_alerts: []
      - alertname: KbxscopeNotRunRecently
        eval_time: 27h
        exp_alerts:
          - exp_labels:
              severity: warning
              {bad_labels}
            exp_annotations:
              summary: "kbxscope has not finished a run on bad for over 26 hours"
              description: "The last run of job kbxscope ended 1d 3h 0m 0s ago."
          - exp_labels:
              severity: warning
              {good_labels}
            exp_annotations:
              summary: "kbxscope has not finished a run on good for over 26 hours"
              description: "The last run of job kbxscope ended 1d 3h 0m 0s ago."
"#,
        rules = rules_file().display(),
        per_scan = events / scans,
        per_read = bytes / reads,
        bad_labels = labels("bad"),
        good_labels = labels("good"),
    );
    let path = dir.path().join("rules_test.yml");
    std::fs::write(&path, test).unwrap();
    let out = promtool(&["test", "rules", path.to_str().unwrap()]);
    assert!(out.contains("SUCCESS"), "{out}");
}

crate::tests![rules_hold_on_real_runs needs ["promtool"]];
