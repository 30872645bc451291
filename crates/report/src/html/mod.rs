//! The self-contained HTML report (`report.html`) and the HTML comparison.
//!
//! One file, no external asset: inline CSS, SVG charts drawn by the `svg` module, no
//! script, no web font, no URL. It reads offline and prints cleanly
//! (`@media print` drops the shading colours that waste toner and keeps
//! charts from splitting across pages).
//!
//! Sections, each with a fixed `id` (tests and `docs/report.md` rely on
//! them): `warnings`, `verdict`, `actions`, `throughput`, `timelines`,
//! `resources`, `delivery`, `disclosure`.

mod compare;
mod inputs;
mod page;
pub(crate) mod svg;

pub use compare::render_compare_html;
pub use inputs::{HostFacts, MonitorChart, MonitorView, ServerCounter, ServerSoftware};
pub use page::{REPORT_SECTIONS, ReportInput, render_html};

/// Escapes text for HTML element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The one style sheet of every HTML page: the report, the comparison and
/// the sweep's capacity page.
pub(crate) const CSS: &str = r#"
:root { --fg:#1b1f24; --muted:#57606a; --line:#d0d7de; --pass:#1a7f37; --fail:#cf222e; --warn:#9a6700; --bg-warn:#fff8c5; --bg-fail:#ffebe9; --bg-pass:#dafbe1; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; color: var(--fg); margin: 0 auto; max-width: 1040px; padding: 24px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 16px 0 6px; }
p.sub { color: var(--muted); margin: 0 0 12px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
th { background: #f6f8fa; font-weight: 600; }
td.l, th.l { text-align: left; }
tr.section td { background: #f6f8fa; font-weight: 600; text-align: left; }
.verdict { display: flex; gap: 16px; align-items: stretch; flex-wrap: wrap; }
.badge { font-size: 28px; font-weight: 700; padding: 10px 18px; border-radius: 6px; }
.badge.pass { background: var(--bg-pass); color: var(--pass); }
.badge.fail { background: var(--bg-fail); color: var(--fail); }
.kpi { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 150px; }
.kpi b { display: block; font-size: 20px; }
.kpi span { color: var(--muted); font-size: 12px; }
.warnings { border: 2px solid var(--warn); background: var(--bg-warn); border-radius: 6px; padding: 8px 16px; }
.warnings.bad { border-color: var(--fail); background: var(--bg-fail); }
.warnings.none { border: 1px solid var(--line); background: #f6f8fa; }
.warnings li { margin: 3px 0; }
.fail { color: var(--fail); font-weight: 600; }
.ok { color: var(--pass); }
.lower { color: var(--pass); }
.higher { color: var(--fail); }
.noise { color: var(--muted); }
.nodata { color: var(--muted); font-style: italic; border: 1px dashed var(--line); padding: 8px 12px; border-radius: 6px; }
pre { background: #f6f8fa; border: 1px solid var(--line); padding: 8px; overflow-x: auto; font-size: 12px; white-space: pre-wrap; }
svg.chart { display: block; margin: 4px 0 14px; max-width: 100%; height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: var(--fg); }
svg .ctitle { font-size: 13px; font-weight: 600; }
svg .unit { font-weight: 400; fill: var(--muted); }
svg .ylabel { text-anchor: end; fill: var(--muted); }
svg .xlabel { text-anchor: middle; fill: var(--muted); }
svg .axisname { text-anchor: end; fill: var(--muted); font-size: 10px; }
svg .barlabel { text-anchor: end; }
svg .barnote { fill: var(--muted); }
svg .bandlabel { fill: var(--muted); font-size: 10px; }
svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg .tick { stroke: var(--muted); stroke-width: 1; }
svg .series { fill: none; stroke-width: 1.8; stroke-linejoin: round; }
svg .area { opacity: 0.15; stroke: none; }
svg .whisker { stroke: var(--fg); stroke-width: 1.4; fill: none; }
svg .reference { stroke: var(--fail); stroke-dasharray: 5 4; stroke-width: 1.2; }
svg .reflabel { text-anchor: end; fill: var(--fail); font-size: 10px; }
svg .band.logon { fill: #ddf4ff; }
svg .band.steady { fill: #ffffff; }
svg .band.drain { fill: #e4e4e4; }
svg .series.fit { stroke-dasharray: 6 4; }
svg .ring { fill: none; stroke-width: 2.5; }
svg .mark { text-anchor: middle; }
svg .marker { stroke: var(--fail); stroke-width: 1; stroke-dasharray: 2 3; }
svg .markerlabel { fill: var(--fail); font-size: 10px; }
svg .boundarrow { stroke: var(--fail); stroke-width: 2; }
svg .boundhead { fill: var(--fail); }
table.steps td.l { max-width: 280px; overflow-wrap: anywhere; }
.statement { background: #f6f8fa; border-left: 4px solid #0072b2; padding: 8px 14px; }
.notes li { color: var(--muted); }
.wide { overflow-x: auto; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  h2 { break-after: avoid; }
  svg.chart, table, .warnings, .verdict { break-inside: avoid; }
  pre { white-space: pre-wrap; font-size: 9px; }
  .wide { overflow: visible; }
  .badge, .warnings, th, tr.section td { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"#;
