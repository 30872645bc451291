//! `monitor.csv` reduced to what the report shows: derived timelines
//! (totals over disks and interfaces), the steady-state counter table in
//! seed 002's vocabulary, and the monitor's configuration.

use peakhour_monitor::MetricTable;
use peakhour_monitor::analysis::{TimeWindow, window_stats};
use peakhour_report::{MonitorChart, MonitorView, ServerCounter};

use super::toml_value;

/// Sum per row of every column `prefix…suffix`; NaN where none has a value.
fn sum_matching(table: &MetricTable, prefix: &str, suffix: &str) -> Option<Vec<f64>> {
    let cols: Vec<Vec<f64>> = table
        .names()
        .iter()
        .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
        .filter_map(|n| table.column(n))
        .collect();
    if cols.is_empty() {
        return None;
    }
    Some(
        (0..table.len())
            .map(|i| {
                let vals: Vec<f64> = cols
                    .iter()
                    .map(|c| c[i])
                    .filter(|v| v.is_finite())
                    .collect();
                if vals.is_empty() {
                    f64::NAN
                } else {
                    vals.iter().sum()
                }
            })
            .collect(),
    )
}

/// Whether any of these columns has a non-zero value: idle devices and
/// interfaces are left out of the table (the configuration lists them).
fn busy(table: &MetricTable, columns: &[String]) -> bool {
    columns
        .iter()
        .filter_map(|c| table.column(c))
        .any(|v| v.iter().any(|x| x.is_finite() && *x != 0.0))
}

fn scale(v: Vec<f64>, by: f64) -> Vec<f64> {
    v.into_iter().map(|x| x * by).collect()
}

/// Reduces the table; `window` is the steady phase on the monitor's axis.
pub(crate) fn reduce(table: &MetricTable, window: TimeWindow, config: Option<&str>) -> MonitorView {
    let times = table.times().to_vec();
    let col = |name: &str| table.column(name);
    let cores = col("cores")
        .and_then(|v| v.into_iter().find(|x| x.is_finite() && *x > 0.0))
        .unwrap_or(1.0);

    let mut charts = Vec::new();
    let mut push = |key: &str, title: &str, unit: &str, lines: Vec<(String, Option<Vec<f64>>)>| {
        let lines: Vec<(String, Vec<f64>)> = lines
            .into_iter()
            .filter_map(|(l, v)| v.map(|v| (l, v)))
            .collect();
        if !lines.is_empty() {
            charts.push(MonitorChart {
                key: key.into(),
                title: title.into(),
                unit: unit.into(),
                lines,
            });
        }
    };
    push(
        "cpu",
        "Server CPU (all cores)",
        "% of all cores",
        vec![
            ("busy (user + system)".into(), col("cpu_busy_pct")),
            ("iowait".into(), col("cpu_iowait_pct")),
            (
                "dovecot".into(),
                col("group_dovecot_cpu_pct").map(|v| scale(v, 1.0 / cores)),
            ),
            (
                "postfix".into(),
                col("group_postfix_cpu_pct").map(|v| scale(v, 1.0 / cores)),
            ),
            (
                "peakhour".into(),
                col("group_peakhour_cpu_pct").map(|v| scale(v, 1.0 / cores)),
            ),
        ],
    );
    let used_pct = match (col("mem_total_kb"), col("mem_available_kb")) {
        (Some(t), Some(a)) => Some(
            t.iter()
                .zip(&a)
                .map(|(t, a)| {
                    if *t > 0.0 {
                        100.0 * (1.0 - a / t)
                    } else {
                        f64::NAN
                    }
                })
                .collect(),
        ),
        _ => None,
    };
    push(
        "memory",
        "Server memory in use",
        "%",
        vec![("used (100 − available / total)".into(), used_pct)],
    );
    push(
        "disk",
        "Disk throughput (all devices)",
        "KiB/s",
        vec![
            (
                "read".into(),
                sum_matching(table, "disk_", "_read_kb_per_s"),
            ),
            (
                "write".into(),
                sum_matching(table, "disk_", "_write_kb_per_s"),
            ),
        ],
    );
    push(
        "network",
        "Network (all interfaces, loopback included)",
        "KiB/s",
        vec![
            (
                "received".into(),
                sum_matching(table, "net_", "_rx_bytes_per_s").map(|v| scale(v, 1.0 / 1024.0)),
            ),
            (
                "sent".into(),
                sum_matching(table, "net_", "_tx_bytes_per_s").map(|v| scale(v, 1.0 / 1024.0)),
            ),
        ],
    );
    push(
        "queue",
        "Postfix mail queue",
        "messages",
        vec![
            ("incoming".into(), col("postfix_queue_incoming")),
            ("active".into(), col("postfix_queue_active")),
            ("deferred".into(), col("postfix_queue_deferred")),
            ("hold".into(), col("postfix_queue_hold")),
        ],
    );

    let mut rows: Vec<ServerCounter> = Vec::new();
    let mut row = |section: &str, label: &str, unit: &str, values: Option<Vec<f64>>| {
        let Some(v) = values else { return };
        let Some(s) = window_stats(&times, &v, window) else {
            return;
        };
        rows.push(ServerCounter {
            section: section.into(),
            label: label.into(),
            unit: unit.into(),
            mean: Some(s.mean),
            p95: Some(s.p95),
            max: Some(s.max),
        });
    };
    let q = "Transaction Queues";
    row(
        q,
        "Postfix incoming queue length",
        "messages",
        col("postfix_queue_incoming"),
    );
    row(
        q,
        "Postfix active queue length",
        "messages",
        col("postfix_queue_active"),
    );
    row(
        q,
        "Postfix deferred queue length",
        "messages",
        col("postfix_queue_deferred"),
    );
    row(
        q,
        "Dovecot connections",
        "connections",
        col("dovecot_connections"),
    );
    let p = "Processor Utilization";
    row(
        p,
        "System Processor Utilization",
        "% of all cores",
        col("cpu_busy_pct"),
    );
    row(
        p,
        "Processor iowait",
        "% of all cores",
        col("cpu_iowait_pct"),
    );
    row(
        p,
        "System Processor Queue Length (runnable)",
        "tasks",
        col("run_queue"),
    );
    row(
        p,
        "CPU pressure (PSI some)",
        "% of time",
        col("psi_cpu_some_pct"),
    );
    for group in ["dovecot", "postfix", "peakhour"] {
        row(
            p,
            &format!("Process % CPU Time - {group}"),
            "% of one core",
            col(&format!("group_{group}_cpu_pct")),
        );
        row(
            p,
            &format!("Context Switches/Sec - {group}"),
            "per second",
            col(&format!("group_{group}_ctx_switches_per_s")),
        );
    }
    let m = "Memory Utilization";
    row(
        m,
        "Available Bytes",
        "GiB",
        col("mem_available_kb").map(|v| scale(v, 1.0 / 1024.0 / 1024.0)),
    );
    row(
        m,
        "Major page faults/Sec",
        "per second",
        col("major_faults_per_s"),
    );
    row(
        m,
        "Swap pages in/Sec",
        "per second",
        col("swap_in_pages_per_s"),
    );
    row(
        m,
        "Swap pages out/Sec",
        "per second",
        col("swap_out_pages_per_s"),
    );
    for group in ["dovecot", "postfix"] {
        row(
            m,
            &format!("Process Working Set - {group} (RSS)"),
            "MiB",
            col(&format!("group_{group}_rss_kb")).map(|v| scale(v, 1.0 / 1024.0)),
        );
    }
    let d = "Logical Drive Utilization";
    let disks: Vec<String> = table
        .names()
        .iter()
        .filter_map(|n| {
            n.strip_prefix("disk_")?
                .strip_suffix("_util_pct")
                .map(str::to_owned)
        })
        .filter(|d| {
            busy(
                table,
                &[
                    format!("disk_{d}_reads_per_s"),
                    format!("disk_{d}_writes_per_s"),
                ],
            )
        })
        .collect();
    for disk in &disks {
        row(
            d,
            &format!("{disk} Disk Reads/Sec"),
            "per second",
            col(&format!("disk_{disk}_reads_per_s")),
        );
        row(
            d,
            &format!("{disk} Disk Writes/Sec"),
            "per second",
            col(&format!("disk_{disk}_writes_per_s")),
        );
        row(
            d,
            &format!("{disk} KiB written/Sec"),
            "KiB/s",
            col(&format!("disk_{disk}_write_kb_per_s")),
        );
        row(
            d,
            &format!("{disk} Average Disk Queue Length"),
            "requests",
            col(&format!("disk_{disk}_queue_len")),
        );
        row(
            d,
            &format!("{disk} utilization"),
            "%",
            col(&format!("disk_{disk}_util_pct")),
        );
    }
    let n = "Network";
    let interfaces: Vec<String> = table
        .names()
        .iter()
        .filter_map(|c| {
            c.strip_prefix("net_")?
                .strip_suffix("_rx_bytes_per_s")
                .map(str::to_owned)
        })
        .filter(|i| {
            busy(
                table,
                &[
                    format!("net_{i}_rx_bytes_per_s"),
                    format!("net_{i}_tx_bytes_per_s"),
                ],
            )
        })
        .collect();
    for iface in &interfaces {
        row(
            n,
            &format!("{iface} bytes received/Sec"),
            "KiB/s",
            col(&format!("net_{iface}_rx_bytes_per_s")).map(|v| scale(v, 1.0 / 1024.0)),
        );
        row(
            n,
            &format!("{iface} bytes sent/Sec"),
            "KiB/s",
            col(&format!("net_{iface}_tx_bytes_per_s")).map(|v| scale(v, 1.0 / 1024.0)),
        );
        row(
            n,
            &format!("{iface} drops/Sec"),
            "per second",
            col(&format!("net_{iface}_drops_per_s")),
        );
    }

    let spacing = {
        let mut d: Vec<f64> = times
            .windows(2)
            .map(|w| w[1] - w[0])
            .filter(|d| *d > 0.0)
            .collect();
        d.sort_by(f64::total_cmp);
        d.get(d.len() / 2).copied()
    };
    let groups: Vec<String> = table
        .names()
        .iter()
        .filter_map(|c| {
            c.strip_prefix("group_")?
                .strip_suffix("_cpu_pct")
                .map(str::to_owned)
        })
        .collect();
    let mut conf = vec![
        (
            "source".to_owned(),
            "monitor.csv in the run directory (columns: docs/metrics.md)".to_owned(),
        ),
        (
            "samples".to_owned(),
            format!(
                "{} rows, {} columns, from {:.0} s to {:.0} s",
                table.len(),
                table.names().len(),
                times.first().copied().unwrap_or(0.0),
                times.last().copied().unwrap_or(0.0)
            ),
        ),
        (
            "sample interval".to_owned(),
            spacing.map_or_else(
                || "unknown".into(),
                |s| format!("{s:.3} s (median spacing)"),
            ),
        ),
        ("cores seen".to_owned(), format!("{cores:.0}")),
        (
            "disks with I/O".to_owned(),
            if disks.is_empty() {
                "none".into()
            } else {
                disks.join(", ")
            },
        ),
        (
            "interfaces with traffic".to_owned(),
            if interfaces.is_empty() {
                "none".into()
            } else {
                interfaces.join(", ")
            },
        ),
        (
            "process groups".to_owned(),
            if groups.is_empty() {
                "none".into()
            } else {
                groups.join(", ")
            },
        ),
        (
            "steady window (monitor time)".to_owned(),
            format!("{:.1} s to {:.1} s", window.start_s, window.end_s),
        ),
    ];
    if let Some(c) = config {
        for key in ["interval", "high_average_window", "baseline"] {
            if let Some(v) = toml_value(c, "monitor", key) {
                conf.push((format!("configured {}", key.replace('_', " ")), v));
            }
        }
    }
    MonitorView {
        times_s: times,
        charts,
        table: rows,
        config: conf,
    }
}
