//! A small hand-written SVG chart kit: timelines on a shared time axis with
//! the run's phases shaded, horizontal bars with whiskers, and a histogram.
//!
//! Hand-written rather than `plotters`: the report needs three chart shapes,
//! inline in one HTML file, styled by the page's CSS; about 400 lines of
//! string building do that with no dependency, no font loading and no build
//! cost, and the output is deterministic, which the tests rely on.

use std::fmt::Write as _;

use super::escape;

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

/// A compact number: 3 significant digits, thousands as `k`, millions as `M`.
pub(crate) fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
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
        let _ = write!(
            s,
            r#"<text class="ctitle" x="{LEFT}" y="16">{} <tspan class="unit">({})</tspan></text>"#,
            escape(self.title),
            escape(self.unit)
        );
        for band in self.bands {
            // A phase too short to see (a drain that reconciled at once)
            // still gets a sliver, so every phase shows.
            let (x0, x1) = (x(band.start_s), x(band.end_s).max(x(band.start_s) + 2.0));
            let _ = write!(
                s,
                r#"<rect class="band {}" x="{x0:.1}" y="{TOP}" width="{:.1}" height="{plot_h}"/>"#,
                band.class,
                x1 - x0,
            );
            if x1 - x0 >= 30.0 {
                let _ = write!(
                    s,
                    r#"<text class="bandlabel" x="{:.1}" y="{:.1}">{}</text>"#,
                    x0 + 3.0,
                    TOP + 11.0,
                    band.label
                );
            }
        }
        // Horizontal grid and y labels.
        for i in 0..=4 {
            let v = y_max * f64::from(i) / 4.0;
            let yy = y(v);
            let _ = write!(
                s,
                r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="ylabel" x="{:.1}" y="{:.1}">{}</text>"#,
                LEFT + plot_w,
                LEFT - 6.0,
                yy + 4.0,
                short(v)
            );
        }
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
        legend(&mut s, self.lines.iter().map(|l| l.label.as_str()), height);
        s.push_str("</svg>");
        s
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

fn legend<'a>(s: &mut String, labels: impl Iterator<Item = &'a str>, height: f64) {
    let mut x = LEFT;
    for (i, label) in labels.enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
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
    let _ = write!(
        s,
        r#"<text class="ctitle" x="8" y="16">{} <tspan class="unit">({})</tspan></text>"#,
        escape(title),
        escape(unit)
    );
    let bottom = TOP + row * bars.len() as f64;
    for i in 0..=4 {
        let v = x_max * f64::from(i) / 4.0;
        let xx = x(v);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{xx:.1}" x2="{xx:.1}" y1="{TOP}" y2="{bottom:.1}"/><text class="xlabel" x="{xx:.1}" y="{:.1}">{}</text>"#,
            bottom + 14.0,
            short(v)
        );
    }
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
    let _ = write!(
        s,
        r#"<text class="ctitle" x="{LEFT}" y="16">{} <tspan class="unit">({})</tspan></text>"#,
        escape(title),
        escape(unit)
    );
    for i in 0..=4 {
        let c = y_max * f64::from(i) / 4.0;
        let yy = y(c);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="ylabel" x="{:.1}" y="{:.1}">{}</text>"#,
            LEFT + plot_w,
            LEFT - 6.0,
            yy + 4.0,
            short(c)
        );
    }
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
    fn short_numbers() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(2.5), "2.5");
        assert_eq!(short(12.25), "12.2");
        assert_eq!(short(155_360.5), "155k");
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
