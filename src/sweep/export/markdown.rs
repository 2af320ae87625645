//! `--export-markdown`: every column of `sweep --wide` as a Markdown table.

use std::fmt::Write as _;

use super::exporter::Exporter;
use crate::sweep::{SizeResult, Sweep};

/// The Markdown exporter.
#[derive(Debug, Clone, Copy)]
pub(super) struct Markdown;

impl Exporter for Markdown {
    /// With `--versus-keyboxd`, a second table: the database's, by page-cache size.
    fn render(&self, sweep: &Sweep) -> Vec<u8> {
        let mut out = markdown(&sweep.results);
        if let Some(versus) = &sweep.versus {
            out.extend_from_slice(b"\nkeyboxd's database of the same keys; buffer = SQLite's page cache:\n\n");
            out.extend(markdown(&versus.results));
        }
        out
    }
}

/// A Markdown table: every column of `sweep --wide`; the seed's own
/// numbers and GnuPG's (gpgsm's or gpg's) when the results carry them;
/// with `sweep --program`, the program's events, time and ratio to the
/// model (kbxscope's columns, then). Times in seconds.
pub(super) fn markdown(results: &[SizeResult]) -> Vec<u8> {
    let seed = results.iter().any(|r| r.seed.is_some());
    let gnupg = results.iter().find_map(|r| r.gnupg).map(|g| g.tool);
    let program = results.iter().find_map(|r| r.program.as_ref()).map(|p| p.tool);
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
    if let Some(tool) = program {
        let _ = write!(s, " {tool} events | {tool} time (s), mean ± σ | {tool} / model |");
        rule += "--:|--:|--:|";
    }
    let _ = writeln!(s, "\n{rule}");
    for r in results {
        let _ = write!(
            s,
            "| {} | {} | {:.3} ± {:.3} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.2} |",
            r.shown(),
            r.total_events(),
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
                    write!(s, " {} | {:.3} | {:.0} |", x.events, r.total_events() as f64 / x.events as f64, x.time_s)
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
        if let Some(p) = &r.program {
            let _ = match (&p.not_run, p.ratio(r)) {
                (None, Some(x)) => {
                    write!(s, " {} | {:.3} ± {:.3} | {x:.3} |", p.events, p.wall_s.mean, p.wall_s.stddev)
                }
                _ => write!(s, " not run | – | – |"),
            };
        }
        s.push('\n');
    }
    s.into_bytes()
}
