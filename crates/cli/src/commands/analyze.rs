//! `peakhour analyze capacity`: the capacity analysis (peak, shape, QoS
//! capacity, USL fit, knee) of any CSV table of load against throughput.
//! The table is read by `peakhour_report::curve_csv` (the `csv` crate),
//! analysed by `peakhour_analysis::capacity` and laid out by
//! `peakhour_report::capacity`.

use std::process::ExitCode;

use anyhow::{Context, bail};
use peakhour_analysis::capacity::{CapacityAnalysis, CapacityOptions};
use peakhour_report::capacity::{analysis_json, render_capacity_text};
use peakhour_report::curve_csv::{CurveColumns, CurveTable};

use crate::args::{AnalyzeCapacityArgs, AnalyzeCommand};

/// Runs `peakhour analyze ...`.
pub(crate) fn run(command: AnalyzeCommand) -> anyhow::Result<ExitCode> {
    match command {
        AnalyzeCommand::Capacity(args) => capacity(&args),
    }
}

fn capacity(args: &AnalyzeCapacityArgs) -> anyhow::Result<ExitCode> {
    let file = args.file.display().to_string();
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {file}"))?;
    let columns = CurveColumns {
        load: &args.load_column,
        throughput: &args.throughput_column,
        p95: args.p95_column.as_deref(),
    };
    let points = CurveTable::parse(&text)
        .and_then(|table| table.points(columns))
        .with_context(|| format!("in {file}"))?;
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
        println!("{}", analysis_json(&analysis, &file, &columns)?);
    } else {
        let title = format!(
            "{} against {} in {file}",
            args.throughput_column, args.load_column,
        );
        print!("{}", render_capacity_text(&analysis, &title));
    }
    Ok(ExitCode::SUCCESS)
}
