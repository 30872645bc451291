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

/// The memory of a run's sessions while they work (a `peakhour run` of the
/// profile at its peak hour on the lab the tasks were measured on), for the
/// memory model in place of idle sessions: a working `imap` process holds
/// the caches of the mail its user read, and goes on growing through the
/// window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkingMemory {
    /// The run directory it was read from.
    pub run: String,
    /// Sessions the server held in the steady window (the monitor's
    /// `dovecot_connections`, else the run's users).
    pub sessions: f64,
    /// The steady window's length, seconds.
    pub window_s: f64,
    /// The server's session memory (a shaped lab's charge without page
    /// cache) fitted at the window's end, bytes.
    pub end_bytes: f64,
    /// Its real rise per second over the window's last half
    /// ([`crate::qos::Trend::real_rise_per_s`]; 0 when flat).
    pub rise_bytes_per_s: f64,
    /// The seconds after the window the rise is carried over
    /// ([`crate::qos::cap_horizon_s`]: the rest of the hour the window
    /// stands for, as the run's verdict projects it).
    pub horizon_s: f64,
}

impl WorkingMemory {
    /// The memory at the end of the hour the window stands for: the
    /// window's end plus its rise over the horizon, the figure the run's
    /// verdict holds to a shaped lab's cap.
    pub fn bytes_at_hour_end(&self) -> f64 {
        self.end_bytes + self.rise_bytes_per_s * self.horizon_s
    }

    /// The memory at the window's end and its trend over the last half of
    /// `series` (seconds, bytes; the steady window's samples).
    pub fn of_series(run: String, sessions: f64, series: &[(f64, f64)]) -> Option<WorkingMemory> {
        let trend = crate::qos::last_half_trend(series)?;
        let window_s = series.last()?.0 - series.first()?.0;
        Some(WorkingMemory {
            run,
            sessions,
            window_s,
            end_bytes: trend.to,
            rise_bytes_per_s: trend.real_rise_per_s(),
            horizon_s: crate::qos::cap_horizon_s(window_s),
        })
    }
}

/// The memory model of working sessions: the idle server (the 0-session
/// points of `idle`, the tasks' baseline) and each working run's memory at
/// the end of its hour ([`WorkingMemory::bytes_at_hour_end`]), fitted as
/// [`fit_memory`] fits idle sessions. Two working runs at different session
/// counts (half and all, as `tasks` holds idle ones) give the line a check.
pub fn working_memory_fit(
    idle: Option<&MemoryFit>,
    working: &[WorkingMemory],
) -> Result<MemoryFit, PlanError> {
    let points: Vec<MemoryPoint> = idle
        .into_iter()
        .flat_map(|f| f.points.iter().copied().filter(|p| p.sessions == 0.0))
        .chain(working.iter().map(|w| MemoryPoint {
            sessions: w.sessions,
            bytes: w.bytes_at_hour_end(),
        }))
        .collect();
    fit_memory(&points)
}

/// Puts the memory model of `working` runs ([`working_memory_fit`]) in
/// `memory` (a tasks.json's) in place of its idle sessions' model, and
/// returns the sentence a plan states about it; `None` (and `memory`
/// unchanged) without runs.
pub fn use_working_memory(
    memory: &mut Option<MemoryFit>,
    working: &[WorkingMemory],
) -> Result<Option<String>, PlanError> {
    if working.is_empty() {
        return Ok(None);
    }
    let fit = working_memory_fit(memory.as_ref(), working)?;
    let runs: Vec<String> = working
        .iter()
        .map(|w| {
            format!(
                "{}: {:.0} sessions, {:.0} MiB at the end of its {:.0} s window, rising {:.1} KiB/s, {:.0} MiB at the hour's end",
                w.run,
                w.sessions,
                w.end_bytes / MIB,
                w.window_s,
                w.rise_bytes_per_s / 1024.0,
                w.bytes_at_hour_end() / MIB
            )
        })
        .collect();
    let idle = memory.as_ref().map_or_else(
        || "no idle model in the tasks".to_owned(),
        |f| format!("{:.0} KiB idle", f.per_session_bytes / 1024.0),
    );
    let sentence = format!(
        "memory per session is what working sessions hold at the end of the hour their window stands for ({}): {:.0} ± {:.0} KiB per session against {idle}",
        runs.join("; "),
        fit.per_session_bytes / 1024.0,
        fit.per_session_sd_bytes / 1024.0
    );
    *memory = Some(fit);
    Ok(Some(sentence))
}

const MIB: f64 = 1024.0 * 1024.0;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A steady window of `seconds` 1 s samples: `start` bytes rising
    /// `per_s` a second, with a wobble of a few KiB.
    fn window(seconds: u32, start: f64, per_s: f64) -> Vec<(f64, f64)> {
        (0..seconds)
            .map(|i| {
                let t = f64::from(i);
                (t, start + per_s * t + f64::from(i % 3) * 4096.0)
            })
            .collect()
    }

    fn idle() -> MemoryFit {
        fit_memory(&[
            MemoryPoint {
                sessions: 0.0,
                bytes: 46.0 * MIB,
            },
            MemoryPoint {
                sessions: 500.0,
                bytes: 46.0 * MIB + 500.0 * 598.0 * 1024.0,
            },
            MemoryPoint {
                sessions: 1000.0,
                bytes: 46.0 * MIB + 1000.0 * 598.0 * 1024.0,
            },
        ])
        .unwrap()
    }

    #[test]
    fn issue_25_item_2_working_sessions_memory_replaces_the_idle_model_with_their_rise_over_the_hour()
     {
        // Two working runs of 90 s: 670 KiB per session at the end, each
        // session's memory rising 0.1 KiB/s (a real, steady rise).
        let run = |n: f64| {
            let start = 46.0 * MIB + n * (670.0 - 9.0) * 1024.0;
            WorkingMemory::of_series(format!("run-{n}"), n, &window(91, start, n * 0.1 * 1024.0))
                .unwrap()
        };
        let working = [run(500.0), run(1000.0)];
        assert_eq!(working[1].window_s, 90.0);
        assert_eq!(working[1].horizon_s, 3510.0);
        assert!((working[1].rise_bytes_per_s / 1024.0 - 100.0).abs() < 1.0);

        let mut memory = Some(idle());
        let sentence = use_working_memory(&mut memory, &working).unwrap().unwrap();
        let fit = memory.as_ref().unwrap();
        // 670 KiB at the window's end + 0.1 KiB/s × 3,510 s = 1,021 KiB.
        let per_session = fit.per_session_bytes / 1024.0;
        assert!((per_session - 1021.0).abs() < 3.0, "{per_session}");
        assert!((fit.base_bytes / MIB - 46.0).abs() < 0.5);
        assert_eq!(fit.points.len(), 3, "the idle baseline and two runs");
        assert!(sentence.contains("598 KiB idle"), "{sentence}");
        assert!(sentence.contains("run-1000"), "{sentence}");

        // Without runs the idle model stays.
        let mut untouched = Some(idle());
        assert!(use_working_memory(&mut untouched, &[]).unwrap().is_none());
        assert_eq!(untouched, Some(idle()));
    }

    #[test]
    fn issue_25_item_2_a_flat_working_window_is_not_carried_over_the_hour() {
        let flat =
            WorkingMemory::of_series("flat".into(), 800.0, &window(90, 600.0 * MIB, 0.0)).unwrap();
        assert_eq!(flat.rise_bytes_per_s, 0.0);
        assert_eq!(flat.bytes_at_hour_end(), flat.end_bytes);
        assert!(WorkingMemory::of_series("short".into(), 1.0, &window(4, 1.0, 1.0)).is_none());
    }
}
