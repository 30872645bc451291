//! Reading a capacity curve from any CSV (or tab-separated) table of load
//! against throughput, for `peakhour analyze capacity`.
//!
//! The `csv` crate does the parsing, so quoted fields may hold the
//! delimiter, doubled quotes and line breaks, and a UTF-8 byte order mark
//! (as spreadsheets write) is skipped. On top of it: lines starting with
//! `#` and blank lines are skipped, the delimiter is a tab when the header
//! has tabs and no comma, and numbers may carry thousands separators inside
//! quotes (`"12,475,980"`).

use peakhour_analysis::capacity::CurvePoint;

/// Why a table does not give a curve. The messages name the flags of
/// `peakhour analyze capacity` that choose the columns.
#[derive(Debug, thiserror::Error)]
pub enum CurveTableError {
    /// No header row.
    #[error("the table is empty (no header row)")]
    Empty,
    /// The CSV itself is malformed (e.g. a quote that never closes).
    #[error("{0}")]
    Csv(#[from] ::csv::Error),
    /// A column named on the command line is not in the header.
    #[error("--{role}-column {name:?}: no such column; the header has {header:?}")]
    NoColumn {
        /// `load`, `throughput` or `p95`.
        role: &'static str,
        /// The name asked for.
        name: String,
        /// The header's names.
        header: Vec<String>,
    },
    /// A cell that should hold a number does not.
    #[error("line {line}: column {column:?}: {raw:?} is not a number")]
    NotANumber {
        /// The line the row starts on (1-based, counting every line).
        line: u64,
        /// The column's name.
        column: String,
        /// The cell.
        raw: String,
    },
    /// A load or throughput cell is empty.
    #[error("line {line}: column {column:?} is empty")]
    EmptyCell {
        /// The line the row starts on.
        line: u64,
        /// The column's name.
        column: String,
    },
}

/// A table with a header row.
#[derive(Clone, Debug)]
pub struct CurveTable {
    header: Vec<String>,
    rows: Vec<(u64, Vec<String>)>,
}

/// Which columns hold the curve.
#[derive(Clone, Copy, Debug)]
pub struct CurveColumns<'a> {
    /// The load (users, clients).
    pub load: &'a str,
    /// The throughput.
    pub throughput: &'a str,
    /// The p95 in ms, if the table has one.
    pub p95: Option<&'a str>,
}

impl CurveTable {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Self, CurveTableError> {
        let body = text.strip_prefix('\u{feff}').unwrap_or(text);
        let header_line = body
            .lines()
            .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .ok_or(CurveTableError::Empty)?;
        let delimiter = if !header_line.contains(',') && header_line.contains('\t') {
            b'\t'
        } else {
            b','
        };
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .comment(Some(b'#'))
            .trim(::csv::Trim::All)
            .delimiter(delimiter)
            .from_reader(text.as_bytes());
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record?;
            let fields: Vec<String> = record.iter().map(str::to_string).collect();
            let blank = fields.iter().all(String::is_empty);
            let comment = fields.first().is_some_and(|f| f.starts_with('#'));
            if blank || comment {
                continue;
            }
            let line = record.position().map_or(0, ::csv::Position::line);
            rows.push((line, fields));
        }
        if rows.is_empty() {
            return Err(CurveTableError::Empty);
        }
        let (_, header) = rows.remove(0);
        Ok(Self { header, rows })
    }

    /// The header's names.
    pub fn header(&self) -> &[String] {
        &self.header
    }

    fn column(&self, name: &str, role: &'static str) -> Result<usize, CurveTableError> {
        self.header
            .iter()
            .position(|h| h == name)
            .or_else(|| {
                self.header
                    .iter()
                    .position(|h| h.eq_ignore_ascii_case(name))
            })
            .ok_or_else(|| CurveTableError::NoColumn {
                role,
                name: name.to_string(),
                header: self.header.clone(),
            })
    }

    /// The curve's points, one per row, in table order. Column names match
    /// exactly, else without regard to ASCII case.
    pub fn points(&self, columns: CurveColumns<'_>) -> Result<Vec<CurvePoint>, CurveTableError> {
        let load_col = self.column(columns.load, "load")?;
        let tput_col = self.column(columns.throughput, "throughput")?;
        let p95_col = columns
            .p95
            .map(|name| self.column(name, "p95").map(|col| (col, name)))
            .transpose()?;
        let mut points = Vec::with_capacity(self.rows.len());
        for (line, fields) in &self.rows {
            let cell = |col: usize, name: &str| number(fields, *line, col, name);
            let required = |col: usize, name: &str| {
                cell(col, name)?.ok_or_else(|| CurveTableError::EmptyCell {
                    line: *line,
                    column: name.to_string(),
                })
            };
            points.push(CurvePoint {
                load: required(load_col, columns.load)?,
                throughput: required(tput_col, columns.throughput)?,
                p95_ms: match p95_col {
                    Some((col, name)) => cell(col, name)?,
                    None => None,
                },
            });
        }
        Ok(points)
    }
}

/// The number in `fields[col]`: `None` when empty; thousands separators
/// (`,` inside quotes, `_`) are dropped.
fn number(
    fields: &[String],
    line: u64,
    col: usize,
    name: &str,
) -> Result<Option<f64>, CurveTableError> {
    let raw = fields.get(col).map(String::as_str).unwrap_or("").trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let cleaned: String = raw.chars().filter(|c| *c != ',' && *c != '_').collect();
    match cleaned.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        _ => Err(CurveTableError::NotANumber {
            line,
            column: name.to_string(),
            raw: raw.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn columns<'a>(load: &'a str, throughput: &'a str, p95: Option<&'a str>) -> CurveColumns<'a> {
        CurveColumns {
            load,
            throughput,
            p95,
        }
    }

    #[test]
    fn parses_quoted_numbers_comments_and_tabs() {
        let t = CurveTable::parse(
            "# note\nclients,\"bytes/sec\",p95\n1,\"480,154\",\n8,3757741,12.5\n",
        )
        .unwrap();
        let p = t
            .points(columns("Clients", "bytes/sec", Some("p95")))
            .unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].throughput, 480_154.0);
        assert_eq!(p[0].p95_ms, None);
        assert_eq!(p[1].p95_ms, Some(12.5));
        let tabs = CurveTable::parse("a\tb\n1\t2\n").unwrap();
        assert_eq!(
            tabs.points(columns("a", "b", None)).unwrap()[0].throughput,
            2.0
        );
        let err = t
            .points(columns("users", "bytes/sec", None))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--load-column"), "{err}");
        let bad = CurveTable::parse("a,b\n1,x\n")
            .unwrap()
            .points(columns("a", "b", None))
            .unwrap_err();
        assert!(bad.to_string().contains("line 2"), "{bad}");
        assert!(matches!(
            CurveTable::parse("# only\n\n"),
            Err(CurveTableError::Empty)
        ));
    }

    #[test]
    fn quoted_line_breaks_and_a_byte_order_mark() {
        let text =
            "\u{feff}users,\"actions\nper second\",note\n10,5,\"first\nstep\"\n\n20,9,x\n30,x,y\n";
        let t = CurveTable::parse(text).unwrap();
        assert_eq!(t.header()[0], "users", "the BOM is not part of the name");
        assert_eq!(t.header()[1], "actions\nper second");
        let err = t
            .points(columns("users", "actions\nper second", None))
            .unwrap_err();
        // Line numbers count the lines inside quoted fields too.
        assert!(err.to_string().starts_with("line 7:"), "{err}");
        let t = CurveTable::parse(&text.replace("30,x,y\n", "")).unwrap();
        let p = t
            .points(columns("users", "actions\nper second", None))
            .unwrap();
        assert_eq!(
            p.iter().map(|p| (p.load, p.throughput)).collect::<Vec<_>>(),
            [(10.0, 5.0), (20.0, 9.0)]
        );
    }
}
