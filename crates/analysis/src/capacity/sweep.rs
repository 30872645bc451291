//! The rules of `peakhour sweep`: which user counts to run, when to stop
//! climbing, which p95 limit the curve is held to, and the capacity
//! statement in sentences.
//!
//! A sweep runs one `peakhour run` per user count; each step's
//! [`Summary`] becomes a [`SweepStep`], and the finished steps become a
//! [`SweepAnalysis`]: the capacity curve's [`CapacityAnalysis`] plus the
//! sentences a person reads first. Everything here is pure; the binary only
//! starts the steps and reads their summaries.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{CapacityAnalysis, CapacityBound, CapacityError, CapacityOptions, CurvePoint};
use crate::{DEFAULT_P95_LIMIT_MS, Summary, Verdict};

/// A sweep has at most this many steps.
pub const MAX_STEPS: usize = 1000;

/// Why the list of user counts cannot be made (the messages name the
/// `peakhour sweep` flags).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepPlanError {
    /// `--from 0`.
    #[error("--from must be at least 1")]
    FromZero,
    /// `--to` below `--from`.
    #[error("--to {to} is below --from {from}")]
    ToBelowFrom {
        /// `--from`.
        from: u32,
        /// `--to`.
        to: u32,
    },
    /// A factor that does not grow.
    #[error("--factor {0} must be greater than 1")]
    Factor(f64),
    /// More than [`MAX_STEPS`] steps.
    #[error("more than 1000 steps; raise --factor")]
    TooManySteps,
    /// `--from` without `--to`.
    #[error("--from needs --to")]
    FromWithoutTo,
    /// Neither a list nor a progression, or both.
    #[error("give either --users N,N,... or --from N --to N [--factor X]")]
    NoSteps,
    /// A user count of 0 in `--users`.
    #[error("a step of 0 users measures nothing; remove it from --users")]
    ZeroUsers,
    /// `--users` with nothing in it.
    #[error("--users lists no user count")]
    EmptyList,
    /// An unknown `--p95` basis.
    #[error("--p95 {0:?}: use weighted or max-action")]
    P95Basis(String),
    /// An early-stop error ratio outside 0..=1.
    #[error("--max-error-ratio must lie between 0 and 1")]
    MaxErrorRatio,
    /// A QoS limit that is not a positive number.
    #[error("--qos-p95-ms must be a positive number of milliseconds")]
    QosLimit,
    /// A price that is negative or not finite.
    #[error("--price must be a finite amount of at least 0")]
    Price,
}

/// Checks a sweep's numbers: the early-stop error ratio lies in 0..=1, the
/// QoS limit (when given) is a positive number of milliseconds, and the
/// price (when given) a finite amount of at least 0.
pub fn check_sweep_bounds(
    max_error_ratio: f64,
    qos_p95_ms: Option<f64>,
    price: Option<f64>,
) -> Result<(), SweepPlanError> {
    if !(0.0..=1.0).contains(&max_error_ratio) {
        return Err(SweepPlanError::MaxErrorRatio);
    }
    if qos_p95_ms.is_some_and(|ms| !(ms > 0.0 && ms.is_finite())) {
        return Err(SweepPlanError::QosLimit);
    }
    if price.is_some_and(|p| !(p >= 0.0 && p.is_finite())) {
        return Err(SweepPlanError::Price);
    }
    Ok(())
}

/// The user counts `from, from·factor, from·factor², …` rounded to whole
/// users, strictly increasing, up to `to`; `to` itself ends the list when
/// the progression steps over it.
pub fn geometric_steps(from: u32, to: u32, factor: f64) -> Result<Vec<u32>, SweepPlanError> {
    if from == 0 {
        return Err(SweepPlanError::FromZero);
    }
    if to < from {
        return Err(SweepPlanError::ToBelowFrom { from, to });
    }
    if !factor.is_finite() || factor <= 1.0 {
        return Err(SweepPlanError::Factor(factor));
    }
    let mut steps = vec![from];
    let mut exact = f64::from(from);
    loop {
        exact *= factor;
        let next = exact.round();
        if next > f64::from(to) {
            break;
        }
        let next = next as u32;
        if steps.last().is_some_and(|last| next > *last) {
            steps.push(next);
        }
        if steps.len() > MAX_STEPS {
            return Err(SweepPlanError::TooManySteps);
        }
    }
    if steps.last() != Some(&to) {
        steps.push(to);
    }
    Ok(steps)
}

/// The user counts of a sweep, sorted and without repeats: either `users`
/// (a list) or the progression `from`..`to` by `factor`.
pub fn plan_steps(
    users: Option<&[u32]>,
    from: Option<u32>,
    to: Option<u32>,
    factor: f64,
) -> Result<Vec<u32>, SweepPlanError> {
    let mut steps = match (users, from, to) {
        (Some(list), None, None) => list.to_vec(),
        (None, Some(from), Some(to)) => geometric_steps(from, to, factor)?,
        (None, Some(_), None) => return Err(SweepPlanError::FromWithoutTo),
        _ => return Err(SweepPlanError::NoSteps),
    };
    if steps.contains(&0) {
        return Err(SweepPlanError::ZeroUsers);
    }
    steps.sort_unstable();
    steps.dedup();
    if steps.is_empty() {
        return Err(SweepPlanError::EmptyList);
    }
    Ok(steps)
}

/// Which p95 the capacity curve (and its QoS capacity) uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum P95Basis {
    /// `score.weighted_p95_ms`: the MMB-style score.
    Weighted,
    /// The largest per-action p95 of the step: the strictest reading.
    MaxAction,
}

impl FromStr for P95Basis {
    type Err = SweepPlanError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "weighted" => Ok(Self::Weighted),
            "max-action" => Ok(Self::MaxAction),
            other => Err(SweepPlanError::P95Basis(other.to_string())),
        }
    }
}

impl P95Basis {
    /// How the p95 is named in charts and sentences.
    pub fn label(self) -> &'static str {
        match self {
            Self::Weighted => "weighted p95",
            Self::MaxAction => "max per-action p95",
        }
    }

    /// Where in `summary.json` the p95 comes from.
    pub fn source(self) -> &'static str {
        match self {
            Self::Weighted => "the score's weighted p95 (summary.json score.weighted_p95_ms)",
            Self::MaxAction => {
                "the largest per-action p95 of each step (summary.json actions.*.p95_ms)"
            }
        }
    }

    /// `weighted` or `max-action`, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Weighted => "weighted",
            Self::MaxAction => "max-action",
        }
    }
}

/// What a sweep's curve counts: a mail sweep's actions per second against users, or
/// a file sweep's bytes per second against clients (seed 004's Figure 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThroughputUnit {
    /// Successful actions per second (`summary.json` `throughput.actions_per_second`).
    #[default]
    ActionsPerSecond,
    /// Bytes moved to and from the server per second (`throughput.bytes_per_second`),
    /// NetBench's throughput.
    BytesPerSecond,
}

impl ThroughputUnit {
    /// The unit of a step's summary: bytes when it counted file data.
    pub fn of(summary: &Summary) -> Self {
        if summary.throughput.bytes_per_second.is_some() {
            Self::BytesPerSecond
        } else {
            Self::ActionsPerSecond
        }
    }

    /// For charts and sentences: `actions/s`, `bytes/s`.
    pub fn label(self) -> &'static str {
        match self {
            Self::ActionsPerSecond => "actions/s",
            Self::BytesPerSecond => "bytes/s",
        }
    }

    /// The `summary.json` field, as `capacity.json` names it.
    pub fn field(self) -> &'static str {
        match self {
            Self::ActionsPerSecond => "actions_per_second",
            Self::BytesPerSecond => "bytes_per_second",
        }
    }

    /// What the load counts: `users` of a mail server, `clients` of a file server
    /// (NetBench's test systems).
    pub fn load(self) -> &'static str {
        match self {
            Self::ActionsPerSecond => "users",
            Self::BytesPerSecond => "clients",
        }
    }

    /// A throughput in this unit for people: `12.3 actions/s`, or for bytes also in
    /// seed 004's megabits (`1,234,567 bytes/s (9.4 Mbit/s)`).
    pub fn format(self, x: f64) -> String {
        match self {
            Self::ActionsPerSecond => format!("{x:.1} actions/s"),
            Self::BytesPerSecond => format!(
                "{x:.0} bytes/s ({:.1} Mbit/s)",
                x * 8.0 / crate::BITS_PER_MEGABIT
            ),
        }
    }
}

/// One finished step of a sweep: the figures of its [`Summary`] that the
/// capacity analysis and `capacity.csv` use.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepStep {
    /// Simulated users.
    pub users: u32,
    /// The step's run directory, relative to the sweep's (`step-25u`).
    pub run_dir: String,
    /// The step's QoS verdict.
    pub verdict: Verdict,
    /// The step was interrupted: its steady phase was cut short.
    pub interrupted: bool,
    /// peakhour flagged itself client-bound in this step.
    pub client_bound: bool,
    /// Throughput over the steady phase, in `unit`.
    pub throughput: f64,
    /// What `throughput` counts.
    pub unit: ThroughputUnit,
    /// The score's weighted p95, ms.
    pub weighted_p95_ms: Option<f64>,
    /// Each action's p95, ms, by action name.
    pub action_p95_ms: BTreeMap<String, Option<f64>>,
    /// The p95 limits the step's actions were held to, ms.
    pub action_p95_limits_ms: Vec<f64>,
    /// Attempted actions (successes and errors) in the steady phase.
    pub attempts: u64,
    /// Failed actions among them.
    pub errors: u64,
    /// The server's mean CPU busy percentage, when a monitor ran.
    pub cpu_busy_pct: Option<f64>,
    /// The resource the monitor named as the bottleneck (`none` when none saturated).
    pub bottleneck: Option<String>,
    /// The figures behind the bottleneck.
    pub bottleneck_evidence: Option<String>,
    /// Day compression of the step.
    pub speed: f64,
    /// The step's seed.
    pub seed: u64,
}

impl SweepStep {
    /// The step of `users` users whose run directory is `run_dir`.
    pub fn from_summary(users: u32, run_dir: &str, s: &Summary) -> Self {
        Self {
            users,
            run_dir: run_dir.to_string(),
            verdict: s.verdict,
            interrupted: s.interrupted,
            client_bound: s.client_bound,
            throughput: s
                .throughput
                .bytes_per_second
                .unwrap_or(s.throughput.actions_per_second),
            unit: ThroughputUnit::of(s),
            weighted_p95_ms: s.score.weighted_p95_ms,
            action_p95_ms: s
                .actions
                .iter()
                .map(|(name, a)| (name.clone(), a.p95_ms))
                .collect(),
            action_p95_limits_ms: s.actions.values().map(|a| a.p95_limit_ms).collect(),
            attempts: s.actions.values().map(|a| a.count + a.errors).sum(),
            errors: s.actions.values().map(|a| a.errors).sum(),
            cpu_busy_pct: s
                .resources
                .iter()
                .find(|r| r.metric == "cpu_busy_pct")
                .map(|r| r.mean),
            bottleneck: s.bottleneck.as_ref().map(|b| b.resource.clone()),
            bottleneck_evidence: s.bottleneck.as_ref().map(|b| b.evidence.clone()),
            speed: s.meta.speed,
            seed: s.seed,
        }
    }

    /// The largest per-action p95, ms.
    pub fn max_action_p95_ms(&self) -> Option<f64> {
        self.action_p95_ms
            .values()
            .flatten()
            .copied()
            .reduce(f64::max)
    }

    /// The p95 the curve uses for this step.
    pub fn p95_ms(&self, basis: P95Basis) -> Option<f64> {
        match basis {
            P95Basis::Weighted => self.weighted_p95_ms,
            P95Basis::MaxAction => self.max_action_p95_ms(),
        }
    }

    /// Errors over attempted actions; `None` when nothing was attempted.
    pub fn error_ratio(&self) -> Option<f64> {
        (self.attempts > 0).then(|| self.errors as f64 / self.attempts as f64)
    }

    /// What the early-stop rule looks at.
    pub fn check(&self) -> StepCheck {
        StepCheck {
            users: self.users,
            qos_failed: self.verdict == Verdict::Fail,
            attempts: self.attempts,
            errors: self.errors,
        }
    }
}

/// What the early-stop rule looks at in one finished step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepCheck {
    /// The step's user count.
    pub users: u32,
    /// The step's QoS verdict failed.
    pub qos_failed: bool,
    /// Attempted actions in the steady phase (successes and errors).
    pub attempts: u64,
    /// Failed actions among them.
    pub errors: u64,
}

/// The early-stop rule: stop climbing when the last step's errors are
/// above `max_error_ratio` of its attempted actions, or when QoS failed in
/// the last two steps. Returns why, in a sentence.
pub fn early_stop(steps: &[StepCheck], max_error_ratio: f64) -> Option<String> {
    let last = steps.last()?;
    if last.attempts > 0 {
        let ratio = last.errors as f64 / last.attempts as f64;
        if ratio > max_error_ratio {
            return Some(format!(
                "errors were {:.1}% of the actions at {} users ({} of {}), above --max-error-ratio {}",
                ratio * 100.0,
                last.users,
                last.errors,
                last.attempts,
                max_error_ratio
            ));
        }
    }
    if let [.., before, last] = steps
        && before.qos_failed
        && last.qos_failed
    {
        return Some(format!(
            "QoS failed in two consecutive steps ({} and {} users)",
            before.users, last.users
        ));
    }
    None
}

/// The p95 limit the curve is held to, and a note when the profile's
/// actions disagree.
#[derive(Clone, Debug, PartialEq)]
pub struct QosLimit {
    /// The limit, ms.
    pub limit_ms: f64,
    /// Why this limit, when it is not obvious.
    pub note: Option<String>,
}

/// `explicit` (`--qos-p95-ms`) when given; otherwise the strictest p95
/// limit of the steps' actions, or [`DEFAULT_P95_LIMIT_MS`] without any.
pub fn qos_limit(explicit: Option<f64>, steps: &[SweepStep]) -> QosLimit {
    if let Some(ms) = explicit {
        return QosLimit {
            limit_ms: ms,
            note: None,
        };
    }
    let limits: Vec<f64> = steps
        .iter()
        .flat_map(|s| s.action_p95_limits_ms.iter().copied())
        .filter(|l| l.is_finite() && *l > 0.0)
        .collect();
    let Some(min) = limits.iter().copied().reduce(f64::min) else {
        return QosLimit {
            limit_ms: DEFAULT_P95_LIMIT_MS,
            note: None,
        };
    };
    let max = limits.iter().copied().fold(min, f64::max);
    let note = (max > min).then(|| {
        format!(
            "the profile's actions have different p95 limits ({min} to {max} ms); the curve is held to the strictest, {min} ms"
        )
    });
    QosLimit {
        limit_ms: min,
        note,
    }
}

/// How a sweep ended, as the binary saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweepOutcome {
    /// The finished steps, in the order they ran (interrupted ones too).
    pub steps: Vec<SweepStep>,
    /// Why the sweep stopped climbing early, when it did.
    pub stopped_early: Option<String>,
    /// Why a step failed to produce results, when one did.
    pub failed: Option<String>,
    /// SIGINT or SIGTERM, or a step that reported itself interrupted.
    pub interrupted: bool,
}

impl SweepOutcome {
    /// The steps on the curve: interrupted steps measured a shortened
    /// steady phase, so they stay in `capacity.csv` but not on the curve.
    pub fn curve_steps(&self) -> impl Iterator<Item = &SweepStep> {
        self.steps.iter().filter(|s| !s.interrupted)
    }

    /// What the curve's throughput counts (the first step's unit).
    pub fn unit(&self) -> ThroughputUnit {
        self.steps.first().map(|s| s.unit).unwrap_or_default()
    }

    /// The day compression of the sweep (the first step's).
    pub fn speed(&self) -> Option<f64> {
        self.steps.first().map(|s| s.speed)
    }
}

/// The settings the analysis of a sweep depends on.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepSettings {
    /// The profile's name, for the sentences.
    pub profile: String,
    /// Which p95 the curve uses.
    pub basis: P95Basis,
    /// `--qos-p95-ms`, when given.
    pub qos_p95_ms: Option<f64>,
}

/// The analysis of a finished sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepAnalysis {
    /// The capacity curve's analysis.
    pub analysis: CapacityAnalysis,
    /// The p95 limit the curve was held to.
    pub qos: QosLimit,
    /// The capacity statement, in sentences ([`capacity_statement`]).
    pub statement: Vec<String>,
    /// Where the figures come from and how the sweep ended.
    pub notes: Vec<String>,
    /// What the curve's throughput counts.
    pub unit: ThroughputUnit,
}

impl SweepAnalysis {
    /// The analysis of `outcome`; `Ok(None)` with fewer than two steps on
    /// the curve.
    pub fn compute(
        settings: &SweepSettings,
        outcome: &SweepOutcome,
    ) -> Result<Option<Self>, CapacityError> {
        let basis = settings.basis;
        let points: Vec<CurvePoint> = outcome
            .curve_steps()
            .map(|s| CurvePoint {
                load: f64::from(s.users),
                throughput: s.throughput,
                p95_ms: s.p95_ms(basis),
            })
            .collect();
        if points.len() < 2 {
            return Ok(None);
        }
        let qos = qos_limit(settings.qos_p95_ms, &outcome.steps);
        let options = CapacityOptions {
            qos_p95_ms: qos.limit_ms,
            ..CapacityOptions::default()
        };
        let analysis = CapacityAnalysis::compute(&points, &options)?;
        let statement = capacity_statement(&analysis, settings, outcome);
        let unit = outcome.unit();
        let mut notes = vec![format!(
            "Throughput is {} over each step's steady phase (summary.json throughput.{}); p95 is {}.",
            unit.label(),
            unit.field(),
            basis.source()
        )];
        if unit == ThroughputUnit::BytesPerSecond {
            notes.push("Throughput is NetBench's: the bytes every client read from and wrote to the server, per second of the window in which every client was in its measured iterations (seed 004); Mbit/s are bytes x 8 / 2^20, as seed 004 printed them.".into());
        }
        notes.extend(qos.note.clone());
        if let Some(why) = &outcome.stopped_early {
            notes.push(format!("Stopped early: {why}."));
        }
        if let Some(why) = &outcome.failed {
            notes.push(format!("Stopped: {why}."));
        }
        if outcome.interrupted {
            notes.push("The sweep was interrupted; interrupted steps are in capacity.csv but not in the curve.".into());
        }
        Ok(Some(Self {
            analysis,
            qos,
            statement,
            notes,
            unit,
        }))
    }

    /// `sweep --price`: seed 004's price/performance, the price over the peak
    /// throughput: in Mbit/s for a file sweep ($2,659 / 95.2 Mbit/s = $27.93 per
    /// Mbit/s), in actions/s for a mail sweep. The supported users are the QoS
    /// capacity when there is one, else the peak's load.
    pub fn price_performance(
        &self,
        amount: f64,
    ) -> Result<crate::plan::PricePerformance, crate::plan::PlanError> {
        let peak = self.analysis.peak.throughput;
        let (throughput, unit) = match self.unit {
            ThroughputUnit::BytesPerSecond => (peak * 8.0 / crate::BITS_PER_MEGABIT, "Mbit/s"),
            ThroughputUnit::ActionsPerSecond => (peak, "actions/s"),
        };
        let supported = self
            .analysis
            .qos
            .as_ref()
            .and_then(|q| q.load)
            .unwrap_or(self.analysis.peak.load);
        let price = crate::plan::Price {
            amount,
            currency: "USD".into(),
        };
        crate::plan::price_performance(
            &price,
            supported,
            throughput,
            unit,
            "peak throughput of the sweep",
        )
    }
}

/// The capacity statement in sentences: the headline, the peak, the
/// bottleneck where QoS gave out, client-bound steps, day compression and
/// why the sweep stopped.
pub fn capacity_statement(
    analysis: &CapacityAnalysis,
    settings: &SweepSettings,
    outcome: &SweepOutcome,
) -> Vec<String> {
    let steps = &outcome.steps;
    let mut out: Vec<String> = headline(analysis, settings, outcome).into_iter().collect();
    let unit = outcome.unit();
    out.push(format!(
        "Throughput peaked at {} at {} {}{}.",
        unit.format(analysis.peak.throughput),
        analysis.peak.load,
        unit.load(),
        if analysis.peak.at_largest_load {
            ", the largest step, so it may rise further"
        } else {
            ""
        }
    ));
    out.extend(bottleneck_sentence(steps));
    let bound: Vec<String> = steps
        .iter()
        .filter(|s| s.client_bound)
        .map(|s| s.users.to_string())
        .collect();
    if !bound.is_empty() {
        out.push(format!(
            "peakhour flagged itself client-bound at {} {} (its own CPU or scheduling lag passed its limits, see each step's summary.json): those steps' response times include the load generator's own delays, so they may describe the client rather than the server. When the client shares the server's host, as with the lab, this is also a sign that the host's CPUs are saturated; run the load from another host to separate the two.",
            bound.join(", "),
            outcome.unit().load()
        ));
    }
    if let Some(speed) = outcome.speed()
        && speed > 1.0
        && outcome.unit() == ThroughputUnit::ActionsPerSecond
    {
        out.push(format!(
            "Each simulated user ran its day {speed} times faster than a real one (day compression), so it offers about {speed} real users' worth of actions, over fewer connections."
        ));
    }
    if let Some(why) = &outcome.stopped_early {
        out.push(format!("The sweep stopped climbing early: {why}."));
    }
    out
}

/// "This server carries about N users …", when the curve has a p95.
fn headline(
    analysis: &CapacityAnalysis,
    settings: &SweepSettings,
    outcome: &SweepOutcome,
) -> Option<String> {
    let q = analysis.qos.as_ref()?;
    let (profile, label, limit) = (&settings.profile, settings.basis.label(), q.limit_ms);
    let unit = outcome.unit();
    let users = unit.load();
    // A file sweep's day is not compressed: NetBench clients have no simulated day.
    let at_speed = outcome
        .speed()
        .filter(|_| unit == ThroughputUnit::ActionsPerSecond)
        .map(|s| format!(" at speed {s}"))
        .unwrap_or_default();
    let tput = |x: Option<f64>| x.map(|x| unit.format(x)).unwrap_or_default();
    // The one QoS rule (crate::qos) judged every step; the curve's p95 is one
    // of its checks, so a step that failed another (errors, an action's own
    // limit, too few samples) caps the claim.
    let measured = || outcome.steps.iter().filter(|s| !s.interrupted);
    let first_failed = measured()
        .filter(|s| s.verdict == Verdict::Fail)
        .map(|s| s.users)
        .min();
    if let (Some(failed), Some(load)) = (first_failed, q.load)
        && load >= f64::from(failed)
    {
        let passed = measured()
            .filter(|s| s.users < failed && s.verdict == Verdict::Pass)
            .map(|s| s.users)
            .max();
        return Some(match passed {
            Some(p) => format!(
                "This server carries at least {p} {users} of profile {profile}{at_speed} within QoS: the step at {failed} {users} failed its QoS verdict (see its summary.json, qos.failures), so the capacity lies between them."
            ),
            None => format!(
                "This server did not meet QoS even at {failed} {users} of profile {profile}{at_speed}, the smallest step (see its summary.json, qos.failures)."
            ),
        });
    }
    Some(match (q.bound, q.load) {
        (CapacityBound::Interpolated, Some(load)) => format!(
            "This server carries about {load:.0} {users} of profile {profile}{at_speed} within QoS ({label} <= {limit} ms), at about {}.",
            tput(q.throughput)
        ),
        (CapacityBound::AllPassed, Some(load)) => format!(
            "This server carries at least {load:.0} {users} of profile {profile}{at_speed} within QoS ({label} <= {limit} ms), at {}: every step passed, so the limit lies beyond the largest step.",
            tput(q.throughput)
        ),
        _ => format!(
            "This server did not meet QoS ({label} <= {limit} ms) even at {} {users} of profile {profile}{at_speed}: its capacity is below the smallest step.",
            analysis.points.first().map_or(0.0, |p| p.load)
        ),
    })
}

/// The bottleneck where QoS gave out, else at the largest step.
fn bottleneck_sentence(steps: &[SweepStep]) -> Option<String> {
    let failing = steps
        .iter()
        .find(|s| s.verdict == Verdict::Fail && !s.interrupted);
    let largest = steps.iter().rev().find(|s| !s.interrupted);
    let (step, which) = failing
        .map(|s| (s, "the first step that failed QoS"))
        .or_else(|| largest.map(|s| (s, "the largest step")))?;
    let resource = step.bottleneck.as_ref()?;
    let evidence = step
        .bottleneck_evidence
        .as_deref()
        .map(|e| format!(" ({e})"))
        .unwrap_or_default();
    Some(if resource == "none" {
        format!(
            "At {} {}, {which}, the server monitor found no saturated resource{evidence}: look at the server's configuration (process limits, locks) or at the network.",
            step.users,
            step.unit.load()
        )
    } else {
        format!(
            "At {} {}, {which}, the server monitor names {resource} as the bottleneck{evidence}.",
            step.users,
            step.unit.load()
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_sweeps_numbers_are_checked_each_with_its_flag_named() {
        assert!(check_sweep_bounds(0.05, None, None).is_ok());
        assert!(check_sweep_bounds(1.0, Some(500.0), Some(0.0)).is_ok());
        let e = check_sweep_bounds(1.5, None, None).unwrap_err();
        assert!(matches!(e, SweepPlanError::MaxErrorRatio));
        assert!(e.to_string().starts_with("--max-error-ratio"));
        for ms in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = check_sweep_bounds(0.05, Some(ms), None).unwrap_err();
            assert!(matches!(e, SweepPlanError::QosLimit), "{ms}");
        }
        for price in [-0.01, f64::NAN, f64::INFINITY] {
            let e = check_sweep_bounds(0.05, None, Some(price)).unwrap_err();
            assert!(matches!(e, SweepPlanError::Price), "{price}");
        }
    }

    #[test]
    fn from_to_factor_expands_geometrically() {
        assert_eq!(
            geometric_steps(25, 800, 2.0).unwrap(),
            vec![25, 50, 100, 200, 400, 800]
        );
        // `to` ends the list when the progression steps over it.
        assert_eq!(
            geometric_steps(25, 700, 2.0).unwrap(),
            vec![25, 50, 100, 200, 400, 700]
        );
        // Rounding never repeats a user count.
        assert_eq!(
            geometric_steps(1, 10, 1.5).unwrap(),
            vec![1, 2, 3, 5, 8, 10]
        );
        assert_eq!(geometric_steps(5, 5, 2.0).unwrap(), vec![5]);
        assert_eq!(geometric_steps(0, 5, 2.0), Err(SweepPlanError::FromZero));
        assert!(geometric_steps(10, 5, 2.0).is_err());
        assert!(geometric_steps(1, 5, 1.0).is_err());
        assert!(geometric_steps(1, 5, f64::NAN).is_err());
        assert_eq!(
            geometric_steps(1, u32::MAX, 1.000_001),
            Err(SweepPlanError::TooManySteps)
        );
    }

    #[test]
    fn user_lists_are_sorted_and_checked() {
        assert_eq!(
            plan_steps(Some(&[50, 25, 50]), None, None, 2.0).unwrap(),
            vec![25, 50]
        );
        assert_eq!(
            plan_steps(None, Some(10), Some(40), 2.0).unwrap(),
            vec![10, 20, 40]
        );
        assert_eq!(
            plan_steps(Some(&[0, 5]), None, None, 2.0),
            Err(SweepPlanError::ZeroUsers)
        );
        assert_eq!(
            plan_steps(Some(&[]), None, None, 2.0),
            Err(SweepPlanError::EmptyList)
        );
        assert_eq!(
            plan_steps(None, Some(10), None, 2.0),
            Err(SweepPlanError::FromWithoutTo)
        );
        assert_eq!(
            plan_steps(Some(&[5]), Some(10), Some(20), 2.0),
            Err(SweepPlanError::NoSteps)
        );
        assert_eq!("max-action".parse(), Ok(P95Basis::MaxAction));
        let err = "p99".parse::<P95Basis>().unwrap_err().to_string();
        assert_eq!(err, "--p95 \"p99\": use weighted or max-action");
    }

    fn check(users: u32, qos_failed: bool, attempts: u64, errors: u64) -> StepCheck {
        StepCheck {
            users,
            qos_failed,
            attempts,
            errors,
        }
    }

    #[test]
    fn early_stop_after_two_failures_in_a_row_or_too_many_errors() {
        assert_eq!(early_stop(&[], 0.05), None);
        // One failure is not enough; a pass in between resets it.
        let one = [check(25, false, 100, 0), check(50, true, 100, 0)];
        assert_eq!(early_stop(&one, 0.05), None);
        let reset = [
            check(25, true, 100, 0),
            check(50, false, 100, 0),
            check(100, true, 100, 0),
        ];
        assert_eq!(early_stop(&reset, 0.05), None);
        let two = [
            check(25, false, 100, 0),
            check(50, true, 100, 0),
            check(100, true, 100, 0),
        ];
        let why = early_stop(&two, 0.05).unwrap();
        assert!(why.contains("50 and 100 users"), "{why}");
        // Errors: strictly above the ratio stops, at it does not.
        assert_eq!(early_stop(&[check(25, false, 100, 5)], 0.05), None);
        let why = early_stop(&[check(25, false, 100, 6)], 0.05).unwrap();
        assert!(why.contains("6.0%") && why.contains("25 users"), "{why}");
        // Nothing attempted: no ratio to judge.
        assert_eq!(early_stop(&[check(25, false, 0, 0)], 0.05), None);
    }

    fn step(users: u32, throughput: f64, p95: f64, verdict: Verdict) -> SweepStep {
        SweepStep {
            users,
            run_dir: format!("step-{users}u"),
            verdict,
            interrupted: false,
            client_bound: false,
            throughput,
            unit: ThroughputUnit::ActionsPerSecond,
            weighted_p95_ms: Some(p95),
            action_p95_ms: [("read".to_string(), Some(p95 * 2.0))].into(),
            action_p95_limits_ms: vec![1000.0, 3000.0],
            attempts: 100,
            errors: 1,
            cpu_busy_pct: Some(50.0),
            bottleneck: Some("cpu".into()),
            bottleneck_evidence: Some("CPU busy 97%".into()),
            speed: 300.0,
            seed: 7,
        }
    }

    #[test]
    fn qos_limit_is_the_strictest_action_limit_unless_given() {
        let steps = [step(10, 5.0, 100.0, Verdict::Pass)];
        let limit = qos_limit(None, &steps);
        assert_eq!(limit.limit_ms, 1000.0);
        assert!(limit.note.unwrap().contains("1000 to 3000 ms"));
        assert_eq!(qos_limit(Some(250.0), &steps).limit_ms, 250.0);
        assert_eq!(qos_limit(None, &[]).limit_ms, DEFAULT_P95_LIMIT_MS);
    }

    /// A file sweep (issue 15): bytes/s against clients, in seed 004's megabits too, and
    /// no day compression (a NetBench client has no simulated day).
    #[test]
    fn a_file_sweep_speaks_of_bytes_and_clients() {
        let mut steps = vec![
            step(1, 480_154.0, 10.0, Verdict::Pass),
            step(8, 3_757_741.0, 20.0, Verdict::Pass),
            step(16, 7_206_831.0, 30.0, Verdict::Pass),
        ];
        for s in &mut steps {
            s.unit = ThroughputUnit::BytesPerSecond;
            s.speed = 1.0;
        }
        let outcome = SweepOutcome {
            steps,
            ..SweepOutcome::default()
        };
        let settings = SweepSettings {
            profile: "netbench-disk-mix".into(),
            basis: P95Basis::Weighted,
            qos_p95_ms: None,
        };
        let a = SweepAnalysis::compute(&settings, &outcome)
            .unwrap()
            .unwrap();
        assert_eq!(a.unit, ThroughputUnit::BytesPerSecond);
        assert!(
            a.statement[0].starts_with(
                "This server carries at least 16 clients of profile netbench-disk-mix within QoS"
            ),
            "{}",
            a.statement[0]
        );
        assert!(
            a.statement[1].contains("peaked at 7206831 bytes/s (55.0 Mbit/s) at 16 clients"),
            "{}",
            a.statement[1]
        );
        assert!(a.notes[0].contains("throughput.bytes_per_second"));
        assert_eq!(
            ThroughputUnit::BytesPerSecond.format(11_510_079.0),
            "11510079 bytes/s (87.8 Mbit/s)"
        );
    }

    #[test]
    fn a_sweep_gives_a_statement_and_notes() {
        let mut outcome = SweepOutcome {
            steps: vec![
                step(10, 5.0, 200.0, Verdict::Pass),
                step(20, 9.0, 600.0, Verdict::Pass),
                step(40, 10.0, 1400.0, Verdict::Fail),
            ],
            stopped_early: Some("QoS failed".into()),
            ..SweepOutcome::default()
        };
        outcome.steps[2].client_bound = true;
        let settings = SweepSettings {
            profile: "mmb-medium".into(),
            basis: P95Basis::Weighted,
            qos_p95_ms: None,
        };
        let a = SweepAnalysis::compute(&settings, &outcome)
            .unwrap()
            .unwrap();
        assert_eq!(a.qos.limit_ms, 1000.0);
        // 600 -> 1400 ms between 20 and 40 users: 1000 ms halfway.
        assert_eq!(
            a.statement[0],
            "This server carries about 30 users of profile mmb-medium at speed 300 within QoS (weighted p95 <= 1000 ms), at about 9.5 actions/s."
        );
        assert!(a.statement[1].contains("peaked at 10.0 actions/s at 40 users, the largest"));
        assert!(a.statement[2].starts_with("At 40 users, the first step that failed QoS"));
        assert!(a.statement.iter().any(|s| s.contains("client-bound at 40")));
        assert!(a.statement.iter().any(|s| s.contains("300 times faster")));
        assert!(a.notes.iter().any(|n| n == "Stopped early: QoS failed."));

        // Interrupted steps stay off the curve.
        outcome.steps[1].interrupted = true;
        outcome.steps[2].interrupted = true;
        assert_eq!(SweepAnalysis::compute(&settings, &outcome), Ok(None));
    }

    #[test]
    fn issue_25_item_4_the_sweep_claims_no_step_beyond_one_that_failed_its_verdict() {
        // Every weighted p95 is within 1000 ms, but the steps at 230 and 260
        // users failed their verdict (the one QoS rule): the sweep must not say
        // it carries 260.
        let outcome = SweepOutcome {
            steps: vec![
                step(200, 50.0, 700.0, Verdict::Pass),
                step(230, 55.0, 900.0, Verdict::Fail),
                step(260, 58.0, 977.0, Verdict::Fail),
            ],
            ..SweepOutcome::default()
        };
        let settings = SweepSettings {
            profile: "mmb-medium".into(),
            basis: P95Basis::Weighted,
            qos_p95_ms: None,
        };
        let a = SweepAnalysis::compute(&settings, &outcome)
            .unwrap()
            .unwrap();
        assert!(
            a.statement[0].starts_with("This server carries at least 200 users")
                && a.statement[0].contains("the step at 230 users failed its QoS verdict"),
            "{}",
            a.statement[0]
        );
    }
}
