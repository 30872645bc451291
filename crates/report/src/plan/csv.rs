//! `tasks.csv`, `plan.csv`, `matrix.csv` and `matrix-relationships.csv`.
//!
//! Numbers are written in full (Rust's shortest round-trip form); an empty
//! cell means "no value". Text cells are quoted when they hold a comma, a
//! quote or a line break (RFC 4180); the helper here is minimal on purpose
//! until the workspace settles on one CSV writer.

use std::collections::BTreeSet;
use std::io::Write;

use peakhour_analysis::plan::{Direction, Matrix, Plan, Resource, TaskSet, Trend};

use crate::ReportError;

/// Header of `tasks.csv`, one row per task in rank order.
pub const TASKS_CSV_HEADER: &str = "rank,name,unit,stressful,workstations,tasks_completed,window_s,server_cpu_ms_per_task,server_cpu_ms_per_task_sd,cpu_high_average_pct,cpu_high_average_sd,disk_high_average_kib_s,disk_high_average_sd,net_high_average_kib_s,net_high_average_sd,disk_read_kib_per_task,disk_write_kib_per_task,disk_kib_per_task,disk_kib_per_task_sd,disk_ios_per_task,net_kib_per_task,net_kib_per_task_sd,memory_per_session_bytes,p50_ms,p95_ms,latency_samples,cpu_samples";

/// Header of `plan.csv`, one row per user count (the sizing table). The
/// `*_pct` columns are the use of the host's capacity, empty without a host.
pub const PLAN_CSV_HEADER: &str = "users,sessions,actions_per_s,cpu_cores,cpu_cores_sd,cpu_cores_needed,cores_to_install,memory_peak_bytes,memory_peak_sd_bytes,memory_to_install_bytes,disk_iops,disk_kib_per_s,disk_kib_per_s_sd,net_kib_per_s,net_kib_per_s_sd,fits_host,cpu_pct,memory_pct,disk_iops_pct,disk_bandwidth_pct,network_pct,cpu_cores_significant,memory_significant,disk_kib_per_s_significant,net_kib_per_s_significant";

/// The first columns of `matrix.csv`; one column per metric follows, in
/// name order.
pub const MATRIX_CSV_FIXED_COLUMNS: &str = "cpus,memory_bytes,bottleneck,run_dir";

/// Header of `matrix-relationships.csv`: one row per metric and resource.
pub const RELATIONSHIPS_CSV_HEADER: &str =
    "metric,with_more,direction,median_change_pct,lines,lines_rising,lines_falling,lines_staying";

/// Quotes a text cell when it must be.
fn text(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn opt(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(String::new, |x| x.to_string())
}

fn opt_u(v: Option<u64>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}

/// Writes `tasks.csv`.
pub fn write_tasks_csv<W: Write>(tasks: &TaskSet, out: &mut W) -> Result<(), ReportError> {
    writeln!(out, "{TASKS_CSV_HEADER}")?;
    for t in &tasks.tasks {
        let cells = [
            t.rank.to_string(),
            text(&t.name),
            t.unit.as_str().to_owned(),
            t.stressful.to_string(),
            t.workstations.to_string(),
            t.tasks_completed.to_string(),
            t.window_s.to_string(),
            t.server_cpu_ms_per_task.to_string(),
            t.server_cpu_ms_per_task_sd.to_string(),
            t.cpu_high_average_pct.to_string(),
            t.cpu_high_average_sd.to_string(),
            t.disk_high_average_kib_s.to_string(),
            t.disk_high_average_sd.to_string(),
            t.net_high_average_kib_s.to_string(),
            t.net_high_average_sd.to_string(),
            t.disk_read_kib_per_task.to_string(),
            t.disk_write_kib_per_task.to_string(),
            t.disk_kib_per_task.to_string(),
            t.disk_kib_per_task_sd.to_string(),
            t.disk_ios_per_task.to_string(),
            t.net_kib_per_task.to_string(),
            t.net_kib_per_task_sd.to_string(),
            opt(t.memory_per_session_bytes),
            opt(t.p50_ms),
            opt(t.p95_ms),
            t.latency_samples.to_string(),
            t.cpu_samples.to_string(),
        ];
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

/// Writes `plan.csv`.
pub fn write_plan_csv<W: Write>(plan: &Plan, out: &mut W) -> Result<(), ReportError> {
    writeln!(out, "{PLAN_CSV_HEADER}")?;
    for r in &plan.rows {
        let mut cells = vec![
            r.users.to_string(),
            r.sessions.to_string(),
            r.actions_per_s.to_string(),
            r.cpu_cores.to_string(),
            r.cpu_cores_sd.to_string(),
            r.cpu_cores_needed.to_string(),
            r.cores_to_install.to_string(),
            opt(r.memory_peak_bytes),
            opt(r.memory_peak_sd_bytes),
            opt_u(r.memory_to_install_bytes),
            r.disk_iops.to_string(),
            r.disk_kib_per_s.to_string(),
            r.disk_kib_per_s_sd.to_string(),
            r.net_kib_per_s.to_string(),
            r.net_kib_per_s_sd.to_string(),
            r.fits_host.map_or_else(String::new, |f| f.to_string()),
        ];
        for res in Resource::ALL {
            cells.push(opt(r.host_utilization_pct.get(res.as_str()).copied()));
        }
        // Whether each figure stands above its standard error
        // (docs/planner.md, "What is significant"); empty without memory.
        let s = &r.significance;
        cells.extend([
            s.cpu_cores.is_significant().to_string(),
            s.memory_bytes
                .map_or_else(String::new, |m| m.is_significant().to_string()),
            s.disk_kib_per_s.is_significant().to_string(),
            s.net_kib_per_s.is_significant().to_string(),
        ]);
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

/// Writes `matrix.csv`: one row per cell, the metrics as columns.
pub fn write_matrix_csv<W: Write>(matrix: &Matrix, out: &mut W) -> Result<(), ReportError> {
    let metrics: BTreeSet<&String> = matrix.cells.iter().flat_map(|c| c.metrics.keys()).collect();
    let mut header = MATRIX_CSV_FIXED_COLUMNS.to_owned();
    for m in &metrics {
        header.push(',');
        header.push_str(&text(m));
    }
    writeln!(out, "{header}")?;
    for c in &matrix.cells {
        let mut cells = vec![
            c.cpus.to_string(),
            c.memory_bytes.to_string(),
            text(c.bottleneck.as_deref().unwrap_or("")),
            text(c.run_dir.as_deref().unwrap_or("")),
        ];
        cells.extend(metrics.iter().map(|m| opt(c.metrics.get(*m).copied())));
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

fn count(t: &Trend, d: Direction) -> usize {
    t.lines.iter().filter(|l| l.direction == d).count()
}

/// Writes `matrix-relationships.csv`: seed 003's Table 3 as rows.
pub fn write_relationships_csv<W: Write>(matrix: &Matrix, out: &mut W) -> Result<(), ReportError> {
    writeln!(out, "{RELATIONSHIPS_CSV_HEADER}")?;
    for r in &matrix.relationships {
        for (with, t) in [("memory", &r.with_more_memory), ("cpus", &r.with_more_cpus)] {
            writeln!(
                out,
                "{},{with},{},{},{},{},{},{}",
                text(&r.metric),
                t.direction.as_str(),
                opt(t.median_change_pct),
                t.lines.len(),
                count(t, Direction::Rises),
                count(t, Direction::Falls),
                count(t, Direction::Stays),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cells_are_quoted_only_when_needed() {
        assert_eq!(text("read"), "read");
        assert_eq!(text("cpu, then disk"), "\"cpu, then disk\"");
        assert_eq!(text("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
