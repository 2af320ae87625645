//! Sweep results as JSON, CSV and Markdown, and as the terminal's table:
//! pure functions from results to bytes (the caller decides where they go).
//!
//! Each format is one file with one [`Exporter`] and one [`Format`]
//! variant; the CLI makes an `--export-NAME FILE` option for every format
//! in [`Format::ALL`], so a new format touches nothing else. The table
//! ([`Table`]) is the exporter the CLI prints, 80 columns or wide.

/// Test only: `actual` (a `String`) equals the expected output kept in
/// `expected/NAME.txt` beside this file, trailing white space aside. A
/// changed format shows as `assert_eq!`'s two texts; the file is updated by
/// hand, in the same commit.
#[cfg(test)]
macro_rules! assert_expected {
    ($name:literal, $actual:expr) => {
        assert_eq!(
            $actual.trim_end(),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/sweep/export/expected/", $name, ".txt")).trim_end(),
            "src/sweep/export/expected/{}.txt",
            $name
        )
    };
}

mod csv;
mod exporter;
mod json;
mod markdown;
mod table;

pub use exporter::Exporter;
pub use table::Table;

use super::Sweep;

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON, its serde form.
    Json,
    /// CSV, one row per size.
    Csv,
    /// A Markdown table.
    Markdown,
}

impl Format {
    /// Every format, in the order the help lists them.
    pub const ALL: [Format; 3] = [Format::Json, Format::Csv, Format::Markdown];

    /// The format's exporter, its command-line option (`export-NAME`,
    /// without the dashes) and what it writes, for the option's help
    /// ("Write the results as …").
    pub fn exporter(self) -> (&'static dyn Exporter, &'static str, &'static str) {
        match self {
            Format::Json => (&json::Json, "export-json", "JSON"),
            Format::Csv => (&csv::Csv, "export-csv", "CSV"),
            Format::Markdown => (&markdown::Markdown, "export-markdown", "a Markdown table"),
        }
    }

    /// The sweep in this format.
    pub fn render(self, sweep: &Sweep) -> Vec<u8> {
        self.exporter().0.render(sweep)
    }

    /// The command-line option, `export-NAME` (without the dashes).
    pub fn option(self) -> &'static str {
        self.exporter().1
    }
}

#[cfg(test)]
mod tests {
    use super::csv::{csv, CSV_HEADER, CSV_PROGRAM_COLUMNS};
    use super::json::json;
    use super::markdown::markdown;
    use super::*;
    use crate::events::PerOp;
    use crate::sweep::SizeResult;
    use crate::sweep::{GnupgRow, ProgramRow, SeedRow, Times, Workload};

    /// Two sizes with every kind of column filled or missing.
    pub(crate) fn fixed() -> Vec<SizeResult> {
        vec![
            SizeResult {
                label: "0".into(),
                buffer_size: 8192,
                file_api: None,
                bulk_import: false,
                events: PerOp { open: 3, read: 1000, seek: 2, close: 3, stat: 3 },
                bytes_read: 8_000_000,
                logical_reads: 4000,
                wall_s: Times::new(vec![1.5, 1.0, 2.0]),
                user_s: Times::new(vec![0.5, 0.4, 0.6]),
                sys_s: Times::new(vec![0.25, 0.25, 0.25]),
                mean_read_ns: 1234.5,
                seed: Some(SeedRow { events: 1000, time_s: 86.0 }),
                gnupg: Some(GnupgRow { tool: "gpgsm", events: 1012, time_s: 2.25, counted_with: "strace" }),
                program: None,
                keybox_changed: Vec::new(),
                other_events: 0,
            },
            SizeResult {
                label: "64".into(),
                buffer_size: 65536,
                file_api: None,
                bulk_import: false,
                events: PerOp { open: 3, read: 130, seek: 2, close: 3, stat: 3 },
                bytes_read: 8_000_000,
                logical_reads: 4000,
                wall_s: Times::new(vec![0.5, 0.7]),
                user_s: Times::new(vec![0.2, 0.2]),
                sys_s: Times::new(vec![0.1, 0.3]),
                mean_read_ns: 5000.0,
                seed: None,
                gnupg: None,
                program: None,
                keybox_changed: Vec::new(),
                other_events: 0,
            },
        ]
    }

    #[test]
    fn csv_snapshot_and_parse_back() {
        let text = String::from_utf8(csv(&fixed())).unwrap();
        assert_expected!("csv_snapshot_and_parse_back", text);
        let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split(',').collect()).collect();
        let col = |name: &str| CSV_HEADER.split(',').position(|c| c == name).unwrap();
        for (row, r) in rows.iter().zip(fixed()) {
            assert_eq!(row.len(), CSV_HEADER.split(',').count());
            assert_eq!(row[col("events_total")].parse::<u64>().unwrap(), r.total_events());
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
            program: None,
            keyboxd: false,
            versus: None,
            probe_events: None,
        };
        let text = String::from_utf8(json(&sweep)).unwrap();
        assert_expected!("json_is_the_serde_form_of_the_sweep", text);
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
        assert_expected!("markdown_with_seed_and_gpgsm", String::from_utf8(markdown(&fixed())).unwrap());
        let plain: Vec<SizeResult> = fixed().into_iter().map(|r| SizeResult { seed: None, gnupg: None, ..r }).collect();
        assert_expected!("markdown_plain", String::from_utf8(markdown(&plain)).unwrap());
    }

    /// `sweep --program`: the program at 8 KiB, not run at 64 KiB.
    fn with_program() -> Vec<SizeResult> {
        let mut rows: Vec<SizeResult> =
            fixed().into_iter().map(|r| SizeResult { seed: None, gnupg: None, ..r }).collect();
        rows[0].program = Some(ProgramRow {
            tool: "gpgsm",
            not_run: None,
            events: 1020,
            wall_s: Times::new(vec![0.25, 0.5]),
            user_s: Times::new(vec![0.125, 0.125]),
            sys_s: Times::new(vec![0.0625, 0.0625]),
        });
        rows[1].program = Some(ProgramRow::not_run("gpgsm", "gpgsm (GnuPG) 2.2.40 has no --kbx-buffer-size".into()));
        rows
    }

    #[test]
    fn program_columns_in_every_format() {
        let rows = with_program();
        let text = String::from_utf8(csv(&rows)).unwrap();
        assert_expected!("csv_program", text);
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        assert_eq!(header.len(), CSV_HEADER.split(',').count() + CSV_PROGRAM_COLUMNS.split(',').count());
        for line in text.lines().skip(1) {
            assert_eq!(line.split(',').count(), header.len(), "{line}");
        }
        assert_expected!("markdown_program", String::from_utf8(markdown(&rows)).unwrap());
        let sweep = Sweep {
            keybox: "gnupg-mixed.kbx".into(),
            workload: Workload::Validate(crate::lookup::Strategy::Gnupg),
            lookup: Some("gnupg"),
            warmup: 0,
            runs: 2,
            results: rows,
            program: Some("gpgsm -k --with-validation --disable-dirmngr".into()),
            keyboxd: false,
            versus: None,
            probe_events: None,
        };
        let v: serde_json::Value = serde_json::from_slice(&json(&sweep)).unwrap();
        assert_eq!(v["program"], "gpgsm -k --with-validation --disable-dirmngr");
        assert_eq!(v["results"][0]["program"]["events"], 1020);
        assert_eq!(v["results"][0]["events"]["total"], 1011, "the model");
        assert!(v["results"][1]["program"]["not_run"].as_str().unwrap().contains("--kbx-buffer-size"));
    }
}
