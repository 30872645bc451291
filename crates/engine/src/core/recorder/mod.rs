//! From events to the run record: the bridge between the engine and the
//! analysis layer's recorders, the same for every load.
//!
//! [`RunRecorder`] is the [`Observer`] every run feeds first: actions,
//! commands, counters, logons, deliveries, file operations, the generator's
//! own CPU and scheduling lag go into an [`IntervalRecorder`] (one
//! HdrHistogram per action per interval) and a [`DeliveryRecorder`]. When the
//! run is over the load adds its metadata (`crate::recording` for mail,
//! `crate::files` for file clients) and builds the [`RunRecord`](peakhour_analysis::RunRecord) the summary,
//! the report and every output file are computed from.
//!
//! Phases are entered at the run clock's planned boundaries (a mail run, a
//! replay), or, for NetBench's disk mix, when every client is in its
//! measured iterations ([`RunRecorder::measured_by_clients`]): its clients run
//! ramp-up, measured and ramp-down *iterations* (seed 004), started at
//! random moments and at their own pace, so the steady window opens when the
//! last client begins its measured iterations and closes when the first one
//! leaves them. Operations of ramp-up and ramp-down iterations are only
//! counted (NetBench "ignores any file operations that occur" then); measured
//! operations outside the window land in the logon or drain intervals, which
//! the summary leaves out. So the throughput, the bytes moved in the window
//! divided by its length, is that of all clients at once: seed 004's "Total
//! Throughput".

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use peakhour_analysis::{
    ActionTiming, AnalysisError, DeliveryRecorder, ErrorExample, IntervalArchive, IntervalRecord,
    IntervalRecorder, LOGON_ACTION, Outcome as Recorded, Phase as RecordedPhase, RecorderConfig,
    Redactor,
};
use tokio::time::Instant;

use crate::core::observer::{Observer, Phase, RunClock, SelfSample};
use crate::events::{Counter, Event, Outcome, PANIC};
use crate::files::{FileEvent, OpOutcome};
use crate::run::MAX_PHASE;
use crate::sessions::LATE_AFTER;

/// Counter of bytes read from the server in measured file operations.
pub const BYTES_READ: &str = peakhour_analysis::counters::BYTES_READ;
/// Counter of bytes written to the server in measured file operations.
pub const BYTES_WRITTEN: &str = peakhour_analysis::counters::BYTES_WRITTEN;
/// Counter of file operations run but not measured (ramp-up and ramp-down iterations).
pub const UNMEASURED_OPERATIONS: &str = "unmeasured_operations";

/// Most error examples a run keeps: one per action and kind, and the kinds
/// are few; the cap only guards against a server inventing new ones.
const MAX_ERROR_EXAMPLES: usize = 64;

/// Records everything a run measures, in the run's own time (offsets since
/// its start), and builds the [`RunRecord`](peakhour_analysis::RunRecord) at the end.
#[derive(Debug)]
pub struct RunRecorder {
    pub(crate) recorder: IntervalRecorder,
    pub(crate) delivery: DeliveryRecorder,
    logged_on: u32,
    pub(crate) refused: u64,
    /// The latest offset seen: where the record ends.
    pub(crate) last_offset: Duration,
    /// Users of a fixed-count profile that did all their actions, and when
    /// the last one did (since the steady phase started).
    pub(crate) finished_users: u32,
    pub(crate) last_finish: Duration,
    /// The first example of each action and error kind (bounded by the
    /// kinds, which are few).
    pub(crate) error_examples: Vec<ErrorExample>,
    /// Where the closed intervals are stored as they close (the run's
    /// journal): those it has are dropped from memory and read back at the
    /// end.
    pub(crate) archive: Option<Arc<dyn IntervalArchive>>,
    /// Takes the run's passwords out of what servers said (issue 26).
    redactor: Redactor,
    /// A disk mix's clients that have not begun their measured iterations
    /// (nor failed); `None`: the phases follow the run clock.
    waiting: Option<BTreeSet<u32>>,
    /// When the steady phase opened and closed, as offsets.
    steady_at: Option<Duration>,
    drain_at: Option<Duration>,
}

impl RunRecorder {
    /// A recorder cutting the run into intervals of `interval`.
    pub fn new(interval: Duration) -> Result<Self, AnalysisError> {
        let recorder = IntervalRecorder::new(RecorderConfig {
            interval,
            late_start_threshold: LATE_AFTER,
        })?;
        Ok(RunRecorder {
            recorder,
            delivery: DeliveryRecorder::new(),
            logged_on: 0,
            refused: 0,
            last_offset: Duration::ZERO,
            finished_users: 0,
            last_finish: Duration::ZERO,
            error_examples: Vec::new(),
            archive: None,
            redactor: Redactor::default(),
            waiting: None,
            steady_at: None,
            drain_at: None,
        })
    }

    /// The steady phase opens when each of `clients` has begun its measured
    /// iterations, and closes when the first leaves them (NetBench's disk
    /// mix), not on the run clock.
    pub(crate) fn measured_by_clients(&mut self, clients: impl IntoIterator<Item = u32>) {
        self.waiting = Some(clients.into_iter().collect());
    }

    /// The run's timeline as recorded so far: `clock` itself, unless the
    /// clients open and close the measured window; then its boundaries are
    /// where they did, or far ahead while they have not.
    pub fn timeline(&self, clock: &RunClock) -> RunClock {
        if self.waiting.is_none() {
            return *clock;
        }
        let never = clock.t0 + MAX_PHASE;
        RunClock {
            t0: clock.t0,
            steady_start: self.steady_at.map_or(never, |at| clock.t0 + at),
            steady_end: self.drain_at.map_or(never, |at| clock.t0 + at),
        }
    }

    /// Moves the record on to `at`, the end of the run.
    pub(crate) fn close_at(&mut self, clock: &RunClock, at: Instant) {
        self.sync(clock, at);
    }

    /// The end of the record, and when its steady phase opened and closed
    /// (offsets from the start; a window that never opened is empty at the
    /// end).
    pub(crate) fn phase_offsets(&self) -> (Duration, Duration, Duration) {
        let end = self.last_offset;
        (
            end,
            self.steady_at.unwrap_or(end),
            self.drain_at.unwrap_or(end),
        )
    }

    /// The intervals: all of them, those the archive stored read back.
    pub(crate) fn intervals(self) -> Result<Vec<IntervalRecord>, AnalysisError> {
        match &self.archive {
            Some(archive) => self
                .recorder
                .finish_from(self.last_offset, archive.as_ref()),
            None => Ok(self.recorder.finish(self.last_offset)),
        }
    }

    /// Passes every error example through `redactor` before it is kept:
    /// the one step between a server's words and every file and line
    /// they reach.
    pub fn redact_with(&mut self, redactor: Redactor) {
        self.redactor = redactor;
    }

    /// Keeps in memory only the closed intervals `archive` has not stored
    /// yet; [`Self::finish`] reads the others back from it. The archive must
    /// be handed every closed interval, in order (the run's observer is,
    /// through `Observer::interval_closed`).
    pub fn archive_to(&mut self, archive: Arc<dyn IntervalArchive>) {
        self.archive = Some(archive);
    }

    /// The intervals closed so far and still in memory, in order: all of
    /// them without an archive ([`Self::archive_to`]).
    pub fn closed_intervals(&self) -> &[IntervalRecord] {
        self.recorder.closed()
    }

    /// The closed intervals from the `index`-th on (counting from the run's
    /// first), as far as they are still in memory: with an archive, only the
    /// ones it has already stored are gone, and it is handed each one first.
    pub fn closed_since(&self, index: usize) -> &[IntervalRecord] {
        self.recorder.closed_since(index)
    }

    /// How many intervals have closed so far.
    pub fn closed_count(&self) -> usize {
        self.recorder.closed_count()
    }

    /// Users logged on now, as the events have told.
    pub fn logged_on(&self) -> u32 {
        self.logged_on
    }

    /// Moves the recorder into the phase `at` falls in, and returns `at` as
    /// an offset since the run started.
    ///
    /// A phase is entered at its planned boundary (the end of the ramp-up,
    /// the end of the steady phase), never at the offset of the first event
    /// that happens to arrive after it: that offset jitters by milliseconds
    /// from run to run, and a grid anchored there gave two runs of the same
    /// length different interval counts (issue 31, item 7) and the shards of
    /// one run misaligned intervals (issue 26, item 10).
    fn sync(&mut self, clock: &RunClock, at: Instant) -> Duration {
        let offset = clock.offset(at);
        if self.waiting.is_none() {
            let phase = recorded_phase(clock.phase(at));
            while self.recorder.phase() < phase {
                let (next, boundary) = match self.recorder.phase() {
                    RecordedPhase::Logon => (RecordedPhase::Steady, clock.steady_start),
                    RecordedPhase::Steady | RecordedPhase::Drain => {
                        (RecordedPhase::Drain, clock.steady_end)
                    }
                };
                self.mark(next, clock.offset(boundary));
                self.recorder.enter_phase(next, clock.offset(boundary));
            }
        }
        self.recorder.advance(offset);
        if let Some(archive) = &self.archive {
            self.recorder.release_stored(archive.stored());
        }
        self.last_offset = self.last_offset.max(offset);
        offset
    }

    /// Notes when the steady phase opened or closed.
    fn mark(&mut self, phase: RecordedPhase, offset: Duration) {
        match phase {
            RecordedPhase::Logon => {}
            RecordedPhase::Steady => self.steady_at = Some(offset),
            RecordedPhase::Drain => {
                self.steady_at.get_or_insert(offset);
                self.drain_at = Some(offset);
            }
        }
    }

    /// Enters `phase` at `at` when the clients decide it (a disk mix).
    fn enter(&mut self, clock: &RunClock, phase: RecordedPhase, at: Instant) {
        let offset = clock.offset(at).max(self.last_offset);
        if phase <= self.recorder.phase() {
            return;
        }
        self.mark(phase, offset);
        self.recorder.enter_phase(phase, offset);
        self.last_offset = offset;
    }

    /// One file client's event.
    fn file(&mut self, clock: &RunClock, event: &FileEvent) {
        let steady = self.recorder.phase() == RecordedPhase::Steady;
        match event {
            FileEvent::Op(op) => {
                let offset = clock.offset(op.finished).max(self.last_offset);
                if !op.measured {
                    self.recorder.count(offset, UNMEASURED_OPERATIONS, 1);
                    return;
                }
                let timing = ActionTiming {
                    intended_start: clock.offset(op.intended),
                    actual_start: clock.offset(op.started),
                    end: clock.offset(op.finished),
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
                let all_measuring = self.waiting.as_mut().is_some_and(|waiting| {
                    waiting.remove(client);
                    waiting.is_empty()
                });
                if all_measuring {
                    self.enter(clock, RecordedPhase::Steady, *at);
                }
            }
            FileEvent::DoneMeasuring { at, .. } => {
                if self.waiting.is_some() && steady {
                    self.enter(clock, RecordedPhase::Drain, *at);
                }
            }
            FileEvent::Failed { client, at, .. } => {
                let offset = clock.offset(*at).max(self.last_offset);
                self.recorder.error(offset, "client", "failed");
                // A client that fails before measuring no longer holds the
                // window shut; one that fails while measuring ends it, as any
                // client that stops measuring does.
                let Some(waiting) = &mut self.waiting else {
                    return;
                };
                if waiting.remove(client) {
                    if waiting.is_empty() && self.recorder.phase() == RecordedPhase::Logon {
                        self.enter(clock, RecordedPhase::Steady, *at);
                    }
                } else if steady {
                    self.enter(clock, RecordedPhase::Drain, *at);
                }
            }
            FileEvent::Untimed { counter } => {
                self.recorder.count(self.last_offset, counter, 1);
            }
            FileEvent::Leftover { .. } => {
                self.recorder
                    .count(self.last_offset, "cleanup_leftovers", 1);
            }
            FileEvent::Ended { .. } => {}
        }
    }

    fn action(&mut self, clock: &RunClock, offset: Duration, event: &Event) {
        let Event::Action {
            kind,
            intended,
            started,
            finished,
            outcome,
        } = event
        else {
            return;
        };
        let timing = ActionTiming {
            intended_start: clock.offset(*intended),
            actual_start: clock.offset(*started),
            end: clock.offset(*finished),
        };
        match outcome {
            Outcome::Ok => self
                .recorder
                .record_action(kind.name(), timing, Recorded::Ok),
            Outcome::Error(error) => {
                self.recorder
                    .record_action(kind.name(), timing, Recorded::Error(error))
            }
            Outcome::Skipped(why) => self.recorder.count(offset, &format!("skipped_{why}"), 1),
        }
    }
}

impl Observer for RunRecorder {
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event) {
        let offset = self.sync(clock, at);
        match event {
            Event::Action { .. } => self.action(clock, offset, event),
            Event::Command { name, elapsed } => {
                self.recorder.record_command(offset, name, *elapsed)
            }
            Event::Count { counter, by } => {
                if *counter == Counter::RecipientsRefused {
                    self.refused += by;
                }
                self.recorder.count(offset, counter.name(), *by);
            }
            Event::LoggedOn(change) => {
                self.logged_on = self.logged_on.saturating_add_signed(*change);
                self.recorder.set_users_logged_on(offset, self.logged_on);
            }
            Event::LogonFailed(kind) => self.recorder.error(offset, "logon", kind),
            Event::LogonSucceeded { started, finished } => {
                let timing = ActionTiming {
                    intended_start: clock.offset(*started),
                    actual_start: clock.offset(*started),
                    end: clock.offset(*finished),
                };
                self.recorder
                    .record_action(LOGON_ACTION, timing, Recorded::Ok);
            }
            Event::Logon {
                intended,
                finished,
                ok,
            } => {
                let timing = ActionTiming {
                    intended_start: clock.offset(*intended),
                    actual_start: clock.offset(*intended),
                    end: clock.offset(*finished),
                };
                let outcome = if *ok {
                    Recorded::Ok
                } else {
                    Recorded::Error("not-logged-on")
                };
                self.recorder.record_action(LOGON_ACTION, timing, outcome);
            }
            Event::SessionError(kind) => self.recorder.error(offset, "session", kind),
            Event::Delivered(latency) => {
                self.delivery.delivered(*latency);
                self.recorder.count(offset, "recipients_delivered", 1);
            }
            Event::Panicked { role } => self.recorder.error(offset, role, PANIC),
            Event::SearchFailed(kind) => self.recorder.error(offset, "reconcile", kind),
            Event::ErrorExample {
                action,
                kind,
                example,
            } => {
                let known = self
                    .error_examples
                    .iter()
                    .any(|e| &e.action == action && &e.kind == kind);
                if !known && self.error_examples.len() < MAX_ERROR_EXAMPLES {
                    self.error_examples.push(ErrorExample::new(
                        action,
                        kind,
                        example,
                        &self.redactor,
                    ));
                }
            }
            Event::Finished => {
                self.finished_users += 1;
                self.last_finish = at.saturating_duration_since(clock.steady_start);
            }
            Event::File(event) => self.file(clock, event),
        }
    }

    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration) {
        let offset = self.sync(clock, at);
        self.recorder.record_scheduling_lag(offset, lag);
    }

    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample) {
        let offset = self.sync(clock, at);
        self.recorder.record_client_cpu(offset, sample.cpu_percent);
    }
}

fn recorded_phase(phase: Phase) -> RecordedPhase {
    match phase {
        Phase::Logon => RecordedPhase::Logon,
        Phase::Steady => RecordedPhase::Steady,
        Phase::Drain => RecordedPhase::Drain,
    }
}

#[cfg(test)]
mod tests;
