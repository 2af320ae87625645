//! Sweep results as JSON, CSV and Markdown: pure functions from results to
//! bytes (the caller decides where they go).

use std::fmt::Write as _;

use super::{SizeResult, Sweep};

/// The sweep as pretty JSON: [`Sweep`]'s serde form, nothing added.
pub fn json(sweep: &Sweep) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(sweep).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The CSV header.
pub const CSV_HEADER: &str = "n_k,buffer_size,events_total,open,read,seek,close,stat,bytes_read,logical_reads,wall_median_s,wall_min_s,wall_max_s,wall_mean_s,wall_stddev_s,user_median_s,sys_median_s,mean_read_ns,seed_events,seed_time_s,gnupg_tool,gnupg_events,gnupg_time_s";

/// `a,b` for a present pair, `,` for an absent one.
fn pair(p: Option<(u64, f64)>, time_digits: usize) -> String {
    p.map_or_else(|| ",".to_string(), |(e, t)| format!("{e},{t:.time_digits$}"))
}

/// One flat row per buffer size (`n_k` is the size as given).
pub fn csv(results: &[SizeResult]) -> Vec<u8> {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in results {
        let e = &r.events;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.1},{},{},{}",
            r.label,
            r.buffer_size,
            e.total(),
            e.open,
            e.read,
            e.seek,
            e.close,
            e.stat,
            r.bytes_read,
            r.logical_reads,
            r.wall_s.median,
            r.wall_s.min,
            r.wall_s.max,
            r.wall_s.mean,
            r.wall_s.stddev,
            r.user_s.median,
            r.sys_s.median,
            r.mean_read_ns,
            pair(r.seed.map(|x| (x.events, x.time_s)), 0),
            r.gnupg.map_or("", |x| x.tool),
            pair(r.gnupg.map(|x| (x.events, x.time_s)), 6),
        );
    }
    s.into_bytes()
}

/// A Markdown table: every column of `sweep --wide`; the seed's own
/// numbers and GnuPG's (gpgsm's or gpg's) when the results carry them.
/// Times in seconds.
pub fn markdown(results: &[SizeResult]) -> Vec<u8> {
    let seed = results.iter().any(|r| r.seed.is_some());
    let gnupg = results.iter().find_map(|r| r.gnupg).map(|g| g.tool);
    let mut s = String::from(
        "| buffer | file events | time (s), mean ± σ | reads | opens | seeks | bytes read | logical reads | user (s) | sys (s) | mean read (µs) |",
    );
    let mut rule = String::from("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    if seed {
        s += " seed's events | ratio | seed's time (s) |";
        rule += "--:|--:|--:|";
    }
    if let Some(tool) = gnupg {
        let _ = write!(s, " {tool} events | {tool} time (s) |");
        rule += "--:|--:|";
    }
    let _ = writeln!(s, "\n{rule}");
    for r in results {
        let _ = write!(
            s,
            "| {} | {} | {:.3} ± {:.3} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.2} |",
            r.buffer(),
            r.events.total(),
            r.wall_s.mean,
            r.wall_s.stddev,
            r.events.read,
            r.events.open,
            r.events.seek,
            r.bytes_read,
            r.logical_reads,
            r.user_s.median,
            r.sys_s.median,
            r.mean_read_ns / 1000.0
        );
        if seed {
            let _ = match r.seed {
                Some(x) => {
                    write!(s, " {} | {:.3} | {:.0} |", x.events, r.events.total() as f64 / x.events as f64, x.time_s)
                }
                None => write!(s, " – | – | – |"),
            };
        }
        if gnupg.is_some() {
            let _ = match r.gnupg {
                Some(x) => write!(s, " {} | {:.3} |", x.events, x.time_s),
                None => write!(s, " – | – |"),
            };
        }
        s.push('\n');
    }
    s.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::PerOp;
    use crate::sweep::{GnupgRow, SeedRow, Times, Workload};

    /// Two sizes with every kind of column filled or missing.
    pub(crate) fn fixed() -> Vec<SizeResult> {
        vec![
            SizeResult {
                label: "0".into(),
                buffer_size: 8192,
                events: PerOp { open: 3, read: 1000, seek: 2, close: 3, stat: 3 },
                bytes_read: 8_000_000,
                logical_reads: 4000,
                wall_s: Times::new(vec![1.5, 1.0, 2.0]),
                user_s: Times::new(vec![0.5, 0.4, 0.6]),
                sys_s: Times::new(vec![0.25, 0.25, 0.25]),
                mean_read_ns: 1234.5,
                seed: Some(SeedRow { events: 1000, time_s: 86.0 }),
                gnupg: Some(GnupgRow { tool: "gpgsm", events: 1012, time_s: 2.25 }),
                keybox_changed: Vec::new(),
            },
            SizeResult {
                label: "64".into(),
                buffer_size: 65536,
                events: PerOp { open: 3, read: 130, seek: 2, close: 3, stat: 3 },
                bytes_read: 8_000_000,
                logical_reads: 4000,
                wall_s: Times::new(vec![0.5, 0.7]),
                user_s: Times::new(vec![0.2, 0.2]),
                sys_s: Times::new(vec![0.1, 0.3]),
                mean_read_ns: 5000.0,
                seed: None,
                gnupg: None,
                keybox_changed: Vec::new(),
            },
        ]
    }

    #[test]
    fn csv_snapshot_and_parse_back() {
        let text = String::from_utf8(csv(&fixed())).unwrap();
        insta::assert_snapshot!(text);
        let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split(',').collect()).collect();
        let col = |name: &str| CSV_HEADER.split(',').position(|c| c == name).unwrap();
        for (row, r) in rows.iter().zip(fixed()) {
            assert_eq!(row.len(), CSV_HEADER.split(',').count());
            assert_eq!(row[col("events_total")].parse::<u64>().unwrap(), r.events.total());
            assert_eq!(row[col("read")].parse::<u64>().unwrap(), r.events.read);
            assert!((row[col("wall_median_s")].parse::<f64>().unwrap() - r.wall_s.median).abs() < 1e-9);
            assert_eq!(row[col("gnupg_events")].parse::<u64>().ok(), r.gnupg.map(|g| g.events));
            assert_eq!(row[col("gnupg_time_s")].parse::<f64>().ok(), r.gnupg.map(|g| g.time_s));
            assert_eq!(row[col("gnupg_tool")], r.gnupg.map_or("", |g| g.tool));
        }
    }

    #[test]
    fn json_is_the_serde_form_of_the_sweep() {
        let sweep = Sweep {
            keybox: "tiny.kbx".into(),
            workload: Workload::Validate(crate::lookup::Strategy::Gnupg),
            lookup: Some("gnupg"),
            warmup: 1,
            runs: 3,
            results: fixed(),
        };
        let text = String::from_utf8(json(&sweep)).unwrap();
        insta::assert_snapshot!(text);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v, serde_json::to_value(&sweep).unwrap());
        let r = &v["results"][1];
        assert_eq!(r["events"]["total"], 141);
        assert_eq!(r["wall_s"]["median"], 0.6);
        assert_eq!(v["results"][0]["wall_s"]["min"], 1.0);
        assert_eq!(v["workload"], "validate");
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!("markdown_with_seed_and_gpgsm", String::from_utf8(markdown(&fixed())).unwrap());
        let plain: Vec<SizeResult> = fixed().into_iter().map(|r| SizeResult { seed: None, gnupg: None, ..r }).collect();
        insta::assert_snapshot!("markdown_plain", String::from_utf8(markdown(&plain)).unwrap());
    }
}
