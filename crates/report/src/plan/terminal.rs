//! Plain-text tables for `peakhour tasks`, `peakhour plan` and
//! `peakhour matrix` (no colour codes, so they can be logged or piped).

use std::fmt::Write as _;

use peakhour_analysis::plan::{
    Direction, METRIC_CPU_PCT, METRIC_WEIGHTED_P95_MS, Matrix, Plan, QosMethod, TaskSet, TaskUnit,
};

use super::{
    NOT_SIGNIFICANT, bytes, cpus_label, judged, mean_sd, num, opt_num, pm, sizing_cells, users,
};

/// A table with the first column left-aligned and the others right-aligned.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.zip(&widths).enumerate() {
            let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
            if i == 0 {
                let _ = write!(l, "{cell}{pad}");
            } else {
                let _ = write!(l, "  {pad}{cell}");
            }
        }
        l.trim_end().to_owned()
    };
    let mut out = line(&mut header.iter().copied());
    out.push('\n');
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
        out.push('\n');
    }
    out
}

fn list(out: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}:");
    for i in items {
        let _ = writeln!(out, "  - {i}");
    }
}

/// The ranked task table, seed 001 style: CPU per task with its error, the
/// high averages with their standard deviations, disk, network and
/// response times; then the memory model and warnings.
pub fn render_tasks_terminal(tasks: &TaskSet) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "atomic tasks · profile {} · server {} CPUs · idle {} cores",
        tasks.profile,
        num(tasks.server_cpus),
        num(tasks.baseline.cpu_cores)
    );
    let header = [
        "task",
        "rank",
        "per",
        "CPU ms",
        "CPU high avg %",
        "disk KiB",
        "I/Os",
        "net KiB",
        "p50 ms",
        "p95 ms",
    ];
    let rows: Vec<Vec<String>> = tasks
        .tasks
        .iter()
        .map(|t| {
            vec![
                format!("{}{}", t.name, if t.stressful { " *" } else { "" }),
                t.rank.to_string(),
                t.unit.as_str().to_owned(),
                pm(t.server_cpu_ms_per_task, t.server_cpu_ms_per_task_sd),
                mean_sd(t.cpu_high_average_pct, t.cpu_high_average_sd),
                pm(t.disk_kib_per_task, t.disk_kib_per_task_sd),
                num(t.disk_ios_per_task),
                pm(t.net_kib_per_task, t.net_kib_per_task_sd),
                opt_num(t.p50_ms),
                opt_num(t.p95_ms),
            ]
        })
        .collect();
    out.push_str(&table(&header, &rows));
    if tasks.tasks.iter().any(|t| t.stressful) {
        let _ = writeln!(
            out,
            "* stressful: CPU per task at least {} × the median (seed 001 singled such tasks out)",
            num(tasks.stressful_factor)
        );
    }
    if tasks.tasks.iter().any(|t| t.unit == TaskUnit::SessionHour) {
        let _ = writeln!(
            out,
            "session-hour tasks cost per session held open for an hour, ranked after the others"
        );
    }
    let _ = writeln!(
        out,
        "± is one standard error; \"{NOT_SIGNIFICANT}\": the error reaches the value, so the measurement cannot tell it from zero"
    );
    match &tasks.memory {
        Some(m) => {
            let _ = writeln!(
                out,
                "memory: {} + sessions × {} (standard error {} per session; residual {}, R² {})",
                bytes(m.base_bytes),
                bytes(m.per_session_bytes),
                bytes(m.per_session_sd_bytes),
                bytes(m.residual_sd_bytes),
                num(m.r_squared)
            );
            if let Err(why) = peakhour_analysis::plan::memory_fit_verdict(m) {
                let _ = writeln!(out, "  {why}");
            }
        }
        None => {
            let _ = writeln!(out, "memory: not measured (no idle-session points)");
        }
    }
    list(&mut out, "warnings", &tasks.warnings);
    out
}

/// The sizing table, the first resource to run out, the QoS capacity, the
/// price/performance, assumptions and warnings.
pub fn render_plan_terminal(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "peakhour plan · profile {} · tasks measured on {} CPUs ({}) · headroom {}",
        plan.profile,
        num(plan.measured_on_cpus),
        plan.tasks_profile,
        num(plan.headroom)
    );
    for line in &plan.headline {
        let _ = writeln!(out, "» {line}");
    }
    out.push_str(&per_user_line(plan));
    let _ = writeln!(out);
    let header = [
        "users",
        "memory at peak",
        "memory to install",
        "cores busy",
        "cores to install",
        "disk I/O/s",
        "disk KiB/s",
        "net KiB/s",
    ];
    let rows: Vec<Vec<String>> = plan
        .rows
        .iter()
        .map(|r| {
            let mut cells = sizing_cells(r);
            let s = &r.significance;
            cells.extend([
                judged(s.disk_kib_per_s, num(r.disk_kib_per_s)),
                judged(s.net_kib_per_s, num(r.net_kib_per_s)),
            ]);
            cells
        })
        .collect();
    out.push_str(&table(&header, &rows));
    if let Some(host) = &plan.host {
        let _ = writeln!(
            out,
            "\nhost {}: {} CPUs, {} memory",
            host.label,
            num(host.cores),
            bytes(host.memory_bytes)
        );
        match &plan.first_exhausted {
            Some(e) => {
                let _ = writeln!(
                    out,
                    "first to run out: {} at {} users ({}–{} within ±1 sd; full at {})",
                    e.resource.as_str(),
                    users(e.users),
                    users(e.users_low),
                    e.users_high.map_or_else(|| "∞".to_owned(), users),
                    users(e.users_at_capacity)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "first to run out: not known (no resource's use per user is significant)"
                );
            }
        }
    }
    if let Some(q) = &plan.max_users_at_qos {
        let how = match q.method {
            QosMethod::Model => "modelled",
            QosMethod::Sweep => "measured by a sweep",
        };
        let _ = writeln!(
            out,
            "max users at QoS (weighted p95 ≤ {} ms): {} ({how}; limited by {})",
            num(q.p95_limit_ms),
            users(q.users),
            q.limited_by
        );
        if let (Some(m), Some(pct)) = (q.model_users, q.model_vs_sweep_pct) {
            let _ = writeln!(
                out,
                "  the model says {} ({:+.1}% against the sweep)",
                users(m),
                pct
            );
        }
        if let Some(trust) = &q.trust {
            let _ = writeln!(out, "  {trust}");
        }
    }
    if let Some(p) = &plan.price_performance {
        let _ = writeln!(
            out,
            "price/performance: {} {} per supported user, {} {} per {} at the peak ({})",
            opt_num(p.per_supported_user),
            p.currency,
            opt_num(p.per_throughput_unit),
            p.currency,
            p.throughput_unit,
            p.basis
        );
    }
    list(&mut out, "assumptions", &plan.assumptions);
    list(&mut out, "warnings", &plan.warnings);
    out
}

/// The per-user line: each figure, or "not significant".
fn per_user_line(plan: &Plan) -> String {
    let u = &plan.per_user;
    let s = &u.significance;
    format!(
        "per user: cores {}, memory {}, I/O/s {}, disk KiB/s {}, network KiB/s {}, {} actions/s\n",
        judged(s.cpu_cores, pm(u.cpu_cores, u.cpu_cores_sd)),
        match (u.memory_bytes, s.memory_bytes) {
            (Some(m), Some(sig)) => judged(
                sig,
                format!("{} ± {}", bytes(m), bytes(u.memory_sd_bytes.unwrap_or(0.0)))
            ),
            _ => "not modelled".to_owned(),
        },
        judged(s.disk_iops, num(u.disk_iops)),
        judged(s.disk_kib_per_s, pm(u.disk_kib_per_s, u.disk_kib_per_s_sd)),
        judged(s.net_kib_per_s, pm(u.net_kib_per_s, u.net_kib_per_s_sd)),
        num(u.actions_per_s)
    )
}

fn arrow(d: Direction) -> &'static str {
    match d {
        Direction::Rises => "rises",
        Direction::Falls => "falls",
        Direction::Stays => "stays",
        Direction::Mixed => "mixed",
        Direction::NotSignificant => "no significant change",
    }
}

/// One metric as a CPUs × memory grid.
pub(crate) fn grid_rows(m: &Matrix, metric: &str) -> Vec<Vec<String>> {
    m.cpus
        .iter()
        .map(|&cpus| {
            let mut row = vec![cpus_label(cpus)];
            row.extend(m.memory_bytes.iter().map(|&mem| {
                opt_num(
                    m.cell(cpus, mem)
                        .and_then(|c| c.metrics.get(metric).copied()),
                )
            }));
            row
        })
        .collect()
}

/// Seed 003's layout: weighted p95 and CPU utilization as CPUs × memory
/// grids, then the relationships table.
pub fn render_matrix_terminal(m: &Matrix) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "peakhour matrix · profile {} · {} users · {} shapes",
        m.profile,
        num(m.users as f64),
        m.cells.len()
    );
    let mem_headers: Vec<String> = m.memory_bytes.iter().map(|&b| bytes(b as f64)).collect();
    for (metric, title) in [
        (METRIC_WEIGHTED_P95_MS, "weighted p95, ms"),
        (METRIC_CPU_PCT, "CPU utilization, %"),
    ] {
        let _ = writeln!(out, "\n{title}");
        let mut header = vec!["CPUs \\ memory"];
        header.extend(mem_headers.iter().map(String::as_str));
        out.push_str(&table(&header, &grid_rows(m, metric)));
    }
    let _ = writeln!(
        out,
        "\nresource/performance relationships (change of at least {}% from the smallest to the largest size)",
        num(m.threshold_pct)
    );
    let rows: Vec<Vec<String>> = m
        .relationships
        .iter()
        .map(|r| {
            let cell = |t: &peakhour_analysis::plan::Trend| {
                format!(
                    "{} ({})",
                    arrow(t.direction),
                    t.median_change_pct
                        .map_or_else(|| "–".to_owned(), |c| format!("{c:+.0}%"))
                )
            };
            vec![
                r.metric.clone(),
                cell(&r.with_more_memory),
                cell(&r.with_more_cpus),
            ]
        })
        .collect();
    out.push_str(&table(
        &["metric", "with more memory", "with more CPUs"],
        &rows,
    ));
    list(&mut out, "warnings", &m.warnings);
    out
}
