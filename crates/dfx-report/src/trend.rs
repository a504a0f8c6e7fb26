//! The trend chart of the history report: one metric of one trial over the stored runs
//! (x = each run's label, a date, oldest first), the threshold in force as a shaded band
//! on the bad side, change points as vertical dashed lines, runs without a clean value
//! marked apart on the x axis (red: failed, grey: interrupted or not measured), a failed
//! trial's value ringed in red, and a tooltip (`<title>`) per run.

use plotters::prelude::*;

use crate::chart::{bounds, tag_svg};
use crate::{ReportError, fmt};

const W: u32 = 620;
const H: u32 = 300;
const LINE: RGBColor = RGBColor(0, 114, 178);
const BAD: RGBColor = RGBColor(200, 20, 20);
const GOOD: RGBColor = RGBColor(0, 140, 70);
const EXPLAINED: RGBColor = RGBColor(213, 140, 0);
const GREY: RGBColor = RGBColor(150, 150, 150);

/// Why a run has no value in the chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrendGap {
    /// The trial failed, its numbers are not clean, or the whole run failed.
    Failed,
    /// Interrupted, ignored or not measured.
    Other,
}

/// What a change point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrendChange {
    /// A change toward worse (drawn red).
    Regression,
    /// A change toward better (drawn green).
    Improvement,
    /// Explained by audio length: not a regression.
    Explained,
}

/// One run of the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendRun {
    /// The clean value, or why there is none.
    pub value: Result<f64, TrendGap>,
    /// The threshold in force in that run, if any.
    pub threshold: Option<f64>,
    /// Its x-axis label (the history report: the start date, `12-06`).
    pub label: String,
    /// Its tooltip (date, run id, versions, value, failure class).
    pub tip: String,
    /// The trial failed with a value (a breach): the point is ringed in red.
    pub failed: bool,
}

/// A metric over runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendChart {
    /// Stable identifier (`data-chart`).
    pub id: String,
    /// Caption above the chart (the history report uses `<trial> <metric>`).
    pub title: String,
    /// Label of the y axis: the metric's unit (`ms`, `s`, `RTF`, …).
    pub y_label: String,
    /// Label of the x axis (what the run labels are: `run start (UTC), oldest first`).
    pub x_label: String,
    /// Whether lower values are better (the band is shaded above the threshold).
    pub lower_is_better: bool,
    /// One per stored run, oldest first.
    pub runs: Vec<TrendRun>,
    /// `(index of the first run after the change, kind)`.
    pub changes: Vec<(usize, TrendChange)>,
}

/// Draws a trend chart as an SVG element.
pub fn trend_chart_svg(c: &TrendChart) -> Result<String, ReportError> {
    let err = |e: &dyn std::fmt::Display| ReportError::Chart {
        chart: c.id.clone(),
        problem: e.to_string(),
    };
    let ys: Vec<f64> = c
        .runs
        .iter()
        .flat_map(|r| r.value.iter().copied().chain(r.threshold))
        .filter(|y| y.is_finite())
        .collect();
    if ys.is_empty() {
        return Err(err(&"no finite values to draw"));
    }
    let (lo, hi) = bounds(&ys);
    let pad = ((hi - lo) * 0.15).max(hi.abs() * 0.05).max(1e-9);
    let ymin = if lo >= 0.0 {
        (lo - pad).max(0.0)
    } else {
        lo - pad
    };
    let ymax = hi + pad;
    let n = c.runs.len();
    let (xmin, xmax) = (0.5, n as f64 + 0.5);
    let mut buf = String::new();
    let tips;
    {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(62)
            .build_cartesian_2d(xmin..xmax, ymin..ymax)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(c.x_label.as_str())
            .y_desc(c.y_label.as_str())
            .x_labels(0)
            .y_label_formatter(&|y| fmt::tick(*y))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| err(&e))?;
        draw(&mut chart, c, (ymin, ymax)).map_err(|e| err(&e))?;
        tips = tip_marks(&chart, c, ymin + (ymax - ymin) * 0.04) + &x_labels(&chart, c, ymin);
        root.present().map_err(|e| err(&e))?;
    }
    if let Some(end) = buf.rfind("</svg>") {
        buf.insert_str(end, &tips);
    }
    Ok(tag_svg(buf, &c.id, &c.title))
}

/// The runs' labels under the x axis, every `step`-th run so that they never overlap
/// (about 6.5 px per character at 11 px, plus a gap).
fn x_labels(chart: &Chart<'_, '_>, c: &TrendChart, ymin: f64) -> String {
    let n = c.runs.len();
    let (left, _) = chart.backend_coord(&(0.5, ymin));
    let (right, _) = chart.backend_coord(&(n as f64 + 0.5, ymin));
    let longest = c
        .runs
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(1);
    let each = (longest as i32 * 13 / 2 + 10).max(20);
    let fit = ((right - left).max(each) / each) as usize;
    let step = n.div_ceil(fit.max(1)).max(1);
    let mut out = String::from(
        "<g class=\"x-labels\" font-family=\"sans-serif\" font-size=\"11\" text-anchor=\"middle\">",
    );
    for (i, r) in c.runs.iter().enumerate().filter(|(i, _)| i % step == 0) {
        let (px, py) = chart.backend_coord(&(i as f64 + 1.0, ymin));
        out.push_str(&format!(
            "<text x=\"{px}\" y=\"{}\">{}</text>",
            py + 14,
            fmt::html(&r.label)
        ));
    }
    out.push_str("</g>");
    out
}

/// A transparent hover target with the run's tooltip at each run's point (or its gap
/// mark), after the drawing so it is on top.
fn tip_marks(chart: &Chart<'_, '_>, c: &TrendChart, base: f64) -> String {
    let mut out = String::from("<g class=\"tips\">");
    for (i, r) in c.runs.iter().enumerate() {
        let y = r.value.as_ref().copied().unwrap_or(base);
        let (px, py) = chart.backend_coord(&(i as f64 + 1.0, y));
        out.push_str(&format!(
            "<circle class=\"tip\" data-run=\"{}\" cx=\"{px}\" cy=\"{py}\" r=\"8\" fill=\"transparent\" pointer-events=\"all\"><title>{}</title></circle>",
            i + 1,
            fmt::html(&r.tip)
        ));
    }
    out.push_str("</g>");
    out
}

type F64Coord = plotters::coord::types::RangedCoordf64;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<F64Coord, F64Coord>>;

fn draw(
    chart: &mut Chart<'_, '_>,
    c: &TrendChart,
    (ymin, ymax): (f64, f64),
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let x = |i: usize| i as f64 + 1.0;
    chart.draw_series(c.runs.iter().enumerate().filter_map(|(i, r)| {
        let t = r.threshold?;
        let (a, b) = if c.lower_is_better {
            (t, ymax)
        } else {
            (ymin, t)
        };
        Some(Rectangle::new(
            [(x(i) - 0.5, a), (x(i) + 0.5, b)],
            BAD.mix(0.10).filled(),
        ))
    }))?;
    for (i, kind) in &c.changes {
        let color = match kind {
            TrendChange::Regression => BAD,
            TrendChange::Improvement => GOOD,
            TrendChange::Explained => EXPLAINED,
        };
        let at = x(*i) - 0.5;
        chart.draw_series(DashedLineSeries::new(
            [(at, ymin), (at, ymax)],
            5,
            4,
            color.stroke_width(2),
        ))?;
    }
    // The line breaks at runs without a value.
    let mut segment: Vec<(f64, f64)> = Vec::new();
    let mut segments = Vec::new();
    for (i, r) in c.runs.iter().enumerate() {
        match r.value {
            Ok(v) => segment.push((x(i), v)),
            Err(_) => segments.push(std::mem::take(&mut segment)),
        }
    }
    segments.push(segment);
    for s in segments.into_iter().filter(|s| s.len() > 1) {
        chart.draw_series(LineSeries::new(s, LINE.stroke_width(2)))?;
    }
    chart.draw_series(c.runs.iter().enumerate().filter_map(|(i, r)| {
        r.value
            .ok()
            .map(|v| Circle::new((x(i), v), 3, LINE.filled()))
    }))?;
    chart.draw_series(c.runs.iter().enumerate().filter_map(|(i, r)| {
        let v = r.value.ok().filter(|_| r.failed)?;
        Some(Circle::new((x(i), v), 6, BAD.stroke_width(2)))
    }))?;
    let base = ymin + (ymax - ymin) * 0.04;
    chart.draw_series(c.runs.iter().enumerate().filter_map(|(i, r)| {
        let color = match r.value {
            Err(TrendGap::Failed) => BAD,
            Err(TrendGap::Other) => GREY,
            Ok(_) => return None,
        };
        Some(Cross::new((x(i), base), 5, color.stroke_width(2)))
    }))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_has_its_band_change_line_and_gap_marks() {
        let run = |v: Result<f64, TrendGap>| TrendRun {
            value: v,
            threshold: Some(130.0),
            label: "12-06".into(),
            tip: "2026-12-06 <run>".into(),
            failed: v.is_ok_and(|x| x > 130.0),
        };
        let c = TrendChart {
            id: "t::e2el".into(),
            title: "t median_e2el_ms".into(),
            y_label: "ms".into(),
            x_label: "run start (UTC)".into(),
            lower_is_better: true,
            runs: vec![
                run(Ok(100.0)),
                run(Ok(101.0)),
                run(Err(TrendGap::Failed)),
                run(Ok(131.0)),
                run(Err(TrendGap::Other)),
                run(Ok(130.0)),
            ],
            changes: vec![(3, TrendChange::Regression)],
        };
        let svg = trend_chart_svg(&c).unwrap();
        assert!(svg.contains("data-chart=\"t::e2el\""));
        // One point per value, one red ring for the failed value, a tooltip per run.
        assert_eq!(svg.matches("<circle").count(), 4 + 1 + 6, "{svg}");
        assert_eq!(
            svg.matches("<title>2026-12-06 &lt;run&gt;</title>").count(),
            6
        );
        assert!(svg.contains(">12-06<"), "the x labels are the runs' labels");
        // Two crosses (failed in red, other in grey) of two lines each.
        assert!(svg.contains("#C81414") || svg.to_uppercase().contains("#C81414"));
        assert!(svg.to_uppercase().contains("#969696"));
        let empty = TrendChart {
            runs: vec![TrendRun {
                value: Err(TrendGap::Failed),
                threshold: None,
                label: String::new(),
                tip: String::new(),
                failed: true,
            }],
            ..c
        };
        assert!(trend_chart_svg(&empty).is_err());
    }
}
