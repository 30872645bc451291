//! The monitor beside a load (`peakhour run`, a file run): it samples on a
//! runtime and a thread of its own, so that reading /proc for every process
//! never delays the simulated users' timers; its time counts from the run's
//! start, after an optional idle baseline (negative `time_s`); and its
//! findings over the measured window go into the run's summary.

use std::future::Future;
use std::time::Duration;

use peakhour_analysis::Summary;
use tokio::runtime::Runtime;
use tokio::time::Instant;

use crate::error::MonitorError;
use crate::monitor::{Monitor, MonitorConfig, signed_secs};
use crate::source::Source;
use peakhour_analysis::monitor::MetricTable;
use peakhour_analysis::monitor::MonitorReport;
use peakhour_analysis::monitor::{TimeWindow, findings, mail_queue_at_end};

/// A runtime and a thread for the monitor alone.
pub struct MonitorThread {
    runtime: Runtime,
}

impl MonitorThread {
    /// Starts the thread.
    pub fn new() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("peakhour-monitor")
            .enable_all()
            .build()?;
        Ok(Self { runtime })
    }

    /// Starts sampling `source` every `interval` into `csv`, `time_s`
    /// counted from `origin` (the load's start, after the baseline).
    pub fn start<S: Source + 'static>(
        &self,
        source: S,
        csv: std::fs::File,
        interval: Duration,
        origin: Instant,
    ) -> Result<Monitor, MonitorError> {
        let config = MonitorConfig {
            interval,
            origin: Some(origin),
            ..MonitorConfig::default()
        };
        let _on_monitor_runtime = self.runtime.enter();
        Monitor::start(source, Some(csv), config)
    }

    /// Runs `load` with the monitor sampling `source` (when there is one)
    /// into its CSV file every `interval` beside it: first the idle server
    /// for `baseline` (negative `time_s`), then the load, then the monitor
    /// stopped. A monitor that cannot start does not stop the load: it runs
    /// without one. What a person should know goes to `note` as it happens.
    pub async fn beside<T>(
        &self,
        source: Option<(Box<dyn Source>, std::fs::File)>,
        baseline: Duration,
        interval: Duration,
        load: impl Future<Output = T>,
        note: &mut dyn FnMut(BesideNote<'_>),
    ) -> (T, Option<MonitorRun>) {
        // time_s counts from the load's start, after the baseline.
        let origin = Instant::now() + baseline;
        let monitor = source.and_then(|(source, csv)| {
            self.start(source, csv, interval, origin)
                .inspect_err(|e| note(BesideNote::CannotStart(e)))
                .ok()
        });
        if monitor.is_some() && !baseline.is_zero() {
            note(BesideNote::Baseline(baseline));
            tokio::time::sleep_until(origin).await;
        }
        let result = load.await;
        let monitor = match monitor {
            Some(m) => Some(MonitorRun::finish(m, origin, interval).await),
            None => None,
        };
        (result, monitor)
    }
}

/// What [`MonitorThread::beside`] tells as it goes.
#[derive(Debug)]
pub enum BesideNote<'a> {
    /// The monitor could not start; the load runs without it.
    CannotStart(&'a MonitorError),
    /// The monitor samples the idle server this long before the load.
    Baseline(Duration),
}

/// What the monitor recorded beside a load, and the instant its `time_s`
/// counts from.
pub struct MonitorRun {
    /// The monitor's report, or why it failed.
    pub report: Result<MonitorReport, MonitorError>,
    /// The monitor's origin.
    pub origin: Instant,
    /// Its sampling interval.
    pub interval: Duration,
}

impl MonitorRun {
    /// Stops `monitor` (started with `origin` and `interval`) and keeps its report.
    pub async fn finish(monitor: Monitor, origin: Instant, interval: Duration) -> Self {
        Self {
            report: monitor.finish().await,
            origin,
            interval,
        }
    }

    /// Adds the monitor's findings over the steady phase to `summary`; `t0`
    /// is the instant the run's offsets count from. Gives the report back,
    /// for its cost line.
    pub fn add_findings(
        self,
        summary: &mut Summary,
        t0: Instant,
        min_window: Duration,
    ) -> Result<MonitorReport, MonitorError> {
        let report = self.report?;
        // The monitor's origin and the engine's t0 differ by the few µs
        // between two clock reads; shift the steady window by that.
        let shift = signed_secs(t0, self.origin);
        add_steady_findings(summary, &report.table, shift, self.interval, min_window);
        Ok(report)
    }
}

/// Adds to `summary` the high averages and the bottleneck over its steady
/// phase, the mail queue at the end, and the QoS rule's growth check (a
/// queue or memory still growing fails the verdict), from `table`, whose `time_s` is
/// `shift_s` behind the run's offsets.
pub fn add_steady_findings(
    summary: &mut Summary,
    table: &MetricTable,
    shift_s: f64,
    interval: Duration,
    min_window: Duration,
) {
    let start = summary.steady.start_s + shift_s;
    let end = start + summary.steady.length_s;
    // A sample at t covers the interval before t: the steady phase's
    // samples are those at start + 1 s ... end.
    let half = interval.as_secs_f64() / 2.0;
    let steady = TimeWindow::new(start + half, end + half);
    let found = findings(table, steady, min_window);
    summary.bottleneck = Some(found.bottleneck);
    summary.resources = found.resources;
    summary.delivery.mail_queue_at_end = mail_queue_at_end(table);
    // The QoS rule's last check needs the series the summary does not keep:
    // a queue or memory still growing at the end of the steady window fails
    // the run's verdict here, so a sweep or `capacity` reads one verdict.
    // A shaped lab's memory also fails when its trend would reach the cap
    // within the hour the window stands for (the cap is on the whole charge,
    // which the page cache gives back under pressure: what is left for the
    // memory without it).
    let memory_cap_kb = summary
        .limits
        .and_then(|l| l.memory_bytes)
        .map(|b| b as f64 / 1024.0);
    let (growing, judged) = peakhour_analysis::qos::growth_in(table, steady, memory_cap_kb);
    summary.judge_growth(growing, judged);
}
