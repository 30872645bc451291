//! The exporter's side of a run: an engine [`Observer`] that counts what
//! the run's record counts, from the same events in the same order.
//!
//! The engine hands every event to the run's recorder first and then to the
//! observers, with the same `at`; this observer moves through the phases
//! exactly as the recorder does (the latest phase any event fell in), so the
//! steady-phase counters it serves add up to what `summary.json` reports.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use peakhour_analysis::RunMeta;
use peakhour_engine::{
    Counter, Event, LATE_AFTER, Observer, Outcome, PANIC, Phase, ReconcileProgress, RunClock,
    SelfSample,
};
use tokio::time::Instant;

use crate::live::{Ending, LiveMetrics, RunInfo, RunPhase, Tally};

/// Feeds a run's events into the live metrics an [`Exporter`](crate::Exporter)
/// serves; does nothing when no exporter listens.
#[derive(Debug, Clone, Default)]
pub struct MetricsObserver {
    metrics: Option<Arc<Mutex<LiveMetrics>>>,
}

impl MetricsObserver {
    /// An observer updating `metrics`.
    pub fn new(metrics: Arc<Mutex<LiveMetrics>>) -> Self {
        MetricsObserver {
            metrics: Some(metrics),
        }
    }

    /// Updates the metrics, if any, under their lock: one uncontended lock
    /// per event, held for a few map lookups.
    fn update(&self, f: impl FnOnce(&mut LiveMetrics)) {
        if let Some(metrics) = &self.metrics {
            f(&mut metrics.lock().unwrap_or_else(PoisonError::into_inner));
        }
    }
}

/// The engine's phase as the exporter labels it.
pub fn run_phase(phase: Phase) -> RunPhase {
    match phase {
        Phase::Logon => RunPhase::Logon,
        Phase::Steady => RunPhase::Steady,
        Phase::Drain => RunPhase::Drain,
    }
}

/// The engine's counter as the exporter serves it, if it serves it.
pub fn tally(counter: Counter) -> Option<Tally> {
    Some(match counter {
        Counter::MessagesSubmitted => Tally::MessagesSubmitted,
        Counter::RecipientsSubmitted => Tally::RecipientsSubmitted,
        Counter::RecipientsRefused => Tally::RecipientsRefused,
        Counter::MessageOpens => Tally::MessageOpens,
        Counter::FolderOpens => Tally::FolderOpens,
        Counter::Reconnects => Tally::Reconnects,
        Counter::EventsCreated => Tally::EventsCreated,
        Counter::EventsChanged => Tally::EventsChanged,
        Counter::MessagesDownloaded => Tally::MessagesDownloaded,
        // Counted among the recipients delivered, as the run's record does;
        // its latency is known only to `peakhour merge`.
        Counter::RecipientsDeliveredFromOtherShard => Tally::RecipientsDelivered,
        // Milliseconds, not a count of things: the reconciliation's progress
        // is served from its own events.
        Counter::ReconcileMs => return None,
        // In the run's summary; not served live.
        Counter::InvitationsSent | Counter::InvitationsAnswered => return None,
    })
}

/// Counts one event into `m`, which is already in the event's phase.
pub fn count_event(m: &mut LiveMetrics, event: &Event) {
    match event {
        Event::Action {
            kind,
            intended,
            started,
            finished,
            outcome,
        } => {
            let latency = finished.saturating_duration_since(*intended);
            let late = started.saturating_duration_since(*intended) > LATE_AFTER;
            let ending = match outcome {
                Outcome::Ok => Ending::Ok,
                Outcome::Error(kind) => Ending::Error(kind),
                Outcome::Skipped(why) => Ending::Skipped(why),
            };
            m.action(kind.name(), ending, latency, late);
        }
        Event::Logon {
            intended,
            finished,
            ok,
        } => {
            let ending = if *ok {
                Ending::Ok
            } else {
                Ending::Error("not-logged-on")
            };
            let latency = finished.saturating_duration_since(*intended);
            m.action(peakhour_analysis::LOGON_ACTION, ending, latency, false);
        }
        Event::Command { name, .. } => m.command(name),
        Event::Count { counter, by } => {
            if let Some(tally) = tally(*counter) {
                m.tally(tally, *by);
            }
        }
        Event::LoggedOn(change) => m.logged_on(*change),
        Event::LogonFailed(kind) => m.error("logon", kind),
        Event::LogonSucceeded { started, finished } => m.action(
            peakhour_analysis::LOGON_ACTION,
            Ending::Ok,
            finished.saturating_duration_since(*started),
            false,
        ),
        Event::SessionError(kind) => m.error("session", kind),
        Event::Delivered(latency) => m.delivered(*latency),
        Event::Panicked { role } => m.error(role, PANIC),
        Event::SearchFailed(kind) => m.error("reconcile", kind),
        // Words for people, already counted by the error it illustrates.
        Event::ErrorExample { .. } | Event::Finished => {}
        // File runs serve no live metrics.
        Event::File(_) => {}
    }
}

impl Observer for MetricsObserver {
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event) {
        self.update(|m| {
            m.enter(run_phase(clock.phase(at)));
            count_event(m, event);
        });
    }

    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration) {
        self.update(|m| {
            m.enter(run_phase(clock.phase(at)));
            m.lag(lag);
        });
    }

    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample) {
        self.update(|m| {
            m.enter(run_phase(clock.phase(at)));
            m.self_check(clock.offset(at), sample.cpu_percent / 100.0, sample.max_lag);
        });
    }

    fn reconciling(&mut self, progress: ReconcileProgress) {
        self.update(|m| m.reconciling(progress.searched as u64, progress.mailboxes as u64));
    }

    fn waiting(&mut self, _until: std::time::SystemTime) {
        self.update(LiveMetrics::waiting);
    }

    fn started(&mut self, meta: &RunMeta) {
        // A shard's own part of the population, not the whole of it.
        let shard = meta.shards.first();
        let run = RunInfo {
            run_id: meta.run_id.clone(),
            profile: meta.profile.clone(),
            seed: meta.seed,
            shard: shard.map_or("1/1".to_owned(), |s| format!("{}/{}", s.index, s.count)),
            version: meta.peakhour_version.clone(),
        };
        let users = shard.map_or(meta.users, |s| s.users);
        self.update(|m| m.start(run, users, meta.action_weights.keys().map(String::as_str)));
    }
}
