//! The CPU × memory matrix and seed 003's resource/performance
//! relationships (Table 3: with more memory, response time and the write
//! share of disk I/O rose while interrupts, reads and the end-of-test queue
//! fell; with more CPUs, response time and CPU utilization fell).
//!
//! # The rule
//!
//! Hold the CPUs and walk up the memory sizes (a *line* of the grid), and
//! compare each metric at the largest memory with the smallest:
//!
//! ```text
//! change % = 100 × (last − first) / max(|first|, |last|)
//! ```
//!
//! Taken relative to the larger of the two, the change is bounded
//! (−100 … +100) and a metric that starts at 0, like a queue that was empty,
//! still gets a direction. A line *rises* when the change is at least
//! `threshold_pct` (default [`DEFAULT_RELATIONSHIP_THRESHOLD_PCT`], 10%),
//! *falls* when it is at most −threshold, and *stays* otherwise. The
//! metric's relationship with memory is the direction a strict majority of
//! the lines share, *mixed* when none has a majority. The same with the
//! memory held and the CPUs walked up gives the relationship with CPUs.
//! Comparing the ends rather than fitting a slope keeps one odd cell in the
//! middle (seed 003's 1-CPU/512 MB run) from deciding the answer, and says
//! the same thing on a 2 × 2 grid as on a larger one.
//!
//! **Beyond noise** (issue 25). Where a cell knows a metric's standard
//! deviation ([`MatrixCell::spread`]: the monitor samples' over the steady
//! window, a p95's over bootstrap resamples of the run's intervals), a line
//! that moves by the threshold but by no more than the two ends' combined
//! standard deviations, √(sd_first² + sd_last²), is *no significant change*
//! ([`Direction::NotSignificant`]) rather than a rise or a fall. Cells where
//! the server used less than [`LOW_UTILISATION_PCT`] of its CPUs are named
//! in the warnings: a load that light leaves nothing for more CPUs or
//! memory to change.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::PlanError;
use crate::describe::{mean_sd, median};

/// Version of the `matrix.json` format.
pub const MATRIX_FORMAT_VERSION: u32 = 1;

/// A change smaller than this (percent of the larger end) is "stays". Ten
/// percent is above the run-to-run noise of a p95 on the lab and well
/// below seed 003's effects (disk writes 60% → 97% of I/O, CPU utilization
/// 100% → 69% from one to four CPUs).
pub const DEFAULT_RELATIONSHIP_THRESHOLD_PCT: f64 = 10.0;

/// The metric name of the weighted p95 score, ms: the first grid of
/// `matrix.html` (seed 003's Graph 1, response time).
pub const METRIC_WEIGHTED_P95_MS: &str = "weighted_p95_ms";
/// The metric name of the server's CPU utilization, percent of the CPUs it
/// was limited to: the second grid (seed 003's Table 2).
pub const METRIC_CPU_PCT: &str = "cpu_pct";

/// A cell whose server used less than this share of its CPUs (percent) ran
/// too light a load for its shape to matter: at 20% an M/M/1 queue's wait
/// is a quarter of the service time, so response times barely depend on
/// the CPUs, and memory pressure is as unlikely. The matrix names such
/// cells in its warnings.
pub const LOW_UTILISATION_PCT: f64 = 20.0;

/// One shape of the grid and what the run on it measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixCell {
    /// CPUs the lab was limited to.
    pub cpus: f64,
    /// Memory the lab was limited to, bytes.
    pub memory_bytes: u64,
    /// Metric name → value, e.g. [`METRIC_WEIGHTED_P95_MS`], [`METRIC_CPU_PCT`],
    /// `memory_used_bytes`, `disk_read_share_pct`, `run_queue`,
    /// `p95_ms.read`. Missing metrics are absent.
    pub metrics: BTreeMap<String, f64>,
    /// The run's bottleneck verdict, when the monitor gave one.
    pub bottleneck: Option<String>,
    /// The run directory, for the reader to open.
    pub run_dir: Option<String>,
    /// Metric name → its standard deviation where known (the monitor
    /// samples' over the steady window; a p95's over bootstrap resamples of
    /// the run's intervals).
    #[serde(default)]
    pub spread: BTreeMap<String, f64>,
}

/// Rises, falls, stays, or no agreement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Goes up by at least the threshold.
    Rises,
    /// Goes down by at least the threshold.
    Falls,
    /// Moves less than the threshold.
    Stays,
    /// The lines disagree (no strict majority).
    Mixed,
    /// Moves by the threshold, but within the ends' combined standard
    /// deviations: the measurements cannot tell it from noise.
    NotSignificant,
}

impl Direction {
    /// `rises`, `falls`, `stays`, `mixed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Rises => "rises",
            Direction::Falls => "falls",
            Direction::Stays => "stays",
            Direction::Mixed => "mixed",
            Direction::NotSignificant => "no significant change",
        }
    }
}

/// One line of the grid: the other resource held, this one walked up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LineTrend {
    /// The value held: CPUs (for a memory trend) or memory bytes (for a
    /// CPU trend).
    pub held: f64,
    /// The smallest size on the line with the metric.
    pub from: f64,
    /// The largest.
    pub to: f64,
    /// The metric there.
    pub first: f64,
    /// The metric there.
    pub last: f64,
    /// [`change_pct`] of the two.
    pub change_pct: f64,
    /// √(sd_first² + sd_last²), when both ends know their spread.
    #[serde(default)]
    pub noise: Option<f64>,
    /// Its direction.
    pub direction: Direction,
}

/// A metric's trend along one resource.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// The majority direction (stays when there is no line).
    pub direction: Direction,
    /// Median change over the lines, percent (`None` with no line).
    pub median_change_pct: Option<f64>,
    /// Each line.
    pub lines: Vec<LineTrend>,
}

/// Seed 003 Table 3's row for one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Relationship {
    /// The metric.
    pub metric: String,
    /// As memory is added.
    pub with_more_memory: Trend,
    /// As CPUs are added.
    pub with_more_cpus: Trend,
}

/// The matrix: the content of `matrix.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// [`MATRIX_FORMAT_VERSION`].
    pub format_version: u32,
    /// The profile run on every shape.
    pub profile: String,
    /// Users on every shape.
    pub users: u64,
    /// The CPU sizes, ascending.
    pub cpus: Vec<f64>,
    /// The memory sizes, ascending, bytes.
    pub memory_bytes: Vec<u64>,
    /// Every cell, by CPUs then memory.
    pub cells: Vec<MatrixCell>,
    /// The threshold of the rule, percent.
    pub threshold_pct: f64,
    /// One row per metric found in the cells.
    pub relationships: Vec<Relationship>,
    /// Things a reader should know (missing cells …).
    pub warnings: Vec<String>,
}

/// `100 × (last − first) / max(|first|, |last|)`; 0 when both are 0.
pub fn change_pct(first: f64, last: f64) -> f64 {
    let scale = first.abs().max(last.abs());
    if scale == 0.0 {
        0.0
    } else {
        100.0 * (last - first) / scale
    }
}

fn direction_of(change: f64, threshold_pct: f64) -> Direction {
    if change >= threshold_pct {
        Direction::Rises
    } else if change <= -threshold_pct {
        Direction::Falls
    } else {
        Direction::Stays
    }
}

/// A point of a line: (size, metric, its standard deviation if known).
type LinePoint = (f64, f64, Option<f64>);

/// The trend of `metric` along one axis: `lines` are (held value, points
/// in any order).
fn trend(lines: Vec<(f64, Vec<LinePoint>)>, threshold_pct: f64) -> Trend {
    let mut out = Vec::new();
    for (held, mut points) in lines {
        if points.len() < 2 {
            continue;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (from, first, first_sd) = points[0];
        let (to, last, last_sd) = points[points.len() - 1];
        let change = change_pct(first, last);
        let noise = first_sd.zip(last_sd).map(|(a, b)| a.hypot(b));
        let mut direction = direction_of(change, threshold_pct);
        if direction != Direction::Stays && noise.is_some_and(|n| (last - first).abs() <= n) {
            direction = Direction::NotSignificant;
        }
        out.push(LineTrend {
            held,
            from,
            to,
            first,
            last,
            change_pct: change,
            noise,
            direction,
        });
    }
    let mut changes: Vec<f64> = out.iter().map(|l| l.change_pct).collect();
    let direction = if out.is_empty() {
        Direction::Stays
    } else {
        [
            Direction::Rises,
            Direction::Falls,
            Direction::Stays,
            Direction::NotSignificant,
        ]
        .into_iter()
        .find(|d| 2 * out.iter().filter(|l| l.direction == *d).count() > out.len())
        .unwrap_or(Direction::Mixed)
    };
    Trend {
        direction,
        median_change_pct: median(&mut changes),
        lines: out,
    }
}

impl Matrix {
    /// Sorts the cells, checks each shape appears once, and derives the
    /// relationships table for every metric any cell has.
    pub fn build(
        profile: &str,
        users: u64,
        mut cells: Vec<MatrixCell>,
        threshold_pct: f64,
    ) -> Result<Matrix, PlanError> {
        super::check("relationship threshold", threshold_pct, 0.0, false)?;
        for c in &cells {
            super::check("cell cpus", c.cpus, 0.0, true)?;
        }
        cells.sort_by(|a, b| {
            a.cpus
                .total_cmp(&b.cpus)
                .then(a.memory_bytes.cmp(&b.memory_bytes))
        });
        if let Some(w) = cells
            .windows(2)
            .find(|w| w[0].cpus == w[1].cpus && w[0].memory_bytes == w[1].memory_bytes)
        {
            return Err(PlanError::DuplicateCell {
                cpus: w[0].cpus,
                memory_bytes: w[0].memory_bytes,
            });
        }
        let mut cpus: Vec<f64> = cells.iter().map(|c| c.cpus).collect();
        cpus.dedup();
        let memory: BTreeSet<u64> = cells.iter().map(|c| c.memory_bytes).collect();
        let memory: Vec<u64> = memory.into_iter().collect();
        let mut warnings = Vec::new();
        let missing = cpus.len() * memory.len() - cells.len();
        if missing > 0 {
            warnings.push(format!(
                "{missing} of {} shapes have no cell; their lines are shorter",
                cpus.len() * memory.len()
            ));
        }
        warnings.extend(low_utilisation_warning(&cells));
        let metrics: BTreeSet<&String> = cells.iter().flat_map(|c| c.metrics.keys()).collect();
        let relationships = metrics
            .into_iter()
            .map(|m| relationship(&cells, &cpus, &memory, m, threshold_pct))
            .collect();
        Ok(Matrix {
            format_version: MATRIX_FORMAT_VERSION,
            profile: profile.to_owned(),
            users,
            cpus,
            memory_bytes: memory,
            cells,
            threshold_pct,
            relationships,
            warnings,
        })
    }

    /// The cell of one shape.
    pub fn cell(&self, cpus: f64, memory_bytes: u64) -> Option<&MatrixCell> {
        self.cells
            .iter()
            .find(|c| c.cpus == cpus && c.memory_bytes == memory_bytes)
    }
}

/// The warning naming the cells that ran below [`LOW_UTILISATION_PCT`].
fn low_utilisation_warning(cells: &[MatrixCell]) -> Option<String> {
    let light: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            let cpu = *c.metrics.get(METRIC_CPU_PCT)?;
            (cpu < LOW_UTILISATION_PCT).then(|| {
                format!(
                    "{} CPUs × {} MiB ({cpu:.0}% CPU)",
                    c.cpus,
                    c.memory_bytes / (1024 * 1024)
                )
            })
        })
        .collect();
    (!light.is_empty()).then(|| {
        format!(
            "{} ran the server below {LOW_UTILISATION_PCT}% of its CPUs: too light a load for more CPUs or memory to change much, so relationships there cannot be judged; give more --users or a higher --speed",
            light.join(", ")
        )
    })
}

fn relationship(
    cells: &[MatrixCell],
    cpus: &[f64],
    memory: &[u64],
    metric: &str,
    threshold_pct: f64,
) -> Relationship {
    let value = |c: &MatrixCell| c.metrics.get(metric).copied().filter(|v| v.is_finite());
    let sd = |c: &MatrixCell| c.spread.get(metric).copied().filter(|v| v.is_finite());
    let memory_lines = cpus
        .iter()
        .map(|&cpu| {
            let points = cells
                .iter()
                .filter(|c| c.cpus == cpu)
                .filter_map(|c| Some((c.memory_bytes as f64, value(c)?, sd(c))))
                .collect();
            (cpu, points)
        })
        .collect();
    let cpu_lines = memory
        .iter()
        .map(|&mem| {
            let points = cells
                .iter()
                .filter(|c| c.memory_bytes == mem)
                .filter_map(|c| Some((c.cpus, value(c)?, sd(c))))
                .collect();
            (mem as f64, points)
        })
        .collect();
    Relationship {
        metric: metric.to_owned(),
        with_more_memory: trend(memory_lines, threshold_pct),
        with_more_cpus: trend(cpu_lines, threshold_pct),
    }
}

/// The standard deviation of each action's p95 (`p95_ms.<action>`) and of
/// the weighted p95 (`weighted_p95_ms`) of a run, over bootstrap resamples
/// of its steady intervals (`peakhour compare`'s resampling: the same
/// blocks, seed and count). `weights` are the score's; the weighted p95's
/// spread treats the actions' p95s as independent. Empty with fewer than
/// two steady intervals, where resampling says nothing.
pub fn latency_spread(
    record: &crate::RunRecord,
    weights: &BTreeMap<String, f64>,
) -> Result<BTreeMap<String, f64>, crate::AnalysisError> {
    use crate::bootstrap::{IntervalBlocks, resample_picks};
    let blocks = IntervalBlocks::of(record)?;
    let mut out = BTreeMap::new();
    if blocks.len() < 2 {
        return Ok(out);
    }
    let picks = resample_picks(&[blocks.len()]).remove(0);
    let mut scratch = Vec::new();
    let (mut weighted_var, mut weight_sum) = (0.0, 0.0);
    let names: BTreeSet<String> = record
        .steady_intervals()
        .flat_map(|i| i.actions.keys().cloned())
        .collect();
    for name in names {
        let values: Vec<f64> = picks
            .iter()
            .filter_map(|pick| blocks.quantile_ms(&name, 0.95, pick, &mut scratch))
            .collect();
        if values.len() < 2 {
            continue;
        }
        let Some((_, sd)) = mean_sd(&values) else {
            continue;
        };
        if let Some(&w) = weights.get(&name) {
            weighted_var += (w * sd).powi(2);
            weight_sum += w;
        }
        out.insert(format!("p95_ms.{name}"), sd);
    }
    if weight_sum > 0.0 {
        out.insert(
            METRIC_WEIGHTED_P95_MS.to_owned(),
            weighted_var.sqrt() / weight_sum,
        );
    }
    Ok(out)
}
