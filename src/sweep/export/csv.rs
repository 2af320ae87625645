//! `--export-csv`: one flat row per buffer size.

use std::fmt::Write as _;

use super::exporter::Exporter;
use crate::sweep::{SizeResult, Sweep};

/// The CSV exporter.
#[derive(Debug, Clone, Copy)]
pub(super) struct Csv;

impl Exporter for Csv {
    /// With `--versus-keyboxd`, the database's rows follow the keybox's,
    /// and a last column `store` (`keybox`, `keyboxd`) says which is which.
    fn render(&self, sweep: &Sweep) -> Vec<u8> {
        let Some(versus) = &sweep.versus else { return csv(&sweep.results) };
        let mut out = String::new();
        for (store, results, header) in [("keybox", &sweep.results, true), ("keyboxd", &versus.results, false)] {
            let text = String::from_utf8(csv(results)).expect("CSV is UTF-8");
            for (i, line) in text.lines().enumerate() {
                match i {
                    0 if header => out += &format!("{line},store\n"),
                    0 => {}
                    _ => out += &format!("{line},{store}\n"),
                }
            }
        }
        out.into_bytes()
    }
}

/// The CSV header.
pub(crate) const CSV_HEADER: &str = "n_k,buffer_size,events_total,open,read,seek,close,stat,bytes_read,logical_reads,wall_median_s,wall_min_s,wall_max_s,wall_mean_s,wall_stddev_s,user_median_s,sys_median_s,mean_read_ns,seed_events,seed_time_s,gnupg_tool,gnupg_events,gnupg_time_s";

/// The columns `sweep --program` adds after [`CSV_HEADER`]'s: the
/// program's numbers (those before are kbxscope's, the model's) and the
/// ratio of its events to the model's; empty where it did not run, with why.
pub(crate) const CSV_PROGRAM_COLUMNS: &str =
    "program_tool,program_events,program_wall_median_s,program_wall_mean_s,program_wall_stddev_s,program_user_median_s,program_sys_median_s,program_over_model,program_not_run";

/// `a,b` for a present pair, `,` for an absent one.
fn pair(p: Option<(u64, f64)>, time_digits: usize) -> String {
    p.map_or_else(|| ",".to_string(), |(e, t)| format!("{e},{t:.time_digits$}"))
}

/// One flat row per buffer size (`n_k` is the size as given).
pub(super) fn csv(results: &[SizeResult]) -> Vec<u8> {
    let program = results.iter().any(|r| r.program.is_some());
    let mut s = String::from(CSV_HEADER);
    if program {
        s = s + "," + CSV_PROGRAM_COLUMNS;
    }
    s.push('\n');
    for r in results {
        let e = &r.events;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.1},{},{},{}",
            match r.file_api {
                Some(api) => format!("{} {api}", r.label),
                None => r.label.clone(),
            },
            r.buffer_size,
            r.total_events(),
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
        if program {
            s.pop();
            s += &program_cells(r);
            s.push('\n');
        }
    }
    s.into_bytes()
}

/// `,tool,events,…` of [`CSV_PROGRAM_COLUMNS`] for one row.
fn program_cells(r: &SizeResult) -> String {
    let Some(p) = &r.program else { return ",".repeat(9) };
    let Some(why) = &p.not_run else {
        let ratio = p.ratio(r).map_or_else(String::new, |x| format!("{x:.4}"));
        return format!(
            ",{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{ratio},",
            p.tool, p.events, p.wall_s.median, p.wall_s.mean, p.wall_s.stddev, p.user_s.median, p.sys_s.median
        );
    };
    // The reason has no comma or quote of its own; quoted all the same.
    format!(",{},,,,,,,,\"{}\"", p.tool, why.replace('"', "\"\""))
}
