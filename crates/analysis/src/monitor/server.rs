//! The server's share of a monitor table, in the planner's terms
//! (`peakhour tasks` and `peakhour matrix`; docs/planner.md, section 1):
//! which counters stand for "the server", their totals and series over a
//! window, the memory model's points and a matrix cell's metrics. (The
//! host's capacity and load, read from `/proc`, are
//! `peakhour_monitor::server`'s.)
//!
//! * **CPU**: the shaped lab's cgroup (`lab_cpu_pct`), exact for every
//!   process the servers ever forked; without a cgroup, the sum of the
//!   mail store's (`dovecot` or, on a Cyrus lab, `cyrus`) and `postfix`
//!   process groups' `cpu_pct`.
//! * **Memory**: the cgroup's `lab_memory_kb` (page cache included), else
//!   the two groups' resident memory.
//! * **Disk KiB**: the two groups' own read and write bytes (`/proc/PID/io`),
//!   so the neighbours' I/O is not charged to the server; **disk I/Os** can
//!   only come from the machine's block devices, so the server is charged
//!   their share in proportion to its share of the bytes read (written).
//! * **Network**: the bytes peakhour's own clients sent and received
//!   (`client_net_*`, counted at their sockets), which is what the server's
//!   NIC carries for the load whoever else shares the machine; where a
//!   table has no such columns (an older run, a monitor without the load in
//!   its process), the machine's interfaces, loopback counted once (every
//!   byte between the client and the lab crosses `lo` as one send and one
//!   receive), which on a shared machine carry the neighbours' traffic too.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::Summary;
use crate::plan::{
    HighAverageValue, LatencyMeasurement, METRIC_CPU_PCT, METRIC_WEIGHTED_P95_MS, MemoryFit,
    MemoryPoint, NetSource, PlanError, Series, TaskRun, TaskUnit, WindowMeasurement, fit_memory,
};

use super::{
    DiskField, Family, Field, GroupField, MetricKey, MetricTable, NetField, SystemField,
    TimeWindow, high_average, sample_period,
};

/// The server process groups whose counters stand for the server without a
/// cgroup.
pub const SERVER_GROUPS: [&str; 3] = ["dovecot", "cyrus", "postfix"];

/// The monitor's high average, as the planner takes it
/// ([`HighAverageFn`](crate::plan::HighAverageFn)).
pub fn high_average_value(
    times: &[f64],
    values: &[f64],
    min_window_s: f64,
) -> Option<HighAverageValue> {
    let period = sample_period(times).unwrap_or(1.0);
    high_average(times, values, min_window_s).map(|h| HighAverageValue {
        mean: h.mean,
        std_dev: h.std_dev,
        window_s: h.end_s - h.start_s + period,
        samples: h.samples,
        shorter_than_window: h.shorter_than_window,
    })
}

/// The monitor samples that cover a run's steady phase. A sample at `t`
/// covers the second before `t`, and the monitor's clock starts with the
/// engine's, so the samples at start + 1 s … end are the steady phase's
/// (as `peakhour run` takes them for its findings).
pub fn steady_window(summary: &Summary, interval: Duration) -> TimeWindow {
    let half = interval.as_secs_f64() / 2.0;
    let start = summary.steady.start_s;
    TimeWindow::new(start + half, start + summary.steady.length_s + half)
}

/// The columns of `table` named by keys that `pick` accepts.
fn columns_where(table: &MetricTable, pick: impl Fn(&MetricKey) -> bool) -> Vec<Vec<f64>> {
    table
        .names()
        .iter()
        .filter(|name| MetricKey::parse(name).is_some_and(|k| pick(&k)))
        .filter_map(|name| table.column(name))
        .collect()
}

/// Row-wise sum of columns; a row where every column is missing is NaN.
fn row_sum(columns: &[Vec<f64>], rows: usize, scale: f64) -> Vec<f64> {
    (0..rows)
        .map(|r| {
            let values: Vec<f64> = columns
                .iter()
                .filter_map(|c| c.get(r).copied())
                .filter(|v| v.is_finite())
                .collect();
            if values.is_empty() {
                f64::NAN
            } else {
                values.iter().sum::<f64>() * scale
            }
        })
        .collect()
}

fn system(field: SystemField) -> MetricKey {
    MetricKey::system(field)
}

fn is_group_field(key: &MetricKey, field: GroupField) -> bool {
    key.field() == Field::Group(field) && key.instance().is_some_and(|i| SERVER_GROUPS.contains(&i))
}

/// Whole block devices to count: device-mapper devices sit on top of a
/// disk that is counted already, so they are left out when a disk is there.
fn disk_columns(table: &MetricTable, field: DiskField) -> Vec<Vec<f64>> {
    let keys: Vec<MetricKey> = table
        .names()
        .iter()
        .filter_map(|n| MetricKey::parse(n))
        .filter(|k| k.field() == Field::Disk(field))
        .collect();
    let has_plain = keys
        .iter()
        .any(|k| !k.instance().unwrap_or_default().starts_with("dm_"));
    keys.iter()
        .filter(|k| !(has_plain && k.instance().unwrap_or_default().starts_with("dm_")))
        .filter_map(|k| table.column(&k.column()))
        .collect()
}

/// The server's CPU per sample, percent of one core: the cgroup's if it
/// has values, else the server groups' sum.
fn server_cpu_pct(table: &MetricTable) -> Vec<f64> {
    let rows = table.times().len();
    if let Some(lab) = table.column(&system(SystemField::LabCpuPct).column())
        && lab.iter().any(|v| v.is_finite())
    {
        return lab;
    }
    row_sum(
        &columns_where(table, |k| is_group_field(k, GroupField::CpuPct)),
        rows,
        1.0,
    )
}

/// The server's memory per sample, bytes.
pub fn server_memory_bytes(table: &MetricTable) -> Vec<f64> {
    let rows = table.times().len();
    if let Some(lab) = table.column(&system(SystemField::LabMemoryKb).column())
        && lab.iter().any(|v| v.is_finite())
    {
        return lab.iter().map(|v| v * 1024.0).collect();
    }
    row_sum(
        &columns_where(table, |k| is_group_field(k, GroupField::RssKb)),
        rows,
        1024.0,
    )
}

/// The memory the server's sessions hold per sample, bytes: what the
/// memory model fits. A shaped lab's cgroup charge without its page cache
/// (`lab_memory_no_cache_kb`: anonymous memory and the kernel's for the
/// processes) where the table has it, else the `dovecot` and `postfix`
/// groups' RSS.
///
/// Not the cgroup's whole charge: it holds the page cache, and the mail an
/// `init` wrote stays cached and swamps a few MiB per session (measured:
/// 541 MiB ± 19 MiB of noise against 100 sessions). Not the RSS either
/// where the cgroup can say better: RSS counts the pages an imap process
/// shares with every other (libraries, Dovecot's own mappings) once per
/// process, so its sum grew by 5.2 MiB per idle session on a lab where
/// the cgroup's charge without page cache grew by 598 KiB, and a plan from
/// it ran out of memory at a fifth of the sessions the lab held (issue 25).
pub fn server_session_memory_bytes(table: &MetricTable) -> Vec<f64> {
    if let Some(lab) = table.column(&system(SystemField::LabMemoryNoCacheKb).column())
        && lab.iter().any(|v| v.is_finite())
    {
        return lab.iter().map(|v| v * 1024.0).collect();
    }
    row_sum(
        &columns_where(table, |k| is_group_field(k, GroupField::RssKb)),
        table.times().len(),
        1024.0,
    )
}

/// The mean of `values` over the samples in `window`.
pub fn window_mean(table: &MetricTable, values: &[f64], window: TimeWindow) -> Option<f64> {
    let v = finite_samples_in(table, values, window);
    (!v.is_empty()).then(|| v.iter().map(|(_, v)| v).sum::<f64>() / v.len() as f64)
}

/// The finite samples of `values` inside `window`, as (time, value) pairs.
pub fn finite_samples_in(
    table: &MetricTable,
    values: &[f64],
    window: TimeWindow,
) -> Vec<(f64, f64)> {
    table
        .times()
        .iter()
        .copied()
        .zip(values.iter().copied())
        .filter(|(t, v)| *t >= window.start_s && *t < window.end_s && v.is_finite())
        .collect()
}

/// Network KiB/s per sample: peakhour's own bytes sent + received when the
/// table has them, else every interface's bytes in + out, loopback's once.
fn net_kib_per_s(table: &MetricTable) -> (Vec<f64>, NetSource) {
    let rows = table.times().len();
    let client: Vec<Vec<f64>> = [
        SystemField::ClientNetSentBytesPerS,
        SystemField::ClientNetReceivedBytesPerS,
    ]
    .iter()
    .filter_map(|f| table.column(&system(*f).column()))
    .collect();
    if client.iter().flatten().any(|v| v.is_finite()) {
        return (row_sum(&client, rows, 1.0 / 1024.0), NetSource::Client);
    }
    let keys: Vec<MetricKey> = table
        .names()
        .iter()
        .filter_map(|n| MetricKey::parse(n))
        .filter(|k| k.family() == Family::Network)
        .collect();
    let pick = |loopback: bool, field: NetField| -> Vec<Vec<f64>> {
        keys.iter()
            .filter(|k| k.field() == Field::Network(field))
            .filter(|k| (k.instance() == Some("lo")) == loopback)
            .filter_map(|k| table.column(&k.column()))
            .collect()
    };
    let mut columns = pick(false, NetField::RxBytesPerS);
    columns.extend(pick(false, NetField::TxBytesPerS));
    columns.extend(pick(true, NetField::TxBytesPerS));
    (row_sum(&columns, rows, 1.0 / 1024.0), NetSource::Interfaces)
}

/// The samples of `values` inside `window`, as a series.
fn series_in(table: &MetricTable, values: &[f64], window: TimeWindow) -> Series {
    let pairs: Vec<(f64, f64)> = table
        .times()
        .iter()
        .zip(values)
        .filter(|(t, _)| **t >= window.start_s && **t < window.end_s)
        .map(|(t, v)| (*t, *v))
        .collect();
    Series::from_pairs(&pairs)
}

/// Σ value × sample period over the finite values of a series (a rate
/// series integrated into a total).
fn integrate(series: &Series, period: f64) -> f64 {
    series
        .values
        .iter()
        .filter(|v| v.is_finite())
        .map(|v| v * period)
        .sum()
}

/// What the monitor measured on the server over `window` (docs/planner.md:
/// totals over the window and the per-sample series).
pub fn measure_window(table: &MetricTable, window: TimeWindow) -> WindowMeasurement {
    let rows = table.times().len();
    let period = sample_period(table.times()).unwrap_or(1.0);
    let cpu = series_in(table, &server_cpu_pct(table), window);
    let group_rate = |field: GroupField| {
        row_sum(
            &columns_where(table, |k| is_group_field(k, field)),
            rows,
            1.0 / 1024.0,
        )
    };
    let read_kib = series_in(table, &group_rate(GroupField::ReadBytesPerS), window);
    let write_kib = series_in(table, &group_rate(GroupField::WriteBytesPerS), window);
    let disk_kib_per_s = Series {
        times_s: read_kib.times_s.clone(),
        values: read_kib
            .values
            .iter()
            .zip(&write_kib.values)
            .map(|(r, w)| {
                let finite = |v: &f64| if v.is_finite() { *v } else { 0.0 };
                if r.is_finite() || w.is_finite() {
                    finite(r) + finite(w)
                } else {
                    f64::NAN
                }
            })
            .collect(),
    };
    // The machine's requests, charged to the server in proportion to its
    // share of the machine's bytes (the counters cannot tell whose they are).
    let machine = |field: DiskField| {
        let s = series_in(
            table,
            &row_sum(&disk_columns(table, field), rows, 1.0),
            window,
        );
        integrate(&s, period)
    };
    let ios = |ios: DiskField, kib: DiskField, server_kib: f64| {
        let machine_kib = machine(kib);
        if machine_kib > 0.0 {
            machine(ios) * (server_kib / machine_kib).min(1.0)
        } else {
            0.0
        }
    };
    let disk_read_kib = integrate(&read_kib, period);
    let disk_write_kib = integrate(&write_kib, period);
    let (net, net_source) = net_kib_per_s(table);
    let net = series_in(table, &net, window);
    let samples = cpu.values.len() as f64;
    WindowMeasurement {
        window_s: samples * period,
        server_cpu_s: integrate(&cpu, period) / 100.0,
        disk_read_kib,
        disk_write_kib,
        disk_read_ios: ios(DiskField::ReadsPerS, DiskField::ReadKbPerS, disk_read_kib),
        disk_write_ios: ios(
            DiskField::WritesPerS,
            DiskField::WriteKbPerS,
            disk_write_kib,
        ),
        net_kib: integrate(&net, period),
        net_source,
        cpu_pct: cpu,
        disk_kib_per_s,
        net_kib_per_s: net,
    }
}

/// The samples of the seconds `[from, to]` after the monitor's origin (a
/// sample at `t` covers the `interval` before `t`).
pub fn seconds_window(from: f64, to: f64, interval: Duration) -> TimeWindow {
    let half = interval.as_secs_f64() / 2.0;
    TimeWindow::new(from + half, to + half)
}

/// The memory model fitted to the server's session memory
/// ([`server_session_memory_bytes`]) against sessions held: the idle server (`baseline` bytes, at 0 sessions), and
/// the mean over each `(sessions, window)` of `held`.
pub fn memory_fit(
    table: &MetricTable,
    baseline: Option<f64>,
    held: &[(usize, TimeWindow)],
) -> Result<MemoryFit, PlanError> {
    let memory = server_session_memory_bytes(table);
    let mut points: Vec<MemoryPoint> = baseline
        .map(|bytes| MemoryPoint {
            sessions: 0.0,
            bytes,
        })
        .into_iter()
        .collect();
    for &(sessions, window) in held {
        if let Some(bytes) = window_mean(table, &memory, window) {
            points.push(MemoryPoint {
                sessions: sessions as f64,
                bytes,
            });
        }
    }
    fit_memory(&points)
}

/// The memory of a run's working sessions ([`crate::plan::WorkingMemory`]):
/// the server's session memory ([`server_session_memory_bytes`]) over the
/// run's steady window, its sessions the monitor's `dovecot_connections`
/// there (their mean), else the run's users. `None` without memory samples.
pub fn working_memory(
    summary: &Summary,
    table: &MetricTable,
    interval: Duration,
    run: String,
) -> Option<crate::plan::WorkingMemory> {
    let window = steady_window(summary, interval);
    let series = finite_samples_in(table, &server_session_memory_bytes(table), window);
    let sessions = table
        .column(super::columns::DOVECOT_CONNECTIONS)
        .and_then(|c| window_mean(table, &c, window))
        .filter(|s| *s > 0.0)
        .unwrap_or(f64::from(summary.meta.users));
    crate::plan::WorkingMemory::of_series(run, sessions, &series)
}

/// A matrix cell's metrics from its run (seed 003's Tables 2 and 3, Graph
/// 1): the weighted p95 and each action's, the server's CPU as % of its
/// `cpus`, memory, the read share of the server's disk bytes, the run
/// queue, throttling, throughput and the mail queue at the end.
pub fn matrix_cell_metrics(
    summary: &Summary,
    table: &MetricTable,
    interval: Duration,
    cpus: f64,
) -> BTreeMap<String, f64> {
    let window = steady_window(summary, interval);
    let mut metrics = BTreeMap::new();
    if let Some(p95) = summary.score.weighted_p95_ms {
        metrics.insert(METRIC_WEIGHTED_P95_MS.to_owned(), p95);
    }
    for (action, a) in &summary.actions {
        if let Some(p95) = a.p95_ms {
            metrics.insert(format!("p95_ms.{action}"), p95);
        }
    }
    let mean = |column: &str| {
        table
            .column(column)
            .and_then(|v| window_mean(table, &v, window))
    };
    if let Some(cpu) = window_mean(table, &server_cpu_pct(table), window) {
        metrics.insert(METRIC_CPU_PCT.to_owned(), cpu / cpus);
    }
    if let Some(bytes) = window_mean(table, &server_memory_bytes(table), window) {
        metrics.insert("memory_used_bytes".to_owned(), bytes);
    }
    let bytes = |f: GroupField| {
        SERVER_GROUPS
            .map(|g| mean(&MetricKey::group(g, f).column()).unwrap_or(0.0))
            .iter()
            .sum::<f64>()
    };
    let (read, written) = (
        bytes(GroupField::ReadBytesPerS),
        bytes(GroupField::WriteBytesPerS),
    );
    if read + written > 0.0 {
        metrics.insert(
            "disk_read_share_pct".to_owned(),
            100.0 * read / (read + written),
        );
    }
    for (name, field) in [
        ("run_queue", SystemField::RunQueue),
        ("cpu_throttled_pct", SystemField::LabCpuThrottledPct),
    ] {
        if let Some(v) = mean(&system(field).column()) {
            metrics.insert(name.to_owned(), v);
        }
    }
    metrics.insert(
        "actions_per_s".to_owned(),
        summary.throughput.actions_per_second,
    );
    if let Some(q) = summary.delivery.mail_queue_at_end {
        metrics.insert("mail_queue_at_end".to_owned(), q as f64);
    }
    metrics
}

/// The standard deviation of the samples over the steady window of the
/// matrix metrics the monitor gives (`cpu_pct` as % of `cpus`,
/// `memory_used_bytes`, `run_queue`, `cpu_throttled_pct`): how much each
/// moved within the cell, against which a change between cells is judged.
pub fn matrix_cell_spread(
    summary: &Summary,
    table: &MetricTable,
    interval: Duration,
    cpus: f64,
) -> BTreeMap<String, f64> {
    let window = steady_window(summary, interval);
    let sd = |values: &[f64], scale: f64| {
        series_in(table, values, window)
            .mean_sd()
            .filter(|(_, _, n)| *n > 1)
            .map(|(_, sd, _)| sd * scale)
    };
    let mut out = BTreeMap::new();
    let mut put = |name: &str, v: Option<f64>| {
        if let Some(v) = v {
            out.insert(name.to_owned(), v);
        }
    };
    put(METRIC_CPU_PCT, sd(&server_cpu_pct(table), 1.0 / cpus));
    put("memory_used_bytes", sd(&server_memory_bytes(table), 1.0));
    for (name, field) in [
        ("run_queue", SystemField::RunQueue),
        ("cpu_throttled_pct", SystemField::LabCpuThrottledPct),
    ] {
        put(
            name,
            table
                .column(&system(field).column())
                .and_then(|v| sd(&v, 1.0)),
        );
    }
    out
}

/// A run of `completed` tasks (unit: one task) from `workstations`, its
/// server side measured on `table` over `window`.
pub fn task_run(
    name: &str,
    workstations: u32,
    completed: f64,
    latency: Option<LatencyMeasurement>,
    table: &MetricTable,
    window: TimeWindow,
) -> TaskRun {
    TaskRun {
        name: name.to_owned(),
        unit: TaskUnit::Task,
        workstations,
        tasks_completed: completed,
        latency,
        measured: measure_window(table, window),
        memory_per_session_bytes: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Ten samples a second apart at each of 100 and 200 idle sessions:
    /// RSS grows 5 MiB per session (shared pages counted per process), the
    /// cgroup's charge without page cache 0.5 MiB, its page cache stays.
    fn held_sessions(with_cgroup: bool) -> MetricTable {
        let mut csv = String::from("time_s,group_dovecot_rss_kb,lab_memory_kb");
        csv.push_str(if with_cgroup {
            ",lab_memory_no_cache_kb\n"
        } else {
            "\n"
        });
        for t in 0..20 {
            let sessions = if t < 10 { 100.0 } else { 200.0 };
            let rss = 50_000.0 + sessions * 5.0 * 1024.0;
            let no_cache = 40_000.0 + sessions * 512.0;
            let all = no_cache + 500_000.0;
            csv.push_str(&format!("{t},{rss},{all}"));
            csv.push_str(&if with_cgroup {
                format!(",{no_cache}\n")
            } else {
                "\n".to_owned()
            });
        }
        MetricTable::from_csv(csv.as_bytes(), 100).unwrap()
    }

    /// Issue 25, item 5: the memory model fits the cgroup's charge without
    /// page cache where the lab has a cgroup, not the processes' RSS.
    #[test]
    fn issue_25_item_5_memory_per_session_comes_from_the_cgroup_without_its_page_cache() {
        let held = [
            (100, TimeWindow::new(0.0, 10.0)),
            (200, TimeWindow::new(10.0, 20.0)),
        ];
        let table = held_sessions(true);
        let fit = memory_fit(&table, Some(40_000.0 * 1024.0), &held).unwrap();
        assert!(
            (fit.per_session_bytes - 512.0 * 1024.0).abs() < 1.0,
            "{fit:?}"
        );
        // Without the cgroup's column, the groups' RSS, as before.
        let table = held_sessions(false);
        let fit = memory_fit(&table, None, &held).unwrap();
        assert!(
            (fit.per_session_bytes - 5.0 * 1_048_576.0).abs() < 1.0,
            "{fit:?}"
        );
    }

    /// Issue 25 (the answer), item 2: a working run's memory is read over
    /// its steady window, its sessions from the server's side.
    #[test]
    fn issue_25_item_2_a_working_runs_memory_is_its_steady_windows_end_and_rise() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../report/tests/fixtures/run-small/summary.json"
        );
        let summary: Summary =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        // Steady from 3 s for 20 s: 300 MiB before it (the logons), then
        // 400 MiB rising 1 MiB/s, 8 sessions held (the run had 10 users).
        let mut csv =
            String::from("time_s,lab_memory_kb,lab_memory_no_cache_kb,dovecot_connections\n");
        for t in 0..30 {
            let mib = if t < 4 {
                300.0
            } else {
                400.0 + f64::from(t - 4)
            };
            csv.push_str(&format!("{t},2000000,{},8\n", mib * 1024.0));
        }
        let table = MetricTable::from_csv(csv.as_bytes(), 100).unwrap();
        let w = working_memory(&summary, &table, Duration::from_secs(1), "run".into()).unwrap();
        assert_eq!(w.sessions, 8.0);
        assert!((w.rise_bytes_per_s - 1_048_576.0).abs() < 1.0, "{w:?}");
        // The window's samples are those at 4 ... 23 s: 419 MiB at its end.
        assert!((w.end_bytes / 1_048_576.0 - 419.0).abs() < 0.01, "{w:?}");
        assert_eq!(w.horizon_s, 3600.0 - 19.0);
    }
}
