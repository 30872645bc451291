//! The interval recorder: the cheap, bounded-memory sink the engine records
//! every action, command, counter and self-check sample into.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use crate::AnalysisError;
use crate::histogram::LatencyHistogram;
use crate::record::{ActionInterval, ClientInterval, IntervalRecord, Phase};

/// Default late-start threshold: an action that starts more than 100 ms after
/// its intended start is counted late. Its latency is measured from the
/// intended start either way; the count shows how often that mattered.
pub const DEFAULT_LATE_START_THRESHOLD: Duration = Duration::from_millis(100);

/// Counter the recorder bumps if a histogram could not be encoded, so such a
/// loss is visible instead of silent.
pub const ENCODE_FAILURES_COUNTER: &str = "recorder_encode_failures";

/// How the recorder cuts time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecorderConfig {
    /// Interval length (default 10 s).
    pub interval: Duration,
    /// Started later than this after the intended start counts as a late start.
    pub late_start_threshold: Duration,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        Self {
            interval: crate::record::DEFAULT_INTERVAL,
            late_start_threshold: DEFAULT_LATE_START_THRESHOLD,
        }
    }
}

/// When one action was meant to start, did start, and ended; all offsets
/// since the run started (the engine's monotonic clock minus its start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionTiming {
    /// When the schedule wanted the action to start.
    pub intended_start: Duration,
    /// When it really started (later if the user or client was busy).
    pub actual_start: Duration,
    /// When it finished, successfully or not.
    pub end: Duration,
}

impl ActionTiming {
    /// Latency as recorded: from the intended start to the end, so lateness
    /// is charged to the action (no coordinated omission).
    pub fn latency(&self) -> Duration {
        self.end.saturating_sub(self.intended_start)
    }

    /// How late the action started.
    pub fn lateness(&self) -> Duration {
        self.actual_start.saturating_sub(self.intended_start)
    }
}

/// How an action ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// It completed; its latency goes into the histogram.
    Ok,
    /// It failed with this kind (`timeout`, `connect`, `imap.NO` ...); it is
    /// counted by kind and kept out of the latency histogram.
    Error(&'a str),
}

#[derive(Debug, Default)]
struct OpenAction {
    latency: LatencyHistogram,
    errors: BTreeMap<String, u64>,
    late_starts: u64,
}

impl OpenAction {
    fn is_empty(&self) -> bool {
        self.latency.is_empty() && self.errors.is_empty() && self.late_starts == 0
    }
}

#[derive(Debug)]
struct OpenInterval {
    start: Duration,
    phase: Phase,
    actions: BTreeMap<String, OpenAction>,
    commands: BTreeMap<String, LatencyHistogram>,
    counters: BTreeMap<String, u64>,
    cpu_sum: f64,
    cpu_samples: u32,
    lag: LatencyHistogram,
}

/// Records one run (or one worker's share of it) into per-interval
/// histograms and counters.
///
/// Time is given by the caller as an offset since the run start: the
/// recorder never reads a clock. Events land in the interval containing their
/// time; time moving past an interval's end closes it (empty intervals are
/// kept, so the list is contiguous). An event older than the open interval is
/// counted in the open interval. Intervals never straddle phases:
/// [`Self::enter_phase`] closes the open interval early.
///
/// Memory: one live histogram per action, command and lag in the open
/// interval (reused across intervals); closed intervals are encoded (a few
/// hundred bytes per histogram) and held until [`Self::release_stored`]
/// says an [`IntervalArchive`] has them, so a run that stores its intervals
/// as they close (the run's journal) holds only the few not yet stored,
/// however long it runs; [`Self::finish_from`] reads the stored ones back.
///
/// ```
/// use std::time::Duration;
/// use peakhour_analysis::*;
///
/// let mut rec = IntervalRecorder::new(RecorderConfig::default())?;
/// let t = |ms| Duration::from_millis(ms); // offsets since run start
/// rec.set_users_logged_on(t(4_000), 200);
/// rec.enter_phase(Phase::Steady, t(60_000));
/// let timing = ActionTiming { intended_start: t(61_000), actual_start: t(61_002), end: t(61_180) };
/// rec.record_action("read", timing, Outcome::Ok);
/// rec.record_command(t(61_180), "imap.FETCH", t(150));
/// rec.count(t(61_180), counters::MESSAGE_OPENS, 1);
/// rec.enter_phase(Phase::Drain, t(180_000));
/// let intervals = rec.finish(t(190_000));
///
/// let mut delivery = DeliveryRecorder::new();
/// delivery.submitted(5);
/// let meta = RunMeta::new("run-1", "mmb-medium", 200, 42, "2026-05-01T12:00:00Z");
/// let record = RunRecord::new(meta, intervals, delivery.finish()?);
/// let summary = Summary::compute(&record)?;
/// assert_eq!(summary.actions["read"].p95_ms, Some(180.0));
/// # Ok::<(), AnalysisError>(())
/// ```
#[derive(Debug)]
pub struct IntervalRecorder {
    config: RecorderConfig,
    open: OpenInterval,
    /// Closed intervals not released: every one from index `released` on.
    closed: Vec<IntervalRecord>,
    /// Closed intervals dropped from memory because an archive has them.
    released: usize,
    users_logged_on: u32,
}

/// Somewhere closed intervals are stored as they close, which can give them
/// back at the end: the run's journal on disk. With one, a recorder holds in
/// memory only the intervals not yet stored ([`IntervalRecorder::release_stored`]).
pub trait IntervalArchive: Send + Sync + Debug {
    /// How many closed intervals, from the run's first on, are stored and
    /// can be read back. Counts only intervals the archive was handed and
    /// has made safe, in order; it stops growing when storing fails (a full
    /// disk), so the recorder keeps every later interval in memory.
    fn stored(&self) -> usize;

    /// The first `count` closed intervals, exactly as they were handed in
    /// (`count` is at most [`Self::stored`]).
    fn read_back(&self, count: usize) -> Result<Vec<IntervalRecord>, AnalysisError>;
}

impl IntervalRecorder {
    /// A recorder starting at offset zero in the logon phase.
    pub fn new(config: RecorderConfig) -> Result<Self, AnalysisError> {
        if config.interval.is_zero() {
            return Err(AnalysisError::ZeroInterval);
        }
        Ok(Self {
            config,
            open: OpenInterval {
                start: Duration::ZERO,
                phase: Phase::Logon,
                actions: BTreeMap::new(),
                commands: BTreeMap::new(),
                counters: BTreeMap::new(),
                cpu_sum: 0.0,
                cpu_samples: 0,
                lag: LatencyHistogram::new(),
            },
            closed: Vec::new(),
            released: 0,
            users_logged_on: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RecorderConfig {
        &self.config
    }

    /// The phase of the open interval.
    pub fn phase(&self) -> Phase {
        self.open.phase
    }

    /// Intervals closed so far and still held (for a live display or
    /// streaming output): every one, unless some were released
    /// ([`Self::release_stored`]), then those after them.
    pub fn closed(&self) -> &[IntervalRecord] {
        &self.closed
    }

    /// How many intervals have closed so far, released or held.
    pub fn closed_count(&self) -> usize {
        self.released + self.closed.len()
    }

    /// The closed intervals from the `index`-th on (counting from the run's
    /// first), as far as they are still held.
    pub fn closed_since(&self, index: usize) -> &[IntervalRecord] {
        let held = index.saturating_sub(self.released);
        self.closed.get(held..).unwrap_or_default()
    }

    /// How many closed intervals are held in memory: while an archive keeps
    /// up, the few it has not stored yet.
    pub fn held(&self) -> usize {
        self.closed.len()
    }

    /// How many closed intervals were released from memory.
    pub fn released(&self) -> usize {
        self.released
    }

    /// Drops from memory the closed intervals among the first `stored`
    /// (counting from the run's first), which an [`IntervalArchive`] has
    /// stored: [`Self::finish_from`] reads them back from it at the end.
    pub fn release_stored(&mut self, stored: usize) {
        let drop = stored
            .min(self.closed_count())
            .saturating_sub(self.released);
        if drop > 0 {
            self.closed.drain(..drop);
            self.released += drop;
        }
    }

    /// Switches phase at `at`: closes the open interval there (if it has any
    /// length) and starts a new interval grid at `at`.
    pub fn enter_phase(&mut self, phase: Phase, at: Duration) {
        self.advance(at);
        if at > self.open.start {
            self.close_at(at);
            self.open.start = at;
        }
        self.open.phase = phase;
    }

    /// Closes every interval that ends at or before `at`. Call it on a timer
    /// so idle periods still produce intervals promptly.
    pub fn advance(&mut self, at: Duration) {
        loop {
            let end = self.open.start.saturating_add(self.config.interval);
            if at < end {
                break;
            }
            self.close_at(end);
            self.open.start = end;
        }
    }

    /// Records one action attempt. Successful ones go into the action's
    /// histogram with their latency from the intended start; failed ones are
    /// counted by kind. Either may count as a late start.
    pub fn record_action(&mut self, action: &str, timing: ActionTiming, outcome: Outcome<'_>) {
        self.advance(timing.end);
        let late = timing.lateness() > self.config.late_start_threshold;
        let slot = entry(&mut self.open.actions, action);
        if late {
            slot.late_starts += 1;
        }
        match outcome {
            Outcome::Ok => slot.latency.record(timing.latency()),
            Outcome::Error(kind) => *entry(&mut slot.errors, kind) += 1,
        }
    }

    /// Counts an error of `action` that has no timing (e.g. a session drop
    /// noticed between actions).
    pub fn error(&mut self, at: Duration, action: &str, kind: &str) {
        self.advance(at);
        *entry(&mut entry(&mut self.open.actions, action).errors, kind) += 1;
    }

    /// Records one protocol command's latency, e.g. `imap.SELECT`, `smtp.DATA`.
    pub fn record_command(&mut self, at: Duration, command: &str, latency: Duration) {
        self.advance(at);
        entry(&mut self.open.commands, command).record(latency);
    }

    /// Adds `n` to a counter (see [`crate::counters`]).
    pub fn count(&mut self, at: Duration, counter: &str, n: u64) {
        self.advance(at);
        *entry(&mut self.open.counters, counter) += n;
    }

    /// Sets the number of users logged on; each interval reports the value
    /// in force at its end.
    pub fn set_users_logged_on(&mut self, at: Duration, users: u32) {
        self.advance(at);
        self.users_logged_on = users;
    }

    /// Records how late a timer or task woke up (client self-check).
    pub fn record_scheduling_lag(&mut self, at: Duration, lag: Duration) {
        self.advance(at);
        self.open.lag.record(lag);
    }

    /// Records a sample of peakhour's own CPU use, percent of one core over
    /// the sampling period; an interval reports the mean of its samples.
    pub fn record_client_cpu(&mut self, at: Duration, percent: f64) {
        self.advance(at);
        if percent.is_finite() {
            self.open.cpu_sum += percent;
            self.open.cpu_samples += 1;
        }
    }

    /// Ends recording at `at` and returns every interval still held: all of
    /// them unless some were released (then see [`Self::finish_from`]). The
    /// last one is cut short at `at`.
    pub fn finish(mut self, at: Duration) -> Vec<IntervalRecord> {
        self.advance(at);
        let has_data = !self.open.actions.values().all(OpenAction::is_empty)
            || !self.open.commands.values().all(LatencyHistogram::is_empty)
            || !self.open.counters.is_empty()
            || self.open.cpu_samples > 0
            || !self.open.lag.is_empty();
        if at > self.open.start || has_data {
            self.close_at(at.max(self.open.start));
        }
        self.closed
    }

    /// [`Self::finish`], with the released intervals read back from
    /// `archive` in front: every interval of the run, exactly as if none had
    /// been released.
    pub fn finish_from(
        self,
        at: Duration,
        archive: &dyn IntervalArchive,
    ) -> Result<Vec<IntervalRecord>, AnalysisError> {
        let released = self.released;
        if released == 0 {
            return Ok(self.finish(at));
        }
        let mut intervals = archive.read_back(released)?;
        if intervals.len() != released {
            return Err(AnalysisError::Archive(format!(
                "{} intervals read back where {released} were stored",
                intervals.len()
            )));
        }
        intervals.extend(self.finish(at));
        Ok(intervals)
    }

    fn close_at(&mut self, end: Duration) {
        let open = &mut self.open;
        let mut record = IntervalRecord::new(open.start, end - open.start, open.phase);
        record.users_logged_on = self.users_logged_on;
        let mut failures = 0_u64;
        let mut encode = |h: &mut LatencyHistogram| {
            let encoded = h.encode().unwrap_or_else(|_| {
                failures += 1;
                Default::default()
            });
            // Keep the allocation for the next interval.
            h.reset();
            encoded
        };
        for (name, action) in open.actions.iter_mut() {
            if action.is_empty() {
                continue;
            }
            record.actions.insert(
                name.clone(),
                ActionInterval {
                    latency: encode(&mut action.latency),
                    errors: std::mem::take(&mut action.errors),
                    late_starts: std::mem::take(&mut action.late_starts),
                },
            );
        }
        for (name, h) in open.commands.iter_mut() {
            if !h.is_empty() {
                record.commands.insert(name.clone(), encode(h));
            }
        }
        record.client = ClientInterval {
            cpu_percent: (open.cpu_samples > 0).then(|| open.cpu_sum / f64::from(open.cpu_samples)),
            scheduling_lag: encode(&mut open.lag),
        };
        record.counters = std::mem::take(&mut open.counters);
        if failures > 0 {
            *record
                .counters
                .entry(ENCODE_FAILURES_COUNTER.to_owned())
                .or_default() += failures;
        }
        open.cpu_sum = 0.0;
        open.cpu_samples = 0;
        self.closed.push(record);
    }
}

/// `map[key]`, inserting a default without allocating when the key exists
/// (the common case on the hot path).
fn entry<'m, V: Default>(map: &'m mut BTreeMap<String, V>, key: &str) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    match map.get_mut(key) {
        Some(v) => v,
        None => unreachable!("inserted just above"),
    }
}
