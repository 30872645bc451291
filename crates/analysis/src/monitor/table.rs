//! The samples kept in memory for analysis: a bounded column store.
//!
//! Each metric is a column of `f32` (NaN = no value), so a row costs 4
//! bytes per column: a lab host with ~80 columns keeps a 24-hour run at
//! 1 s (86,400 rows) in about 28 MB. Past `max_rows` the table halves its
//! resolution (keeps every other row, then stores every 2nd, 4th ... new
//! sample), so a longer run stays within the bound and still covers its
//! whole length. Unlike the CSV, a column that appears late (a new disk)
//! is added here, empty for the rows before it.

use std::collections::HashMap;
use std::io::BufRead;

use super::Columns;
use super::columns::TIME_S;

/// Default bound: 48 hours at one sample per second.
pub const DEFAULT_MAX_ROWS: usize = 172_800;

/// Why `monitor.csv` could not be read back into a [`MetricTable`]. The
/// words are those the monitor's own errors use for a file it reads.
#[derive(Debug, thiserror::Error)]
pub enum MonitorCsvError {
    /// Reading the file failed.
    #[error("cannot read monitor.csv: {0}")]
    Read(#[source] std::io::Error),
    /// The file is not a `monitor.csv`: no `time_s` first, or a row
    /// without a time.
    #[error("cannot parse monitor.csv: {0}")]
    Parse(String),
}

/// Samples as named columns over a shared time axis.
#[derive(Debug, Clone)]
pub struct MetricTable {
    time_s: Vec<f64>,
    names: Vec<String>,
    index: HashMap<String, usize>,
    columns: Vec<Vec<f32>>,
    max_rows: usize,
    stride: u64,
    offered: u64,
}

impl Default for MetricTable {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_ROWS)
    }
}

impl MetricTable {
    /// An empty table holding at most `max_rows` rows (rounded up to an
    /// even number, at least 2).
    pub fn new(max_rows: usize) -> Self {
        Self {
            time_s: Vec::new(),
            names: Vec::new(),
            index: HashMap::new(),
            columns: Vec::new(),
            max_rows: max_rows.max(2).next_multiple_of(2),
            stride: 1,
            offered: 0,
        }
    }

    /// Number of rows kept.
    pub fn len(&self) -> usize {
        self.time_s.len()
    }

    /// No rows yet.
    pub fn is_empty(&self) -> bool {
        self.time_s.is_empty()
    }

    /// Every `stride`-th sample is kept (1 until the table first fills).
    pub fn stride(&self) -> u64 {
        self.stride
    }

    /// Appends one row of named values.
    pub fn push(&mut self, time_s: f64, metrics: &[(String, Option<f64>)]) {
        let keep = self.offered.is_multiple_of(self.stride);
        self.offered += 1;
        if !keep {
            return;
        }
        if self.time_s.len() >= self.max_rows {
            self.halve();
        }
        let row = self.time_s.len();
        self.time_s.push(time_s);
        for (name, value) in metrics {
            let col = match self.index.get(name) {
                Some(&c) => c,
                None => {
                    self.names.push(name.clone());
                    self.columns.push(vec![f32::NAN; row]);
                    self.index.insert(name.clone(), self.columns.len() - 1);
                    self.columns.len() - 1
                }
            };
            self.columns[col].push(value.map_or(f32::NAN, |v| v as f32));
        }
        for column in &mut self.columns {
            if column.len() == row {
                column.push(f32::NAN);
            }
        }
    }

    fn halve(&mut self) {
        let keep_even = |v: &mut Vec<f32>| {
            let mut i = 0;
            v.retain(|_| {
                i += 1;
                (i - 1) % 2 == 0
            });
        };
        let mut i = 0;
        self.time_s.retain(|_| {
            i += 1;
            (i - 1) % 2 == 0
        });
        self.columns.iter_mut().for_each(keep_even);
        // Rows were samples 0, s, 2s ...; now 0, 2s, 4s ... With an even
        // `max_rows` the sample being pushed is a multiple of 2s as well.
        self.stride *= 2;
    }

    /// Column names, in order of first appearance.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Sample times, seconds since the origin.
    pub fn times(&self) -> &[f64] {
        &self.time_s
    }

    /// One column as `f64` (NaN = no value).
    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        self.index
            .get(name)
            .map(|&c| self.columns[c].iter().map(|&v| f64::from(v)).collect())
    }

    /// Reads a `monitor.csv` back (e.g. to analyse a finished run).
    pub fn from_csv(reader: impl BufRead, max_rows: usize) -> Result<Self, MonitorCsvError> {
        let mut lines = reader.lines();
        let header = match lines.next() {
            Some(h) => h.map_err(MonitorCsvError::Read)?,
            None => return Ok(Self::new(max_rows)),
        };
        let names: Vec<String> = header.split(',').map(|s| s.trim().to_owned()).collect();
        if names.first().map(String::as_str) != Some(TIME_S) {
            return Err(MonitorCsvError::Parse("first column is not time_s".into()));
        }
        let mut table = Self::new(max_rows);
        for line in lines {
            let line = line.map_err(MonitorCsvError::Read)?;
            if line.trim().is_empty() {
                continue;
            }
            let mut cells = line.split(',');
            let time: f64 = cells
                .next()
                .and_then(|t| t.trim().parse().ok())
                .ok_or_else(|| MonitorCsvError::Parse(format!("bad time in {line:?}")))?;
            let row: Vec<(String, Option<f64>)> = names[1..]
                .iter()
                .zip(cells.chain(std::iter::repeat("")))
                .map(|(n, c)| (n.clone(), c.trim().parse::<f64>().ok()))
                .collect();
            table.push(time, &row);
        }
        Ok(table)
    }
}

impl Columns for MetricTable {
    fn times(&self) -> &[f64] {
        &self.time_s
    }

    fn names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    fn values(&self, name: &str) -> Option<Vec<f64>> {
        self.column(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: f64) -> Vec<(String, Option<f64>)> {
        vec![("a".into(), Some(v))]
    }

    #[test]
    fn late_columns_are_backfilled() {
        let mut t = MetricTable::new(10);
        t.push(0.0, &row(1.0));
        t.push(1.0, &[("a".into(), Some(2.0)), ("b".into(), Some(5.0))]);
        t.push(2.0, &[("b".into(), None)]);
        let a = t.column("a").unwrap();
        let b = t.column("b").unwrap();
        assert_eq!(a[..2], [1.0, 2.0]);
        assert!(a[2].is_nan());
        assert!(b[0].is_nan() && b[1] == 5.0 && b[2].is_nan());
    }

    #[test]
    fn bounded_by_halving_resolution() {
        let mut t = MetricTable::new(4);
        for i in 0..16 {
            t.push(f64::from(i), &row(f64::from(i)));
        }
        assert!(t.len() <= 4);
        assert_eq!(t.stride(), 4);
        assert_eq!(t.times(), &[0.0, 4.0, 8.0, 12.0]);
        assert_eq!(t.column("a").unwrap(), vec![0.0, 4.0, 8.0, 12.0]);
    }

    #[test]
    fn csv_round_trip() {
        let text = "time_s,a,b\n0,1,\n1,2.5,3\n";
        let t = MetricTable::from_csv(text.as_bytes(), 100).unwrap();
        assert_eq!(t.times(), &[0.0, 1.0]);
        assert_eq!(t.column("a").unwrap(), vec![1.0, 2.5]);
        assert!(t.column("b").unwrap()[0].is_nan());
    }
}
