//! The capacity curve: throughput (and p95) against load, as a NetBench
//! sweep or a peakhour sweep measures it.
//!
//! [`CapacityAnalysis::compute`] gives, from the points alone:
//!
//! - the **peak** throughput and the load where it occurs;
//! - the **shape** after the peak in seed 004's terms ("stays within 1.8% of
//!   peak out to 72", "falls 10% by 64"), and whether the turn at the peak
//!   is abrupt or gradual ([`Shape`] documents the rule);
//! - the **headline capacity**: the largest load at which the p95 meets the
//!   QoS limit, linearly interpolated between steps ([`QosCapacity`]);
//! - a **USL fit** ([`fit_usl`]) and the **knee** ([`kneedle`]).
//!
//! The [`sweep`] module holds the rules of `peakhour sweep` around it: the
//! steps to run, when to stop, the QoS limit and the capacity statement.
//!
//! Everything is pure; `docs/capacity.md` explains the methods and their
//! validation against the R `usl` package.

pub mod answer;
mod knee;
mod linalg;
pub mod search;
pub mod sweep;
mod usl;

use serde::{Deserialize, Serialize};

pub use knee::{DEFAULT_SENSITIVITY, Knee, kneedle};
pub use usl::{
    USL_FEW_POINTS, USL_METHOD, USL_MIN_POINTS, UslError, UslFit, UslStdErrors, fit_usl,
};

/// The "stays within X% of peak" band, in percent: a fall after the peak no
/// larger than this is a plateau.
pub const DEFAULT_PLATEAU_PCT: f64 = 2.0;
/// The fall from the peak that seed 004-style statements call out ("falls
/// 10% by N"), in percent.
pub const DEFAULT_NOTABLE_FALL_PCT: f64 = 10.0;
/// A turn at the peak is abrupt when the slope into (or out of) the peak is
/// at least this fraction of the curve's steepest slope before the peak.
pub const ABRUPT_SLOPE_FRACTION: f64 = 0.25;

/// One step of a capacity curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The load: users, clients, processes.
    pub load: f64,
    /// Throughput at that load, in any unit.
    pub throughput: f64,
    /// The p95 response time in ms, when known (for the QoS capacity).
    pub p95_ms: Option<f64>,
}

/// Settings of the analysis.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapacityOptions {
    /// QoS: a step passes when its p95 is at most this (ms).
    pub qos_p95_ms: f64,
    /// See [`DEFAULT_PLATEAU_PCT`].
    pub plateau_pct: f64,
    /// See [`DEFAULT_NOTABLE_FALL_PCT`].
    pub notable_fall_pct: f64,
    /// See [`ABRUPT_SLOPE_FRACTION`].
    pub abrupt_slope_fraction: f64,
    /// Kneedle's sensitivity S ([`DEFAULT_SENSITIVITY`]).
    pub knee_sensitivity: f64,
}

impl Default for CapacityOptions {
    fn default() -> Self {
        Self {
            qos_p95_ms: crate::DEFAULT_P95_LIMIT_MS,
            plateau_pct: DEFAULT_PLATEAU_PCT,
            notable_fall_pct: DEFAULT_NOTABLE_FALL_PCT,
            abrupt_slope_fraction: ABRUPT_SLOPE_FRACTION,
            knee_sensitivity: DEFAULT_SENSITIVITY,
        }
    }
}

/// Why a curve cannot be analysed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CapacityError {
    /// Fewer than two points.
    #[error("a capacity curve needs at least 2 points; got {0}")]
    TooFewPoints(usize),
    /// A load, throughput or p95 is NaN or infinite.
    #[error("point {0} has a value that is not a finite number")]
    NonFinite(usize),
    /// Two points share a load.
    #[error("load {0} appears more than once; a capacity curve needs one point per load")]
    DuplicateLoad(f64),
}

/// The highest throughput measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    /// The load at the peak.
    pub load: f64,
    /// The peak throughput.
    pub throughput: f64,
    /// Index among the points sorted by load.
    pub index: usize,
    /// The peak is the largest load tested: throughput was still rising (or
    /// level) there, so the true peak may lie beyond.
    pub at_largest_load: bool,
}

/// How the curve turns at its peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transition {
    /// The slope changes sharply: little warning before saturation.
    Abrupt,
    /// The slope flattens out over several steps.
    Gradual,
}

impl Transition {
    /// `abrupt` or `gradual`.
    pub fn as_str(self) -> &'static str {
        match self {
            Transition::Abrupt => "abrupt",
            Transition::Gradual => "gradual",
        }
    }
}

/// The shape of the curve around and after the peak.
///
/// **Fall after the peak.** `max_drop_pct` is the largest fall below the
/// peak among the loads after it. If it is at most the plateau band
/// ([`CapacityOptions::plateau_pct`]) the curve "stays within
/// `max_drop_pct`% of peak out to `largest_load`" (seed 004 on Windows NT,
/// two processors: 1.8% out to 72). Otherwise it "falls
/// `drop_at_largest_pct`% by `largest_load`", and when the fall reaches
/// [`CapacityOptions::notable_fall_pct`] the load where it first does so is
/// interpolated ("falls 10% by 70").
///
/// **Abrupt or gradual.** Slopes are per unit load between neighbouring
/// steps. The reference is the steepest slope before the peak (the early,
/// nearly linear climb). The approach is *abrupt* when the slope into the
/// peak is still at least [`CapacityOptions::abrupt_slope_fraction`]
/// (default 0.25) of that reference: the curve was climbing hard and then
/// stopped. It is *gradual* when the climb had flattened below that before
/// the peak. The fall is judged the same way with the slope out of the peak.
/// On seed 004's four tables this reproduces Mindcraft's words: IntranetWare
/// on one processor "abruptly reaches its peak" (approach ratio 0.35) and
/// "slowly degrades" (fall 0.10); Windows NT rises and declines gradually
/// (one processor: 0.05 and 0.11; two: 0.21 and 0.03); IntranetWare on two
/// processors "grows smoothly to its peak and then declines at faster rate"
/// (0.06 and 0.16, gradual but the steepest fall of the four).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// One sentence, e.g. `stays within 1.8% of peak out to 72`.
    pub statement: String,
    /// The largest load tested.
    pub largest_load: f64,
    /// Fall from the peak at the largest load, percent of peak (0 when the
    /// peak is there).
    pub drop_at_largest_pct: f64,
    /// Largest fall below the peak after it, percent of peak.
    pub max_drop_pct: f64,
    /// `max_drop_pct` is within the plateau band.
    pub plateau: bool,
    /// The load (interpolated) where throughput first falls
    /// [`CapacityOptions::notable_fall_pct`] below the peak, if it does.
    pub notable_fall_load: Option<f64>,
    /// The fall that `notable_fall_load` refers to, percent.
    pub notable_fall_pct: f64,
    /// Steepest slope before the peak (throughput per unit load).
    pub reference_slope: Option<f64>,
    /// Slope into the peak divided by the reference slope.
    pub approach_ratio: Option<f64>,
    /// Slope out of the peak (as a positive fall rate) divided by the
    /// reference slope.
    pub fall_ratio: Option<f64>,
    /// How the curve approaches its peak.
    pub approach: Option<Transition>,
    /// How it falls away after the peak.
    pub fall: Option<Transition>,
    /// The rule, for the output.
    pub rule: String,
}

/// How the headline capacity was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityBound {
    /// Interpolated between the last passing and the first failing step.
    Interpolated,
    /// Every step passed: the capacity is at least the largest load tested.
    AllPassed,
    /// Even the smallest step failed: the capacity is below it.
    NonePassed,
}

/// The headline capacity: the largest load at which QoS holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QosCapacity {
    /// The p95 limit (ms).
    pub limit_ms: f64,
    /// The capacity in load units; for [`CapacityBound::AllPassed`] the
    /// largest load tested (a lower bound), for
    /// [`CapacityBound::NonePassed`] `None`.
    pub load: Option<f64>,
    /// Throughput at that load, interpolated the same way.
    pub throughput: Option<f64>,
    /// Which case applied.
    pub bound: CapacityBound,
    /// The method, stated.
    pub method: String,
    /// One sentence.
    pub statement: String,
}

/// The whole analysis of one curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapacityAnalysis {
    /// The points, sorted by load.
    pub points: Vec<CurvePoint>,
    /// The measured peak.
    pub peak: Peak,
    /// The shape around and after the peak.
    pub shape: Shape,
    /// The headline capacity; `None` when no point has a p95.
    pub qos: Option<QosCapacity>,
    /// The USL fit; `None` when it could not be made (see `usl_error`).
    pub usl: Option<UslFit>,
    /// Why there is no USL fit.
    pub usl_error: Option<String>,
    /// The knee; `None` when Kneedle finds none.
    pub knee: Option<Knee>,
    /// Warnings about the input or the fits.
    pub warnings: Vec<String>,
    /// The options used.
    pub options: CapacityOptions,
}

impl CapacityAnalysis {
    /// Analyses `points` (any order; one per load).
    pub fn compute(
        points: &[CurvePoint],
        options: &CapacityOptions,
    ) -> Result<Self, CapacityError> {
        if points.len() < 2 {
            return Err(CapacityError::TooFewPoints(points.len()));
        }
        for (i, p) in points.iter().enumerate() {
            if !p.load.is_finite()
                || !p.throughput.is_finite()
                || p.p95_ms.is_some_and(|v| !v.is_finite())
            {
                return Err(CapacityError::NonFinite(i));
            }
        }
        let mut sorted = points.to_vec();
        sorted.sort_by(|a, b| a.load.total_cmp(&b.load));
        if let Some(w) = sorted.windows(2).find(|w| w[0].load == w[1].load) {
            return Err(CapacityError::DuplicateLoad(w[0].load));
        }
        let mut warnings = Vec::new();
        let peak = peak(&sorted);
        let shape = shape(&sorted, &peak, options);
        let qos = qos_capacity(&sorted, options.qos_p95_ms);
        let with_p95 = sorted.iter().filter(|p| p.p95_ms.is_some()).count();
        if with_p95 > 0 && with_p95 < sorted.len() {
            warnings.push(format!(
                "{} of {} points have no p95; the QoS capacity uses the others",
                sorted.len() - with_p95,
                sorted.len()
            ));
        }
        let xy: Vec<(f64, f64)> = sorted.iter().map(|p| (p.load, p.throughput)).collect();
        let (usl, usl_error) = match fit_usl(&xy) {
            Ok(fit) => {
                warnings.extend(fit.warnings.iter().map(|w| format!("USL: {w}")));
                (Some(fit), None)
            }
            Err(e) => {
                warnings.push(format!("USL: not fitted: {e}"));
                (None, Some(e.to_string()))
            }
        };
        let knee = kneedle(&xy, options.knee_sensitivity);
        if knee.is_none() {
            warnings
                .push("Kneedle found no knee (the curve may still be nearly linear)".to_string());
        }
        Ok(Self {
            points: sorted,
            peak,
            shape,
            qos,
            usl,
            usl_error,
            knee,
            warnings,
            options: *options,
        })
    }

    /// The conclusions in sentences, for the terminal and the report.
    pub fn conclusions(&self) -> Vec<String> {
        let mut out = Vec::new();
        let peak = &self.peak;
        if peak.at_largest_load {
            out.push(format!(
                "Throughput peaked at {} at the largest load tested, {}; the true peak may lie beyond.",
                fmt_value(peak.throughput),
                fmt_load(peak.load)
            ));
        } else {
            out.push(format!(
                "Throughput peaked at {} at a load of {}, and {}.",
                fmt_value(peak.throughput),
                fmt_load(peak.load),
                self.shape.statement
            ));
        }
        match (self.shape.approach, self.shape.fall) {
            (Some(approach), Some(fall)) => out.push(format!(
                "The approach to the peak is {} and the fall after it is {}{}.",
                approach.as_str(),
                fall.as_str(),
                if approach == Transition::Abrupt || fall == Transition::Abrupt {
                    ": little warning before saturation"
                } else {
                    ": saturation can be seen coming"
                }
            )),
            (Some(approach), None) => out.push(format!(
                "The approach to the peak is {}.",
                approach.as_str()
            )),
            _ => {}
        }
        if let Some(qos) = &self.qos {
            out.push(qos.statement.clone());
        }
        if let Some(knee) = &self.knee {
            out.push(format!(
                "Kneedle puts the knee at a load of {} ({}): beyond it each step adds less throughput.",
                fmt_load(knee.load),
                fmt_value(knee.throughput)
            ));
        }
        if let Some(usl) = &self.usl {
            let mut sentence = format!(
                "The USL fit gives contention alpha = {:.4}, coherency beta = {:.3e} and gamma = {}",
                usl.alpha,
                usl.beta,
                fmt_value(usl.gamma)
            );
            match (usl.n_max, usl.x_max) {
                (Some(n), Some(x)) => sentence.push_str(&format!(
                    "; it predicts a peak of {} at a load of {}",
                    fmt_value(x),
                    fmt_load_estimate(n)
                )),
                _ => sentence.push_str("; with beta = 0 it predicts no peak"),
            }
            if let Some(x_lim) = usl.x_lim {
                sentence.push_str(&format!(" and an Amdahl ceiling of {}", fmt_value(x_lim)));
            }
            sentence.push('.');
            out.push(sentence);
        }
        out
    }
}

fn peak(sorted: &[CurvePoint]) -> Peak {
    // The first of equal maxima: the smallest load that reaches the peak.
    let mut index = 0;
    for (i, p) in sorted.iter().enumerate() {
        if p.throughput > sorted[index].throughput {
            index = i;
        }
    }
    Peak {
        load: sorted[index].load,
        throughput: sorted[index].throughput,
        index,
        at_largest_load: index + 1 == sorted.len(),
    }
}

fn slope(a: &CurvePoint, b: &CurvePoint) -> f64 {
    (b.throughput - a.throughput) / (b.load - a.load)
}

fn shape(sorted: &[CurvePoint], peak: &Peak, options: &CapacityOptions) -> Shape {
    let last = sorted[sorted.len() - 1];
    let pct_below = |x: f64| {
        if peak.throughput > 0.0 {
            (peak.throughput - x) / peak.throughput * 100.0
        } else {
            0.0
        }
    };
    let after = &sorted[peak.index + 1..];
    let max_drop_pct = after
        .iter()
        .map(|p| pct_below(p.throughput))
        .fold(0.0, f64::max);
    let drop_at_largest_pct = pct_below(last.throughput);
    let plateau = !after.is_empty() && max_drop_pct <= options.plateau_pct;
    // First crossing of the notable fall after the peak, interpolated.
    let target = peak.throughput * (1.0 - options.notable_fall_pct / 100.0);
    let mut notable_fall_load = None;
    for w in sorted[peak.index..].windows(2) {
        if w[1].throughput <= target {
            let t = (w[0].throughput - target) / (w[0].throughput - w[1].throughput);
            notable_fall_load = Some(w[0].load + t.clamp(0.0, 1.0) * (w[1].load - w[0].load));
            break;
        }
    }
    let reference_slope = sorted[..=peak.index]
        .windows(2)
        .map(|w| slope(&w[0], &w[1]))
        .fold(None, |acc: Option<f64>, s| {
            Some(acc.map_or(s, |a| a.max(s)))
        })
        .filter(|s| *s > 0.0);
    let approach_ratio = reference_slope
        .filter(|_| peak.index > 0)
        .map(|r| slope(&sorted[peak.index - 1], &sorted[peak.index]) / r);
    let fall_ratio = reference_slope
        .filter(|_| !after.is_empty())
        .map(|r| -slope(&sorted[peak.index], &sorted[peak.index + 1]) / r);
    let classify = |ratio: f64| {
        if ratio >= options.abrupt_slope_fraction {
            Transition::Abrupt
        } else {
            Transition::Gradual
        }
    };
    let statement = if after.is_empty() {
        format!(
            "is still rising at the largest load tested, {}",
            fmt_load(last.load)
        )
    } else if plateau {
        format!(
            "stays within {:.1}% of peak out to {}",
            max_drop_pct,
            fmt_load(last.load)
        )
    } else {
        match notable_fall_load {
            Some(load) if load < last.load => format!(
                "falls {}% by {} and {:.1}% by {}",
                fmt_load(options.notable_fall_pct),
                fmt_load_estimate(load),
                drop_at_largest_pct,
                fmt_load(last.load)
            ),
            Some(load) => format!("falls {:.1}% by {}", drop_at_largest_pct, fmt_load(load)),
            None => format!(
                "falls {:.1}% by {}",
                drop_at_largest_pct,
                fmt_load(last.load)
            ),
        }
    };
    Shape {
        statement,
        largest_load: last.load,
        drop_at_largest_pct,
        max_drop_pct,
        plateau,
        notable_fall_load,
        notable_fall_pct: options.notable_fall_pct,
        reference_slope,
        approach_ratio,
        fall_ratio,
        approach: approach_ratio.filter(|_| !after.is_empty()).map(classify),
        fall: fall_ratio.map(classify),
        rule: format!(
            "plateau when no load after the peak is more than {}% below it; abrupt when the slope \
             into (or out of) the peak is at least {} of the steepest slope before it, gradual otherwise",
            fmt_load(options.plateau_pct),
            options.abrupt_slope_fraction
        ),
    }
}

fn qos_capacity(sorted: &[CurvePoint], limit_ms: f64) -> Option<QosCapacity> {
    let steps: Vec<(f64, f64, f64)> = sorted
        .iter()
        .filter_map(|p| p.p95_ms.map(|v| (p.load, p.throughput, v)))
        .collect();
    let first = steps.first()?;
    let limit = fmt_load(limit_ms);
    let first_fail = steps.iter().position(|s| s.2 > limit_ms);
    let (load, throughput, bound, method, statement) = match first_fail {
        None => {
            let last = steps[steps.len() - 1];
            (
                Some(last.0),
                Some(last.1),
                CapacityBound::AllPassed,
                format!(
                    "every step met p95 <= {limit} ms, so the capacity is at least the largest load tested"
                ),
                format!(
                    "QoS (p95 <= {limit} ms) held at every load tested: the capacity is at least {}.",
                    fmt_load(last.0)
                ),
            )
        }
        Some(0) => (
            None,
            None,
            CapacityBound::NonePassed,
            format!("the smallest step already exceeded p95 <= {limit} ms"),
            format!(
                "QoS (p95 <= {limit} ms) failed already at the smallest load tested, {} (p95 {} ms).",
                fmt_load(first.0),
                fmt_value(first.2)
            ),
        ),
        Some(f) => {
            let (l0, x0, p0) = steps[f - 1];
            let (l1, x1, p1) = steps[f];
            let t = ((limit_ms - p0) / (p1 - p0)).clamp(0.0, 1.0);
            let load = l0 + t * (l1 - l0);
            let throughput = x0 + t * (x1 - x0);
            (
                Some(load),
                Some(throughput),
                CapacityBound::Interpolated,
                format!(
                    "linear interpolation of p95 between the last passing step ({} at {} ms) and the \
                     first failing step ({} at {} ms) to where it crosses {limit} ms; steps after the \
                     first failure are not considered",
                    fmt_load(l0),
                    fmt_value(p0),
                    fmt_load(l1),
                    fmt_value(p1)
                ),
                format!(
                    "QoS (p95 <= {limit} ms) holds up to a load of about {} (interpolated between {} \
                     and {}), at a throughput of about {}.",
                    fmt_load_estimate(load),
                    fmt_load(l0),
                    fmt_load(l1),
                    fmt_value(throughput)
                ),
            )
        }
    };
    Some(QosCapacity {
        limit_ms,
        load,
        throughput,
        bound,
        method,
        statement,
    })
}

/// A load as measured: integers without decimals.
fn fmt_load(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// An interpolated or fitted load: one decimal.
fn fmt_load_estimate(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// A throughput or time: thousands separators from 1000 up, else 3
/// significant digits.
pub(crate) fn fmt_value(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x.abs() >= 1000.0 {
        group_thousands(x)
    } else if x == 0.0 {
        "0".to_string()
    } else {
        let decimals = (2 - x.abs().log10().floor() as i32).max(0) as usize;
        format!("{x:.decimals$}")
    }
}

/// `x` rounded to a whole number with thousands separators: `12,475,980`.
pub fn group_thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs().round());
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if x < 0.0 {
        format!("-{grouped}")
    } else {
        grouped
    }
}

/// A number for a table or a sentence: thousands separators from 1000 up,
/// otherwise up to 4 significant digits without trailing zeros.
pub fn format_number(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x.abs() >= 1000.0 {
        group_thousands(x)
    } else if x == x.round() {
        format!("{x:.0}")
    } else {
        let decimals = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
        let text = format!("{x:.decimals$}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn curve(loads: &[f64], throughput: &[f64]) -> Vec<CurvePoint> {
        loads
            .iter()
            .zip(throughput)
            .map(|(&load, &throughput)| CurvePoint {
                load,
                throughput,
                p95_ms: None,
            })
            .collect()
    }

    #[test]
    fn formats_values() {
        assert_eq!(fmt_value(12_475_980.0), "12,475,980");
        assert_eq!(fmt_value(-1234.4), "-1,234");
        assert_eq!(fmt_value(82.85), "82.8");
        assert_eq!(fmt_value(0.0277), "0.0277");
        assert_eq!(fmt_load(72.0), "72");
        assert_eq!(fmt_load_estimate(69.04), "69.0");
    }

    #[test]
    fn qos_capacity_interpolates_and_bounds() {
        let mut points = curve(&[25.0, 50.0, 100.0, 200.0], &[10.0, 20.0, 38.0, 40.0]);
        for (p, p95) in points.iter_mut().zip([100.0, 300.0, 800.0, 1800.0]) {
            p.p95_ms = Some(p95);
        }
        let a = CapacityAnalysis::compute(&points, &CapacityOptions::default()).unwrap();
        let qos = a.qos.unwrap();
        assert_eq!(qos.bound, CapacityBound::Interpolated);
        // p95 goes 800 -> 1800 between 100 and 200: 1000 ms is a fifth of the way.
        assert!((qos.load.unwrap() - 120.0).abs() < 1e-9);
        assert!((qos.throughput.unwrap() - 38.4).abs() < 1e-9);
        assert!(qos.method.contains("linear interpolation"));

        let pass = CapacityAnalysis::compute(
            &points,
            &CapacityOptions {
                qos_p95_ms: 5000.0,
                ..CapacityOptions::default()
            },
        )
        .unwrap();
        assert_eq!(pass.qos.as_ref().unwrap().bound, CapacityBound::AllPassed);
        assert_eq!(pass.qos.as_ref().unwrap().load, Some(200.0));
        let fail = CapacityAnalysis::compute(
            &points,
            &CapacityOptions {
                qos_p95_ms: 50.0,
                ..CapacityOptions::default()
            },
        )
        .unwrap();
        assert_eq!(fail.qos.as_ref().unwrap().bound, CapacityBound::NonePassed);
        assert_eq!(fail.qos.as_ref().unwrap().load, None);
    }

    #[test]
    fn rejects_bad_input() {
        let opts = CapacityOptions::default();
        assert_eq!(
            CapacityAnalysis::compute(&curve(&[1.0], &[1.0]), &opts),
            Err(CapacityError::TooFewPoints(1))
        );
        assert_eq!(
            CapacityAnalysis::compute(&curve(&[1.0, 1.0], &[1.0, 2.0]), &opts),
            Err(CapacityError::DuplicateLoad(1.0))
        );
        assert_eq!(
            CapacityAnalysis::compute(&curve(&[1.0, f64::NAN], &[1.0, 2.0]), &opts),
            Err(CapacityError::NonFinite(1))
        );
    }

    #[test]
    fn a_rising_curve_has_no_peak_yet_and_two_points_no_usl() {
        let a = CapacityAnalysis::compute(
            &curve(&[2.0, 1.0], &[3.0, 2.0]),
            &CapacityOptions::default(),
        )
        .unwrap();
        assert_eq!(a.points[0].load, 1.0);
        assert!(a.peak.at_largest_load);
        assert!(a.shape.statement.contains("still rising"));
        assert!(a.usl.is_none());
        assert!(a.usl_error.as_deref().unwrap().contains("at least 3"));
        assert!(a.qos.is_none());
    }
}
