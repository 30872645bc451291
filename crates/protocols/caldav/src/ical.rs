//! iCalendar (RFC 5545) events, written deterministically from their inputs.
//!
//! The same [`EventSpec`] always gives the same bytes: no clock, no random
//! UID, no host name. Lines end in CRLF and are folded at 75 octets
//! (RFC 5545 §3.1) without splitting a UTF-8 character; TEXT values are
//! escaped (§3.3.11).

use std::fmt;

/// A UTC date and time, to the second, in the proleptic Gregorian calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UtcDateTime {
    /// Seconds since 1970-01-01T00:00:00Z.
    unix: i64,
}

impl UtcDateTime {
    /// The moment `unix` seconds after the Unix epoch.
    pub fn from_unix(unix: i64) -> UtcDateTime {
        UtcDateTime { unix }
    }

    /// The moment given by its fields (month 1–12, day 1–31, hour 0–23 ...).
    /// `None` if a field is out of range.
    pub fn from_fields(
        year: i64,
        month: u32,
        day: u32,
        hour: u32,
        minute: u32,
        second: u32,
    ) -> Option<UtcDateTime> {
        let in_range = (1..=12).contains(&month)
            && (1..=days_in_month(year, month)).contains(&day)
            && hour < 24
            && minute < 60
            && second < 60;
        in_range.then(|| UtcDateTime {
            unix: days_from_civil(year, month, day) * 86_400
                + i64::from(hour * 3600 + minute * 60 + second),
        })
    }

    /// Seconds since the Unix epoch.
    pub fn unix(self) -> i64 {
        self.unix
    }

    /// This moment plus `seconds` (negative to go back).
    pub fn plus_seconds(self, seconds: i64) -> UtcDateTime {
        UtcDateTime {
            unix: self.unix + seconds,
        }
    }

    /// Midnight at the start of this moment's day.
    pub fn start_of_day(self) -> UtcDateTime {
        UtcDateTime {
            unix: self.unix.div_euclid(86_400) * 86_400,
        }
    }

    /// Midnight at the start of this moment's ISO week (Monday).
    pub fn start_of_week(self) -> UtcDateTime {
        let days = self.unix.div_euclid(86_400);
        // 1970-01-01 was a Thursday: Monday is 3 days before day 0.
        let since_monday = (days + 3).rem_euclid(7);
        UtcDateTime {
            unix: (days - since_monday) * 86_400,
        }
    }

    /// (year, month, day, hour, minute, second).
    pub fn fields(self) -> (i64, u32, u32, u32, u32, u32) {
        let days = self.unix.div_euclid(86_400);
        let secs = self.unix.rem_euclid(86_400) as u32;
        let (y, m, d) = civil_from_days(days);
        (y, m, d, secs / 3600, secs / 60 % 60, secs % 60)
    }
}

impl UtcDateTime {
    /// Reads RFC 5545's DATE-TIME, `19980119T070000Z`; a floating time
    /// (no `Z`) is read as UTC too, and anything else (a DATE, a bad field)
    /// is `None`. The inverse of the [`fmt::Display`] form.
    pub fn parse(text: &str) -> Option<UtcDateTime> {
        let t = text.trim();
        let t = t.strip_suffix('Z').unwrap_or(t);
        let bytes = t.as_bytes();
        let digits = |range: std::ops::Range<usize>| {
            let field = bytes.get(range)?;
            field
                .iter()
                .all(u8::is_ascii_digit)
                .then(|| field.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
        };
        if bytes.len() != 15 || bytes[8] != b'T' {
            return None;
        }
        UtcDateTime::from_fields(
            i64::from(digits(0..4)?),
            digits(4..6)?,
            digits(6..8)?,
            digits(9..11)?,
            digits(11..13)?,
            digits(13..15)?,
        )
    }
}

/// RFC 5545 §3.3.5 UTC form: `19980119T070000Z`.
impl fmt::Display for UtcDateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, mo, d, h, mi, s) = self.fields();
        write!(f, "{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// What an event says; everything the text depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    /// The UID (RFC 5545 §3.8.4.7); also the usual resource name, `UID.ics`.
    pub uid: String,
    /// When the object was written (DTSTAMP); the caller's clock, not ours.
    pub stamp: UtcDateTime,
    /// Start.
    pub start: UtcDateTime,
    /// End (after start).
    pub end: UtcDateTime,
    /// The title.
    pub summary: String,
    /// Where, if anywhere.
    pub location: Option<String>,
    /// Longer text, if any (may hold newlines).
    pub description: Option<String>,
    /// Revision number: 0 when created, one more at each change.
    pub sequence: u32,
}

/// The `PRODID` peakhour writes.
pub const PRODID: &str = "-//peakhour//peakhour load generator//EN";

/// A VCALENDAR holding one VEVENT, as `text/calendar` bytes.
pub fn event_ics(event: &EventSpec) -> String {
    let mut lines = vec![
        "BEGIN:VCALENDAR".to_owned(),
        "VERSION:2.0".to_owned(),
        format!("PRODID:{PRODID}"),
        "CALSCALE:GREGORIAN".to_owned(),
        "BEGIN:VEVENT".to_owned(),
        format!("UID:{}", escape_text(&event.uid)),
        format!("DTSTAMP:{}", event.stamp),
        format!("DTSTART:{}", event.start),
        format!("DTEND:{}", event.end),
        format!("SEQUENCE:{}", event.sequence),
        format!("SUMMARY:{}", escape_text(&event.summary)),
    ];
    if let Some(location) = &event.location {
        lines.push(format!("LOCATION:{}", escape_text(location)));
    }
    if let Some(description) = &event.description {
        lines.push(format!("DESCRIPTION:{}", escape_text(description)));
    }
    lines.push("END:VEVENT".to_owned());
    lines.push("END:VCALENDAR".to_owned());
    let mut out = String::new();
    for line in &lines {
        fold_into(line, &mut out);
    }
    out
}

/// RFC 5545 §3.3.11: backslash, semicolon, comma and newline are escaped.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ';' => out.push_str("\\;"),
            ',' => out.push_str("\\,"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            _ => out.push(c),
        }
    }
    out
}
/// The inverse of [`escape_text`]: `\n` (or `\N`) is a newline, and a
/// The inverse of [`escape_text`]: `\\n` (or `\\N`) is a newline, and a
/// backslash before any other character stands for that character.
pub fn unescape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n' | 'N') => out.push('\n'),
            Some(escaped) => out.push(escaped),
            None => out.push('\\'),
        }
    }
    out
}

/// [`fold_into`] for the other modules of the crate.
pub(crate) fn fold_line(line: &str, out: &mut String) {
    fold_into(line, out);
}

/// Appends `line` folded at 75 octets (continuation lines start with a space,
/// which counts), each physical line ending in CRLF.
fn fold_into(line: &str, out: &mut String) {
    const MAX: usize = 75;
    let mut width = 0;
    for c in line.chars() {
        if width + c.len_utf8() > MAX {
            out.push_str("\r\n ");
            width = 1;
        }
        out.push(c);
        width += c.len_utf8();
    }
    out.push_str("\r\n");
}

/// Undoes folding (CRLF or LF followed by a space or tab), for reading back.
pub fn unfold(text: &str) -> String {
    text.replace("\r\n ", "")
        .replace("\r\n\t", "")
        .replace("\n ", "")
        .replace("\n\t", "")
}

/// The value of the first property `name` (such as `UID` or `SEQUENCE`) in
/// an iCalendar text, unfolded, parameters ignored, not unescaped.
pub fn property(text: &str, name: &str) -> Option<String> {
    unfold(text).lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let key = key.split(';').next()?;
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim_end_matches('\r').to_owned())
    })
}

/// What a client needs to write an event it read back again: its UID
/// (unescaped, as [`EventSpec::uid`] takes it), its start, and its revision
/// (`SEQUENCE`, 0 when absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventHead {
    /// The UID.
    pub uid: String,
    /// DTSTART, in UTC.
    pub start: UtcDateTime,
    /// SEQUENCE; a value that is not a number counts as 0.
    pub sequence: u32,
}

/// The [`EventHead`] of a server's calendar data (a REPORT's
/// `calendar-data`, a GET's body): `None` when it has no UID or no DTSTART
/// in UTC (an all-day or zoned event, or garbage), which a client that only
/// changes its own events can pass over. The server's text is hostile
/// input: this reads it, never trusts it.
pub fn read_event(data: &str) -> Option<EventHead> {
    let data = unfold(data);
    let uid = property(&data, "UID")
        .map(|uid| unescape_text(&uid))
        .filter(|uid| !uid.is_empty())?;
    let start = UtcDateTime::parse(&property(&data, "DTSTART")?)?;
    let sequence = property(&data, "SEQUENCE")
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    Some(EventHead {
        uid,
        start,
        sequence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_format_as_rfc_5545_utc() {
        let t = UtcDateTime::from_fields(1998, 1, 19, 7, 0, 0).unwrap();
        assert_eq!(t.to_string(), "19980119T070000Z");
        assert_eq!(t.unix(), 885_193_200);
        assert_eq!(
            UtcDateTime::from_unix(t.unix()).fields(),
            (1998, 1, 19, 7, 0, 0)
        );
        let leap = UtcDateTime::from_fields(2024, 2, 29, 23, 59, 59).unwrap();
        assert_eq!(leap.plus_seconds(1).to_string(), "20240301T000000Z");
        assert!(UtcDateTime::from_fields(2023, 2, 29, 0, 0, 0).is_none());
        // 2026-01-08 is a Thursday; its week starts on Monday the 5th.
        let thursday = UtcDateTime::from_fields(2026, 1, 8, 15, 30, 0).unwrap();
        assert_eq!(thursday.start_of_week().to_string(), "20260105T000000Z");
        assert_eq!(thursday.start_of_day().to_string(), "20260108T000000Z");
        for days in [-800_000i64, -1, 0, 59, 365 * 400, 2_000_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    fn spec() -> EventSpec {
        let start = UtcDateTime::from_fields(2026, 1, 5, 9, 0, 0).unwrap();
        EventSpec {
            uid: "peakhour-u1-0001@bench.test".into(),
            stamp: UtcDateTime::from_fields(2026, 1, 1, 0, 0, 0).unwrap(),
            start,
            end: start.plus_seconds(1800),
            summary: "Review; budget, Q1".into(),
            location: None,
            description: Some(format!("line one\nline two é {}", "x".repeat(80))),
            sequence: 0,
        }
    }

    #[test]
    fn event_is_deterministic_folded_and_escaped() {
        let ics = event_ics(&spec());
        assert_eq!(ics, event_ics(&spec()));
        assert!(ics.starts_with("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n"));
        assert!(ics.ends_with("END:VEVENT\r\nEND:VCALENDAR\r\n"));
        assert!(ics.contains("SUMMARY:Review\\; budget\\, Q1\r\n"));
        for line in ics.split("\r\n") {
            assert!(line.len() <= 75, "{line:?} is {} octets", line.len());
        }
        assert!(!ics.replace("\r\n", "").contains('\n'), "a bare LF");
        assert_eq!(
            property(&ics, "DESCRIPTION").unwrap(),
            format!("line one\\nline two é {}", "x".repeat(80))
        );
        assert_eq!(
            property(&ics, "uid").unwrap(),
            "peakhour-u1-0001@bench.test"
        );
    }

    #[test]
    fn folding_never_splits_a_character() {
        let mut out = String::new();
        fold_into(&"é".repeat(60), &mut out);
        for line in out.split("\r\n") {
            assert!(line.len() <= 75);
        }
        assert_eq!(unfold(&out).trim_end(), "é".repeat(60));
    }

    #[test]
    fn an_event_read_back_gives_its_uid_start_and_revision() {
        let written = event_ics(&EventSpec {
            sequence: 7,
            uid: "u-".repeat(60),
            ..spec()
        });
        let head = read_event(&written).unwrap();
        assert_eq!(head.uid, "u-".repeat(60));
        let escaped = event_ics(&EventSpec {
            uid: "a,b;c\\d\ne".into(),
            ..spec()
        });
        assert_eq!(read_event(&escaped).unwrap().uid, "a,b;c\\d\ne");
        assert_eq!(unescape_text("x\\"), "x\\");
        assert_eq!(head.start, spec().start);
        assert_eq!(head.sequence, 7);
        // A sequence that is not a number, or too big, counts as 0.
        let odd = "UID:x\r\nDTSTART:20260105T090000\r\nSEQUENCE:99999999999\r\n";
        assert_eq!(read_event(odd).unwrap().sequence, 0);
        for hostile in [
            "",
            "UID:x",
            "UID:\r\nDTSTART:20260105T090000Z",
            "UID:x\r\nDTSTART;VALUE=DATE:20260105",
            "UID:x\r\nDTSTART:2026-01-05T09:00Z",
            "UID:x\r\nDTSTART:20261305T090000Z",
            "UID:x\r\nDTSTART:+0260105T090000Z",
            "UID:x\r\nDTSTART:2026010\u{e9}T09000Z",
        ] {
            assert_eq!(read_event(hostile), None, "{hostile:?}");
        }
        let t = UtcDateTime::from_fields(2026, 1, 5, 9, 30, 0).unwrap();
        assert_eq!(UtcDateTime::parse(&t.to_string()), Some(t));
        assert_eq!(UtcDateTime::parse(" 20260105T093000 "), Some(t));
    }
}
