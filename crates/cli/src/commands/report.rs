//! `peakhour report` and `peakhour compare`: run directories are read
//! through `peakhour-rundir` and rendered by `peakhour-report`.

use std::io::Write as _;

use std::process::ExitCode;

use anyhow::{Context as _, bail};
use peakhour_report::{CompareRun, TextFormat, render_comparison_as, render_summary_as, run_label};
use peakhour_rundir::{Run, RunDir};

use crate::args::{CompareArgs, ReportArgs};

/// `peakhour report RUN_DIR [--format F]`; a run killed before it wrote
/// `summary.json` is rebuilt first, from what it left, marked interrupted.
pub(crate) fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(r) = RunDir::new(&args.run_dir).recover()? {
        eprintln!(
            "{} had no summary.json ({}): rebuilt from {}, {} closed intervals up to {:.0} s, marked interrupted",
            args.run_dir.display(),
            r.cause(),
            r.from,
            r.intervals,
            r.measured_until_s
        );
    }
    // From the directory alone: no server is asked (issue 26).
    let path = RunDir::new(&args.run_dir).write_report()?;
    if let Some(format) = args.format.as_deref() {
        let run = RunDir::new(&args.run_dir).load()?;
        print_stdout(&render_summary_as(&run.summary, text_format(format)?)?)?;
    }
    eprintln!("report: {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `--format`, which clap has checked against [`TextFormat::NAMES`].
fn text_format(name: &str) -> anyhow::Result<TextFormat> {
    name.parse().map_err(anyhow::Error::msg)
}

/// Prints to stdout; a closed pipe (`| head`) ends quietly (see `main`).
fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    Ok(out.flush()?)
}

/// `peakhour compare RUN_A RUN_B [...]`.
pub(crate) fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    if args.runs.len() < 2 {
        bail!("compare needs at least two run directories");
    }
    let loaded: Vec<Run> = args
        .runs
        .iter()
        .map(|d| RunDir::new(d).load())
        .collect::<Result<_, _>>()?;
    let labels: Vec<String> = args.runs.iter().map(|d| run_label(d)).collect();
    let runs: Vec<CompareRun<'_>> = loaded
        .iter()
        .zip(&labels)
        .map(|(r, label)| CompareRun {
            label,
            record: &r.record,
            summary: &r.summary,
        })
        .collect();
    let comparison = peakhour_report::compare(&runs)?;
    print_stdout(&render_comparison_as(
        &comparison,
        text_format(&args.format)?,
    )?)?;
    if let Some(path) = &args.html {
        std::fs::write(path, peakhour_report::render_compare_html(&comparison))
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("comparison: {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
