//! `--export-csv`: one flat row per buffer size.

use std::fmt::Write as _;

use super::Exporter;
use crate::sweep::{SizeResult, Sweep};

/// The CSV exporter.
#[derive(Debug, Clone, Copy)]
pub struct Csv;

impl Exporter for Csv {
    fn render(&self, sweep: &Sweep) -> Vec<u8> {
        csv(&sweep.results)
    }
}

/// The CSV header.
pub const CSV_HEADER: &str = "n_k,buffer_size,events_total,open,read,seek,close,stat,bytes_read,logical_reads,wall_median_s,wall_min_s,wall_max_s,wall_mean_s,wall_stddev_s,user_median_s,sys_median_s,mean_read_ns,seed_events,seed_time_s,gnupg_tool,gnupg_events,gnupg_time_s";

/// `a,b` for a present pair, `,` for an absent one.
fn pair(p: Option<(u64, f64)>, time_digits: usize) -> String {
    p.map_or_else(|| ",".to_string(), |(e, t)| format!("{e},{t:.time_digits$}"))
}

/// One flat row per buffer size (`n_k` is the size as given).
pub(super) fn csv(results: &[SizeResult]) -> Vec<u8> {
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
