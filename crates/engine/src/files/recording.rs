//! From file events to the run record: the analysis layer's interval recorder, with the
//! measured window decided as NetBench decided it.
//!
//! A disk mix has no clock-set phases: each client runs ramp-up, measured and ramp-down
//! *iterations* (seed 004), started at random moments and at its own pace. The run's
//! steady (measured) window is the time every client was in its measured iterations:
//! it opens when the last client begins them and closes when the first one leaves them.
//! Operations of ramp-up and ramp-down iterations are never recorded (NetBench "ignores
//! any file operations that occur" then); measured operations outside the window land
//! in the logon or drain intervals, which the summary leaves out. So the throughput, the
//! bytes moved in the window divided by its length, is that of all clients at once:
//! the sum of the clients' throughputs, seed 004's "Total Throughput".
//!
//! A replay has clock-set phases, as a mail run: `--ramp-up`, `--duration`, drain.

use std::collections::BTreeSet;
use std::time::Duration;

use peakhour_analysis::{
    ActionTiming, AnalysisError, IntervalRecord, IntervalRecorder, Outcome as Recorded, Phase,
    RecorderConfig,
};
use tokio::time::Instant;

use crate::files::events::{FileEvent, OpOutcome};
use crate::user::LATE_AFTER;

/// Counter of bytes read from the server in measured operations.
pub const BYTES_READ: &str = peakhour_analysis::counters::BYTES_READ;
/// Counter of bytes written to the server in measured operations.
pub const BYTES_WRITTEN: &str = peakhour_analysis::counters::BYTES_WRITTEN;
/// Counter of operations run but not measured (ramp-up and ramp-down iterations).
pub const UNMEASURED_OPERATIONS: &str = "unmeasured_operations";

/// How the measured window is found.
#[derive(Debug, Clone)]
pub(crate) enum Window {
    /// From the moment every client is measuring to the first that stops.
    Iterations {
        /// Clients that have not yet begun their measured iterations (nor failed).
        waiting: BTreeSet<u32>,
    },
    /// Fixed times from the run's start.
    Clock {
        /// Start of the steady phase.
        steady_start: Instant,
        /// Its end.
        steady_end: Instant,
    },
}

/// Records a file run into intervals.
#[derive(Debug)]
pub(crate) struct FileRecorder {
    t0: Instant,
    recorder: IntervalRecorder,
    window: Window,
    steady_at: Option<Duration>,
    drain_at: Option<Duration>,
    last_offset: Duration,
}

impl FileRecorder {
    pub(crate) fn new(
        t0: Instant,
        interval: Duration,
        window: Window,
    ) -> Result<Self, AnalysisError> {
        Ok(FileRecorder {
            t0,
            recorder: IntervalRecorder::new(RecorderConfig {
                interval,
                late_start_threshold: LATE_AFTER,
            })?,
            window,
            steady_at: None,
            drain_at: None,
            last_offset: Duration::ZERO,
        })
    }

    fn offset(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.t0)
    }

    fn enter(&mut self, phase: Phase, at: Instant) {
        let offset = self.offset(at).max(self.last_offset);
        if phase <= self.recorder.phase() {
            return;
        }
        if phase == Phase::Steady {
            self.steady_at = Some(offset);
        } else if phase == Phase::Drain {
            self.steady_at.get_or_insert(offset);
            self.drain_at = Some(offset);
        }
        self.recorder.enter_phase(phase, offset);
        self.last_offset = offset;
    }

    /// Moves time on to `at`, switching phases on the clock when the window is clock-set.
    pub(crate) fn advance(&mut self, at: Instant) {
        if let Window::Clock {
            steady_start,
            steady_end,
        } = self.window
        {
            if at >= steady_start {
                self.enter(Phase::Steady, steady_start);
            }
            if at >= steady_end {
                self.enter(Phase::Drain, steady_end);
            }
        }
        let offset = self.offset(at);
        if offset > self.last_offset {
            self.recorder.advance(offset);
            self.last_offset = offset;
        }
    }

    /// Whether the steady window has opened.
    pub(crate) fn phase(&self) -> Phase {
        self.recorder.phase()
    }

    pub(crate) fn event(&mut self, at: Instant, event: &FileEvent) {
        self.advance(at);
        match event {
            FileEvent::Op(op) => {
                let offset = self.offset(op.finished).max(self.last_offset);
                if !op.measured {
                    self.recorder.count(offset, UNMEASURED_OPERATIONS, 1);
                    return;
                }
                let timing = ActionTiming {
                    intended_start: self.offset(op.intended),
                    actual_start: self.offset(op.started),
                    end: self.offset(op.finished),
                };
                let outcome = match &op.outcome {
                    OpOutcome::Ok => Recorded::Ok,
                    OpOutcome::Error(kind) => Recorded::Error(kind),
                };
                self.recorder.record_action(op.action, timing, outcome);
                if op.bytes_read > 0 {
                    self.recorder.count(offset, BYTES_READ, op.bytes_read);
                }
                if op.bytes_written > 0 {
                    self.recorder.count(offset, BYTES_WRITTEN, op.bytes_written);
                }
            }
            FileEvent::Measuring { client, at } => {
                if let Window::Iterations { waiting } = &mut self.window {
                    waiting.remove(client);
                    if waiting.is_empty() {
                        self.enter(Phase::Steady, *at);
                    }
                }
            }
            FileEvent::DoneMeasuring { at, .. } => {
                if matches!(self.window, Window::Iterations { .. })
                    && self.recorder.phase() == Phase::Steady
                {
                    self.enter(Phase::Drain, *at);
                }
            }
            FileEvent::Failed { client, at, .. } => {
                let offset = self.offset(*at).max(self.last_offset);
                self.recorder.error(offset, "client", "failed");
                if let Window::Iterations { waiting } = &mut self.window {
                    // A client that fails before measuring no longer holds the window
                    // shut; one that fails while measuring ends it, as any client that
                    // stops measuring does.
                    if waiting.remove(client) {
                        if waiting.is_empty() && self.recorder.phase() == Phase::Logon {
                            self.enter(Phase::Steady, *at);
                        }
                    } else if self.recorder.phase() == Phase::Steady {
                        self.enter(Phase::Drain, *at);
                    }
                }
            }
            FileEvent::Untimed { counter } => {
                let offset = self.last_offset;
                self.recorder.count(offset, counter, 1);
            }
            FileEvent::Leftover { .. } => {
                let offset = self.last_offset;
                self.recorder.count(offset, "cleanup_leftovers", 1);
            }
        }
    }

    pub(crate) fn lag(&mut self, at: Instant, lag: Duration) {
        self.advance(at);
        let offset = self.last_offset;
        self.recorder.record_scheduling_lag(offset, lag);
    }

    pub(crate) fn cpu(&mut self, at: Instant, percent: f64) {
        self.advance(at);
        let offset = self.last_offset;
        self.recorder.record_client_cpu(offset, percent);
    }

    /// The intervals, and when the steady window opened and closed (offsets from t0; a
    /// window that never opened is empty at the end).
    pub(crate) fn finish(mut self, at: Instant) -> (Vec<IntervalRecord>, Duration, Duration) {
        self.advance(at);
        let end = self.last_offset;
        let steady_at = self.steady_at.unwrap_or(end);
        let drain_at = self.drain_at.unwrap_or(end);
        (self.recorder.finish(end), steady_at, drain_at)
    }
}
