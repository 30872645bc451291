//! `peakhour compare`: runs side by side, with changes in percent against
//! the first run and a bootstrap that tells a real difference from
//! run-to-run noise.
//!
//! # The noise test
//!
//! For latency and throughput the steady-state intervals are the unit of
//! resampling: each run's intervals are drawn with replacement (1000
//! resamples, a fixed seed, so the same runs always give the same answer),
//! merged, and the figure recomputed (a p95 from the merged per-interval
//! HdrHistograms, a rate from the summed counts). The 2.5th and 97.5th
//! percentiles of the resampled change in percent make a 95% interval;
//! when it contains 0 the difference is *within run-to-run noise*. Runs with
//! more than [`MAX_BLOCKS`] intervals are resampled in blocks of consecutive
//! intervals, which keeps the cost bounded and respects their correlation.
//! The bootstrap itself is the analysis crate's
//! ([`peakhour_analysis::bootstrap`]); this module chooses the figures and
//! words the result.
//!
//! Server resources come from the monitor's summary (`Summary::resources`),
//! not from intervals: their change counts as noise when it is smaller than
//! the larger of the two high averages' standard deviations.

use std::collections::BTreeSet;
use std::fmt::Write as _;

pub use peakhour_analysis::bootstrap::{BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, MAX_BLOCKS};
use peakhour_analysis::bootstrap::{IntervalBlocks as Blocks, percentile_interval, resample_picks};
use peakhour_analysis::{RunRecord, Summary};
use serde::{Deserialize, Serialize};

use crate::ReportError;
use crate::csv::{csv_writer, write_header};
/// Version of the comparison JSON (`schemas/compare.schema.json`).
pub const COMPARE_FORMAT_VERSION: u32 = 1;
/// The JSON Schema (draft 2020-12) of the comparison JSON, as committed at
/// `schemas/compare.schema.json`.
pub const COMPARE_SCHEMA: &str = include_str!("../../../schemas/compare.schema.json");

/// One run to compare.
#[derive(Clone, Copy, Debug)]
pub struct CompareRun<'a> {
    /// How the run is named in the output (e.g. its directory).
    pub label: &'a str,
    /// The run as recorded.
    pub record: &'a RunRecord,
    /// Its summary (with the monitor's `resources` when a monitor ran).
    pub summary: &'a Summary,
}

/// The comparison of two or more runs against the first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// [`COMPARE_FORMAT_VERSION`].
    pub format_version: u32,
    /// The runs, the baseline first.
    pub runs: Vec<RunInfo>,
    /// Why the runs may not be comparable (different profile, users ...).
    pub warnings: Vec<String>,
    /// How noise was judged.
    pub bootstrap: BootstrapSettings,
    /// Every figure compared.
    pub metrics: Vec<MetricComparison>,
}

/// What identifies one compared run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Label given on the command line.
    pub label: String,
    /// Run id.
    pub run_id: String,
    /// Profile name.
    pub profile: String,
    /// Simulated users.
    pub users: u32,
    /// Seed.
    pub seed: u64,
    /// Day compression.
    pub speed: f64,
    /// Steady state measured, seconds.
    pub steady_s: f64,
    /// Steady intervals.
    pub steady_intervals: usize,
    /// `pass` or `fail`.
    pub verdict: String,
    /// The run was interrupted.
    pub interrupted: bool,
    /// The run was client-bound.
    pub client_bound: bool,
}

/// The bootstrap's settings, recorded so the result can be reproduced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BootstrapSettings {
    /// Resamples drawn.
    pub resamples: usize,
    /// RNG seed.
    pub seed: u64,
    /// Confidence of the interval (0.95).
    pub confidence: f64,
    /// What is resampled.
    pub unit: String,
}

/// One figure across the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// `latency`, `throughput` or `resource`.
    pub kind: String,
    /// Name, e.g. `read p95`, `actions per second`, `CPU busy % (high average)`.
    pub metric: String,
    /// The action for per-action figures.
    pub action: Option<String>,
    /// Unit, e.g. `ms`, `per second`, `%`.
    pub unit: String,
    /// Whether a lower value is better (latency, resource use).
    pub lower_is_better: bool,
    /// The value in each run, in run order (`null` = not measured).
    pub values: Vec<Option<f64>>,
    /// Each later run against the baseline.
    pub changes: Vec<Change>,
}

/// One run's change against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The run's label.
    pub run: String,
    /// (value − baseline) / baseline × 100; `null` when either is missing or the baseline is 0.
    pub change_pct: Option<f64>,
    /// Lower end of the 95% interval of the change, percent.
    pub ci_low_pct: Option<f64>,
    /// Upper end of the 95% interval of the change, percent.
    pub ci_high_pct: Option<f64>,
    /// `bootstrap`, `std-dev` or `none`.
    pub noise_method: String,
    /// Whether the difference is within run-to-run noise (`null` = unknown).
    pub within_noise: Option<bool>,
    /// The change in words, e.g. `B: read p95 13.5% lower (beyond run-to-run noise: 95% interval −18.2% … −8.9%)`.
    pub statement: String,
}

/// A figure computed from a selection of blocks.
type Figure<'a> = Box<dyn Fn(&Blocks, &[usize], &mut Vec<u64>) -> Option<f64> + 'a>;

struct Spec<'a> {
    kind: &'static str,
    metric: String,
    action: Option<String>,
    unit: &'static str,
    lower_is_better: bool,
    figure: Figure<'a>,
}

fn counter_rate(name: &'static str, per: f64) -> Figure<'static> {
    Box::new(move |b: &Blocks, pick: &[usize], _: &mut Vec<u64>| b.counter_rate(name, per, pick))
}

/// Compares `runs[1..]` against `runs[0]`.
pub fn compare(runs: &[CompareRun<'_>]) -> Result<Comparison, ReportError> {
    let blocks: Vec<Blocks> = runs
        .iter()
        .map(|r| Blocks::of(r.record))
        .collect::<Result<_, _>>()?;
    let warnings = warnings(runs, &blocks);
    let labels: Vec<&str> = runs.iter().map(|r| r.label).collect();
    // The resample picks, one set per run, shared by every figure so that
    // figures of one resample come from the same intervals.
    let picks = resample_picks(&blocks.iter().map(Blocks::len).collect::<Vec<_>>());
    let mut metrics: Vec<MetricComparison> = specs(runs)
        .iter()
        .filter_map(|spec| bootstrap_metric(spec, &blocks, &picks, &labels))
        .collect();
    resources(runs, &labels, &mut metrics);

    Ok(Comparison {
        format_version: COMPARE_FORMAT_VERSION,
        runs: runs
            .iter()
            .map(|r| RunInfo {
                label: r.label.to_owned(),
                run_id: r.summary.run_id.clone(),
                profile: r.summary.profile.clone(),
                users: r.summary.users,
                seed: r.summary.seed,
                speed: r.summary.meta.speed,
                steady_s: r.summary.steady.length_s,
                steady_intervals: r.summary.steady.intervals,
                verdict: r.summary.verdict.as_str().to_owned(),
                interrupted: r.summary.interrupted,
                client_bound: r.summary.client_bound,
            })
            .collect(),
        warnings,
        bootstrap: BootstrapSettings {
            resamples: BOOTSTRAP_RESAMPLES,
            seed: BOOTSTRAP_SEED,
            confidence: 0.95,
            unit: "steady-state interval (blocks of consecutive intervals beyond 200)".into(),
        },
        metrics,
    })
}

/// Why the runs may not be comparable, or their noise estimate coarse.
fn warnings(runs: &[CompareRun<'_>], blocks: &[Blocks]) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(base) = runs.first() {
        let b = base.summary;
        for r in &runs[1..] {
            let s = r.summary;
            if s.profile != b.profile {
                warnings.push(format!(
                    "{} ran profile {} but {} ran {}: the workloads differ, so the figures are not like for like",
                    r.label, s.profile, base.label, b.profile
                ));
            }
            if s.users != b.users {
                warnings.push(format!(
                    "{} ran {} users but {} ran {}: a different load, so differences are expected",
                    r.label, s.users, base.label, b.users
                ));
            }
            if s.meta.speed != b.meta.speed || s.meta.day != b.meta.day {
                warnings.push(format!(
                    "{} ran at speed ×{} (day {} s) but {} at ×{} (day {} s): a different load",
                    r.label,
                    s.meta.speed,
                    s.meta.day.as_secs(),
                    base.label,
                    b.meta.speed,
                    b.meta.day.as_secs()
                ));
            }
        }
    }
    for (r, bl) in runs.iter().zip(blocks) {
        if r.summary.interrupted {
            warnings.push(format!(
                "{} was interrupted: its figures are partial",
                r.label
            ));
        }
        if r.summary.client_bound {
            warnings.push(format!(
                "{} was client-bound: its figures may describe peakhour rather than the server",
                r.label
            ));
        }
        if bl.len() < 5 {
            warnings.push(format!(
                "{} has only {} steady intervals: the noise estimate is coarse",
                r.label,
                bl.len()
            ));
        }
    }
    warnings
}

/// The figures the bootstrap judges: each action's p95, then the rates.
fn specs(runs: &[CompareRun<'_>]) -> Vec<Spec<'static>> {
    let actions: BTreeSet<&String> = runs.iter().flat_map(|r| r.summary.actions.keys()).collect();
    let mut specs: Vec<Spec<'static>> = Vec::new();
    for action in actions {
        let a = action.clone();
        specs.push(Spec {
            kind: "latency",
            metric: format!("{action} p95"),
            action: Some(action.clone()),
            unit: "ms",
            lower_is_better: true,
            figure: Box::new(move |b: &Blocks, pick: &[usize], scratch: &mut Vec<u64>| {
                b.quantile_ms(&a, 0.95, pick, scratch)
            }),
        });
    }
    specs.push(Spec {
        kind: "throughput",
        metric: "actions per second".into(),
        action: None,
        unit: "per second",
        lower_is_better: false,
        figure: Box::new(|b: &Blocks, pick: &[usize], _: &mut Vec<u64>| b.actions_rate(pick)),
    });
    for (name, label, per, unit) in [
        (
            "messages_submitted",
            "messages submitted",
            3600.0,
            "per hour",
        ),
        (
            "recipients_delivered",
            "recipients delivered",
            3600.0,
            "per hour",
        ),
        ("message_opens", "message opens", 1.0, "per second"),
        ("folder_opens", "folder opens", 1.0, "per second"),
    ] {
        specs.push(Spec {
            kind: "throughput",
            metric: label.into(),
            action: None,
            unit,
            lower_is_better: false,
            figure: counter_rate(name, per),
        });
    }
    // File runs: NetBench's throughput, read and written apart.
    if runs
        .iter()
        .any(|r| r.summary.throughput.bytes_per_second.is_some())
    {
        for (name, label) in [
            ("bytes_read", "bytes read"),
            ("bytes_written", "bytes written"),
        ] {
            specs.push(Spec {
                kind: "throughput",
                metric: label.into(),
                action: None,
                unit: "bytes per second",
                lower_is_better: false,
                figure: counter_rate(name, 1.0),
            });
        }
    }
    specs
}

/// One figure across the runs, each later run's change with its bootstrap
/// interval; `None` when no run has the figure.
fn bootstrap_metric(
    spec: &Spec<'_>,
    blocks: &[Blocks],
    picks: &[Vec<Vec<usize>>],
    labels: &[&str],
) -> Option<MetricComparison> {
    let mut scratch = Vec::new();
    let values: Vec<Option<f64>> = blocks
        .iter()
        .map(|b| (spec.figure)(b, &b.all(), &mut scratch).map(round3))
        .collect();
    if values.iter().all(Option::is_none) {
        return None;
    }
    let base_resampled: Vec<Option<f64>> = picks[0]
        .iter()
        .map(|p| (spec.figure)(&blocks[0], p, &mut scratch))
        .collect();
    let mut changes = Vec::new();
    for i in 1..blocks.len() {
        let change = pct(values[0], values[i]);
        let mut diffs: Vec<f64> = picks[i]
            .iter()
            .zip(&base_resampled)
            .filter_map(|(p, base)| pct(*base, (spec.figure)(&blocks[i], p, &mut scratch)))
            .collect();
        // Fewer than half the resamples with a figure: no interval.
        let interval = (diffs.len() >= BOOTSTRAP_RESAMPLES / 2)
            .then(|| percentile_interval(&mut diffs, 0.025, 0.975))
            .flatten();
        let rounded = interval.map(|(l, h)| (round3(l), round3(h)));
        let (lo, hi) = (rounded.map(|r| r.0), rounded.map(|r| r.1));
        let within = rounded.map(|(l, h)| l <= 0.0 && h >= 0.0);
        let method = if within.is_some() {
            "bootstrap"
        } else {
            "none"
        };
        changes.push(change_of(
            labels[i],
            &spec.metric,
            spec.lower_is_better,
            change,
            lo,
            hi,
            method,
            within,
        ));
    }
    Some(MetricComparison {
        kind: spec.kind.into(),
        metric: spec.metric.clone(),
        action: spec.action.clone(),
        unit: spec.unit.into(),
        lower_is_better: spec.lower_is_better,
        values,
        changes,
    })
}

/// The monitor's high averages (seed 001's figure; over a steady phase
/// shorter than its window it equals the mean), where the baseline has them.
fn resources(runs: &[CompareRun<'_>], labels: &[&str], metrics: &mut Vec<MetricComparison>) {
    let Some(base) = runs.first() else { return };
    for r0 in &base.summary.resources {
        let found: Vec<Option<&peakhour_analysis::ResourceHighAverage>> = runs
            .iter()
            .map(|r| r.summary.resources.iter().find(|x| x.metric == r0.metric))
            .collect();
        let values: Vec<Option<f64>> = found
            .iter()
            .map(|f| f.map(|x| round3(x.high_average)))
            .collect();
        let metric = format!("{} (high average)", r0.label);
        let changes = (1..runs.len())
            .map(|i| {
                let change = pct(values[0], values[i]);
                let within = match (found[0], found[i]) {
                    (Some(a), Some(b)) => Some(
                        (b.high_average - a.high_average).abs()
                            <= a.high_average_std_dev.max(b.high_average_std_dev),
                    ),
                    _ => None,
                };
                change_of(
                    labels[i],
                    &metric,
                    true,
                    change,
                    None,
                    None,
                    if within.is_some() { "std-dev" } else { "none" },
                    within,
                )
            })
            .collect();
        metrics.push(MetricComparison {
            kind: "resource".into(),
            metric,
            action: None,
            unit: unit_of(&r0.metric).into(),
            lower_is_better: true,
            values,
            changes,
        });
    }
}

fn unit_of(metric: &str) -> &'static str {
    if metric.ends_with("_pct") {
        "%"
    } else if metric.ends_with("_kb_per_s") {
        "KiB/s"
    } else if metric.ends_with("_bytes_per_s") {
        "bytes/s"
    } else if metric.ends_with("_kb") {
        "KiB"
    } else if metric == "run_queue" {
        "tasks"
    } else if metric.starts_with("postfix_queue") {
        "messages"
    } else {
        ""
    }
}

#[allow(clippy::too_many_arguments)]
fn change_of(
    run: &str,
    metric: &str,
    _lower_is_better: bool,
    change: Option<f64>,
    lo: Option<f64>,
    hi: Option<f64>,
    method: &str,
    within: Option<bool>,
) -> Change {
    let mut statement = match change {
        Some(c) if c.abs() < 0.05 => format!("{run}: {metric} unchanged"),
        Some(c) => format!(
            "{run}: {metric} {}% {}",
            fmt_pct(c.abs()),
            if c < 0.0 { "lower" } else { "higher" }
        ),
        None => format!("{run}: {metric} not comparable (missing in one run)"),
    };
    if change.is_some() {
        match (within, lo, hi) {
            (Some(true), Some(l), Some(h)) => {
                let _ = write!(
                    statement,
                    " (within run-to-run noise: 95% interval {}% … {}%)",
                    signed(l),
                    signed(h)
                );
            }
            (Some(false), Some(l), Some(h)) => {
                let _ = write!(
                    statement,
                    " (beyond run-to-run noise: 95% interval {}% … {}%)",
                    signed(l),
                    signed(h)
                );
            }
            (Some(true), _, _) => {
                statement.push_str(" (within run-to-run noise: less than one std dev)")
            }
            (Some(false), _, _) => statement.push_str(" (more than one std dev)"),
            (None, _, _) => statement.push_str(" (noise unknown)"),
        }
    }
    Change {
        run: run.to_owned(),
        change_pct: change.map(round3),
        ci_low_pct: lo,
        ci_high_pct: hi,
        noise_method: method.to_owned(),
        within_noise: within,
        statement,
    }
}

fn pct(base: Option<f64>, value: Option<f64>) -> Option<f64> {
    match (base, value) {
        (Some(b), Some(v)) if b != 0.0 => Some((v - b) / b * 100.0),
        (Some(b), Some(v)) if b == 0.0 && v == 0.0 => Some(0.0),
        _ => None,
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

fn fmt_pct(v: f64) -> String {
    format!("{v:.1}")
}

fn signed(v: f64) -> String {
    if v > 0.0 {
        format!("+{v:.1}")
    } else if v < 0.0 {
        format!("−{:.1}", v.abs())
    } else {
        "0.0".into()
    }
}

fn value(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), crate::number::short)
}

fn change_cell(c: &Change) -> String {
    match c.change_pct {
        Some(p) if p.abs() < 0.05 => "0%".into(),
        Some(p) => format!("{}%", signed(p)),
        None => "-".into(),
    }
}

fn noise_cell(c: &Change) -> String {
    match (c.within_noise, c.ci_low_pct, c.ci_high_pct) {
        (Some(true), Some(l), Some(h)) => format!("noise [{}%, {}%]", signed(l), signed(h)),
        (Some(false), Some(l), Some(h)) => format!("real [{}%, {}%]", signed(l), signed(h)),
        (Some(true), _, _) => "noise (< 1 sd)".into(),
        (Some(false), _, _) => "> 1 sd".into(),
        (None, _, _) => "?".into(),
    }
}

/// Rows of the side-by-side table: header, then one row per metric.
fn table(c: &Comparison) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["metric".to_owned(), "unit".to_owned()];
    for r in &c.runs {
        header.push(r.label.clone());
    }
    for r in c.runs.iter().skip(1) {
        header.push(format!("{} change", r.label));
        header.push(format!("{} noise (95%)", r.label));
    }
    let rows = c
        .metrics
        .iter()
        .map(|m| {
            let mut row = vec![m.metric.clone(), m.unit.clone()];
            row.extend(m.values.iter().map(|v| value(*v)));
            for ch in &m.changes {
                row.push(change_cell(ch));
                row.push(noise_cell(ch));
            }
            row
        })
        .collect();
    (header, rows)
}

fn runs_lines(c: &Comparison) -> Vec<String> {
    c.runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "{}{}: run {} · {} · {} users · seed {} · speed ×{} · {} s steady in {} intervals · {}{}{}",
                r.label,
                if i == 0 { " (baseline)" } else { "" },
                r.run_id,
                r.profile,
                r.users,
                r.seed,
                r.speed,
                crate::number::short(r.steady_s),
                r.steady_intervals,
                r.verdict.to_uppercase(),
                if r.interrupted { " · interrupted" } else { "" },
                if r.client_bound { " · client-bound" } else { "" },
            )
        })
        .collect()
}

/// The comparison as aligned plain text.
pub fn render_compare_text(c: &Comparison) -> String {
    let mut out = String::new();
    for l in runs_lines(c) {
        let _ = writeln!(out, "{l}");
    }
    out.push('\n');
    for w in &c.warnings {
        let _ = writeln!(out, "WARNING: {w}");
    }
    if !c.warnings.is_empty() {
        out.push('\n');
    }
    let (header, rows) = table(c);
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
            if i < 2 {
                l.push_str(cell);
                l.push_str(&pad);
            } else {
                l.push_str(&pad);
                l.push_str(cell);
            }
            l.push_str("  ");
        }
        l.trim_end().to_owned()
    };
    let _ = writeln!(out, "{}", line(&header));
    let _ = writeln!(
        out,
        "{}",
        line(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>())
    );
    for row in &rows {
        let _ = writeln!(out, "{}", line(row));
    }
    out.push('\n');
    for m in &c.metrics {
        for ch in &m.changes {
            let _ = writeln!(out, "{}", ch.statement);
        }
    }
    let _ = writeln!(
        out,
        "\nnoise: bootstrap over steady-state intervals, {} resamples, seed {:#x}, 95% interval of the change; resources: change vs. the high averages' std dev",
        c.bootstrap.resamples, c.bootstrap.seed
    );
    out
}

/// The comparison as GitHub-flavoured Markdown.
pub fn render_compare_markdown(c: &Comparison) -> String {
    let mut out = String::from("## peakhour comparison\n\n");
    for l in runs_lines(c) {
        let _ = writeln!(out, "- {}", md(&l));
    }
    out.push('\n');
    for w in &c.warnings {
        let _ = writeln!(out, "> **Warning:** {}\n", md(w));
    }
    let (header, rows) = table(c);
    let _ = writeln!(
        out,
        "| {} |",
        header.iter().map(|h| md(h)).collect::<Vec<_>>().join(" | ")
    );
    let _ = writeln!(
        out,
        "|{}|",
        header
            .iter()
            .enumerate()
            .map(|(i, _)| if i < 2 { " --- " } else { " ---: " })
            .collect::<Vec<_>>()
            .join("|")
    );
    for row in &rows {
        let _ = writeln!(
            out,
            "| {} |",
            row.iter().map(|h| md(h)).collect::<Vec<_>>().join(" | ")
        );
    }
    out.push('\n');
    for m in &c.metrics {
        for ch in &m.changes {
            let _ = writeln!(out, "- {}", md(&ch.statement));
        }
    }
    let _ = writeln!(
        out,
        "\nNoise: bootstrap over steady-state intervals ({} resamples, seed {:#x}); a 95% interval containing 0 is within run-to-run noise.",
        c.bootstrap.resamples, c.bootstrap.seed
    );
    out
}

fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

/// CSV header of [`write_compare_csv`].
pub const COMPARE_CSV_HEADER: &str = "kind,metric,action,unit,run,value,baseline,change_pct,ci_low_pct,ci_high_pct,within_noise,noise_method";

/// The comparison as CSV: one row per metric and run (the baseline's row
/// has no change).
pub fn write_compare_csv(c: &Comparison, out: &mut impl std::io::Write) -> Result<(), ReportError> {
    let mut writer = csv_writer(out);
    write_header(&mut writer, COMPARE_CSV_HEADER)?;
    let num = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    for m in &c.metrics {
        for (i, run) in c.runs.iter().enumerate() {
            let change = i.checked_sub(1).and_then(|j| m.changes.get(j));
            writer.write_record([
                m.kind.clone(),
                m.metric.clone(),
                m.action.clone().unwrap_or_default(),
                m.unit.clone(),
                run.label.clone(),
                num(m.values.get(i).copied().flatten()),
                num(m.values.first().copied().flatten()),
                num(change.and_then(|c| c.change_pct)),
                num(change.and_then(|c| c.ci_low_pct)),
                num(change.and_then(|c| c.ci_high_pct)),
                change
                    .and_then(|c| c.within_noise)
                    .map_or_else(String::new, |b| b.to_string()),
                change.map_or_else(String::new, |c| c.noise_method.clone()),
            ])?;
        }
    }
    writer.flush()?;
    Ok(())
}

/// The comparison as pretty-printed JSON with a trailing newline, valid
/// against [`COMPARE_SCHEMA`].
pub fn compare_json(c: &Comparison) -> Result<String, ReportError> {
    let mut s = serde_json::to_string_pretty(c)?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements() {
        let c = change_of(
            "B",
            "read p95",
            true,
            Some(-13.5),
            Some(-18.0),
            Some(-9.0),
            "bootstrap",
            Some(false),
        );
        assert_eq!(
            c.statement,
            "B: read p95 13.5% lower (beyond run-to-run noise: 95% interval −18.0% … −9.0%)"
        );
        let c = change_of(
            "B",
            "read p95",
            true,
            Some(4.0),
            Some(-3.0),
            Some(11.0),
            "bootstrap",
            Some(true),
        );
        assert!(c.statement.contains("4.0% higher (within run-to-run noise"));
    }
}
