//! The HdrHistogram interval log (`.hlog`).

use std::io::Write;

use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use std::borrow::Borrow;

use peakhour_analysis::{IntervalRecord, LatencyHistogram, RunMeta, RunRecord};

use crate::ReportError;
use crate::time::parse_rfc3339_utc;

/// Writes an HdrHistogram interval log readable by HdrHistogram's own tools
/// (`HistogramLogProcessor`, HdrHistogramVisualizer, `IntervalLogIterator`).
///
/// - `StartTime` and `BaseTime` are the run's `started_at`, so each entry's
///   timestamp is seconds since the run started.
/// - Per interval, first one untagged entry, all actions merged, then one
///   entry per action tagged with its name (spaces and commas, which tags
///   may not hold, become `_`). `HistogramLogProcessor` without `-tag`
///   reads only untagged entries (and fails on a log that has none), so
///   the untagged one is what it summarizes by default.
/// - Values are microseconds from the intended start, V2 + deflate encoded;
///   the human-readable max column is in milliseconds (divisor 1000).
pub fn write_hlog<W: Write>(record: &RunRecord, out: &mut W) -> Result<(), ReportError> {
    write_hlog_intervals(&record.meta, &record.intervals, out, || Ok(()))
}

/// [`write_hlog`] from the run's metadata and its intervals as they come:
/// a run hands in its closed intervals one by one while it goes on, and
/// `after_each` runs once each interval's entries are written (to flush and
/// sync the file), so a killed run leaves every closed interval in the log.
/// An error from `after_each` ends the log.
pub fn write_hlog_intervals<W, I>(
    meta: &RunMeta,
    intervals: I,
    out: &mut W,
    mut after_each: impl FnMut() -> std::io::Result<()>,
) -> Result<(), ReportError>
where
    W: Write,
    I: IntoIterator,
    I::Item: Borrow<IntervalRecord>,
{
    let start = parse_rfc3339_utc(&meta.started_at)?;
    let mut serializer = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment(&format!(
            "peakhour {} run {} profile {} users {} seed {}",
            meta.peakhour_version, meta.run_id, meta.profile, meta.users, meta.seed
        ))
        .add_comment("values: action latency in microseconds from the intended start; untagged: all actions, tag: one action; max column: ms")
        .add_comment("read with: java -cp HdrHistogram.jar org.HdrHistogram.HistogramLogProcessor -i latency.hlog -outputValueUnitRatio 1000 [-tag ACTION]")
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1000.0);
    let mut log = builder.begin_log_with(out, &mut serializer)?;
    for interval in intervals {
        let interval = interval.borrow();
        let decoded = interval
            .actions
            .iter()
            .map(|(action, a)| Ok((action, a.latency.decode()?)))
            .collect::<Result<Vec<_>, ReportError>>()?;
        if !decoded.is_empty() {
            let mut all = LatencyHistogram::new();
            for (_, h) in &decoded {
                all.add(h)?;
            }
            log.write_histogram(all.as_hdr(), interval.start, interval.length, None)
                .map_err(|e| ReportError::Hlog(e.to_string()))?;
        }
        for (action, h) in decoded {
            let tag_text = action.replace([' ', ',', '\r', '\n'], "_");
            let tag = Tag::new(&tag_text);
            log.write_histogram(h.as_hdr(), interval.start, interval.length, tag)
                .map_err(|e| ReportError::Hlog(e.to_string()))?;
        }
        after_each().map_err(|e| ReportError::Hlog(e.to_string()))?;
    }
    Ok(())
}
