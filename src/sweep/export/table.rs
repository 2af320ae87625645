//! The terminal's table: by default 80 columns, every column with
//! `--wide`; with `--versus-keyboxd` the database's table after it and the
//! verdict, keybox or keyboxd.

use std::fmt::Write as _;

use super::exporter::Exporter;
use crate::store::StoreKind;
use crate::sweep::{ProgramRow, SizeResult, Sweep, Verdict};

/// The table exporter: what `sweep` prints.
#[derive(Debug, Clone, Copy, Default)]
pub struct Table {
    /// Every column (reads, opens, seeks, min … max, read latency, the
    /// seed's time), not only those that fit 80 columns.
    pub wide: bool,
    /// The file events per operation (`--io-summary`): opens, reads,
    /// seeks, stats and closes.
    pub per_op: bool,
}

impl Exporter for Table {
    /// The sweep's table; with a database's sweep beside it
    /// ([`Sweep::versus`]), a blank line, its table, and the verdict.
    fn render(&self, sweep: &Sweep) -> Vec<u8> {
        let mut text = table(sweep, *self);
        if let Some(v) = &sweep.versus {
            text += "\n";
            text += &table(v, *self);
        }
        if let Some(v) = sweep.verdict() {
            text += &verdict(&v);
        }
        text.into_bytes()
    }
}

/// Keybox or keyboxd: the fastest row of each, side by side.
fn verdict(v: &Verdict<'_>) -> String {
    let row =
        |r: &SizeResult| format!("{} ({} file events, {:.3} s)", r.shown(), thousands(r.total_events()), r.wall_s.mean);
    let faster = match v.faster {
        StoreKind::Keyboxd => "keyboxd",
        StoreKind::Keybox => "the keybox",
    };
    format!(
        "keybox or keyboxd? the keybox at its fastest, buffer {}\n\
         keyboxd at its fastest, page cache {}\n\
         {faster} is {:.1}x faster for this workload on these keys (the stores' file\n\
         I/O as GnuPG reads them; the round trips between GnuPG and keyboxd are not modelled).\n",
        row(v.keybox),
        row(v.keyboxd),
        v.ratio
    )
}

/// `4834239` → `4,834,239`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One column of the table: a two-line heading and a cell per size.
struct Column {
    head: [String; 2],
    cells: Vec<String>,
}

impl Column {
    fn new(head: [&str; 2], results: &[SizeResult], cell: impl Fn(&SizeResult) -> String) -> Self {
        Self { head: head.map(str::to_string), cells: results.iter().map(cell).collect() }
    }

    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.chars().count())
            .chain(self.head.iter().map(|h| h.chars().count()))
            .max()
            .unwrap_or(0)
    }
}

/// The terminal table. By default it fits 80 columns: buffer, file events,
/// mean time ± σ, user and system CPU time; with the built-in keybox the
/// seed's events and the ratio; with `--with-gpgsm` gpgsm's events and time
/// (then without user, system and ratio). `wide` shows every column. One
/// unit of time for the whole table, said in the time column's heading; a
/// legend says what the seed is. With `--program` the rows are the
/// program's and kbxscope's run is the `model` column ([`program_columns`]).
/// `per_op` adds the events per operation.
fn table(sweep: &Sweep, how: Table) -> String {
    let wide = how.wide;
    let results = &sweep.results;
    let seed = results.iter().any(|r| r.seed.is_some());
    let gnupg = results.iter().find_map(|r| r.gnupg);
    let program = results.iter().find_map(|r| r.program.as_ref()).map(|p| p.tool);
    let ms = results.iter().all(|r| r.program.as_ref().map_or(r.wall_s.max, |p| p.wall_s.max) < 1.0);
    let (unit, scale, digits) = if ms { ("ms", 1000.0, 2) } else { ("s", 1.0, 3) };
    let t = move |v: f64| format!("{:.digits$}", v * scale);
    let time_head = format!("time ({unit})");
    let dash = || "-".to_string();
    let mut cols = match program {
        Some(tool) => program_columns(results, tool, &time_head, &t, wide),
        None => ours_columns(results, gnupg.is_some(), &time_head, &t, how),
    };
    if seed {
        cols.push(Column::new(["seed", "events"], results, |r| r.seed.map_or_else(dash, |x| thousands(x.events))));
        if (wide || gnupg.is_none()) && program.is_none() {
            cols.push(Column::new(["", "ratio"], results, |r| {
                r.seed.map_or_else(dash, |x| format!("{:.3}", r.total_events() as f64 / x.events as f64))
            }));
        }
        if wide {
            cols.push(Column::new(["seed", "time"], results, |r| r.seed.map_or_else(dash, |x| t(x.time_s))));
        }
    }
    if let Some(g) = gnupg {
        cols.push(Column::new([g.tool, "events"], results, |r| r.gnupg.map_or_else(dash, |x| thousands(x.events))));
        cols.push(Column::new([g.tool, "time"], results, |r| r.gnupg.map_or_else(dash, |x| t(x.time_s))));
    }
    let widths: Vec<usize> = cols.iter().map(Column::width).collect();
    let line = |cell: &dyn Fn(&Column) -> String| {
        let mut l = String::new();
        for (c, w) in cols.iter().zip(&widths) {
            let text = cell(c);
            let pad = w.saturating_sub(text.chars().count());
            let _ = write!(l, "{}{}{text}", if l.is_empty() { "" } else { "  " }, " ".repeat(pad));
        }
        l.trim_end().to_string() + "\n"
    };
    let runs = match sweep.runs {
        1 => "1 timed run".to_string(),
        n => format!("{n} timed runs"),
    };
    let warm = match sweep.warmup {
        0 => String::new(),
        1 => " after 1 warm-up".to_string(),
        n => format!(" after {n} warm-ups"),
    };
    let mut s = String::new();
    let _ = writeln!(s, "{}", sweep.keybox);
    let _ = writeln!(s, "{}, {runs} per size{warm}", sweep.program.clone().unwrap_or_else(|| sweep.workload.command()));
    s += &line(&|c| c.head[0].clone());
    s += &line(&|c| c.head[1].clone());
    for i in 0..results.len() {
        s += &line(&|c| c.cells[i].clone());
    }
    if sweep.keyboxd {
        s += "keyboxd's database: buffer = SQLite's page cache (PRAGMA cache_size; keyboxd's\n";
        s += "is SQLite's default, 2000 KiB); file events: SQLite's calls, locks included.\n";
    }
    if seed {
        s += "seed: what procmon counted for gpgsm -k --with-validation on GnuPG's 42 MiB\n";
        s += "keybox (Windows), which the built-in keybox imitates; ratio: ours / the seed's.\n";
    }
    if let Some(g) = gnupg {
        let how = if g.counted_with == "strace" { "counted by strace" } else { "recorded from inside" };
        let _ = writeln!(s, "{}: this {} on this keybox, its file events {how}.", g.tool, g.tool);
    }
    if let Some(tool) = program {
        let _ = writeln!(s, "model: kbxscope's own {}, 1 run per size;", sweep.workload.command());
        let _ = writeln!(s, "ratio: {tool}'s events / the model's.");
        let mut reasons: Vec<&str> = results.iter().filter_map(|r| r.program.as_ref()?.not_run.as_deref()).collect();
        reasons.dedup();
        for why in reasons {
            let _ = writeln!(s, "not run: {why}.");
        }
    }
    for r in results {
        for change in &r.keybox_changed {
            let _ = writeln!(s, "note: at size {}, the keybox {change}; this row measured a changed file", r.buffer());
        }
    }
    s
}

/// kbxscope's own columns: buffer, events (reads, opens, seeks when wide;
/// opens, reads, seeks, stats, closes per operation), time, and user and
/// system time unless GnuPG's columns take their place.
fn ours_columns(
    results: &[SizeResult],
    gnupg: bool,
    time_head: &str,
    t: &dyn Fn(f64) -> String,
    Table { wide, per_op }: Table,
) -> Vec<Column> {
    let mut cols = vec![
        Column::new(["", "buffer"], results, SizeResult::shown),
        Column::new(["file", "events"], results, |r| thousands(r.total_events())),
    ];
    if per_op {
        cols.push(Column::new(["", "opens"], results, |r| thousands(r.events.open)));
        cols.push(Column::new(["", "reads"], results, |r| thousands(r.events.read)));
        cols.push(Column::new(["", "seeks"], results, |r| thousands(r.events.seek)));
        cols.push(Column::new(["", "stats"], results, |r| thousands(r.events.stat)));
        cols.push(Column::new(["", "closes"], results, |r| thousands(r.events.close)));
    } else if wide {
        cols.push(Column::new(["", "reads"], results, |r| thousands(r.events.read)));
        cols.push(Column::new(["", "opens"], results, |r| thousands(r.events.open)));
        cols.push(Column::new(["", "seeks"], results, |r| thousands(r.events.seek)));
    }
    cols.push(Column::new([time_head, "mean"], results, |r| t(r.wall_s.mean)));
    cols.push(Column::new(["", "± σ"], results, |r| format!("± {}", t(r.wall_s.stddev))));
    if wide {
        cols.push(Column::new(["", "min … max"], results, |r| format!("{} … {}", t(r.wall_s.min), t(r.wall_s.max))));
    }
    if wide || !gnupg {
        cols.push(Column::new(["", "user"], results, |r| t(r.user_s.median)));
        cols.push(Column::new(["", "sys"], results, |r| t(r.sys_s.median)));
    }
    if wide {
        cols.push(Column::new(["µs per", "read"], results, |r| format!("{:.2}", r.mean_read_ns / 1000.0)));
    }
    cols
}

/// `--program`'s columns: the program's events and times (`not run` where
/// it cannot read with the size), then the model's events and the ratio
/// (and, when wide, the model's time).
fn program_columns(
    results: &[SizeResult],
    tool: &str,
    time_head: &str,
    t: &dyn Fn(f64) -> String,
    wide: bool,
) -> Vec<Column> {
    fn ran(r: &SizeResult) -> Option<&ProgramRow> {
        r.program.as_ref().filter(|p| p.not_run.is_none())
    }
    fn cell(f: &dyn Fn(&ProgramRow) -> String) -> impl Fn(&SizeResult) -> String + '_ {
        move |r| ran(r).map_or_else(|| "-".to_string(), f)
    }
    let mut cols = vec![
        Column::new(["", "buffer"], results, SizeResult::shown),
        Column::new([tool, "events"], results, |r| ran(r).map_or_else(|| "not run".into(), |p| thousands(p.events))),
        Column::new([time_head, "mean"], results, cell(&|p| t(p.wall_s.mean))),
        Column::new(["", "± σ"], results, cell(&|p| format!("± {}", t(p.wall_s.stddev)))),
    ];
    if wide {
        cols.push(Column::new(
            ["", "min … max"],
            results,
            cell(&|p| format!("{} … {}", t(p.wall_s.min), t(p.wall_s.max))),
        ));
    }
    cols.push(Column::new(["", "user"], results, cell(&|p| t(p.user_s.median))));
    cols.push(Column::new(["", "sys"], results, cell(&|p| t(p.sys_s.median))));
    cols.push(Column::new(["model", "events"], results, |r| thousands(r.total_events())));
    cols.push(Column::new(["", "ratio"], results, |r| {
        r.program.as_ref().and_then(|p| p.ratio(r)).map_or_else(|| "-".to_string(), |x| format!("{x:.3}"))
    }));
    if wide {
        cols.push(Column::new(["model", "time"], results, |r| t(r.wall_s.mean)));
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::PerOp;
    use crate::lookup::Strategy;
    use crate::sweep::{GnupgRow, SeedRow, Times, Workload};

    const NARROW: Table = Table { wide: false, per_op: false };
    const WIDE: Table = Table { wide: true, per_op: false };

    fn sweep(seed: bool, gpgsm: bool, slow: bool) -> Sweep {
        let k = if slow { 1.0 } else { 0.001 };
        let row = |label: &str, bytes: u64, reads: u64, time: f64| SizeResult {
            label: label.into(),
            buffer_size: bytes,
            file_api: None,
            bulk_import: false,
            events: PerOp { open: 3074, read: reads, seek: 575, close: 3074, stat: 3074 },
            bytes_read: 0,
            logical_reads: 0,
            wall_s: Times::new(vec![time * k, time * k * 1.01, time * k * 0.98]),
            user_s: Times::new(vec![0.5 * k; 3]),
            sys_s: Times::new(vec![2.0 * k; 3]),
            mean_read_ns: 570.0,
            seed: seed.then_some(SeedRow { events: 4_900_000, time_s: 86.0 }),
            gnupg: gpgsm.then_some(GnupgRow {
                tool: "gpgsm",
                events: 4_838_252,
                time_s: 5.674,
                counted_with: "strace",
            }),
            program: None,
            keybox_changed: Vec::new(),
            other_events: 0,
        };
        Sweep {
            keybox: "/root/.cache/kbxscope/seed-v2-seed1.kbx".into(),
            workload: Workload::Validate(Strategy::Gnupg),
            lookup: Some("gnupg"),
            warmup: 1,
            runs: 3,
            results: vec![
                row("0", 8192, 4_824_396, 3.297),
                row("512", 512 << 10, 77_566, 2.502),
                row("unbuffered", 0, 48_243_960, 13.1),
            ],
            program: None,
            keyboxd: false,
            versus: None,
            probe_events: None,
        }
    }

    /// `--program gpgsm` on GnuPG 2.2.40: it runs at 8 KiB only.
    fn program_sweep() -> Sweep {
        let mut s = sweep(false, false, false);
        s.program =
            Some("gpgsm -k --with-validation --disable-dirmngr (gpgsm (GnuPG) 2.2.40), counted with record".into());
        let why = "gpgsm (GnuPG) 2.2.40 has no --kbx-buffer-size (8 KiB only)".to_string();
        for r in &mut s.results {
            r.program = Some(match r.buffer_size {
                8192 => ProgramRow {
                    tool: "gpgsm",
                    not_run: None,
                    events: 4_838_252,
                    wall_s: Times::new(vec![0.31, 0.33, 0.32]),
                    user_s: Times::new(vec![0.1; 3]),
                    sys_s: Times::new(vec![0.2; 3]),
                },
                _ => ProgramRow::not_run("gpgsm", why.clone()),
            });
        }
        s
    }

    #[test]
    fn the_table_fits_80_columns() {
        for (seed, gpgsm, slow) in [(true, false, true), (true, true, true), (false, false, false), (false, true, true)]
        {
            let text = table(&sweep(seed, gpgsm, slow), NARROW);
            for l in text.lines().skip(1) {
                assert!(l.chars().count() <= 80, "{} columns: {l}\n{text}", l.chars().count());
            }
        }
        // With --program, the second line names the command and its version.
        let text = table(&program_sweep(), NARROW);
        for l in text.lines().skip(2) {
            assert!(l.chars().count() <= 80, "{} columns: {l}\n{text}", l.chars().count());
        }
    }

    #[test]
    fn table_snapshots() {
        assert_expected!("seed", table(&sweep(true, false, true), NARROW));
        assert_expected!("seed_gpgsm", table(&sweep(true, true, true), NARROW));
        assert_expected!("plain_ms", table(&sweep(false, false, false), NARROW));
        assert_expected!("wide", table(&sweep(true, true, true), WIDE));
        assert_expected!("program", table(&program_sweep(), NARROW));
        assert_expected!("program_wide", table(&program_sweep(), WIDE));
    }

    /// `--versus-keyboxd`: the keybox's table, a blank line, the
    /// database's, then the verdict.
    #[test]
    fn the_database_and_the_verdict_follow_the_table() {
        let mut db = sweep(false, false, true);
        (db.keybox, db.keyboxd) = ("k.kbx as keyboxd's database".into(), true);
        let keybox = Sweep { versus: Some(Box::new(db.clone())), ..sweep(false, false, false) };
        let text = String::from_utf8(NARROW.render(&keybox)).unwrap();
        let verdict = "keybox or keyboxd? the keybox at its fastest, buffer 512 KiB (87,363 file events, 0.002 s)\n\
                       keyboxd at its fastest, page cache 512 KiB (87,363 file events, 2.494 s)\n\
                       the keybox is 1000.0x faster for this workload on these keys (the stores' file\n\
                       I/O as GnuPG reads them; the round trips between GnuPG and keyboxd are not modelled).\n";
        assert_eq!(text, table(&sweep(false, false, false), NARROW) + "\n" + &table(&db, NARROW) + verdict);
        // Without a database, the table alone.
        let alone = WIDE.render(&sweep(true, false, true));
        assert_eq!(String::from_utf8(alone).unwrap(), table(&sweep(true, false, true), WIDE));
    }

    /// `--io-summary`: the events per operation after the total.
    #[test]
    fn per_operation_columns() {
        let text = table(&sweep(false, false, false), Table { wide: false, per_op: true });
        let lines: Vec<&str> = text.lines().collect();
        let heads: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(heads[..7], ["buffer", "events", "opens", "reads", "seeks", "stats", "closes"]);
        let r = &sweep(false, false, false).results[0];
        let cells: Vec<&str> = lines[4].split_whitespace().collect();
        let ops = [r.events.open, r.events.read, r.events.seek, r.events.stat, r.events.close].map(thousands);
        assert_eq!(cells[..2].join(" "), r.shown());
        assert_eq!(cells[3..8], ops.each_ref().map(String::as_str));
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(4_834_239), "4,834,239");
    }
}
