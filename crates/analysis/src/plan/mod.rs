//! The capacity planner: what each task costs the server, what a population
//! of users needs, which resource runs out first, and what it costs.
//!
//! Pure like the rest of this crate: the measurements come in as numbers,
//! the answers go out as serializable values. `docs/planner.md` describes
//! the model and traces every number to a seed. The parts:
//!
//! - **Atomic-task costs** ([`TaskCost`], [`derive_task_cost`], [`TaskSet`]),
//!   after seed 001's PALM profiling: each task run alone at a steady rate
//!   gives server CPU milliseconds, disk and network KiB and I/Os per task
//!   (idle baseline subtracted), its response times, and the *high average*
//!   of CPU, disk and network utilization with its standard deviation
//!   (Tables 3-2 to 3-4). Tasks are ranked by CPU cost and the stressful ones
//!   are singled out.
//! - **The memory model** ([`fit_memory`], [`MemoryFit`]): seed 000's
//!   formula, base + n × per-connection + n × per-thread, fitted by least
//!   squares to (open sessions, memory) points as base + n × per-session.
//! - **The plan** ([`Plan::compute`]): task costs × a profile's per-user
//!   rates × user counts → CPU cores, memory, disk IOPS and bandwidth,
//!   network, at a headroom; which resource of a host runs out first and at
//!   how many users; the users the host carries within the QoS limit
//!   ([`MaxUsersAtQos`], an M/M/c queueing model or a measured sweep); a
//!   sizing table like seed 000's; the uncertainty carried from the
//!   measurements; and seed 004's price/performance ([`PricePerformance`]).
//!   [`per_user_rates`] maps a profile's rates onto the measured tasks.
//! - **The matrix's relationships** ([`Matrix::build`], [`Relationship`]):
//!   seed 003 Table 3, which measurements rise, fall or stay as memory or
//!   CPUs are added.

mod matrix;
mod memory;
mod model;
mod price;
mod qos;
mod rates;
mod significance;
mod tasks;

pub use matrix::{
    DEFAULT_RELATIONSHIP_THRESHOLD_PCT, Direction, LOW_UTILISATION_PCT, LineTrend,
    MATRIX_FORMAT_VERSION, METRIC_CPU_PCT, METRIC_WEIGHTED_P95_MS, Matrix, MatrixCell,
    Relationship, Trend, change_pct, latency_spread,
};
pub use memory::{
    MemoryFit, MemoryPoint, WorkingMemory, fit_memory, use_working_memory, working_memory_fit,
};
pub use model::{
    DEFAULT_HEADROOM, Exhaustion, HostCapacity, PLAN_FORMAT_VERSION, PerUserDemand, Plan,
    PlanRequest, PlanRow, RateUse, Resource, memory_to_install,
};
pub use price::{Price, PricePerformance, price_performance};
pub use qos::{
    DISAGREEMENT_PCT, MaxUsersAtQos, QOS_PERCENTILE_TAIL, QosMethod, QosModel, SweepCapacity,
    erlang_c, queue_wait_p95_ms,
};
pub use rates::{ProfileRates, per_user_rates};
pub use significance::{
    EXTRAPOLATION_FACTOR, Extrapolation, MIN_MEMORY_R_SQUARED, Significance, Significances,
    memory_fit_verdict,
};
pub use tasks::{
    BaselineSummary, DEFAULT_STRESSFUL_FACTOR, HighAverageFn, HighAverageValue, IdleBaseline,
    LatencyMeasurement, MIN_HIGH_AVERAGE_WINDOW_S, NetSource, Series, TASKS_FORMAT_VERSION,
    TaskCost, TaskRun, TaskSet, TaskUnit, WindowMeasurement, derive_task_cost, stressful_flags,
};

/// What can go wrong in planning.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// An input number is NaN, infinite or out of its range.
    #[error("{what} must be {range}; got {value}")]
    OutOfRange {
        /// Which input.
        what: String,
        /// The allowed range, in words.
        range: &'static str,
        /// The value given.
        value: f64,
    },
    /// A task run completed no task, so nothing can be divided by it.
    #[error("task {0:?} completed no task in its window")]
    NoTasks(String),
    /// The memory fit needs at least two different session counts.
    #[error("the memory model needs points at 2 or more different session counts; got {0}")]
    TooFewMemoryPoints(usize),
    /// Two matrix cells have the same shape.
    #[error("the matrix has two cells for {cpus} CPUs × {memory_bytes} bytes")]
    DuplicateCell {
        /// CPUs of the shape.
        cpus: f64,
        /// Memory of the shape.
        memory_bytes: u64,
    },
    /// No user count to plan for.
    #[error("the plan needs at least one user count")]
    NoUserCounts,
    /// A price that is not an amount with an optional currency.
    #[error("price {0:?}: expected an amount like 2659 or 2659USD")]
    BadPrice(String),
}

/// Checks that `value` is finite and at least `min` (strictly above when
/// `strict`).
fn check(what: &str, value: f64, min: f64, strict: bool) -> Result<f64, PlanError> {
    let ok = value.is_finite() && if strict { value > min } else { value >= min };
    if ok {
        Ok(value)
    } else {
        Err(PlanError::OutOfRange {
            what: what.to_owned(),
            range: match (strict, min == 0.0) {
                (true, true) => "a finite number above 0",
                (false, true) => "a finite number at least 0",
                _ => "a finite number in range",
            },
            value,
        })
    }
}
