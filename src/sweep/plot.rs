//! `sweep --plot`: file events and wall time against buffer size, as an SVG
//! that any browser shows.
//!
//! Two log–log panels side by side. kbxscope's series is always drawn; the
//! seed's (built-in keybox) and gpgsm's (`--with-gpgsm`) are drawn when the
//! results carry them. Unbuffered rows (0 bytes) have no place on a log axis
//! and are left out, which the caption says.

use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

use super::{median, SizeResult};

/// Canvas size in pixels.
const SIZE: (u32, u32) = (1100, 460);

/// One line of a panel: a name, a colour, dashed or not, and its points
/// (KiB, value).
struct Series {
    name: &'static str,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// The lines of one panel, picked from the results by `value`.
fn series(results: &[SizeResult], value: impl Fn(&SizeResult) -> [Option<f64>; 3]) -> Vec<Series> {
    let mut out = [
        Series { name: "kbxscope", color: RGBColor(31, 119, 180), dashed: false, points: Vec::new() },
        Series { name: "seed (procmon)", color: RGBColor(90, 90, 90), dashed: true, points: Vec::new() },
        Series { name: "gpgsm (strace)", color: RGBColor(214, 39, 40), dashed: false, points: Vec::new() },
    ];
    for r in results.iter().filter(|r| r.buffer_size > 0) {
        let kib = r.buffer_size as f64 / 1024.0;
        for (s, v) in out.iter_mut().zip(value(r)) {
            if let Some(v) = v.filter(|v| *v > 0.0) {
                s.points.push((kib, v));
            }
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    // kbxscope last, so it is drawn on top where the lines meet.
    out.rotate_left(1);
    out.into_iter().filter(|s| !s.points.is_empty()).collect()
}

/// A log axis range covering `values`, widened to whole powers of two so a
/// single point still has room.
fn span(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    (lo / 1.5)..(hi * 1.5)
}

/// Draw one panel.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    lines: &[Series],
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let x = span(lines.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let y = span(lines.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(80)
        .build_cartesian_2d(x.log_scale(), y.log_scale())
        .map_err(err)?;
    mesh(&mut chart, y_desc).map_err(err)?;
    for s in lines {
        let color = s.color;
        let style = color.stroke_width(2);
        let drawn = if s.dashed {
            chart.draw_series(DashedLineSeries::new(s.points.iter().copied(), 8, 5, style)).map_err(err)?
        } else {
            chart.draw_series(LineSeries::new(s.points.iter().copied(), style)).map_err(err)?
        };
        drawn.label(s.name).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart.draw_series(s.points.iter().map(|p| Circle::new(*p, 4, color.filled()))).map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// The grid, tick labels in plain numbers and axis names.
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
        .x_desc("buffer size (KiB, log scale)")
        .y_desc(y_desc)
        .x_labels(8)
        .y_labels(8)
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| number(*v))
        .draw()
}

/// 4900000 → "4.9M", 0.25 → "0.25".
fn number(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e3 => format!("{:.0}k", v / 1e3),
        v if v >= 10.0 => format!("{v:.0}"),
        v if v >= 0.1 => format!("{v:.2}"),
        v => format!("{v:.3}"),
    }
}

/// The SVG: events (left) and median wall time (right) per buffer size.
///
/// # Errors
/// Nothing to draw (every size unbuffered), or a drawing error.
pub fn svg(results: &[SizeResult], title: &str) -> Result<Vec<u8>, String> {
    let events = series(results, |r| {
        [Some(r.events.total() as f64), r.seed.map(|s| s.events as f64), r.gpgsm.map(|g| g.events as f64)]
    });
    let times = series(results, |r| [Some(median(&r.wall_s)), r.seed.map(|s| s.time_s), r.gpgsm.map(|g| g.time_s)]);
    if events.is_empty() {
        return Err("nothing to plot: a log-scale axis has no place for unbuffered (0-byte) sizes".into());
    }
    let skipped = results.iter().filter(|r| r.buffer_size == 0).count();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let mut heading = title.to_string();
        if skipped > 0 {
            heading += &format!(" ({skipped} unbuffered size(s) not drawn)");
        }
        let body = root.titled(&heading, ("sans-serif", 22)).map_err(err)?;
        let (left, right) = body.split_horizontally(SIZE.0 / 2);
        panel(&left, "file events", "file events (log scale)", &events)?;
        panel(&right, "wall time (median)", "seconds (log scale)", &times)?;
        root.present().map_err(err)?;
    }
    Ok(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PerOp;
    use crate::sweep::GpgsmRow;

    fn row(label: &str, bytes: u64, reads: u64, wall: f64, gpgsm: Option<GpgsmRow>) -> SizeResult {
        SizeResult {
            label: label.into(),
            buffer_size: bytes,
            events: PerOp { open: 1, read: reads, seek: 0, close: 1, stat: 1 },
            bytes_read: 0,
            logical_reads: 0,
            wall_s: vec![wall],
            user_s: vec![0.0],
            sys_s: vec![0.0],
            mean_read_ns: 0.0,
            seed: None,
            gpgsm,
            keybox_changed: Vec::new(),
        }
    }

    #[test]
    fn draws_every_series_with_labels() {
        let g = Some(GpgsmRow { events: 1200, time_s: 2.0 });
        let rows = vec![row("0", 8192, 1000, 1.0, g), row("64", 65536, 130, 0.5, None), row("0B", 0, 9000, 3.0, None)];
        let svg = String::from_utf8(svg(&rows, "tiny.kbx — validate").unwrap()).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.trim_end().ends_with("</svg>"));
        for text in ["tiny.kbx — validate", "file events", "wall time (median)", "kbxscope", "gpgsm (strace)"] {
            assert!(svg.contains(text), "missing {text}");
        }
        assert!(svg.contains("1 unbuffered size(s) not drawn"));
        assert!(!svg.contains("seed (procmon)"));
        // Two panels × (kbxscope 2 points + gpgsm 1 point) circles.
        assert_eq!(svg.matches("<circle").count(), 6);
    }

    #[test]
    fn unbuffered_only_is_an_error() {
        assert!(svg(&[row("0B", 0, 10, 1.0, None)], "t").unwrap_err().contains("unbuffered"));
    }

    #[test]
    fn numbers_read_plainly() {
        assert_eq!(number(4_900_000.0), "4.9M");
        assert_eq!(number(88_000.0), "88k");
        assert_eq!(number(0.25), "0.25");
    }
}
