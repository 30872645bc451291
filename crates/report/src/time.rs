//! RFC 3339 UTC timestamps to `SystemTime`, through chrono.

use std::time::SystemTime;

use chrono::{DateTime, Utc};

use crate::ReportError;

/// Parses an RFC 3339 time in UTC (`Z` or `+00:00`), e.g.
/// `2026-05-01T12:00:00Z` or `2026-05-01T12:00:00.250+00:00`. Another
/// offset is refused: a run's `started_at` is always written in UTC, so
/// one that is not was edited or comes from elsewhere.
pub(crate) fn parse_rfc3339_utc(s: &str) -> Result<SystemTime, ReportError> {
    let bad = || ReportError::StartTime(s.to_owned());
    let at = DateTime::parse_from_rfc3339(s).map_err(|_| bad())?;
    if at.offset().local_minus_utc() != 0 {
        return Err(bad());
    }
    Ok(SystemTime::from(at.with_timezone(&Utc)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::UNIX_EPOCH;

    use super::*;

    fn secs(s: &str) -> f64 {
        parse_rfc3339_utc(s)
            .unwrap()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    }

    #[test]
    fn parses_known_instants() {
        assert_eq!(secs("1970-01-01T00:00:00Z"), 0.0);
        assert_eq!(secs("2000-02-29T00:00:00Z"), 951_782_400.0);
        assert_eq!(secs("2026-05-01T12:00:00Z"), 1_777_636_800.0);
        assert_eq!(secs("2026-05-01T12:00:00.250+00:00"), 1_777_636_800.25);
        assert_eq!(secs("2026-05-01t12:00:00z"), 1_777_636_800.0);
    }

    #[test]
    fn rejects_other_offsets_and_garbage() {
        for s in [
            "2026-05-01T12:00:00+02:00",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "",
        ] {
            assert!(parse_rfc3339_utc(s).is_err(), "{s}");
        }
    }
}
