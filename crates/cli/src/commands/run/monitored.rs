//! The server monitor beside a load, for mail runs and file runs alike: it samples on a
//! runtime (and thread) of its own from the end of an optional idle baseline, SIGINT,
//! SIGTERM or SIGHUP stops the load (a second signal exits at once), and its findings over the measured window go into the summary.

use std::future::Future;
use std::time::Duration;

use peakhour_analysis::Summary;
use peakhour_monitor::analysis::{TimeWindow, mail_queue_at_end};
use peakhour_monitor::{LocalSource, Monitor, MonitorConfig, MonitorReport, signed_secs};
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio::time::Instant;

use super::super::monitor::{cost_line, findings};
use super::super::signals::{Interrupt, exit_at_once};
use super::MONITOR_INTERVAL;

/// What the server monitor recorded during the run, and the instant its
/// `time_s` counts from.
pub(crate) struct MonitorRun {
    report: Result<MonitorReport, peakhour_monitor::MonitorError>,
    origin: Instant,
}

/// Runs the load `load` makes (it gets the stop signal) with the monitor sampling
/// `source` beside it; `stopping` is what a signal prints. A monitor that cannot
/// start is a warning, not a failure: the load runs without it.
pub(crate) fn run_monitored<T, F>(
    runtime: &Runtime,
    source: anyhow::Result<(LocalSource, std::fs::File)>,
    baseline: Duration,
    stopping: &'static str,
    load: impl FnOnce(watch::Receiver<bool>) -> F,
) -> anyhow::Result<(T, Option<MonitorRun>)>
where
    F: Future<Output = T>,
{
    // A sample reads /proc for every process, and must not delay the simulated
    // users' timers: the monitor has a runtime and a thread of its own.
    let monitor_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("peakhour-monitor")
        .enable_all()
        .build()?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let _interrupt = Interrupt::install(move |first| {
        if !first {
            exit_at_once();
        }
        eprintln!("\nstopping: {stopping} (a second signal exits at once)");
        let _ = stop_tx.send(true);
    })?;
    Ok(runtime.block_on(async {
        // The monitor's time_s counts from the run's start; a baseline samples the
        // idle server before it (negative time_s).
        let origin = Instant::now() + baseline;
        let monitor = source.and_then(|(source, csv)| {
            let config = MonitorConfig {
                interval: MONITOR_INTERVAL,
                origin: Some(origin),
                ..MonitorConfig::default()
            };
            let _on_monitor_runtime = monitor_runtime.enter();
            Monitor::start(source, Some(csv), config).map_err(anyhow::Error::from)
        });
        let monitor = match monitor {
            Ok(monitor) => Some(monitor),
            Err(e) => {
                eprintln!(
                    "warning: the server monitor could not start ({e:#}); running without it"
                );
                None
            }
        };
        if monitor.is_some() && !baseline.is_zero() {
            eprintln!(
                "monitor: sampling the idle server for {} before the load",
                peakhour_workload::HumanDuration(baseline)
            );
            tokio::time::sleep_until(origin).await;
        }
        let result = load(stop_rx).await;
        let monitor = match monitor {
            Some(m) => Some(MonitorRun {
                report: m.finish().await,
                origin,
            }),
            None => None,
        };
        (result, monitor)
    }))
}

impl MonitorRun {
    /// Adds the monitor's findings over the steady phase (high averages,
    /// bottleneck, the mail queue at the end) to `summary`; `t0` is the
    /// instant the run's offsets count from.
    pub(crate) fn add_findings(self, summary: &mut Summary, t0: Instant, min_window: Duration) {
        let report = match self.report {
            Ok(report) => report,
            Err(e) => {
                eprintln!("warning: the server monitor failed: {e}");
                return;
            }
        };
        // The monitor's origin and the engine's t0 differ by the few µs
        // between two clock reads; shift the steady window by that.
        let shift = signed_secs(t0, self.origin);
        let start = summary.steady.start_s + shift;
        let end = start + summary.steady.length_s;
        // A sample at t covers the second before t: the steady phase's
        // samples are those at start + 1 s ... end.
        let half = MONITOR_INTERVAL.as_secs_f64() / 2.0;
        let window = TimeWindow::new(start + half, end + half);
        let found = findings(&report.table, window, min_window);
        summary.bottleneck = Some(found.bottleneck);
        summary.resources = found.resources;
        summary.delivery.mail_queue_at_end = mail_queue_at_end(&report.table);
        eprintln!("{}", cost_line(&report));
    }
}
