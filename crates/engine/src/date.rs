//! Dates in UTC without a date-time crate: the few formats peakhour writes.

use std::time::{SystemTime, UNIX_EPOCH};

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// An RFC 5322 date for now, in UTC.
pub fn rfc5322_now() -> String {
    rfc5322(now_secs())
}

/// An RFC 5322 date for `secs` since the epoch, in UTC.
pub fn rfc5322(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    let rem = secs % 86_400;
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} +0000",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-from-civil inverse: (year, month 1-12, day 1-31).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `2026-11-21T09:00:00Z` for `secs` since the epoch.
pub fn rfc3339(secs: u64) -> String {
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `20261121T090000Z`: sortable, and safe in a file name.
pub fn compact(secs: u64) -> String {
    rfc3339(secs).replace(['-', ':'], "")
}

/// Seconds since the epoch for a wall-clock time.
pub fn epoch_secs(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc5322() {
        assert_eq!(rfc5322(0), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc5322(1_795_251_600), "Sat, 21 Nov 2026 09:00:00 +0000");
        assert_eq!(rfc5322(951_782_400), "Tue, 29 Feb 2000 00:00:00 +0000");
    }

    #[test]
    fn formats_rfc3339_and_compact() {
        assert_eq!(rfc3339(1_795_251_600), "2026-11-21T09:00:00Z");
        assert_eq!(compact(1_795_251_600), "20261121T090000Z");
    }
}
