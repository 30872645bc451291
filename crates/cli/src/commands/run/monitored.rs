//! The server monitor beside a load, for mail runs and file runs alike: it samples on a
//! thread of its own (`peakhour_monitor::MonitorThread`) from the end of an optional idle
//! baseline; SIGINT, SIGTERM or SIGHUP stops the load (a second signal exits at once).

use std::future::Future;
use std::time::Duration;

use peakhour_analysis::Summary;
use peakhour_monitor::{BesideNote, MonitorRun, MonitorThread, Source};
use peakhour_workload::HumanDuration;
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::commands::signals::{Interrupt, exit_at_once};
use crate::config::MONITOR_INTERVAL;

/// Runs the load `load` makes (it gets the stop signal) with the monitor sampling
/// `source` beside it; `stopping` is what a signal prints. A monitor that cannot
/// start is a warning, not a failure: the load runs without it.
pub(crate) fn run_monitored<T, F>(
    runtime: &Runtime,
    source: anyhow::Result<(Box<dyn Source>, std::fs::File)>,
    baseline: Duration,
    stopping: &'static str,
    load: impl FnOnce(watch::Receiver<bool>) -> F,
) -> anyhow::Result<(T, Option<MonitorRun>)>
where
    F: Future<Output = T>,
{
    let thread = MonitorThread::new()?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let _interrupt = Interrupt::install(move |first| {
        if !first {
            exit_at_once();
        }
        eprintln!("\nstopping: {stopping} (a second signal exits at once)");
        let _ = stop_tx.send(true);
    })?;
    let source = source
        .inspect_err(|e| eprintln!("{}", cannot_start(e)))
        .ok();
    let mut note = |note: BesideNote<'_>| match note {
        BesideNote::CannotStart(e) => eprintln!("{}", cannot_start(e)),
        BesideNote::Baseline(baseline) => eprintln!(
            "monitor: sampling the idle server for {} before the load",
            HumanDuration(baseline)
        ),
    };
    let beside = thread.beside(source, baseline, MONITOR_INTERVAL, load(stop_rx), &mut note);
    Ok(runtime.block_on(beside))
}

fn cannot_start(e: &dyn std::fmt::Display) -> String {
    format!("warning: the server monitor could not start ({e:#}); running without it")
}

/// Adds the monitor's findings over the steady phase to `summary` and prints
/// its cost; a monitor that failed is a warning.
pub(crate) fn add_findings(
    monitor: MonitorRun,
    summary: &mut Summary,
    t0: Instant,
    min_window: Duration,
) {
    match monitor.add_findings(summary, t0, min_window) {
        Ok(report) => eprintln!("{}", report.cost_line()),
        Err(e) => eprintln!("warning: the server monitor failed: {e}"),
    }
}
