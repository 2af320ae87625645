//! `sweep --plot`: file events and wall time against buffer size, as an SVG
//! that any browser shows.
//!
//! Two log–log panels side by side, ticks at the measured sizes and at
//! 1–2–5 steps of the values. kbxscope's series is always drawn (mean time
//! with a bar from the fastest to the slowest run); the seed's (built-in
//! keybox, dashed) and gpgsm's or gpg's (`--with-gpgsm`, `--with-gpg`, or
//! the program of `--program`, with its runs' bar; kbxscope is then the
//! model) when the results carry them. Unbuffered rows (0 bytes) have no place on a log axis and are left
//! out, which the title says.

use plotters::coord::combinators::{BindKeyPoints, LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::result::{ProgramRow, SizeResult, Sweep};
use crate::io::BufferSize;

/// Canvas size in pixels.
const SIZE: (u32, u32) = (1200, 520);

/// One line of a panel: a name, a colour, dashed or not, its points (KiB,
/// value) and optional bars (KiB, low, high).
struct Series {
    name: String,
    /// kbxscope's own line: wide and light, circles.
    ours: bool,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
    bars: Vec<(f64, f64, f64)>,
}

/// A value of one series at one size: the point, and the spread of the runs.
type Value = Option<(f64, Option<(f64, f64)>)>;

/// The lines of one panel, picked from the results by `value` (kbxscope,
/// seed, GnuPG: gpgsm or gpg beside us, or the program of `--program`,
/// whose model kbxscope then is).
fn series(results: &[SizeResult], value: impl Fn(&SizeResult) -> [Value; 3]) -> Vec<Series> {
    let program = results.iter().find_map(|r| r.program.as_ref()).map(|p| p.tool);
    let (ours, gnupg) = match (program, results.iter().find_map(|r| r.gnupg)) {
        (Some(tool), _) => ("kbxscope (model)", format!("{tool} (recorded)")),
        (None, Some(g)) => ("kbxscope", format!("{} ({})", g.tool, g.counted_with)),
        (None, None) => ("kbxscope", String::new()),
    };
    let line = |name: &str, ours: bool, color: RGBColor, dashed: bool| Series {
        name: name.to_string(),
        ours,
        color,
        dashed,
        points: vec![],
        bars: vec![],
    };
    let mut out = [
        line(ours, true, RGBColor(31, 119, 180), false),
        line("seed (procmon)", false, RGBColor(60, 60, 60), true),
        line(&gnupg, false, RGBColor(214, 39, 40), false),
    ];
    for r in results.iter().filter(|r| r.buffer_size > 0) {
        let kib = r.buffer_size as f64 / 1024.0;
        for (s, v) in out.iter_mut().zip(value(r)) {
            if let Some((v, spread)) = v.filter(|(v, _)| *v > 0.0) {
                s.points.push((kib, v));
                if let Some((lo, hi)) = spread.filter(|(lo, hi)| hi > lo && *lo > 0.0) {
                    s.bars.push((kib, lo, hi));
                }
            }
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out.into_iter().filter(|s| !s.points.is_empty()).collect()
}

/// Tick values on a log axis from `lo` to `hi`: 1, 2 and 5 times the powers
/// of ten inside, thinned to at most about eight.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    if out.len() > 8 {
        out.retain(|v| (v / 10f64.powf(v.log10().floor()) - 1.0).abs() < 1e-9);
    }
    out
}

/// A log axis range covering `values` with a margin, ticked at `keys` (or
/// at 1–2–5 steps when `keys` is empty).
fn axis(values: impl Iterator<Item = f64>, keys: Vec<f64>) -> WithKeyPoints<LogCoord<f64>> {
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = (lo / 1.6, hi * 1.6);
    let keys = if keys.is_empty() { ticks(lo, hi) } else { keys };
    (lo..hi).log_scale().with_key_points(keys)
}

/// Draw one panel.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    lines: &[Series],
    sizes: &[f64],
) -> Result<(), PlotError> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| PlotError::Draw(e.to_string());
    let x = axis(lines.iter().flat_map(|s| s.points.iter().map(|p| p.0)), sizes.to_vec());
    let y = axis(
        lines.iter().flat_map(|s| s.points.iter().map(|p| p.1).chain(s.bars.iter().flat_map(|b| [b.1, b.2]))),
        Vec::new(),
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    mesh(&mut chart, y_desc).map_err(err)?;
    // kbxscope first (wide and light), the others on top of it, so that a
    // line lying on kbxscope's stays visible.
    for s in lines {
        let color = s.color;
        let width = if s.ours { 5 } else { 2 };
        let style = if s.ours { color.mix(0.55).stroke_width(width) } else { color.stroke_width(width) };
        let drawn = if s.dashed {
            chart.draw_series(DashedLineSeries::new(s.points.iter().copied(), 10, 6, style)).map_err(err)?
        } else {
            chart.draw_series(LineSeries::new(s.points.iter().copied(), style)).map_err(err)?
        };
        let dashed = s.dashed;
        drawn.label(s.name.as_str()).legend(move |(x, y)| {
            let path = vec![(x, y), (x + 28, y)];
            if dashed {
                DashedPathElement::new(path, 6, 4, style).into_dyn()
            } else {
                PathElement::new(path, style).into_dyn()
            }
        });
        for &(x, lo, hi) in &s.bars {
            let bar = color.stroke_width(2);
            chart
                .draw_series([
                    PathElement::new(vec![(x, lo), (x, hi)], bar),
                    PathElement::new(vec![(x / 1.06, lo), (x * 1.06, lo)], bar),
                    PathElement::new(vec![(x / 1.06, hi), (x * 1.06, hi)], bar),
                ])
                .map_err(err)?;
        }
        match (s.ours, s.dashed) {
            (true, _) => chart.draw_series(s.points.iter().map(|p| Circle::new(*p, 5, color.filled()))),
            (false, false) => chart.draw_series(s.points.iter().map(|p| TriangleMarker::new(*p, 6, color.filled()))),
            (false, true) => chart.draw_series(s.points.iter().map(|p| Cross::new(*p, 5, color.stroke_width(2)))),
        }
        .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .legend_area_size(36)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(err)
}

/// The grid, tick labels as sizes and plain numbers, and axis names.
fn mesh<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    y_desc: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc("buffer size (log scale)")
        .y_desc(y_desc)
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .x_label_formatter(&|v| BufferSize::Bytes((v * 1024.0).round() as usize).to_string())
        .y_label_formatter(&|v| number(*v))
        .draw()
}

/// 4900000 → "4.9M", 20000 → "20k", 0.25 → "0.25".
fn number(v: f64) -> String {
    let trim = |s: String| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    match v {
        v if v >= 1e6 => trim(format!("{:.1}", v / 1e6)) + "M",
        v if v >= 1e3 => trim(format!("{:.1}", v / 1e3)) + "k",
        v if v >= 1.0 => trim(format!("{v:.1}")),
        v => trim(format!("{v:.4}")),
    }
}

/// Why a plot cannot be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// Every size is unbuffered: a log-scale axis has no place for them.
    #[error("nothing to plot: a log-scale axis has no place for unbuffered (0-byte) sizes")]
    NothingToPlot,
    /// The drawing backend failed (its message).
    #[error("{0}")]
    Draw(String),
}

/// The SVG: file events (left) and wall time (right) per buffer size, titled
/// with the keybox, the workload and its lookup.
///
/// # Errors
/// Nothing to draw (every size unbuffered), or a drawing error.
pub fn svg(sweep: &Sweep) -> Result<Vec<u8>, PlotError> {
    let results = &sweep.results;
    fn ran(r: &SizeResult) -> Option<&ProgramRow> {
        r.program.as_ref().filter(|p| p.not_run.is_none())
    }
    let events = series(results, |r| {
        [
            Some((r.total_events() as f64, None)),
            r.seed.map(|s| (s.events as f64, None)),
            r.gnupg.map(|g| (g.events as f64, None)).or_else(|| ran(r).map(|p| (p.events as f64, None))),
        ]
    });
    let times = series(results, |r| {
        [
            Some((r.wall_s.mean, Some((r.wall_s.min, r.wall_s.max)))),
            r.seed.map(|s| (s.time_s, None)),
            r.gnupg
                .map(|g| (g.time_s, None))
                .or_else(|| ran(r).map(|p| (p.wall_s.mean, Some((p.wall_s.min, p.wall_s.max))))),
        ]
    });
    let (mut events, mut times) = (events, times);
    if let Some(v) = &sweep.versus {
        // keyboxd's database beside the keybox: its page-cache sizes on the
        // same axis, in green.
        let line = |value: &dyn Fn(&SizeResult) -> f64, bars: bool, bulk: bool| {
            let mut points: Vec<(f64, f64)> = v
                .results
                .iter()
                .filter(|r| r.bulk_import == bulk)
                .filter(|r| r.buffer_size > 0 && value(r) > 0.0)
                .map(|r| (r.buffer_size as f64 / 1024.0, value(r)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let bars = if bars {
                v.results
                    .iter()
                    .filter(|r| r.bulk_import == bulk)
                    .filter(|r| r.buffer_size > 0 && r.wall_s.max > r.wall_s.min && r.wall_s.min > 0.0)
                    .map(|r| (r.buffer_size as f64 / 1024.0, r.wall_s.min, r.wall_s.max))
                    .collect()
            } else {
                Vec::new()
            };
            let name = if bulk { "keyboxd's database, bulk import" } else { "keyboxd's database (page cache)" };
            Series { name: name.into(), ours: false, color: RGBColor(44, 160, 44), dashed: bulk, points, bars }
        };
        events.push(line(&|r| r.total_events() as f64, false, false));
        times.push(line(&|r| r.wall_s.mean, true, false));
        if v.results.iter().any(|r| r.bulk_import) {
            // An import's second row per page-cache size: gpg's bulk-import.
            events.push(line(&|r| r.total_events() as f64, false, true));
            times.push(line(&|r| r.wall_s.mean, true, true));
        }
        for s in events.iter_mut().chain(times.iter_mut()).filter(|s| s.ours) {
            s.name = "keybox (read buffer)".into();
        }
    }
    if events.is_empty() {
        return Err(PlotError::NothingToPlot);
    }
    let versus_sizes = sweep.versus.iter().flat_map(|v| v.results.iter());
    let mut sizes: Vec<f64> = results
        .iter()
        .chain(versus_sizes)
        .filter(|r| r.buffer_size > 0)
        .map(|r| r.buffer_size as f64 / 1024.0)
        .collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let skipped = results.iter().filter(|r| r.buffer_size == 0).count();
    let name = std::path::Path::new(&sweep.keybox)
        .file_name()
        .map_or_else(|| sweep.keybox.clone(), |n| n.to_string_lossy().into_owned());
    let mut heading = format!("{name}: {}", sweep.workload.command());
    if skipped > 0 {
        heading += &format!(" ({skipped} unbuffered size(s) not drawn)");
    }
    if sweep.versus.is_some() {
        heading += ", and on keyboxd's database of the same keys";
    }
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| PlotError::Draw(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        let body = root.titled(&heading, ("sans-serif", 22)).map_err(err)?;
        let (left, right) = body.split_horizontally(SIZE.0 / 2);
        panel(&left, "file events per run", "file events (log scale)", &events, &sizes)?;
        let runs = if sweep.runs == 1 { "1 run".to_string() } else { format!("{} runs", sweep.runs) };
        let caption = format!("wall time, mean of {runs}, bars min…max");
        panel(&right, &caption, "seconds (log scale)", &times, &sizes)?;
        root.present().map_err(err)?;
    }
    Ok(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::PerOp;
    use crate::sweep::{GnupgRow, Times, Workload};

    fn row(label: &str, bytes: u64, reads: u64, wall: f64, gnupg: Option<GnupgRow>) -> SizeResult {
        SizeResult {
            label: label.into(),
            buffer_size: bytes,
            file_api: None,
            bulk_import: false,
            events: PerOp { open: 1, read: reads, seek: 0, close: 1, stat: 1 },
            bytes_read: 0,
            logical_reads: 0,
            wall_s: Times::new(vec![wall, wall * 1.2]),
            user_s: Times::new(vec![0.0]),
            sys_s: Times::new(vec![0.0]),
            mean_read_ns: 0.0,
            seed: None,
            gnupg,
            program: None,
            keybox_changed: Vec::new(),
            other_events: 0,
        }
    }

    #[test]
    fn draws_every_series_with_labels() {
        let g = Some(GnupgRow { tool: "gpgsm", events: 1200, time_s: 2.0, counted_with: "strace" });
        let rows = vec![row("0", 8192, 1000, 1.0, g), row("64", 65536, 130, 0.5, None), row("0B", 0, 9000, 3.0, None)];
        let svg = String::from_utf8(svg(&sweep(rows)).unwrap()).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.trim_end().ends_with("</svg>"));
        for text in [
            "tiny.kbx: list --with-validation --lookup index",
            "file events per run",
            "bars min…max",
            "kbxscope",
            "gpgsm (strace)",
            "\n8 KiB\n",
            "\n64 KiB\n",
        ] {
            assert!(svg.contains(text), "missing {text}");
        }
        assert!(svg.contains("1 unbuffered size(s) not drawn"));
        assert!(!svg.contains("seed (procmon)"));
        // Two panels × kbxscope's 2 points.
        assert_eq!(svg.matches("<circle").count(), 4);
    }

    fn sweep(results: Vec<SizeResult>) -> Sweep {
        Sweep {
            keybox: "/tmp/x/tiny.kbx".into(),
            workload: Workload::Validate(crate::lookup::Strategy::Index),
            lookup: Some("index"),
            warmup: 0,
            runs: 2,
            results,
            program: None,
            keyboxd: false,
            versus: None,
            probe_events: None,
        }
    }

    #[test]
    fn a_program_is_drawn_beside_its_model() {
        let mut rows = vec![row("0", 8192, 1000, 1.0, None), row("64", 65536, 130, 0.5, None)];
        rows[0].program = Some(crate::sweep::ProgramRow {
            tool: "gpg",
            not_run: None,
            events: 1100,
            wall_s: Times::new(vec![0.8, 0.9]),
            user_s: Times::new(vec![0.1]),
            sys_s: Times::new(vec![0.1]),
        });
        rows[1].program = Some(crate::sweep::ProgramRow::not_run("gpg", "no --kbx-buffer-size".into()));
        let svg = String::from_utf8(svg(&sweep(rows)).unwrap()).unwrap();
        assert!(svg.contains("kbxscope (model)") && svg.contains("gpg (recorded)"));
        // The program's one size in two panels, as triangles; the model's two as circles.
        assert_eq!(svg.matches("<circle").count(), 4);
    }

    #[test]
    fn unbuffered_only_is_an_error() {
        assert!(svg(&sweep(vec![row("0B", 0, 10, 1.0, None)])).unwrap_err().to_string().contains("unbuffered"));
    }

    #[test]
    fn numbers_and_ticks_read_plainly() {
        assert_eq!(number(4_900_000.0), "4.9M");
        assert_eq!(number(88_000.0), "88k");
        assert_eq!(number(20_000.0), "20k");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(2.0), "2");
        assert_eq!(ticks(0.3, 4.0), vec![0.5, 1.0, 2.0]);
        assert_eq!(ticks(50_000.0, 8_000_000.0), vec![50_000.0, 100_000.0, 200_000.0, 500_000.0, 1e6, 2e6, 5e6]);
    }
}
