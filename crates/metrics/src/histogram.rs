//! Latency histograms as Prometheus reads them: fixed upper bounds in
//! seconds, counted live.
//!
//! The run's record keeps an HdrHistogram per action per interval; a scrape
//! wants cumulative counts at fixed bounds (`le`) over the whole run. Counting
//! into the bounds as each event arrives gives exact `le` semantics (a sample
//! equal to a bound is in that bucket), costs one binary search over a score
//! of bounds per event, and leaves a scrape nothing to walk.

use std::time::Duration;

/// Bounds for user actions: 1 ms to 60 s, with the MMB's 1 s QoS limit
/// among them, so that the share of actions over the limit is one bucket's
/// ratio.
pub const ACTION_LATENCY_BOUNDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// Bounds for delivery (submission until the recipient noticed): Dovecot
/// alone holds an IDLE notification 0.5 s, and a saturated queue takes
/// minutes.
pub const DELIVERY_LATENCY_BOUNDS: &[f64] = &[
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// Bounds for the generator's scheduling lag: the probe's own tick is 10 ms,
/// and anything past 100 ms means the client is the bottleneck.
pub const SCHEDULING_LAG_BOUNDS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Samples counted into fixed upper bounds (seconds), plus their sum.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, then one for everything above the last
    /// (`+Inf`); not cumulative.
    counts: Vec<u64>,
    sum_seconds: f64,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending).
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum_seconds: 0.0,
        }
    }

    /// Counts one sample.
    pub fn observe(&mut self, value: Duration) {
        let seconds = value.as_secs_f64();
        let bucket = self.bounds.partition_point(|&bound| bound < seconds);
        self.counts[bucket] += 1;
        self.sum_seconds += seconds;
    }

    /// Every bound with the number of samples at or below it, ending with
    /// `+Inf` (all samples): the `_bucket` series.
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let bounds = self.bounds.iter().copied().chain([f64::INFINITY]);
        bounds.zip(self.counts.iter().scan(0_u64, |total, n| {
            *total += n;
            Some(*total)
        }))
    }

    /// Samples counted: the `_count` series.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Sum of the samples in seconds: the `_sum` series.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_seconds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_on_a_bound_is_counted_in_that_bucket() {
        let mut h = Histogram::new(&[0.1, 1.0]);
        h.observe(Duration::from_millis(100));
        h.observe(Duration::from_millis(101));
        h.observe(Duration::from_secs(5));
        let buckets: Vec<_> = h.cumulative().collect();
        assert_eq!(buckets, vec![(0.1, 1), (1.0, 2), (f64::INFINITY, 3)]);
        assert_eq!(h.count(), 3);
        assert!((h.sum_seconds() - 5.201).abs() < 1e-9);
    }

    #[test]
    fn every_bound_list_ascends() {
        for bounds in [
            ACTION_LATENCY_BOUNDS,
            DELIVERY_LATENCY_BOUNDS,
            SCHEDULING_LAG_BOUNDS,
        ] {
            assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
        }
    }
}
