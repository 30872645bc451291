//! From events to the run record: the bridge between the engine and the
//! analysis layer's recorders.
//!
//! [`RunRecorder`] is the [`Observer`] every run feeds first: actions,
//! commands, counters, logons, deliveries, the generator's own CPU and
//! scheduling lag go into an [`IntervalRecorder`] (one HdrHistogram per
//! action per interval) and a [`DeliveryRecorder`]. When the run is over it
//! adds the run's metadata and returns the [`RunRecord`] the summary, the
//! report and every output file are computed from.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use peakhour_analysis::{
    ActionTiming, AnalysisError, Completion, DeliveryRecorder, ErrorExample, IntervalArchive,
    IntervalRecord, IntervalRecorder, LOGON_ACTION, Outcome as Recorded, Phase as RecordedPhase,
    PhaseLengths, QosThresholds, RecorderConfig, Redactor, RunMeta, RunRecord, WindowPlan,
};
use peakhour_workload::{Mode, Plan, Window};
use tokio::time::Instant;

use crate::events::{Counter, Event, Outcome, PANIC};
use crate::population::Population;
use crate::run::{Observer, Phase, RunClock, RunOutcome, RunSettings, SelfSample};
use crate::user::LATE_AFTER;

/// Most error examples a run keeps: one per action and kind, and the kinds
/// are few; the cap only guards against a server inventing new ones.
const MAX_ERROR_EXAMPLES: usize = 64;

/// Records everything a run measures, in the run's own time (offsets since
/// its start), and builds the [`RunRecord`] at the end.
#[derive(Debug)]
pub struct RunRecorder {
    recorder: IntervalRecorder,
    delivery: DeliveryRecorder,
    logged_on: u32,
    refused: u64,
    /// The latest offset seen: where the record ends.
    last_offset: Duration,
    /// Users of a fixed-count profile that did all their actions, and when
    /// the last one did (since the steady phase started).
    finished_users: u32,
    last_finish: Duration,
    /// The first example of each action and error kind (bounded by the
    /// kinds, which are few).
    error_examples: Vec<ErrorExample>,
    /// Where the closed intervals are stored as they close (the run's
    /// journal): those it has are dropped from memory and read back at the
    /// end.
    archive: Option<Arc<dyn IntervalArchive>>,
    /// Takes the run's passwords out of what servers said (issue 26).
    redactor: Redactor,
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
        })
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
        let phase = recorded_phase(clock.phase(at));
        while self.recorder.phase() < phase {
            let (next, boundary) = match self.recorder.phase() {
                RecordedPhase::Logon => (RecordedPhase::Steady, clock.steady_start),
                RecordedPhase::Steady | RecordedPhase::Drain => {
                    (RecordedPhase::Drain, clock.steady_end)
                }
            };
            self.recorder.enter_phase(next, clock.offset(boundary));
        }
        self.recorder.advance(offset);
        if let Some(archive) = &self.archive {
            self.recorder.release_stored(archive.stored());
        }
        self.last_offset = self.last_offset.max(offset);
        offset
    }

    /// Ends the recording: the intervals, the deliveries reconciled by
    /// `outcome` (lost copies named by their `population` address), and the
    /// metadata from `plan` and `settings`.
    ///
    /// The delivery books balance: every recipient of a submission is
    /// submitted, and is then delivered, failed (refused at submission) or
    /// lost; a refused recipient is never also waiting.
    pub fn finish(
        self,
        plan: &Plan,
        population: &Population,
        settings: &RunSettings,
        outcome: &RunOutcome,
    ) -> Result<RunRecord, AnalysisError> {
        let mut meta = run_meta(plan, settings, outcome.started_at, outcome.interrupted);
        if plan.mode() == Mode::Fixed {
            meta.completion = Some(Completion {
                users_finished: self.finished_users,
                time_to_finish: self.last_finish,
            });
        }
        let mut delivery = self.delivery;
        delivery.submitted(outcome.submitted_recipients + self.refused);
        delivery.failed(self.refused);
        for lost in &outcome.lost {
            let address = population
                .address(lost.user)
                .unwrap_or_else(|_| format!("user #{}", lost.user));
            delivery.lost(&lost.message_id, address);
        }
        delivery.lost_not_listed(outcome.lost_total.saturating_sub(outcome.lost.len() as u64));
        delivery.lost_unsearched(outcome.lost_unsearched);
        let intervals = match &self.archive {
            Some(archive) => self
                .recorder
                .finish_from(self.last_offset, archive.as_ref())?,
            None => self.recorder.finish(self.last_offset),
        };
        let mut record = RunRecord::new(meta, intervals, delivery.finish()?);
        record.server.error_examples = self.error_examples;
        Ok(record)
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

/// The QoS limits a run is judged by (the one rule, `peakhour_analysis::qos`):
/// the weighted p95 within `override_ms` when given, else within the
/// profile's `qos.p95_ms`; and the actions with a limit of their own in the
/// profile (`[qos.actions]`) within it, unless `override_ms` replaces every limit.
pub fn qos_thresholds(plan: &Plan, override_ms: Option<f64>) -> QosThresholds {
    let mut qos = QosThresholds::default();
    if let Some(ms) = override_ms {
        qos.default_p95_ms = ms;
        return qos;
    }
    qos.default_p95_ms = plan.qos_weighted_p95_ms();
    for kind in plan.actions() {
        if let Some(ms) = plan.qos_action_limit_ms(kind) {
            qos.p95_ms.insert(kind.name().to_owned(), ms);
        }
    }
    qos
}

/// What describes the run in its record: identity, shape, and scoring rules.
pub(crate) fn run_meta(
    plan: &Plan,
    settings: &RunSettings,
    started_at: SystemTime,
    interrupted: bool,
) -> RunMeta {
    let started_at = chrono::DateTime::<chrono::Utc>::from(started_at)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut meta = RunMeta::new(
        settings.run_id.clone(),
        plan.name(),
        plan.users(),
        plan.seed(),
        started_at,
    );
    meta.interval = settings.interval;
    meta.phases = PhaseLengths {
        logon: settings.ramp_up,
        steady: settings.duration,
        drain: settings.drain,
    };
    meta.day = plan.day();
    meta.speed = plan.speed();
    meta.late_start_threshold = LATE_AFTER;
    meta.client_cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    meta.interrupted = interrupted;
    meta.peakhour_version = env!("CARGO_PKG_VERSION").to_owned();
    meta.action_weights = plan
        .rates()
        .iter()
        .map(|r| (r.kind.name().to_owned(), r.per_day))
        .collect();
    meta.qos = qos_thresholds(plan, settings.qos_p95_ms);
    meta.window = window_plan(plan);
    meta
}

/// The window the run measures and the rates it drives, for the record.
fn window_plan(plan: &Plan) -> Option<WindowPlan> {
    let shape = plan.day_shape();
    Some(WindowPlan {
        window: plan.window().as_str().to_owned(),
        actions_per_user_hour: plan.actions_per_user_hour()?,
        peak_actions_per_user_hour: plan.peak_actions_per_user_hour(),
        peak_factor: shape.map(|s| s.peak_factor),
        connected_at_peak: shape.map(|s| s.connected_at_peak),
        connections_per_user: shape.map(|s| s.connections_per_user),
        logons_per_second: plan.logons_per_second(),
        first_actions: match plan.window() {
            Window::Morning => shape.map_or_else(Vec::new, |s| {
                s.first_actions
                    .iter()
                    .map(|k| k.name().to_owned())
                    .collect()
            }),
            _ => Vec::new(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    /// The steady intervals of a run with a 5 s ramp-up and a 40 s steady
    /// phase, cut in 10 s intervals, whose events arrive once a second
    /// shifted by `jitter` (as a shared machine delays them).
    fn steady_intervals(jitter: Duration) -> Vec<(Duration, Duration)> {
        let t0 = Instant::now();
        let clock = RunClock {
            t0,
            steady_start: t0 + 5 * SECOND,
            steady_end: t0 + 45 * SECOND,
        };
        let mut recorder = RunRecorder::new(10 * SECOND).unwrap();
        let sample = SelfSample {
            cpu_percent: 1.0,
            max_lag: Duration::ZERO,
        };
        for second in 0..50 {
            recorder.tick(&clock, t0 + second * SECOND + jitter, sample);
        }
        recorder
            .closed_intervals()
            .iter()
            .filter(|i| i.phase == RecordedPhase::Steady)
            .map(|i| (i.start, i.length))
            .collect()
    }

    #[test]
    fn issue_31_item_7_runs_of_the_same_length_have_the_same_intervals_whatever_the_jitter() {
        let grid: Vec<_> = (0..4)
            .map(|i| ((5 + 10 * i) * SECOND, 10 * SECOND))
            .collect();
        for jitter_us in [0, 1_859, 3_217, 250_000, 999_000] {
            assert_eq!(
                steady_intervals(Duration::from_micros(jitter_us)),
                grid,
                "events {jitter_us} us after each second"
            );
        }
    }
}
