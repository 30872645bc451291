//! From raw arguments to checked settings: the second of the two steps a
//! command line goes through (ripgrep's low-level and high-level arguments).
//! [`crate::args`] parses each value into its type; this module checks the
//! values against each other and against upper bounds, and hands back
//! settings a command can use without checking again.
//!
//! A value out of bounds is bad usage: the command prints why and what is
//! allowed, and exits with code 2 (as clap does for what it refuses itself),
//! before it reads a profile, resolves a target or opens a connection.

mod limits;
mod run;

use std::fmt;
use std::time::Duration;

pub use limits::*;
pub use run::{
    DEFAULT_DURATION, InitConfig, RunConfig, Shape, WINDOW_LENGTH, checked_groups,
    checked_node_exporter,
};

/// The exit code of bad usage.
pub const EXIT_USAGE: u8 = 2;

/// A command line that cannot run as given: exit code 2. The message names
/// the flag at fault and what it allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// `value` of `--flag`, if it lies within `min..=max`.
pub fn duration_within(
    flag: &str,
    value: Duration,
    min: Duration,
    max: Duration,
) -> Result<Duration, UsageError> {
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    let human = |d: Duration| peakhour_workload::HumanDuration(d).to_string();
    Err(UsageError(format!(
        "--{flag} {} is out of bounds: it must be between {} and {}",
        human(value),
        human(min),
        human(max)
    )))
}

/// `value` of `--flag`, if it is a number above 0 and at most `max`.
pub fn positive_at_most(flag: &str, value: f64, max: f64) -> Result<f64, UsageError> {
    if value.is_finite() && value > 0.0 && value <= max {
        return Ok(value);
    }
    Err(UsageError(format!(
        "--{flag} {value:?} is out of bounds: it must be a number above 0 and at most {max}"
    )))
}

/// `value` of `--flag`, if it lies within `min..=max`.
pub fn count_within<T>(flag: &str, value: T, min: T, max: T) -> Result<T, UsageError>
where
    T: PartialOrd + fmt::Display + Copy,
{
    if value >= min && value <= max {
        return Ok(value);
    }
    Err(UsageError(format!(
        "--{flag} {value} is out of bounds: it must be between {min} and {max}"
    )))
}
