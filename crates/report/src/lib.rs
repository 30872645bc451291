//! Renders a peakhour run for people and tools.
//!
//! Every renderer is pure: it takes a [`Summary`] or a [`RunRecord`] from
//! `peakhour-analysis` and returns a `String` or writes into a
//! [`std::io::Write`]; the caller decides where the bytes go.
//!
//! | file | function | content |
//! |---|---|---|
//! | `summary.json` | [`summary_json`] | the [`Summary`], checked against [`SUMMARY_SCHEMA`] |
//! | `intervals.csv` | [`write_intervals_csv`] | one row per interval and action ([`INTERVALS_CSV_HEADER`]) |
//! | `latency.hlog` | [`write_hlog`] | HdrHistogram interval log, one entry per action per interval |
//! | `errors.csv` | [`write_errors_csv`] | errors by interval, action and kind ([`ERRORS_CSV_HEADER`]) |
//! | `state-violations.csv` | [`write_state_violations_csv`] | each state-check violation with its evidence ([`STATE_VIOLATIONS_CSV_HEADER`]) |
//! | terminal | [`render_terminal`] | per-action table, score, throughput, delivery, server high averages and bottleneck, warnings, verdict |
//! | terminal | [`render_monitor`] | the server part alone, for `peakhour monitor` |
//! | `capacity.csv` | [`capacity::write_capacity_csv`] | one row per sweep step ([`capacity::CAPACITY_CSV_COLUMNS`]) |
//! | `capacity.json` | [`capacity::capacity_json`] | the capacity analysis of a sweep, checked against [`capacity::CAPACITY_SCHEMA`] |
//! | `capacity.html` | [`capacity::sweep_html`] | the capacity curve's charts, statement and steps |
//! | `report.html` | [`render_html`] | the full-disclosure report; [`monitor_view`] reduces `monitor.csv` to its server timelines and counter table |
//! | `tasks.*`, `plan.*`, `matrix.*` | [`plan`] | the planner's outputs: atomic-task costs, the sizing plan, the CPU × memory matrix |
//! | stdout | [`render_summary_as`], [`render_comparison_as`] | a summary or a comparison in one [`TextFormat`] |
//!
//! Every page shares one style sheet and one SVG chart kit ([`html`]),
//! every number one formatter ([`number`]), and every CSV one writer (the
//! `csv` crate). [`curve_csv`] reads the tables `peakhour analyze capacity`
//! is given.
//!
//! The meaning of every field and column is in this crate's README.
//!
//! [`Summary`]: peakhour_analysis::Summary
//! [`RunRecord`]: peakhour_analysis::RunRecord
#![deny(missing_docs)]

pub mod answer;
pub mod capacity;
pub mod capacity_html;
mod closing;
mod compare;
mod csv;
pub mod curve_csv;
mod hlog;
pub mod html;
mod json;
mod monitor_view;
pub mod number;
pub mod plan;
mod server_facts;
mod summary_formats;
mod terminal;
mod time;
mod window_text;

use peakhour_analysis::AnalysisError;

pub use closing::{render_monitor_session, render_run_end, results_line, run_label};
pub use compare::{
    BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, BootstrapSettings, COMPARE_CSV_HEADER,
    COMPARE_FORMAT_VERSION, COMPARE_SCHEMA, Change, CompareRun, Comparison, MAX_BLOCKS,
    MetricComparison, RunInfo, compare, compare_json, render_compare_markdown, render_compare_text,
    write_compare_csv,
};
pub use csv::{
    ERRORS_CSV_HEADER, INCONSISTENT, INTERVALS_CSV_HEADER, STATE_CHECK_ACTION,
    STATE_VIOLATIONS_CSV_HEADER, write_error_rows, write_errors_csv, write_interval_rows,
    write_intervals_csv, write_state_violations_csv,
};
pub use hlog::{write_hlog, write_hlog_intervals};
pub use html::{
    HostFacts, MonitorChart, MonitorView, REPORT_SECTIONS, ReportInput, ServerCounter,
    ServerSoftware, render_compare_html, render_html,
};
pub use json::{SUMMARY_SCHEMA, summary_json};
pub use monitor_view::monitor_view;
pub use summary_formats::{
    SUMMARY_CSV_HEADER, TextFormat, render_comparison_as, render_summary_as,
    render_summary_markdown, write_summary_csv,
};
pub use terminal::{render_monitor, render_terminal, safety_notes};
pub use window_text::window_lines;

/// What can go wrong while rendering.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Writing to the output failed.
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
    /// JSON serialization failed.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A stored histogram could not be decoded.
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// The run's `started_at` is not an RFC 3339 UTC time.
    #[error("started_at {0:?} is not an RFC 3339 UTC time like 2026-05-01T12:00:00Z")]
    StartTime(String),
    /// Writing a CSV file failed.
    #[error("CSV: {0}")]
    Csv(#[from] ::csv::Error),
    /// The HdrHistogram log writer failed.
    #[error("interval log: {0}")]
    Hlog(String),
}
