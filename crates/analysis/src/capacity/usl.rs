//! Gunther's Universal Scalability Law, fitted by bounded nonlinear least
//! squares (projected Levenberg–Marquardt).

use serde::{Deserialize, Serialize};

use super::linalg;

/// Fewer points than this and the fit is refused: three parameters need at
/// least three points.
pub const USL_MIN_POINTS: usize = 3;
/// Fewer points than this and the fit carries a warning (the R `usl`
/// package's threshold).
pub const USL_FEW_POINTS: usize = 6;

/// Upper bound on Levenberg–Marquardt iterations per start.
const MAX_ITERATIONS: usize = 1000;
/// Starting values of α for the grid of starts.
const ALPHA_GRID: [f64; 7] = [0.0, 1e-3, 1e-2, 0.03, 0.1, 0.3, 0.7];
/// Starting values of β for the grid of starts.
const BETA_GRID: [f64; 7] = [0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1];

/// How the fit is made, as printed with the results.
pub const USL_METHOD: &str = "bounded nonlinear least squares (projected Levenberg-Marquardt with \
     Marquardt scaling; 0 <= alpha <= 1, 0 <= beta <= 1, gamma >= 0; best of a 7x7 grid of \
     alpha/beta starts with gamma from the smallest-load point, plus the R usl package's start)";

/// Why the USL could not be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UslError {
    /// Fewer than [`USL_MIN_POINTS`] points.
    #[error("the USL has three parameters and needs at least {USL_MIN_POINTS} points; got {0}")]
    TooFewPoints(usize),
    /// A load or throughput is NaN or infinite.
    #[error("point {0} is not a finite number")]
    NonFinite(usize),
    /// A load is zero or negative.
    #[error("point {0} has a load <= 0; the USL needs positive loads")]
    NonPositiveLoad(usize),
    /// No start led to a finite fit.
    #[error("no start value led to a finite fit")]
    NoFit,
}

/// Standard errors of the three coefficients.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct UslStdErrors {
    /// Standard error of α.
    pub alpha: f64,
    /// Standard error of β.
    pub beta: f64,
    /// Standard error of γ.
    pub gamma: f64,
}

/// A fitted Universal Scalability Law
/// `X(N) = γN / (1 + α(N−1) + βN(N−1))`.
///
/// α is contention (Gunther's σ), β coherency delay (Gunther's κ), γ the
/// throughput of a single user (Gunther's λ). The R `usl` package (2.0 and
/// later) uses the same three parameters under the same names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Contention, in `[0, 1]`.
    pub alpha: f64,
    /// Coherency delay, in `[0, 1]`.
    pub beta: f64,
    /// Throughput at N = 1 (the scale), `>= 0`.
    pub gamma: f64,
    /// Standard errors `sqrt(diag(σ² (JᵀJ)⁻¹))` with the Jacobian at the
    /// solution and `σ² = SSE / (n − 3)`; `None` with no degrees of freedom
    /// left or a singular `JᵀJ`.
    pub std_errors: Option<UslStdErrors>,
    /// The residual standard error `sqrt(SSE / (n − 3))`; `None` when n = 3.
    pub residual_std_error: Option<f64>,
    /// Degrees of freedom of the residuals, `n − 3`.
    pub degrees_of_freedom: usize,
    /// Sum of squared residuals.
    pub sse: f64,
    /// Load of peak throughput, `sqrt((1 − α) / β)`; `None` when β = 0 (no
    /// peak: the curve rises to its asymptote for ever).
    pub n_max: Option<f64>,
    /// Throughput predicted at [`UslFit::n_max`].
    pub x_max: Option<f64>,
    /// Load of optimal scalability, `1 / α` (where the linear bound meets
    /// the Amdahl asymptote); `None` when α = 0.
    pub n_opt: Option<f64>,
    /// The Amdahl asymptote `γ / α`; `None` when α = 0.
    pub x_lim: Option<f64>,
    /// Coefficients that ended on a bound, e.g. `beta = 0 (lower bound)`.
    pub at_bounds: Vec<String>,
    /// Number of points fitted.
    pub points: usize,
    /// Levenberg–Marquardt iterations of the winning start.
    pub iterations: usize,
    /// Whether the winning start met the convergence test (otherwise it ran
    /// out of iterations).
    pub converged: bool,
    /// Problems worth telling the reader, e.g. too few points.
    pub warnings: Vec<String>,
    /// The method, for the output.
    pub method: String,
}

impl UslFit {
    /// The fitted throughput at load `n`.
    pub fn predict(&self, n: f64) -> f64 {
        model(&[self.alpha, self.beta, self.gamma], n)
    }
}

/// The USL at `n` for parameters `[α, β, γ]`.
fn model(p: &[f64; 3], n: f64) -> f64 {
    p[2] * n / (1.0 + p[0] * (n - 1.0) + p[1] * n * (n - 1.0))
}

/// Lower and upper bounds of `[α, β, γ]`.
const LOWER: [f64; 3] = [0.0, 0.0, 0.0];
const UPPER: [f64; 3] = [1.0, 1.0, f64::INFINITY];

fn clamp(p: [f64; 3]) -> [f64; 3] {
    let mut out = p;
    for j in 0..3 {
        out[j] = out[j].clamp(LOWER[j], UPPER[j]);
    }
    out
}

/// Residuals `y − X(N)`, the Jacobian of X (row-major, n × 3) and the SSE.
/// `None` when the model is not finite at some load (denominator <= 0).
fn evaluate(p: &[f64; 3], data: &[(f64, f64)]) -> Option<(Vec<f64>, Vec<f64>, f64)> {
    let mut residuals = Vec::with_capacity(data.len());
    let mut jacobian = Vec::with_capacity(data.len() * 3);
    let mut sse = 0.0;
    for &(n, y) in data {
        let d = 1.0 + p[0] * (n - 1.0) + p[1] * n * (n - 1.0);
        if d <= 0.0 || !d.is_finite() {
            return None;
        }
        let f = p[2] * n / d;
        let r = y - f;
        residuals.push(r);
        sse += r * r;
        let d2 = d * d;
        jacobian.push(-p[2] * n * (n - 1.0) / d2);
        jacobian.push(-p[2] * n * n * (n - 1.0) / d2);
        jacobian.push(n / d);
    }
    sse.is_finite().then_some((residuals, jacobian, sse))
}

/// `JᵀJ` (3 × 3) and `Jᵀr`.
fn normal_equations(jacobian: &[f64], residuals: &[f64]) -> ([f64; 9], [f64; 3]) {
    let mut jtj = [0.0; 9];
    let mut jtr = [0.0; 3];
    for (row, r) in jacobian.chunks_exact(3).zip(residuals) {
        for a in 0..3 {
            jtr[a] += row[a] * r;
            for b in 0..3 {
                jtj[a * 3 + b] += row[a] * row[b];
            }
        }
    }
    (jtj, jtr)
}

struct Solution {
    p: [f64; 3],
    sse: f64,
    iterations: usize,
    converged: bool,
}

/// Projected Levenberg–Marquardt from one start.
///
/// Each iteration fixes the coefficients that sit on a bound with the
/// gradient pushing outwards (the active set), solves
/// `(JᵀJ + λ diag(JᵀJ)) δ = Jᵀr` for the others (in variables scaled by
/// `sqrt(diag(JᵀJ))`), projects `p + δ` onto the
/// bounds and accepts the step if the SSE fell (then λ /= 10), otherwise
/// raises λ tenfold and retries. It stops when an accepted step changes the
/// SSE by less than 1e-14 relative and every coefficient by less than 1e-10
/// relative, or when no λ up to 1e20 reduces the SSE (a minimum to working
/// precision).
fn levenberg_marquardt(start: [f64; 3], data: &[(f64, f64)]) -> Option<Solution> {
    let mut p = clamp(start);
    let (mut residuals, mut jacobian, mut sse) = evaluate(&p, data)?;
    let mut lambda = 1e-3;
    for iteration in 1..=MAX_ITERATIONS {
        if sse == 0.0 {
            return Some(Solution {
                p,
                sse,
                iterations: iteration,
                converged: true,
            });
        }
        let (jtj, jtr) = normal_equations(&jacobian, &residuals);
        // The descent direction for SSE is +Jᵀr (r = y − X).
        let free: Vec<usize> = (0..3)
            .filter(|&j| {
                let pinned_low = p[j] <= LOWER[j] && jtr[j] <= 0.0;
                let pinned_high = p[j] >= UPPER[j] && jtr[j] >= 0.0;
                !(pinned_low || pinned_high)
            })
            .collect();
        if free.is_empty() {
            return Some(Solution {
                p,
                sse,
                iterations: iteration,
                converged: true,
            });
        }
        let k = free.len();
        let mut accepted = None;
        while lambda <= 1e20 {
            // Solved in Marquardt's scaled variables (unit diagonal): the
            // coefficients differ by many orders of magnitude (beta ~ 1e-4,
            // gamma ~ 1e6 for bytes/s), and JᵀJ unscaled is singular to
            // working precision.
            let scale: Vec<f64> = free
                .iter()
                .map(|&fi| jtj[fi * 3 + fi].sqrt().max(f64::MIN_POSITIVE))
                .collect();
            let mut a = vec![0.0; k * k];
            let mut b = vec![0.0; k];
            for (i, &fi) in free.iter().enumerate() {
                b[i] = jtr[fi] / scale[i];
                for (j, &fj) in free.iter().enumerate() {
                    a[i * k + j] = jtj[fi * 3 + fj] / (scale[i] * scale[j]);
                }
                a[i * k + i] += lambda;
            }
            if let Some(z) = linalg::solve(&a, &b, k) {
                let mut trial = p;
                for (i, &fi) in free.iter().enumerate() {
                    trial[fi] += z[i] / scale[i];
                }
                let trial = clamp(trial);
                if let Some((r, j, s)) = evaluate(&trial, data)
                    && s < sse
                {
                    accepted = Some((trial, r, j, s));
                    lambda = (lambda / 10.0).max(1e-15);
                    break;
                }
            }
            lambda *= 10.0;
        }
        let Some((trial, r, j, s)) = accepted else {
            return Some(Solution {
                p,
                sse,
                iterations: iteration,
                converged: true,
            });
        };
        let small_change = (sse - s) <= 1e-14 * sse
            && (0..3).all(|i| (trial[i] - p[i]).abs() <= 1e-10 * (p[i].abs() + 1e-300));
        p = trial;
        residuals = r;
        jacobian = j;
        sse = s;
        if small_change {
            return Some(Solution {
                p,
                sse,
                iterations: iteration,
                converged: true,
            });
        }
    }
    Some(Solution {
        p,
        sse,
        iterations: MAX_ITERATIONS,
        converged: false,
    })
}

/// Fits the USL to `(load, throughput)` points.
///
/// The points need not be sorted; repeated loads are allowed (the fit is
/// least squares). Loads must be positive. With fewer than
/// [`USL_MIN_POINTS`] points it refuses; with fewer than [`USL_FEW_POINTS`]
/// it warns. See [`USL_METHOD`] for the algorithm: every start of the grid
/// is run to convergence and the smallest SSE wins, so the result does not
/// hang on one starting guess.
pub fn fit_usl(data: &[(f64, f64)]) -> Result<UslFit, UslError> {
    if data.len() < USL_MIN_POINTS {
        return Err(UslError::TooFewPoints(data.len()));
    }
    for (i, &(n, y)) in data.iter().enumerate() {
        if !n.is_finite() || !y.is_finite() {
            return Err(UslError::NonFinite(i));
        }
        if n <= 0.0 {
            return Err(UslError::NonPositiveLoad(i));
        }
    }
    let Some(&(n0, y0)) = data.iter().min_by(|a, b| a.0.total_cmp(&b.0)) else {
        return Err(UslError::TooFewPoints(0));
    };
    // The R usl package starts from gamma = max(y / N), alpha = 0.01, beta = 0.0001.
    let r_gamma = data.iter().map(|&(n, y)| y / n).fold(0.0_f64, f64::max);
    let mut starts = vec![[0.01, 0.0001, r_gamma]];
    for &alpha in &ALPHA_GRID {
        for &beta in &BETA_GRID {
            // gamma such that the curve passes through the smallest-load point.
            let denominator = 1.0 + alpha * (n0 - 1.0) + beta * n0 * (n0 - 1.0);
            let gamma = if y0 > 0.0 {
                y0 * denominator / n0
            } else {
                r_gamma
            };
            starts.push([alpha, beta, gamma]);
        }
    }
    let best = starts
        .into_iter()
        .filter_map(|start| levenberg_marquardt(start, data))
        .filter(|s| s.sse.is_finite())
        .min_by(|a, b| a.sse.total_cmp(&b.sse))
        .ok_or(UslError::NoFit)?;
    Ok(finish(best, data))
}

fn finish(solution: Solution, data: &[(f64, f64)]) -> UslFit {
    let [alpha, beta, gamma] = solution.p;
    let points = data.len();
    let degrees_of_freedom = points.saturating_sub(3);
    let variance = (degrees_of_freedom > 0).then(|| solution.sse / degrees_of_freedom as f64);
    let std_errors = variance.and_then(|variance| {
        let (_, jacobian, _) = evaluate(&solution.p, data)?;
        let (jtj, _) = normal_equations(&jacobian, &vec![0.0; points]);
        // Inverted in scaled form for the same reason as in the iterations.
        let scale: Vec<f64> = (0..3).map(|i| jtj[i * 3 + i].sqrt()).collect();
        if scale.iter().any(|s| s.is_nan() || *s <= 0.0) {
            return None;
        }
        let mut scaled = [0.0; 9];
        for i in 0..3 {
            for j in 0..3 {
                scaled[i * 3 + j] = jtj[i * 3 + j] / (scale[i] * scale[j]);
            }
        }
        let mut inv = linalg::inverse(&scaled, 3)?;
        for i in 0..3 {
            for j in 0..3 {
                inv[i * 3 + j] /= scale[i] * scale[j];
            }
        }
        let se = |i: usize| {
            let v = inv[i * 3 + i] * variance;
            (v >= 0.0 && v.is_finite()).then(|| v.sqrt())
        };
        Some(UslStdErrors {
            alpha: se(0)?,
            beta: se(1)?,
            gamma: se(2)?,
        })
    });
    let n_max = (beta > 0.0).then(|| ((1.0 - alpha) / beta).sqrt());
    let x_max = n_max.map(|n| model(&solution.p, n));
    let n_opt = (alpha > 0.0).then(|| 1.0 / alpha);
    let x_lim = (alpha > 0.0).then(|| gamma / alpha);
    let mut at_bounds = Vec::new();
    for (name, value, j) in [("alpha", alpha, 0), ("beta", beta, 1), ("gamma", gamma, 2)] {
        if value <= LOWER[j] {
            at_bounds.push(format!("{name} = {} (lower bound)", LOWER[j]));
        } else if value >= UPPER[j] {
            at_bounds.push(format!("{name} = {} (upper bound)", UPPER[j]));
        }
    }
    let mut warnings = Vec::new();
    if points < USL_FEW_POINTS {
        warnings.push(format!(
            "only {points} points (fewer than {USL_FEW_POINTS}): the fit may not be accurate"
        ));
    }
    if !solution.converged {
        warnings.push(format!(
            "the fit stopped after {MAX_ITERATIONS} iterations without meeting the convergence test"
        ));
    }
    if beta == 0.0 {
        warnings.push(
            "beta = 0: no coherency delay was detected, so the fitted curve has no peak (n_max is unbounded)"
                .to_string(),
        );
    }
    UslFit {
        alpha,
        beta,
        gamma,
        std_errors,
        residual_std_error: variance.map(f64::sqrt),
        degrees_of_freedom,
        sse: solution.sse,
        n_max,
        x_max,
        n_opt,
        x_lim,
        at_bounds,
        points,
        iterations: solution.iterations,
        converged: solution.converged,
        warnings,
        method: USL_METHOD.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn recovers_exact_parameters() {
        let truth = [0.05, 0.0002, 120.0];
        let data: Vec<(f64, f64)> = [1.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0]
            .iter()
            .map(|&n| (n, model(&truth, n)))
            .collect();
        let fit = fit_usl(&data).unwrap();
        assert!((fit.alpha - 0.05).abs() < 1e-8, "{fit:?}");
        assert!((fit.beta - 0.0002).abs() < 1e-10, "{fit:?}");
        assert!((fit.gamma - 120.0).abs() < 1e-6, "{fit:?}");
        assert!(fit.warnings.is_empty(), "{fit:?}");
        let n_max = fit.n_max.unwrap();
        assert!((n_max - (0.95_f64 / 0.0002).sqrt()).abs() < 1e-4);
        assert!((fit.n_opt.unwrap() - 20.0).abs() < 1e-6);
        assert!((fit.x_lim.unwrap() - 2400.0).abs() < 1e-4);
    }

    #[test]
    fn linear_data_ends_on_the_lower_bounds() {
        let data: Vec<(f64, f64)> = (1..=8)
            .map(|n| (f64::from(n), 10.0 * f64::from(n)))
            .collect();
        let fit = fit_usl(&data).unwrap();
        assert_eq!(fit.alpha, 0.0);
        assert_eq!(fit.beta, 0.0);
        assert!((fit.gamma - 10.0).abs() < 1e-9);
        assert_eq!(fit.n_max, None);
        assert_eq!(fit.n_opt, None);
        assert_eq!(fit.x_lim, None);
        assert_eq!(fit.at_bounds.len(), 2, "{:?}", fit.at_bounds);
    }

    #[test]
    fn refuses_and_warns() {
        assert_eq!(
            fit_usl(&[(1.0, 1.0), (2.0, 2.0)]),
            Err(UslError::TooFewPoints(2))
        );
        assert_eq!(
            fit_usl(&[(1.0, 1.0), (0.0, 2.0), (3.0, 2.5)]),
            Err(UslError::NonPositiveLoad(1))
        );
        assert_eq!(
            fit_usl(&[(1.0, 1.0), (2.0, f64::NAN), (3.0, 2.5)]),
            Err(UslError::NonFinite(1))
        );
        let fit = fit_usl(&[(1.0, 1.0), (2.0, 1.8), (4.0, 3.0), (8.0, 3.6)]).unwrap();
        assert!(
            fit.warnings.iter().any(|w| w.contains("only 4 points")),
            "{:?}",
            fit.warnings
        );
        assert_eq!(fit.degrees_of_freedom, 1);
    }
}
