//! What a monitoring session produced, as data: every sample (bounded) and
//! what sampling cost. The monitor fills it; the report words it, and
//! [`MonitorReport::cost_line`] is its one-line account of the cost.

use std::time::Duration;

use super::MetricTable;

/// What a finished monitor hands back.
#[derive(Debug, Clone)]
pub struct MonitorReport {
    /// Every sample (bounded), as columns.
    pub table: MetricTable,
    /// What sampling cost.
    pub cost: MonitorCost,
    /// Samples that failed (e.g. node_exporter unreachable for a tick).
    pub errors: u64,
    /// The last such failure.
    pub last_error: Option<String>,
    /// Metrics that appeared after the CSV header and are not in the file.
    pub dropped_columns: Vec<String>,
}

/// What sampling cost over a run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MonitorCost {
    /// Samples taken (successful or not).
    pub samples: u64,
    /// CPU time of sampling and writing, summed.
    pub total_cpu: Duration,
    /// The most expensive single sample.
    pub max_sample_cpu: Duration,
    /// Wall time the monitor ran.
    pub wall: Duration,
}

impl MonitorCost {
    /// Counts one sample that took `cpu` of CPU time.
    pub fn add(&mut self, cpu: Duration) {
        self.samples += 1;
        self.total_cpu += cpu;
        self.max_sample_cpu = self.max_sample_cpu.max(cpu);
    }

    /// Mean CPU per sample, µs.
    pub fn mean_sample_us(&self) -> f64 {
        if self.samples == 0 {
            return 0.0;
        }
        self.total_cpu.as_secs_f64() * 1e6 / self.samples as f64
    }

    /// CPU used as a percentage of one core over the run's wall time.
    pub fn pct_of_one_core(&self) -> f64 {
        if self.wall.is_zero() {
            return 0.0;
        }
        self.total_cpu.as_secs_f64() / self.wall.as_secs_f64() * 100.0
    }
}

impl MonitorReport {
    /// What the monitor cost, with its failures and late columns:
    /// `monitor: 60 samples, 850 µs CPU per sample, 0.09% of one core`.
    pub fn cost_line(&self) -> String {
        let mut line = format!(
            "monitor: {} samples, {:.0} µs CPU per sample, {:.2}% of one core",
            self.cost.samples,
            self.cost.mean_sample_us(),
            self.cost.pct_of_one_core()
        );
        if self.errors > 0 {
            line.push_str(&format!(
                "; {} samples failed (last: {})",
                self.errors,
                self.last_error.as_deref().unwrap_or("?")
            ));
        }
        if !self.dropped_columns.is_empty() {
            line.push_str(&format!(
                "; not in the CSV (appeared late): {}",
                self.dropped_columns.join(", ")
            ));
        }
        line
    }
}
