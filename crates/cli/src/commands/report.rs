//! `peakhour report` and `peakhour compare`: read a run directory, collect
//! the host facts once, and hand everything to the pure renderers in
//! `peakhour-report`.

mod host;
mod monitor_view;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use peakhour_analysis::{RunRecord, Summary};
use peakhour_monitor::MetricTable;
use peakhour_monitor::analysis::TimeWindow;
use peakhour_report::{CompareRun, HostFacts, MonitorView, ReportInput};

use crate::args::{CompareArgs, ReportArgs};

/// The high-average window used when the run did not record one.
const DEFAULT_HIGH_AVERAGE_WINDOW: Duration = Duration::from_secs(30);

/// One run directory, read.
pub(crate) struct LoadedRun {
    pub(crate) record: RunRecord,
    pub(crate) summary: Summary,
    pub(crate) config_toml: Option<String>,
    pub(crate) host: Option<HostFacts>,
    pub(crate) monitor: Option<MonitorView>,
}

fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Reads a run directory. `summary.json` is used when it reads (it carries
/// the monitor's findings); otherwise the summary is recomputed from
/// `record.json`. Missing monitor findings are computed from `monitor.csv`.
pub(crate) fn load_run(dir: &Path) -> anyhow::Result<LoadedRun> {
    let record_path = dir.join("record.json");
    let text = std::fs::read_to_string(&record_path).with_context(|| {
        format!(
            "cannot read {}: is {} a run directory written by `peakhour run`?",
            record_path.display(),
            dir.display()
        )
    })?;
    let record: RunRecord = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a peakhour run record", record_path.display()))?;
    let summary = match read_optional(&dir.join("summary.json"))? {
        Some(text) => match serde_json::from_str::<Summary>(&text) {
            Ok(s) => s,
            Err(_) => Summary::compute(&record)?,
        },
        None => Summary::compute(&record)?,
    };
    let mut summary = summary;
    let config_toml = read_optional(&dir.join("config.toml"))?;
    let host = match read_optional(&dir.join("host.json"))? {
        Some(text) => Some(
            serde_json::from_str(&text)
                .with_context(|| format!("{} is not valid", dir.join("host.json").display()))?,
        ),
        None => None,
    };
    let monitor_path = dir.join("monitor.csv");
    let monitor = match std::fs::File::open(&monitor_path) {
        Ok(file) => {
            let table = MetricTable::from_csv(
                std::io::BufReader::new(file),
                peakhour_monitor::DEFAULT_MAX_ROWS,
            )
            .with_context(|| format!("cannot read {}", monitor_path.display()))?;
            if table.is_empty() {
                None
            } else {
                let window = steady_window(&summary);
                if summary.resources.is_empty() {
                    let found = super::monitor::findings(
                        &table,
                        window,
                        high_average_window(config_toml.as_deref()),
                    );
                    summary.resources = found.resources;
                    summary.bottleneck.get_or_insert(found.bottleneck);
                }
                Some(monitor_view::reduce(&table, window, config_toml.as_deref()))
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", monitor_path.display())),
    };
    Ok(LoadedRun {
        record,
        summary,
        config_toml,
        host,
        monitor,
    })
}

/// The steady phase on the monitor's time axis: a sample at t covers the
/// second before t (as `run` computes it).
fn steady_window(summary: &Summary) -> TimeWindow {
    let start = summary.steady.start_s;
    TimeWindow::new(start + 0.5, start + summary.steady.length_s + 0.5)
}

/// `[monitor] high_average_window` from config.toml, or 30 s.
fn high_average_window(config: Option<&str>) -> Duration {
    config
        .and_then(|c| toml_value(c, "monitor", "high_average_window"))
        .and_then(|v| peakhour_workload::HumanDuration::parse(&v).ok())
        .map_or(DEFAULT_HIGH_AVERAGE_WINDOW, |d| d.0)
}

/// The value of `key = ...` in `[section]` of config.toml (quotes removed).
/// config.toml is peakhour's own flat output, so a line scan is enough.
pub(crate) fn toml_value(text: &str, section: &str, key: &str) -> Option<String> {
    let header = format!("[{section}]");
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == header;
        } else if inside
            && let Some((k, v)) = line.split_once('=')
            && k.trim() == key
        {
            return Some(v.trim().trim_matches('"').to_owned());
        }
    }
    None
}

/// Writes `dir/report.html` (collecting `host.json` first if the run has
/// none) and returns its path. Called by `peakhour run` at the end of every run.
pub(crate) fn write_report(dir: &Path) -> anyhow::Result<PathBuf> {
    let host_path = dir.join("host.json");
    if !host_path.exists() {
        let config = read_optional(&dir.join("config.toml"))?;
        let facts = host::collect(config.as_deref());
        std::fs::write(&host_path, serde_json::to_string_pretty(&facts)? + "\n")
            .with_context(|| format!("cannot write {}", host_path.display()))?;
    }
    let run = load_run(dir)?;
    let html = peakhour_report::render_html(&ReportInput {
        record: &run.record,
        summary: &run.summary,
        config_toml: run.config_toml.as_deref(),
        host: run.host.as_ref(),
        monitor: run.monitor.as_ref(),
    })?;
    let path = dir.join("report.html");
    std::fs::write(&path, html).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// `peakhour report RUN_DIR [--format F]`.
pub(crate) fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let path = write_report(&args.run_dir)?;
    if let Some(format) = args.format.as_deref() {
        let run = load_run(&args.run_dir)?;
        let text = match format {
            "json" => peakhour_report::summary_json(&run.summary)?,
            "csv" => {
                let mut out = Vec::new();
                peakhour_report::write_summary_csv(&run.summary, &mut out)?;
                String::from_utf8(out)?
            }
            "markdown" => peakhour_report::render_summary_markdown(&run.summary),
            _ => peakhour_report::render_terminal(&run.summary),
        };
        print_stdout(&text)?;
    }
    eprintln!("report: {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// Prints to stdout; a closed pipe (`| head`) ends quietly.
fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// `peakhour compare RUN_A RUN_B [...]`.
pub(crate) fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    if args.runs.len() < 2 {
        bail!("compare needs at least two run directories");
    }
    let loaded: Vec<LoadedRun> = args
        .runs
        .iter()
        .map(|d| load_run(d))
        .collect::<anyhow::Result<_>>()?;
    let labels: Vec<String> = args.runs.iter().map(|d| label_of(d)).collect();
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
    let text = match args.format.as_str() {
        "json" => peakhour_report::compare_json(&comparison)?,
        "csv" => {
            let mut out = Vec::new();
            peakhour_report::write_compare_csv(&comparison, &mut out)?;
            String::from_utf8(out)?
        }
        "markdown" => peakhour_report::render_compare_markdown(&comparison),
        _ => peakhour_report::render_compare_text(&comparison),
    };
    print_stdout(&text)?;
    if let Some(path) = &args.html {
        std::fs::write(path, peakhour_report::render_compare_html(&comparison))
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("comparison: {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// A run's name in a comparison: its directory's last component.
fn label_of(dir: &Path) -> String {
    dir.components()
        .next_back()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .filter(|s| !s.is_empty() && s != ".")
        .unwrap_or_else(|| dir.display().to_string())
}
