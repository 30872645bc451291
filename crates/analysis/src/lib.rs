//! Turns what a peakhour run measured into a verdict.
//!
//! This is the analyser of DESIGN.md: a pure layer with no sockets, clocks
//! or async runtime. Its parts:
//!
//! - **Recording** ([`IntervalRecorder`], [`DeliveryRecorder`]): the engine
//!   feeds every action with its intended start, actual start and end, every
//!   protocol command, counters and its own CPU and scheduling lag. The
//!   recorder keeps one mergeable HdrHistogram per action per interval
//!   (default 10 s), never a list of samples, and encodes closed intervals so
//!   memory stays small over a 24-hour run.
//! - **The run record** ([`RunRecord`]): metadata, intervals and delivery,
//!   serializable so `peakhour report` can redo the analysis later.
//! - **The QoS rule** ([`qos`]): the one definition of "within QoS" that
//!   the run's verdict, the sweep and `capacity` share.
//! - **The summary** ([`Summary::compute`]): steady-phase intervals only,
//!   merged per action into p50/p95/p99/max/mean, the weighted p95 score,
//!   MMB-style throughput, delivery reconciliation, the client-bound check and
//!   the QoS verdict.
//! - **The capacity curve** ([`capacity`]): peak, shape after the peak, QoS
//!   capacity, USL fit and knee of any load/throughput table, and the
//!   sweep's rules ([`capacity::sweep`]: steps, early stop, the QoS limit,
//!   the capacity statement).
//! - **The planner** ([`plan`]): atomic-task costs, the memory model, the
//!   sizing plan for a user count, and the CPU × memory matrix's
//!   relationships.
//! - **The monitor's samples and their statistics** ([`monitor`]): typed
//!   metric keys, the bounded table of samples and `monitor.csv` read back,
//!   window statistics, seed 001's high averages, the USE summary that
//!   names the bottleneck, and the findings the summary carries.
//! - **Statistics shared by every layer**: the one quantile definition
//!   ([`quantile`], nearest rank, HdrHistogram's) and the bootstrap of
//!   `peakhour compare` ([`bootstrap`]).
//!
//! # Measurement rules
//!
//! - Latency runs from the **intended** start to the end
//!   ([`ActionTiming::latency`]); an action that started late is charged its
//!   lateness and counted as a late start.
//! - Percentiles are HdrHistogram's (the highest value equivalent to the
//!   sample at that rank, like LoadSim's lslog, which "picks the time that is
//!   higher than 95 percent of the times"), reported in milliseconds to the
//!   histogram's 3 significant digits. The QoS check compares those reported
//!   numbers, so a p95 of exactly 1000 ms passes a 1000 ms limit.
//! - Failed attempts are counted by kind and kept out of the latency
//!   histograms; an action whose error ratio exceeds
//!   [`QosThresholds::max_error_ratio`] fails QoS.
//!
//! # The weighted p95 score
//!
//! Seed 002 reports one "weighted 95th percentile response-time score"
//! (176 ms for 15,500 MMB) next to per-action p95s (Table A-3), and calls a
//! score of 1000 ms or less acceptable. It does not print the formula; each
//! action is weighted by how often it happens. peakhour defines it as
//!
//! ```text
//! weighted_p95 = sum over actions a of (w_a * p95_a) / sum of w_a
//! ```
//!
//! where `w_a` is the profile's actions per user per simulated day
//! ([`RunMeta::action_weights`], e.g. read 81.3, send 14.18, check inbox 12
//! from seed 002 Table 3) and `p95_a` the action's steady-state p95. Actions
//! without a sample or without a weight are left out and listed in
//! [`Score::excluded`]. If the profile gives no weights, the measured
//! steady-state counts are the weights. Using the profile's frequencies
//! rather than measured counts keeps the score comparable between runs; the
//! measured-frequency alternative, the p95 of all samples pooled, is reported
//! beside it as [`Score::pooled_p95_ms`].
#![deny(missing_docs)]

pub mod bootstrap;
pub mod capacity;
mod describe;
mod histogram;
mod merge;
pub mod monitor;
pub mod plan;
pub mod qos;
pub mod quantile;
mod record;
mod recorder;
mod redact;
mod server;
mod shard;
mod state_checks;
mod summary;
mod window;

pub use histogram::{
    EncodedHistogram, HIGHEST_TRACKABLE_US, LOWEST_DISCERNIBLE_US, LatencyHistogram,
    SIGNIFICANT_DIGITS,
};
pub use merge::{MergeError, Merged, merge_shards};
pub use record::{
    ActionInterval, ClientInterval, Completion, DEFAULT_INTERVAL, DEFAULT_MAX_ERROR_RATIO,
    DEFAULT_P95_LIMIT_MS, DeliveryRecord, DeliveryRecorder, IntervalRecord, LOST_LIST_CAP,
    LostRecipient, Phase, PhaseLengths, QosThresholds, RUN_RECORD_VERSION, Recovery, RunMeta,
    RunRecord, counters, merge_interval_lists,
};
pub use recorder::{
    ActionTiming, DEFAULT_LATE_START_THRESHOLD, ENCODE_FAILURES_COUNTER, IntervalArchive,
    IntervalRecorder, Outcome, RecorderConfig,
};
pub use redact::{REDACTED, Redactor};
pub use server::{
    ConnectionLimit, ERROR_EXAMPLE_MAX_CHARS, ErrorExample, ErrorGroup, MtaDelivery, ServerRecord,
    connection_limit, error_groups, example_for,
};
pub use shard::{CrossCopy, CrossShardDeliveries, LATE_START_TOLERANCE_MS, ShardMark};
pub use state_checks::{
    EXAMPLES_IN_SUMMARY, KindCount, SESSION_LOGS_KEPT, StateChecks, StateViolation,
    VIOLATIONS_KEPT, session_log_file,
};
pub use summary::{
    ActionSummary, BITS_PER_MEGABIT, Bottleneck, CLIENT_CPU_BUSY_INTERVALS_FRACTION,
    CLIENT_CPU_LIMIT_FRACTION, ClientSummary, DELIVERY_LATENCY_INCLUDES, DeliverySummary,
    LatencySummary, MTA_UNKNOWN_NOT_LAB, PANIC_ERROR_KIND, QosFailure, QosReport,
    ResourceHighAverage, SCHEDULING_LAG_P99_LIMIT_MS, Score, ServerLimits, SteadyWindow, Summary,
    Throughput, Verdict, WeightSource, delivery_latency_includes,
};
pub use window::{LOGON_ACTION, LogonStorm, WindowPlan, WindowRates};

/// What can go wrong in analysis.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// A histogram could not be encoded, decoded or merged.
    #[error("histogram: {0}")]
    Histogram(String),
    /// Two interval records to merge do not cover the same time.
    #[error("intervals do not line up: {left_start_us} µs vs {right_start_us} µs")]
    IntervalMismatch {
        /// Start of the interval merged into.
        left_start_us: u128,
        /// Start of the interval merged from.
        right_start_us: u128,
    },
    /// Two interval lists to merge have different lengths.
    #[error("interval lists differ in length: {left} vs {right}")]
    IntervalCount {
        /// Intervals merged into.
        left: usize,
        /// Intervals merged from.
        right: usize,
    },
    /// The recorder was configured with a zero interval.
    #[error("the interval length must be greater than zero")]
    ZeroInterval,
    /// Closed intervals stored as they closed (the run's journal) could not
    /// be read back at the end.
    #[error("the closed intervals stored during the run could not be read back: {0}")]
    Archive(String),
}

/// Serde helpers storing `Duration`s as whole milli- or microseconds.
mod serde_duration {
    macro_rules! unit {
        ($name:ident, $to:ident, $from:ident) => {
            pub(crate) mod $name {
                use serde::{Deserialize, Deserializer, Serializer};
                use std::time::Duration;

                pub(crate) fn serialize<S: Serializer>(
                    d: &Duration,
                    s: S,
                ) -> Result<S::Ok, S::Error> {
                    s.serialize_u64(u64::try_from(d.$to()).unwrap_or(u64::MAX))
                }

                pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
                    d: D,
                ) -> Result<Duration, D::Error> {
                    u64::deserialize(d).map(Duration::$from)
                }
            }
        };
    }
    unit!(millis, as_millis, from_millis);
    unit!(micros, as_micros, from_micros);
}
