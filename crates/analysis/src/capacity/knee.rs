//! Knee detection with Kneedle (Satopää, Albrecht, Irwin and Raghavan,
//! "Finding a 'Kneedle' in a Haystack: Detecting Knee Points in System
//! Behavior", ICDCS workshops 2011).

use serde::{Deserialize, Serialize};

/// Kneedle's default sensitivity S: how many "average x gaps" the difference
/// curve must fall below a local maximum before that maximum is a knee.
pub const DEFAULT_SENSITIVITY: f64 = 1.0;

/// A knee found by Kneedle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The load at the knee.
    pub load: f64,
    /// The throughput at the knee.
    pub throughput: f64,
    /// Index of the knee among the points sorted by load.
    pub index: usize,
    /// The normalized difference curve's value at the knee (`y_n − x_n`).
    pub difference: f64,
    /// The threshold the difference curve fell below after the knee.
    pub threshold: f64,
    /// The sensitivity S used.
    pub sensitivity: f64,
}

/// Finds the first knee of a concave increasing curve, offline.
///
/// `points` are `(x, y)` sorted by strictly increasing x. The steps are the
/// paper's, without its optional smoothing (sweeps have few points, and a
/// smoothing spline would move the knee off the measured loads):
///
/// 1. normalize x and y to `[0, 1]` by their minimum and maximum;
/// 2. take the difference curve `d_i = y_n,i − x_n,i`;
/// 3. find its local maxima (`d_{i−1} < d_i >= d_{i+1}`);
/// 4. give each local maximum the threshold
///    `T = d_lmx − S · Σ(x_n,i+1 − x_n,i) / (n − 1) = d_lmx − S / (n − 1)`;
/// 5. scan forward: if the difference curve falls below T before the next
///    local maximum, that local maximum is a knee; reaching the next local
///    maximum first resets the threshold.
///
/// Retrograde points after a throughput peak are kept: they make the
/// difference curve fall, as they should. `None` with fewer than three
/// points, a flat curve, or no local maximum that passes its threshold.
pub fn kneedle(points: &[(f64, f64)], sensitivity: f64) -> Option<Knee> {
    let n = points.len();
    if n < 3 || !sensitivity.is_finite() || sensitivity < 0.0 {
        return None;
    }
    let (x_min, x_max) = (points[0].0, points[n - 1].0);
    let (y_min, y_max) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
    if x_max.partial_cmp(&x_min) != Some(std::cmp::Ordering::Greater)
        || y_max.partial_cmp(&y_min) != Some(std::cmp::Ordering::Greater)
    {
        return None;
    }
    let difference: Vec<f64> = points
        .iter()
        .map(|&(x, y)| (y - y_min) / (y_max - y_min) - (x - x_min) / (x_max - x_min))
        .collect();
    let maxima: Vec<usize> = (1..n - 1)
        .filter(|&i| difference[i] > difference[i - 1] && difference[i] >= difference[i + 1])
        .collect();
    let step = sensitivity / (n - 1) as f64;
    for (k, &lmx) in maxima.iter().enumerate() {
        let threshold = difference[lmx] - step;
        let next = maxima.get(k + 1).copied().unwrap_or(n);
        if difference[lmx + 1..next].iter().any(|&d| d < threshold) {
            return Some(Knee {
                load: points[lmx].0,
                throughput: points[lmx].1,
                index: lmx,
                difference: difference[lmx],
                threshold,
                sensitivity,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn finds_the_knee_of_a_saturating_curve() {
        // y = min(x, 5): the knee is at 5.
        let points: Vec<(f64, f64)> = (0..=10)
            .map(|x| (f64::from(x), f64::from(x.min(5))))
            .collect();
        let knee = kneedle(&points, DEFAULT_SENSITIVITY).unwrap();
        assert_eq!(knee.load, 5.0);
        assert!((knee.difference - 0.5).abs() < 1e-12);
    }

    #[test]
    fn no_knee_on_a_line_or_too_few_points() {
        let line: Vec<(f64, f64)> = (0..10)
            .map(|x| (f64::from(x), 2.0 * f64::from(x)))
            .collect();
        assert_eq!(kneedle(&line, 1.0), None);
        assert_eq!(kneedle(&[(0.0, 0.0), (1.0, 1.0)], 1.0), None);
        assert_eq!(kneedle(&[(0.0, 1.0), (1.0, 1.0), (2.0, 1.0)], 1.0), None);
    }

    #[test]
    fn higher_sensitivity_is_more_conservative() {
        // A gentle curve: with a large S the difference never falls far
        // enough below its maximum.
        let points: Vec<(f64, f64)> = (1..=10)
            .map(|x| (f64::from(x), f64::from(x).sqrt()))
            .collect();
        assert!(kneedle(&points, 0.0).is_some());
        assert_eq!(kneedle(&points, 50.0), None);
    }
}
