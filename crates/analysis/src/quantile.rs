//! The one quantile definition of peakhour: the **nearest rank**.
//!
//! The q-quantile of n samples is the sample of rank `max(1, ⌈q·n⌉)` in
//! ascending order (1-based): the smallest sample such that at least a
//! fraction q of all samples are at or below it. It is always a value that
//! was measured, never an interpolation between two.
//!
//! Why this one, among the nine that statistics packages offer:
//!
//! - **It is HdrHistogram's.** Every latency percentile in `summary.json`
//!   comes from `Histogram::value_at_quantile`, which walks the counts to
//!   the first value whose cumulative count reaches `⌈q·n⌉`. Anything that
//!   recomputes a percentile from raw values or counts (the comparison's
//!   bootstrap, the monitor, the live line) must agree with it, or the same
//!   run shows two different p95s.
//! - **It is the seeds'.** LoadSim's lslog "picks the time that is higher
//!   than 95 percent of the times", and a QoS limit is read the same way:
//!   "95% of the actions were at or below this time".
//! - **It needs no arithmetic on the values**, so it works the same on
//!   counts of histogram buckets as on a sorted list, and it is exact on
//!   integers.
//!
//! Use [`quantile_sorted`] for a sorted slice of values and
//! [`quantile_of_counts`] for distinct values with counts (a histogram);
//! both rest on [`nearest_rank`].

/// The 1-based rank of the q-quantile among `n` samples: `max(1, ⌈q·n⌉)`,
/// at most `n`. `q` is clamped to `[0, 1]`; `n = 0` gives 0 (no sample).
pub fn nearest_rank(q: f64, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
    // Exactly HdrHistogram's arithmetic (`value_at_quantile`), floating
    // point included, so that both give the same rank for every q and n.
    ((q * n as f64).ceil() as u64).clamp(1, n)
}

/// The q-quantile of `sorted` (ascending), by nearest rank; `None` when
/// `sorted` is empty.
pub fn quantile_sorted<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let rank = nearest_rank(q, sorted.len() as u64);
    let index = usize::try_from(rank).ok()?.checked_sub(1)?;
    sorted.get(index).copied()
}

/// The q-quantile of a distribution given as distinct `values` (ascending)
/// and their `counts`, by nearest rank: the first value whose cumulative
/// count reaches the rank. `None` when the counts sum to 0.
pub fn quantile_of_counts<T: Copy>(values: &[T], counts: &[u64], q: f64) -> Option<T> {
    let total: u64 = counts.iter().sum();
    let rank = nearest_rank(q, total);
    if rank == 0 {
        return None;
    }
    let mut seen = 0;
    for (value, count) in values.iter().zip(counts) {
        seen += count;
        if seen >= rank {
            return Some(*value);
        }
    }
    values.last().copied()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ranks_are_the_ceiling_of_q_times_n() {
        assert_eq!(nearest_rank(0.95, 0), 0);
        assert_eq!(nearest_rank(0.95, 1), 1);
        assert_eq!(nearest_rank(0.95, 20), 19);
        assert_eq!(nearest_rank(0.95, 21), 20);
        assert_eq!(nearest_rank(0.5, 4), 2);
        assert_eq!(nearest_rank(0.0, 10), 1);
        assert_eq!(nearest_rank(1.0, 10), 10);
        assert_eq!(nearest_rank(2.0, 10), 10);
        assert_eq!(nearest_rank(0.025, 1000), 25);
        assert_eq!(nearest_rank(0.975, 1000), 975);
    }

    #[test]
    fn sorted_and_counted_forms_agree() {
        let sorted = [1, 2, 2, 3, 3, 3, 7, 9, 9, 10];
        let (values, counts) = ([1, 2, 3, 7, 9, 10], [1, 2, 3, 1, 2, 1]);
        for q in [0.0, 0.1, 0.25, 0.5, 0.6, 0.7, 0.9, 0.95, 0.99, 1.0] {
            assert_eq!(
                quantile_sorted(&sorted, q),
                quantile_of_counts(&values, &counts, q),
                "q = {q}"
            );
        }
        assert_eq!(quantile_sorted(&sorted, 0.5), Some(3));
        assert_eq!(quantile_sorted(&sorted, 0.95), Some(10));
        assert_eq!(quantile_sorted::<f64>(&[], 0.5), None);
        assert_eq!(quantile_of_counts(&[1.0], &[0], 0.5), None);
    }

    #[test]
    fn agrees_with_hdrhistogram() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        let mut values: Vec<u64> = (1..=997).map(|i| (i * 37) % 1000 + 1).collect();
        for v in &values {
            h.record(*v).unwrap();
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.95, 0.99, 0.999] {
            assert_eq!(
                quantile_sorted(&values, q),
                Some(h.value_at_quantile(q)),
                "q = {q}"
            );
        }
    }
}
