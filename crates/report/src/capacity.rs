//! The files of `peakhour sweep`: `capacity.csv`, `capacity.json` (checked
//! against [`CAPACITY_SCHEMA`]), `capacity.html` (through
//! [`crate::capacity_html`]), and the capacity analysis as terminal text.
//!
//! The analysis and its sentences come from
//! [`peakhour_analysis::capacity`]; this module only lays them out.

use std::fmt::Write as _;
use std::io::Write;

use peakhour_analysis::capacity::sweep::{
    P95Basis, SweepAnalysis, SweepOutcome, SweepStep, ThroughputUnit,
};
use peakhour_analysis::capacity::{CapacityAnalysis, UslFit};
use serde::{Deserialize, Serialize};

use crate::ReportError;
use crate::capacity_html::{CapacityPage, render_capacity_html};
use crate::csv::csv_writer;
use crate::curve_csv::CurveColumns;
use crate::number::format_number as num;

/// The fixed columns of `capacity.csv`; `p95_ms.<action>` columns follow,
/// one per action, in name order.
pub const CAPACITY_CSV_COLUMNS: [&str; 13] = [
    "users",
    "throughput_actions_per_s",
    "weighted_p95_ms",
    "max_action_p95_ms",
    "actions",
    "errors",
    "error_ratio",
    "cpu_busy_pct",
    "bottleneck",
    "client_bound",
    "verdict",
    "interrupted",
    "run_dir",
];

/// The JSON Schema (draft 2020-12) of `capacity.json`, as committed at
/// `schemas/capacity.schema.json`.
pub const CAPACITY_SCHEMA: &str = include_str!("../../../schemas/capacity.schema.json");

/// `capacity.json`: the curve's analysis, and the sweep that measured it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapacityJson {
    /// Peak, shape, QoS capacity, USL fit, knee, warnings and options.
    #[serde(flatten)]
    pub analysis: CapacityAnalysis,
    /// How the curve was measured.
    pub sweep: SweepJson,
}

/// The `sweep` object of `capacity.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepJson {
    /// The sweep directory.
    pub dir: String,
    /// The profile's name.
    pub profile: String,
    /// The seed of init and every step.
    pub seed: u64,
    /// Day compression.
    pub speed: Option<f64>,
    /// The user counts planned.
    pub steps_planned: Vec<u32>,
    /// The user counts run (fewer when the sweep stopped early).
    pub steps_run: Vec<u32>,
    /// What the load counts: `users`, or `clients` for a file server.
    pub load: String,
    /// What the throughput counts: `actions_per_second`, or `bytes_per_second` for a
    /// file server.
    pub throughput: String,
    /// Which p95 the curve uses.
    pub p95_basis: P95Basis,
    /// Where that p95 comes from.
    pub p95_source: String,
    /// The p95 limit of the QoS capacity, ms.
    pub qos_p95_ms: f64,
    /// The early-stop error ratio.
    pub max_error_ratio: f64,
    /// Why the sweep stopped climbing early.
    pub stopped_early: Option<String>,
    /// Why a step failed to give results.
    pub failed: Option<String>,
    /// The sweep was interrupted.
    pub interrupted: bool,
    /// The capacity statement.
    pub statement: Vec<String>,
    /// `--price`: seed 004's price/performance, the price over the peak throughput (in
    /// Mbit/s for a file server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_performance: Option<peakhour_analysis::plan::PricePerformance>,
}

/// `capacity.json`'s text: pretty-printed, valid against [`CAPACITY_SCHEMA`].
pub fn capacity_json(doc: &CapacityJson) -> Result<String, ReportError> {
    Ok(serde_json::to_string_pretty(doc)?)
}

fn cell(v: Option<f64>) -> String {
    v.map(|v| format!("{v}")).unwrap_or_default()
}

/// `capacity.csv` as cells: the header ([`CAPACITY_CSV_COLUMNS`], then
/// `p95_ms.<action>` per action) and one row per step.
pub fn capacity_table(steps: &[SweepStep]) -> (Vec<String>, Vec<Vec<String>>) {
    let actions: std::collections::BTreeSet<&String> =
        steps.iter().flat_map(|s| s.action_p95_ms.keys()).collect();
    let mut header: Vec<String> = CAPACITY_CSV_COLUMNS.iter().map(|c| c.to_string()).collect();
    if steps
        .first()
        .is_some_and(|s| s.unit == ThroughputUnit::BytesPerSecond)
    {
        // A file sweep: NetBench's clients and bytes per second (seed 004's table).
        header[0] = "clients".into();
        header[1] = "throughput_bytes_per_s".into();
    }
    header.extend(actions.iter().map(|a| format!("p95_ms.{a}")));
    let rows = steps
        .iter()
        .map(|s| {
            let mut row = vec![
                s.users.to_string(),
                cell(Some(s.throughput)),
                cell(s.weighted_p95_ms),
                cell(s.max_action_p95_ms()),
                s.attempts.to_string(),
                s.errors.to_string(),
                s.error_ratio()
                    .map(|r| format!("{r:.4}"))
                    .unwrap_or_default(),
                s.cpu_busy_pct
                    .map(|c| format!("{c:.1}"))
                    .unwrap_or_default(),
                s.bottleneck.clone().unwrap_or_default(),
                s.client_bound.to_string(),
                s.verdict.as_str().to_string(),
                s.interrupted.to_string(),
                s.run_dir.clone(),
            ];
            row.extend(
                actions
                    .iter()
                    .map(|a| cell(s.action_p95_ms.get(*a).copied().flatten())),
            );
            row
        })
        .collect();
    (header, rows)
}

/// Writes `capacity.csv`.
pub fn write_capacity_csv(steps: &[SweepStep], out: impl Write) -> Result<(), ReportError> {
    let (header, rows) = capacity_table(steps);
    let mut writer = csv_writer(out);
    for row in std::iter::once(&header).chain(&rows) {
        writer.write_record(row)?;
    }
    writer.flush()?;
    Ok(())
}

/// The steps as capacity.html shows them: words for headers instead of
/// capacity.csv's column names, numbers rounded for reading, and narrow enough
/// to fit the page (the run directory by its last name, `client_bound` and
/// `interrupted` folded into the verdict, each action's p95 in a table of its
/// own: `html_action_table`).
pub fn html_steps_table(steps: &[SweepStep]) -> (Vec<String>, Vec<Vec<String>>) {
    let files = steps
        .first()
        .is_some_and(|s| s.unit == ThroughputUnit::BytesPerSecond);
    let header = [
        if files { "clients" } else { "users" },
        "verdict",
        if files {
            "throughput (bytes/s)"
        } else {
            "throughput (actions/s)"
        },
        "weighted p95 (ms)",
        "slowest action's p95 (ms)",
        "actions",
        "errors",
        "server CPU busy (%)",
        "bottleneck",
        "run directory",
    ]
    .map(String::from)
    .to_vec();
    let round = |v: Option<f64>| v.map(crate::number::format_number).unwrap_or_default();
    let rows = steps
        .iter()
        .map(|s| {
            let mut verdict = s.verdict.as_str().to_string();
            if s.client_bound {
                verdict.push_str(", client-bound");
            }
            if s.interrupted {
                verdict.push_str(", interrupted");
            }
            let errors = match s.error_ratio() {
                Some(r) if s.errors > 0 => format!("{} ({:.2}%)", s.errors, r * 100.0),
                _ => s.errors.to_string(),
            };
            let dir = std::path::Path::new(&s.run_dir)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| s.run_dir.clone());
            vec![
                s.users.to_string(),
                verdict,
                round(Some(s.throughput)),
                round(s.weighted_p95_ms),
                round(s.max_action_p95_ms()),
                s.attempts.to_string(),
                errors,
                round(s.cpu_busy_pct),
                s.bottleneck.clone().unwrap_or_default(),
                dir,
            ]
        })
        .collect();
    (header, rows)
}

/// Each action's p95 per step (ms), for capacity.html: one column per action.
pub fn html_action_table(steps: &[SweepStep]) -> (Vec<String>, Vec<Vec<String>>) {
    let actions: std::collections::BTreeSet<&String> =
        steps.iter().flat_map(|s| s.action_p95_ms.keys()).collect();
    let files = steps
        .first()
        .is_some_and(|s| s.unit == ThroughputUnit::BytesPerSecond);
    let mut header = vec![if files { "clients" } else { "users" }.to_string()];
    header.extend(actions.iter().map(|a| a.to_string()));
    let rows = steps
        .iter()
        .map(|s| {
            let mut row = vec![s.users.to_string()];
            row.extend(actions.iter().map(|a| {
                s.action_p95_ms
                    .get(*a)
                    .copied()
                    .flatten()
                    .map(crate::number::format_number)
                    .unwrap_or_default()
            }));
            row
        })
        .collect();
    (header, rows)
}

/// `capacity.html` for a sweep's analysis and steps.
pub fn render_sweep_html(
    title: &str,
    subtitle: &str,
    sweep: &SweepAnalysis,
    basis: P95Basis,
    steps: &[SweepStep],
) -> String {
    let (header, rows) = html_steps_table(steps);
    let (action_header, action_rows) = html_action_table(steps);
    let unit = steps.first().map(|s| s.unit).unwrap_or_default();
    render_capacity_html(&CapacityPage {
        title,
        subtitle,
        analysis: &sweep.analysis,
        load_label: unit.load(),
        throughput_label: unit.label(),
        p95_label: basis.label(),
        statement: &sweep.statement,
        table_header: &header,
        table_rows: &rows,
        action_header: &action_header,
        action_rows: &action_rows,
        notes: &sweep.notes,
    })
}

/// `peakhour analyze capacity --json`: the analysis, and under `input` the
/// file and the columns it was computed from.
pub fn analysis_json(
    analysis: &CapacityAnalysis,
    file: &str,
    columns: &CurveColumns<'_>,
) -> Result<String, ReportError> {
    let mut value = serde_json::to_value(analysis)?;
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "input".to_string(),
            serde_json::json!({
                "file": file,
                "load_column": columns.load,
                "throughput_column": columns.throughput,
                "p95_column": columns.p95,
            }),
        );
    }
    Ok(serde_json::to_string_pretty(&value)?)
}

/// What a sweep was asked for, as its files tell it beside the steps.
#[derive(Debug, Clone)]
pub struct SweepPlan<'a> {
    /// The sweep directory.
    pub dir: &'a str,
    /// The profile's name.
    pub profile: &'a str,
    /// The seed asked for (each step records the one it ran with).
    pub seed: u64,
    /// The user counts planned.
    pub steps_planned: &'a [u32],
    /// Which p95 the curve uses.
    pub basis: P95Basis,
    /// The early-stop error ratio.
    pub max_error_ratio: f64,
    /// Each step's phases as people read them: `30s ramp-up, 2m steady, 10s drain`.
    pub phases: String,
}

/// `capacity.json`'s document for a sweep that ran `outcome` and was analysed as `sweep`.
pub fn sweep_json(
    plan: &SweepPlan<'_>,
    sweep: &SweepAnalysis,
    outcome: &SweepOutcome,
) -> CapacityJson {
    CapacityJson {
        analysis: sweep.analysis.clone(),
        sweep: SweepJson {
            dir: plan.dir.to_owned(),
            profile: plan.profile.to_owned(),
            seed: outcome.steps.first().map_or(plan.seed, |s| s.seed),
            speed: outcome.speed(),
            steps_planned: plan.steps_planned.to_vec(),
            steps_run: outcome.steps.iter().map(|s| s.users).collect(),
            load: sweep.unit.load().into(),
            throughput: sweep.unit.field().into(),
            p95_basis: plan.basis,
            p95_source: plan.basis.source().into(),
            qos_p95_ms: sweep.qos.limit_ms,
            max_error_ratio: plan.max_error_ratio,
            stopped_early: outcome.stopped_early.clone(),
            failed: outcome.failed.clone(),
            interrupted: outcome.interrupted,
            statement: sweep.statement.clone(),
            price_performance: None,
        },
    }
}

/// `--price`'s line: seed 004's price over the peak throughput.
pub fn price_line(p: &peakhour_analysis::plan::PricePerformance) -> String {
    format!(
        "price/performance: {} / {:.1} {} = {} per {} (seed 004: price over peak throughput)",
        p.price,
        p.peak_throughput,
        p.throughput_unit,
        p.per_throughput_unit
            .map_or_else(|| "-".to_owned(), |v| format!("{v:.2}")),
        p.throughput_unit
    )
}

/// `capacity.html` for a sweep, titled with its profile, users, seed and phases.
pub fn sweep_html(plan: &SweepPlan<'_>, sweep: &SweepAnalysis, outcome: &SweepOutcome) -> String {
    let users: Vec<String> = outcome.steps.iter().map(|s| s.users.to_string()).collect();
    let speed = outcome.speed().map(|s| format!(" · speed {s}"));
    let subtitle = format!(
        "{} {} · seed {}{} · each step {} · {}",
        sweep.unit.load(),
        users.join(", "),
        plan.seed,
        speed.unwrap_or_default(),
        plan.phases,
        plan.dir
    );
    let title = format!("peakhour sweep: {}", plan.profile);
    render_sweep_html(&title, &subtitle, sweep, plan.basis, &outcome.steps)
}

/// One finished step in a line, as the sweep prints it.
pub fn step_line(s: &SweepStep) -> String {
    let opt = |v: Option<f64>, decimals: usize| {
        v.map(|v| format!("{v:.decimals$}"))
            .unwrap_or_else(|| "-".into())
    };
    let throughput = match s.unit {
        ThroughputUnit::ActionsPerSecond => format!("{} actions/s", opt(Some(s.throughput), 2)),
        ThroughputUnit::BytesPerSecond => s.unit.format(s.throughput),
    };
    format!(
        "{} {}: {throughput}, weighted p95 {} ms, max action p95 {} ms, errors {}/{}, CPU {}, bottleneck {}{}, verdict {}{}",
        s.users,
        s.unit.load(),
        opt(s.weighted_p95_ms, 0),
        opt(s.max_action_p95_ms(), 0),
        s.errors,
        s.attempts,
        s.cpu_busy_pct
            .map(|c| format!("{c:.0}%"))
            .unwrap_or_else(|| "-".into()),
        s.bottleneck.as_deref().unwrap_or("-"),
        if s.client_bound {
            " (CLIENT-BOUND)"
        } else {
            ""
        },
        s.verdict.as_str(),
        if s.interrupted { " (interrupted)" } else { "" },
    )
}

/// The end of a sweep for the terminal: the analysis, the capacity
/// statement, the notes and where the files are.
pub fn render_sweep_text(sweep: &SweepAnalysis, basis: P95Basis, dir: &str) -> String {
    let mut text = String::from("\n");
    let unit = sweep.unit;
    text.push_str(&render_capacity_text(
        &sweep.analysis,
        &format!(
            "throughput ({}) and {} against {}, sweep {dir}",
            unit.label(),
            basis.label(),
            unit.load(),
        ),
    ));
    let _ = writeln!(text, "\nCapacity statement");
    for s in &sweep.statement {
        let _ = writeln!(text, "  {s}");
    }
    let _ = writeln!(text);
    for n in &sweep.notes {
        let _ = writeln!(text, "note: {n}");
    }
    let _ = writeln!(
        text,
        "results: {dir} (capacity.csv, capacity.json, capacity.html, step-*u/)"
    );
    text
}

/// A capacity analysis as text for the terminal: the points, then peak,
/// shape, knee, QoS capacity, USL fit, conclusions and warnings.
pub fn render_capacity_text(a: &CapacityAnalysis, title: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Capacity: {title} ({} points)\n", a.points.len());
    points_table(&mut out, a);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Peak      {} at a load of {}",
        num(a.peak.throughput),
        num(a.peak.load)
    );
    let s = &a.shape;
    let ratio = |r: Option<f64>| {
        r.map(|r| format!("{r:.2}"))
            .unwrap_or_else(|| "-".to_string())
    };
    let _ = writeln!(out, "Shape     {}", s.statement);
    if let (Some(approach), fall) = (s.approach, s.fall) {
        let _ = writeln!(
            out,
            "          approach {} (slope into the peak / steepest slope = {}), fall {} ({})",
            approach.as_str(),
            ratio(s.approach_ratio),
            fall.map(|f| f.as_str()).unwrap_or("-"),
            ratio(s.fall_ratio)
        );
    }
    let _ = writeln!(out, "          rule: {}", s.rule);
    let _ = match &a.knee {
        Some(k) => writeln!(
            out,
            "Knee      {} at a load of {} (Kneedle, S = {}; difference {:.3}, threshold {:.3})",
            num(k.throughput),
            num(k.load),
            k.sensitivity,
            k.difference,
            k.threshold
        ),
        None => writeln!(
            out,
            "Knee      none found (Kneedle, S = {})",
            a.options.knee_sensitivity
        ),
    };
    if let Some(q) = &a.qos {
        let _ = writeln!(out, "Capacity  {}", q.statement);
        let _ = writeln!(out, "          method: {}", q.method);
    }
    match (&a.usl, &a.usl_error) {
        (Some(u), _) => usl_text(&mut out, u),
        (None, Some(e)) => {
            let _ = writeln!(out, "USL       not fitted: {e}");
        }
        (None, None) => {}
    }
    let _ = writeln!(out, "\nConclusions");
    for c in a.conclusions() {
        let _ = writeln!(out, "  - {c}");
    }
    if !a.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings");
        for w in &a.warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    out
}

fn points_table(out: &mut String, a: &CapacityAnalysis) {
    let has_p95 = a.points.iter().any(|p| p.p95_ms.is_some());
    let _ = writeln!(
        out,
        "  {:>10}  {:>16}  {:>10}  {:>16}",
        "load",
        "throughput",
        if has_p95 { "p95 ms" } else { "" },
        if a.usl.is_some() { "USL fit" } else { "" }
    );
    for p in &a.points {
        let mark = if p.load == a.peak.load {
            "  <- peak"
        } else if a.knee.as_ref().is_some_and(|k| k.load == p.load) {
            "  <- knee"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {:>10}  {:>16}  {:>10}  {:>16}{mark}",
            num(p.load),
            num(p.throughput),
            p.p95_ms.map(num).unwrap_or_default(),
            a.usl
                .as_ref()
                .map(|u| num(u.predict(p.load)))
                .unwrap_or_default(),
        );
    }
}

fn usl_text(out: &mut String, u: &UslFit) {
    let se = |v: Option<f64>| v.map(|v| format!(" ± {v:.3e}")).unwrap_or_default();
    let errors = u.std_errors;
    let _ = writeln!(
        out,
        "USL       X(N) = gamma N / (1 + alpha (N-1) + beta N (N-1))\n          \
         alpha = {:.4e}{}  beta = {:.4e}{}  gamma = {:.6}{}",
        u.alpha,
        se(errors.map(|e| e.alpha)),
        u.beta,
        se(errors.map(|e| e.beta)),
        u.gamma,
        se(errors.map(|e| e.gamma)),
    );
    let _ = match u.residual_std_error {
        Some(rse) => writeln!(
            out,
            "          residual standard error {} on {} degrees of freedom",
            num(rse),
            u.degrees_of_freedom
        ),
        None => writeln!(out, "          no degrees of freedom left for errors"),
    };
    let opt = |v: Option<f64>| v.map(num).unwrap_or_else(|| "unbounded".to_string());
    let _ = writeln!(
        out,
        "          N_max = sqrt((1-alpha)/beta) = {}, X(N_max) = {}; N_opt = 1/alpha = {}; \
         X_lim = gamma/alpha = {}",
        opt(u.n_max),
        opt(u.x_max),
        opt(u.n_opt),
        opt(u.x_lim)
    );
    if !u.at_bounds.is_empty() {
        let _ = writeln!(out, "          at bounds: {}", u.at_bounds.join(", "));
    }
    let _ = writeln!(out, "          method: {}", u.method);
}
