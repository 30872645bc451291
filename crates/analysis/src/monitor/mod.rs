//! The monitor's samples as data, and their pure analysis: no I/O, no
//! clock, deterministic. The samplers live in `peakhour-monitor`; what they
//! produce, and everything computed from it, lives here, so that the report
//! and the run directory read `monitor.csv` without the samplers' runtime.
//!
//! * [`MetricKey`] names every metric by family, instance and field, and
//!   builds and parses `monitor.csv`'s column names ([`columns`] holds the
//!   machine-wide ones);
//! * [`MetricTable`] keeps the samples as bounded columns over one time
//!   axis, and reads a `monitor.csv` back;
//! * [`window_stats`]: steady-state mean, p95 and max of a metric over a
//!   time window;
//! * [`high_average`]: seed 001's *high average*, the highest mean over any
//!   sustained window (at least 30 s by default) with its standard deviation;
//! * [`use_summary`]: utilization, saturation and errors per resource, and
//!   the one-line bottleneck verdict;
//! * [`mail_queue_at_end`]: what Postfix still held at the last sample;
//! * [`findings`]: all of it in the run summary's terms (the key metrics'
//!   high averages and the [`Bottleneck`](crate::Bottleneck)).
//!
//! Inputs are a time axis and values with NaN for "no value", reached
//! through the [`Columns`] trait, so the statistics do not depend on how the
//! samples were stored.

pub mod columns;
mod fields;
mod findings;
mod metric_key;
pub mod server;
mod session;
mod stats;
mod table;
mod use_summary;

pub use fields::{CoreField, DiskField, GroupField, NetField, SystemField, Unit};
pub use findings::{Findings, findings};
pub use metric_key::{Family, Field, MetricKey, instances_with};
pub use session::{MonitorCost, MonitorReport};
pub use stats::{
    DEFAULT_HIGH_AVERAGE_WINDOW_S, HighAverage, MetricSummary, TimeWindow, WindowStats,
    high_average, sample_period, summarize_columns, window_stats,
};
pub use table::{DEFAULT_MAX_ROWS, MetricTable, MonitorCsvError};
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

/// Messages in Postfix's incoming, active and deferred queues at the last
/// sample that has any of them; `None` when no queue was monitored. A run
/// that ends with messages queued had deliveries still on their way, so its
/// unseen copies are not necessarily gone.
pub fn mail_queue_at_end(cols: &dyn Columns) -> Option<u64> {
    use self::columns as col;
    let queues: Vec<Vec<f64>> = [
        col::POSTFIX_QUEUE_INCOMING,
        col::POSTFIX_QUEUE_ACTIVE,
        col::POSTFIX_QUEUE_DEFERRED,
    ]
    .iter()
    .filter_map(|name| cols.values(name))
    .collect();
    let rows = queues.iter().map(Vec::len).max()?;
    (0..rows).rev().find_map(|row| {
        let present: Vec<f64> = queues
            .iter()
            .filter_map(|q| q.get(row).copied())
            .filter(|v| v.is_finite())
            .collect();
        (!present.is_empty()).then(|| present.iter().sum::<f64>().max(0.0).round() as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Queues(Vec<f64>, Vec<(&'static str, Vec<f64>)>);

    impl Columns for Queues {
        fn times(&self) -> &[f64] {
            &self.0
        }
        fn names(&self) -> Vec<&str> {
            self.1.iter().map(|(n, _)| *n).collect()
        }
        fn values(&self, name: &str) -> Option<Vec<f64>> {
            self.1
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn the_last_sample_with_a_queue_reading_counts() {
        let nan = f64::NAN;
        let cols = Queues(
            vec![1.0, 2.0, 3.0],
            vec![
                ("postfix_queue_incoming", vec![0.0, 4.0, nan]),
                ("postfix_queue_active", vec![1.0, 20.0, nan]),
                ("postfix_queue_deferred", vec![0.0, 3.0, nan]),
                ("postfix_queue_hold", vec![0.0, 99.0, 99.0]),
            ],
        );
        // Row 3 has no queue reading; row 2 has 4 + 20 + 3 (hold is not on its way).
        assert_eq!(mail_queue_at_end(&cols), Some(27));
    }

    #[test]
    fn no_queue_monitored_is_none() {
        let cols = Queues(vec![1.0], vec![("cpu_busy_pct", vec![5.0])]);
        assert_eq!(mail_queue_at_end(&cols), None);
        let empty = Queues(vec![1.0], vec![("postfix_queue_active", vec![f64::NAN])]);
        assert_eq!(mail_queue_at_end(&empty), None);
    }
}
