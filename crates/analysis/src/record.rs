//! The run record: everything the engine measured, as it hands it over at the
//! end of a run and as `peakhour report` reloads it later.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::histogram::{EncodedHistogram, LatencyHistogram};
use crate::shard::{CrossShardDeliveries, ShardMark};
use crate::{AnalysisError, serde_duration};

/// Version of the run-record format, bumped on incompatible changes.
pub const RUN_RECORD_VERSION: u32 = 1;

/// Default interval length: one histogram per action every 10 seconds.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// Default QoS limit: MMB counts a 95th percentile of 1000 ms or less as
/// acceptable (seed 002, "Test Methodology").
pub const DEFAULT_P95_LIMIT_MS: f64 = 1000.0;

/// Default largest share of failed attempts an action may have and still
/// pass QoS. Errors are not in the latency histograms, so without this a
/// server that times out every request would pass on an empty histogram.
pub const DEFAULT_MAX_ERROR_RATIO: f64 = 0.01;

/// Names of the counters the engine should keep (it may keep more).
pub mod counters {
    /// Messages accepted by SMTP (MMB "Messages Submitted").
    pub const MESSAGES_SUBMITTED: &str = "messages_submitted";
    /// Recipients accepted in those submissions.
    pub const RECIPIENTS_SUBMITTED: &str = "recipients_submitted";
    /// Recipients whose copy was seen in their mailbox (MMB "Message
    /// Recipients Delivered"), counted when the arrival is noticed.
    pub const RECIPIENTS_DELIVERED: &str = "recipients_delivered";
    /// Messages opened for reading (MMB "Message Opens").
    pub const MESSAGE_OPENS: &str = "message_opens";
    /// Folders selected for browsing (MMB "Folder Opens").
    pub const FOLDER_OPENS: &str = "folder_opens";
    /// Sessions re-established after a drop.
    pub const RECONNECTS: &str = "reconnects";
    /// File runs: bytes read from the server in measured operations.
    pub const BYTES_READ: &str = "bytes_read";
    /// File runs: bytes written to the server in measured operations.
    pub const BYTES_WRITTEN: &str = "bytes_written";
}

/// The phase of a run an interval belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Users log on, staggered over the ramp-up; not measured for the score.
    Logon,
    /// All users are logged on; the only phase the summary uses.
    Steady,
    /// No new actions; in-flight ones finish; not measured for the score.
    Drain,
}

impl Phase {
    /// The lowercase name used in files: `logon`, `steady`, `drain`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Logon => "logon",
            Phase::Steady => "steady",
            Phase::Drain => "drain",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Planned phase lengths of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseLengths {
    /// Logon ramp-up.
    #[serde(rename = "logon_ms", with = "serde_duration::millis")]
    pub logon: Duration,
    /// Measured steady state.
    #[serde(rename = "steady_ms", with = "serde_duration::millis")]
    pub steady: Duration,
    /// Drain after the steady state.
    #[serde(rename = "drain_ms", with = "serde_duration::millis")]
    pub drain: Duration,
}

/// Quality-of-service thresholds the verdict checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QosThresholds {
    /// Largest acceptable p95 for every action without an override (ms).
    pub default_p95_ms: f64,
    /// Per-action p95 limits (ms), only for actions with a limit of their
    /// own (a profile's `[qos.actions]`); the others are judged through the
    /// weighted p95 (`crate::qos`). Records written before issue 25 held
    /// every action here, and are judged as they were.
    #[serde(default)]
    pub p95_ms: BTreeMap<String, f64>,
    /// Largest acceptable errors / (successes + errors) for each action.
    pub max_error_ratio: f64,
    /// Fewest samples each weighted action needs (0: not checked).
    #[serde(default)]
    pub min_samples_per_action: u64,
}

impl Default for QosThresholds {
    fn default() -> Self {
        Self {
            default_p95_ms: DEFAULT_P95_LIMIT_MS,
            p95_ms: BTreeMap::new(),
            max_error_ratio: DEFAULT_MAX_ERROR_RATIO,
            min_samples_per_action: 0,
        }
    }
}

impl QosThresholds {
    /// The p95 limit shown beside `action` in ms: its own, else the
    /// weighted p95's.
    pub fn p95_limit_ms(&self, action: &str) -> f64 {
        self.p95_ms
            .get(action)
            .copied()
            .unwrap_or(self.default_p95_ms)
    }
}

/// What describes a run: identity, plan and scoring rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Run identifier (also carried in every submitted message).
    pub run_id: String,
    /// Profile name, e.g. `mmb-medium`.
    pub profile: String,
    /// Simulated users.
    pub users: u32,
    /// The run's seed; the same seed gives the same schedule.
    pub seed: u64,
    /// Wall-clock start, RFC 3339 UTC (`2026-05-01T12:00:00Z`), given by the caller.
    pub started_at: String,
    /// Length of one measurement interval.
    #[serde(rename = "interval_ms", with = "serde_duration::millis")]
    pub interval: Duration,
    /// Planned phase lengths.
    pub phases: PhaseLengths,
    /// Length of the simulated day (e.g. 8 h).
    #[serde(rename = "day_ms", with = "serde_duration::millis")]
    pub day: Duration,
    /// Day compression: 16 runs an 8-hour day in 30 minutes.
    pub speed: f64,
    /// Actions later than this after their intended start count as late.
    #[serde(rename = "late_start_threshold_ms", with = "serde_duration::millis")]
    pub late_start_threshold: Duration,
    /// CPU cores peakhour's runtime may use; scales the client-bound CPU limit.
    pub client_cores: u32,
    /// The run was stopped early (Ctrl-C, SIGTERM); data is partial.
    pub interrupted: bool,
    /// peakhour version that produced the run.
    pub peakhour_version: String,
    /// Actions per simulated day per user, by action name (seed 002 Table 3);
    /// the weights of the weighted-p95 score.
    pub action_weights: BTreeMap<String, f64>,
    /// QoS thresholds.
    pub qos: QosThresholds,
    /// For fixed-count workloads (seed 000: each user sends N messages, then
    /// stops): how many users finished and when the last one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion: Option<Completion>,
    /// The protocol each action spoke, by action name (`update_calendar`:
    /// `caldav`, or `imap` when the target had no CalDAV server); empty in
    /// records made before it was kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protocols: BTreeMap<String, String>,
    /// Set when the record was rebuilt by `peakhour report` from what an
    /// interrupted run left on disk (no `summary.json`): the run was killed,
    /// so the figures stop at the last interval that reached the disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<Recovery>,
    /// What weakened the run's security, one sentence each (TLS
    /// certificates not verified, passwords in plain text to a host that is
    /// not loopback); empty when nothing did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_shortcuts: Vec<String>,
    /// A distributed run's shards (`run --shard I/N`): this shard alone in
    /// a shard's record, every shard merged in a merged one; empty for a
    /// run of the whole population in one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardMark>,
    /// Set by `peakhour merge`: the record is the sum of [`RunMeta::shards`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merged: bool,
    /// The part of the day the run measured and the rates it drove
    /// (`run --window`); `None` for a fixed-count profile and in records
    /// made before windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<crate::WindowPlan>,
    /// The mail clients the users imitated (issue 28): one personality's
    /// name (`peakhour`, `thunderbird` ...) or a mix
    /// (`thunderbird=0.6,roundcube=0.4`); `None` in records made before
    /// personalities (peakhour's own client) and for file runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<String>,
}

/// How a record was rebuilt from a run that never finished writing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// The file it was rebuilt from (`intervals.jsonl` or `record.json`).
    pub from: String,
    /// Closed intervals found there.
    pub intervals: usize,
    /// Where the last of them ends, seconds since the run started.
    pub measured_until_s: f64,
    /// A line at the end that could not be read (a write cut short by the
    /// kill), skipped.
    pub torn_tail: bool,
    /// Why the delivery figures are partial: no reconciliation ran.
    pub note: String,
    /// Why the run could not write its results (a full disk), when that is
    /// what left it unfinished rather than a kill (issue 26).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_failed: Option<String>,
}

impl Recovery {
    /// Why the run was left unfinished, for people: killed, or unable to
    /// write its results.
    pub fn cause(&self) -> String {
        match &self.write_failed {
            Some(why) => format!("the run could not write its results: {why}"),
            None => "the run was killed".to_owned(),
        }
    }
}

/// How a fixed-count workload finished; its headline figures are the time to
/// finish and the messages delivered per minute (seed 000).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Users that did all their actions.
    pub users_finished: u32,
    /// From the start of the steady phase to the last user's last action.
    #[serde(rename = "time_to_finish_ms", with = "serde_duration::millis")]
    pub time_to_finish: Duration,
}

impl RunMeta {
    /// Metadata with defaults: 10 s intervals, 8-hour day at speed 1, 100 ms
    /// late-start threshold, one client core, default QoS, no weights.
    pub fn new(
        run_id: impl Into<String>,
        profile: impl Into<String>,
        users: u32,
        seed: u64,
        started_at: impl Into<String>,
    ) -> Self {
        Self {
            run_id: run_id.into(),
            profile: profile.into(),
            users,
            seed,
            started_at: started_at.into(),
            interval: DEFAULT_INTERVAL,
            phases: PhaseLengths::default(),
            day: Duration::from_secs(8 * 3600),
            speed: 1.0,
            late_start_threshold: crate::recorder::DEFAULT_LATE_START_THRESHOLD,
            client_cores: 1,
            interrupted: false,
            peakhour_version: String::new(),
            action_weights: BTreeMap::new(),
            qos: QosThresholds::default(),
            completion: None,
            protocols: BTreeMap::new(),
            recovered: None,
            security_shortcuts: Vec::new(),
            shards: Vec::new(),
            window: None,
            clients: None,
            merged: false,
        }
    }
}

/// One action's measurements in one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionInterval {
    /// Latency of successful actions in µs, from the intended start to the end.
    pub latency: EncodedHistogram,
    /// Failed attempts by kind (e.g. `timeout`, `imap.NO`, `connect`).
    #[serde(default)]
    pub errors: BTreeMap<String, u64>,
    /// Actions that started later than the late-start threshold after their
    /// intended start (successful or not).
    #[serde(default)]
    pub late_starts: u64,
}

impl ActionInterval {
    /// Total failed attempts.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// peakhour watching itself during one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientInterval {
    /// Mean CPU used by peakhour, percent of one core (may exceed 100 with
    /// several worker threads); `None` when not sampled.
    pub cpu_percent: Option<f64>,
    /// Scheduling lag in µs: how long a woken task of the runtime waited to run.
    pub scheduling_lag: EncodedHistogram,
}

/// Everything measured in one interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// Start, since the run started.
    #[serde(rename = "start_us", with = "serde_duration::micros")]
    pub start: Duration,
    /// Length; shorter than the configured interval where a phase begins or
    /// the run ends.
    #[serde(rename = "length_us", with = "serde_duration::micros")]
    pub length: Duration,
    /// Phase of the whole interval (intervals never straddle phases).
    pub phase: Phase,
    /// Users logged on at the end of the interval.
    pub users_logged_on: u32,
    /// Per action name.
    #[serde(default)]
    pub actions: BTreeMap<String, ActionInterval>,
    /// Per protocol command (`imap.SELECT`, `smtp.DATA` ...), latency in µs.
    #[serde(default)]
    pub commands: BTreeMap<String, EncodedHistogram>,
    /// Counters (see [`counters`]) accumulated in this interval.
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    /// Client self-check.
    #[serde(default)]
    pub client: ClientInterval,
}

impl IntervalRecord {
    /// An empty interval.
    pub fn new(start: Duration, length: Duration, phase: Phase) -> Self {
        Self {
            start,
            length,
            phase,
            users_logged_on: 0,
            actions: BTreeMap::new(),
            commands: BTreeMap::new(),
            counters: BTreeMap::new(),
            client: ClientInterval::default(),
        }
    }

    /// Adds `other` (the same interval recorded by another worker) into this
    /// one: histograms, errors, counters and users logged on are summed; CPU
    /// takes the larger value, since only one worker should sample it.
    pub fn merge(&mut self, other: &IntervalRecord) -> Result<(), AnalysisError> {
        if self.start != other.start || self.length != other.length || self.phase != other.phase {
            return Err(AnalysisError::IntervalMismatch {
                left_start_us: self.start.as_micros(),
                right_start_us: other.start.as_micros(),
            });
        }
        self.users_logged_on = self.users_logged_on.saturating_add(other.users_logged_on);
        for (name, theirs) in &other.actions {
            let ours = self.actions.entry(name.clone()).or_default();
            ours.latency = merge_encoded(&ours.latency, &theirs.latency)?;
            for (kind, n) in &theirs.errors {
                *ours.errors.entry(kind.clone()).or_default() += n;
            }
            ours.late_starts += theirs.late_starts;
        }
        for (name, theirs) in &other.commands {
            let ours = self.commands.entry(name.clone()).or_default();
            *ours = merge_encoded(ours, theirs)?;
        }
        for (name, n) in &other.counters {
            *self.counters.entry(name.clone()).or_default() += n;
        }
        self.client.cpu_percent = match (self.client.cpu_percent, other.client.cpu_percent) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.client.scheduling_lag =
            merge_encoded(&self.client.scheduling_lag, &other.client.scheduling_lag)?;
        Ok(())
    }
}

fn merge_encoded(
    a: &EncodedHistogram,
    b: &EncodedHistogram,
) -> Result<EncodedHistogram, AnalysisError> {
    if b.is_empty() {
        return Ok(a.clone());
    }
    if a.is_empty() {
        return Ok(b.clone());
    }
    let mut h = a.decode()?;
    h.add(&b.decode()?)?;
    h.encode()
}

/// Merges interval lists recorded by several workers over the same grid
/// (same phase changes and finish time), interval by interval.
pub fn merge_interval_lists(
    into: &mut Vec<IntervalRecord>,
    from: &[IntervalRecord],
) -> Result<(), AnalysisError> {
    if into.is_empty() {
        into.extend_from_slice(from);
        return Ok(());
    }
    if into.len() != from.len() {
        return Err(AnalysisError::IntervalCount {
            left: into.len(),
            right: from.len(),
        });
    }
    for (ours, theirs) in into.iter_mut().zip(from) {
        ours.merge(theirs)?;
    }
    Ok(())
}

/// A recipient that was accepted but never seen delivered.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LostRecipient {
    /// The peakhour message id carried in the message.
    pub message_id: String,
    /// The recipient address.
    pub recipient: String,
}

/// Lost recipients named one by one in a record; the rest are counted in
/// [`DeliveryRecord::lost_not_listed`], so that a server that accepts mail
/// and never delivers it cannot make the results grow without bound.
pub const LOST_LIST_CAP: usize = 1_000;

/// End-to-end delivery over the whole run, reconciled after drain:
/// `submitted = delivered + failed + lost`, lost being the listed ones plus
/// [`DeliveryRecord::lost_not_listed`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRecord {
    /// Recipients of every submission: accepted, or refused at submission.
    pub submitted_recipients: u64,
    /// Recipients whose copy was seen in their mailbox.
    pub delivered_recipients: u64,
    /// Recipients refused at submission or reported failed (bounce / DSN).
    pub failed_recipients: u64,
    /// Recipients neither delivered nor reported failed after
    /// reconciliation: the first [`LOST_LIST_CAP`] of them.
    pub lost: Vec<LostRecipient>,
    /// Lost recipients beyond the list.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost_not_listed: u64,
    /// Lost recipients whose mailbox the last reconciliation could not
    /// search (the search failed, timed out or panicked): not seen, and not
    /// looked for either.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost_unsearched: u64,
    /// Submission-to-arrival latency in µs, one value per delivered recipient.
    pub latency: EncodedHistogram,
    /// A shard's copies that crossed to or from another shard, which only
    /// `peakhour merge` can reconcile; `None` outside a sharded run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_shard: Option<CrossShardDeliveries>,
}

impl DeliveryRecord {
    /// Every lost recipient, listed or not.
    pub fn lost_total(&self) -> u64 {
        self.lost.len() as u64 + self.lost_not_listed
    }

    /// Copies submitted to another shard's users, reconciled by the merge
    /// (`submitted = delivered + failed + lost + awaiting_merge`).
    pub fn awaiting_merge(&self) -> u64 {
        self.cross_shard.as_ref().map_or(0, |c| c.sent.len() as u64)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Builds a [`DeliveryRecord`] while the run goes on.
#[derive(Clone, Debug, Default)]
pub struct DeliveryRecorder {
    submitted: u64,
    delivered: u64,
    failed: u64,
    lost: Vec<LostRecipient>,
    lost_not_listed: u64,
    lost_unsearched: u64,
    latency: LatencyHistogram,
}

impl DeliveryRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// `n` recipients were accepted at submission.
    pub fn submitted(&mut self, n: u64) {
        self.submitted += n;
    }

    /// One recipient's copy arrived, `latency` after submission.
    pub fn delivered(&mut self, latency: Duration) {
        self.delivered += 1;
        self.latency.record(latency);
    }

    /// `n` recipients were refused or reported failed.
    pub fn failed(&mut self, n: u64) {
        self.failed += n;
    }

    /// A recipient was never seen delivered after reconciliation. Past
    /// [`LOST_LIST_CAP`] it is only counted.
    pub fn lost(&mut self, message_id: impl Into<String>, recipient: impl Into<String>) {
        if self.lost.len() >= LOST_LIST_CAP {
            self.lost_not_listed += 1;
            return;
        }
        self.lost.push(LostRecipient {
            message_id: message_id.into(),
            recipient: recipient.into(),
        });
    }

    /// `n` more recipients were never seen delivered, beyond those named.
    pub fn lost_not_listed(&mut self, n: u64) {
        self.lost_not_listed += n;
    }

    /// `n` of the lost recipients' mailboxes could not be searched.
    pub fn lost_unsearched(&mut self, n: u64) {
        self.lost_unsearched += n;
    }

    /// The finished record; lost recipients are sorted for stable output.
    pub fn finish(mut self) -> Result<DeliveryRecord, AnalysisError> {
        self.lost.sort();
        Ok(DeliveryRecord {
            submitted_recipients: self.submitted,
            delivered_recipients: self.delivered,
            failed_recipients: self.failed,
            lost: self.lost,
            lost_not_listed: self.lost_not_listed,
            lost_unsearched: self.lost_unsearched,
            latency: self.latency.encode()?,
            cross_shard: None,
        })
    }
}

/// Everything a run produced: what `peakhour report` needs to redo the
/// analysis and every output file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// [`RUN_RECORD_VERSION`] at the time of writing.
    pub format_version: u32,
    /// Run identity, plan and scoring rules.
    pub meta: RunMeta,
    /// Intervals in time order, contiguous, covering logon, steady and drain.
    pub intervals: Vec<IntervalRecord>,
    /// End-to-end delivery.
    pub delivery: DeliveryRecord,
    /// What the run learnt about the server: its capabilities, an example
    /// of each error, the MTA's own delivery times; empty in records made
    /// before it was kept.
    #[serde(default)]
    pub server: crate::ServerRecord,
    /// The run's state checks (`run --check-state`, issue 27); `None` when
    /// they were off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_checks: Option<crate::StateChecks>,
}

impl RunRecord {
    /// Assembles a record of the current format version.
    pub fn new(meta: RunMeta, intervals: Vec<IntervalRecord>, delivery: DeliveryRecord) -> Self {
        Self {
            format_version: RUN_RECORD_VERSION,
            meta,
            intervals,
            delivery,
            server: crate::ServerRecord::default(),
            state_checks: None,
        }
    }

    /// The steady-phase intervals, the only ones the summary uses.
    pub fn steady_intervals(&self) -> impl Iterator<Item = &IntervalRecord> {
        self.intervals.iter().filter(|i| i.phase == Phase::Steady)
    }
}
