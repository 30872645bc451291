//! `monitor.csv`: one row per sample, columns fixed by the first sample.
//!
//! The header is `time_s` followed by [`Sample::metrics`]' names. Devices,
//! interfaces or groups that appear after the first sample are not added
//! (a CSV cannot grow columns mid-file): their values are left out and
//! their names listed in [`CsvWriter::dropped_columns`]. A device that
//! disappears leaves its cells empty. Empty cell = no value (first sample's
//! rates, a counter reset, a source that cannot see the metric).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write;

use crate::error::MonitorError;
use crate::sample::Sample;
use peakhour_analysis::monitor::columns::TIME_S;

/// Writes samples as CSV rows to any [`Write`].
#[derive(Debug)]
pub struct CsvWriter<W: Write> {
    out: W,
    columns: Option<Vec<String>>,
    dropped: BTreeSet<String>,
    offset_s: f64,
    line: String,
}

/// Formats a value: up to 3 decimals, trailing zeros trimmed, empty for
/// no value or a non-finite one.
pub(crate) fn format_value(out: &mut String, value: Option<f64>) {
    let Some(v) = value.filter(|v| v.is_finite()) else {
        return;
    };
    let start = out.len();
    let _ = write!(out, "{v:.3}");
    let trimmed = out[start..]
        .trim_end_matches('0')
        .trim_end_matches('.')
        .len();
    out.truncate(start + trimmed);
    if &out[start..] == "-0" {
        out.truncate(start);
        out.push('0');
    }
}

impl<W: Write> CsvWriter<W> {
    /// A writer whose `time_s` is the sample's own time.
    pub fn new(out: W) -> Self {
        Self {
            out,
            columns: None,
            dropped: BTreeSet::new(),
            offset_s: 0.0,
            line: String::new(),
        }
    }

    /// Adds `offset_s` to every row's time: for samples taken against
    /// another origin than the run's start.
    pub fn with_time_offset(mut self, offset_s: f64) -> Self {
        self.offset_s = offset_s;
        self
    }

    /// The header's columns (after the first row), `time_s` first.
    pub fn columns(&self) -> Option<&[String]> {
        self.columns.as_deref()
    }

    /// Metrics that appeared after the header was written, and so are not in the file.
    pub fn dropped_columns(&self) -> &BTreeSet<String> {
        &self.dropped
    }

    /// Appends a sample (and the header before the first one), then flushes.
    pub fn write_sample(&mut self, sample: &Sample) -> Result<(), MonitorError> {
        self.write_row(sample.time_s, &sample.metrics())
    }

    /// Appends one row of named values.
    pub fn write_row(
        &mut self,
        time_s: f64,
        metrics: &[(String, Option<f64>)],
    ) -> Result<(), MonitorError> {
        self.line.clear();
        let columns = match &self.columns {
            Some(c) => c,
            None => {
                let mut c = Vec::with_capacity(metrics.len() + 1);
                c.push(TIME_S.to_owned());
                c.extend(metrics.iter().map(|(n, _)| n.clone()));
                self.line.push_str(&c.join(","));
                self.line.push('\n');
                self.columns.insert(c)
            }
        };
        let mut cells: Vec<Option<f64>> = vec![None; columns.len()];
        for (name, value) in metrics {
            // Same order as the header in the common case: try the same slot first.
            match columns.iter().position(|c| c == name) {
                Some(i) => cells[i] = *value,
                None => {
                    if !self.dropped.contains(name) {
                        self.dropped.insert(name.clone());
                    }
                }
            }
        }
        format_value(&mut self.line, Some(time_s + self.offset_s));
        for cell in &cells[1..] {
            self.line.push(',');
            format_value(&mut self.line, *cell);
        }
        self.line.push('\n');
        self.out
            .write_all(self.line.as_bytes())
            .map_err(MonitorError::Write)?;
        self.out.flush().map_err(MonitorError::Write)
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, Option<f64>)]) -> Vec<(String, Option<f64>)> {
        pairs.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect()
    }

    #[test]
    fn header_fixed_by_first_row_and_late_columns_dropped() {
        let mut w = CsvWriter::new(Vec::new()).with_time_offset(10.0);
        w.write_row(0.0, &m(&[("a", None), ("b", Some(2.0))]))
            .unwrap();
        w.write_row(
            1.0,
            &m(&[("b", Some(0.12345)), ("c", Some(9.0)), ("a", Some(-0.0001))]),
        )
        .unwrap();
        w.write_row(2.0, &m(&[("a", Some(1.5))])).unwrap();
        assert_eq!(w.dropped_columns().iter().collect::<Vec<_>>(), vec!["c"]);
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(text, "time_s,a,b\n10,,2\n11,0,0.123\n12,1.5,\n");
    }
}
