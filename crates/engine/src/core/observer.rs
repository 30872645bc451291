//! What watches a run: the one [`Observer`] every load (mail users, file
//! clients) feeds, the run's [`RunClock`] and the [`Phase`]s it cuts time into.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use peakhour_analysis::{IntervalArchive, IntervalRecord, RunMeta};
use tokio::time::Instant;

use crate::core::run_loop::STOP_GRACE;
use crate::events::Event;
use crate::reconcile::ReconcileProgress;
use crate::run::{RunError, RunSettings};

/// The phase a moment of the run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Users log on, staggered over the ramp-up; not measured.
    Logon,
    /// Measured.
    Steady,
    /// No new actions; in-flight ones finish; not measured.
    Drain,
}

/// One second of the generator's own health.
#[derive(Debug, Clone, Copy)]
pub struct SelfSample {
    /// CPU used by peakhour since the last sample, % of one core.
    pub cpu_percent: f64,
    /// The worst scheduling lag seen since the last sample.
    pub max_lag: Duration,
}

/// The run's timeline, for turning instants into offsets and phases.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    /// When the run started.
    pub t0: Instant,
    /// When the steady (measured) phase starts.
    pub steady_start: Instant,
    /// When it ends.
    pub steady_end: Instant,
}

impl RunClock {
    /// The timeline of a run shaped by `settings` that starts now; an error
    /// if an instant of it cannot be represented (see [`RunSettings::check`]).
    pub fn starting_now(settings: &RunSettings) -> Result<Self, RunError> {
        let t0 = Instant::now();
        let steady_start = later(t0, settings.ramp_up)?;
        let steady_end = later(steady_start, settings.duration)?;
        // Checked here so that every later sum of the run (the drain, the
        // deadlines) stays representable.
        later(
            steady_end,
            settings.drain + settings.action_timeout * 2 + STOP_GRACE,
        )?;
        Ok(RunClock {
            t0,
            steady_start,
            steady_end,
        })
    }

    /// Time since the run started.
    pub fn offset(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.t0)
    }

    /// The phase `at` falls in.
    pub fn phase(&self, at: Instant) -> Phase {
        if at < self.steady_start {
            Phase::Logon
        } else if at < self.steady_end {
            Phase::Steady
        } else {
            Phase::Drain
        }
    }
}

/// `at + after`, or an error when the sum overflows tokio's clock.
fn later(at: Instant, after: Duration) -> Result<Instant, RunError> {
    at.checked_add(after)
        .ok_or_else(|| RunError::Settings(format!("{after:?} from now is past the clock's end")))
}

/// Receives everything a run measures, in arrival order, from a single task.
pub trait Observer: Send {
    /// One event; `at` is when it was received (actions carry their own times).
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event);
    /// A scheduling-lag probe result.
    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration);
    /// Once a second: the generator's own CPU and worst lag.
    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample);
    /// Once a second while deliveries are reconciled after the drain, which
    /// on a loaded server can take minutes (a header search in every folder
    /// of every waiting recipient).
    fn reconciling(&mut self, _progress: ReconcileProgress) {}
    /// Once, before the first user logs on: the run's metadata as the record
    /// will carry it (marked `interrupted`, which the finished record
    /// corrects), for a journal of the run to open with.
    fn started(&mut self, _meta: &RunMeta) {}
    /// Once, before the run waits for its agreed start (`--start-at`) when
    /// that is still ahead; [`Self::started`] follows when the wait ends.
    fn waiting(&mut self, _until: SystemTime) {}
    /// An interval of the record has closed: it will not change any more.
    /// Intervals come in order, each once; the last one, cut short where the
    /// run ends, is only in the finished record.
    fn interval_closed(&mut self, _interval: &IntervalRecord) {}
    /// Where this observer stores the closed intervals it is handed, if it
    /// can give them back at the end (the run's journal): the record then
    /// holds in memory only those not yet stored, and reads the rest back
    /// when the run ends (issue 11: memory does not grow with the run's
    /// length).
    fn interval_archive(&self) -> Option<Arc<dyn IntervalArchive>> {
        None
    }
}

/// Two observers as one: each gets everything, the first first (the binary
/// shows the live line and journals the run's intervals to disk).
pub struct Both<'a>(pub &'a mut dyn Observer, pub &'a mut dyn Observer);

impl Observer for Both<'_> {
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event) {
        self.0.event(clock, at, event);
        self.1.event(clock, at, event);
    }
    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration) {
        self.0.lag(clock, at, lag);
        self.1.lag(clock, at, lag);
    }
    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample) {
        self.0.tick(clock, at, sample);
        self.1.tick(clock, at, sample);
    }
    fn reconciling(&mut self, progress: ReconcileProgress) {
        self.0.reconciling(progress);
        self.1.reconciling(progress);
    }
    fn started(&mut self, meta: &RunMeta) {
        self.0.started(meta);
        self.1.started(meta);
    }
    fn waiting(&mut self, until: SystemTime) {
        self.0.waiting(until);
        self.1.waiting(until);
    }
    fn interval_closed(&mut self, interval: &IntervalRecord) {
        self.0.interval_closed(interval);
        self.1.interval_closed(interval);
    }
    fn interval_archive(&self) -> Option<Arc<dyn IntervalArchive>> {
        self.0
            .interval_archive()
            .or_else(|| self.1.interval_archive())
    }
}
