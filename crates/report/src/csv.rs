//! `intervals.csv` and `errors.csv`, and the one CSV writer every CSV of
//! the crate goes through (the `csv` crate: RFC 4180 quoting only where a
//! field needs it, `\n` line ends).

use std::io::Write;

use peakhour_analysis::{IntervalRecord, LatencySummary, RunRecord};

use crate::ReportError;

/// Header of `intervals.csv`; columns are described in the README.
pub const INTERVALS_CSV_HEADER: &str = "interval_start_s,interval_length_s,phase,action,count,errors,late_starts,p50_ms,p95_ms,p99_ms,max_ms,mean_ms,users_logged_on,client_cpu_percent";

/// Header of `errors.csv`; columns are described in the README.
/// `example` is the first error of that action and kind as it happened (the
/// command, the login sent and the server's text), on the first row of the
/// pair only; empty elsewhere and in rows a run appends as it goes.
pub const ERRORS_CSV_HEADER: &str = "interval_start_s,phase,action,error_kind,count,example";

/// The columns of `state-violations.csv`: one row per state-check
/// violation, with its evidence (issue 27). A file of its own rather than
/// rows of `errors.csv`, whose rows count an action's errors per interval
/// and kind: a violation belongs to no action, and its evidence (session,
/// mailbox, sequence number, UID, both values) has no column there.
pub const STATE_VIOLATIONS_CSV_HEADER: &str = "check,client,mailbox,seq,uid,expected,seen";

/// Writes `state-violations.csv`: the violations `record` kept
/// ([`peakhour_analysis::VIOLATIONS_KEPT`] at most), in the order found.
pub fn write_state_violations_csv<W: Write>(
    record: &RunRecord,
    out: &mut W,
) -> Result<(), ReportError> {
    let mut writer = csv_writer(out);
    write_header(&mut writer, STATE_VIOLATIONS_CSV_HEADER)?;
    let number = |n: Option<u32>| n.map_or_else(String::new, |n| n.to_string());
    for v in record.state_checks.iter().flat_map(|s| &s.examples) {
        writer.write_record([
            v.check.as_str(),
            &v.client,
            &v.mailbox,
            &number(v.seq),
            &number(v.uid),
            &v.expected,
            &v.seen,
        ])?;
    }
    writer.flush()?;
    Ok(())
}

/// The crate's CSV writer over `out`: fields are quoted when they hold the
/// delimiter, a quote or a line break, and records end with `\n`.
pub(crate) fn csv_writer<W: Write>(out: W) -> ::csv::Writer<W> {
    ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(out)
}

/// Writes a header given as one comma-separated line.
pub(crate) fn write_header<W: Write>(
    writer: &mut ::csv::Writer<W>,
    header: &str,
) -> Result<(), ReportError> {
    writer.write_record(header.split(','))?;
    Ok(())
}

/// Writes `intervals.csv`: one row per interval and action, in time then
/// action order. An interval with no action gets one row with an empty
/// action so users logged on and client CPU stay a continuous series.
/// Empty cells mean "no sample".
pub fn write_intervals_csv<W: Write>(record: &RunRecord, out: &mut W) -> Result<(), ReportError> {
    let mut writer = csv_writer(out);
    write_header(&mut writer, INTERVALS_CSV_HEADER)?;
    for interval in &record.intervals {
        interval_rows(&mut writer, interval)?;
    }
    writer.flush()?;
    Ok(())
}

/// The rows of `intervals.csv` for one interval, without the header: what a
/// run appends as each interval closes.
pub fn write_interval_rows<W: Write>(
    interval: &IntervalRecord,
    out: &mut W,
) -> Result<(), ReportError> {
    let mut writer = csv_writer(out);
    interval_rows(&mut writer, interval)?;
    writer.flush()?;
    Ok(())
}

fn interval_rows<W: Write>(
    writer: &mut ::csv::Writer<W>,
    interval: &IntervalRecord,
) -> Result<(), ReportError> {
    let tail = [
        interval.users_logged_on.to_string(),
        opt(interval
            .client
            .cpu_percent
            .map(|p| (p * 10.0).round() / 10.0)),
    ];
    if interval.actions.is_empty() {
        let empty = ["", "0", "0", "0", "", "", "", "", ""].map(String::from);
        writer.write_record(head(interval).iter().chain(&empty).chain(&tail))?;
    }
    for (action, a) in &interval.actions {
        let lat = LatencySummary::of(&a.latency.decode()?);
        let cells = [
            action.clone(),
            lat.count.to_string(),
            a.error_count().to_string(),
            a.late_starts.to_string(),
            opt(lat.p50_ms),
            opt(lat.p95_ms),
            opt(lat.p99_ms),
            opt(lat.max_ms),
            opt(lat.mean_ms),
        ];
        writer.write_record(head(interval).iter().chain(&cells).chain(&tail))?;
    }
    Ok(())
}

/// The action of `errors.csv`'s rows of state-check violations.
pub const STATE_CHECK_ACTION: &str = "state_check";

/// The outcome class of a state-check violation in `errors.csv`: its
/// error kind is `inconsistent:<check>` (`inconsistent:uid_order`).
pub const INCONSISTENT: &str = "inconsistent";

/// Writes `errors.csv`: one row per interval, action and error kind with a
/// non-zero count, in time, action and kind order; then the state checks'
/// violations (`run --check-state`), one row per interval and check kind,
/// action `state_check`, kind `inconsistent:<check>`.
pub fn write_errors_csv<W: Write>(record: &RunRecord, out: &mut W) -> Result<(), ReportError> {
    let mut writer = csv_writer(out);
    write_header(&mut writer, ERRORS_CSV_HEADER)?;
    let mut shown = std::collections::BTreeSet::new();
    for interval in &record.intervals {
        error_rows(&mut writer, interval, &mut |action, kind| {
            if shown.insert((action.to_owned(), kind.to_owned())) {
                peakhour_analysis::example_for(record, action, kind).unwrap_or_default()
            } else {
                String::new()
            }
        })?;
    }
    for row in inconsistent_rows(record) {
        writer.write_record(row)?;
    }
    writer.flush()?;
    Ok(())
}

/// The rows of the state checks' violations: the kept ones counted in the
/// interval they were found in (the last interval when later, as the
/// delivery checks after the drain are), and the violations past the kept
/// ones added to the last row of their kind, so that a kind's rows add up
/// to `state_checks.by_kind`. A kind's first row quotes its first violation
/// and names the session's raw log.
fn inconsistent_rows(record: &RunRecord) -> Vec<[String; 6]> {
    use std::collections::BTreeMap;
    let Some(checks) = &record.state_checks else {
        return Vec::new();
    };
    let Some(last) = record.intervals.len().checked_sub(1) else {
        return Vec::new();
    };
    let interval_of = |at_s: Option<f64>| {
        at_s.and_then(|at| {
            record
                .intervals
                .iter()
                .position(|i| at < (i.start + i.length).as_secs_f64())
        })
        .unwrap_or(last)
    };
    // (interval, kind) -> (count, the first violation there).
    let mut cells: BTreeMap<(usize, &str), (u64, Option<&peakhour_analysis::StateViolation>)> =
        BTreeMap::new();
    for v in &checks.examples {
        let cell = cells
            .entry((interval_of(v.at_s), v.check.as_str()))
            .or_default();
        cell.0 += 1;
        cell.1.get_or_insert(v);
    }
    for (kind, count, _) in checks.violated_kinds() {
        let kept: u64 = cells
            .iter()
            .filter(|((_, k), _)| *k == kind)
            .map(|(_, c)| c.0)
            .sum();
        let past = count.violations.saturating_sub(kept);
        if past > 0 {
            let at = cells
                .keys()
                .filter(|(_, k)| *k == kind)
                .map(|(i, _)| *i)
                .max()
                .unwrap_or(last);
            cells.entry((at, kind)).or_default().0 += past;
        }
    }
    let mut quoted = std::collections::BTreeSet::new();
    cells
        .into_iter()
        .map(|((at, kind), (count, first))| {
            let interval = &record.intervals[at];
            let example = match first {
                Some(v) if quoted.insert(kind) => {
                    let log = checks.session_logs.contains_key(&v.client).then(|| {
                        format!(
                            "; raw log: state-violations/{}",
                            peakhour_analysis::session_log_file(&v.client)
                        )
                    });
                    format!("{v}{}", log.unwrap_or_default())
                }
                _ => String::new(),
            };
            [
                interval.start.as_secs_f64().to_string(),
                interval.phase.to_string(),
                STATE_CHECK_ACTION.to_owned(),
                format!("{INCONSISTENT}:{kind}"),
                count.to_string(),
                example,
            ]
        })
        .collect()
}

/// The rows of `errors.csv` for one interval, without the header.
pub fn write_error_rows<W: Write>(
    interval: &IntervalRecord,
    out: &mut W,
) -> Result<(), ReportError> {
    let mut writer = csv_writer(out);
    error_rows(&mut writer, interval, &mut |_, _| String::new())?;
    writer.flush()?;
    Ok(())
}

fn error_rows<W: Write>(
    writer: &mut ::csv::Writer<W>,
    interval: &IntervalRecord,
    example: &mut dyn FnMut(&str, &str) -> String,
) -> Result<(), ReportError> {
    for (action, a) in &interval.actions {
        for (kind, n) in a.errors.iter().filter(|(_, n)| **n > 0) {
            writer.write_record([
                interval.start.as_secs_f64().to_string(),
                interval.phase.to_string(),
                action.clone(),
                kind.clone(),
                n.to_string(),
                example(action, kind),
            ])?;
        }
    }
    Ok(())
}

fn head(interval: &IntervalRecord) -> [String; 3] {
    [
        interval.start.as_secs_f64().to_string(),
        interval.length.as_secs_f64().to_string(),
        interval.phase.to_string(),
    ]
}

fn opt(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::csv_writer;

    #[test]
    fn quotes_only_when_needed() {
        let mut out = Vec::new();
        let mut w = csv_writer(&mut out);
        w.write_record(["read", "imap.NO, busy", "say \"hi\"", "two\nlines", ""])
            .unwrap();
        w.flush().unwrap();
        drop(w);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "read,\"imap.NO, busy\",\"say \"\"hi\"\"\",\"two\nlines\",\n"
        );
    }
}
