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
use std::sync::Arc;
use std::time::Duration;

use peakhour_analysis::{
    ActionTiming, AnalysisError, IntervalArchive, IntervalRecord, IntervalRecorder,
    Outcome as Recorded, Phase, RecorderConfig,
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
    /// Closed intervals already handed out by [`FileRecorder::newly_closed`].
    handed_out: usize,
    /// Where the closed intervals are stored as they close (the run's journal): those
    /// it has are dropped from memory and read back at the end.
    archive: Option<Arc<dyn IntervalArchive>>,
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
            handed_out: 0,
            archive: None,
        })
    }

    /// Keeps in memory only the closed intervals `archive` has not stored yet (it is
    /// handed each one through [`FileRecorder::newly_closed`]).
    pub(crate) fn archive_to(&mut self, archive: Arc<dyn IntervalArchive>) {
        self.archive = Some(archive);
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
        if let Some(archive) = &self.archive {
            self.recorder.release_stored(archive.stored());
        }
    }

    /// The intervals closed since the last call, in order: each is handed out once,
    /// for the run's journal.
    pub(crate) fn newly_closed(&mut self) -> &[IntervalRecord] {
        let since = self.handed_out;
        self.handed_out = self.recorder.closed_count();
        self.recorder.closed_since(since)
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
    pub(crate) fn finish(
        mut self,
        at: Instant,
    ) -> Result<(Vec<IntervalRecord>, Duration, Duration), AnalysisError> {
        self.advance(at);
        let end = self.last_offset;
        let steady_at = self.steady_at.unwrap_or(end);
        let drain_at = self.drain_at.unwrap_or(end);
        let intervals = match &self.archive {
            Some(archive) => self.recorder.finish_from(end, archive.as_ref())?,
            None => self.recorder.finish(end),
        };
        Ok((intervals, steady_at, drain_at))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::files::events::OpEvent;

    fn op(t0: Instant, client: u32, at_ms: u64, measured: bool, bytes: u64) -> FileEvent {
        let at = t0 + Duration::from_millis(at_ms);
        FileEvent::Op(OpEvent {
            client,
            action: "file.read",
            measured,
            intended: at - Duration::from_millis(4),
            started: at - Duration::from_millis(3),
            finished: at,
            outcome: OpOutcome::Ok,
            bytes_read: bytes,
            bytes_written: 0,
        })
    }

    fn steady_totals(intervals: &[IntervalRecord]) -> (u64, u64) {
        let steady = intervals.iter().filter(|i| i.phase == Phase::Steady);
        steady.fold((0, 0), |(ops, bytes), i| {
            let n = i
                .actions
                .get("file.read")
                .map_or(0, |a| a.latency.decode().unwrap().len());
            (
                ops + n,
                bytes + i.counters.get(BYTES_READ).copied().unwrap_or(0),
            )
        })
    }

    /// The window opens when the last client starts measuring and closes when the first
    /// stops; unmeasured operations are only counted, and measured ones outside the
    /// window stay out of the steady intervals.
    #[test]
    fn the_measured_window_is_when_every_client_measures() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let window = Window::Iterations {
            waiting: [1, 2].into(),
        };
        let mut r = FileRecorder::new(t0, Duration::from_millis(500), window).unwrap();
        r.event(ms(100), &op(t0, 1, 100, false, 10));
        r.event(
            ms(1000),
            &FileEvent::Measuring {
                client: 1,
                at: ms(1000),
            },
        );
        r.event(ms(1500), &op(t0, 1, 1500, true, 100));
        assert_eq!(r.phase(), Phase::Logon);
        r.event(
            ms(2000),
            &FileEvent::Measuring {
                client: 2,
                at: ms(2000),
            },
        );
        assert_eq!(r.phase(), Phase::Steady);
        r.event(ms(2500), &op(t0, 2, 2500, true, 1000));
        r.event(ms(2600), &op(t0, 1, 2600, true, 1000));
        r.event(
            ms(3000),
            &FileEvent::DoneMeasuring {
                client: 1,
                at: ms(3000),
            },
        );
        assert_eq!(r.phase(), Phase::Drain);
        r.event(ms(3200), &op(t0, 2, 3200, true, 100));
        let (intervals, steady_at, drain_at) = r.finish(ms(4000)).unwrap();
        assert_eq!(
            (steady_at, drain_at),
            (Duration::from_secs(2), Duration::from_secs(3))
        );
        assert_eq!(steady_totals(&intervals), (2, 2000));
        let unmeasured: u64 = intervals
            .iter()
            .filter_map(|i| i.counters.get(UNMEASURED_OPERATIONS))
            .sum();
        assert_eq!(unmeasured, 1);
    }

    /// A client that fails before measuring does not hold the window shut.
    #[test]
    fn a_failed_client_does_not_hold_the_window_shut() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let window = Window::Iterations {
            waiting: [1, 2].into(),
        };
        let mut r = FileRecorder::new(t0, Duration::from_secs(1), window).unwrap();
        r.event(
            ms(500),
            &FileEvent::Measuring {
                client: 1,
                at: ms(500),
            },
        );
        let failed = FileEvent::Failed {
            client: 2,
            error: "no connection".into(),
            at: ms(700),
        };
        r.event(ms(700), &failed);
        assert_eq!(r.phase(), Phase::Steady);
    }

    /// A replay's window is the clock's.
    #[test]
    fn a_replay_window_follows_the_clock() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let window = Window::Clock {
            steady_start: ms(1000),
            steady_end: ms(3000),
        };
        let mut r = FileRecorder::new(t0, Duration::from_secs(1), window).unwrap();
        r.event(ms(500), &op(t0, 1, 500, true, 7));
        r.event(ms(1500), &op(t0, 1, 1500, true, 70));
        r.event(ms(3500), &op(t0, 1, 3500, true, 700));
        let (intervals, steady_at, drain_at) = r.finish(ms(4000)).unwrap();
        assert_eq!(
            (steady_at, drain_at),
            (Duration::from_secs(1), Duration::from_secs(3))
        );
        assert_eq!(steady_totals(&intervals), (1, 70));
    }
}
