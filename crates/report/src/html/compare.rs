//! The HTML comparison (`peakhour compare --html FILE`).

use std::fmt::Write as _;

use super::svg::{self, Bar};
use super::{CSS, escape};
use crate::compare::Comparison;

/// Renders a comparison as one self-contained HTML page: the runs, the
/// warnings, a side-by-side table with changes and the noise verdict, and
/// a bar chart of each action's p95 per run.
pub fn render_compare_html(c: &Comparison) -> String {
    let mut out = String::with_capacity(32 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>peakhour comparison</title><style>{CSS}</style></head><body>\n<header><h1>peakhour comparison</h1><p class=\"sub\">{} runs; changes are against the first (baseline)</p></header>\n",
        c.runs.len()
    );
    out.push_str("<section id=\"runs\"><h2>Runs</h2><table><thead><tr><th>run</th><th class=\"l\">run id</th><th class=\"l\">profile</th><th>users</th><th>seed</th><th>speed</th><th>steady s</th><th class=\"l\">verdict</th></tr></thead><tbody>");
    for (i, r) in c.runs.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}{}{}</td></tr>",
            escape(&r.label),
            if i == 0 { " (baseline)" } else { "" },
            escape(&r.run_id),
            escape(&r.profile),
            r.users,
            r.seed,
            svg::short(r.speed),
            svg::short(r.steady_s),
            r.verdict.to_uppercase(),
            if r.interrupted { ", interrupted" } else { "" },
            if r.client_bound { ", client-bound" } else { "" }
        );
    }
    out.push_str("</tbody></table></section>\n");
    let class = if c.warnings.is_empty() {
        "warnings none"
    } else {
        "warnings bad"
    };
    let _ = write!(
        out,
        "<section id=\"warnings\" class=\"{class}\"><h2>Warnings</h2>"
    );
    if c.warnings.is_empty() {
        out.push_str(
            "<p>None: same profile, users and speed; no run interrupted or client-bound.</p>",
        );
    } else {
        out.push_str("<ul>");
        for w in &c.warnings {
            let _ = write!(out, "<li>{}</li>", escape(w));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>\n<section id=\"changes\"><h2>Side by side</h2><table><thead><tr><th>metric</th><th class=\"l\">unit</th>");
    for r in &c.runs {
        let _ = write!(out, "<th>{}</th>", escape(&r.label));
    }
    for r in c.runs.iter().skip(1) {
        let _ = write!(
            out,
            "<th>{} change</th><th class=\"l\">noise (95% interval)</th>",
            escape(&r.label)
        );
    }
    out.push_str("</tr></thead><tbody>");
    for m in &c.metrics {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"l\">{}</td>",
            escape(&m.metric),
            escape(&m.unit)
        );
        for v in &m.values {
            let _ = write!(out, "<td>{}</td>", v.map_or_else(|| "–".into(), svg::short));
        }
        for ch in &m.changes {
            let better = ch.change_pct.map(|p| (p < 0.0) == m.lower_is_better);
            let class = match (ch.within_noise, better) {
                (Some(true), _) => "noise",
                (_, Some(true)) => "lower",
                (_, Some(false)) => "higher",
                _ => "noise",
            };
            let change = ch
                .change_pct
                .map_or_else(|| "–".into(), |p| format!("{p:+.1}%"));
            let noise = match (ch.within_noise, ch.ci_low_pct, ch.ci_high_pct) {
                (Some(true), Some(l), Some(h)) => format!("within noise [{l:+.1}%, {h:+.1}%]"),
                (Some(false), Some(l), Some(h)) => format!("beyond noise [{l:+.1}%, {h:+.1}%]"),
                (Some(true), _, _) => "within noise (&lt; 1 std dev)".into(),
                (Some(false), _, _) => "more than 1 std dev".into(),
                (None, _, _) => "unknown".into(),
            };
            let _ = write!(
                out,
                "<td class=\"{class}\">{change}</td><td class=\"l {class}\">{noise}</td>"
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table><ul>");
    for m in &c.metrics {
        for ch in &m.changes {
            let _ = write!(out, "<li>{}</li>", escape(&ch.statement));
        }
    }
    out.push_str("</ul></section>\n<section id=\"charts\"><h2>p95 per action</h2>");
    for m in c.metrics.iter().filter(|m| m.kind == "latency") {
        let bars: Vec<Bar> = c
            .runs
            .iter()
            .zip(&m.values)
            .filter_map(|(r, v)| {
                v.map(|v| Bar {
                    label: r.label.clone(),
                    value: v,
                    spread: None,
                    note: format!("{} ms", svg::short(v)),
                })
            })
            .collect();
        let id = format!(
            "chart-{}",
            m.metric.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        );
        out.push_str(&svg::bar_chart(&id, &m.metric, &m.unit, &bars, None));
    }
    let _ = write!(
        out,
        "</section>\n<footer>Noise: bootstrap over steady-state intervals, {} resamples, seed {:#x}; a 95% interval that contains 0 is within run-to-run noise. Server resources: a change smaller than the high averages' standard deviation counts as noise. Generated by peakhour; no external references.</footer>\n</body></html>\n",
        c.bootstrap.resamples, c.bootstrap.seed
    );
    out
}
