//! How many users a host carries within the QoS limit.
//!
//! # The model (stated, because it is an assumption)
//!
//! Each action's response time measured alone (`p95_ms` of its task run,
//! where the server was nearly idle) is stretched by the time it waits for
//! a CPU when the whole population runs. The CPU is an M/M/c queue:
//!
//! - arrivals are Poisson, which is how peakhour schedules actions
//!   (DESIGN.md: "Poisson arrivals of each action at rate count/day");
//! - service is exponential with the mix's mean CPU demand per action,
//!   `S = Σ rate_a × cpu_ms_a / Σ rate_a`;
//! - `c` CPUs are `k = max(1, ⌊c⌋)` servers each of speed `c / k`, so a
//!   cgroup quota of 0.5 CPU is one server at half speed (what CFS
//!   throttling amounts to over a period) and whole cores are the textbook
//!   M/M/c;
//! - the utilization is `ρ = A / c` with `A` the CPU the population uses
//!   in cores (idle baseline and held sessions included).
//!
//! The waiting time then exceeds `t` with probability
//! `C(k, kρ) × exp(−(k − kρ) t / S')`, `S' = S k / c` the service time on one
//! server and `C` Erlang's C formula, so its 95th percentile is
//! `S' / (k − kρ) × ln(C / 0.05)` (0 when `C ≤ 0.05`). The predicted p95 of
//! each action is its measured p95 plus that wait; the weighted p95 uses the
//! profile's rates as weights, like the run summary's score. Adding two
//! 95th percentiles over-states the p95 of the sum, so the model errs on the
//! safe side. It ignores the disk and the network queueing (they are
//! capped separately at their capacity) and any lock or fsync contention
//! inside the server: a sweep measures those, and when one is given its QoS
//! capacity is the answer and the model is shown beside it.
//!
//! Because the wait only grows large as `ρ → 1`, the model's answer sits a
//! little below the users at which the CPU saturates: what moves it is
//! mostly the measured CPU per action.

use serde::{Deserialize, Serialize};

use crate::capacity::{CapacityAnalysis, CapacityBound};

/// The tail the QoS limit is about: the 95th percentile.
pub const QOS_PERCENTILE_TAIL: f64 = 0.05;

/// Erlang's C formula: the probability that an arrival waits, for `servers`
/// servers offered `offered` erlangs (`offered < servers`; 1 otherwise).
///
/// Computed through Erlang B's recursion, which is stable for large
/// server counts: `B(0) = 1`, `B(j) = a B(j−1) / (j + a B(j−1))`, then
/// `C = B / (1 − ρ (1 − B))` with `ρ = a / servers`.
pub fn erlang_c(servers: u32, offered: f64) -> f64 {
    if servers == 0 || offered >= f64::from(servers) {
        return 1.0;
    }
    if offered <= 0.0 {
        return 0.0;
    }
    let mut b = 1.0;
    for j in 1..=servers {
        b = offered * b / (f64::from(j) + offered * b);
    }
    let rho = offered / f64::from(servers);
    b / (1.0 - rho * (1.0 - b))
}

/// The 95th percentile of the CPU queueing wait, ms, for `cpus` CPUs
/// (fractional allowed) busy `busy_cores` on average, when one action needs
/// `service_ms` of CPU. Infinite at or past saturation.
pub fn queue_wait_p95_ms(cpus: f64, busy_cores: f64, service_ms: f64) -> f64 {
    if cpus <= 0.0 || busy_cores >= cpus {
        return f64::INFINITY;
    }
    if busy_cores <= 0.0 || service_ms <= 0.0 {
        return 0.0;
    }
    let servers = (cpus.floor() as u32).max(1);
    let k = f64::from(servers);
    let rho = busy_cores / cpus;
    let offered = rho * k;
    let c = erlang_c(servers, offered);
    if c <= QOS_PERCENTILE_TAIL {
        return 0.0;
    }
    let service_on_one = service_ms * k / cpus;
    service_on_one / (k - offered) * (c / QOS_PERCENTILE_TAIL).ln()
}

/// A sweep's measured QoS capacity on the same host, when one was run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepCapacity {
    /// Users at which the sweep's p95 met the limit (its headline capacity,
    /// or the knee when that is what the caller takes).
    pub users: f64,
    /// Where the number comes from, e.g. `sweep qos capacity (interpolated)`.
    pub source: String,
    /// Every step passed, so the capacity is at least `users`.
    #[serde(default)]
    pub lower_bound: bool,
}

impl SweepCapacity {
    /// A sweep's QoS capacity from its analysis (`capacity.json`); `None`
    /// when even its smallest step failed the limit. `file` names where it
    /// was read, for the plan's source line.
    pub fn from_analysis(analysis: &CapacityAnalysis, file: &str) -> Option<Self> {
        let qos = analysis.qos.as_ref()?;
        let bound = match qos.bound {
            CapacityBound::Interpolated => "qos capacity, interpolated",
            CapacityBound::AllPassed => "every step passed: a lower bound",
            CapacityBound::NonePassed => return None,
        };
        Some(Self {
            users: qos.load?,
            source: format!("sweep {file} ({bound})"),
            lower_bound: qos.bound == CapacityBound::AllPassed,
        })
    }
}

/// The QoS settings of a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QosModel {
    /// The limit on the weighted p95, ms (seed 002: 1000).
    pub p95_limit_ms: f64,
    /// A measured sweep on the host, which then gives the answer.
    pub sweep: Option<SweepCapacity>,
}

impl Default for QosModel {
    fn default() -> Self {
        Self {
            p95_limit_ms: crate::DEFAULT_P95_LIMIT_MS,
            sweep: None,
        }
    }
}

/// Which method produced [`MaxUsersAtQos::users`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QosMethod {
    /// The M/M/c model of this module, capped by the other resources.
    Model,
    /// A measured sweep's QoS capacity.
    Sweep,
}

/// The users the host carries with the weighted p95 within the limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaxUsersAtQos {
    /// The answer, whole users.
    pub users: u64,
    /// Which method gave it.
    pub method: QosMethod,
    /// What limits it: `cpu queueing`, a resource at its capacity
    /// (`memory`, `disk_iops` …), `response time alone` or `sweep`.
    pub limited_by: String,
    /// The model's answer (whole users), when it could be computed.
    pub model_users: Option<u64>,
    /// The sweep's answer, when given.
    pub sweep_users: Option<f64>,
    /// (model − sweep) / sweep, percent, when both exist.
    pub model_vs_sweep_pct: Option<f64>,
    /// The weighted p95 of the actions measured alone, ms.
    pub weighted_p95_alone_ms: Option<f64>,
    /// The limit, ms.
    pub p95_limit_ms: f64,
    /// The model, in one sentence.
    pub method_statement: String,
    /// When the model and the measurement differ by more than
    /// [`DISAGREEMENT_PCT`]: both figures, which to trust and why.
    pub trust: Option<String>,
}

/// A model and a measurement further apart than this, in percent of the
/// measurement, are shown side by side with which to trust: the planner
/// was validated to within 15% (docs/capacity.md), so a larger gap means
/// the model misses something on this server.
pub const DISAGREEMENT_PCT: f64 = 15.0;

/// Which of a model's `model` users and a sweep's measured capacity to
/// trust when they differ by `pct` (model − sweep, percent of the sweep);
/// `None` within [`DISAGREEMENT_PCT`].
pub(crate) fn which_to_trust(model: u64, sweep: &SweepCapacity, pct: f64) -> Option<String> {
    if pct.abs() <= DISAGREEMENT_PCT {
        return None;
    }
    let both = format!(
        "the model says {model} users and the sweep measured {:.0} ({pct:+.0}%)",
        sweep.users
    );
    Some(if sweep.lower_bound && pct > 0.0 {
        format!(
            "{both}; the sweep's figure is only a lower bound (every step passed), so it does not contradict the model: trust the sweep up to {:.0} users and sweep further before relying on the model's {model}",
            sweep.users
        )
    } else {
        format!(
            "{both}; trust the sweep: it measured this server carrying the whole mix at once, while the model adds up each task's cost measured alone and misses what users share (processes, caches, indexes) and what they contend for (locks, the disk, the client); use the model for other hosts only scaled by the sweep's ratio ({:.2})",
            sweep.users / model.max(1) as f64
        )
    })
}

/// Everything the model needs, in the plan's units.
pub(crate) struct QosInputs {
    pub(crate) host_cores: f64,
    pub(crate) base_cores: f64,
    pub(crate) cores_per_user: f64,
    /// Mean CPU per action over the mix, ms.
    pub(crate) service_ms: f64,
    /// Weighted p95 of the actions alone, ms.
    pub(crate) weighted_p95_alone_ms: f64,
}

/// The predicted weighted p95 at `users`, ms.
pub(crate) fn predicted_weighted_p95(q: &QosInputs, users: f64) -> f64 {
    let busy = q.base_cores + users * q.cores_per_user;
    q.weighted_p95_alone_ms + queue_wait_p95_ms(q.host_cores, busy, q.service_ms)
}

/// The largest user count (real) whose predicted weighted p95 is within
/// `limit_ms`, below CPU saturation; found by bisection (the prediction
/// rises with users).
pub(crate) fn model_users(q: &QosInputs, limit_ms: f64) -> f64 {
    if q.weighted_p95_alone_ms > limit_ms || q.base_cores >= q.host_cores {
        return 0.0;
    }
    if q.cores_per_user <= 0.0 {
        return f64::INFINITY;
    }
    let saturation = (q.host_cores - q.base_cores) / q.cores_per_user;
    let (mut lo, mut hi) = (0.0, saturation);
    for _ in 0..200 {
        let mid = lo + (hi - lo) / 2.0;
        if predicted_weighted_p95(q, mid) <= limit_ms {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-6 * saturation.max(1.0) {
            break;
        }
    }
    lo
}
