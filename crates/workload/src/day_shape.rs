//! The day's shape: when a profile's users work, and the windows a run can
//! measure from it (`run --window peak-hour|morning`).
//!
//! A profile's `per_day` counts say how much a user does in a day; spread
//! evenly, they say nothing of the hour a server must survive. `[day_shape]`
//! adds the rest: how much busier the busiest hour is than the day's average
//! hour (`peak_factor`), who is connected then and with how many connections,
//! and the morning: what share of the users log on within how long, and what
//! they do first. Microsoft's own Exchange documentation names the pattern
//! ("a burst of activity in the early morning, when users arrive at work and
//! catch up on mail, may place the greatest load on a server", Exchange 5.5,
//! *Concepts and Planning*, "Uneven Loading"); docs/profiles.md cites every
//! default.
//!
//! A [`Window`] turns the shape into rates and a logon schedule the engine
//! already follows: the peak hour is the day's rates times the peak factor;
//! the morning is a logon storm at `users × logon_share / logon_within` logons
//! per second, each user starting with its first actions, then the busiest
//! hour's rates (the sources name the morning as the likely busiest time).

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::ProfileError;
use crate::profile::{ActionKind, Profile, unplaced};
use crate::units::HumanDuration;

/// The most connections one user may hold (a desktop, a phone, a tablet,
/// and clients that open several: far beyond any of them).
pub(crate) const MAX_CONNECTIONS_PER_USER: i64 = 64;
/// The most first actions a user does at logon.
pub(crate) const MAX_FIRST_ACTIONS: usize = 100;
/// The longest morning logon: a whole day.
pub(crate) const MAX_LOGON_WITHIN: Duration = Duration::from_secs(24 * 3600);

fn default_peak_factor() -> Spanned<f64> {
    unplaced(1.0)
}
fn default_share() -> Spanned<f64> {
    unplaced(1.0)
}
fn default_connections() -> Spanned<i64> {
    unplaced(1)
}
fn no_first_actions() -> Spanned<Vec<ActionKind>> {
    unplaced(Vec::new())
}
fn default_logon_within() -> Spanned<HumanDuration> {
    unplaced(HumanDuration(Duration::from_secs(30 * 60)))
}

/// `[day_shape]`: when the profile's users work.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayShape {
    /// The busiest hour's rate over the day's average hour's (1 is an even
    /// day). The busiest hour holds `peak_factor / day-in-hours` of the
    /// day's actions.
    #[serde(default = "default_peak_factor")]
    pub peak_factor: Spanned<f64>,
    /// The share (0 to 1) of the users connected at the peak.
    #[serde(default = "default_share")]
    pub connected_at_peak: Spanned<f64>,
    /// The connections each connected user holds (a desktop and a phone
    /// are two). Reported with the run; the engine holds one mail session
    /// per user today.
    #[serde(default = "default_connections")]
    pub connections_per_user: Spanned<i64>,
    /// The morning logon.
    #[serde(default)]
    pub morning: MorningSpec,
}

/// `[day_shape.morning]`: the logon storm.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MorningSpec {
    /// The share (0 to 1, above 0) of the users who log on within `logon_within`.
    #[serde(default = "default_share")]
    pub logon_share: Spanned<f64>,
    /// How long the morning's logons take for `logon_share` of the users.
    #[serde(default = "default_logon_within")]
    pub logon_within: Spanned<HumanDuration>,
    /// What a user does first, in order, as soon as it is logged on (catch
    /// up on mail: list the Inbox, read the new messages). Each must be one
    /// of the profile's actions.
    #[serde(default = "no_first_actions")]
    pub first_actions: Spanned<Vec<ActionKind>>,
}

impl Default for MorningSpec {
    fn default() -> Self {
        MorningSpec {
            logon_share: default_share(),
            logon_within: default_logon_within(),
            first_actions: no_first_actions(),
        }
    }
}

/// The part of the day a run measures (`run --window`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Window {
    /// The even day: every action at its day's average rate (what every
    /// run did before windows).
    #[default]
    Day,
    /// The busiest hour: every action at its day rate times the profile's
    /// peak factor, held after every user has logged on.
    PeakHour,
    /// The morning: the logon storm at its real rate, measured, each user
    /// beginning with its first actions, then the busiest hour's rates.
    Morning,
}

impl Window {
    /// Parses `day`, `peak-hour` or `morning`, as `--window` takes them.
    pub fn parse(text: &str) -> Result<Window, String> {
        match text {
            "day" => Ok(Window::Day),
            "peak-hour" => Ok(Window::PeakHour),
            "morning" => Ok(Window::Morning),
            other => Err(format!(
                "unknown window {other:?}: day, peak-hour or morning"
            )),
        }
    }

    /// `day`, `peak-hour` or `morning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Day => "day",
            Window::PeakHour => "peak-hour",
            Window::Morning => "morning",
        }
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The day's shape as a plan uses it, with plain numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShapeParams {
    /// The busiest hour's rate over the average hour's.
    pub peak_factor: f64,
    /// The share of the users connected at the peak.
    pub connected_at_peak: f64,
    /// Connections each connected user holds.
    pub connections_per_user: u32,
    /// The share of users who log on within `logon_within`.
    pub logon_share: f64,
    /// How long that takes.
    pub logon_within: HumanDuration,
    /// What a user does first at a morning logon.
    pub first_actions: Vec<ActionKind>,
}

impl ShapeParams {
    /// The shape of `shape`.
    pub(crate) fn of(shape: &DayShape) -> ShapeParams {
        ShapeParams {
            peak_factor: *shape.peak_factor.get_ref(),
            connected_at_peak: *shape.connected_at_peak.get_ref(),
            connections_per_user: u32::try_from(*shape.connections_per_user.get_ref()).unwrap_or(1),
            logon_share: *shape.morning.logon_share.get_ref(),
            logon_within: *shape.morning.logon_within.get_ref(),
            first_actions: shape.morning.first_actions.get_ref().clone(),
        }
    }

    /// The share of a `day`-long day's actions that fall in its busiest
    /// hour: `peak_factor / hours of the day` (0.25 for 2 over 8 hours).
    pub fn peak_hour_share(&self, day: Duration) -> f64 {
        self.peak_factor * 3600.0 / day.as_secs_f64()
    }

    /// The morning's logon rate for `users`, logons per second:
    /// `users × logon_share / logon_within`.
    pub fn logons_per_second(&self, users: u32) -> f64 {
        f64::from(users) * self.logon_share / self.logon_within.0.as_secs_f64()
    }

    /// How long the whole morning storm lasts when every one of `users`
    /// logs on at [`Self::logons_per_second`]: `logon_within / logon_share`.
    pub fn storm_length(&self) -> Duration {
        self.logon_within.0.div_f64(self.logon_share)
    }
}

/// Checks `[day_shape]`, each error pointing at its value.
pub(crate) fn validate(profile: &Profile, file: &str, src: &str) -> Result<(), ProfileError> {
    let Some(shape) = &profile.day_shape else {
        return Ok(());
    };
    let err = |span: Range<usize>, field: &str, message: String| {
        ProfileError::at(file, src, Some(span), field, message)
    };
    let day_hours = profile.day().as_secs_f64() / 3600.0;
    let factor = *shape.peak_factor.get_ref();
    if !factor.is_finite() || factor < 1.0 || factor > day_hours.max(1.0) {
        return Err(err(
            shape.peak_factor.span(),
            "day_shape.peak_factor",
            format!(
                "must be between 1 (an even day) and the day's {day_hours} hours (every action \
                 in one hour) (got {factor})"
            ),
        ));
    }
    let connected = *shape.connected_at_peak.get_ref();
    if !(connected > 0.0 && connected <= 1.0) {
        return Err(err(
            shape.connected_at_peak.span(),
            "day_shape.connected_at_peak",
            format!("must be above 0 and at most 1 (got {connected})"),
        ));
    }
    let connections = *shape.connections_per_user.get_ref();
    if !(1..=MAX_CONNECTIONS_PER_USER).contains(&connections) {
        return Err(err(
            shape.connections_per_user.span(),
            "day_shape.connections_per_user",
            format!("must be between 1 and {MAX_CONNECTIONS_PER_USER} (got {connections})"),
        ));
    }
    let morning = &shape.morning;
    let share = *morning.logon_share.get_ref();
    if !(share > 0.0 && share <= 1.0) {
        return Err(err(
            morning.logon_share.span(),
            "day_shape.morning.logon_share",
            format!("must be above 0 and at most 1 (got {share})"),
        ));
    }
    let within = morning.logon_within.get_ref().0;
    if within < Duration::from_secs(1) || within > MAX_LOGON_WITHIN {
        return Err(err(
            morning.logon_within.span(),
            "day_shape.morning.logon_within",
            format!(
                "must be between 1s and {} (got {})",
                HumanDuration(MAX_LOGON_WITHIN),
                HumanDuration(within)
            ),
        ));
    }
    let first = morning.first_actions.get_ref();
    if first.len() > MAX_FIRST_ACTIONS {
        return Err(err(
            morning.first_actions.span(),
            "day_shape.morning.first_actions",
            format!(
                "{} actions is more than the limit of {MAX_FIRST_ACTIONS}",
                first.len()
            ),
        ));
    }
    let present: Vec<ActionKind> = profile
        .actions
        .frequencies()
        .iter()
        .map(|(k, _)| *k)
        .collect();
    if let Some(missing) = first.iter().find(|k| !present.contains(k)) {
        return Err(err(
            morning.first_actions.span(),
            "day_shape.morning.first_actions",
            format!("`{missing}` is not one of the profile's [actions]"),
        ));
    }
    Ok(())
}
