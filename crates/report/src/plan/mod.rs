//! The planner's outputs: `tasks.*`, `plan.*` and `matrix.*`.
//!
//! | output | JSON (schema) | CSV | terminal | HTML |
//! |---|---|---|---|---|
//! | atomic-task costs | [`tasks_json`] ([`TASKS_SCHEMA`]) | [`write_tasks_csv`] | [`render_tasks_terminal`] | [`render_tasks_html`]: seed 001's paired bars |
//! | the plan | [`plan_json`] ([`PLAN_SCHEMA`]) | [`write_plan_csv`] | [`render_plan_terminal`] | [`render_plan_html`]: sizing table, use against users |
//! | the CPU × memory matrix | [`matrix_json`] ([`MATRIX_SCHEMA`]) | [`write_matrix_csv`], [`write_relationships_csv`] | [`render_matrix_terminal`] | [`render_matrix_html`]: seed 003's grid and Table 3 |
//!
//! The values come from `peakhour_analysis::plan`; these functions only
//! lay them out. [`tasks_from_json`] reads a `tasks.json` back for
//! `peakhour plan --tasks`; [`write_tasks_files`], [`write_plan_files`] and
//! [`write_matrix_files`] write each output's files into a directory.

mod chart;
mod csv;
mod html;
mod terminal;

use std::path::Path;

use peakhour_analysis::plan::{Matrix, Plan, PlanRow, Significance, TaskSet};

use crate::number::{DASH, grouped, or_dash};

use crate::ReportError;

pub use csv::{
    MATRIX_CSV_FIXED_COLUMNS, PLAN_CSV_HEADER, RELATIONSHIPS_CSV_HEADER, TASKS_CSV_HEADER,
    write_matrix_csv, write_plan_csv, write_relationships_csv, write_tasks_csv,
};
pub use html::{render_matrix_html, render_plan_html, render_tasks_html};
pub use terminal::{render_matrix_terminal, render_plan_terminal, render_tasks_terminal};

/// The JSON Schema (draft 2020-12) of `tasks.json`, as committed at
/// `schemas/tasks.schema.json`.
pub const TASKS_SCHEMA: &str = include_str!("../../../../schemas/tasks.schema.json");
/// The JSON Schema of `plan.json` (`schemas/plan.schema.json`).
pub const PLAN_SCHEMA: &str = include_str!("../../../../schemas/plan.schema.json");
/// The JSON Schema of `matrix.json` (`schemas/matrix.schema.json`).
pub const MATRIX_SCHEMA: &str = include_str!("../../../../schemas/matrix.schema.json");

fn pretty<T: serde::Serialize>(value: &T) -> Result<String, ReportError> {
    let mut s = serde_json::to_string_pretty(value)?;
    s.push('\n');
    Ok(s)
}

/// `tasks.json`: pretty-printed, trailing newline.
pub fn tasks_json(tasks: &TaskSet) -> Result<String, ReportError> {
    pretty(tasks)
}

/// Reads a `tasks.json` back.
pub fn tasks_from_json(text: &str) -> Result<TaskSet, ReportError> {
    Ok(serde_json::from_str(text)?)
}

/// `plan.json`.
pub fn plan_json(plan: &Plan) -> Result<String, ReportError> {
    pretty(plan)
}

/// `matrix.json`.
pub fn matrix_json(matrix: &Matrix) -> Result<String, ReportError> {
    pretty(matrix)
}

/// Writes `tasks.json`, `tasks.csv` and `tasks.html` into `dir`.
pub fn write_tasks_files(dir: &Path, tasks: &TaskSet) -> Result<(), ReportError> {
    std::fs::write(dir.join("tasks.json"), tasks_json(tasks)?)?;
    let mut csv = Vec::new();
    write_tasks_csv(tasks, &mut csv)?;
    std::fs::write(dir.join("tasks.csv"), csv)?;
    std::fs::write(dir.join("tasks.html"), render_tasks_html(tasks))?;
    Ok(())
}

/// Writes `plan.json`, `plan.csv` and `plan.html` into `dir`.
pub fn write_plan_files(dir: &Path, plan: &Plan) -> Result<(), ReportError> {
    std::fs::write(dir.join("plan.json"), plan_json(plan)?)?;
    let mut csv = Vec::new();
    write_plan_csv(plan, &mut csv)?;
    std::fs::write(dir.join("plan.csv"), csv)?;
    std::fs::write(dir.join("plan.html"), render_plan_html(plan))?;
    Ok(())
}

/// Writes `matrix.json`, `matrix.csv`, `matrix-relationships.csv` and
/// `matrix.html` into `dir`.
pub fn write_matrix_files(dir: &Path, matrix: &Matrix) -> Result<(), ReportError> {
    std::fs::write(dir.join("matrix.json"), matrix_json(matrix)?)?;
    let mut csv = Vec::new();
    write_matrix_csv(matrix, &mut csv)?;
    std::fs::write(dir.join("matrix.csv"), csv)?;
    let mut csv = Vec::new();
    write_relationships_csv(matrix, &mut csv)?;
    std::fs::write(dir.join("matrix-relationships.csv"), csv)?;
    std::fs::write(dir.join("matrix.html"), render_matrix_html(matrix))?;
    Ok(())
}

/// A number for people: the report's [`grouped`] form (3 significant
/// digits below 1000, whole and grouped above).
pub(crate) use crate::number::grouped as num;

/// The first cells of a sizing table's row, the same in every form: users,
/// peak memory ± its standard deviation, memory to install, CPU cores busy,
/// cores to install, disk I/Os per second.
pub(crate) fn sizing_cells(r: &PlanRow) -> Vec<String> {
    let s = &r.significance;
    let memory_significant = s.memory_bytes.is_some_and(Significance::is_significant);
    vec![
        users(r.users),
        match (r.memory_peak_bytes, r.memory_peak_sd_bytes) {
            (Some(m), Some(sd)) if memory_significant => format!("{} ± {}", bytes(m), bytes(sd)),
            (Some(_), _) => NOT_SIGNIFICANT.to_owned(),
            _ => DASH.to_owned(),
        },
        match r.memory_to_install_bytes {
            Some(b) if memory_significant => bytes(b as f64),
            Some(_) => NOT_SIGNIFICANT.to_owned(),
            None if s.memory_bytes.is_some() => NOT_SIGNIFICANT.to_owned(),
            None => DASH.to_owned(),
        },
        judged(s.cpu_cores, pm(r.cpu_cores, r.cpu_cores_sd)),
        judged(s.cpu_cores, r.cores_to_install.to_string()),
        judged(s.disk_iops, num(r.disk_iops)),
    ]
}

/// How a figure within its own uncertainty is printed: not as a number
/// (docs/planner.md, "What is significant").
pub(crate) const NOT_SIGNIFICANT: &str = "not significant";

/// `shown` when the figure is significant, else [`NOT_SIGNIFICANT`].
pub(crate) fn judged(s: Significance, shown: String) -> String {
    if s.is_significant() {
        shown
    } else {
        NOT_SIGNIFICANT.to_owned()
    }
}

/// An optional number; `–` for none.
pub(crate) fn opt_num(v: Option<f64>) -> String {
    or_dash(v, grouped, DASH)
}

/// `value ± sd` for a measured figure with its standard error, or
/// [`NOT_SIGNIFICANT`] when the error reaches the value.
pub(crate) fn pm(value: f64, sd: f64) -> String {
    judged(
        Significance::of(value, sd),
        format!("{} ± {}", num(value), num(sd)),
    )
}

/// A high average and the standard deviation of its values: a spread, not
/// an error, so it is not written `±`.
pub(crate) fn mean_sd(mean: f64, sd: f64) -> String {
    format!("{} (sd {})", num(mean), num(sd))
}

/// Bytes in binary units: `512 MiB`, `1.5 GiB`.
pub(crate) fn bytes(v: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if !v.is_finite() {
        return "–".to_owned();
    }
    let mut value = v;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{} {}", num(value), UNITS[unit])
}

/// `1 CPU`, `0.5 CPUs`, `2 CPUs`.
pub(crate) fn cpus_label(cpus: f64) -> String {
    format!("{} CPU{}", num(cpus), if cpus == 1.0 { "" } else { "s" })
}

/// A user count; `u64::MAX` (never runs out) as `∞`.
pub(crate) fn users(v: u64) -> String {
    if v == u64::MAX {
        "∞".to_owned()
    } else {
        num(v as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_for_people() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(0.012345), "0.0123");
        assert_eq!(num(999.4), "999");
        assert_eq!(num(46_000.0), "46,000");
        assert_eq!(num(-1234.0), "-1,234");
        assert_eq!(num(f64::NAN), "–");
        assert_eq!(bytes(4.0 * 1024.0 * 1024.0 * 1024.0), "4 GiB");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(users(u64::MAX), "∞");
    }

    /// Issue 25: a figure printed with its error is printed above it. The
    /// significance rule and `num` must round alike; seen broken as
    /// "17.1 ± 17.1" and "0.000035 ± 0.000035".
    #[test]
    fn a_figure_shown_with_its_error_reads_above_it() {
        let parse = |s: &str| s.replace(',', "").parse::<f64>().unwrap();
        let mut shown = 0;
        for exponent in -7..6 {
            for mantissa in [1.0, 1.004, 1.7, 3.46, 9.99] {
                let sd = mantissa * 10f64.powi(exponent);
                for gap in [0.0001, 0.001, 0.004, 0.01, 0.02, 0.1] {
                    let printed = pm(sd * (1.0 + gap), sd);
                    if printed == NOT_SIGNIFICANT {
                        continue;
                    }
                    shown += 1;
                    let (value, error) = printed.split_once(" ± ").unwrap();
                    assert!(parse(value) > parse(error), "{printed}");
                }
            }
        }
        assert!(shown > 100, "only {shown} figures were shown");
    }
}
