//! The report's pictures, as inline SVG: error against pipeline depth
//! (plotters, SVG backend), ULP histograms and error heatmaps (hand-written
//! SVG: a few rectangles each). Every user string goes through plotters'
//! own escaping or [`esc`].

use super::esc::esc;
use parity_record::ErrorMap;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;

/// One pipeline depth (one stage, in dependency order) of the depth chart.
pub struct DepthPoint {
    /// The stage's name (x-axis label).
    pub stage: String,
    /// Worst `observed / threshold` over cases and outputs, isolated mode.
    pub isolated: Option<f64>,
    /// The same in chained mode.
    pub chained: Option<f64>,
}

/// Smallest and largest ratio the depth chart draws; values outside are
/// clamped onto its edges (0 is "exact", infinity a zero-threshold miss).
const RATIO_FLOOR: f64 = 1e-6;
const RATIO_CEIL: f64 = 1e6;

/// Error against pipeline depth on a log scale: worst criterion
/// `observed / threshold` per stage (1 is the tolerance, drawn as a line),
/// isolated and chained, with the first divergence marked.
pub fn depth_chart(
    points: &[DepthPoint],
    first_divergence: Option<usize>,
) -> Result<String, String> {
    let clamp = |v: f64| {
        if v.is_nan() {
            RATIO_CEIL
        } else {
            v.clamp(RATIO_FLOOR, RATIO_CEIL)
        }
    };
    let values = points
        .iter()
        .flat_map(|p| [p.isolated, p.chained])
        .flatten()
        .map(clamp);
    let (lo, hi) = values.fold((1.0f64, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = (lo / 3.0, hi * 3.0);
    let n = points.len().max(1);
    let width = (60 + 34 * n).clamp(640, 1400) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 380)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| format!("depth chart: {e}");
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(110)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo..hi).log_scale())
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_labels(n + 1)
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .y_desc("worst criterion: observed / threshold")
            .axis_desc_style(("sans-serif", 15))
            .y_label_style(("sans-serif", 14))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|e| err(&e))?;
        let red = RGBColor(200, 30, 30);
        chart
            .draw_series(LineSeries::new(
                [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
                red.stroke_width(2),
            ))
            .map_err(|e| err(&e))?
            .label("tolerance (ratio 1)")
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], red.stroke_width(2)));
        let series = [
            ("isolated (local error)", RGBColor(31, 119, 180), 0usize),
            ("chained (accumulated)", RGBColor(255, 127, 14), 1usize),
        ];
        for (name, colour, which) in series {
            let pts: Vec<(f64, f64)> = points
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let v = if which == 0 { p.isolated } else { p.chained };
                    v.map(|v| (i as f64, clamp(v)))
                })
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(|e| err(&e))?;
        }
        if let Some(d) = first_divergence {
            let x = d as f64;
            let purple = RGBColor(120, 40, 160);
            chart
                .draw_series(LineSeries::new([(x, lo), (x, hi)], purple.stroke_width(2)))
                .map_err(|e| err(&e))?;
            chart
                .draw_series([Text::new(
                    "first divergence",
                    (x + 0.08, lo * 1.5),
                    ("sans-serif", 15).into_font().color(&purple),
                )])
                .map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK.mix(0.3))
            .background_style(WHITE.mix(0.9))
            .draw()
            .map_err(|e| err(&e))?;
        // Stage names hang below their ticks, rotated; drawn on the root so
        // each starts just under the axis instead of being centred on it.
        let style = ("sans-serif", 14)
            .into_font()
            .transform(FontTransform::Rotate90)
            .into_text_style(&root)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (i, p) in points.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64, lo));
            root.draw(&Text::new(
                shorten(&p.stage, 18),
                (px, py + 6),
                style.clone(),
            ))
            .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

/// `s` cut to `max` characters with an ellipsis.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max - 1).collect();
        format!("{head}…")
    }
}

/// A ULP histogram (`[lo, hi, count]` buckets) as bars, empty buckets at
/// either end dropped.
pub fn ulp_histogram(buckets: &[[u64; 3]], title: &str) -> String {
    let first = buckets.iter().position(|b| b[2] > 0);
    let last = buckets.iter().rposition(|b| b[2] > 0);
    let shown = match (first, last) {
        (Some(a), Some(b)) => &buckets[a..=b],
        _ => &[][..],
    };
    let (w, h, pad) = (300.0, 130.0, 20.0);
    let mut svg = format!(
        "<svg class=\"hist\" viewBox=\"0 0 {w} {}\" width=\"{w}\" height=\"{}\" role=\"img\"><title>{}</title>",
        h + 2.0 * pad,
        h + 2.0 * pad,
        esc(title)
    );
    let max = shown.iter().map(|b| b[2]).max().unwrap_or(1).max(1) as f64;
    let bw = (w - 2.0 * pad) / shown.len().max(1) as f64;
    for (i, b) in shown.iter().enumerate() {
        let bh = (h - 10.0) * b[2] as f64 / max;
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"#1f77b4\"><title>{}..{} ULP: {}</title></rect>",
            pad + i as f64 * bw + 0.5,
            pad + h - bh,
            (bw - 1.0).max(0.5),
            b[0],
            b[1],
            b[2]
        );
    }
    if let (Some(a), Some(b)) = (shown.first(), shown.last()) {
        let _ = write!(
            svg,
            "<text x=\"{pad}\" y=\"{}\" font-size=\"11\">{} ULP</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{} ULP</text>",
            h + pad + 14.0,
            a[0],
            w - pad,
            h + pad + 14.0,
            b[1]
        );
    }
    svg.push_str("</svg>");
    svg
}

/// An [`ErrorMap`] as a heatmap: colour is log10 of the cell's max |error|,
/// padded cells hatched grey (partly padded ones faintly), cells with NaN/Inf errors magenta.
pub fn heatmap(map: &ErrorMap, id: usize) -> String {
    let [rows, cols] = map.cells;
    let cell = (600 / cols.max(1)).clamp(4, 28) as f64;
    let cell_h = if rows == 1 { 28.0 } else { cell };
    let (w, h) = (cols as f64 * cell, rows as f64 * cell_h);
    let finite: Vec<f64> = map
        .max_abs
        .iter()
        .flatten()
        .copied()
        .filter(|v| *v > 0.0)
        .collect();
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(0.0f64, f64::max);
    let (llo, lhi) = (lo.log10(), hi.log10());
    let mut svg = format!(
        "<svg class=\"heat\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\">\
         <defs><pattern id=\"pad{id}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">\
         <rect width=\"6\" height=\"6\" fill=\"#ddd\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#999\" stroke-width=\"2\"/></pattern></defs>"
    );
    for r in 0..rows {
        for c in 0..cols {
            let i = r * cols + c;
            let padded = map.padded.get(i).copied().unwrap_or(0.0);
            let (fill, what) = if map.nonfinite.get(i).copied().unwrap_or(0) > 0 {
                (
                    "#e0f".to_string(),
                    format!("{} NaN/Inf mismatches", map.nonfinite[i]),
                )
            } else {
                match map.max_abs.get(i).copied().flatten() {
                    Some(v) if v > 0.0 => {
                        let t = if lhi > llo {
                            (v.log10() - llo) / (lhi - llo)
                        } else {
                            1.0
                        };
                        (colour(t), format!("max |err| {v:.3e}"))
                    }
                    Some(_) => ("#f7f7f7".to_string(), "exact".to_string()),
                    None => ("#fff".to_string(), "nothing compared".to_string()),
                }
            };
            let (x, y) = (c as f64 * cell, r as f64 * cell_h);
            let what = if padded > 0.0 {
                format!("{what}; {:.0}% padded", padded * 100.0)
            } else {
                what
            };
            let _ = write!(
                svg,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{cell}\" height=\"{cell_h}\" fill=\"{fill}\"><title>cell {r},{c}: {what}</title></rect>"
            );
            // Padding hatched over the error colour; fully padded cells opaque.
            if padded > 0.0 {
                let _ = write!(
                    svg,
                    "<rect x=\"{x}\" y=\"{y}\" width=\"{cell}\" height=\"{cell_h}\" fill=\"url(#pad{id})\" opacity=\"{:.2}\" pointer-events=\"none\"/>",
                    if padded >= 1.0 { 1.0 } else { 0.3 + 0.5 * padded }
                );
            }
        }
    }
    svg.push_str("</svg>");
    svg
}

/// A perceptual ramp from dark blue (t = 0) through teal to yellow (t = 1).
fn colour(t: f64) -> String {
    let stops = [
        (68.0, 1.0, 84.0),
        (33.0, 145.0, 140.0),
        (253.0, 231.0, 37.0),
    ];
    let t = t.clamp(0.0, 1.0) * 2.0;
    let (a, b, f) = if t <= 1.0 {
        (stops[0], stops[1], t)
    } else {
        (stops[1], stops[2], t - 1.0)
    };
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}
