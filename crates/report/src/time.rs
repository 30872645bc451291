//! RFC 3339 UTC timestamps to `SystemTime`, without a date-time dependency.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::ReportError;

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)`.
pub(crate) fn parse_rfc3339_utc(s: &str) -> Result<SystemTime, ReportError> {
    let bad = || ReportError::StartTime(s.to_owned());
    let rest = s
        .strip_suffix('Z')
        .or_else(|| s.strip_suffix('z'))
        .or_else(|| s.strip_suffix("+00:00"))
        .ok_or_else(bad)?;
    let (date, time) = rest.split_once(['T', 't', ' ']).ok_or_else(bad)?;
    let num = |t: &str| -> Result<u64, ReportError> {
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        t.parse().map_err(|_| bad())
    };
    let mut d = date.splitn(3, '-');
    let (y, m, day) = match (d.next(), d.next(), d.next()) {
        (Some(y), Some(m), Some(day)) => (num(y)?, num(m)?, num(day)?),
        _ => return Err(bad()),
    };
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':');
    let (hh, mm, ss) = match (t.next(), t.next(), t.next()) {
        (Some(h), Some(m), Some(s)) => (num(h)?, num(m)?, num(s)?),
        _ => return Err(bad()),
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return Err(bad());
    }
    let nanos = if frac.is_empty() {
        0
    } else {
        let digits: String = frac.chars().take(9).collect();
        let n = num(&digits)?;
        n * 10_u64.pow(9 - u32::try_from(digits.len()).map_err(|_| bad())?)
    };
    let days = days_from_civil(i64::try_from(y).map_err(|_| bad())?, m, day);
    let secs = days * 86_400 + i64::try_from(hh * 3600 + mm * 60 + ss).map_err(|_| bad())?;
    let secs = u64::try_from(secs).map_err(|_| bad())?;
    let nanos = u32::try_from(nanos).map_err(|_| bad())?;
    Ok(UNIX_EPOCH + Duration::new(secs, nanos))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: u64, d: u64) -> i64 {
    let (m, d) = (m as i64, d as i64);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
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
    }

    #[test]
    fn rejects_other_offsets_and_garbage() {
        for s in [
            "2026-05-01T12:00:00+02:00",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "",
        ] {
            assert!(parse_rfc3339_utc(s).is_err(), "{s}");
        }
    }
}
