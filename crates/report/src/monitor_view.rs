//! `monitor.csv` reduced to what the report shows: timelines derived from
//! it (totals over disks and interfaces), the steady-state counter table in
//! seed 002's vocabulary, and what the monitor saw (its configuration).
//!
//! Columns are found by their typed [`MetricKey`]s, never by taking names
//! apart. Pure: the columns and the steady window in, a [`MonitorView`] out.

use peakhour_analysis::monitor::{
    Columns, DiskField, Field, GroupField, MetricKey, NetField, SystemField, TimeWindow,
    instances_with, sample_period, window_stats,
};

use crate::html::{MonitorChart, MonitorView, ServerCounter};

/// The default server groups, charted and tabled first, in this order; a
/// run's own groups (`--group NAME=REGEX`) follow in the order of the columns.
const CHARTED_GROUPS: [&str; 4] = ["dovecot", "cyrus", "postfix", "peakhour"];

/// Reduces the monitor's columns; `window` is the steady phase on the
/// monitor's time axis. The caller may append the run's configured monitor
/// settings to [`MonitorView::config`].
pub fn monitor_view(cols: &dyn Columns, window: TimeWindow) -> MonitorView {
    let view = Reduction::new(cols);
    let mut table = view.queue_and_processor_rows(window);
    table.extend(view.memory_rows(window));
    table.extend(view.disk_rows(window));
    table.extend(view.network_rows(window));
    MonitorView {
        times_s: cols.times().to_vec(),
        charts: view.charts(),
        table,
        config: view.configuration(window),
    }
}

/// The columns, and what is looked up more than once.
struct Reduction<'a> {
    cols: &'a dyn Columns,
    cores: f64,
    /// Devices with a utilization column and some I/O.
    disks: Vec<String>,
    /// Interfaces with a receive column and some traffic.
    interfaces: Vec<String>,
    /// Process groups with a CPU column.
    groups: Vec<String>,
}

impl<'a> Reduction<'a> {
    fn new(cols: &'a dyn Columns) -> Self {
        let mut view = Self {
            cols,
            cores: 1.0,
            disks: Vec::new(),
            interfaces: Vec::new(),
            groups: instances_with(cols.names(), Field::Group(GroupField::CpuPct)),
        };
        view.cores = view
            .system(SystemField::Cores)
            .and_then(|v| v.into_iter().find(|x| x.is_finite() && *x > 0.0))
            .unwrap_or(1.0);
        // Idle devices and interfaces are left out of the table (the
        // configuration lists the ones that are in).
        view.disks = instances_with(cols.names(), Field::Disk(DiskField::UtilPct))
            .into_iter()
            .filter(|d| {
                view.busy(&[
                    MetricKey::disk(d, DiskField::ReadsPerS),
                    MetricKey::disk(d, DiskField::WritesPerS),
                ])
            })
            .collect();
        view.interfaces = instances_with(cols.names(), Field::Network(NetField::RxBytesPerS))
            .into_iter()
            .filter(|i| {
                view.busy(&[
                    MetricKey::network(i, NetField::RxBytesPerS),
                    MetricKey::network(i, NetField::TxBytesPerS),
                ])
            })
            .collect();
        view
    }

    /// A column's values; `None` when it is absent or has no value at all
    /// (a server the run did not watch, e.g. no mail queue on an explicit
    /// target): no chart or row is drawn for it (issue 26).
    fn column(&self, key: &MetricKey) -> Option<Vec<f64>> {
        self.cols
            .values(&key.column())
            .filter(|values| values.iter().any(|x| x.is_finite()))
    }

    fn system(&self, field: SystemField) -> Option<Vec<f64>> {
        self.column(&MetricKey::system(field))
    }

    fn group(&self, group: &str, field: GroupField) -> Option<Vec<f64>> {
        self.column(&MetricKey::group(group, field))
    }

    /// Whether any of these columns has a non-zero value.
    fn busy(&self, keys: &[MetricKey]) -> bool {
        keys.iter()
            .filter_map(|k| self.column(k))
            .any(|v| v.iter().any(|x| x.is_finite() && *x != 0.0))
    }

    /// Sum per row of every instance's `field` column; NaN where none has a
    /// value; `None` without any such column.
    fn sum_of(&self, field: Field) -> Option<Vec<f64>> {
        let columns: Vec<Vec<f64>> = self
            .cols
            .names()
            .into_iter()
            .filter(|n| MetricKey::parse(n).is_some_and(|k| k.field() == field))
            .filter_map(|n| self.cols.values(n))
            .collect();
        if columns.is_empty() {
            return None;
        }
        let rows = self.cols.times().len();
        Some(
            (0..rows)
                .map(|i| {
                    let present: Vec<f64> = columns
                        .iter()
                        .map(|c| c[i])
                        .filter(|v| v.is_finite())
                        .collect();
                    if present.is_empty() {
                        f64::NAN
                    } else {
                        present.iter().sum()
                    }
                })
                .collect(),
        )
    }

    /// Memory in use, `100 − available / total`, per row.
    fn memory_used_pct(&self) -> Option<Vec<f64>> {
        let total = self.system(SystemField::MemTotalKb)?;
        let available = self.system(SystemField::MemAvailableKb)?;
        Some(
            total
                .iter()
                .zip(&available)
                .map(|(t, a)| {
                    if *t > 0.0 {
                        100.0 * (1.0 - a / t)
                    } else {
                        f64::NAN
                    }
                })
                .collect(),
        )
    }

    /// Every group with a CPU column: the defaults first, then the run's own.
    /// A group not in the columns (no Dovecot when the target is not the
    /// lab) has no row and no line.
    fn charted_groups(&self) -> Vec<&str> {
        let mut groups: Vec<&str> = CHARTED_GROUPS
            .into_iter()
            .filter(|g| self.groups.iter().any(|have| have == g))
            .collect();
        groups.extend(
            self.groups
                .iter()
                .map(String::as_str)
                .filter(|g| !CHARTED_GROUPS.contains(g)),
        );
        groups
    }

    fn charts(&self) -> Vec<MonitorChart> {
        let per_core = |group: &str| {
            self.group(group, GroupField::CpuPct)
                .map(|v| scale(v, 1.0 / self.cores))
        };
        let mut cpu = vec![
            (
                "busy (user + system)".to_owned(),
                self.system(SystemField::CpuBusyPct),
            ),
            ("iowait".to_owned(), self.system(SystemField::CpuIowaitPct)),
        ];
        cpu.extend(
            self.charted_groups()
                .into_iter()
                .map(|g| (g.to_owned(), per_core(g))),
        );
        let kib = |v: Vec<f64>| scale(v, 1.0 / 1024.0);
        let net = |field| self.sum_of(Field::Network(field)).map(kib);
        let queue = |field| self.system(field);
        [
            chart("cpu", "Server CPU (all cores)", "% of all cores", cpu),
            chart(
                "memory",
                "Server memory in use",
                "%",
                vec![(
                    "used (100 − available / total)".to_owned(),
                    self.memory_used_pct(),
                )],
            ),
            chart(
                "disk",
                "Disk throughput (all devices)",
                "KiB/s",
                vec![
                    (
                        "read".to_owned(),
                        self.sum_of(Field::Disk(DiskField::ReadKbPerS)),
                    ),
                    (
                        "write".to_owned(),
                        self.sum_of(Field::Disk(DiskField::WriteKbPerS)),
                    ),
                ],
            ),
            chart(
                "network",
                "Network (all interfaces, loopback included)",
                "KiB/s",
                vec![
                    ("received".to_owned(), net(NetField::RxBytesPerS)),
                    ("sent".to_owned(), net(NetField::TxBytesPerS)),
                ],
            ),
            chart(
                "queue",
                "Postfix mail queue",
                "messages",
                vec![
                    (
                        "incoming".to_owned(),
                        queue(SystemField::PostfixQueueIncoming),
                    ),
                    ("active".to_owned(), queue(SystemField::PostfixQueueActive)),
                    (
                        "deferred".to_owned(),
                        queue(SystemField::PostfixQueueDeferred),
                    ),
                    ("hold".to_owned(), queue(SystemField::PostfixQueueHold)),
                ],
            ),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// One row of the counter table: the column's mean, p95 and max over
    /// the window; `None` without a column or a value in the window.
    fn row(
        &self,
        window: TimeWindow,
        section: &str,
        label: &str,
        unit: &str,
        values: Option<Vec<f64>>,
    ) -> Option<ServerCounter> {
        let stats = window_stats(self.cols.times(), &values?, window)?;
        Some(ServerCounter {
            section: section.into(),
            label: label.into(),
            unit: unit.into(),
            mean: Some(stats.mean),
            p95: Some(stats.p95),
            max: Some(stats.max),
        })
    }

    fn queue_and_processor_rows(&self, window: TimeWindow) -> Vec<ServerCounter> {
        let system = |field| self.system(field);
        let q = "Transaction Queues";
        let p = "Processor Utilization";
        let mut rows = vec![
            self.row(
                window,
                q,
                "Postfix incoming queue length",
                "messages",
                system(SystemField::PostfixQueueIncoming),
            ),
            self.row(
                window,
                q,
                "Postfix active queue length",
                "messages",
                system(SystemField::PostfixQueueActive),
            ),
            self.row(
                window,
                q,
                "Postfix deferred queue length",
                "messages",
                system(SystemField::PostfixQueueDeferred),
            ),
            self.row(
                window,
                q,
                "Dovecot connections",
                "connections",
                system(SystemField::DovecotConnections),
            ),
            self.row(
                window,
                p,
                "System Processor Utilization",
                "% of all cores",
                system(SystemField::CpuBusyPct),
            ),
            self.row(
                window,
                p,
                "Processor iowait",
                "% of all cores",
                system(SystemField::CpuIowaitPct),
            ),
            self.row(
                window,
                p,
                "System Processor Queue Length (runnable)",
                "tasks",
                system(SystemField::RunQueue),
            ),
            self.row(
                window,
                p,
                "CPU pressure (PSI some)",
                "% of time",
                system(SystemField::PsiCpuSomePct),
            ),
        ];
        for group in self.charted_groups() {
            rows.push(self.row(
                window,
                p,
                &format!("Process % CPU Time - {group}"),
                "% of one core",
                self.group(group, GroupField::CpuPct),
            ));
            rows.push(self.row(
                window,
                p,
                &format!("Context Switches/Sec - {group}"),
                "per second",
                self.group(group, GroupField::CtxSwitchesPerS),
            ));
        }
        rows.into_iter().flatten().collect()
    }

    fn memory_rows(&self, window: TimeWindow) -> Vec<ServerCounter> {
        let m = "Memory Utilization";
        let per_second =
            |label, field| self.row(window, m, label, "per second", self.system(field));
        let mut rows = vec![
            self.row(
                window,
                m,
                "Available Bytes",
                "GiB",
                self.system(SystemField::MemAvailableKb)
                    .map(|v| scale(v, 1.0 / 1024.0 / 1024.0)),
            ),
            per_second("Major page faults/Sec", SystemField::MajorFaultsPerS),
            per_second("Swap pages in/Sec", SystemField::SwapInPagesPerS),
            per_second("Swap pages out/Sec", SystemField::SwapOutPagesPerS),
        ];
        // The load generator's own memory is not the server's.
        for group in self
            .charted_groups()
            .into_iter()
            .filter(|g| *g != "peakhour")
        {
            rows.push(
                self.row(
                    window,
                    m,
                    &format!("Process Working Set - {group} (RSS)"),
                    "MiB",
                    self.group(group, GroupField::RssKb)
                        .map(|v| scale(v, 1.0 / 1024.0)),
                ),
            );
        }
        rows.into_iter().flatten().collect()
    }

    fn disk_rows(&self, window: TimeWindow) -> Vec<ServerCounter> {
        let d = "Logical Drive Utilization";
        let mut rows = Vec::new();
        for disk in &self.disks {
            let column = |field| self.column(&MetricKey::disk(disk, field));
            rows.extend([
                self.row(
                    window,
                    d,
                    &format!("{disk} Disk Reads/Sec"),
                    "per second",
                    column(DiskField::ReadsPerS),
                ),
                self.row(
                    window,
                    d,
                    &format!("{disk} Disk Writes/Sec"),
                    "per second",
                    column(DiskField::WritesPerS),
                ),
                self.row(
                    window,
                    d,
                    &format!("{disk} KiB written/Sec"),
                    "KiB/s",
                    column(DiskField::WriteKbPerS),
                ),
                self.row(
                    window,
                    d,
                    &format!("{disk} Average Disk Queue Length"),
                    "requests",
                    column(DiskField::QueueLen),
                ),
                self.row(
                    window,
                    d,
                    &format!("{disk} utilization"),
                    "%",
                    column(DiskField::UtilPct),
                ),
            ]);
        }
        rows.into_iter().flatten().collect()
    }

    fn network_rows(&self, window: TimeWindow) -> Vec<ServerCounter> {
        let n = "Network";
        let mut rows = Vec::new();
        for iface in &self.interfaces {
            let column = |field| self.column(&MetricKey::network(iface, field));
            let kib = |field| column(field).map(|v| scale(v, 1.0 / 1024.0));
            rows.extend([
                self.row(
                    window,
                    n,
                    &format!("{iface} bytes received/Sec"),
                    "KiB/s",
                    kib(NetField::RxBytesPerS),
                ),
                self.row(
                    window,
                    n,
                    &format!("{iface} bytes sent/Sec"),
                    "KiB/s",
                    kib(NetField::TxBytesPerS),
                ),
                self.row(
                    window,
                    n,
                    &format!("{iface} drops/Sec"),
                    "per second",
                    column(NetField::DropsPerS),
                ),
            ]);
        }
        rows.into_iter().flatten().collect()
    }

    /// What the monitor saw: source, samples, spacing, cores, the disks,
    /// interfaces and groups in the table, and the steady window.
    fn configuration(&self, window: TimeWindow) -> Vec<(String, String)> {
        let times = self.cols.times();
        let list = |items: &[String]| {
            if items.is_empty() {
                "none".to_owned()
            } else {
                items.join(", ")
            }
        };
        let entries = [
            (
                "source",
                "monitor.csv in the run directory (columns: docs/metrics.md)".to_owned(),
            ),
            (
                "samples",
                format!(
                    "{} rows, {} columns, from {:.0} s to {:.0} s",
                    times.len(),
                    self.cols.names().len(),
                    times.first().copied().unwrap_or(0.0),
                    times.last().copied().unwrap_or(0.0)
                ),
            ),
            (
                "sample interval",
                sample_period(times).map_or_else(
                    || "unknown".into(),
                    |s| format!("{s:.3} s (median spacing)"),
                ),
            ),
            ("cores seen", format!("{:.0}", self.cores)),
            ("disks with I/O", list(&self.disks)),
            ("interfaces with traffic", list(&self.interfaces)),
            ("process groups", list(&self.groups)),
            ("what was monitored", monitored_scope(&self.groups)),
            (
                "steady window (monitor time)",
                format!("{:.1} s to {:.1} s", window.start_s, window.end_s),
            ),
        ];
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }
}

/// What the process groups say was watched: the server's processes, or
/// (an explicit target with no `--group`, or a node_exporter) only the
/// host's system metrics, which is then said plainly.
fn monitored_scope(groups: &[String]) -> String {
    let server_groups: Vec<&str> = groups
        .iter()
        .map(String::as_str)
        .filter(|g| *g != "peakhour")
        .collect();
    if server_groups.is_empty() {
        "the system metrics of the host sampled, and peakhour's own process; no process group \
         names the server's processes (an explicit target without --group, or a node_exporter), \
         so no server rows are shown. Give run --group NAME=SPEC on the server's host to add them"
            .to_owned()
    } else {
        format!(
            "the system metrics of the host sampled and these process groups: {}",
            server_groups.join(", ")
        )
    }
}

/// A chart of the lines that have a column; `None` when none has.
fn chart(
    key: &str,
    title: &str,
    unit: &str,
    lines: Vec<(String, Option<Vec<f64>>)>,
) -> Option<MonitorChart> {
    let lines: Vec<(String, Vec<f64>)> = lines
        .into_iter()
        .filter_map(|(label, values)| values.map(|v| (label, v)))
        .collect();
    (!lines.is_empty()).then(|| MonitorChart {
        key: key.into(),
        title: title.into(),
        unit: unit.into(),
        lines,
    })
}

fn scale(values: Vec<f64>, by: f64) -> Vec<f64> {
    values.into_iter().map(|x| x * by).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use peakhour_analysis::monitor::MetricTable;

    /// A lab-like table over t = 1 ..= 10: two cores, a busy disk and an
    /// idle one, a busy interface and an idle one, the three groups.
    fn lab_table() -> MetricTable {
        let mut table = MetricTable::new(100);
        for i in 1..=10 {
            let t = f64::from(i);
            let row: Vec<(String, Option<f64>)> = [
                ("cpu_busy_pct", Some(t * 10.0)),
                ("cpu_iowait_pct", Some(1.0)),
                ("cores", Some(2.0)),
                ("run_queue", Some(3.0)),
                ("mem_total_kb", Some(4096.0)),
                ("mem_available_kb", Some(1024.0)),
                ("disk_vda_reads_per_s", Some(5.0)),
                ("disk_vda_writes_per_s", Some(6.0)),
                ("disk_vda_read_kb_per_s", Some(100.0)),
                ("disk_vda_write_kb_per_s", Some(200.0)),
                ("disk_vda_util_pct", Some(40.0)),
                ("disk_vda_queue_len", Some(0.5)),
                ("disk_dm_0_reads_per_s", Some(0.0)),
                ("disk_dm_0_writes_per_s", Some(0.0)),
                ("disk_dm_0_read_kb_per_s", (i > 5).then_some(28.0)),
                ("disk_dm_0_util_pct", Some(0.0)),
                ("net_lo_rx_bytes_per_s", Some(2048.0)),
                ("net_lo_tx_bytes_per_s", Some(1024.0)),
                ("net_lo_drops_per_s", Some(0.0)),
                ("net_eth0_rx_bytes_per_s", Some(0.0)),
                ("net_eth0_tx_bytes_per_s", Some(0.0)),
                ("group_dovecot_cpu_pct", Some(50.0)),
                ("group_dovecot_rss_kb", Some(2048.0)),
                ("group_postfix_cpu_pct", Some(10.0)),
                ("group_peakhour_cpu_pct", Some(30.0)),
                ("group_shells_cpu_pct", Some(1.0)),
                ("postfix_queue_active", Some(t)),
            ]
            .iter()
            .map(|(n, v)| ((*n).to_owned(), *v))
            .collect();
            table.push(t, &row);
        }
        table
    }

    fn line<'a>(view: &'a MonitorView, chart: &str, line: &str) -> &'a [f64] {
        let chart = view.charts.iter().find(|c| c.key == chart).unwrap();
        &chart.lines.iter().find(|(l, _)| l == line).unwrap().1
    }

    #[test]
    fn charts_derive_totals_shares_and_units() {
        let view = monitor_view(&lab_table(), TimeWindow::ALL);
        let keys: Vec<&str> = view.charts.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["cpu", "memory", "disk", "network", "queue"]);
        // A group's % of one core becomes % of all cores.
        assert_eq!(line(&view, "cpu", "dovecot")[0], 25.0);
        assert_eq!(
            line(&view, "memory", "used (100 − available / total)")[0],
            75.0
        );
        // Totals over devices: dm_0 adds from t = 6 on.
        let read = line(&view, "disk", "read");
        assert_eq!((read[0], read[9]), (100.0, 128.0));
        assert_eq!(line(&view, "network", "received")[0], 2.0);
        // Only the queue that has a column is drawn.
        let queue = view.charts.iter().find(|c| c.key == "queue").unwrap();
        assert_eq!(queue.lines.len(), 1);
        assert_eq!(view.times_s.len(), 10);
    }

    #[test]
    fn the_counter_table_uses_the_window_and_leaves_idle_devices_out() {
        let view = monitor_view(&lab_table(), TimeWindow::new(6.0, 11.0));
        let row = |label: &str| view.table.iter().find(|r| r.label == label);
        let cpu = row("System Processor Utilization").unwrap();
        assert_eq!(cpu.section, "Processor Utilization");
        assert_eq!((cpu.mean, cpu.max), (Some(80.0), Some(100.0)));
        assert_eq!(
            row("Process Working Set - dovecot (RSS)").unwrap().mean,
            Some(2.0)
        );
        assert!(row("vda utilization").is_some());
        assert!(row("lo bytes received/Sec").is_some());
        assert!(
            row("dm_0 utilization").is_none(),
            "an idle disk is left out"
        );
        assert!(
            row("eth0 drops/Sec").is_none(),
            "an idle interface is left out"
        );
        assert!(row("Postfix deferred queue length").is_none(), "no column");
        let sections: Vec<&str> = view.table.iter().map(|r| r.section.as_str()).collect();
        let mut order = sections.clone();
        order.dedup();
        assert_eq!(
            order,
            [
                "Transaction Queues",
                "Processor Utilization",
                "Memory Utilization",
                "Logical Drive Utilization",
                "Network"
            ]
        );
    }

    #[test]
    fn the_configuration_says_what_the_monitor_saw() {
        let view = monitor_view(&lab_table(), TimeWindow::new(3.5, 8.5));
        let entry = |key: &str| {
            view.config
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(
            entry("samples"),
            Some("10 rows, 27 columns, from 1 s to 10 s")
        );
        assert_eq!(entry("sample interval"), Some("1.000 s (median spacing)"));
        assert_eq!(entry("cores seen"), Some("2"));
        assert_eq!(entry("disks with I/O"), Some("vda"));
        assert_eq!(entry("interfaces with traffic"), Some("lo"));
        assert_eq!(
            entry("process groups"),
            Some("dovecot, postfix, peakhour, shells")
        );
        assert_eq!(
            entry("steady window (monitor time)"),
            Some("3.5 s to 8.5 s")
        );
        assert_eq!(
            entry("what was monitored"),
            Some(
                "the system metrics of the host sampled and these process groups: dovecot, postfix, shells"
            )
        );
    }

    #[test]
    fn issue_12_without_a_server_group_the_report_says_only_the_host_was_watched() {
        let scope = monitored_scope(&["peakhour".to_owned()]);
        assert!(
            scope.contains("no process group names the server's processes"),
            "{scope}"
        );
        assert!(monitored_scope(&[]).contains("no server rows"));
    }

    #[test]
    fn an_empty_table_has_no_chart_and_no_row() {
        let view = monitor_view(&MetricTable::new(10), TimeWindow::ALL);
        assert!(view.charts.is_empty() && view.table.is_empty());
        assert!(
            view.config
                .iter()
                .any(|(k, v)| k == "sample interval" && v == "unknown")
        );
    }
}
