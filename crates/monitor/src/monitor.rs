//! The runner: a tokio task that samples a [`Source`] every interval,
//! writes `monitor.csv`, keeps the samples and measures its own cost.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use crate::cost::{CpuTimed, cpu_timed};
use crate::csv::CsvWriter;
use crate::error::MonitorError;
use crate::sample::Sample;
use crate::source::Source;
use crate::spill::Rows;
use peakhour_analysis::monitor::{DEFAULT_MAX_ROWS, MetricTable, MonitorCost, MonitorReport};

/// How a [`Monitor`] runs.
#[derive(Debug, Clone)]
pub struct MonitorConfig {
    /// Time between samples (default 1 s).
    pub interval: Duration,
    /// Stop after this long; `None` = until [`Monitor::stop`].
    pub duration: Option<Duration>,
    /// The run's start: `time_s` is measured from it and ticks fall on
    /// `origin + k × interval`, so samples line up with the load's
    /// intervals. `None` = when the monitor starts. An origin in the future
    /// is allowed: the rows before it (an idle baseline) get a negative
    /// `time_s`.
    pub origin: Option<Instant>,
    /// Rows kept in memory (see [`MetricTable`]).
    pub max_rows: usize,
    /// Keep the rows in an unlinked temporary file while sampling and build
    /// the [`MetricTable`] from it when the monitor stops (the same table),
    /// so a long run's memory does not grow a row a second; in memory when
    /// no temporary file can be made, or from the moment writing one fails.
    pub rows_on_disk: bool,
}

impl Default for MonitorConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            duration: None,
            origin: None,
            max_rows: DEFAULT_MAX_ROWS,
            rows_on_disk: true,
        }
    }
}

/// Asks a running monitor to stop; cheap to clone and pass around.
#[derive(Debug, Clone)]
pub struct StopHandle(Arc<watch::Sender<bool>>);

impl StopHandle {
    /// Stops the monitor after the sample in progress, if any.
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

/// A running monitor (a tokio task).
#[derive(Debug)]
pub struct Monitor {
    task: JoinHandle<Result<MonitorReport, MonitorError>>,
    stop: StopHandle,
    latest: watch::Receiver<Option<Arc<Sample>>>,
}

impl Monitor {
    /// Starts sampling `source` on the current tokio runtime. Rows go to
    /// `csv` if given (e.g. a `File` for `monitor.csv`; each row is flushed
    /// so an interrupted run keeps what it measured). A first sample is
    /// taken at once (it has gauges but no rates), then one per tick.
    pub fn start<S, W>(
        source: S,
        csv: Option<W>,
        config: MonitorConfig,
    ) -> Result<Self, MonitorError>
    where
        S: Source + 'static,
        W: Write + Send + 'static,
    {
        if config.interval.is_zero() {
            return Err(MonitorError::Config(
                "interval must be more than zero".into(),
            ));
        }
        let (stop_tx, stop_rx) = watch::channel(false);
        let (latest_tx, latest) = watch::channel(None);
        let task = tokio::spawn(run(
            source,
            csv.map(CsvWriter::new),
            config,
            stop_rx,
            latest_tx,
        ));
        Ok(Self {
            task,
            stop: StopHandle(Arc::new(stop_tx)),
            latest,
        })
    }

    /// A handle that stops this monitor (e.g. from a signal handler).
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// The newest sample, for a live line; `changed().await` on it wakes
    /// at each new sample.
    pub fn latest(&self) -> watch::Receiver<Option<Arc<Sample>>> {
        self.latest.clone()
    }

    /// Asks the monitor to stop.
    pub fn stop(&self) {
        self.stop.stop();
    }

    /// Stops the monitor and waits for its report.
    pub async fn finish(self) -> Result<MonitorReport, MonitorError> {
        self.stop.stop();
        self.join().await
    }

    /// Waits until the monitor ends by itself (its duration) or is stopped.
    pub async fn join(self) -> Result<MonitorReport, MonitorError> {
        match self.task.await {
            Ok(result) => result,
            Err(e) => Err(MonitorError::Config(format!("monitor task failed: {e}"))),
        }
    }
}

async fn run<S: Source, W: Write>(
    mut source: S,
    mut csv: Option<CsvWriter<W>>,
    config: MonitorConfig,
    mut stop: watch::Receiver<bool>,
    latest: watch::Sender<Option<Arc<Sample>>>,
) -> Result<MonitorReport, MonitorError> {
    let started = Instant::now();
    let origin = config.origin.unwrap_or(started);
    let mut rows = Rows::new(config.rows_on_disk, config.max_rows);
    let mut report = MonitorReport {
        table: MetricTable::new(2),
        cost: MonitorCost::default(),
        errors: 0,
        last_error: None,
        dropped_columns: Vec::new(),
    };
    // First tick: the first `origin + k × interval` after now, k an integer.
    // An origin in the future (a baseline sampled before the load) gives
    // negative k, i.e. rows with a negative `time_s`.
    let interval_ns = config.interval.as_nanos().max(1);
    let first_tick = if origin > started {
        let ahead = origin.duration_since(started).as_nanos();
        let k = ahead / interval_ns;
        let back = Duration::from_nanos(u64::try_from(k * interval_ns).unwrap_or(u64::MAX));
        let tick = origin.checked_sub(back).unwrap_or(origin);
        if tick <= started {
            tick + config.interval
        } else {
            tick
        }
    } else {
        let since = started.duration_since(origin).as_nanos();
        let k = since / interval_ns + 1;
        origin + Duration::from_nanos(u64::try_from(k * interval_ns).unwrap_or(u64::MAX))
    };
    let mut ticker = tokio::time::interval_at(first_tick, config.interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let deadline = config.duration.map(|d| started + d);
    let mut first = true;
    loop {
        if !first {
            // Biased: a stop or the deadline wins over a tick due at the same instant.
            tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => break,
                _ = sleep_until_opt(deadline) => break,
                _ = ticker.tick() => {}
            }
        }
        first = false;
        if *stop.borrow() {
            break;
        }
        let at = Instant::now();
        // Charge both the call (a synchronous source works there) and every poll.
        let (future, call_cpu) = cpu_timed(|| source.sample());
        let (result, poll_cpu) = CpuTimed::new(future).await;
        let mut cpu = call_cpu + poll_cpu;
        match result {
            Ok(mut sample) => {
                sample.time_s = signed_secs(at, origin);
                sample.monitor_cpu_us = Some(cpu.as_secs_f64() * 1e6);
                let (written, write_cpu) = cpu_timed(|| {
                    // Named once for the table and the CSV.
                    let metrics = sample.metrics();
                    rows.push(sample.time_s, &metrics)?;
                    csv.as_mut()
                        .map_or(Ok(()), |w| w.write_row(sample.time_s, &metrics))
                });
                cpu += write_cpu;
                written?;
                latest.send_replace(Some(Arc::new(sample)));
            }
            Err(e) => {
                report.errors += 1;
                report.last_error = Some(e.to_string());
            }
        }
        report.cost.add(cpu);
    }
    report.cost.wall = started.elapsed();
    report.table = rows.into_table()?;
    if let Some(w) = &csv {
        report.dropped_columns = w.dropped_columns().iter().cloned().collect();
    }
    Ok(report)
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Seconds from `origin` to `at`, negative when `at` is earlier: how a
/// monitor's `time_s` column relates an instant to its origin.
pub fn signed_secs(at: Instant, origin: Instant) -> f64 {
    if at >= origin {
        at.duration_since(origin).as_secs_f64()
    } else {
        -origin.duration_since(at).as_secs_f64()
    }
}
