//! Memory against open sessions, fitted the way seed 000 builds its formula.
//!
//! Seed 000 ("Memory Configuration Summary") adds up a base (code, data,
//! QuickFinder: 8,000,000 bytes for the POA), n × 2,000,000 bytes per TCP
//! handler or worker thread, and n × 50,000 bytes per client/server
//! connection. A server like Dovecot runs one process per connection by
//! default, so "per thread" and "per connection" grow together with the
//! sessions, and the formula collapses to `base + n × per_session`. Instead
//! of adding up component sizes, peakhour measures the server's memory at
//! several numbers of open sessions and fits that line by ordinary least
//! squares.

use serde::{Deserialize, Serialize};

use super::{PlanError, check};

/// One measurement: the server's memory with `sessions` sessions open.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryPoint {
    /// Open sessions.
    pub sessions: f64,
    /// The server's memory, bytes (cgroup `memory.usage_in_bytes`, or the
    /// RSS of its process groups).
    pub bytes: f64,
}

/// `memory = base + sessions × per_session`, with the fit's uncertainty.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryFit {
    /// Intercept: the server with no session open, bytes.
    pub base_bytes: f64,
    /// Slope: memory per open session, bytes.
    pub per_session_bytes: f64,
    /// Standard error of the intercept.
    pub base_sd_bytes: f64,
    /// Standard error of the slope.
    pub per_session_sd_bytes: f64,
    /// Covariance of intercept and slope (bytes²), needed to carry the
    /// error to a prediction.
    pub covariance: f64,
    /// Residual standard error, √(Σ residual² / (n − 2)); 0 with 2 points.
    pub residual_sd_bytes: f64,
    /// Largest |measured − fitted| among the points.
    pub max_abs_residual_bytes: f64,
    /// Coefficient of determination (1 when the points lie on the line).
    pub r_squared: f64,
    /// The points fitted.
    pub points: Vec<MemoryPoint>,
}

impl MemoryFit {
    /// Predicted memory with `sessions` open, and its standard error
    /// (of the line, from the fit's covariance).
    pub fn at(&self, sessions: f64) -> (f64, f64) {
        let bytes = self.base_bytes + sessions * self.per_session_bytes;
        let var = self.base_sd_bytes.powi(2)
            + sessions.powi(2) * self.per_session_sd_bytes.powi(2)
            + 2.0 * sessions * self.covariance;
        (bytes, var.max(0.0).sqrt())
    }
}

/// Fits `bytes = base + sessions × per_session` by least squares.
///
/// Needs at least two different session counts. With exactly two points
/// the line goes through them and every error is 0: say so in a report,
/// since the model then has no check.
pub fn fit_memory(points: &[MemoryPoint]) -> Result<MemoryFit, PlanError> {
    for p in points {
        check("memory point sessions", p.sessions, 0.0, false)?;
        check("memory point bytes", p.bytes, 0.0, false)?;
    }
    let n = points.len() as f64;
    let distinct = {
        let mut x: Vec<f64> = points.iter().map(|p| p.sessions).collect();
        x.sort_by(f64::total_cmp);
        x.dedup();
        x.len()
    };
    if distinct < 2 {
        return Err(PlanError::TooFewMemoryPoints(distinct));
    }
    let mean_x = points.iter().map(|p| p.sessions).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.bytes).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.sessions - mean_x).powi(2)).sum();
    let sxy: f64 = points
        .iter()
        .map(|p| (p.sessions - mean_x) * (p.bytes - mean_y))
        .sum();
    let syy: f64 = points.iter().map(|p| (p.bytes - mean_y).powi(2)).sum();
    let slope = sxy / sxx;
    let intercept = mean_y - slope * mean_x;
    let residuals: Vec<f64> = points
        .iter()
        .map(|p| p.bytes - (intercept + slope * p.sessions))
        .collect();
    let ssr: f64 = residuals.iter().map(|r| r * r).sum();
    let s2 = if points.len() > 2 {
        ssr / (n - 2.0)
    } else {
        0.0
    };
    Ok(MemoryFit {
        base_bytes: intercept,
        per_session_bytes: slope,
        base_sd_bytes: (s2 * (1.0 / n + mean_x * mean_x / sxx)).sqrt(),
        per_session_sd_bytes: (s2 / sxx).sqrt(),
        covariance: -mean_x * s2 / sxx,
        residual_sd_bytes: s2.sqrt(),
        max_abs_residual_bytes: residuals.iter().map(|r| r.abs()).fold(0.0, f64::max),
        r_squared: if syy > 0.0 { 1.0 - ssr / syy } else { 1.0 },
        points: points.to_vec(),
    })
}
