//! Pure analysis of monitor samples: no I/O, no clock, deterministic.
//!
//! * [`window_stats`]: steady-state mean, p95 and max of a metric over a
//!   time window;
//! * [`high_average`]: seed 001's *high average*, the highest mean over any
//!   sustained window (at least 30 s by default) with its standard deviation;
//! * [`use_summary`]: utilization, saturation and errors per resource, and
//!   the one-line bottleneck verdict.
//!
//! Inputs are a time axis and values with NaN for "no value", reached
//! through the [`Columns`] trait, so this module does not depend on how the
//! samples were stored (it is meant to move into the analysis layer).

mod stats;
mod use_summary;

pub use stats::{
    DEFAULT_HIGH_AVERAGE_WINDOW_S, HighAverage, MetricSummary, TimeWindow, WindowStats,
    high_average, summarize_columns, window_stats,
};
pub use use_summary::{Resource, ResourceUse, Thresholds, UseSummary, use_summary};

/// Named metric columns over one time axis.
pub trait Columns {
    /// Sample times, seconds, ascending.
    fn times(&self) -> &[f64];
    /// Every column's name.
    fn names(&self) -> Vec<&str>;
    /// One column, same length as [`Columns::times`], NaN = no value.
    fn values(&self, name: &str) -> Option<Vec<f64>>;
}
