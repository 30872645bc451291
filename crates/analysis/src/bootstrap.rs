//! The bootstrap that tells a real difference between runs from run-to-run
//! noise (`peakhour compare`).
//!
//! The steady-state intervals of a run are the unit of resampling: a
//! resample draws as many intervals as the run has, with replacement, and
//! recomputes a figure over them (a quantile from the merged per-interval
//! HdrHistogram counts, a rate from the summed counts). Runs with more than
//! [`MAX_BLOCKS`] intervals are cut into that many blocks of consecutive
//! intervals, which keeps the cost bounded and respects their correlation.
//!
//! The generator is SplitMix64 with a fixed seed ([`BOOTSTRAP_SEED`]), so
//! the same runs always give the same interval, on every platform. The
//! interval's ends are quantiles of the resampled changes, by the crate's
//! one quantile definition ([`crate::quantile`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::quantile::{nearest_rank, quantile_sorted};
use crate::{AnalysisError, RunRecord};

/// Resamples of the bootstrap.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;
/// The bootstrap's fixed seed.
pub const BOOTSTRAP_SEED: u64 = 0x7065_616b_686f_7572; // "peakhour"
/// Runs with more steady intervals than this are resampled in blocks.
pub const MAX_BLOCKS: usize = 200;

/// SplitMix64: a tiny generator with a fixed, portable sequence, enough
/// for drawing resample indices.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (Lemire's multiply-shift; `n` must be above 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// One action's latencies over the blocks, laid out for quantiles of any
/// resample in a few hundred operations.
///
/// `values` are the distinct recorded values (µs, ascending); `cumulative`
/// holds, for each value index `i` and block `b`, the block's count of
/// values up to and including `values[i]`, at `i * blocks + b`. The count
/// of a resample up to a value is then one sum over the blocks, weighted by
/// how often each was drawn, and the nearest-rank quantile is found by a
/// binary search over the values. Summing each drawn block's histogram
/// instead cost `peakhour compare` 6 s on two runs of a million actions
/// (issue 16); this costs `blocks x distinct values` counts of memory per
/// action (about 8 MB at 200 blocks and 5,000 distinct values).
#[derive(Clone, Debug)]
struct CumulativeBlocks {
    values: Vec<u64>,
    blocks: usize,
    cumulative: Vec<u64>,
}

impl CumulativeBlocks {
    /// From each block's histogram (value → count).
    fn of(blocks: &[BTreeMap<u64, u64>]) -> Self {
        let values: Vec<u64> = blocks
            .iter()
            .flat_map(|b| b.keys().copied())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let n = blocks.len();
        let mut cumulative = vec![0u64; values.len() * n];
        for (b, histogram) in blocks.iter().enumerate() {
            let mut entries = histogram.iter().peekable();
            let mut running = 0u64;
            for (i, value) in values.iter().enumerate() {
                if let Some((_, count)) = entries.next_if(|(v, _)| *v == value) {
                    running += count;
                }
                cumulative[i * n + b] = running;
            }
        }
        Self {
            values,
            blocks: n,
            cumulative,
        }
    }

    /// Values up to and including `values[i]` in a resample drawing block
    /// `b` `weights[b]` times.
    fn count_up_to(&self, i: usize, weights: &[u64]) -> u64 {
        self.cumulative[i * self.blocks..(i + 1) * self.blocks]
            .iter()
            .zip(weights)
            .map(|(c, w)| c * w)
            .sum()
    }

    /// The nearest-rank q-quantile (µs) of the resample with `weights`,
    /// as [`crate::quantile::quantile_of_counts`] gives it over the merged counts.
    fn quantile(&self, q: f64, weights: &[u64]) -> Option<u64> {
        let last = self.values.len().checked_sub(1)?;
        let rank = nearest_rank(q, self.count_up_to(last, weights));
        if rank == 0 {
            return None;
        }
        // The first value index whose cumulative count reaches the rank.
        let (mut low, mut high) = (0, last);
        while low < high {
            let mid = low + (high - low) / 2;
            if self.count_up_to(mid, weights) >= rank {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        self.values.get(low).copied()
    }
}

/// One run's steady state cut into resampling blocks.
#[derive(Clone, Debug)]
pub struct IntervalBlocks {
    latency: BTreeMap<String, CumulativeBlocks>,
    actions: Vec<u64>,
    seconds: Vec<f64>,
    counters: Vec<BTreeMap<String, u64>>,
}

impl IntervalBlocks {
    /// The steady intervals of `record`, in at most [`MAX_BLOCKS`] blocks.
    pub fn of(record: &RunRecord) -> Result<Self, AnalysisError> {
        let steady: Vec<_> = record.steady_intervals().collect();
        let n = steady.len().min(MAX_BLOCKS);
        let block_of = |i: usize| {
            if steady.is_empty() {
                0
            } else {
                i * n / steady.len()
            }
        };
        let mut sparse: BTreeMap<String, Vec<BTreeMap<u64, u64>>> = BTreeMap::new();
        let mut actions = vec![0u64; n];
        let mut seconds = vec![0f64; n];
        let mut counters = vec![BTreeMap::new(); n];
        for (i, interval) in steady.iter().enumerate() {
            let b = block_of(i);
            seconds[b] += interval.length.as_secs_f64();
            for (name, count) in &interval.counters {
                *counters[b].entry(name.clone()).or_insert(0) += count;
            }
            for (name, a) in &interval.actions {
                let h = a.latency.decode()?;
                actions[b] += h.len();
                let per_block = sparse
                    .entry(name.clone())
                    .or_insert_with(|| vec![BTreeMap::new(); n]);
                for v in h.as_hdr().iter_recorded() {
                    *per_block[b].entry(v.value_iterated_to()).or_insert(0) += v.count_at_value();
                }
            }
        }
        let latency = sparse
            .into_iter()
            .map(|(name, blocks)| (name, CumulativeBlocks::of(&blocks)))
            .collect();
        Ok(Self {
            latency,
            actions,
            seconds,
            counters,
        })
    }

    /// The number of blocks.
    pub fn len(&self) -> usize {
        self.seconds.len()
    }

    /// Whether the run had no steady interval.
    pub fn is_empty(&self) -> bool {
        self.seconds.is_empty()
    }

    /// Every block once: the run as measured.
    pub fn all(&self) -> Vec<usize> {
        (0..self.len()).collect()
    }

    /// The q-quantile in ms of `action`'s latency over the blocks `pick`
    /// (with repeats); `scratch` is reused between calls.
    pub fn quantile_ms(
        &self,
        action: &str,
        q: f64,
        pick: &[usize],
        scratch: &mut Vec<u64>,
    ) -> Option<f64> {
        let latency = self.latency.get(action)?;
        // `scratch` holds how often each block was drawn.
        scratch.clear();
        scratch.resize(latency.blocks, 0);
        for &b in pick {
            scratch[b] += 1;
        }
        latency.quantile(q, scratch).map(|us| us as f64 / 1000.0)
    }

    /// Successful actions per second over the blocks `pick`.
    pub fn actions_rate(&self, pick: &[usize]) -> Option<f64> {
        self.rate(pick, |b| self.actions[b], 1.0)
    }

    /// Counter `name` per `per` seconds (1 for a rate per second, 3600 per
    /// hour) over the blocks `pick`.
    pub fn counter_rate(&self, name: &str, per: f64, pick: &[usize]) -> Option<f64> {
        self.rate(
            pick,
            |b| self.counters[b].get(name).copied().unwrap_or(0),
            per,
        )
    }

    fn rate(&self, pick: &[usize], count: impl Fn(usize) -> u64, per: f64) -> Option<f64> {
        let secs: f64 = pick.iter().map(|&b| self.seconds[b]).sum();
        let n: u64 = pick.iter().map(|&b| count(b)).sum();
        (secs > 0.0).then(|| n as f64 * per / secs)
    }
}

/// The resample picks for runs of `block_counts` blocks each: per run,
/// [`BOOTSTRAP_RESAMPLES`] draws of as many block indices as it has, from
/// one generator seeded with [`BOOTSTRAP_SEED`] and drawn run after run.
/// Every figure of a comparison uses the same picks, so the figures of one
/// resample come from the same intervals.
pub fn resample_picks(block_counts: &[usize]) -> Vec<Vec<Vec<usize>>> {
    let mut rng = SplitMix64::new(BOOTSTRAP_SEED);
    block_counts
        .iter()
        .map(|&n| {
            (0..BOOTSTRAP_RESAMPLES)
                .map(|_| (0..n).map(|_| rng.below(n.max(1))).collect())
                .collect()
        })
        .collect()
}

/// The percentile interval `[low_q, high_q]` of resampled values (e.g.
/// 0.025 and 0.975 for 95%); `None` when there is none.
pub fn percentile_interval(resampled: &mut [f64], low_q: f64, high_q: f64) -> Option<(f64, f64)> {
    resampled.sort_by(f64::total_cmp);
    Some((
        quantile_sorted(resampled, low_q)?,
        quantile_sorted(resampled, high_q)?,
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The binary search over cumulative counts gives the quantile the
    /// merged histogram of the drawn blocks gives, for every pick and q.
    #[test]
    fn cumulative_quantiles_match_the_merged_histogram() {
        let mut rng = SplitMix64::new(7);
        let blocks: Vec<BTreeMap<u64, u64>> = (0..13)
            .map(|b| {
                (0..rng.below(40))
                    .map(|_| (rng.below(300) as u64 * 10, rng.below(5) as u64 + b % 2))
                    .collect()
            })
            .collect();
        let cumulative = CumulativeBlocks::of(&blocks);
        let mut weights = Vec::new();
        for _ in 0..200 {
            let pick: Vec<usize> = (0..blocks.len()).map(|_| rng.below(blocks.len())).collect();
            let mut merged: BTreeMap<u64, u64> = BTreeMap::new();
            for &b in &pick {
                for (v, c) in &blocks[b] {
                    *merged.entry(*v).or_insert(0) += c;
                }
            }
            let values: Vec<u64> = merged.keys().copied().collect();
            let counts: Vec<u64> = merged.values().copied().collect();
            weights.clear();
            weights.resize(blocks.len(), 0);
            for &b in &pick {
                weights[b] += 1;
            }
            for q in [0.0, 0.01, 0.5, 0.95, 0.99, 1.0] {
                assert_eq!(
                    cumulative.quantile(q, &weights),
                    crate::quantile::quantile_of_counts(&values, &counts, q),
                    "q {q}, pick {pick:?}"
                );
            }
        }
    }

    #[test]
    fn rng_is_uniform_enough_and_fixed() {
        let mut r = SplitMix64::new(1);
        let mut counts = [0; 4];
        for _ in 0..4000 {
            counts[r.below(4)] += 1;
        }
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
        let (mut a, mut b) = (
            SplitMix64::new(BOOTSTRAP_SEED),
            SplitMix64::new(BOOTSTRAP_SEED),
        );
        assert_eq!(a.next_u64(), b.next_u64());
        let picks = resample_picks(&[3, 0]);
        assert_eq!((picks.len(), picks[0].len()), (2, BOOTSTRAP_RESAMPLES));
        assert!(
            picks[0]
                .iter()
                .all(|p| p.len() == 3 && p.iter().all(|b| *b < 3))
        );
        assert!(picks[1].iter().all(Vec::is_empty));
    }

    #[test]
    fn percentile_interval_uses_nearest_ranks() {
        let mut values: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        assert_eq!(
            percentile_interval(&mut values, 0.025, 0.975),
            Some((25.0, 975.0))
        );
        assert_eq!(percentile_interval(&mut [], 0.025, 0.975), None);
    }
}
