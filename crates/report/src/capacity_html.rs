//! `capacity.html`: the capacity section of a sweep as one self-contained
//! page (the shared style sheet inline, the shared SVG charts, no script,
//! no URL).
//!
//! Two charts share the load axis: throughput against load with the
//! measured points, the fitted USL curve, the peak, the knee and the QoS
//! capacity marked; and p95 against load with the QoS limit drawn as a
//! line. Below them: the conclusions in sentences, the fitted parameters,
//! the steps as a table, and the notes (early stop, warnings).
//!
//! Pure: it takes the data and returns a `String`.

use std::fmt::Write as _;

use peakhour_analysis::capacity::{CapacityAnalysis, CapacityBound};

use crate::html::svg::{OVER_LIMIT, PALETTE, XyPlot, linear_axis};
use crate::html::{CSS, escape};
use crate::number::format_number as num;

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
    /// Each action's p95 per step: header cells (none: no table).
    pub action_header: &'a [String],
    /// Each action's p95 per step: one row per step.
    pub action_rows: &'a [Vec<String>],
    /// Notes shown at the end (why the sweep stopped, warnings).
    pub notes: &'a [String],
}

const MEASURED: &str = PALETTE[0];
const FIT: &str = PALETTE[1];
const PEAK: &str = PALETTE[2];
const KNEE: &str = PALETTE[3];

/// Renders the page.
pub fn render_capacity_html(page: &CapacityPage<'_>) -> String {
    let a = page.analysis;
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{CSS}</style></head><body>",
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
        s.push_str("<section id=\"steps\"><h2>Steps</h2>");
        table(&mut s, page.table_header, page.table_rows);
        if page.action_header.len() > 1 {
            s.push_str("<h3>p95 of each action (ms)</h3>");
            table(&mut s, page.action_header, page.action_rows);
        }
        s.push_str("</section>");
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

/// A table whose headers are words (they wrap) and whose text cells wrap, so
/// that it fits the page; numbers are right-aligned.
fn table(s: &mut String, header: &[String], rows: &[Vec<String>]) {
    let numeric = |cell: &String| cell.replace(',', "").parse::<f64>().is_ok() || cell.is_empty();
    // A column of words is aligned left, its header too; numbers right.
    let text_column: Vec<bool> = (0..header.len())
        .map(|i| rows.iter().any(|r| r.get(i).is_some_and(|c| !numeric(c))))
        .collect();
    let left = |text: bool| if text { " class=\"l\"" } else { "" };
    s.push_str("<table class=\"steps\"><tr>");
    for (h, &text) in header.iter().zip(&text_column) {
        let _ = write!(s, "<th{}>{}</th>", left(text), escape(h));
    }
    s.push_str("</tr>");
    for row in rows {
        s.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let text = text_column.get(i).copied().unwrap_or(false);
            let _ = write!(s, "<td{}>{}</td>", left(text), escape(cell));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
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

fn throughput_chart(page: &CapacityPage<'_>) -> String {
    let a = page.analysis;
    let largest = a.points.iter().map(|p| p.load).fold(0.0, f64::max);
    let fitted = |x_max: f64| -> Vec<(f64, f64)> {
        a.usl
            .as_ref()
            .map(|u| {
                (0..=120)
                    .map(|i| {
                        let n = (x_max * f64::from(i) / 120.0).max(1.0);
                        (n, u.predict(n))
                    })
                    .filter(|(_, x)| x.is_finite())
                    .collect()
            })
            .unwrap_or_default()
    };
    // The fitted curve over the whole axis may rise above every point.
    let curve = fitted(linear_axis(largest).0);
    let y_largest = a
        .points
        .iter()
        .map(|p| p.throughput)
        .chain(curve.iter().map(|c| c.1))
        .fold(0.0, f64::max);
    let title = format!("Throughput against {}", page.load_label);
    let mut plot = XyPlot::new(
        "capacity-throughput",
        &title,
        page.throughput_label,
        page.load_label,
        largest,
        y_largest,
    );
    qos_marker(&mut plot, a, false);
    plot.line(&curve, FIT, true);
    let measured: Vec<(f64, f64)> = a.points.iter().map(|p| (p.load, p.throughput)).collect();
    plot.line(&measured, MEASURED, false);
    for p in &a.points {
        let tip = format!(
            "{} {}: {} {}",
            num(p.load),
            page.load_label,
            num(p.throughput),
            page.throughput_label
        );
        plot.point(p.load, p.throughput, MEASURED, &tip);
    }
    let peak_label = format!("peak {}", num(a.peak.throughput));
    plot.ring("peak", a.peak.load, a.peak.throughput, PEAK, &peak_label);
    if let Some(k) = &a.knee {
        plot.pointer(
            "knee",
            k.load,
            k.throughput,
            KNEE,
            &format!("knee {}", num(k.load)),
        );
    }
    let mut items = vec![("measured", MEASURED)];
    if a.usl.is_some() {
        items.push(("USL fit", FIT));
    }
    plot.finish(&items)
}

/// The QoS capacity on a chart: a line where it was found between two steps;
/// where every step passed, only a lower bound: an arrow from the largest load
/// tested pointing on, labelled `≥`, since the capacity lies somewhere beyond.
fn qos_marker(plot: &mut XyPlot, a: &CapacityAnalysis, label_at_top: bool) {
    let Some(q) = &a.qos else { return };
    match (q.bound, q.load) {
        (CapacityBound::AllPassed, Some(load)) => plot.lower_bound(
            "qos-lower-bound",
            load,
            &format!("QoS capacity ≥ {} (every step passed)", num(load)),
            label_at_top,
        ),
        (_, Some(load)) => {
            plot.vertical(load, &format!("QoS capacity {}", num(load)), label_at_top)
        }
        (_, None) => {}
    }
}

fn p95_chart(page: &CapacityPage<'_>) -> String {
    let a = page.analysis;
    let limit = a.options.qos_p95_ms;
    let largest = a.points.iter().map(|p| p.load).fold(0.0, f64::max);
    let y_largest = a
        .points
        .iter()
        .filter_map(|p| p.p95_ms)
        .fold(limit, f64::max);
    let title = format!("{} against {}", page.p95_label, page.load_label);
    let mut plot = XyPlot::new(
        "capacity-p95",
        &title,
        "ms",
        page.load_label,
        largest,
        y_largest,
    );
    plot.reference("qos-line", limit, &format!("QoS p95 ≤ {} ms", num(limit)));
    qos_marker(&mut plot, a, true);
    let points: Vec<(f64, f64)> = a
        .points
        .iter()
        .filter_map(|p| p.p95_ms.map(|v| (p.load, v)))
        .collect();
    plot.line(&points, MEASURED, false);
    for &(load, p95) in &points {
        let colour = if p95 > limit { OVER_LIMIT } else { MEASURED };
        let tip = format!("{} {}: {} ms", num(load), page.load_label, num(p95));
        plot.point(load, p95, colour, &tip);
    }
    plot.finish(&[(page.p95_label, MEASURED), ("QoS limit", OVER_LIMIT)])
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
            action_header: &[],
            action_rows: &[],
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
}
