//! The summary for spreadsheets and wikis: `peakhour report --format csv|markdown`,
//! and the choice among the four forms a summary or a comparison is printed in.

use std::fmt::Write as _;

use peakhour_analysis::Summary;

use crate::ReportError;
use crate::compare::{
    Comparison, compare_json, render_compare_markdown, render_compare_text, write_compare_csv,
};
use crate::csv::{csv_writer, write_header};
use crate::json::summary_json;
use crate::number::short;
use crate::terminal::render_terminal;

/// The forms `peakhour report --format` and `compare --format` print in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// For the terminal: [`render_terminal`], [`render_compare_text`].
    Text,
    /// [`summary_json`], [`compare_json`].
    Json,
    /// [`write_summary_csv`], [`write_compare_csv`].
    Csv,
    /// [`render_summary_markdown`], [`render_compare_markdown`].
    Markdown,
}

impl TextFormat {
    /// Every form's name, as the command line spells it.
    pub const NAMES: [&str; 4] = ["text", "json", "csv", "markdown"];
}

impl std::str::FromStr for TextFormat {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            "csv" => Ok(Self::Csv),
            "markdown" => Ok(Self::Markdown),
            other => Err(format!(
                "no format {other:?}; there are {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// A run's summary in `format`.
pub fn render_summary_as(s: &Summary, format: TextFormat) -> Result<String, ReportError> {
    Ok(match format {
        TextFormat::Text => render_terminal(s),
        TextFormat::Json => summary_json(s)?,
        TextFormat::Csv => csv_text(|out| write_summary_csv(s, out))?,
        TextFormat::Markdown => render_summary_markdown(s),
    })
}

/// A comparison in `format`.
pub fn render_comparison_as(c: &Comparison, format: TextFormat) -> Result<String, ReportError> {
    Ok(match format {
        TextFormat::Text => render_compare_text(c),
        TextFormat::Json => compare_json(c)?,
        TextFormat::Csv => csv_text(|out| write_compare_csv(c, out))?,
        TextFormat::Markdown => render_compare_markdown(c),
    })
}

/// What a CSV writer wrote, as text (the writers write UTF-8 only).
fn csv_text(
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), ReportError>,
) -> Result<String, ReportError> {
    let mut out = Vec::new();
    write(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// CSV header of [`write_summary_csv`].
pub const SUMMARY_CSV_HEADER: &str = "section,item,measure,value,unit";

/// The summary in long CSV form, one figure per row: per-action latency and
/// counts, the score, throughput, delivery, and the monitor's resources.
pub fn write_summary_csv(s: &Summary, out: &mut impl std::io::Write) -> Result<(), ReportError> {
    let mut writer = csv_writer(out);
    write_header(&mut writer, SUMMARY_CSV_HEADER)?;
    let mut row = |section: &str, item: &str, measure: &str, value: Option<f64>, unit: &str| {
        let value = value.map_or_else(String::new, |v| v.to_string());
        writer.write_record([section, item, measure, value.as_str(), unit])
    };
    row("run", &s.run_id, "users", Some(f64::from(s.users)), "users")?;
    row("run", &s.run_id, "seed", Some(s.seed as f64), "")?;
    row(
        "run",
        &s.run_id,
        "pass",
        Some(f64::from(u8::from(
            s.verdict == peakhour_analysis::Verdict::Pass,
        ))),
        "1 = pass",
    )?;
    for shortcut in &s.security_shortcuts {
        row("run", &s.run_id, "security shortcut", None, shortcut)?;
    }
    for (name, a) in &s.actions {
        row("action", name, "count", Some(a.count as f64), "actions")?;
        row("action", name, "errors", Some(a.errors as f64), "actions")?;
        row("action", name, "p50", a.p50_ms, "ms")?;
        row("action", name, "p95", a.p95_ms, "ms")?;
        row("action", name, "p99", a.p99_ms, "ms")?;
        row("action", name, "max", a.max_ms, "ms")?;
    }
    row(
        "score",
        "weighted p95",
        "score",
        s.score.weighted_p95_ms,
        "ms",
    )?;
    row("score", "pooled p95", "p95", s.score.pooled_p95_ms, "ms")?;
    let t = &s.throughput;
    row(
        "throughput",
        "messages submitted",
        "rate",
        Some(t.messages_submitted_per_hour),
        "per hour",
    )?;
    row(
        "throughput",
        "recipients delivered",
        "rate",
        Some(t.recipients_delivered_per_hour),
        "per hour",
    )?;
    row(
        "throughput",
        "message opens",
        "rate",
        Some(t.message_opens_per_second),
        "per second",
    )?;
    row(
        "throughput",
        "folder opens",
        "rate",
        Some(t.folder_opens_per_second),
        "per second",
    )?;
    row(
        "throughput",
        "actions",
        "rate",
        Some(t.actions_per_second),
        "per second",
    )?;
    let d = &s.delivery;
    row(
        "delivery",
        "recipients",
        "submitted",
        Some(d.submitted_recipients as f64),
        "recipients",
    )?;
    row(
        "delivery",
        "recipients",
        "delivered",
        Some(d.delivered_recipients as f64),
        "recipients",
    )?;
    row(
        "delivery",
        "recipients",
        "lost",
        Some(d.lost as f64),
        "recipients",
    )?;
    row("delivery", "latency", "p95", d.p95_ms, "ms")?;
    for r in &s.resources {
        row("resource", &r.metric, "mean", Some(r.mean), "")?;
        row(
            "resource",
            &r.metric,
            "high average",
            Some(r.high_average),
            "",
        )?;
        row(
            "resource",
            &r.metric,
            "high average std dev",
            Some(r.high_average_std_dev),
            "",
        )?;
    }
    writer.flush()?;
    Ok(())
}

/// The summary as GitHub-flavoured Markdown: verdict, per-action table,
/// throughput, resources and warnings.
pub fn render_summary_markdown(s: &Summary) -> String {
    let mut out = String::new();
    let ms = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), short);
    let _ = writeln!(
        out,
        "## peakhour run {}\n\n**{}** · {} users of {} · seed {} · weighted p95 score {} ms · {} s steady\n",
        s.run_id,
        s.verdict.as_str().to_uppercase(),
        s.users,
        s.profile,
        s.seed,
        ms(s.score.weighted_p95_ms),
        short(s.steady.length_s)
    );
    if s.interrupted {
        out.push_str("> **Warning:** the run was interrupted.\n\n");
    }
    for shortcut in &s.security_shortcuts {
        let _ = writeln!(out, "> **Warning:** security shortcut: {shortcut}\n");
    }
    if s.client_bound {
        let _ = writeln!(
            out,
            "> **Warning:** client-bound: {}\n",
            s.client_bound_reasons.join("; ")
        );
    }
    if s.delivery.lost > 0 {
        let _ = writeln!(out, "> **Warning:** {} recipients lost.\n", s.delivery.lost);
    }
    out.push_str("| action | count | p50 ms | p95 ms | p99 ms | max ms | errors | QoS |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for (name, a) in &s.actions {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            a.count,
            ms(a.p50_ms),
            ms(a.p95_ms),
            ms(a.p99_ms),
            ms(a.max_ms),
            a.errors,
            if a.qos_pass { "ok" } else { "FAIL" }
        );
    }
    let t = &s.throughput;
    let _ = writeln!(
        out,
        "\n| throughput (steady state) | value |\n| --- | ---: |\n| Messages Submitted per hour | {} |\n| Message Recipients Delivered per hour | {} |\n| Message Opens/Sec | {} |\n| Folder Opens/Sec | {} |\n| Actions/Sec | {} |",
        short(t.messages_submitted_per_hour),
        short(t.recipients_delivered_per_hour),
        short(t.message_opens_per_second),
        short(t.folder_opens_per_second),
        short(t.actions_per_second)
    );
    if !s.resources.is_empty() {
        out.push_str("\n| server metric | mean | p95 | max | high average ± std dev |\n| --- | ---: | ---: | ---: | ---: |\n");
        for r in &s.resources {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} ± {} |",
                r.label,
                short(r.mean),
                short(r.p95),
                short(r.max),
                short(r.high_average),
                short(r.high_average_std_dev)
            );
        }
    }
    if let Some(b) = &s.bottleneck {
        let _ = writeln!(out, "\n**Bottleneck:** {}", b.line);
    }
    out
}
