//! Descriptive statistics of plain values, shared by the monitor's
//! statistics and the planner: the mean with the sample standard deviation,
//! and the median. (Percentiles are [`crate::quantile`]'s nearest rank; a
//! median here is the middle value or the mean of the two middle ones, a
//! centre rather than a percentile.)

/// Mean and sample standard deviation (n − 1; 0 for one value) of `v`;
/// `None` when `v` is empty.
pub(crate) fn mean_sd(v: &[f64]) -> Option<(f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some((mean, var.sqrt()))
}

/// The median of `v` (sorted in place): the middle value, or the mean of
/// the two middle ones; `None` when `v` is empty.
pub(crate) fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_standard_deviation_divides_by_n_minus_one() {
        assert_eq!(mean_sd(&[]), None);
        assert_eq!(mean_sd(&[4.0]), Some((4.0, 0.0)));
        // Mean 5; squares of the deviations 9 + 1 + 1 + 9 = 20; 20 / 3.
        let (mean, sd) = mean_sd(&[2.0, 4.0, 6.0, 8.0]).unwrap_or_default();
        assert_eq!(mean, 5.0);
        assert!((sd - (20.0_f64 / 3.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
