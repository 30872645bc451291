//! `tasks.html`, `plan.html` and `matrix.html`: one self-contained file
//! each (inline CSS shared with the run report, inline SVG, no script, no
//! URL).
//!
//! Section ids, for tests and links: tasks.html `ranking`, `bars`,
//! `memory`, `warnings`; plan.html `sizing`, `resources`, `exhaustion`,
//! `qos`, `price`, `assumptions`, `warnings`; matrix.html `grid`,
//! `relationships`, `cells`, `warnings`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use peakhour_analysis::plan::{
    Direction, METRIC_CPU_PCT, METRIC_WEIGHTED_P95_MS, Matrix, Plan, QosMethod, Resource, TaskSet,
    Trend,
};

use super::chart::{Pair, XyLine, paired_bars, xy_chart};
use super::terminal::grid_rows;
use super::{
    NOT_SIGNIFICANT, bytes, cpus_label, judged, mean_sd, num, opt_num, pm, sizing_cells, users,
};
use crate::html::svg::nice_ceiling;
use crate::html::{CSS, escape};

const EXTRA_CSS: &str = "section{margin-bottom:8px}.rel td,.rel th{text-align:left}";

fn open_page(title: &str, subtitle: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{t}</title><style>{CSS}{EXTRA_CSS}</style></head><body><h1>{t}</h1><p class=\"sub\">{}</p>",
        escape(subtitle),
        t = escape(title)
    )
}

fn close_page(mut s: String) -> String {
    s.push_str("<footer>peakhour · pure model, see docs/planner.md for the method and its assumptions</footer></body></html>\n");
    s
}

/// An HTML table; `header` and cells are escaped here.
fn html_table(class: &str, header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("<table class=\"{class}\"><thead><tr>");
    for h in header {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr></thead><tbody>");
    for row in rows {
        s.push_str("<tr>");
        for cell in row {
            let _ = write!(s, "<td>{}</td>", escape(cell));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    s
}

fn list_section(s: &mut String, id: &str, title: &str, items: &[String], empty: &str) {
    let class = if id == "warnings" && !items.is_empty() {
        " class=\"warnings\""
    } else {
        ""
    };
    let _ = write!(s, "<section id=\"{id}\"><h2>{}</h2>", escape(title));
    if items.is_empty() {
        let _ = write!(s, "<p class=\"nodata\">{}</p>", escape(empty));
    } else {
        let _ = write!(s, "<ul{class}>");
        for i in items {
            let _ = write!(s, "<li>{}</li>", escape(i));
        }
        s.push_str("</ul>");
    }
    s.push_str("</section>");
}

/// `tasks.html`: the ranked table and seed 001's paired bars for CPU, disk
/// and network, tasks in rank order.
pub fn render_tasks_html(tasks: &TaskSet) -> String {
    let mut s = open_page(
        &format!("peakhour tasks: {}", tasks.profile),
        &format!(
            "Atomic-task profiling after seed 001: each task alone at a steady rate; server {} CPUs; idle baseline {} cores subtracted from the per-task costs; high averages over ≥ {} s windows.",
            num(tasks.server_cpus),
            num(tasks.baseline.cpu_cores),
            num(tasks.high_average_min_window_s)
        ),
    );
    let header = [
        "task",
        "rank",
        "per",
        "CPU ms",
        "CPU high avg %",
        "disk KiB (read / write)",
        "I/Os",
        "net KiB",
        "p50 ms",
        "p95 ms",
        "workstations",
    ];
    let rows: Vec<Vec<String>> = tasks
        .tasks
        .iter()
        .map(|t| {
            vec![
                format!(
                    "{}{}",
                    t.name,
                    if t.stressful { " (stressful)" } else { "" }
                ),
                t.rank.to_string(),
                t.unit.as_str().to_owned(),
                pm(t.server_cpu_ms_per_task, t.server_cpu_ms_per_task_sd),
                mean_sd(t.cpu_high_average_pct, t.cpu_high_average_sd),
                format!(
                    "{} ({} / {})",
                    pm(t.disk_kib_per_task, t.disk_kib_per_task_sd),
                    num(t.disk_read_kib_per_task),
                    num(t.disk_write_kib_per_task)
                ),
                num(t.disk_ios_per_task),
                pm(t.net_kib_per_task, t.net_kib_per_task_sd),
                opt_num(t.p50_ms),
                opt_num(t.p95_ms),
                t.workstations.to_string(),
            ]
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"ranking\"><h2>Tasks ranked by CPU per task</h2>{}<p class=\"sub\">Stressful: CPU per task at least {} × the median. Session-hour tasks cost per session held open for an hour and are ranked after the others.</p></section>",
        html_table("tasks", &header, &rows),
        num(tasks.stressful_factor)
    );
    s.push_str("<section id=\"bars\"><h2>High averages and their standard deviations</h2>");
    let pairs = |f: &dyn Fn(&peakhour_analysis::plan::TaskCost) -> (f64, f64)| -> Vec<Pair> {
        tasks
            .tasks
            .iter()
            .map(|t| {
                let (high_average, sd) = f(t);
                Pair {
                    label: t.name.clone(),
                    high_average,
                    sd,
                }
            })
            .collect()
    };
    s.push_str(&paired_bars(
        "tasks-cpu",
        "CPU utilization",
        "% of the server's CPUs",
        &pairs(&|t| (t.cpu_high_average_pct, t.cpu_high_average_sd)),
    ));
    s.push_str(&paired_bars(
        "tasks-disk",
        "Disk throughput",
        "KiB/s",
        &pairs(&|t| (t.disk_high_average_kib_s, t.disk_high_average_sd)),
    ));
    s.push_str(&paired_bars(
        "tasks-net",
        "Network throughput",
        "KiB/s",
        &pairs(&|t| (t.net_high_average_kib_s, t.net_high_average_sd)),
    ));
    s.push_str("</section><section id=\"memory\"><h2>Memory per open session</h2>");
    s.push_str(&memory_section(tasks));
    s.push_str("</section>");
    list_section(&mut s, "warnings", "Warnings", &tasks.warnings, "None.");
    close_page(s)
}

/// The memory fit, its points and residuals.
fn memory_section(tasks: &TaskSet) -> String {
    let mut s = String::new();
    match &tasks.memory {
        Some(m) => {
            let rows: Vec<Vec<String>> = m
                .points
                .iter()
                .map(|p| {
                    let fitted = m.at(p.sessions).0;
                    vec![
                        num(p.sessions),
                        bytes(p.bytes),
                        bytes(fitted),
                        bytes(p.bytes - fitted),
                    ]
                })
                .collect();
            if let Err(why) = peakhour_analysis::plan::memory_fit_verdict(m) {
                let _ = write!(s, "<p class=\"warn\">{}</p>", escape(&why));
            }
            let _ = write!(
                s,
                "<p>Seed 000's base + n × per-connection + n × per-thread, fitted by least squares: <b>{} + sessions × {}</b> (standard error {} per session; residual sd {}; R² {}).</p>{}",
                escape(&bytes(m.base_bytes)),
                escape(&bytes(m.per_session_bytes)),
                escape(&bytes(m.per_session_sd_bytes)),
                escape(&bytes(m.residual_sd_bytes)),
                escape(&num(m.r_squared)),
                html_table(
                    "memory",
                    &["sessions", "measured", "fitted", "residual"],
                    &rows
                )
            );
        }
        None => s.push_str("<p class=\"nodata\">Not measured: no idle-session points.</p>"),
    }
    s
}

fn sizing_table(plan: &Plan) -> String {
    let header = [
        "concurrent users",
        "memory used at peak",
        "memory to install",
        "cores busy",
        "cores to install",
        "disk I/O/s",
        "disk KiB/s",
        "network KiB/s",
        "actions/s",
        "fits the host",
    ];
    let rows: Vec<Vec<String>> = plan
        .rows
        .iter()
        .map(|r| {
            let mut cells = sizing_cells(r);
            cells.extend([
                pm(r.disk_kib_per_s, r.disk_kib_per_s_sd),
                pm(r.net_kib_per_s, r.net_kib_per_s_sd),
                num(r.actions_per_s),
                r.fits_host
                    .map_or("–", |f| if f { "yes" } else { "no" })
                    .to_owned(),
            ]);
            cells
        })
        .collect();
    html_table("sizing", &header, &rows)
}

/// The use of each host resource against users, or CPU cores alone
/// without a host.
fn resource_chart(plan: &Plan) -> String {
    let Some(host) = &plan.host else {
        let x_end = nice_ceiling(
            plan.rows.iter().map(|r| r.users).max().unwrap_or(1) as f64,
            1.0,
        );
        let line = XyLine {
            label: "CPU busy".to_owned(),
            points: vec![
                (0.0, plan.base.cpu_cores),
                (x_end, plan.base.cpu_cores + x_end * plan.per_user.cpu_cores),
            ],
            dots: false,
        };
        return xy_chart(
            "plan-resources",
            "CPU against users",
            "cores",
            "users",
            &[line],
            None,
            None,
        );
    };
    let first = plan.first_exhausted.as_ref();
    let largest = plan.rows.iter().map(|r| r.users).max().unwrap_or(0) as f64;
    // Far enough to show the first resource pass its capacity, with the
    // lines drawn to the axis's end so that none stops short.
    let x_end = nice_ceiling(
        first
            .map(|e| (e.users_at_capacity as f64 * 1.25).min(largest.max(e.users as f64 * 1.5)))
            .unwrap_or(largest),
        1.0,
    );
    // A resource whose use per user is within its noise has no line to draw.
    let lines: Vec<XyLine> = plan
        .exhaustion
        .iter()
        .filter(|e| e.significance.is_significant())
        .map(|e| {
            let pct = |n: f64| 100.0 * (e.base + n * e.per_user) / e.capacity;
            XyLine {
                label: e.resource.as_str().to_owned(),
                points: vec![(0.0, pct(0.0)), (x_end, pct(x_end))],
                dots: false,
            }
        })
        .collect();
    let headroom = (
        100.0 * plan.headroom,
        format!("headroom {}%", num(100.0 * plan.headroom)),
    );
    let marker = first.map(|e| {
        (
            e.users as f64,
            format!(
                "{} runs out at {} users",
                e.resource.as_str(),
                users(e.users)
            ),
        )
    });
    xy_chart(
        "plan-resources",
        &format!("Use of {} against users", host.label),
        "% of capacity",
        "users",
        &lines,
        Some(headroom),
        marker,
    )
}

fn exhaustion_table(plan: &Plan) -> String {
    let rows: Vec<Vec<String>> = plan
        .exhaustion
        .iter()
        .map(|e| {
            let amount = |v: f64| {
                if e.resource == Resource::Memory {
                    bytes(v)
                } else {
                    format!("{} {}", num(v), e.unit)
                }
            };
            vec![
                e.resource.as_str().to_owned(),
                amount(e.capacity),
                amount(e.base),
                judged(
                    e.significance,
                    format!("{} ± {}", amount(e.per_user), amount(e.per_user_sd)),
                ),
                judged(e.significance, users(e.users)),
                judged(
                    e.significance,
                    format!(
                        "{}–{}",
                        users(e.users_low),
                        e.users_high.map_or_else(|| "∞".to_owned(), users)
                    ),
                ),
                judged(e.significance, users(e.users_at_capacity)),
            ]
        })
        .collect();
    html_table(
        "exhaustion",
        &[
            "resource",
            "capacity",
            "idle",
            "per user",
            "users at headroom",
            "±1 sd",
            "users at capacity",
        ],
        &rows,
    )
}

/// `plan.html`: the sizing table, resource use against users with the
/// exhaustion point, the exhaustion table, QoS, price/performance,
/// assumptions and warnings.
pub fn render_plan_html(plan: &Plan) -> String {
    let mut s = open_page(
        &format!("peakhour plan: {}", plan.profile),
        &format!(
            "Task costs measured on {} CPUs ({}) × the profile's rates; headroom {}; {} session(s) per user.",
            num(plan.measured_on_cpus),
            plan.tasks_profile,
            num(plan.headroom),
            num(plan.sessions_per_user)
        ),
    );
    if !plan.headline.is_empty() {
        s.push_str("<section id=\"headline\"><h2>Headline</h2><ul>");
        for line in &plan.headline {
            let _ = write!(s, "<li>{}</li>", escape(line));
        }
        s.push_str("</ul></section>");
    }
    let _ = write!(
        s,
        "<p>± is one standard error; “{NOT_SIGNIFICANT}” marks a figure whose error reaches its value.</p><section id=\"sizing\"><h2>Sizing table</h2>{}</section><section id=\"resources\"><h2>Resources against users</h2>{}</section>",
        sizing_table(plan),
        resource_chart(plan)
    );
    s.push_str("<section id=\"exhaustion\"><h2>What runs out first</h2>");
    match (&plan.host, &plan.first_exhausted) {
        (Some(h), Some(e)) => {
            let _ = write!(
                s,
                "<p class=\"kpi\"><b>{} at {} users</b><span>first to reach {}% on {}</span></p>{}",
                escape(e.resource.as_str()),
                escape(&users(e.users)),
                escape(&num(100.0 * plan.headroom)),
                escape(&h.label),
                exhaustion_table(plan)
            );
        }
        (Some(_), None) => {
            let _ = write!(
                s,
                "<p class=\"nodata\">Not known: no resource's use per user stands above its uncertainty, so none can be named.</p>{}",
                exhaustion_table(plan)
            );
        }
        (None, _) => s.push_str("<p class=\"nodata\">No host given: nothing to run out.</p>"),
    }
    s.push_str("</section><section id=\"qos\"><h2>Users within the QoS limit</h2>");
    match &plan.max_users_at_qos {
        Some(q) => {
            let how = match q.method {
                QosMethod::Model => "modelled",
                QosMethod::Sweep => "measured by a sweep",
            };
            let _ = write!(
                s,
                "<p class=\"kpi\"><b>{} users</b><span>weighted p95 ≤ {} ms, {how}, limited by {}</span></p><p>Weighted p95 of the tasks alone: {} ms. Model answer: {}. Sweep answer: {}.</p><p class=\"sub\">{}</p>",
                escape(&users(q.users)),
                escape(&num(q.p95_limit_ms)),
                escape(&q.limited_by),
                escape(&opt_num(q.weighted_p95_alone_ms)),
                escape(&q.model_users.map_or_else(|| "–".to_owned(), users)),
                escape(&opt_num(q.sweep_users)),
                escape(&q.method_statement)
            );
            if let Some(trust) = &q.trust {
                let _ = write!(s, "<p><b>Which to trust:</b> {}</p>", escape(trust));
            }
        }
        None => s.push_str("<p class=\"nodata\">Needs a host or a sweep, and a significant CPU per user for the model.</p>"),
    }
    s.push_str("</section><section id=\"price\"><h2>Price/performance</h2>");
    match &plan.price_performance {
        Some(p) => {
            let _ = write!(
                s,
                "<p>{} {}: <b>{} {} per supported user</b>, <b>{} {} per {}</b> at the peak ({} users, {} {}; basis {}), as seed 004 divided price by peak throughput.</p>",
                escape(&num(p.price)),
                escape(&p.currency),
                escape(&opt_num(p.per_supported_user)),
                escape(&p.currency),
                escape(&opt_num(p.per_throughput_unit)),
                escape(&p.currency),
                escape(&p.throughput_unit),
                escape(&num(p.supported_users)),
                escape(&num(p.peak_throughput)),
                escape(&p.throughput_unit),
                escape(&p.basis)
            );
        }
        None => s.push_str("<p class=\"nodata\">No price given.</p>"),
    }
    s.push_str("</section>");
    list_section(
        &mut s,
        "assumptions",
        "Assumptions",
        &plan.assumptions,
        "None.",
    );
    list_section(&mut s, "warnings", "Warnings", &plan.warnings, "None.");
    close_page(s)
}

fn names(matrix: &Matrix, pick: impl Fn(&Trend) -> bool, memory: bool) -> String {
    let v: Vec<&str> = matrix
        .relationships
        .iter()
        .filter(|r| {
            pick(if memory {
                &r.with_more_memory
            } else {
                &r.with_more_cpus
            })
        })
        .map(|r| r.metric.as_str())
        .collect();
    if v.is_empty() {
        "–".to_owned()
    } else {
        v.join(", ")
    }
}

/// The grids as charts, as seed 003 drew them: each metric against CPUs with a
/// line per memory size, and against memory with a line per CPU count.
fn matrix_charts(m: &Matrix) -> String {
    let value = |cpus: f64, memory: u64, metric: &str| {
        m.cells
            .iter()
            .find(|c| c.cpus == cpus && c.memory_bytes == memory)
            .and_then(|c| c.metrics.get(metric).copied())
    };
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let mut s = String::from("<div id=\"matrix-charts\">");
    for (metric, title, unit) in [
        (METRIC_WEIGHTED_P95_MS, "Weighted p95", "ms"),
        (METRIC_CPU_PCT, "CPU utilization", "%"),
    ] {
        let by_cpus: Vec<XyLine> = m
            .memory_bytes
            .iter()
            .map(|&mem| XyLine {
                label: bytes(mem as f64),
                points: m
                    .cpus
                    .iter()
                    .filter_map(|&c| value(c, mem, metric).map(|v| (c, v)))
                    .collect(),
                dots: true,
            })
            .collect();
        let by_memory: Vec<XyLine> = m
            .cpus
            .iter()
            .map(|&c| XyLine {
                label: cpus_label(c),
                points: m
                    .memory_bytes
                    .iter()
                    .filter_map(|&mem| value(c, mem, metric).map(|v| (gib(mem), v)))
                    .collect(),
                dots: true,
            })
            .collect();
        s.push_str(&xy_chart(
            &format!("matrix-{metric}-by-cpus"),
            &format!("{title} against CPUs, a line per memory size"),
            unit,
            "CPUs",
            &by_cpus,
            None,
            None,
        ));
        s.push_str(&xy_chart(
            &format!("matrix-{metric}-by-memory"),
            &format!("{title} against memory, a line per CPU count"),
            unit,
            "memory (GiB)",
            &by_memory,
            None,
            None,
        ));
    }
    s.push_str("</div>");
    s
}

/// `matrix.html`: seed 003's layout: the CPUs × memory grids of weighted
/// p95 and CPU utilization, Table 3 (what increases and what decreases
/// with more memory and with more CPUs), the detail per metric, and every
/// cell.
pub fn render_matrix_html(m: &Matrix) -> String {
    let mut s = open_page(
        &format!("peakhour matrix: {}", m.profile),
        &format!(
            "The same load ({} users) on every shape, as seed 003 ran 1,500 users on 1–8 CPUs × 128 MB–1 GB.",
            num(m.users as f64)
        ),
    );
    let mem: Vec<String> = m.memory_bytes.iter().map(|&b| bytes(b as f64)).collect();
    s.push_str("<section id=\"grid\"><h2>Response time and CPU by shape</h2>");
    for (metric, title) in [
        (METRIC_WEIGHTED_P95_MS, "Weighted p95 (ms)"),
        (
            METRIC_CPU_PCT,
            "CPU utilization (%), averaged over the CPUs in use",
        ),
    ] {
        let mut header = vec!["CPUs \\ memory"];
        header.extend(mem.iter().map(String::as_str));
        let _ = write!(
            s,
            "<h3>{}</h3>{}",
            escape(title),
            html_table("grid", &header, &grid_rows(m, metric))
        );
    }
    s.push_str(&matrix_charts(m));
    let is = |d: Direction| move |t: &Trend| t.direction == d;
    let table3 = vec![
        vec![
            "More memory".to_owned(),
            names(m, is(Direction::Rises), true),
            names(m, is(Direction::Falls), true),
        ],
        vec![
            "More CPUs".to_owned(),
            names(m, is(Direction::Rises), false),
            names(m, is(Direction::Falls), false),
        ],
    ];
    let detail: Vec<Vec<String>> = m
        .relationships
        .iter()
        .map(|r| {
            let cell = |t: &Trend| {
                let lines: Vec<String> = t
                    .lines
                    .iter()
                    .map(|l| format!("{:+.0}%", l.change_pct))
                    .collect();
                format!("{} ({})", t.direction.as_str(), lines.join(", "))
            };
            vec![
                r.metric.clone(),
                cell(&r.with_more_memory),
                cell(&r.with_more_cpus),
            ]
        })
        .collect();
    let _ = write!(
        s,
        "</section><section id=\"relationships\"><h2>Resource/performance relationships</h2>{}<p class=\"sub\">Seed 003 Table 3. A metric rises or falls when its value at the largest size differs from the smallest by at least {}% of the larger of the two, on a strict majority of the grid's lines; mixed when the lines disagree.</p>{}</section>",
        html_table("rel", &["factor", "increases", "decreases"], &table3),
        escape(&num(m.threshold_pct)),
        html_table(
            "rel",
            &[
                "metric",
                "with more memory (each line)",
                "with more CPUs (each line)"
            ],
            &detail
        )
    );
    let metrics: BTreeSet<&String> = m.cells.iter().flat_map(|c| c.metrics.keys()).collect();
    let mut header = vec!["CPUs", "memory", "bottleneck"];
    header.extend(metrics.iter().map(|k| k.as_str()));
    let rows: Vec<Vec<String>> = m
        .cells
        .iter()
        .map(|c| {
            let mut row = vec![
                cpus_label(c.cpus),
                bytes(c.memory_bytes as f64),
                c.bottleneck.clone().unwrap_or_else(|| "–".to_owned()),
            ];
            row.extend(metrics.iter().map(|k| opt_num(c.metrics.get(*k).copied())));
            row.push(c.run_dir.clone().unwrap_or_else(|| "–".to_owned()));
            row
        })
        .collect();
    header.push("run directory");
    let _ = write!(
        s,
        "<section id=\"cells\"><h2>Every cell</h2><div style=\"overflow-x:auto\">{}</div></section>",
        html_table("cells", &header, &rows)
    );
    list_section(&mut s, "warnings", "Warnings", &m.warnings, "None.");
    close_page(s)
}
