//! The part of the day a run measured (issue 25): the plan of its window, as
//! the record carries it, and what the summary makes of it: the rates it
//! implies per user and in total, what the run measured, and the morning's
//! logon storm.

use serde::{Deserialize, Serialize};

use crate::AnalysisError;
use crate::histogram::round_ms;
use crate::record::{IntervalRecord, RunMeta};
use crate::summary::ActionSummary;

/// The action name under which a measured logon is recorded (morning
/// window): from its intended time, by the user's logon slot, to the
/// session being ready (connect, TLS, login, folders, Inbox).
pub const LOGON_ACTION: &str = "logon";

/// How a run's window was planned (in the record's metadata).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowPlan {
    /// `day`, `peak-hour` or `morning`.
    pub window: String,
    /// Actions per user per real hour the run drove: the window's rates
    /// with the day compression.
    pub actions_per_user_hour: f64,
    /// The profile's busiest hour, actions per user, uncompressed; `None`
    /// for a profile without a day shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_actions_per_user_hour: Option<f64>,
    /// The busiest hour's rate over the day's average hour's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_factor: Option<f64>,
    /// The share of the users connected at the peak (the profile's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_at_peak: Option<f64>,
    /// Connections each connected user holds (the profile's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_per_user: Option<u32>,
    /// The morning's planned logon rate, logons per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logons_per_second: Option<f64>,
    /// What each user did first at its morning logon.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_actions: Vec<String>,
}

/// The rates a run's window implies and those it measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowRates {
    /// Actions per user per hour the run drove (with the day compression).
    pub planned_actions_per_user_hour: f64,
    /// The same for every user together.
    pub planned_actions_per_hour: f64,
    /// Actions started in the measured window (done, failed or skipped;
    /// logons not counted), per user per hour of it.
    pub measured_actions_per_user_hour: f64,
    /// The same for every user together.
    pub measured_actions_per_hour: f64,
    /// The actions counted.
    pub actions: u64,
}

/// The morning's logon storm, as measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogonStorm {
    /// The planned logon rate: users × logon share / logon time.
    pub planned_logons_per_second: f64,
    /// Successful logons in the measured window.
    pub logons: u64,
    /// Failed logon attempts (each user retries).
    pub errors: u64,
    /// Successful logons per second, over the intervals that saw logons
    /// (measured in whole intervals).
    pub logons_per_second: f64,
    /// Those intervals' length, seconds.
    pub seconds: f64,
    /// Logon latency from each user's logon slot, 95th percentile.
    pub p95_ms: Option<f64>,
    /// ... median.
    pub p50_ms: Option<f64>,
}

/// What the summary says of the window: its rates and, for the morning,
/// the logon storm.
pub(crate) struct WindowFigures {
    pub(crate) window: String,
    pub(crate) peak: Option<f64>,
    pub(crate) peak_total: Option<f64>,
    pub(crate) rates: Option<WindowRates>,
    pub(crate) storm: Option<LogonStorm>,
}

impl WindowFigures {
    /// From the run's metadata (the window's plan), the steady intervals
    /// and the actions and counters they sum to.
    pub(crate) fn of(
        meta: &RunMeta,
        steady: &[&IntervalRecord],
        actions: &std::collections::BTreeMap<String, ActionSummary>,
        counters: &std::collections::BTreeMap<String, u64>,
    ) -> Result<WindowFigures, AnalysisError> {
        let users = meta.users;
        let length_s: f64 = steady.iter().map(|i| i.length.as_secs_f64()).sum();
        let Some(plan) = meta.window.as_ref() else {
            return Ok(WindowFigures {
                window: crate::summary::day_window(),
                peak: None,
                peak_total: None,
                rates: None,
                storm: None,
            });
        };
        let peak = plan.peak_actions_per_user_hour;
        let done: u64 = actions
            .iter()
            .filter(|(name, _)| name.as_str() != LOGON_ACTION)
            .map(|(_, a)| a.count + a.errors)
            .sum::<u64>()
            + counters
                .iter()
                .filter(|(name, _)| name.starts_with("skipped_"))
                .map(|(_, n)| n)
                .sum::<u64>();
        let users_f = f64::from(users.max(1));
        let per_hour = if length_s > 0.0 {
            done as f64 * 3600.0 / length_s
        } else {
            0.0
        };
        let rates = WindowRates {
            planned_actions_per_user_hour: plan.actions_per_user_hour,
            planned_actions_per_hour: plan.actions_per_user_hour * f64::from(users),
            measured_actions_per_user_hour: per_hour / users_f,
            measured_actions_per_hour: per_hour,
            actions: done,
        };
        let storm = match plan.logons_per_second {
            Some(planned) => Some(logon_storm(planned, steady, actions.get(LOGON_ACTION))?),
            None => None,
        };
        Ok(WindowFigures {
            window: plan.window.clone(),
            peak,
            peak_total: peak.map(|p| p * f64::from(users)),
            rates: Some(rates),
            storm,
        })
    }
}

/// The logon storm from the steady intervals that saw logons.
fn logon_storm(
    planned: f64,
    steady: &[&IntervalRecord],
    logon: Option<&ActionSummary>,
) -> Result<LogonStorm, AnalysisError> {
    let mut first: Option<f64> = None;
    let mut last_end = 0.0_f64;
    for interval in steady {
        let Some(a) = interval.actions.get(LOGON_ACTION) else {
            continue;
        };
        if a.latency.decode()?.len() + a.error_count() == 0 {
            continue;
        }
        first.get_or_insert(interval.start.as_secs_f64());
        last_end = (interval.start + interval.length).as_secs_f64();
    }
    let seconds = first.map_or(0.0, |start| last_end - start);
    let logons = logon.map_or(0, |a| a.count);
    Ok(LogonStorm {
        planned_logons_per_second: planned,
        logons,
        errors: logon.map_or(0, |a| a.errors),
        logons_per_second: if seconds > 0.0 {
            logons as f64 / seconds
        } else {
            0.0
        },
        seconds,
        p95_ms: logon.and_then(|a| a.p95_ms).map(round_ms),
        p50_ms: logon.and_then(|a| a.p50_ms).map(round_ms),
    })
}
