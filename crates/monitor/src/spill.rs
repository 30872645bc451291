//! The monitor's rows on disk while it samples, so its memory does not grow
//! with the run's length (issue 11: the table was 101 `f32` columns a second
//! in `Vec`s that double, the largest steady growth of a one-hour soak).
//!
//! `monitor.csv` holds the same rows, but rounded to three decimals and
//! without the columns that appeared after its header, so a table read back
//! from it is not the one the run's findings were computed from. The spill
//! keeps each row exactly as [`MetricTable::push`] is given it (every value
//! as the `f32` the table stores, every column in order of first
//! appearance), in an unlinked temporary file; at the end the rows are
//! replayed into a [`MetricTable`], which is then the very table that would
//! have been built in memory (halvings included: they depend only on the
//! rows pushed).
//!
//! A row on disk: `time_s` as `f64`, the number of columns known at that
//! row as `u32`, then one `f32` per column (NaN = no value), little-endian.
//! The names, one per column, stay in memory.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};

use crate::error::MonitorError;
use peakhour_analysis::monitor::MetricTable;

/// Rows written to a temporary file, replayed into a table at the end.
#[derive(Debug)]
pub(crate) struct SpilledRows {
    /// Written a whole row at a time (one `write` a sample, no buffer): a
    /// failed write leaves every earlier row whole.
    out: File,
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// The row being encoded (reused).
    row: Vec<f32>,
    bytes: Vec<u8>,
    rows: u64,
}

impl SpilledRows {
    /// Rows spilled to an unlinked file in the temporary directory: nothing
    /// is left behind, whatever ends the process.
    pub(crate) fn new() -> std::io::Result<Self> {
        Ok(Self::to_file(tempfile::tempfile()?))
    }

    pub(crate) fn to_file(file: File) -> Self {
        Self {
            out: file,
            names: Vec::new(),
            index: HashMap::new(),
            row: Vec::new(),
            bytes: Vec::new(),
            rows: 0,
        }
    }

    /// Rows written so far.
    #[cfg(test)]
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Appends one row, as [`MetricTable::push`] takes it.
    pub(crate) fn push(
        &mut self,
        time_s: f64,
        metrics: &[(String, Option<f64>)],
    ) -> std::io::Result<()> {
        self.row.fill(f32::NAN);
        for (name, value) in metrics {
            let col = match self.index.get(name) {
                Some(&c) => c,
                None => {
                    self.names.push(name.clone());
                    self.index.insert(name.clone(), self.names.len() - 1);
                    self.row.push(f32::NAN);
                    self.names.len() - 1
                }
            };
            // What the table stores: the value as f32, NaN for none.
            self.row[col] = value.map_or(f32::NAN, |v| v as f32);
        }
        self.bytes.clear();
        self.bytes.extend_from_slice(&time_s.to_le_bytes());
        let columns = u32::try_from(self.row.len()).unwrap_or(u32::MAX);
        self.bytes.extend_from_slice(&columns.to_le_bytes());
        for value in &self.row {
            self.bytes.extend_from_slice(&value.to_le_bytes());
        }
        self.out.write_all(&self.bytes)?;
        self.rows += 1;
        Ok(())
    }

    /// Replays every row into a table of at most `max_rows` rows.
    pub(crate) fn into_table(self, max_rows: usize) -> Result<MetricTable, MonitorError> {
        let mut file = self.out;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| MonitorError::read("the monitor's spilled rows", e))?;
        let mut input = BufReader::new(file);
        let mut table = MetricTable::new(max_rows);
        let mut metrics: Vec<(String, Option<f64>)> = Vec::with_capacity(self.names.len());
        let mut head = [0_u8; 12];
        let mut value = [0_u8; 4];
        for _ in 0..self.rows {
            input
                .read_exact(&mut head)
                .map_err(|e| MonitorError::read("the monitor's spilled rows", e))?;
            let (time, columns) = head.split_at(8);
            let time_s = f64::from_le_bytes(time.try_into().unwrap_or_default());
            let columns = u32::from_le_bytes(columns.try_into().unwrap_or_default()) as usize;
            let Some(names) = self.names.get(..columns) else {
                return Err(MonitorError::parse(
                    "the monitor's spilled rows",
                    format!("a row of {columns} columns, {} known", self.names.len()),
                ));
            };
            metrics.truncate(0);
            for name in names {
                input
                    .read_exact(&mut value)
                    .map_err(|e| MonitorError::read("the monitor's spilled rows", e))?;
                let v = f32::from_le_bytes(value);
                metrics.push((name.clone(), (!v.is_nan()).then_some(f64::from(v))));
            }
            table.push(time_s, &metrics);
        }
        Ok(table)
    }
}

/// Where the monitor keeps its rows while it samples: on disk (the spill),
/// or in memory when no temporary file could be made or writing one failed
/// (a full disk), from then on, after what was spilled is read back.
#[derive(Debug)]
pub(crate) enum Rows {
    Spilled(SpilledRows, usize),
    Held(MetricTable),
}

impl Rows {
    /// On disk if a temporary file can be made and `on_disk` is asked for.
    pub(crate) fn new(on_disk: bool, max_rows: usize) -> Self {
        match on_disk.then(SpilledRows::new) {
            Some(Ok(spill)) => Rows::Spilled(spill, max_rows),
            _ => Rows::Held(MetricTable::new(max_rows)),
        }
    }

    /// Appends one row; a spill that cannot be written becomes a table in
    /// memory with every row so far.
    pub(crate) fn push(
        &mut self,
        time_s: f64,
        metrics: &[(String, Option<f64>)],
    ) -> Result<(), MonitorError> {
        match self {
            Rows::Held(table) => table.push(time_s, metrics),
            Rows::Spilled(spill, _) => {
                if spill.push(time_s, metrics).is_err() {
                    // The failed row may be half written: every earlier
                    // one is whole and read back, this one is kept anew.
                    self.hold()?;
                    if let Rows::Held(table) = self {
                        table.push(time_s, metrics);
                    }
                }
            }
        }
        Ok(())
    }

    /// Reads the spilled rows back: the rows stay in memory from now on.
    fn hold(&mut self) -> Result<(), MonitorError> {
        let held = Rows::Held(MetricTable::new(2));
        if let Rows::Spilled(spill, max_rows) = std::mem::replace(self, held) {
            *self = Rows::Held(spill.into_table(max_rows)?);
        }
        Ok(())
    }

    /// Every row, as a table.
    pub(crate) fn into_table(self) -> Result<MetricTable, MonitorError> {
        match self {
            Rows::Held(table) => Ok(table),
            Rows::Spilled(spill, max_rows) => spill.into_table(max_rows),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Rows as a long run gives them: a column that appears late (a new
    /// disk), values missing now and then, values that are not exact in
    /// `f32`, and far more rows than the table keeps (so it halves).
    /// One row: its time and its named values.
    type Row = (f64, Vec<(String, Option<f64>)>);

    fn rows() -> Vec<Row> {
        (0..5_000_u32)
            .map(|i| {
                let t = f64::from(i) - 30.0 + 0.000_123;
                let mut metrics = vec![
                    ("cpu_pct".to_owned(), Some(f64::from(i % 97) / 7.0)),
                    ("mem_bytes".to_owned(), Some(1e9 + f64::from(i) * 4_096.5)),
                    (
                        "queue".to_owned(),
                        (i % 11 != 0).then_some(f64::from(i % 5)),
                    ),
                ];
                if i >= 1_234 {
                    metrics.push(("disk_sdb_util".to_owned(), Some(f64::from(i).sqrt())));
                }
                if i % 3 == 0 {
                    metrics.reverse();
                }
                (t, metrics)
            })
            .collect()
    }

    fn assert_same(a: &MetricTable, b: &MetricTable) {
        assert_eq!(a.names(), b.names());
        assert_eq!(a.times(), b.times());
        assert_eq!(a.stride(), b.stride());
        for name in a.names() {
            let bits = |t: &MetricTable| -> Vec<u64> {
                t.column(name)
                    .unwrap()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect()
            };
            assert_eq!(bits(a), bits(b), "column {name}");
        }
    }

    #[test]
    fn issue_11_the_table_replayed_from_disk_is_the_table_built_in_memory() {
        for max_rows in [100, 1_000, 10_000] {
            let mut held = MetricTable::new(max_rows);
            let mut spill = SpilledRows::new().unwrap();
            for (t, metrics) in rows() {
                held.push(t, &metrics);
                spill.push(t, &metrics).unwrap();
            }
            assert_eq!(spill.rows(), 5_000);
            assert_same(&spill.into_table(max_rows).unwrap(), &held);
        }
    }

    #[test]
    fn issue_11_what_the_spill_holds_in_memory_does_not_grow_with_the_rows() {
        let mut spill = SpilledRows::new().unwrap();
        let mut sizes = Vec::new();
        for (n, (t, metrics)) in rows().into_iter().enumerate() {
            spill.push(t, &metrics).unwrap();
            if n == 2_000 || n == 4_999 {
                sizes.push((
                    spill.names.len(),
                    spill.row.capacity(),
                    spill.bytes.capacity(),
                ));
            }
        }
        // Past the late column, 3,000 more rows added nothing in memory.
        assert_eq!(sizes[0], sizes[1]);
        assert_eq!(sizes[0].0, 4);
    }

    #[test]
    fn issue_11_a_spill_that_cannot_be_written_keeps_every_row_in_memory() {
        let path = tempfile::NamedTempFile::new().unwrap();
        let mut held = MetricTable::new(1_000);
        let mut rows_kept = Rows::Spilled(SpilledRows::new().unwrap(), 1_000);
        let all = rows();
        for (n, (t, metrics)) in all.iter().enumerate() {
            if n == 2_500 {
                // The disk fills: from here on every write fails.
                let Rows::Spilled(spill, _) = &mut rows_kept else {
                    panic!("spilling")
                };
                let read_only = File::open(path.path()).unwrap();
                spill.out.seek(SeekFrom::Start(0)).unwrap();
                let written = std::mem::replace(&mut spill.out, read_only);
                // Keep what was written readable through the read-only
                // handle's place: copy it there first.
                let mut copy = File::create(path.path()).unwrap();
                std::io::copy(&mut &written, &mut copy).unwrap();
            }
            held.push(*t, metrics);
            rows_kept.push(*t, metrics).unwrap();
        }
        assert!(matches!(rows_kept, Rows::Held(_)));
        assert_same(&rows_kept.into_table().unwrap(), &held);
    }
}
