//! What `peakhour tasks`, `plan` and `matrix` share: reading a monitor
//! table into the planner's measurements, the host's and the lab's
//! capacities, and the monitor's high average in the planner's terms.
//!
//! Which counters stand for "the server" (docs/planner.md, section 1):
//!
//! * **CPU**: the shaped lab's cgroup (`lab_cpu_pct`), exact for every
//!   process the servers ever forked; without a cgroup, the sum of the
//!   `dovecot` and `postfix` process groups' `cpu_pct`.
//! * **Memory**: the cgroup's `lab_memory_kb` (page cache included), else
//!   the two groups' resident memory.
//! * **Disk KiB**: the two groups' own read and write bytes (`/proc/PID/io`),
//!   so the neighbours' I/O is not charged to the server; **disk I/Os** can
//!   only come from the machine's block devices, so the server is charged
//!   their share in proportion to its share of the bytes read (written).
//! * **Network**: the machine's interfaces, loopback counted once (every
//!   byte between the client and the lab crosses `lo` as one send and one
//!   receive).

use std::time::Duration;

use peakhour_analysis::Summary;
use peakhour_analysis::plan::{HighAverageValue, Series, WindowMeasurement};
use peakhour_lab::{CgroupStatus, CgroupVersion, LabStatus};
use peakhour_monitor::analysis::{TimeWindow, high_average};
use peakhour_monitor::{
    CgroupFiles, CgroupLayout, DiskField, Family, Field, GroupField, MetricKey, MetricTable,
    NetField, SystemField,
};

/// The files of a lab's cgroup the monitor reads (`lab status`'s
/// `limits.cgroup`).
pub(crate) fn cgroup_files(status: &CgroupStatus) -> CgroupFiles {
    CgroupFiles {
        layout: match status.version {
            CgroupVersion::V1 => CgroupLayout::V1,
            CgroupVersion::V2 => CgroupLayout::V2,
        },
        cpu_usage: status.cpu_usage_file.clone().into(),
        memory_usage: status.memory_usage_file.clone().into(),
        cpu_stat: status.cpu_stat_file.clone().into(),
    }
}

/// The server process groups whose counters stand for the server without a
/// cgroup.
const SERVER_GROUPS: [&str; 2] = ["dovecot", "postfix"];

/// The monitor's high average, as the planner takes it (`HighAverageFn`).
pub(crate) fn high_average_value(
    times: &[f64],
    values: &[f64],
    min_window_s: f64,
) -> Option<HighAverageValue> {
    let period = median_spacing(times);
    high_average(times, values, min_window_s).map(|h| HighAverageValue {
        mean: h.mean,
        std_dev: h.std_dev,
        window_s: h.end_s - h.start_s + period,
        samples: h.samples,
        shorter_than_window: h.shorter_than_window,
    })
}

fn median_spacing(times: &[f64]) -> f64 {
    let mut d: Vec<f64> = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .collect();
    if d.is_empty() {
        return 1.0;
    }
    d.sort_by(f64::total_cmp);
    d[d.len() / 2]
}

/// The monitor samples that cover a run's steady phase. A sample at `t`
/// covers the second before `t`, and the monitor's clock starts with the
/// engine's, so the samples at start + 1 s … end are the steady phase's
/// (as `peakhour run` takes them for its findings).
pub(crate) fn steady_window(summary: &Summary, interval: Duration) -> TimeWindow {
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
pub(crate) fn server_memory_bytes(table: &MetricTable) -> Vec<f64> {
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

/// The server's resident memory per sample, bytes: the `dovecot` and
/// `postfix` groups' RSS. The memory model fits this rather than the
/// cgroup's charge, which holds the page cache: the mail an `init` wrote
/// stays cached and swamps a few MiB per session (measured: 541 MiB ±
/// 19 MiB of noise against 100 sessions).
pub(crate) fn server_rss_bytes(table: &MetricTable) -> Vec<f64> {
    row_sum(
        &columns_where(table, |k| is_group_field(k, GroupField::RssKb)),
        table.times().len(),
        1024.0,
    )
}

/// The mean of `values` over the samples in `window`.
pub(crate) fn window_mean(table: &MetricTable, values: &[f64], window: TimeWindow) -> Option<f64> {
    let v: Vec<f64> = table
        .times()
        .iter()
        .zip(values)
        .filter(|(t, v)| **t >= window.start_s && **t < window.end_s && v.is_finite())
        .map(|(_, v)| *v)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Network KiB/s per sample: every interface's bytes in + out, loopback's
/// once.
fn net_kib_per_s(table: &MetricTable) -> Vec<f64> {
    let rows = table.times().len();
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
    row_sum(&columns, rows, 1.0 / 1024.0)
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
pub(crate) fn measure_window(table: &MetricTable, window: TimeWindow) -> WindowMeasurement {
    let rows = table.times().len();
    let period = median_spacing(table.times());
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
    let net = series_in(table, &net_kib_per_s(table), window);
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
        cpu_pct: cpu,
        disk_kib_per_s,
        net_kib_per_s: net,
    }
}

/// This machine's cores and memory, from `/proc`.
pub(crate) fn host_capacity() -> (f64, u64) {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024);
    (cores, memory)
}

/// The CPUs and memory the lab's servers have: the lab's caps where set,
/// else the host's.
pub(crate) fn lab_capacity(lab: Option<&LabStatus>) -> (f64, Option<u64>) {
    let (cores, memory) = host_capacity();
    let limits = lab.map(|l| &l.limits);
    (
        limits.and_then(|l| l.cpus).unwrap_or(cores),
        limits
            .and_then(|l| l.memory_bytes)
            .or((memory > 0).then_some(memory)),
    )
}

/// `0.5 CPUs × 1 GiB`-style label of a shape.
pub(crate) fn shape_label(cpus: Option<f64>, memory: Option<u64>) -> String {
    let cpus = cpus.map_or_else(|| "all CPUs".to_owned(), |c| format!("{c} CPUs"));
    let memory = memory.map_or_else(
        || "all memory".to_owned(),
        |m| format!("{} MiB", m / (1024 * 1024)),
    );
    format!("{cpus} × {memory}")
}

/// The one-minute load average now, to note beside a measurement made on a
/// shared machine.
pub(crate) fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A shaped lab's caps for `summary.json` (`None` for a lab without caps or
/// another target).
pub(crate) fn summary_limits(lab: Option<&LabStatus>) -> Option<peakhour_analysis::ServerLimits> {
    let l = &lab?.limits;
    (l.cpus.is_some() || l.memory_bytes.is_some()).then_some(peakhour_analysis::ServerLimits {
        cpus: l.cpus,
        memory_bytes: l.memory_bytes,
    })
}
