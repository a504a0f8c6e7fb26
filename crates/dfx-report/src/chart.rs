//! SVG charts drawn with plotters' SVG backend: metric-vs-load line charts (with
//! thresholds) for run reports and change bars for comparisons. The output is a
//! standalone `<svg>` element meant to be inlined into HTML (no fonts or scripts are
//! referenced; text uses the generic `sans-serif` family).

use plotters::prelude::*;

use crate::{ReportError, fmt};

const W: u32 = 560;
const H: u32 = 340;

/// Series colours (colour-blind friendly Okabe–Ito palette).
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(120, 120, 120),
];
const BAD: RGBColor = RGBColor(200, 20, 20);
const GOOD: RGBColor = RGBColor(0, 140, 70);
const NEUTRAL: RGBColor = RGBColor(150, 150, 150);

/// One measured point; `bad` marks a breached or failed step (drawn in red).
#[derive(Debug, Clone, PartialEq)]
pub struct LinePoint {
    pub x: f64,
    pub y: f64,
    pub bad: bool,
}

/// One line: a benchmark entry's steps, and its thresholds at those steps.
#[derive(Debug, Clone, PartialEq)]
pub struct LineSeries {
    pub label: String,
    pub points: Vec<LinePoint>,
    /// `(x, threshold)` per step that has one; drawn dashed with crosses.
    pub thresholds: Vec<(f64, f64)>,
}

/// A metric against load (concurrency or request rate, log scale).
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Stable identifier, used in the `data-chart` attribute and error messages.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<LineSeries>,
}

/// The colour of the `i`-th series of a line chart, as CSS (`#0072B2`): the page draws
/// the legend with it, below the plot, where it cannot cover a point.
pub(crate) fn series_color(i: usize) -> String {
    let RGBColor(r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02X}{g:02X}{b:02X}")
}

/// Draws a line chart as an SVG element (without legend: see [`series_color`]).
pub(crate) fn line_chart_svg(c: &LineChart) -> Result<String, ReportError> {
    let err = |e: &dyn std::fmt::Display| ReportError::Chart {
        chart: c.id.clone(),
        problem: e.to_string(),
    };
    let xs: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.x)
                .chain(s.thresholds.iter().map(|t| t.0))
        })
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let ys: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.y)
                .chain(s.thresholds.iter().map(|t| t.1))
        })
        .filter(|y| y.is_finite())
        .collect();
    if xs.is_empty() || ys.is_empty() {
        return Err(err(&"no finite points to draw"));
    }
    // Load steps are mostly powers of two: plot on log2(x) so the axis ticks land on
    // 1, 2, 4, 8, … and label them with the real value.
    let (lmin, lmax) = bounds(&xs.iter().map(|x| x.log2()).collect::<Vec<_>>());
    let (xmin, xmax) = (lmin.floor() - 0.4, lmax.ceil() + 0.4);
    let ticks = (xmax - xmin).ceil() as usize + 1;
    let ymax = bounds(&ys).1.max(0.0);
    let ymax = if ymax == 0.0 { 1.0 } else { ymax * 1.15 };
    let ymin = bounds(&ys).0.min(0.0);

    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(38)
            .y_label_area_size(62)
            .build_cartesian_2d(xmin..xmax, ymin..ymax)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(c.x_label.as_str())
            .y_desc(c.y_label.as_str())
            .x_labels(ticks)
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-9 {
                    fmt::num(v.round().exp2())
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| fmt::tick(*y))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| err(&e))?;
        for (i, s) in c.series.iter().enumerate() {
            draw_series(&mut chart, s, PALETTE[i % PALETTE.len()]).map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(tag_svg(buf, &c.id, &c.title))
}

type F64Coord = plotters::coord::types::RangedCoordf64;

fn draw_series(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<F64Coord, F64Coord>>,
    s: &LineSeries,
    color: RGBColor,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.x.log2(), p.y)).collect();
    chart.draw_series(plotters::series::LineSeries::new(
        pts,
        color.stroke_width(2),
    ))?;
    chart.draw_series(s.points.iter().map(|p| {
        let style = if p.bad { BAD.filled() } else { color.filled() };
        Circle::new((p.x.log2(), p.y), 4, style)
    }))?;
    if !s.thresholds.is_empty() {
        chart.draw_series(DashedLineSeries::new(
            s.thresholds.iter().map(|&(x, y)| (x.log2(), y)),
            6,
            4,
            color.stroke_width(1),
        ))?;
        chart.draw_series(
            s.thresholds
                .iter()
                .map(|&(x, y)| Cross::new((x.log2(), y), 5, color.stroke_width(2))),
        )?;
    }
    Ok(())
}

/// One bar of a change chart: the relative change toward "worse" (positive = worse)
/// with the range the repeats allow.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChangeBar {
    pub label: String,
    pub change: f64,
    /// `(low, high)` of the change across repeats, when there are repeats.
    pub range: Option<(f64, f64)>,
    pub kind: BarKind,
}

/// How a change bar is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarKind {
    Worse,
    Better,
    Unchanged,
    Unconfirmed,
}

/// Horizontal bars of relative change (percent, positive = worse), one per label, with
/// the ±tolerance band drawn as dashed lines.
pub(crate) fn change_chart_svg(
    id: &str,
    title: &str,
    bars: &[ChangeBar],
    tolerance: f64,
) -> Result<String, ReportError> {
    let err = |e: &dyn std::fmt::Display| ReportError::Chart {
        chart: id.to_string(),
        problem: e.to_string(),
    };
    if bars.is_empty() {
        return Err(err(&"no bars to draw"));
    }
    let vals: Vec<f64> = bars
        .iter()
        .flat_map(|b| {
            let (lo, hi) = b.range.unwrap_or((b.change, b.change));
            [b.change, lo, hi]
        })
        .filter(|v| v.is_finite())
        .map(|v| v * 100.0)
        .chain([tolerance * 100.0 * 2.0, -tolerance * 100.0 * 2.0])
        .collect();
    let lim = vals.iter().fold(1.0f64, |m, v| m.max(v.abs())) * 1.1;
    let n = bars.len();
    let height = (60 + 26 * n as u32).max(160);
    let label_width = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(10);
    let label_area = (label_width as u32 * 6 + 16).clamp(80, 360);

    let mut buf = String::new();
    {
        let root =
            SVGBackend::with_string(&mut buf, (label_area + 460, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(label_area)
            .build_cartesian_2d(-lim..lim, (0..n - 1).into_segmented())
            .map_err(|e| err(&e))?;
        let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("change, % (positive = worse)")
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(n - 1 - *i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_formatter(&|x| format!("{x:+.0}"))
            .draw()
            .map_err(|e| err(&e))?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let color = match b.kind {
                    BarKind::Worse => BAD,
                    BarKind::Better => GOOD,
                    BarKind::Unchanged => NEUTRAL,
                    BarKind::Unconfirmed => PALETTE[1],
                };
                let v = if b.change.is_finite() {
                    b.change * 100.0
                } else {
                    0.0
                };
                let row = n - 1 - i;
                let mut bar = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(row)),
                        (v, SegmentValue::Exact(row + 1)),
                    ],
                    color.mix(0.75).filled(),
                );
                bar.set_margin(4, 4, 0, 0);
                bar
            }))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                let (lo, hi) = b.range?;
                Some(PathElement::new(
                    vec![
                        (lo * 100.0, SegmentValue::CenterOf(n - 1 - i)),
                        (hi * 100.0, SegmentValue::CenterOf(n - 1 - i)),
                    ],
                    BLACK.stroke_width(2),
                ))
            }))
            .map_err(|e| err(&e))?;
        for t in [tolerance * 100.0, -tolerance * 100.0] {
            chart
                .draw_series(DashedLineSeries::new(
                    [(t, SegmentValue::Exact(0)), (t, SegmentValue::Last)],
                    5,
                    4,
                    RGBColor(90, 90, 90).stroke_width(1),
                ))
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(tag_svg(buf, id, title))
}

/// Adds `class`, `data-chart`, `role` and `aria-label` to the root `<svg>` element.
pub(crate) fn tag_svg(svg: String, id: &str, title: &str) -> String {
    let attrs = format!(
        "<svg class=\"chart\" data-chart=\"{}\" role=\"img\" aria-label=\"{}\" ",
        fmt::html(id),
        fmt::html(title)
    );
    match svg.find("<svg ") {
        Some(i) => format!("{}{}{}", &svg[..i], attrs, &svg[i + 5..]),
        None => svg,
    }
}

pub(crate) fn bounds(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_chart_has_lines_points_and_threshold_marks() {
        let c = LineChart {
            id: "t::ttfp::concurrency".into(),
            title: "TTFP <median>".into(),
            x_label: "max concurrency".into(),
            y_label: "ms".into(),
            series: vec![LineSeries {
                label: "throughput".into(),
                points: vec![
                    LinePoint {
                        x: 8.0,
                        y: 220.0,
                        bad: false,
                    },
                    LinePoint {
                        x: 16.0,
                        y: 700.0,
                        bad: true,
                    },
                ],
                thresholds: vec![(8.0, 226.7), (16.0, 647.1)],
            }],
        };
        let svg = line_chart_svg(&c).unwrap();
        assert!(svg.starts_with("<svg class=\"chart\" data-chart=\"t::ttfp::concurrency\""));
        assert!(svg.contains("<polyline"), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("TTFP &lt;median&gt;"));
        // the legend is the page's, below the chart: none inside the plot
        assert!(!svg.contains("throughput threshold"), "{svg}");
        assert_eq!(series_color(0), "#0072B2");
    }

    #[test]
    fn change_chart_draws_one_bar_per_item() {
        let bars = vec![
            ChangeBar {
                label: "a::c1".into(),
                change: 0.12,
                range: Some((0.08, 0.16)),
                kind: BarKind::Worse,
            },
            ChangeBar {
                label: "a::c8".into(),
                change: -0.01,
                range: None,
                kind: BarKind::Unconfirmed,
            },
        ];
        let svg = change_chart_svg("cmp", "ttfp", &bars, 0.05).unwrap();
        assert!(svg.contains("a::c1") && svg.contains("a::c8"));
        assert!(svg.matches("<rect").count() >= 3, "{svg}");
    }
}
