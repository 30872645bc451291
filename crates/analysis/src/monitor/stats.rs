//! Window statistics and the high average.

use crate::describe::{mean_sd, median};
use crate::quantile::quantile_sorted;

use super::Columns;

/// Seed 001: "sustained means more than 30 seconds of activity".
pub const DEFAULT_HIGH_AVERAGE_WINDOW_S: f64 = 30.0;

/// A span of sample times, `start_s <= t < end_s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeWindow {
    /// First time included.
    pub start_s: f64,
    /// First time excluded.
    pub end_s: f64,
}

impl TimeWindow {
    /// Every sample.
    pub const ALL: Self = Self {
        start_s: f64::NEG_INFINITY,
        end_s: f64::INFINITY,
    };

    /// `[start_s, end_s)`.
    pub fn new(start_s: f64, end_s: f64) -> Self {
        Self { start_s, end_s }
    }

    fn contains(&self, t: f64) -> bool {
        t >= self.start_s && t < self.end_s
    }
}

/// The finite values (and their times) inside `window`.
fn points(times: &[f64], values: &[f64], window: TimeWindow) -> (Vec<f64>, Vec<f64>) {
    times
        .iter()
        .zip(values)
        .filter(|(t, v)| window.contains(**t) && v.is_finite())
        .map(|(t, v)| (*t, *v))
        .unzip()
}

/// Mean, 95th percentile and maximum of a metric over a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowStats {
    /// Arithmetic mean.
    pub mean: f64,
    /// 95th percentile, by peakhour's one definition
    /// ([`crate::quantile`]: the nearest rank ⌈0.95·n⌉).
    pub p95: f64,
    /// Largest value.
    pub max: f64,
    /// Values used (missing ones are skipped).
    pub samples: usize,
}

/// Statistics of the values whose time is in `window`; `None` if there are none.
pub fn window_stats(times: &[f64], values: &[f64], window: TimeWindow) -> Option<WindowStats> {
    let (_, mut v) = points(times, values, window);
    if v.is_empty() {
        return None;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    v.sort_by(f64::total_cmp);
    Some(WindowStats {
        mean,
        p95: quantile_sorted(&v, 0.95)?,
        max: v[v.len() - 1],
        samples: v.len(),
    })
}

/// Median of the values whose time is in `window`; `None` if there are none.
pub(crate) fn window_median(times: &[f64], values: &[f64], window: TimeWindow) -> Option<f64> {
    let (_, mut v) = points(times, values, window);
    median(&mut v)
}

/// Seed 001's high average: the highest sustained level of a metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HighAverage {
    /// Mean over the window found.
    pub mean: f64,
    /// Sample standard deviation (n − 1) of the values in it: how choppy
    /// the plateau is (0 for one value).
    pub std_dev: f64,
    /// Time of the window's first sample.
    pub start_s: f64,
    /// Time of the window's last sample.
    pub end_s: f64,
    /// Values in the window.
    pub samples: usize,
    /// The whole series spans less than the minimum window, so this is the
    /// mean of all of it (as seed 001 did for its 10-second test).
    pub shorter_than_window: bool,
}

/// The median spacing of sample times (the upper middle one of an even
/// count): the duration one sample stands for; `None` with fewer than two
/// distinct times.
pub fn sample_period(times: &[f64]) -> Option<f64> {
    let mut gaps: Vec<f64> = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .collect();
    gaps.sort_by(f64::total_cmp);
    gaps.get(gaps.len() / 2).copied()
}

/// The highest mean over any run of consecutive samples covering at least
/// `min_window_s` seconds (each sample covers the median sample spacing, so
/// 30 samples at 1 s make a 30 s window), with the standard deviation of
/// that run. Missing values are skipped.
///
/// Among windows of equal mean the earliest is taken, then extended to the
/// right while the mean does not fall: a flat plateau is reported whole.
/// `None` if the series has no value; a series shorter than the window
/// gives its overall mean with [`HighAverage::shorter_than_window`].
///
/// Method: the best mean `m` over windows of at least `k` samples is found
/// by bisection on `m`, testing "is there a window with Σ(x − m) ≥ 0" in one
/// pass with prefix sums (O(n) per step, ~50 steps).
pub fn high_average(times: &[f64], values: &[f64], min_window_s: f64) -> Option<HighAverage> {
    let (t, x) = points(times, values, TimeWindow::ALL);
    let n = x.len();
    if n == 0 {
        return None;
    }
    let dt = sample_period(&t).unwrap_or(1.0);
    let span = |i: usize, j: usize| t[j] - t[i] + dt;
    // Tolerance for spans made of float sums (29 × 1.0 + 1.0 vs 30.0).
    let long_enough = |i: usize, j: usize| span(i, j) >= min_window_s - dt * 1e-6;
    if !long_enough(0, n - 1) {
        // `x` is not empty (checked above).
        let (mean, std_dev) = mean_sd(&x).unwrap_or_default();
        return Some(HighAverage {
            mean,
            std_dev,
            start_s: t[0],
            end_s: t[n - 1],
            samples: n,
            shorter_than_window: true,
        });
    }
    let mut prefix = vec![0.0; n + 1];
    for (k, v) in x.iter().enumerate() {
        prefix[k + 1] = prefix[k] + v;
    }
    let mean_of = |i: usize, j: usize| (prefix[j + 1] - prefix[i]) / (j + 1 - i) as f64;
    let feasible = |m: f64| {
        let mut found = false;
        scan_windows(&prefix, &long_enough, m, |i, j| {
            found = mean_of(i, j) >= m;
            found
        });
        found
    };
    let mut lo = x.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tolerance = (hi - lo).abs().max(hi.abs()).max(1.0) * 1e-12;
    for _ in 0..200 {
        if hi - lo <= tolerance {
            break;
        }
        let mid = lo + (hi - lo) / 2.0;
        if feasible(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // The windows that are best for m = lo are (within tolerance) the
    // best overall; take the one with the highest exact mean, earliest first.
    let mut best: Option<(usize, usize, f64)> = None;
    scan_windows(&prefix, &long_enough, lo, |i, j| {
        let m = mean_of(i, j);
        if best.is_none_or(|(_, _, b)| m > b + tolerance) {
            best = Some((i, j, m));
        }
        false
    });
    let (i, mut j, mut mean) = best?;
    while j + 1 < n && mean_of(i, j + 1) >= mean - tolerance {
        j += 1;
        mean = mean_of(i, j);
    }
    // A window holds at least its first sample.
    let (mean, std_dev) = mean_sd(&x[i..=j]).unwrap_or_default();
    Some(HighAverage {
        mean,
        std_dev,
        start_s: t[i],
        end_s: t[j],
        samples: j + 1 - i,
        shorter_than_window: false,
    })
}

/// For target mean `m`, visits for each end `j` the start `i` that
/// maximises Σ(x − m) over `i..=j` among starts far enough back (the
/// earliest on ties), i.e. minimises `prefix[i] − m·i`. Stops when `visit`
/// returns true.
fn scan_windows(
    prefix: &[f64],
    long_enough: &dyn Fn(usize, usize) -> bool,
    m: f64,
    mut visit: impl FnMut(usize, usize) -> bool,
) {
    let n = prefix.len() - 1;
    let mut next_i = 0usize;
    let mut best_i: Option<usize> = None;
    let mut best_val = f64::INFINITY;
    for j in 0..n {
        while next_i <= j && long_enough(next_i, j) {
            let val = prefix[next_i] - m * next_i as f64;
            if val < best_val {
                best_val = val;
                best_i = Some(next_i);
            }
            next_i += 1;
        }
        if let Some(i) = best_i
            && visit(i, j)
        {
            return;
        }
    }
}

/// Window statistics and high average of one column.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSummary {
    /// Column name.
    pub name: String,
    /// Over the steady-state window; `None` if it had no value there.
    pub stats: Option<WindowStats>,
    /// Over the steady-state window; `None` if it had no value there.
    pub high_average: Option<HighAverage>,
}

/// [`window_stats`] and [`high_average`] for every column, in column order.
/// The high average is searched inside `window` too.
pub fn summarize_columns(
    cols: &dyn Columns,
    window: TimeWindow,
    min_window_s: f64,
) -> Vec<MetricSummary> {
    let times = cols.times();
    cols.names()
        .into_iter()
        .filter_map(|name| {
            let v = cols.values(name)?;
            let (wt, wv) = points(times, &v, window);
            Some(MetricSummary {
                name: name.to_owned(),
                stats: window_stats(&wt, &wv, TimeWindow::ALL),
                high_average: high_average(&wt, &wv, min_window_s),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn window_stats_nearest_rank() {
        // 1..=20 at t = 0..19; window [0, 20) → all.
        let t: Vec<f64> = (0..20).map(f64::from).collect();
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let s = window_stats(&t, &v, TimeWindow::ALL).unwrap();
        assert!(close(s.mean, 10.5));
        assert_eq!(s.p95, 19.0); // rank ceil(0.95·20) = 19
        assert_eq!(s.max, 20.0);
        // [5, 10): values 6..=10, mean 8, p95 rank ceil(4.75) = 5 → 10.
        let s = window_stats(&t, &v, TimeWindow::new(5.0, 10.0)).unwrap();
        assert!(close(s.mean, 8.0));
        assert_eq!((s.p95, s.max, s.samples), (10.0, 10.0, 5));
        assert!(window_stats(&t, &[f64::NAN; 20], TimeWindow::ALL).is_none());
    }

    /// The seed-001 example, checked by hand.
    ///
    /// 100 samples at 1 s (t = 0..99):
    /// * t = 0..29   (30 samples): 10   (idle before the task)
    /// * t = 30..49  (20 samples): 90
    /// * t = 50..69  (20 samples): 94
    /// * t = 70..99  (30 samples): 20   (after the task)
    ///
    /// A window of at least 30 s with the highest mean: adding a 90 to the
    /// twenty 94s lowers the mean, but 30 samples are needed, so the best
    /// is the last 10 of the 90s plus all the 94s, t = 40..69:
    ///   mean = (10·90 + 20·94) / 30 = (900 + 1880) / 30 = 2780 / 30 = 92.6667
    /// (any longer window adds another 90 or a 20 and scores lower; a
    /// window reaching into the 20s scores lower still).
    /// Deviations: 90 − 92.6667 = −8/3 (×10), 94 − 92.6667 = +4/3 (×20)
    ///   Σd² = 10·64/9 + 20·16/9 = 640/9 + 320/9 = 960/9 = 106.667
    ///   s² = 106.667 / 29 = 3.67816,  s = 1.91785
    #[test]
    fn high_average_hand_checked() {
        let t: Vec<f64> = (0..100).map(f64::from).collect();
        let v: Vec<f64> = (0..100)
            .map(|i| match i {
                0..=29 => 10.0,
                30..=49 => 90.0,
                50..=69 => 94.0,
                _ => 20.0,
            })
            .collect();
        let h = high_average(&t, &v, 30.0).unwrap();
        assert!(close(h.mean, 2780.0 / 30.0), "{h:?}");
        assert!(close(h.std_dev, (960.0_f64 / 9.0 / 29.0).sqrt()), "{h:?}");
        assert!((h.std_dev - 1.91785).abs() < 1e-5);
        assert_eq!((h.start_s, h.end_s, h.samples), (40.0, 69.0, 30));
        assert!(!h.shorter_than_window);
        // The plain mean is much lower: (300 + 1800 + 1880 + 600) / 100 = 45.8.
        assert!(close(
            window_stats(&t, &v, TimeWindow::ALL).unwrap().mean,
            45.8
        ));
    }

    /// A flat 40 s plateau of 50 between zeros: the whole plateau is
    /// reported (mean 50, std 0), not just its first 30 s.
    #[test]
    fn flat_plateau_reported_whole() {
        let t: Vec<f64> = (0..100).map(f64::from).collect();
        let v: Vec<f64> = (0..100)
            .map(|i| if (20..60).contains(&i) { 50.0 } else { 0.0 })
            .collect();
        let h = high_average(&t, &v, 30.0).unwrap();
        assert_eq!(
            (h.mean, h.std_dev, h.start_s, h.end_s, h.samples),
            (50.0, 0.0, 20.0, 59.0, 40)
        );
    }

    /// A choppy series: alternating 80/100 (mean 90) for 40 s. The best
    /// window of at least 30 samples starts and ends on a 100 with 31
    /// samples: (16·100 + 15·80) / 31 = 2800 / 31 = 90.3226.
    #[test]
    fn choppy_plateau() {
        let t: Vec<f64> = (0..60).map(f64::from).collect();
        let v: Vec<f64> = (0..60)
            .map(|i| {
                if (10..50).contains(&i) {
                    if i % 2 == 0 { 100.0 } else { 80.0 }
                } else {
                    0.0
                }
            })
            .collect();
        let h = high_average(&t, &v, 30.0).unwrap();
        assert!(close(h.mean, 2800.0 / 31.0), "{h:?}");
        assert_eq!((h.start_s, h.samples), (10.0, 31));
        // 31 values, 16 deviate by +9.677, 15 by −10.323 → s ≈ 10.16.
        let expected = ((16.0 * (100.0 - 2800.0 / 31.0_f64).powi(2)
            + 15.0 * (80.0 - 2800.0 / 31.0_f64).powi(2))
            / 30.0)
            .sqrt();
        assert!(close(h.std_dev, expected));
    }

    /// Seed 001's exception: a 10-second test gets the mean of all of it.
    #[test]
    fn short_series_uses_everything() {
        let t: Vec<f64> = (0..10).map(f64::from).collect();
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 5.0, 4.0, 3.0, 2.0, 1.0];
        let h = high_average(&t, &v, 30.0).unwrap();
        assert!(h.shorter_than_window);
        assert_eq!((h.mean, h.samples), (3.0, 10));
        assert!(high_average(&[], &[], 30.0).is_none());
    }

    #[test]
    fn missing_values_are_skipped_and_window_uses_spacing() {
        // 2-second spacing: 15 samples make 30 s.
        let t: Vec<f64> = (0..40).map(|i| f64::from(i) * 2.0).collect();
        let mut v: Vec<f64> = (0..40)
            .map(|i| if (10..25).contains(&i) { 7.0 } else { 1.0 })
            .collect();
        v[0] = f64::NAN;
        let h = high_average(&t, &v, 30.0).unwrap();
        assert_eq!((h.mean, h.samples, h.start_s), (7.0, 15, 20.0));
    }
}
