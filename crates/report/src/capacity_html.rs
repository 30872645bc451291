//! `capacity.html`: the capacity section of a sweep as one self-contained
//! page (inline CSS, hand-drawn inline SVG, no script, no URL).
//!
//! Two charts share the load axis: throughput against load with the
//! measured points, the fitted USL curve, the peak, the knee and the QoS
//! capacity marked; and p95 against load with the QoS limit drawn as a
//! line. Below them: the conclusions in sentences, the fitted parameters,
//! the steps as a table, and the notes (early stop, warnings).
//!
//! Pure: it takes the data and returns a `String`.

use std::fmt::Write as _;

use peakhour_analysis::capacity::{CapacityAnalysis, format_number as num};

use crate::html::escape;

/// Everything the capacity page shows.
#[derive(Clone, Debug)]
pub struct CapacityPage<'a> {
    /// The page's heading, e.g. `peakhour sweep: mmb-medium on lab`.
    pub title: &'a str,
    /// One line under the heading (profile, speed, seed, step length ...).
    pub subtitle: &'a str,
    /// The analysis of the curve.
    pub analysis: &'a CapacityAnalysis,
    /// What the load counts, e.g. `users`.
    pub load_label: &'a str,
    /// The throughput's unit, e.g. `actions/s`.
    pub throughput_label: &'a str,
    /// Which p95 the curve carries, e.g. `weighted p95`.
    pub p95_label: &'a str,
    /// A capacity statement in sentences, shown first (may be empty).
    pub statement: &'a [String],
    /// The steps table: header cells.
    pub table_header: &'a [String],
    /// The steps table: one row of cells per step.
    pub table_rows: &'a [Vec<String>],
    /// Notes shown at the end (why the sweep stopped, warnings).
    pub notes: &'a [String],
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 44.0;

const CSS: &str = "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1b1f24;max-width:980px;margin:24px auto;padding:0 16px}\
h1{font-size:1.5em;margin:0 0 4px}h2{font-size:1.15em;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}\
.sub{color:#57606a;margin:0 0 16px}.statement{background:#f6f8fa;border-left:4px solid #0072b2;padding:8px 14px}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:13px}th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:right}\
th{background:#f6f8fa}td.l,th.l{text-align:left}svg{max-width:100%;height:auto;display:block;margin:8px 0}\
svg text{font:12px system-ui,sans-serif;fill:#1b1f24}svg .muted{fill:#57606a}svg .grid{stroke:#eaeef2}svg .axis{stroke:#57606a}\
.notes li{color:#57606a}.wide{overflow-x:auto}\
@media print{body{margin:0}svg{break-inside:avoid}.wide{overflow:visible}}";

const BLUE: &str = "#0072b2";
const ORANGE: &str = "#d55e00";
const GREEN: &str = "#009e73";
const PURPLE: &str = "#cc79a7";
const RED: &str = "#cf222e";

/// Renders the page.
pub fn render_capacity_html(page: &CapacityPage<'_>) -> String {
    let a = page.analysis;
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{CSS}</style></head><body>",
        escape(page.title)
    );
    let _ = write!(
        s,
        "<h1>{}</h1><p class=\"sub\">{}</p>",
        escape(page.title),
        escape(page.subtitle)
    );
    if !page.statement.is_empty() {
        s.push_str("<section id=\"statement\" class=\"statement\">");
        for line in page.statement {
            let _ = write!(s, "<p>{}</p>", escape(line));
        }
        s.push_str("</section>");
    }
    s.push_str("<section id=\"charts\"><h2>Capacity curve</h2>");
    s.push_str(&throughput_chart(page));
    if a.points.iter().any(|p| p.p95_ms.is_some()) {
        s.push_str(&p95_chart(page));
    }
    s.push_str("</section>");

    s.push_str("<section id=\"conclusions\"><h2>Conclusions</h2><ul>");
    for c in a.conclusions() {
        let _ = write!(s, "<li>{}</li>", escape(&c));
    }
    s.push_str("</ul></section>");

    s.push_str(&parameters(a));

    if !page.table_header.is_empty() {
        // capacity.csv's column names as headers: wide, so the table scrolls
        // on its own rather than the page.
        s.push_str("<section id=\"steps\"><h2>Steps</h2><div class=\"wide\"><table><tr>");
        for h in page.table_header {
            // Let the long column names break at their `_` and `.` only.
            let breakable = escape(h).replace('_', "_<wbr>").replace('.', ".<wbr>");
            let _ = write!(s, "<th>{breakable}</th>");
        }
        s.push_str("</tr>");
        for row in page.table_rows {
            s.push_str("<tr>");
            for cell in row {
                let class = if cell.parse::<f64>().is_ok() || cell.is_empty() {
                    ""
                } else {
                    " class=\"l\""
                };
                let _ = write!(s, "<td{class}>{}</td>", escape(cell));
            }
            s.push_str("</tr>");
        }
        s.push_str("</table></div></section>");
    }
    let notes: Vec<&String> = page.notes.iter().chain(a.warnings.iter()).collect();
    if !notes.is_empty() {
        s.push_str("<section id=\"notes\"><h2>Notes and warnings</h2><ul class=\"notes\">");
        for n in notes {
            let _ = write!(s, "<li>{}</li>", escape(n));
        }
        s.push_str("</ul></section>");
    }
    s.push_str("</body></html>\n");
    s
}

fn parameters(a: &CapacityAnalysis) -> String {
    let mut s = String::from("<section id=\"parameters\"><h2>Fitted parameters</h2><table>");
    let mut row = |name: &str, value: String| {
        let _ = write!(
            s,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            escape(name),
            escape(&value)
        );
    };
    row(
        "peak",
        format!(
            "{} at a load of {}",
            num(a.peak.throughput),
            num(a.peak.load)
        ),
    );
    row("shape after the peak", a.shape.statement.clone());
    if let Some(q) = &a.qos {
        row("QoS capacity", q.statement.clone());
        row("QoS method", q.method.clone());
    }
    match &a.knee {
        Some(k) => row(
            "knee (Kneedle)",
            format!(
                "load {} (throughput {}; S = {})",
                num(k.load),
                num(k.throughput),
                k.sensitivity
            ),
        ),
        None => row("knee (Kneedle)", "none found".to_string()),
    }
    match (&a.usl, &a.usl_error) {
        (Some(u), _) => {
            let se = |v: Option<f64>| v.map(|v| format!(" ± {v:.3e}")).unwrap_or_default();
            row(
                "USL model",
                "X(N) = γN / (1 + α(N−1) + βN(N−1))".to_string(),
            );
            row(
                "α (contention)",
                format!("{:.4e}{}", u.alpha, se(u.std_errors.map(|e| e.alpha))),
            );
            row(
                "β (coherency)",
                format!("{:.4e}{}", u.beta, se(u.std_errors.map(|e| e.beta))),
            );
            row(
                "γ (one user's throughput)",
                format!("{:.6}{}", u.gamma, se(u.std_errors.map(|e| e.gamma))),
            );
            row(
                "residual standard error",
                match u.residual_std_error {
                    Some(r) => format!("{} on {} degrees of freedom", num(r), u.degrees_of_freedom),
                    None => "no degrees of freedom left".to_string(),
                },
            );
            let opt = |v: Option<f64>| v.map(num).unwrap_or_else(|| "none".to_string());
            row(
                "N_max = √((1−α)/β)",
                format!("{} (X = {})", opt(u.n_max), opt(u.x_max)),
            );
            row("N_opt = 1/α", opt(u.n_opt));
            row("X_lim = γ/α", opt(u.x_lim));
            if !u.at_bounds.is_empty() {
                row("on a bound", u.at_bounds.join(", "));
            }
            row("method", u.method.clone());
        }
        (None, Some(e)) => row("USL", format!("not fitted: {e}")),
        (None, None) => {}
    }
    s.push_str("</table></section>");
    s
}

/// The x scale shared by both charts.
struct Axis {
    max: f64,
    step: f64,
}

impl Axis {
    fn new(a: &CapacityAnalysis) -> Self {
        let largest = a.points.iter().map(|p| p.load).fold(0.0, f64::max);
        // Five ticks of a round step, just past the largest load.
        let step = nice_ceiling(largest * 1.05 / 5.0);
        Self {
            max: (largest * 1.05 / step).ceil().max(1.0) * step,
            step,
        }
    }

    fn x(&self, load: f64) -> f64 {
        LEFT + load.clamp(0.0, self.max) / self.max * (WIDTH - LEFT - RIGHT)
    }
}

fn y_of(v: f64, y_max: f64) -> f64 {
    let plot_h = HEIGHT - TOP - BOTTOM;
    TOP + plot_h - v.clamp(0.0, y_max) / y_max * plot_h
}

/// Opens an `<svg>` with the title, the grid, the ticks and the axis names.
fn frame(id: &str, title: &str, axis: &Axis, y_max: f64, x_name: &str, y_name: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg id=\"{id}\" role=\"img\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\"><title>{}</title>",
        escape(title)
    );
    let _ = write!(
        s,
        "<text x=\"{LEFT}\" y=\"18\" font-weight=\"600\">{}</text>",
        escape(title)
    );
    let right = WIDTH - RIGHT;
    let bottom = HEIGHT - BOTTOM;
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let yy = y_of(v, y_max);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{right}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"/><text class=\"muted\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            yy + 4.0,
            short(v)
        );
    }
    let ticks = (axis.max / axis.step).round() as u32;
    for i in 0..=ticks {
        let v = axis.step * f64::from(i);
        let xx = axis.x(v);
        let _ = write!(
            s,
            "<line class=\"axis\" x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{bottom}\" y2=\"{:.1}\"/><text class=\"muted\" x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom + 4.0,
            bottom + 17.0,
            short(v)
        );
    }
    let _ = write!(
        s,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{right}\" y1=\"{bottom}\" y2=\"{bottom}\"/><line class=\"axis\" x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{bottom}\"/>\
         <text class=\"muted\" x=\"{right}\" y=\"{:.1}\" text-anchor=\"end\">{}</text><text class=\"muted\" x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">{}</text>",
        HEIGHT - 6.0,
        escape(x_name),
        (TOP + bottom) / 2.0,
        (TOP + bottom) / 2.0,
        escape(y_name)
    );
    s
}

fn polyline(points: &[(f64, f64)], colour: &str, dashed: bool) -> String {
    if points.len() < 2 {
        return String::new();
    }
    let path: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    format!(
        "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{} points=\"{}\"/>",
        if dashed {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        },
        path.join(" ")
    )
}

fn legend(items: &[(&str, &str, bool)]) -> String {
    let mut s = String::new();
    let width: f64 = items
        .iter()
        .map(|(label, _, _)| 30.0 + 7.0 * label.chars().count() as f64)
        .sum();
    let mut x = WIDTH - RIGHT - width;
    for (label, colour, dashed) in items {
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{:.1}\" y1=\"14\" y2=\"14\" stroke=\"{colour}\" stroke-width=\"2\"{}/><text x=\"{:.1}\" y=\"18\">{}</text>",
            x + 18.0,
            if *dashed {
                " stroke-dasharray=\"4 3\""
            } else {
                ""
            },
            x + 22.0,
            escape(label)
        );
        x += 30.0 + 7.0 * label.chars().count() as f64;
    }
    s
}

fn vertical_marker(s: &mut String, x: f64, colour: &str, label: &str, label_y: f64) {
    let _ = write!(
        s,
        "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"1\" stroke-dasharray=\"2 3\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\" style=\"fill:{colour}\">{}</text>",
        HEIGHT - BOTTOM,
        x + 3.0,
        label_y,
        escape(label)
    );
}

fn throughput_chart(page: &CapacityPage<'_>) -> String {
    let a = page.analysis;
    let axis = Axis::new(a);
    let curve: Vec<(f64, f64)> = a
        .usl
        .as_ref()
        .map(|u| {
            (0..=120)
                .map(|i| {
                    let n = (axis.max * f64::from(i) / 120.0).max(1.0);
                    (n, u.predict(n))
                })
                .filter(|(_, x)| x.is_finite())
                .collect()
        })
        .unwrap_or_default();
    let data_max = a
        .points
        .iter()
        .map(|p| p.throughput)
        .chain(curve.iter().map(|c| c.1))
        .fold(0.0, f64::max);
    let y_max = nice_ceiling(data_max * 1.05);
    let title = format!(
        "Throughput ({}) against {}",
        page.throughput_label, page.load_label
    );
    let mut s = frame(
        "capacity-throughput",
        &title,
        &axis,
        y_max,
        page.load_label,
        page.throughput_label,
    );
    if let Some(q) = &a.qos
        && let Some(load) = q.load
    {
        vertical_marker(
            &mut s,
            axis.x(load),
            RED,
            &format!("QoS capacity {}", num(load)),
            HEIGHT - BOTTOM - 6.0,
        );
    }
    let usl_points: Vec<(f64, f64)> = curve
        .iter()
        .map(|(n, x)| (axis.x(*n), y_of(*x, y_max)))
        .collect();
    s.push_str(&polyline(&usl_points, ORANGE, true));
    let measured: Vec<(f64, f64)> = a
        .points
        .iter()
        .map(|p| (axis.x(p.load), y_of(p.throughput, y_max)))
        .collect();
    s.push_str(&polyline(&measured, BLUE, false));
    for p in &a.points {
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{BLUE}\"><title>{} {}: {} {}</title></circle>",
            axis.x(p.load),
            y_of(p.throughput, y_max),
            num(p.load),
            escape(page.load_label),
            num(p.throughput),
            escape(page.throughput_label)
        );
    }
    let peak = (axis.x(a.peak.load), y_of(a.peak.throughput, y_max));
    let _ = write!(
        s,
        "<circle id=\"peak\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"7\" fill=\"none\" stroke=\"{GREEN}\" stroke-width=\"2.5\"/><text x=\"{:.1}\" y=\"{:.1}\" style=\"fill:{GREEN}\" text-anchor=\"middle\">peak {}</text>",
        peak.0,
        peak.1,
        peak.0,
        (peak.1 - 12.0).max(TOP + 10.0),
        num(a.peak.throughput)
    );
    if let Some(k) = &a.knee {
        let (kx, ky) = (axis.x(k.load), y_of(k.throughput, y_max));
        let _ = write!(
            s,
            "<path id=\"knee\" d=\"M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z\" fill=\"{PURPLE}\"/><text x=\"{:.1}\" y=\"{:.1}\" style=\"fill:{PURPLE}\">knee {}</text>",
            kx,
            ky + 6.0,
            kx - 6.0,
            ky + 16.0,
            kx + 6.0,
            ky + 16.0,
            kx + 8.0,
            ky + 28.0,
            num(k.load)
        );
    }
    let mut items = vec![("measured", BLUE, false)];
    if a.usl.is_some() {
        items.push(("USL fit", ORANGE, true));
    }
    s.push_str(&legend(&items));
    s.push_str("</svg>");
    s
}

fn p95_chart(page: &CapacityPage<'_>) -> String {
    let a = page.analysis;
    let axis = Axis::new(a);
    let limit = a.options.qos_p95_ms;
    let data_max = a
        .points
        .iter()
        .filter_map(|p| p.p95_ms)
        .fold(limit, f64::max);
    let y_max = nice_ceiling(data_max * 1.05);
    let title = format!("{} (ms) against {}", page.p95_label, page.load_label);
    let mut s = frame("capacity-p95", &title, &axis, y_max, page.load_label, "ms");
    let yy = y_of(limit, y_max);
    let _ = write!(
        s,
        "<line id=\"qos-line\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"{RED}\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/><text x=\"{:.1}\" y=\"{:.1}\" style=\"fill:{RED}\" text-anchor=\"end\">QoS p95 ≤ {} ms</text>",
        WIDTH - RIGHT,
        WIDTH - RIGHT - 4.0,
        yy - 5.0,
        num(limit)
    );
    if let Some(q) = &a.qos
        && let Some(load) = q.load
    {
        vertical_marker(
            &mut s,
            axis.x(load),
            RED,
            &format!("QoS capacity {}", num(load)),
            TOP + 12.0,
        );
    }
    let points: Vec<(f64, f64, f64)> = a
        .points
        .iter()
        .filter_map(|p| p.p95_ms.map(|v| (p.load, v, 0.0)))
        .collect();
    let line: Vec<(f64, f64)> = points
        .iter()
        .map(|(l, v, _)| (axis.x(*l), y_of(*v, y_max)))
        .collect();
    s.push_str(&polyline(&line, BLUE, false));
    for (l, v, _) in &points {
        let colour = if *v > limit { RED } else { BLUE };
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{colour}\"><title>{} {}: {} ms</title></circle>",
            axis.x(*l),
            y_of(*v, y_max),
            num(*l),
            escape(page.load_label),
            num(*v)
        );
    }
    s.push_str(&legend(&[
        (page.p95_label, BLUE, false),
        ("QoS limit", RED, true),
    ]));
    s.push_str("</svg>");
    s
}

/// `1, 2, 2.5, 5 × 10^k` at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    if !v.is_finite() || v <= 0.0 {
        return 1.0;
    }
    let base = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * base >= v * (1.0 - 1e-9) {
            return m * base;
        }
    }
    10.0 * base
}

/// An axis label: at most 3 significant digits, `k` and `M` for large values.
fn short(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = if scaled.abs() >= 100.0 || scaled == 0.0 {
        format!("{scaled:.0}")
    } else if scaled.abs() >= 10.0 {
        format!("{scaled:.1}")
    } else {
        format!("{scaled:.2}")
    };
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}{suffix}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use peakhour_analysis::capacity::{CapacityOptions, CurvePoint};

    #[test]
    fn the_page_is_self_contained_and_marks_everything() {
        let loads = [1.0, 8.0, 16.0, 24.0, 32.0, 40.0, 48.0, 56.0, 64.0, 72.0];
        let tput = [3.7, 28.7, 55.0, 72.0, 88.4, 92.3, 93.9, 95.2, 92.0, 87.8];
        let points: Vec<CurvePoint> = loads
            .iter()
            .zip(tput)
            .map(|(&load, throughput)| CurvePoint {
                load,
                throughput,
                p95_ms: Some(load * 20.0),
            })
            .collect();
        let a = CapacityAnalysis::compute(&points, &CapacityOptions::default()).unwrap();
        let header = vec!["users".to_string(), "verdict".to_string()];
        let rows = vec![vec!["1".to_string(), "pass <ok>".to_string()]];
        let html = render_capacity_html(&CapacityPage {
            title: "sweep <test>",
            subtitle: "seed 1",
            analysis: &a,
            load_label: "users",
            throughput_label: "actions/s",
            p95_label: "weighted p95",
            statement: &["It carries 50 users.".to_string()],
            table_header: &header,
            table_rows: &rows,
            notes: &["stopped early".to_string()],
        });
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert_eq!(html.matches("<svg").count(), 2);
        for id in [
            "peak",
            "knee",
            "qos-line",
            "conclusions",
            "parameters",
            "steps",
        ] {
            assert!(html.contains(&format!("id=\"{id}\"")), "{id} missing");
        }
        assert!(html.contains("QoS capacity"));
        assert!(html.contains("sweep &lt;test&gt;"));
        assert!(html.contains("pass &lt;ok&gt;"));
        assert!(html.contains("stopped early"));
        // Inline SVG in HTML needs no namespace: no URL at all.
        assert!(!html.contains("http"), "the page links out");
        assert!(!html.contains("<script"));
    }

    #[test]
    fn axis_helpers() {
        assert_eq!(nice_ceiling(76.0), 100.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(210.0), 250.0);
        let points: Vec<CurvePoint> = [(1.0, 1.0), (72.0, 2.0)]
            .iter()
            .map(|&(load, throughput)| CurvePoint {
                load,
                throughput,
                p95_ms: None,
            })
            .collect();
        let a = CapacityAnalysis::compute(&points, &CapacityOptions::default()).unwrap();
        let axis = Axis::new(&a);
        assert_eq!((axis.step, axis.max), (20.0, 80.0));
        assert_eq!(short(12_500.0), "12.5k");
        assert_eq!(short(2.5), "2.5");
        assert_eq!(num(1234.5), "1,235");
    }
}
