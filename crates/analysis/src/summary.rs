//! The steady-state summary: per-action percentiles, the weighted p95 score,
//! MMB-style throughput, delivery, the client self-check and the QoS verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::AnalysisError;
use crate::histogram::{LatencyHistogram, round_ms};
use crate::qos::{QosMeasure, QosRule};
use crate::record::{LostRecipient, RunMeta, RunRecord, counters};
use crate::window::WindowFigures;

/// peakhour is client-bound if its CPU exceeds this share of the cores it
/// may use ([`RunMeta::client_cores`]) ...
pub const CLIENT_CPU_LIMIT_FRACTION: f64 = 0.80;
/// ... in more than this share of the steady intervals that were sampled.
/// A single busy interval (a GC-like hiccup, a burst of logons) is tolerated;
/// a sustained one means the generator, not the server, set the pace.
pub const CLIENT_CPU_BUSY_INTERVALS_FRACTION: f64 = 0.10;
/// peakhour is client-bound if the p99 of its scheduling lag exceeds this
/// (ms): then actions start late because of the client and the latencies,
/// measured from the intended start, include the client's own delay.
pub const SCHEDULING_LAG_P99_LIMIT_MS: f64 = 10.0;

/// Pass or fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every QoS check held.
    Pass,
    /// At least one QoS check failed; see [`QosReport::failures`].
    Fail,
}

impl Verdict {
    /// `pass` or `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
        }
    }
}

/// One failed QoS check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QosFailure {
    /// The action name, or `run` / `delivery` for whole-run checks.
    pub subject: String,
    /// Human-readable reason with the numbers involved.
    pub reason: String,
}

/// The QoS checks in detail.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QosReport {
    /// Every failed check; empty when the verdict is `pass`.
    pub failures: Vec<QosFailure>,
    /// Weighted actions that had no sample in the steady state (not a failure
    /// by itself: a short run may miss a rare action).
    pub unmeasured: Vec<String>,
    /// The monitor columns judged for "still growing at the end of the
    /// window" (Postfix's queues, a shaped lab's memory): empty when the run
    /// had no monitor, or too few samples in the window's last half, and
    /// then that check of the QoS rule was not made.
    #[serde(default)]
    pub growth_checked: Vec<String>,
}

/// Latency figures of one histogram, in milliseconds (3 significant digits;
/// the mean to the microsecond). `None` when there was no sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50_ms: Option<f64>,
    /// 95th percentile.
    pub p95_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// Largest value.
    pub max_ms: Option<f64>,
    /// Arithmetic mean.
    pub mean_ms: Option<f64>,
}

impl LatencySummary {
    /// The figures of `h`.
    pub fn of(h: &LatencyHistogram) -> Self {
        Self {
            count: h.len(),
            p50_ms: h.quantile_ms(0.50),
            p95_ms: h.quantile_ms(0.95),
            p99_ms: h.quantile_ms(0.99),
            max_ms: h.max_ms(),
            mean_ms: h.mean_ms(),
        }
    }
}

/// One action over the steady state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionSummary {
    /// Successful actions (the histogram's samples).
    pub count: u64,
    /// Failed attempts.
    pub errors: u64,
    /// errors / (count + errors).
    pub error_ratio: f64,
    /// Attempts that started later than the late-start threshold.
    pub late_starts: u64,
    /// Median latency from the intended start.
    pub p50_ms: Option<f64>,
    /// 95th percentile, the MMB figure.
    pub p95_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// Largest latency.
    pub max_ms: Option<f64>,
    /// Mean latency.
    pub mean_ms: Option<f64>,
    /// Failed attempts by kind.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// The p95 limit this action was held to.
    pub p95_limit_ms: f64,
    /// Whether this action met its QoS checks (p95 and error ratio).
    pub qos_pass: bool,
}

/// Where the weights of the score came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightSource {
    /// The profile's actions per user per simulated day ([`RunMeta::action_weights`]).
    Profile,
    /// The profile gave none, so the steady-state counts were used.
    Measured,
}

/// The single-figure score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// Weighted mean of the per-action p95s, each weighted by its frequency:
    /// `sum(w_a * p95_a) / sum(w_a)` over the actions with a p95 and a weight
    /// (see the crate documentation). `None` when no action qualifies.
    pub weighted_p95_ms: Option<f64>,
    /// p95 of every action's samples pooled together, weighted by what was
    /// actually measured. Shown for comparison, not for the verdict.
    pub pooled_p95_ms: Option<f64>,
    /// The weights used, by action.
    pub weights: BTreeMap<String, f64>,
    /// Where the weights came from.
    pub weight_source: WeightSource,
    /// Actions left out of the score (measured without a weight, or weighted
    /// without a sample).
    pub excluded: Vec<String>,
}

/// MMB-style throughput over the steady state (Table A-2), in wall-clock
/// time: with a compressed day these are the rates the server really saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Length of the steady state measured, seconds.
    pub steady_seconds: f64,
    /// Messages submitted per hour.
    pub messages_submitted_per_hour: f64,
    /// Recipients delivered per hour.
    pub recipients_delivered_per_hour: f64,
    /// Messages opened per second.
    pub message_opens_per_second: f64,
    /// Folders opened per second.
    pub folder_opens_per_second: f64,
    /// Successful actions of every kind per second.
    pub actions_per_second: f64,
    /// File runs only: NetBench's throughput, the bytes moved to and from the server
    /// (counters `bytes_read` and `bytes_written`) per second of the steady phase.
    /// Absent when the run moved no file data (every mail run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_second: Option<f64>,
    /// The same in megabits per second as seed 004 printed them: bytes × 8 / 2^20
    /// (its 480,154 bytes/s are 3.7 Mbits/s, its 11,510,079 are 87.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub megabits_per_second: Option<f64>,
}

/// Bits in seed 004's megabit: 2^20 (see [`Throughput::megabits_per_second`]).
pub const BITS_PER_MEGABIT: f64 = 1_048_576.0;

/// End-to-end delivery over the whole run (submission to arrival), reconciled
/// after drain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeliverySummary {
    /// Recipients of every submission: accepted, or refused at submission.
    pub submitted_recipients: u64,
    /// Recipients seen delivered.
    pub delivered_recipients: u64,
    /// Recipients refused or reported failed.
    pub failed_recipients: u64,
    /// Recipients never seen delivered nor reported failed (all of them,
    /// listed or not).
    pub lost: u64,
    /// Which ones: the first [`LOST_LIST_CAP`](crate::LOST_LIST_CAP).
    pub lost_recipients: Vec<LostRecipient>,
    /// Lost recipients beyond `lost_recipients`.
    #[serde(default)]
    pub lost_not_listed: u64,
    /// Lost recipients whose mailbox the last reconciliation could not
    /// search (the search failed, timed out or panicked): never seen, but
    /// not looked for either.
    #[serde(default)]
    pub lost_unsearched: u64,
    /// A shard's copies to other shards' users, reconciled only by
    /// `peakhour merge` (0 outside a sharded run).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub awaiting_merge: u64,
    /// submitted == delivered + failed + lost + awaiting_merge.
    pub reconciled: bool,
    /// Median delivery latency.
    pub p50_ms: Option<f64>,
    /// 95th percentile delivery latency.
    pub p95_ms: Option<f64>,
    /// Largest delivery latency.
    pub max_ms: Option<f64>,
    /// Messages in the server's mail queue (incoming + active + deferred)
    /// at the monitor's last sample, when a queue was monitored. While it
    /// is above zero, copies counted lost may still have been queued
    /// (delivery fell behind) rather than gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_queue_at_end: Option<u64>,
    /// What the latency figures above include, for people.
    #[serde(default)]
    pub latency_includes: String,
    /// The MTA's own delivery time over the run, from its log, when it
    /// could be read (the lab's Postfix); beside the end-to-end figures it
    /// shows how much of them is the MTA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mta: Option<crate::MtaDelivery>,
    /// Why the MTA's own delivery time is not shown, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mta_unknown: Option<String>,
}

/// What the end-to-end delivery latency includes.
pub const DELIVERY_LATENCY_INCLUDES: &str = "from the SMTP submission until the recipient's \
    IMAP session saw the copy: the submission, the MTA's queue, the delivery into the store and \
    the IMAP server's notice to the client (IDLE, or the next check of the Inbox)";

/// What the end-to-end delivery latency includes in a run whose actions
/// spoke `protocols` (action -> protocol, [`RunMeta::protocols`]): the
/// notice is the reading protocol's (IMAP IDLE, JMAP push, POP3 polling),
/// never IMAP's in a run without it (issue 26). Records made before the
/// protocols were kept get [`DELIVERY_LATENCY_INCLUDES`].
pub fn delivery_latency_includes(protocols: &BTreeMap<String, String>) -> String {
    let speaks = |name: &str| protocols.values().any(|p| p.split('+').any(|p| p == name));
    let mut readers = Vec::new();
    let mut notices = Vec::new();
    if speaks("imap") {
        readers.push("IMAP");
        notices
            .push("the IMAP server's notice to the client (IDLE, or the next check of the Inbox)");
    }
    if speaks("jmap") {
        readers.push("JMAP");
        notices.push(
            "the JMAP server's notice to the client (a push over EventSource, or the next query of the Inbox)",
        );
    }
    if speaks("pop3") {
        readers.push("POP3");
        notices.push("the client's next POP3 check of the maildrop (POP3 polls: it has no push)");
    }
    if readers.is_empty() {
        return if protocols.is_empty() {
            DELIVERY_LATENCY_INCLUDES.to_owned()
        } else {
            "nothing: no action of the run read mail".to_owned()
        };
    }
    format!(
        "from the SMTP submission until the recipient's {} session saw the copy: the submission, \
         the MTA's queue, the delivery into the store and {}",
        readers.join(" or "),
        notices.join("; or ")
    )
}

/// Why the MTA's own delivery time is missing for a server whose log
/// peakhour cannot read.
pub const MTA_UNKNOWN_NOT_LAB: &str = "not known: the MTA's log is not readable by peakhour \
    (only the lab's Postfix log is read)";

/// peakhour's self-check over the steady state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientSummary {
    /// Mean CPU, percent of one core, over sampled steady intervals.
    pub cpu_percent_mean: Option<f64>,
    /// Highest interval CPU.
    pub cpu_percent_max: Option<f64>,
    /// The CPU limit applied (percent of one core).
    pub cpu_limit_percent: f64,
    /// Steady intervals with a CPU sample.
    pub intervals_sampled: usize,
    /// Steady intervals above the CPU limit.
    pub intervals_over_cpu_limit: usize,
    /// p99 scheduling lag.
    pub scheduling_lag_p99_ms: Option<f64>,
    /// Largest scheduling lag.
    pub scheduling_lag_max_ms: Option<f64>,
}

/// The steady-state window the summary covers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SteadyWindow {
    /// Start of the first steady interval since run start, seconds.
    pub start_s: f64,
    /// Sum of steady interval lengths, seconds.
    pub length_s: f64,
    /// Number of steady intervals.
    pub intervals: usize,
}

/// The most likely bottleneck, from the server monitor's USE summary
/// (utilization, saturation and errors per resource) over the steady phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bottleneck {
    /// The saturated resource (`CPU`, `memory`, `disk`, `network`,
    /// `mail queue`), or `none` when nothing was saturated.
    pub resource: String,
    /// The evidence, e.g. `94% busy, run queue 3.1 per core, dovecot
    /// processes 71% of CPU`; for `none`, a plain statement such as
    /// `no resource saturated (busiest: CPU 35% busy)`.
    pub evidence: String,
    /// The whole verdict in one line, as the terminal prints it, e.g.
    /// `CPU: 94% busy, run queue 3.1 per core — CPU-bound`.
    pub line: String,
}

impl Bottleneck {
    /// The `resource` value that means "nothing was saturated".
    pub const NONE: &'static str = "none";

    /// True when a resource was saturated.
    pub fn is_saturated(&self) -> bool {
        self.resource != Self::NONE
    }
}

/// One server metric over the steady phase, from the monitor's samples:
/// its mean, p95 and max, and seed 001's *high average* (the highest mean
/// over a sustained window, at least 30 s by default) with its standard
/// deviation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceHighAverage {
    /// The `monitor.csv` column, e.g. `cpu_busy_pct`, `group_dovecot_cpu_pct`.
    pub metric: String,
    /// What it is, for people, e.g. `CPU busy %`.
    pub label: String,
    /// Steady-phase mean.
    pub mean: f64,
    /// Steady-phase 95th percentile (nearest rank).
    pub p95: f64,
    /// Steady-phase maximum.
    pub max: f64,
    /// The high average: the highest mean over any window of at least
    /// `high_average_window_s` inside the steady phase.
    pub high_average: f64,
    /// Standard deviation (n − 1) of the samples in that window.
    pub high_average_std_dev: f64,
    /// The minimum window asked for, seconds.
    pub high_average_window_s: f64,
    /// The steady phase was shorter than the window, so the high average is
    /// the mean of all of it.
    pub shorter_than_window: bool,
    /// Samples used.
    pub samples: usize,
}

/// The result of a run, computed from the steady state only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// `pass` when every QoS check held.
    pub verdict: Verdict,
    /// The checks behind the verdict.
    pub qos: QosReport,
    /// The run was stopped early; figures cover what was measured.
    pub interrupted: bool,
    /// Set when `peakhour report` rebuilt this summary from what a killed run
    /// left on disk (then `interrupted` is true as well).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<crate::Recovery>,
    /// What weakened the run's security (from the record's metadata): TLS
    /// certificates not verified, passwords in plain text off the machine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_shortcuts: Vec<String>,
    /// The figures may describe peakhour rather than the server.
    pub client_bound: bool,
    /// Why `client_bound` is set.
    pub client_bound_reasons: Vec<String>,
    /// The run's seed.
    pub seed: u64,
    /// Profile name.
    pub profile: String,
    /// Simulated users.
    pub users: u32,
    /// Run id.
    pub run_id: String,
    /// Wall-clock start (RFC 3339 UTC).
    pub started_at: String,
    /// The measured window.
    pub steady: SteadyWindow,
    /// Per action.
    pub actions: BTreeMap<String, ActionSummary>,
    /// Per protocol command.
    pub commands: BTreeMap<String, LatencySummary>,
    /// The weighted p95 score.
    pub score: Score,
    /// MMB-style throughput.
    pub throughput: Throughput,
    /// End-to-end delivery.
    pub delivery: DeliverySummary,
    /// Tasks of the run that panicked, over the whole run (users and
    /// reconciliation searches; errors of kind `panic`). Any panic is a bug
    /// in peakhour and fails the verdict.
    #[serde(default)]
    pub panics: u64,
    /// Late starts, all actions.
    pub late_starts: u64,
    /// Errors by kind, all actions.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Counters summed over the steady state.
    pub counters: BTreeMap<String, u64>,
    /// Client self-check.
    pub client: ClientSummary,
    /// The run's metadata as recorded.
    pub meta: RunMeta,
    /// The most likely bottleneck, from the server monitor; `None` when no
    /// monitor ran (it is set by the caller, not by [`Summary::compute`]).
    #[serde(default)]
    pub bottleneck: Option<Bottleneck>,
    /// Key server metrics' steady-phase figures and high averages, from the
    /// server monitor; empty when no monitor ran.
    #[serde(default)]
    pub resources: Vec<ResourceHighAverage>,
    /// The CPU and memory caps of the server measured (a shaped lab, `lab
    /// up --cpus --memory`); `None` for a server without caps (set by the
    /// caller, not by [`Summary::compute`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ServerLimits>,
    /// What the server offers, by protocol (`imap`: capabilities after
    /// login, `smtp`: EHLO keywords ...), as asked before the load.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_capabilities: BTreeMap<String, Vec<String>>,
    /// Errors by action and kind over the whole run (every phase), most
    /// frequent first, each with the first one as it happened.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_groups: Vec<crate::ErrorGroup>,
    /// Set when logon failures look like a limit on connections per client
    /// address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_limit: Option<crate::ConnectionLimit>,
    /// The part of the day measured (`run --window`): `day` (the even
    /// day), `peak-hour` or `morning`.
    #[serde(default = "day_window")]
    pub window: String,
    /// The profile's busiest hour, actions per user (uncompressed); absent
    /// for a profile without a day shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_actions_per_user_hour: Option<f64>,
    /// The same for all of the run's users together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_actions_per_hour: Option<f64>,
    /// The rates the run drove in its window and those it measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_rates: Option<crate::WindowRates>,
    /// The morning's logon storm: its planned and measured logon rate and
    /// the logon latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logon_storm: Option<crate::LogonStorm>,
    /// The state checks (`run --check-state`): checks and violations by
    /// kind, the first violations, the checkpoints and their pause; absent
    /// when they were off. Any violation fails the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_checks: Option<crate::StateChecks>,
}

pub(crate) fn day_window() -> String {
    "day".to_owned()
}

/// The caps a shaped lab put on the server (seed 003 varied CPUs and
/// memory; the figures of such a run hold for that shape only).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerLimits {
    /// CPU cap in cores (0.5 is half a core), when capped.
    pub cpus: Option<f64>,
    /// Memory cap in bytes, page cache included, when capped.
    pub memory_bytes: Option<u64>,
}

impl ServerLimits {
    /// `0.5 CPUs, 1024 MiB of memory` (the parts that are capped).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.cpus {
            parts.push(format!("{c} CPU{}", if c == 1.0 { "" } else { "s" }));
        }
        if let Some(m) = self.memory_bytes {
            parts.push(format!("{} MiB of memory", m / (1024 * 1024)));
        }
        parts.join(", ")
    }
}

#[derive(Default)]
struct ActionAcc {
    latency: LatencyHistogram,
    errors: BTreeMap<String, u64>,
    late_starts: u64,
}

impl Summary {
    /// Adds the QoS rule's last check, made from the monitor's series once
    /// the run has them ([`crate::qos::growth_in`] over the steady window):
    /// each metric in `growing` fails the verdict; `judged` are the columns
    /// the check looked at ([`QosReport::growth_checked`]).
    pub fn judge_growth(&mut self, growing: Vec<crate::qos::Growth>, judged: Vec<String>) {
        let measure = crate::qos::QosMeasure {
            growing,
            ..crate::qos::QosMeasure::default()
        };
        let rule = crate::qos::QosRule::from_thresholds(&self.meta.qos);
        self.qos.failures.extend(rule.judge(&measure));
        self.qos.growth_checked = judged;
        if !self.qos.failures.is_empty() {
            self.verdict = Verdict::Fail;
        }
    }

    /// Computes the summary of `record` over its steady-phase intervals.
    pub fn compute(record: &RunRecord) -> Result<Summary, AnalysisError> {
        let meta = &record.meta;
        let steady: Vec<_> = record.steady_intervals().collect();

        let SteadyTotals {
            actions,
            commands,
            counter_totals,
            lag,
            cpu,
            window,
        } = SteadyTotals::of(&steady)?;

        let mut qos = QosReport::default();
        let mut pooled = LatencyHistogram::new();
        let mut action_summaries = BTreeMap::new();
        let mut errors_by_kind: BTreeMap<String, u64> = BTreeMap::new();
        let mut late_starts = 0;
        for (name, acc) in &actions {
            pooled.add(&acc.latency)?;
            let summary = action_summary(name, acc, meta);
            for (kind, n) in &acc.errors {
                *errors_by_kind.entry(kind.clone()).or_default() += n;
            }
            late_starts += acc.late_starts;
            action_summaries.insert(name.clone(), summary);
        }
        qos.unmeasured = meta
            .action_weights
            .keys()
            .filter(|a| action_summaries.get(*a).is_none_or(|s| s.count == 0))
            .cloned()
            .collect();
        if pooled.is_empty() {
            let reason = if window.intervals == 0 {
                "no steady-state interval was recorded"
            } else {
                "no action succeeded in the steady state"
            };
            qos.failures.insert(
                0,
                QosFailure {
                    subject: "run".to_owned(),
                    reason: reason.to_owned(),
                },
            );
        }

        let score = score(meta, &action_summaries, &pooled);
        qos.failures
            .extend(judge_qos(meta, &mut action_summaries, &score));
        let throughput = throughput(&window, &counter_totals, pooled.len());
        let delivery = delivery(record)?;
        qos.failures.extend(delivery_failure(&delivery));
        let panics = panics(record);
        if panics > 0 {
            qos.failures.insert(
                0,
                QosFailure {
                    subject: "run".to_owned(),
                    reason: format!(
                        "{panics} of peakhour's tasks panicked (a bug in peakhour; see errors.csv, \
                         kind `panic`): what they were doing is missing from the figures"
                    ),
                },
            );
        }
        qos.failures.splice(0..0, state_failure(record));
        let (client, client_bound_reasons) = client_check(meta, &cpu, &lag);
        let figures = WindowFigures::of(meta, &steady, &action_summaries, &counter_totals)?;
        let verdict = if qos.failures.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        };

        Ok(Summary {
            verdict,
            qos,
            interrupted: meta.interrupted || meta.recovered.is_some(),
            recovered: meta.recovered.clone(),
            security_shortcuts: meta.security_shortcuts.clone(),
            client_bound: !client_bound_reasons.is_empty(),
            client_bound_reasons,
            seed: meta.seed,
            profile: meta.profile.clone(),
            users: meta.users,
            run_id: meta.run_id.clone(),
            started_at: meta.started_at.clone(),
            steady: window,
            actions: action_summaries,
            commands: commands
                .iter()
                .map(|(k, h)| (k.clone(), LatencySummary::of(h)))
                .collect(),
            score,
            throughput,
            delivery,
            panics,
            late_starts,
            errors_by_kind,
            counters: counter_totals,
            client,
            meta: meta.clone(),
            bottleneck: None,
            resources: Vec::new(),
            limits: None,
            server_capabilities: record.server.capabilities.clone(),
            error_groups: crate::error_groups(record),
            connection_limit: crate::connection_limit(record),
            window: figures.window,
            peak_actions_per_user_hour: figures.peak,
            peak_actions_per_hour: figures.peak_total,
            window_rates: figures.rates,
            logon_storm: figures.storm,
            state_checks: record.state_checks.as_ref().map(|s| s.for_summary()),
        })
    }
}

/// A server that contradicted itself fails the run, whatever its latencies:
/// the state checks' violations named (`run --check-state`).
fn state_failure(record: &RunRecord) -> Option<QosFailure> {
    let reason = record.state_checks.as_ref()?.failure()?;
    Some(QosFailure {
        subject: "state".to_owned(),
        reason,
    })
}

/// What the steady-state intervals add up to.
struct SteadyTotals {
    actions: BTreeMap<String, ActionAcc>,
    commands: BTreeMap<String, LatencyHistogram>,
    counter_totals: BTreeMap<String, u64>,
    lag: LatencyHistogram,
    cpu: Vec<f64>,
    window: SteadyWindow,
}

impl SteadyTotals {
    fn of(steady: &[&crate::record::IntervalRecord]) -> Result<Self, AnalysisError> {
        let mut actions: BTreeMap<String, ActionAcc> = BTreeMap::new();
        let mut commands: BTreeMap<String, LatencyHistogram> = BTreeMap::new();
        let mut counter_totals: BTreeMap<String, u64> = BTreeMap::new();
        let mut lag = LatencyHistogram::new();
        let mut cpu = Vec::new();
        let mut window = SteadyWindow {
            start_s: steady.first().map_or(0.0, |i| i.start.as_secs_f64()),
            ..SteadyWindow::default()
        };
        for interval in steady {
            window.length_s += interval.length.as_secs_f64();
            window.intervals += 1;
            for (name, a) in &interval.actions {
                let acc = actions.entry(name.clone()).or_default();
                acc.latency.add(&a.latency.decode()?)?;
                for (kind, n) in &a.errors {
                    *acc.errors.entry(kind.clone()).or_default() += n;
                }
                acc.late_starts += a.late_starts;
            }
            for (name, h) in &interval.commands {
                commands
                    .entry(name.clone())
                    .or_default()
                    .add(&h.decode()?)?;
            }
            for (name, n) in &interval.counters {
                *counter_totals.entry(name.clone()).or_default() += n;
            }
            lag.add(&interval.client.scheduling_lag.decode()?)?;
            if let Some(p) = interval.client.cpu_percent {
                cpu.push(p);
            }
        }
        Ok(SteadyTotals {
            actions,
            commands,
            counter_totals,
            lag,
            cpu,
            window,
        })
    }
}

/// One action's figures, its QoS failures pushed onto `qos`.
fn action_summary(name: &str, acc: &ActionAcc, meta: &RunMeta) -> ActionSummary {
    let lat = LatencySummary::of(&acc.latency);
    let errors: u64 = acc.errors.values().sum();
    let attempts = lat.count + errors;
    let error_ratio = if attempts == 0 {
        0.0
    } else {
        errors as f64 / attempts as f64
    };
    ActionSummary {
        count: lat.count,
        errors,
        error_ratio,
        late_starts: acc.late_starts,
        p50_ms: lat.p50_ms,
        p95_ms: lat.p95_ms,
        p99_ms: lat.p99_ms,
        max_ms: lat.max_ms,
        mean_ms: lat.mean_ms,
        errors_by_kind: acc.errors.clone(),
        p95_limit_ms: meta.qos.p95_limit_ms(name),
        // Set by `judge_qos`, from the one rule.
        qos_pass: true,
    }
}

/// Applies the one QoS rule ([`crate::qos`]) to the steady state's actions
/// and score: its failures, and each action's `qos_pass`.
fn judge_qos(
    meta: &RunMeta,
    actions: &mut BTreeMap<String, ActionSummary>,
    score: &Score,
) -> Vec<QosFailure> {
    let rule = QosRule::from_thresholds(&meta.qos);
    let measure = QosMeasure::of_parts(meta, actions, score, Vec::new());
    let failures = rule.judge(&measure);
    for (name, a) in actions.iter_mut() {
        a.qos_pass = !failures.iter().any(|f| &f.subject == name);
    }
    failures
}

/// The QoS failure of copies never delivered, if any were lost.
fn delivery_failure(delivery: &DeliverySummary) -> Option<QosFailure> {
    if delivery.lost == 0 {
        return None;
    }
    let unsearched = if delivery.lost_unsearched > 0 {
        format!(
            " ({} of them in mailboxes the reconciliation could not search)",
            delivery.lost_unsearched
        )
    } else {
        String::new()
    };
    Some(QosFailure {
        subject: "delivery".to_owned(),
        reason: format!(
            "{} recipients were never delivered{unsearched}",
            delivery.lost
        ),
    })
}

fn score(
    meta: &RunMeta,
    actions: &BTreeMap<String, ActionSummary>,
    pooled: &LatencyHistogram,
) -> Score {
    let (weight_source, candidate_weights): (_, BTreeMap<String, f64>) =
        if meta.action_weights.is_empty() {
            let measured = actions
                .iter()
                .map(|(name, a)| (name.clone(), a.count as f64))
                .collect();
            (WeightSource::Measured, measured)
        } else {
            (WeightSource::Profile, meta.action_weights.clone())
        };
    let mut weights = BTreeMap::new();
    let mut excluded = Vec::new();
    let (mut sum_wp, mut sum_w) = (0.0, 0.0);
    for (name, a) in actions {
        match (candidate_weights.get(name), a.p95_ms) {
            (Some(&w), Some(p95)) if w > 0.0 && w.is_finite() => {
                sum_wp += w * p95;
                sum_w += w;
                weights.insert(name.clone(), w);
            }
            _ => excluded.push(name.clone()),
        }
    }
    for name in candidate_weights.keys() {
        if !actions.contains_key(name) {
            excluded.push(name.clone());
        }
    }
    excluded.sort();
    excluded.dedup();
    Score {
        weighted_p95_ms: (sum_w > 0.0).then(|| round_ms(sum_wp / sum_w)),
        pooled_p95_ms: pooled.quantile_ms(0.95),
        weights,
        weight_source,
        excluded,
    }
}

fn throughput(window: &SteadyWindow, totals: &BTreeMap<String, u64>, actions: u64) -> Throughput {
    let secs = window.length_s;
    let rate = |n: u64, per: f64| {
        if secs > 0.0 {
            round_ms(n as f64 * per / secs)
        } else {
            0.0
        }
    };
    let get = |name: &str| totals.get(name).copied().unwrap_or(0);
    Throughput {
        steady_seconds: secs,
        messages_submitted_per_hour: rate(get(counters::MESSAGES_SUBMITTED), 3600.0),
        recipients_delivered_per_hour: rate(get(counters::RECIPIENTS_DELIVERED), 3600.0),
        message_opens_per_second: rate(get(counters::MESSAGE_OPENS), 1.0),
        folder_opens_per_second: rate(get(counters::FOLDER_OPENS), 1.0),
        actions_per_second: rate(actions, 1.0),
        bytes_per_second: file_bytes(totals).map(|b| rate(b, 1.0)),
        megabits_per_second: file_bytes(totals).map(|b| {
            if secs > 0.0 {
                round_ms(b as f64 * 8.0 / BITS_PER_MEGABIT / secs)
            } else {
                0.0
            }
        }),
    }
}

/// The file data moved in the steady phase, when the run counted any.
fn file_bytes(totals: &BTreeMap<String, u64>) -> Option<u64> {
    let read = totals.get(counters::BYTES_READ);
    let written = totals.get(counters::BYTES_WRITTEN);
    (read.is_some() || written.is_some())
        .then(|| read.copied().unwrap_or(0) + written.copied().unwrap_or(0))
}

/// The name of the error kind a panicked task is counted under.
pub const PANIC_ERROR_KIND: &str = "panic";

/// Errors of kind `panic` in every interval of the run, whatever its phase:
/// a panic during the logon or the drain is as much a bug as one measured.
fn panics(record: &RunRecord) -> u64 {
    record
        .intervals
        .iter()
        .flat_map(|i| i.actions.values())
        .filter_map(|a| a.errors.get(PANIC_ERROR_KIND))
        .sum()
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn delivery(record: &RunRecord) -> Result<DeliverySummary, AnalysisError> {
    let d = &record.delivery;
    let h = d.latency.decode()?;
    let lost = d.lost_total();
    Ok(DeliverySummary {
        submitted_recipients: d.submitted_recipients,
        delivered_recipients: d.delivered_recipients,
        failed_recipients: d.failed_recipients,
        lost,
        lost_recipients: d.lost.clone(),
        lost_not_listed: d.lost_not_listed,
        lost_unsearched: d.lost_unsearched,
        awaiting_merge: d.awaiting_merge(),
        reconciled: d.submitted_recipients
            == d.delivered_recipients + d.failed_recipients + lost + d.awaiting_merge(),
        p50_ms: h.quantile_ms(0.50),
        p95_ms: h.quantile_ms(0.95),
        max_ms: h.max_ms(),
        mail_queue_at_end: None,
        latency_includes: delivery_latency_includes(&record.meta.protocols),
        mta_unknown: record
            .server
            .mta_delivery
            .is_none()
            .then(|| MTA_UNKNOWN_NOT_LAB.to_owned()),
        mta: record.server.mta_delivery.clone(),
    })
}

fn client_check(
    meta: &RunMeta,
    cpu: &[f64],
    lag: &LatencyHistogram,
) -> (ClientSummary, Vec<String>) {
    let limit = CLIENT_CPU_LIMIT_FRACTION * 100.0 * f64::from(meta.client_cores.max(1));
    let over = cpu.iter().filter(|&&p| p > limit).count();
    let mut reasons = Vec::new();
    if !cpu.is_empty() && over as f64 > CLIENT_CPU_BUSY_INTERVALS_FRACTION * cpu.len() as f64 {
        reasons.push(format!(
            "peakhour CPU was above {limit}% in {over} of {} steady intervals (limit: {}%)",
            cpu.len(),
            CLIENT_CPU_BUSY_INTERVALS_FRACTION * 100.0
        ));
    }
    let lag_p99 = lag.quantile_ms(0.99);
    if let Some(p99) = lag_p99
        && p99 > SCHEDULING_LAG_P99_LIMIT_MS
    {
        reasons.push(format!(
            "peakhour scheduling lag p99 was {p99} ms (limit: {SCHEDULING_LAG_P99_LIMIT_MS} ms)"
        ));
    }
    let summary = ClientSummary {
        cpu_percent_mean: (!cpu.is_empty())
            .then(|| round_ms(cpu.iter().sum::<f64>() / cpu.len() as f64)),
        cpu_percent_max: cpu.iter().copied().reduce(f64::max),
        cpu_limit_percent: limit,
        intervals_sampled: cpu.len(),
        intervals_over_cpu_limit: over,
        scheduling_lag_p99_ms: lag_p99,
        scheduling_lag_max_ms: lag.max_ms(),
    };
    (summary, reasons)
}
