//! What the monitor found over a run's measured window, in the summary's
//! terms: the key metrics' mean, p95, max and high average, and the
//! bottleneck. Pure: numbers in, numbers out.

use std::time::Duration;

use crate::{Bottleneck, ResourceHighAverage};

use super::Columns;
use super::stats::{TimeWindow, high_average, window_stats};
use super::use_summary::{Thresholds, use_summary};
use super::{DiskField, Field, GroupField, MetricKey, SystemField};

/// The groups a lab run monitors (its mail store's, `dovecot` or `cyrus`,
/// `postfix` and `peakhour`); other groups come from `--group`.
const DEFAULT_GROUPS: [&str; 4] = ["dovecot", "cyrus", "postfix", "peakhour"];

/// The key metrics reported first, in this order. Extra groups, the
/// busiest disk and the mail queue follow.
fn leading_metrics() -> Vec<MetricKey> {
    let mut keys = vec![
        MetricKey::system(SystemField::CpuBusyPct),
        MetricKey::system(SystemField::RunQueue),
    ];
    keys.extend(
        DEFAULT_GROUPS
            .iter()
            .map(|g| MetricKey::group(g, GroupField::CpuPct)),
    );
    keys.push(MetricKey::system(SystemField::MemAvailableKb));
    keys
}

/// Key metrics and the bottleneck over one window.
#[derive(Debug, Clone, PartialEq)]
pub struct Findings {
    /// Key metrics with their high averages: CPU busy, run queue, the
    /// default groups' CPU, memory available, extra groups' CPU, the busiest
    /// disk's utilization and the active mail queue (those with values).
    pub resources: Vec<ResourceHighAverage>,
    /// The USE summary's bottleneck, or `none` with the reason.
    pub bottleneck: Bottleneck,
}

/// Key metrics' mean, p95, max and high average (over windows of at least
/// `min_window`) inside `window`, and the USE summary's bottleneck there.
pub fn findings(cols: &dyn Columns, window: TimeWindow, min_window: Duration) -> Findings {
    let min_window_s = min_window.as_secs_f64();
    let times = cols.times();
    let inside: Vec<usize> = (0..times.len())
        .filter(|&i| times[i] >= window.start_s && times[i] < window.end_s)
        .collect();
    let metric = |key: &MetricKey| -> Option<ResourceHighAverage> {
        let name = key.column();
        let values = cols.values(&name)?;
        let t: Vec<f64> = inside.iter().map(|&i| times[i]).collect();
        let v: Vec<f64> = inside.iter().map(|&i| values[i]).collect();
        let stats = window_stats(&t, &v, TimeWindow::ALL)?;
        let high = high_average(&t, &v, min_window_s)?;
        Some(ResourceHighAverage {
            metric: name,
            label: key.label(),
            mean: round3(stats.mean),
            p95: round3(stats.p95),
            max: round3(stats.max),
            high_average: round3(high.mean),
            high_average_std_dev: round3(high.std_dev),
            high_average_window_s: min_window_s,
            shorter_than_window: high.shorter_than_window,
            samples: stats.samples,
        })
    };
    let names = cols.names();
    let mut resources: Vec<ResourceHighAverage> =
        leading_metrics().iter().filter_map(metric).collect();
    let extra_groups = names
        .iter()
        .filter_map(|n| MetricKey::parse(n))
        .filter(|k| k.field() == Field::Group(GroupField::CpuPct))
        .filter(|k| !k.instance().is_some_and(|g| DEFAULT_GROUPS.contains(&g)));
    resources.extend(extra_groups.filter_map(|k| metric(&k)));
    let busiest_disk = names
        .iter()
        .filter_map(|n| MetricKey::parse(n))
        .filter(|k| k.field() == Field::Disk(DiskField::UtilPct))
        .filter_map(|k| metric(&k))
        .max_by(|a, b| a.mean.total_cmp(&b.mean));
    resources.extend(busiest_disk);
    resources.extend(metric(&MetricKey::system(SystemField::PostfixQueueActive)));
    let bottleneck = if inside.is_empty() {
        let text = "no monitor sample in the measured window, so nothing can be named".to_owned();
        Bottleneck {
            resource: Bottleneck::NONE.to_owned(),
            evidence: text.clone(),
            line: text,
        }
    } else {
        bottleneck(cols, window)
    };
    Findings {
        resources,
        bottleneck,
    }
}

/// The USE summary's verdict as the summary records it.
fn bottleneck(cols: &dyn Columns, window: TimeWindow) -> Bottleneck {
    let verdict = use_summary(cols, window, &Thresholds::DEFAULT);
    match verdict.bottleneck {
        Some(resource) => {
            let evidence = verdict
                .resources
                .iter()
                .find(|r| r.resource == resource)
                .map(|r| r.evidence.join(", "))
                .unwrap_or_default();
            Bottleneck {
                resource: resource.name().to_owned(),
                evidence,
                line: verdict.line,
            }
        }
        None => Bottleneck {
            resource: Bottleneck::NONE.to_owned(),
            evidence: verdict.line.clone(),
            line: verdict.line,
        },
    }
}

/// Three decimals are more than any of these metrics can tell apart.
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::MetricTable;

    /// `columns` over t = 1 ..= n, one value per second from `value(name, t)`.
    fn table(n: u32, columns: &[&str], value: impl Fn(&str, f64) -> f64) -> MetricTable {
        let mut table = MetricTable::new(1000);
        for i in 1..=n {
            let t = f64::from(i);
            let row: Vec<(String, Option<f64>)> = columns
                .iter()
                .map(|c| ((*c).to_owned(), Some(value(c, t))))
                .collect();
            table.push(t, &row);
        }
        table
    }

    const COLUMNS: [&str; 12] = [
        "cpu_busy_pct",
        "cores",
        "run_queue",
        "mem_total_kb",
        "mem_available_kb",
        "disk_vda_util_pct",
        "disk_dm_0_util_pct",
        "group_shells_cpu_pct",
        "group_dovecot_cpu_pct",
        "group_postfix_cpu_pct",
        "group_peakhour_cpu_pct",
        "postfix_queue_active",
    ];

    fn lab_like(name: &str, t: f64) -> f64 {
        match name {
            "cpu_busy_pct" => 20.0 + t, // 21 ..= 60
            "cores" => 2.0,
            "run_queue" => 1.0,
            "mem_total_kb" => 1000.0,
            "mem_available_kb" => 600.0,
            "disk_vda_util_pct" => 3.0,
            "disk_dm_0_util_pct" => 7.0,
            "group_dovecot_cpu_pct" => 1.0 / 3.0,
            _ => 1.0,
        }
    }

    #[test]
    fn key_metrics_in_order_with_labels_and_the_busiest_disk() {
        let table = table(40, &COLUMNS, lab_like);
        let found = findings(&table, TimeWindow::new(11.0, 31.0), Duration::from_secs(10));
        let listed: Vec<(&str, &str)> = found
            .resources
            .iter()
            .map(|r| (r.metric.as_str(), r.label.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("cpu_busy_pct", "CPU busy %"),
                ("run_queue", "run queue"),
                ("group_dovecot_cpu_pct", "Dovecot CPU % of a core"),
                ("group_postfix_cpu_pct", "Postfix CPU % of a core"),
                ("group_peakhour_cpu_pct", "peakhour CPU % of a core"),
                ("mem_available_kb", "memory available"),
                ("group_shells_cpu_pct", "shells CPU % of a core"),
                ("disk_dm_0_util_pct", "disk dm_0 util %"),
                ("postfix_queue_active", "mail queue active"),
            ]
        );
        // CPU over t = 11 ..= 30: 31 ..= 50; the highest 10 s is the last.
        let cpu = &found.resources[0];
        assert_eq!((cpu.mean, cpu.max, cpu.samples), (40.5, 50.0, 20));
        assert_eq!(cpu.high_average, 45.5);
        assert_eq!(cpu.high_average_window_s, 10.0);
        assert!(!cpu.shorter_than_window);
        // Rounded to three decimals.
        assert_eq!(found.resources[2].mean, 0.333);
        assert_eq!(found.bottleneck.resource, Bottleneck::NONE);
        assert!(
            found
                .bottleneck
                .evidence
                .starts_with("no resource saturated"),
            "{}",
            found.bottleneck.evidence
        );
    }

    #[test]
    fn a_saturated_cpu_is_named_with_its_evidence() {
        let busy = |name: &str, t: f64| match name {
            "cpu_busy_pct" => 97.0,
            "run_queue" => 9.0,
            "group_dovecot_cpu_pct" => 150.0,
            other => lab_like(other, t),
        };
        let table = table(40, &COLUMNS, busy);
        let found = findings(&table, TimeWindow::ALL, Duration::from_secs(30));
        assert_eq!(found.bottleneck.resource, "CPU");
        assert!(
            found.bottleneck.evidence.starts_with("97% busy"),
            "{}",
            found.bottleneck.evidence
        );
        assert!(found.bottleneck.line.ends_with("CPU-bound"));
    }

    #[test]
    fn no_sample_in_the_window_names_nothing() {
        let table = table(5, &COLUMNS, lab_like);
        let found = findings(
            &table,
            TimeWindow::new(100.0, 200.0),
            Duration::from_secs(30),
        );
        assert!(found.resources.is_empty());
        assert_eq!(found.bottleneck.resource, Bottleneck::NONE);
        assert_eq!(
            found.bottleneck.line,
            "no monitor sample in the measured window, so nothing can be named"
        );
    }

    #[test]
    fn a_window_shorter_than_the_high_average_window_is_flagged() {
        let table = table(5, &COLUMNS, lab_like);
        let found = findings(&table, TimeWindow::ALL, Duration::from_secs(30));
        let cpu = &found.resources[0];
        assert!(cpu.shorter_than_window);
        assert_eq!(cpu.high_average, cpu.mean);
    }
}
