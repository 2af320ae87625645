//! Sweep results as JSON, CSV and Markdown: pure functions from results to
//! bytes (the caller decides where they go).

use std::fmt::Write as _;

use super::{median, SizeResult};

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// `{"results": [...]}` with every number of every size.
pub fn json(results: &[SizeResult]) -> Vec<u8> {
    let rows: Vec<serde_json::Value> = results
        .iter()
        .map(|r| {
            serde_json::json!({
                "label": r.label,
                "buffer_size": r.buffer_size,
                "events": r.events,
                "bytes_read": r.bytes_read,
                "logical_reads": r.logical_reads,
                "wall_s": {"median": median(&r.wall_s), "min": min(&r.wall_s), "max": max(&r.wall_s), "runs": r.wall_s},
                "user_s": {"median": median(&r.user_s)},
                "sys_s": {"median": median(&r.sys_s)},
                "mean_read_ns": r.mean_read_ns,
                "seed": r.seed,
                "gpgsm": r.gpgsm,
                "keybox_changed": r.keybox_changed,
            })
        })
        .collect();
    let mut out = serde_json::to_vec_pretty(&serde_json::json!({ "results": rows })).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The CSV header.
pub const CSV_HEADER: &str = "n_k,buffer_size,events_total,open,read,seek,close,stat,bytes_read,logical_reads,wall_median_s,wall_min_s,wall_max_s,user_median_s,sys_median_s,mean_read_ns,seed_events,seed_time_s,gpgsm_events,gpgsm_time_s";

/// `a,b` for a present pair, `,` for an absent one.
fn pair(p: Option<(u64, f64)>, time_digits: usize) -> String {
    p.map_or_else(|| ",".to_string(), |(e, t)| format!("{e},{t:.time_digits$}"))
}

/// One flat row per buffer size.
pub fn csv(results: &[SizeResult]) -> Vec<u8> {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in results {
        let e = &r.events;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.1},{},{}",
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
            median(&r.wall_s),
            min(&r.wall_s),
            max(&r.wall_s),
            median(&r.user_s),
            median(&r.sys_s),
            r.mean_read_ns,
            pair(r.seed.map(|x| (x.events, x.time_s)), 0),
            pair(r.gpgsm.map(|x| (x.events, x.time_s)), 6),
        );
    }
    s.into_bytes()
}

/// A Markdown table with the seed's first columns; the seed's own numbers
/// and gpgsm's when the results carry them.
pub fn markdown(results: &[SizeResult]) -> Vec<u8> {
    let seed = results.iter().any(|r| r.seed.is_some());
    let gpgsm = results.iter().any(|r| r.gpgsm.is_some());
    let mut s = String::from(
        "| N(k) | file events | time (s) | reads | opens | seeks | bytes read | logical reads | user (s) | sys (s) | mean read (µs) |",
    );
    let mut rule = String::from("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    if seed {
        s += " seed's events | ratio | seed's time (s) |";
        rule += "--:|--:|--:|";
    }
    if gpgsm {
        s += " gpgsm events | gpgsm time (s) |";
        rule += "--:|--:|";
    }
    let _ = writeln!(s, "\n{rule}");
    for r in results {
        let _ = write!(
            s,
            "| {} | {} | {:.3} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.2} |",
            r.label,
            r.events.total(),
            median(&r.wall_s),
            r.events.read,
            r.events.open,
            r.events.seek,
            r.bytes_read,
            r.logical_reads,
            median(&r.user_s),
            median(&r.sys_s),
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
        if gpgsm {
            let _ = match r.gpgsm {
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
    use crate::io::PerOp;
    use crate::sweep::{GpgsmRow, SeedRow};

    fn fixed() -> Vec<SizeResult> {
        vec![
            SizeResult {
                label: "0".into(),
                buffer_size: 8192,
                events: PerOp { open: 3, read: 1000, seek: 2, close: 3, stat: 3 },
                bytes_read: 8_000_000,
                logical_reads: 4000,
                wall_s: vec![1.5, 1.0, 2.0],
                user_s: vec![0.5, 0.4, 0.6],
                sys_s: vec![0.25, 0.25, 0.25],
                mean_read_ns: 1234.5,
                seed: Some(SeedRow { events: 1000, time_s: 86.0 }),
                gpgsm: Some(GpgsmRow { events: 1012, time_s: 2.25 }),
                keybox_changed: Vec::new(),
            },
            SizeResult {
                label: "64".into(),
                buffer_size: 65536,
                events: PerOp { open: 3, read: 130, seek: 2, close: 3, stat: 3 },
                bytes_read: 8_000_000,
                logical_reads: 4000,
                wall_s: vec![0.5, 0.7],
                user_s: vec![0.2, 0.2],
                sys_s: vec![0.1, 0.3],
                mean_read_ns: 5000.0,
                seed: None,
                gpgsm: None,
                keybox_changed: Vec::new(),
            },
        ]
    }

    #[test]
    fn csv_snapshot_and_parse_back() {
        let text = String::from_utf8(csv(&fixed())).unwrap();
        assert_eq!(
            text,
            format!(
                "{CSV_HEADER}\n\
                 0,8192,1011,3,1000,2,3,3,8000000,4000,1.500000,1.000000,2.000000,0.500000,0.250000,1234.5,1000,86,1012,2.250000\n\
                 64,65536,141,3,130,2,3,3,8000000,4000,0.600000,0.500000,0.700000,0.200000,0.200000,5000.0,,,,\n"
            )
        );
        let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split(',').collect()).collect();
        for (row, r) in rows.iter().zip(fixed()) {
            assert_eq!(row[2].parse::<u64>().unwrap(), r.events.total());
            assert_eq!(row[4].parse::<u64>().unwrap(), r.events.read);
            assert!((row[10].parse::<f64>().unwrap() - median(&r.wall_s)).abs() < 1e-9);
            assert_eq!(row.len(), CSV_HEADER.split(',').count());
            assert_eq!(row[18].parse::<u64>().ok(), r.gpgsm.map(|g| g.events));
            assert_eq!(row[19].parse::<f64>().ok(), r.gpgsm.map(|g| g.time_s));
        }
    }

    #[test]
    fn json_parses_back() {
        let v: serde_json::Value = serde_json::from_slice(&json(&fixed())).unwrap();
        let r = &v["results"][1];
        assert_eq!(r["buffer_size"], 65536);
        assert_eq!(r["events"]["total"], 141);
        assert_eq!(r["events"]["read"], 130);
        assert_eq!(r["wall_s"]["median"], 0.6);
        assert_eq!(r["wall_s"]["runs"][1], 0.7);
        assert_eq!(v["results"][0]["wall_s"]["min"], 1.0);
        assert_eq!(v["results"][0]["gpgsm"]["events"], 1012);
        assert_eq!(v["results"][0]["gpgsm"]["time_s"], 2.25);
        assert_eq!(v["results"][0]["seed"]["events"], 1000);
        assert!(r["gpgsm"].is_null());
    }

    #[test]
    fn markdown_snapshot() {
        let text = String::from_utf8(markdown(&fixed())).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].ends_with("| seed's events | ratio | seed's time (s) | gpgsm events | gpgsm time (s) |"));
        assert_eq!(
            lines[2],
            "| 0 | 1011 | 1.500 | 1000 | 3 | 2 | 8000000 | 4000 | 0.500 | 0.250 | 1.23 | 1000 | 1.011 | 86 | 1012 | 2.250 |"
        );
        assert_eq!(
            lines[3],
            "| 64 | 141 | 0.600 | 130 | 3 | 2 | 8000000 | 4000 | 0.200 | 0.200 | 5.00 | – | – | – | – | – |"
        );
        let plain: Vec<SizeResult> = fixed().into_iter().map(|r| SizeResult { seed: None, gpgsm: None, ..r }).collect();
        let text = String::from_utf8(markdown(&plain)).unwrap();
        assert_eq!(
            text.lines().nth(2),
            Some("| 0 | 1011 | 1.500 | 1000 | 3 | 2 | 8000000 | 4000 | 0.500 | 0.250 | 1.23 |")
        );
    }
}
