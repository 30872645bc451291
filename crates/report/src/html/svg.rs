//! The one SVG chart kit of every HTML page (the run report, the
//! comparison and the sweep's capacity page): timelines on a shared time
//! axis with the run's phases shaded, horizontal bars with whiskers, a
//! histogram, and [`XyPlot`], values against a linear axis (throughput and
//! p95 against load) with points, fitted curves and markers.
//!
//! Hand-written rather than `plotters`: the pages need four chart shapes,
//! inline in one HTML file, styled by the shared style sheet
//! ([`super::CSS`]); a few hundred lines of string building do that with
//! no dependency, no font loading and no build cost, and the output is
//! deterministic, which the tests rely on. Numbers are written by
//! [`crate::number`].

use std::fmt::Write as _;

use super::escape;
pub(crate) use crate::number::short;

/// Series colours, colour-blind safe (Okabe–Ito), in order of use.
pub(crate) const PALETTE: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442",
];

/// A shaded span of the time axis (a run phase).
#[derive(Clone, Debug)]
pub(crate) struct Band {
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
    pub(crate) label: &'static str,
    pub(crate) class: &'static str,
}

/// One line of a timeline: `(time_s, value)` points; NaN values break the line.
#[derive(Clone, Debug)]
pub(crate) struct Line {
    pub(crate) label: String,
    pub(crate) points: Vec<(f64, f64)>,
    /// Fill the area under the line.
    pub(crate) area: bool,
}

/// A timeline chart over `[0, end_s]`.
pub(crate) struct Timeline<'a> {
    pub(crate) id: &'a str,
    pub(crate) title: &'a str,
    pub(crate) unit: &'a str,
    pub(crate) end_s: f64,
    pub(crate) bands: &'a [Band],
    pub(crate) lines: Vec<Line>,
    /// A horizontal reference line (e.g. a QoS limit), with its label.
    pub(crate) reference: Option<(f64, String)>,
}

const WIDTH: f64 = 960.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 26.0;

/// `1, 2, 2.5, 5 × 10^k` at or above `v` (at least `floor`).
pub(crate) fn nice_ceiling(v: f64, floor: f64) -> f64 {
    let v = if v.is_finite() { v.max(floor) } else { floor };
    if v <= 0.0 {
        return 1.0;
    }
    let exp = v.log10().floor();
    let base = 10f64.powf(exp);
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * base >= v * (1.0 - 1e-9) {
            return m * base;
        }
    }
    10.0 * base
}

fn open_svg(out: &mut String, id: &str, height: f64, title: &str) {
    let _ = write!(
        out,
        r#"<svg id="{id}" class="chart" role="img" viewBox="0 0 {WIDTH} {height}" width="100%" preserveAspectRatio="xMidYMid meet"><title>{}</title>"#,
        escape(title)
    );
}

impl Timeline<'_> {
    /// The chart as an `<svg>` element.
    pub(crate) fn render(&self) -> String {
        let height = 200.0;
        let bottom = 34.0;
        let plot_h = height - TOP - bottom;
        let plot_w = WIDTH - LEFT - RIGHT;
        let end = if self.end_s > 0.0 { self.end_s } else { 1.0 };
        let data_max = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .filter(|v| v.is_finite())
            .chain(self.reference.as_ref().map(|r| r.0))
            .fold(0.0, f64::max);
        let y_max = if data_max > 0.0 {
            nice_ceiling(data_max, data_max)
        } else {
            1.0
        };
        let x = |t: f64| LEFT + (t.clamp(0.0, end) / end) * plot_w;
        let y = |v: f64| TOP + plot_h - (v.clamp(0.0, y_max) / y_max) * plot_h;

        let mut s = String::new();
        open_svg(&mut s, self.id, height, self.title);
        chart_title(&mut s, LEFT, self.title, self.unit);
        draw_bands(&mut s, self.bands, x, LEFT + plot_w, plot_h);
        y_grid(&mut s, y_max, y, LEFT + plot_w);
        // Time ticks.
        let step = nice_ceiling(end / 8.0, 1.0);
        let mut t = 0.0;
        while t <= end + 1e-9 {
            let xx = x(t);
            let _ = write!(
                s,
                r#"<line class="tick" x1="{xx:.1}" x2="{xx:.1}" y1="{:.1}" y2="{:.1}"/><text class="xlabel" x="{xx:.1}" y="{:.1}">{}</text>"#,
                TOP + plot_h,
                TOP + plot_h + 4.0,
                TOP + plot_h + 16.0,
                clock(t)
            );
            t += step;
        }
        let _ = write!(
            s,
            r#"<text class="axisname" x="{:.1}" y="{:.1}">time since start</text>"#,
            LEFT + plot_w,
            height - 4.0
        );
        if let Some((v, label)) = &self.reference {
            let yy = y(*v);
            let _ = write!(
                s,
                r#"<line class="reference" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="reflabel" x="{:.1}" y="{:.1}">{}</text>"#,
                LEFT + plot_w,
                LEFT + plot_w - 4.0,
                yy - 4.0,
                escape(label)
            );
        }
        for (i, line) in self.lines.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            for segment in segments(&line.points) {
                let path = segment
                    .iter()
                    .map(|(t, v)| format!("{:.1},{:.1}", x(*t), y(*v)))
                    .collect::<Vec<_>>()
                    .join(" ");
                if line.area && segment.len() > 1 {
                    let (first, last) = (segment[0].0, segment[segment.len() - 1].0);
                    let _ = write!(
                        s,
                        r#"<polygon class="area" fill="{colour}" points="{:.1},{:.1} {path} {:.1},{:.1}"/>"#,
                        x(first),
                        y(0.0),
                        x(last),
                        y(0.0)
                    );
                }
                if segment.len() == 1 {
                    let _ = write!(
                        s,
                        r#"<circle fill="{colour}" cx="{:.1}" cy="{:.1}" r="2.5"/>"#,
                        x(segment[0].0),
                        y(segment[0].1)
                    );
                } else {
                    let _ = write!(
                        s,
                        r#"<polyline class="series" stroke="{colour}" points="{path}"/>"#
                    );
                }
            }
        }
        let swatches = self
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| (l.label.as_str(), PALETTE[i % PALETTE.len()]));
        legend(&mut s, swatches, LEFT, height);
        s.push_str("</svg>");
        s
    }
}

/// The phases as shaded bands across the plot, each with its name. A phase
/// too short to see (a drain that reconciled at once) still gets a band wide
/// enough to see and its name, so every phase shows.
fn draw_bands(s: &mut String, bands: &[Band], x: impl Fn(f64) -> f64, right: f64, plot_h: f64) {
    for band in bands {
        let (mut x0, mut x1) = (x(band.start_s), x(band.end_s));
        if x1 - x0 < 6.0 {
            // Widened inside the plot: a drain at the end grows to its left.
            x1 = (x0 + 6.0).min(right);
            x0 = x1 - 6.0;
        }
        let _ = write!(
            s,
            r#"<rect class="band {}" x="{x0:.1}" y="{TOP}" width="{:.1}" height="{plot_h}"/>"#,
            band.class,
            x1 - x0,
        );
        // A narrow band's label ends at its right edge, over the phase before it.
        let (label_x, anchor) = if x1 - x0 >= 30.0 {
            (x0 + 3.0, "start")
        } else {
            (x1 - 2.0, "end")
        };
        let _ = write!(
            s,
            r#"<text class="bandlabel" x="{label_x:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
            TOP + 11.0,
            band.label
        );
    }
}

/// Horizontal grid lines with their labels at 0, ¼, ½, ¾ and all of
/// `y_max`, from the left margin to `right`.
fn y_grid(s: &mut String, y_max: f64, y: impl Fn(f64) -> f64, right: f64) {
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let yy = y(v);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{LEFT}" x2="{right:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="ylabel" x="{:.1}" y="{:.1}">{}</text>"#,
            LEFT - 6.0,
            yy + 4.0,
            short(v)
        );
    }
}

/// Vertical grid lines of a bar chart with their labels at 0, ¼, ½, ¾ and
/// all of `x_max`, from `top` down to `bottom`.
pub(crate) fn x_grid(
    s: &mut String,
    x_max: f64,
    x: impl Fn(f64) -> f64,
    (top, bottom): (f64, f64),
) {
    for i in 0..=4 {
        let v = x_max * f64::from(i) / 4.0;
        let xx = x(v);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{xx:.1}" x2="{xx:.1}" y1="{top}" y2="{bottom:.1}"/><text class="xlabel" x="{xx:.1}" y="{:.1}">{}</text>"#,
            bottom + 14.0,
            short(v)
        );
    }
}

/// A chart title with its unit.
fn chart_title(s: &mut String, x: f64, title: &str, unit: &str) {
    let _ = write!(
        s,
        r#"<text class="ctitle" x="{x}" y="16">{} <tspan class="unit">({})</tspan></text>"#,
        escape(title),
        escape(unit)
    );
}

/// A round value at or above `v` (1 for nothing to show).
fn round_up(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 {
        nice_ceiling(v, v)
    } else {
        1.0
    }
}

/// The end and the tick step of a linear axis from 0 that shows
/// `largest`: about five ticks of a round step, just past it.
pub(crate) fn linear_axis(largest: f64) -> (f64, f64) {
    let step = round_up(largest * 1.05 / 5.0);
    ((largest * 1.05 / step).ceil().max(1.0) * step, step)
}

/// The colour of values over a limit (the style sheet's `--fail`).
pub(crate) const OVER_LIMIT: &str = "#cf222e";

/// Values against a linear x axis from 0 (throughput or p95 against load):
/// the frame is drawn by [`XyPlot::new`], then lines, points and markers in
/// data coordinates, then [`XyPlot::finish`] adds the legend.
pub(crate) struct XyPlot {
    svg: String,
    x_max: f64,
    y_max: f64,
}

/// The height of an [`XyPlot`].
const XY_HEIGHT: f64 = 300.0;
/// Below an [`XyPlot`]'s plot area: tick labels, axis name, legend.
const XY_BOTTOM: f64 = 58.0;

impl XyPlot {
    /// A chart of `title` (values in `unit`) against `x_name`, with round
    /// axes just past `x_largest` and `y_largest`.
    pub(crate) fn new(
        id: &str,
        title: &str,
        unit: &str,
        x_name: &str,
        x_largest: f64,
        y_largest: f64,
    ) -> Self {
        let (x_max, x_step) = linear_axis(x_largest);
        let y_max = round_up(y_largest * 1.05);
        let mut plot = Self {
            svg: String::new(),
            x_max,
            y_max,
        };
        let mut svg = String::new();
        open_svg(&mut svg, id, XY_HEIGHT, title);
        chart_title(&mut svg, LEFT, title, unit);
        let right = WIDTH - RIGHT;
        y_grid(&mut svg, y_max, |v| plot.y(v), right);
        let bottom = XY_HEIGHT - XY_BOTTOM;
        let ticks = (x_max / x_step).round() as u32;
        for i in 0..=ticks {
            let v = x_step * f64::from(i);
            let xx = plot.x(v);
            let _ = write!(
                svg,
                r#"<line class="tick" x1="{xx:.1}" x2="{xx:.1}" y1="{bottom:.1}" y2="{:.1}"/><text class="xlabel" x="{xx:.1}" y="{:.1}">{}</text>"#,
                bottom + 4.0,
                bottom + 16.0,
                short(v)
            );
        }
        let _ = write!(
            svg,
            r#"<line class="tick" x1="{LEFT}" x2="{right:.1}" y1="{bottom:.1}" y2="{bottom:.1}"/><text class="axisname" x="{right:.1}" y="{:.1}">{}</text>"#,
            bottom + 30.0,
            escape(x_name)
        );
        plot.svg = svg;
        plot
    }

    fn x(&self, v: f64) -> f64 {
        LEFT + v.clamp(0.0, self.x_max) / self.x_max * (WIDTH - LEFT - RIGHT)
    }

    fn y(&self, v: f64) -> f64 {
        let plot_h = XY_HEIGHT - TOP - XY_BOTTOM;
        TOP + plot_h - v.clamp(0.0, self.y_max) / self.y_max * plot_h
    }

    /// A line through `points`, dashed for a fitted curve.
    pub(crate) fn line(&mut self, points: &[(f64, f64)], colour: &str, dashed: bool) {
        if points.len() < 2 {
            return;
        }
        let path: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", self.x(x), self.y(y)))
            .collect();
        let _ = write!(
            self.svg,
            r#"<polyline class="series{}" stroke="{colour}" points="{}"/>"#,
            if dashed { " fit" } else { "" },
            path.join(" ")
        );
    }

    /// A measured point, with `tip` shown on hover.
    pub(crate) fn point(&mut self, x: f64, y: f64, colour: &str, tip: &str) {
        let _ = write!(
            self.svg,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"><title>{}</title></circle>"#,
            self.x(x),
            self.y(y),
            escape(tip)
        );
    }

    /// A ring around one point, labelled above it (the peak).
    pub(crate) fn ring(&mut self, id: &str, x: f64, y: f64, colour: &str, label: &str) {
        let (cx, cy) = (self.x(x), self.y(y));
        let _ = write!(
            self.svg,
            r#"<circle id="{id}" class="ring" cx="{cx:.1}" cy="{cy:.1}" r="7" stroke="{colour}"/><text class="mark" x="{cx:.1}" y="{:.1}" style="fill:{colour}">{}</text>"#,
            (cy - 12.0).max(TOP + 10.0),
            escape(label)
        );
    }

    /// A triangle under one point, labelled below it (the knee).
    pub(crate) fn pointer(&mut self, id: &str, x: f64, y: f64, colour: &str, label: &str) {
        let (kx, ky) = (self.x(x), self.y(y));
        let _ = write!(
            self.svg,
            r#"<path id="{id}" d="M{kx:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{colour}"/><text x="{:.1}" y="{:.1}" style="fill:{colour}">{}</text>"#,
            ky + 6.0,
            kx - 6.0,
            ky + 16.0,
            kx + 6.0,
            ky + 16.0,
            kx + 8.0,
            ky + 28.0,
            escape(label)
        );
    }

    /// A dotted vertical line at `x` (a capacity), labelled at the top or
    /// the bottom of the plot.
    pub(crate) fn vertical(&mut self, x: f64, label: &str, label_at_top: bool) {
        let xx = self.x(x);
        let bottom = XY_HEIGHT - XY_BOTTOM;
        let label_y = if label_at_top {
            TOP + 12.0
        } else {
            bottom - 6.0
        };
        let _ = write!(
            self.svg,
            r#"<line class="marker" x1="{xx:.1}" x2="{xx:.1}" y1="{TOP}" y2="{bottom:.1}"/><text class="markerlabel" x="{:.1}" y="{label_y:.1}">{}</text>"#,
            xx + 3.0,
            escape(label)
        );
    }

    /// A lower bound at `x`: a dashed line with an arrow pointing to larger
    /// values across the rest of the plot, and its label (`≥ …`) beside it.
    pub(crate) fn lower_bound(&mut self, id: &str, x: f64, label: &str, label_at_top: bool) {
        let xx = self.x(x);
        let bottom = XY_HEIGHT - XY_BOTTOM;
        let arrow_y = if label_at_top {
            TOP + 20.0
        } else {
            bottom - 20.0
        };
        let label_y = arrow_y - 6.0;
        let tip = (xx + 60.0).min(WIDTH - RIGHT);
        let _ = write!(
            self.svg,
            r#"<g id="{id}" class="lowerbound"><line class="marker" x1="{xx:.1}" x2="{xx:.1}" y1="{TOP}" y2="{bottom:.1}"/><line class="boundarrow" x1="{xx:.1}" x2="{:.1}" y1="{arrow_y:.1}" y2="{arrow_y:.1}"/><polygon class="boundhead" points="{tip:.1},{arrow_y:.1} {:.1},{:.1} {:.1},{:.1}"/><text class="markerlabel" x="{:.1}" y="{label_y:.1}" text-anchor="end">{}</text></g>"#,
            tip - 8.0,
            tip - 9.0,
            arrow_y - 5.0,
            tip - 9.0,
            arrow_y + 5.0,
            xx - 4.0,
            escape(label)
        );
    }

    /// A horizontal reference line at `y` (a limit), labelled at the right.
    pub(crate) fn reference(&mut self, id: &str, y: f64, label: &str) {
        let yy = self.y(y);
        let right = WIDTH - RIGHT;
        let _ = write!(
            self.svg,
            r#"<line id="{id}" class="reference" x1="{LEFT}" x2="{right:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="reflabel" x="{:.1}" y="{:.1}">{}</text>"#,
            right - 4.0,
            yy - 5.0,
            escape(label)
        );
    }

    /// The chart with a legend of `(label, colour)` swatches.
    pub(crate) fn finish(mut self, legend_items: &[(&str, &str)]) -> String {
        legend(&mut self.svg, legend_items.iter().copied(), LEFT, XY_HEIGHT);
        self.svg.push_str("</svg>");
        self.svg
    }
}

/// Runs of finite points.
fn segments(points: &[(f64, f64)]) -> Vec<Vec<(f64, f64)>> {
    let mut out = vec![Vec::new()];
    for &(t, v) in points {
        if v.is_finite() && t.is_finite() {
            if let Some(last) = out.last_mut() {
                last.push((t, v));
            }
        } else if out.last().is_some_and(|l| !l.is_empty()) {
            out.push(Vec::new());
        }
    }
    out.retain(|l| !l.is_empty());
    out
}

/// A row of colour swatches with labels along the bottom, from `x`.
fn legend<'a>(
    s: &mut String,
    items: impl Iterator<Item = (&'a str, &'a str)>,
    mut x: f64,
    height: f64,
) {
    for (label, colour) in items {
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{colour}"/><text class="legend" x="{:.1}" y="{:.1}">{}</text>"#,
            height - 14.0,
            x + 14.0,
            height - 5.0,
            escape(label)
        );
        x += 24.0 + 6.5 * label.chars().count() as f64;
    }
}

/// `m:ss` or `h:mm:ss`.
pub(crate) fn clock(t: f64) -> String {
    let total = t.max(0.0).round() as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// One bar: a value with an optional whisker of ± `spread`.
#[derive(Clone, Debug)]
pub(crate) struct Bar {
    pub(crate) label: String,
    pub(crate) value: f64,
    /// Whisker half-length (e.g. the standard deviation).
    pub(crate) spread: Option<f64>,
    /// Shown after the bar, e.g. `61.7 ± 4.2`.
    pub(crate) note: String,
}

/// Horizontal bars with whiskers, one row per bar.
pub(crate) fn bar_chart(
    id: &str,
    title: &str,
    unit: &str,
    bars: &[Bar],
    max: Option<f64>,
) -> String {
    let row = 24.0;
    let label_w = 230.0;
    let note_w = 150.0;
    let height = TOP + row * bars.len() as f64 + 30.0;
    let plot_w = WIDTH - label_w - note_w - RIGHT;
    let data_max = bars
        .iter()
        .map(|b| b.value + b.spread.unwrap_or(0.0))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let x_max = max.unwrap_or_else(|| {
        if data_max > 0.0 {
            nice_ceiling(data_max, data_max)
        } else {
            1.0
        }
    });
    let x = |v: f64| label_w + (v.clamp(0.0, x_max) / x_max) * plot_w;
    let mut s = String::new();
    open_svg(&mut s, id, height, title);
    chart_title(&mut s, 8.0, title, unit);
    let bottom = TOP + row * bars.len() as f64;
    x_grid(&mut s, x_max, x, (TOP, bottom));
    for (i, bar) in bars.iter().enumerate() {
        let y0 = TOP + row * i as f64;
        let colour = PALETTE[0];
        let _ = write!(
            s,
            r#"<text class="barlabel" x="{:.1}" y="{:.1}">{}</text><rect class="bar" fill="{colour}" x="{label_w}" y="{:.1}" width="{:.1}" height="{:.1}"/>"#,
            label_w - 8.0,
            y0 + row * 0.65,
            escape(&bar.label),
            y0 + 4.0,
            (x(bar.value) - label_w).max(0.0),
            row - 8.0
        );
        if let Some(sd) = bar.spread.filter(|s| s.is_finite() && *s > 0.0) {
            let (lo, hi) = (x(bar.value - sd), x(bar.value + sd));
            let ym = y0 + row / 2.0;
            let _ = write!(
                s,
                r#"<path class="whisker" d="M{lo:.1},{ym:.1}H{hi:.1}M{lo:.1},{:.1}V{:.1}M{hi:.1},{:.1}V{:.1}"/>"#,
                ym - 5.0,
                ym + 5.0,
                ym - 5.0,
                ym + 5.0
            );
        }
        let _ = write!(
            s,
            r#"<text class="barnote" x="{:.1}" y="{:.1}">{}</text>"#,
            WIDTH - note_w - RIGHT + 8.0,
            y0 + row * 0.65,
            escape(&bar.note)
        );
    }
    s.push_str("</svg>");
    s
}

/// A histogram: `(lower, upper, count)` bins over a linear axis.
pub(crate) fn histogram(id: &str, title: &str, unit: &str, bins: &[(f64, f64, u64)]) -> String {
    let height = 220.0;
    let bottom = 36.0;
    let plot_h = height - TOP - bottom;
    let plot_w = WIDTH - LEFT - RIGHT;
    let lo = bins.first().map_or(0.0, |b| b.0);
    let hi = bins.last().map_or(1.0, |b| b.1);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let count_max = bins.iter().map(|b| b.2).max().unwrap_or(0) as f64;
    let y_max = nice_ceiling(count_max, 1.0);
    let x = |v: f64| LEFT + (v - lo) / span * plot_w;
    let y = |c: f64| TOP + plot_h - c / y_max * plot_h;
    let mut s = String::new();
    open_svg(&mut s, id, height, title);
    chart_title(&mut s, LEFT, title, unit);
    y_grid(&mut s, y_max, y, LEFT + plot_w);
    for &(a, b, c) in bins {
        let (x0, x1) = (x(a), x(b));
        let _ = write!(
            s,
            r#"<rect class="bar" fill="{}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}–{} {}: {c}</title></rect>"#,
            PALETTE[2],
            x0 + 0.5,
            y(c as f64),
            (x1 - x0 - 1.0).max(0.5),
            (y(0.0) - y(c as f64)).max(0.0),
            short(a),
            short(b),
            escape(unit)
        );
    }
    let ticks = bins.len().clamp(1, 10);
    for i in 0..=ticks {
        let v = lo + span * i as f64 / ticks as f64;
        let _ = write!(
            s,
            r#"<text class="xlabel" x="{:.1}" y="{:.1}">{}</text>"#,
            x(v),
            TOP + plot_h + 16.0,
            short(v)
        );
    }
    let _ = write!(
        s,
        r#"<text class="axisname" x="{:.1}" y="{:.1}">{} · bars: recipients per bin</text>"#,
        LEFT + plot_w,
        height - 4.0,
        escape(unit)
    );
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.0, 1.0), 1.0);
        assert_eq!(nice_ceiling(3.2, 1.0), 5.0);
        assert_eq!(nice_ceiling(61.7, 1.0), 100.0);
        assert_eq!(nice_ceiling(21.0, 1.0), 25.0);
        assert_eq!(nice_ceiling(1000.0, 1.0), 1000.0);
    }

    #[test]
    fn linear_axes_end_on_a_round_tick() {
        assert_eq!(linear_axis(72.0), (80.0, 20.0));
        assert_eq!(linear_axis(12.0), (15.0, 5.0));
        assert_eq!(linear_axis(0.0), (1.0, 1.0));
        assert_eq!(round_up(76.0), 100.0);
        assert_eq!(round_up(210.0), 250.0);
    }

    #[test]
    fn clock_times() {
        assert_eq!(clock(65.0), "1:05");
        assert_eq!(clock(3725.0), "1:02:05");
    }

    #[test]
    fn nan_breaks_lines() {
        let s = segments(&[(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0), (3.0, 4.0)]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].len(), 2);
    }
}
