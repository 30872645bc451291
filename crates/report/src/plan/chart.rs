//! Two chart shapes the shared SVG kit (`html::svg`) lacks, drawn with its
//! palette, number format and scale: seed 001's *paired bars* (a task's
//! high average beside its standard deviation, Figures 3-2 to 3-7) and a
//! line chart over a user-count axis (the kit's timeline has a time axis).
//! They belong in the kit once the chart engines are merged.

use std::fmt::Write as _;

use crate::html::escape;
use crate::html::svg::{PALETTE, nice_ceiling, short, x_grid};

const WIDTH: f64 = 960.0;
const TOP: f64 = 40.0;
const RIGHT: f64 = 16.0;

fn open(out: &mut String, id: &str, height: f64, title: &str, unit: &str, x: f64) {
    let _ = write!(
        out,
        r#"<svg id="{id}" class="chart" role="img" viewBox="0 0 {WIDTH} {height}" width="100%" preserveAspectRatio="xMidYMid meet"><title>{}</title><text class="ctitle" x="{x}" y="16">{} <tspan class="unit">({})</tspan></text>"#,
        escape(title),
        escape(title),
        escape(unit)
    );
}

fn legend(out: &mut String, items: &[(&str, &str)], x0: f64, y: f64) {
    let mut x = x0;
    for (label, colour) in items {
        let _ = write!(
            out,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{y:.1}">{}</text>"#,
            y - 9.0,
            x + 14.0,
            escape(label)
        );
        x += 24.0 + 6.5 * label.chars().count() as f64;
    }
}

/// One group of seed 001's paired bars.
pub(crate) struct Pair {
    pub(crate) label: String,
    pub(crate) high_average: f64,
    pub(crate) sd: f64,
}

/// Horizontal paired bars: for each row the high average (first colour)
/// and its standard deviation (second colour), on one scale. A tall sd bar
/// means a choppy series, a short one a flat, more stressful plateau.
pub(crate) fn paired_bars(id: &str, title: &str, unit: &str, pairs: &[Pair]) -> String {
    let row = 26.0;
    let label_w = 200.0;
    let note_w = 130.0;
    let plot_w = WIDTH - label_w - note_w - RIGHT;
    let height = TOP + row * pairs.len() as f64 + 24.0;
    let data_max = pairs
        .iter()
        .flat_map(|p| [p.high_average, p.sd])
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let x_max = if data_max > 0.0 {
        nice_ceiling(data_max, data_max)
    } else {
        1.0
    };
    let x = |v: f64| label_w + (v.clamp(0.0, x_max) / x_max) * plot_w;
    let mut s = String::new();
    open(&mut s, id, height, title, unit, 8.0);
    legend(
        &mut s,
        &[
            ("high average", PALETTE[0]),
            ("standard deviation", PALETTE[1]),
        ],
        label_w,
        32.0,
    );
    let bottom = TOP + row * pairs.len() as f64;
    x_grid(&mut s, x_max, x, (TOP, bottom));
    for (i, p) in pairs.iter().enumerate() {
        let y0 = TOP + row * i as f64;
        let _ = write!(
            s,
            r#"<text class="barlabel" x="{:.1}" y="{:.1}">{}</text>"#,
            label_w - 8.0,
            y0 + row * 0.6,
            escape(&p.label)
        );
        for (k, v) in [p.high_average, p.sd].into_iter().enumerate() {
            let _ = write!(
                s,
                r#"<rect class="bar" fill="{}" x="{label_w}" y="{:.1}" width="{:.1}" height="10"><title>{}: {}</title></rect>"#,
                PALETTE[k],
                y0 + 3.0 + 11.0 * k as f64,
                (x(v) - label_w).max(0.0),
                if k == 0 {
                    "high average"
                } else {
                    "standard deviation"
                },
                short(v)
            );
        }
        let _ = write!(
            s,
            r#"<text class="barnote" x="{:.1}" y="{:.1}">{} (sd {})</text>"#,
            WIDTH - note_w - RIGHT + 8.0,
            y0 + row * 0.6,
            short(p.high_average),
            short(p.sd)
        );
    }
    s.push_str("</svg>");
    s
}

/// A line of an [`xy_chart`].
pub(crate) struct XyLine {
    pub(crate) label: String,
    pub(crate) points: Vec<(f64, f64)>,
    /// Mark each point with a dot: measured cells, not a model's straight line.
    pub(crate) dots: bool,
}

/// Lines over a linear x axis from 0, with an optional horizontal reference
/// (e.g. the headroom) and an optional vertical marker (e.g. the users at
/// which the first resource runs out).
pub(crate) fn xy_chart(
    id: &str,
    title: &str,
    unit: &str,
    x_name: &str,
    lines: &[XyLine],
    horizontal: Option<(f64, String)>,
    vertical: Option<(f64, String)>,
) -> String {
    let (left, height, bottom) = (64.0, 300.0, 52.0);
    let plot_w = WIDTH - left - RIGHT;
    let plot_h = height - TOP - bottom;
    let all = lines.iter().flat_map(|l| l.points.iter());
    let x_data = all
        .clone()
        .map(|p| p.0)
        .chain(vertical.as_ref().map(|v| v.0));
    let x_max = nice_ceiling(x_data.filter(|v| v.is_finite()).fold(0.0, f64::max), 1.0);
    let y_data = all.map(|p| p.1).chain(horizontal.as_ref().map(|h| h.0));
    let y_max = nice_ceiling(y_data.filter(|v| v.is_finite()).fold(0.0, f64::max), 1.0);
    let x = |v: f64| left + (v.clamp(0.0, x_max) / x_max) * plot_w;
    let y = |v: f64| TOP + plot_h - (v.clamp(0.0, y_max) / y_max) * plot_h;
    let mut s = String::new();
    open(&mut s, id, height, title, unit, left);
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let _ = write!(
            s,
            r#"<line class="grid" x1="{left}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="ylabel" x="{:.1}" y="{:.1}">{}</text>"#,
            left + plot_w,
            left - 6.0,
            y(v) + 4.0,
            short(v),
            yy = y(v)
        );
        let xv = x_max * f64::from(i) / 4.0;
        let _ = write!(
            s,
            r#"<text class="xlabel" x="{:.1}" y="{:.1}">{}</text>"#,
            x(xv),
            TOP + plot_h + 16.0,
            short(xv)
        );
    }
    let _ = write!(
        s,
        r#"<text class="axisname" x="{:.1}" y="{:.1}">{}</text>"#,
        left + plot_w,
        TOP + plot_h + 30.0,
        escape(x_name)
    );
    if let Some((v, label)) = &horizontal {
        let _ = write!(
            s,
            r#"<line class="reference" x1="{left}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="reflabel" x="{:.1}" y="{:.1}">{}</text>"#,
            left + plot_w,
            left + plot_w - 4.0,
            y(*v) - 4.0,
            escape(label),
            yy = y(*v)
        );
    }
    if let Some((v, label)) = &vertical {
        let _ = write!(
            s,
            r#"<line class="reference" x1="{xx:.1}" x2="{xx:.1}" y1="{TOP}" y2="{:.1}"/><text class="reflabel" x="{:.1}" y="{:.1}">{}</text>"#,
            TOP + plot_h,
            x(*v) - 4.0,
            TOP + 12.0,
            escape(label),
            xx = x(*v)
        );
    }
    for (i, line) in lines.iter().enumerate() {
        let path: Vec<String> = line
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
            .collect();
        let colour = PALETTE[i % PALETTE.len()];
        let _ = write!(
            s,
            r#"<polyline class="series" stroke="{colour}" points="{}"/>"#,
            path.join(" ")
        );
        if line.dots {
            for point in &path {
                let (cx, cy) = point.split_once(',').unwrap_or_default();
                let _ = write!(
                    s,
                    r#"<circle fill="{colour}" cx="{cx}" cy="{cy}" r="3.5"/>"#
                );
            }
        }
    }
    let items: Vec<(&str, &str)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (l.label.as_str(), PALETTE[i % PALETTE.len()]))
        .collect();
    legend(&mut s, &items, left, height - 6.0);
    s.push_str("</svg>");
    s
}
