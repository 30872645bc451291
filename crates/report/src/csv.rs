//! `intervals.csv` and `errors.csv`.

use std::io::Write;

use peakhour_analysis::{IntervalRecord, LatencySummary, RunRecord};

use crate::ReportError;

/// Header of `intervals.csv`; columns are described in the README.
pub const INTERVALS_CSV_HEADER: &str = "interval_start_s,interval_length_s,phase,action,count,errors,late_starts,p50_ms,p95_ms,p99_ms,max_ms,mean_ms,users_logged_on,client_cpu_percent";

/// Header of `errors.csv`; columns are described in the README.
pub const ERRORS_CSV_HEADER: &str = "interval_start_s,phase,action,error_kind,count";

/// Writes `intervals.csv`: one row per interval and action, in time then
/// action order. An interval with no action gets one row with an empty
/// action so users logged on and client CPU stay a continuous series.
/// Empty cells mean "no sample".
pub fn write_intervals_csv<W: Write>(record: &RunRecord, out: &mut W) -> Result<(), ReportError> {
    writeln!(out, "{INTERVALS_CSV_HEADER}")?;
    for interval in &record.intervals {
        let tail = format!(
            "{},{}",
            interval.users_logged_on,
            opt(interval
                .client
                .cpu_percent
                .map(|p| (p * 10.0).round() / 10.0))
        );
        if interval.actions.is_empty() {
            writeln!(out, "{},,0,0,0,,,,,,{tail}", head(interval))?;
        }
        for (action, a) in &interval.actions {
            let lat = LatencySummary::of(&a.latency.decode()?);
            writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{tail}",
                head(interval),
                field(action),
                lat.count,
                a.error_count(),
                a.late_starts,
                opt(lat.p50_ms),
                opt(lat.p95_ms),
                opt(lat.p99_ms),
                opt(lat.max_ms),
                opt(lat.mean_ms),
            )?;
        }
    }
    Ok(())
}

/// Writes `errors.csv`: one row per interval, action and error kind with a
/// non-zero count, in time, action and kind order.
pub fn write_errors_csv<W: Write>(record: &RunRecord, out: &mut W) -> Result<(), ReportError> {
    writeln!(out, "{ERRORS_CSV_HEADER}")?;
    for interval in &record.intervals {
        for (action, a) in &interval.actions {
            for (kind, n) in a.errors.iter().filter(|(_, n)| **n > 0) {
                writeln!(
                    out,
                    "{},{},{},{},{n}",
                    interval.start.as_secs_f64(),
                    interval.phase,
                    field(action),
                    field(kind)
                )?;
            }
        }
    }
    Ok(())
}

fn head(interval: &IntervalRecord) -> String {
    format!(
        "{},{},{}",
        interval.start.as_secs_f64(),
        interval.length.as_secs_f64(),
        interval.phase
    )
}

fn opt(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// RFC 4180 quoting for free-text fields (action names, error kinds).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(field("read"), "read");
        assert_eq!(field("imap.NO, busy"), "\"imap.NO, busy\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
