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

/// An error and its causes as one line, `: ` between them, each cause
/// said once: a cause whose text the line already holds is left out. Many
/// errors quote their source in their own message and name it as their
/// source too (`{path}: {source}`), and printing the chain then said
/// `No space left on device (os error 28): No space left on device (os
/// error 28)` (issue 26).
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let said = next.to_string();
        if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = next.source();
    }
    text
}

/// Whether `cause` (one link of an error's chain) is bad usage, which exits
/// with code 2: a [`UsageError`], a profile that does not parse, breaks a
/// bound or does not resolve with the options given, a users file that does
/// not read, or an `--out` that is taken. The reasons of the target's
/// resolution (a test population refused, a users file that does not read
/// as one) are added by `peakhour_app::is_usage_cause`, the one the binary
/// asks.
pub fn is_usage_cause(cause: &(dyn std::error::Error + 'static)) -> bool {
    cause.is::<UsageError>()
        || cause.is::<peakhour_workload::ProfileError>()
        || cause.is::<peakhour_workload::PlanError>()
        || cause
            .downcast_ref::<peakhour_engine::files::FileSetupError>()
            .is_some_and(peakhour_engine::files::FileSetupError::is_usage)
        || (cause.downcast_ref::<peakhour_engine::limits::LimitsError>())
            .is_some_and(peakhour_engine::limits::LimitsError::is_usage)
        || (cause.downcast_ref::<peakhour_rundir::RunDirError>())
            .is_some_and(peakhour_rundir::RunDirError::is_usage)
}

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

#[cfg(test)]
mod error_text_tests {
    #![allow(clippy::unwrap_used)]
    use super::error_text;

    #[derive(Debug, thiserror::Error)]
    #[error("runs/x/summary.json: {source}")]
    struct Quoting {
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot write the results")]
    struct Wrapping {
        #[source]
        source: Quoting,
    }

    #[test]
    fn issue_26_item_9_an_error_quoting_its_source_says_it_once() {
        let full = || std::io::Error::from_raw_os_error(28);
        let said = full().to_string();
        let text = error_text(&Quoting { source: full() });
        assert_eq!(text, format!("runs/x/summary.json: {said}"));
        let text = error_text(&Wrapping {
            source: Quoting { source: full() },
        });
        assert_eq!(text.matches(&said).count(), 1, "{text}");
        assert!(text.starts_with("cannot write the results: runs/x/summary.json: "));
    }
}
