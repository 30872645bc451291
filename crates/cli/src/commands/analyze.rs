//! `peakhour analyze capacity`: the capacity analysis (peak, shape, QoS
//! capacity, USL fit, knee) of any CSV table of load against throughput.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{Context, bail};
use peakhour_analysis::capacity::{
    CapacityAnalysis, CapacityOptions, CurvePoint, format_number as num,
};

use crate::args::{AnalyzeCapacityArgs, AnalyzeCommand};

/// Runs `peakhour analyze ...`.
pub(crate) fn run(command: AnalyzeCommand) -> anyhow::Result<ExitCode> {
    match command {
        AnalyzeCommand::Capacity(args) => capacity(&args),
    }
}

fn capacity(args: &AnalyzeCapacityArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let table = Table::parse(&text).with_context(|| format!("in {}", args.file.display()))?;
    let points = table
        .points(
            &args.load_column,
            &args.throughput_column,
            args.p95_column.as_deref(),
        )
        .with_context(|| format!("in {}", args.file.display()))?;
    if args.qos_p95_ms.is_nan() || args.qos_p95_ms <= 0.0 {
        bail!("--qos-p95-ms must be a positive number of milliseconds");
    }
    let options = CapacityOptions {
        qos_p95_ms: args.qos_p95_ms,
        knee_sensitivity: args.knee_sensitivity,
        ..CapacityOptions::default()
    };
    let analysis = CapacityAnalysis::compute(&points, &options)?;
    if args.json {
        let mut value = serde_json::to_value(&analysis)?;
        if let Some(object) = value.as_object_mut() {
            object.insert(
                "input".to_string(),
                serde_json::json!({
                    "file": args.file.display().to_string(),
                    "load_column": args.load_column,
                    "throughput_column": args.throughput_column,
                    "p95_column": args.p95_column,
                }),
            );
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let title = format!(
            "{} against {} in {}",
            args.throughput_column,
            args.load_column,
            args.file.display()
        );
        print!("{}", render_text(&analysis, &title));
    }
    Ok(ExitCode::SUCCESS)
}

/// The analysis as text for the terminal.
pub(crate) fn render_text(a: &CapacityAnalysis, title: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Capacity: {title} ({} points)\n", a.points.len());
    let has_p95 = a.points.iter().any(|p| p.p95_ms.is_some());
    let _ = writeln!(
        out,
        "  {:>10}  {:>16}  {:>10}  {:>16}",
        "load",
        "throughput",
        if has_p95 { "p95 ms" } else { "" },
        if a.usl.is_some() { "USL fit" } else { "" }
    );
    for p in &a.points {
        let mark = if p.load == a.peak.load {
            "  <- peak"
        } else if a.knee.as_ref().is_some_and(|k| k.load == p.load) {
            "  <- knee"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {:>10}  {:>16}  {:>10}  {:>16}{mark}",
            num(p.load),
            num(p.throughput),
            p.p95_ms.map(num).unwrap_or_default(),
            a.usl
                .as_ref()
                .map(|u| num(u.predict(p.load)))
                .unwrap_or_default(),
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Peak      {} at a load of {}",
        num(a.peak.throughput),
        num(a.peak.load)
    );
    let s = &a.shape;
    let ratio = |r: Option<f64>| {
        r.map(|r| format!("{r:.2}"))
            .unwrap_or_else(|| "-".to_string())
    };
    let _ = writeln!(out, "Shape     {}", s.statement);
    if let (Some(approach), fall) = (s.approach, s.fall) {
        let _ = writeln!(
            out,
            "          approach {} (slope into the peak / steepest slope = {}), fall {} ({})",
            approach.as_str(),
            ratio(s.approach_ratio),
            fall.map(|f| f.as_str()).unwrap_or("-"),
            ratio(s.fall_ratio)
        );
    }
    let _ = writeln!(out, "          rule: {}", s.rule);
    match &a.knee {
        Some(k) => {
            let _ = writeln!(
                out,
                "Knee      {} at a load of {} (Kneedle, S = {}; difference {:.3}, threshold {:.3})",
                num(k.throughput),
                num(k.load),
                k.sensitivity,
                k.difference,
                k.threshold
            );
        }
        None => {
            let _ = writeln!(
                out,
                "Knee      none found (Kneedle, S = {})",
                a.options.knee_sensitivity
            );
        }
    }
    if let Some(q) = &a.qos {
        let _ = writeln!(out, "Capacity  {}", q.statement);
        let _ = writeln!(out, "          method: {}", q.method);
    }
    match (&a.usl, &a.usl_error) {
        (Some(u), _) => {
            let se = |v: Option<f64>| v.map(|v| format!(" ± {v:.3e}")).unwrap_or_default();
            let errors = u.std_errors;
            let _ = writeln!(
                out,
                "USL       X(N) = gamma N / (1 + alpha (N-1) + beta N (N-1))\n          \
                 alpha = {:.4e}{}  beta = {:.4e}{}  gamma = {:.6}{}",
                u.alpha,
                se(errors.map(|e| e.alpha)),
                u.beta,
                se(errors.map(|e| e.beta)),
                u.gamma,
                se(errors.map(|e| e.gamma)),
            );
            match u.residual_std_error {
                Some(rse) => {
                    let _ = writeln!(
                        out,
                        "          residual standard error {} on {} degrees of freedom",
                        num(rse),
                        u.degrees_of_freedom
                    );
                }
                None => {
                    let _ = writeln!(out, "          no degrees of freedom left for errors");
                }
            }
            let opt = |v: Option<f64>| v.map(num).unwrap_or_else(|| "unbounded".to_string());
            let _ = writeln!(
                out,
                "          N_max = sqrt((1-alpha)/beta) = {}, X(N_max) = {}; N_opt = 1/alpha = {}; \
                 X_lim = gamma/alpha = {}",
                opt(u.n_max),
                opt(u.x_max),
                opt(u.n_opt),
                opt(u.x_lim)
            );
            if !u.at_bounds.is_empty() {
                let _ = writeln!(out, "          at bounds: {}", u.at_bounds.join(", "));
            }
            let _ = writeln!(out, "          method: {}", u.method);
        }
        (None, Some(e)) => {
            let _ = writeln!(out, "USL       not fitted: {e}");
        }
        (None, None) => {}
    }
    let _ = writeln!(out, "\nConclusions");
    for c in a.conclusions() {
        let _ = writeln!(out, "  - {c}");
    }
    if !a.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings");
        for w in &a.warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    out
}

/// A CSV (or tab-separated) table with a header row. Lines starting with
/// `#` and blank lines are skipped; fields may be double-quoted, and
/// numbers may carry thousands separators inside quotes ("12,475,980").
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    pub(crate) fn parse(text: &str) -> anyhow::Result<Self> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        let Some((_, header_line)) = lines.next() else {
            bail!("the table is empty (no header row)");
        };
        let delimiter = if !header_line.contains(',') && header_line.contains('\t') {
            '\t'
        } else {
            ','
        };
        let header = split_fields(header_line, delimiter);
        let rows = lines
            .map(|(i, l)| (i + 1, split_fields(l, delimiter)))
            .collect();
        Ok(Self { header, rows })
    }

    fn column(&self, name: &str, flag: &str) -> anyhow::Result<usize> {
        self.header
            .iter()
            .position(|h| h == name)
            .or_else(|| {
                self.header
                    .iter()
                    .position(|h| h.eq_ignore_ascii_case(name))
            })
            .with_context(|| {
                format!(
                    "{flag} {name:?}: no such column; the header has {:?}",
                    self.header
                )
            })
    }

    pub(crate) fn points(
        &self,
        load: &str,
        throughput: &str,
        p95: Option<&str>,
    ) -> anyhow::Result<Vec<CurvePoint>> {
        let load_col = self.column(load, "--load-column")?;
        let tput_col = self.column(throughput, "--throughput-column")?;
        let p95_col = p95
            .map(|name| self.column(name, "--p95-column"))
            .transpose()?;
        let mut points = Vec::with_capacity(self.rows.len());
        for (line, fields) in &self.rows {
            let cell = |col: usize, name: &str| -> anyhow::Result<Option<f64>> {
                let raw = fields.get(col).map(String::as_str).unwrap_or("").trim();
                if raw.is_empty() {
                    return Ok(None);
                }
                let cleaned: String = raw.chars().filter(|c| *c != ',' && *c != '_').collect();
                cleaned
                    .parse::<f64>()
                    .map(Some)
                    .ok()
                    .filter(|v| v.is_some_and(f64::is_finite))
                    .with_context(|| {
                        format!("line {line}: column {name:?}: {raw:?} is not a number")
                    })
            };
            let Some(x) = cell(load_col, load)? else {
                bail!("line {line}: column {load:?} is empty");
            };
            let Some(y) = cell(tput_col, throughput)? else {
                bail!("line {line}: column {throughput:?} is empty");
            };
            let p95_ms = match (p95_col, p95) {
                (Some(col), Some(name)) => cell(col, name)?,
                _ => None,
            };
            points.push(CurvePoint {
                load: x,
                throughput: y,
                p95_ms,
            });
        }
        Ok(points)
    }
}

fn split_fields(line: &str, delimiter: char) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            c if c == delimiter && !quoted => {
                fields.push(std::mem::take(&mut field).trim().to_string())
            }
            c => field.push(c),
        }
    }
    fields.push(field.trim().to_string());
    fields
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_quoted_numbers_comments_and_tabs() {
        let t = Table::parse("# note\nclients,\"bytes/sec\",p95\n1,\"480,154\",\n8,3757741,12.5\n")
            .unwrap();
        let p = t.points("Clients", "bytes/sec", Some("p95")).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].throughput, 480_154.0);
        assert_eq!(p[0].p95_ms, None);
        assert_eq!(p[1].p95_ms, Some(12.5));
        let tabs = Table::parse("a\tb\n1\t2\n").unwrap();
        assert_eq!(tabs.points("a", "b", None).unwrap()[0].throughput, 2.0);
        let err = t
            .points("users", "bytes/sec", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--load-column"), "{err}");
        let bad = Table::parse("a,b\n1,x\n")
            .unwrap()
            .points("a", "b", None)
            .unwrap_err();
        assert!(bad.to_string().contains("line 2"), "{bad}");
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(num(12_475_980.0), "12,475,980");
        assert_eq!(num(56.0), "56");
        assert_eq!(num(82.84582), "82.85");
        assert_eq!(num(0.0277), "0.0277");
    }
}
