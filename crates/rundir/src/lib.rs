//! # peakhour-rundir
//!
//! The run directory: one [`RunDir`] reads and writes every file of a run,
//! so the run, the report, the comparison and the sweep agree on what a run
//! directory holds.
//!
//! | file | written by | read as |
//! |---|---|---|
//! | `config.toml` | [`RunDir::write_config`] | [`RunConfig`] (serde, through `toml`) |
//! | `summary.json` | [`RunDir::write_results`] | [`Summary`] |
//! | `record.json` | [`RunDir::write_results`] | [`RunRecord`] |
//! | `intervals.csv`, `errors.csv`, `latency.hlog` | appended per closed interval by the [`RunJournal`], then rewritten whole by [`RunDir::write_results`] | (for other tools) |
//! | `state-violations.csv` | each state-check violation with its evidence, written by [`RunDir::write_results`] with `run --check-state` | (for other tools) |
//! | `state-violations/<client>.log` | the last `C:`/`S:` lines of each session that had a violation, around it (credentials and literals left out) | (for people) |
//! | `intervals.jsonl` | the [`RunJournal`], while the run goes on; removed once `summary.json` is written | by [`RunDir::recover`], after a kill |
//! | `monitor.csv` | the monitor, through [`RunDir::create_monitor_csv`] | [`MetricTable`], reduced to the report's [`MonitorView`] |
//! | `host.json` | [`RunDir::finish_run`] (`peakhour run` only), from [`host::collect`] | [`HostFacts`] |
//! | `report.html` | [`RunDir::write_report`] | (for people) |
//! | `results-not-written.txt` | [`RunDir::finish_run`], when the results could not be written (a full disk) | by [`RunDir::recover`]: the rebuild says so |
//!
//! Nothing here but [`RunDir::finish_run`] connects to a server: a report
//! is built from the run directory alone.
//!
//! A [`SweepDir`] holds a sweep: a run directory per step, read back as
//! the capacity analysis's steps, and the `capacity.*` files.
//!
//! [`merge_runs`] writes one run directory from the directories of a
//! distributed run's shards (`peakhour merge`).
//!
//! **Crash safety.** Every whole file is written atomically (a temporary
//! name in the directory, synced, renamed over the real one, the directory
//! synced), and `summary.json` is the last file of a run: a directory with
//! a summary holds a finished run. While a run goes on its closed intervals
//! are appended and synced as they close, so a killed run leaves them, and
//! [`RunDir::recover`] rebuilds its record and summary, marked interrupted.
//!
//! A file that does not parse is an error naming the file and the field
//! ([`RunDirError::Parse`]); nothing is silently recomputed. The one thing
//! filled in on reading is the monitor's findings, from `monitor.csv`, when
//! `summary.json` has none.
//!
//! [`dir_name`] names a new directory the same way for runs, monitors,
//! sweeps and the planner's commands ([`planner_dir`]); a run measured for
//! the planner reads back as a task ([`RunDir::action_task`]) or a matrix
//! cell ([`RunDir::matrix_cell`]).
#![deny(missing_docs)]

mod atomic;
mod claim;
mod config;
mod error;
mod finish;
pub mod host;
mod journal;
mod merge;
mod names;
mod planner;
pub mod probe;
mod recover;
mod sweep;

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Duration;

use peakhour_analysis::monitor::{DEFAULT_MAX_ROWS, MetricTable, TimeWindow, findings};
use peakhour_analysis::{RunRecord, Summary};
use peakhour_report::{HostFacts, MonitorView, ReportInput};
use serde::de::DeserializeOwned;

pub use config::{MonitorSection, RunConfig, RunSection, TargetSection};
pub use error::RunDirError;
pub use journal::{JOURNAL_VERSION, RunJournal};
pub use merge::{MergedRun, merge_runs, wait_for_shards};
pub use names::{DirKind, RUNS_DIR, default_dir, dir_name};
pub use planner::{ActionTask, planner_dir};
pub use sweep::{SweepDir, read_qos_capacity};

/// The high-average window of a run whose config.toml does not say.
pub const DEFAULT_HIGH_AVERAGE_WINDOW: Duration = Duration::from_secs(30);

/// The files of a run directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunFile {
    /// `config.toml`: the resolved configuration.
    Config,
    /// `summary.json`: the analysed result.
    Summary,
    /// `record.json`: everything recorded, from which the summary is computed.
    Record,
    /// `intervals.csv`: one row per interval and action.
    Intervals,
    /// `errors.csv`: errors by interval, action and kind.
    Errors,
    /// `latency.hlog`: the HdrHistogram interval log.
    Hlog,
    /// `monitor.csv`: the server monitor's samples.
    Monitor,
    /// `monitor-summary.txt`: what `peakhour monitor` printed.
    MonitorSummary,
    /// `host.json`: the client host and the server software.
    Host,
    /// `report.html`: the report.
    Report,
    /// `state-violations.csv`: each state-check violation with its
    /// evidence (`run --check-state`).
    StateViolations,
    /// `intervals.jsonl`: the run's journal of closed intervals, there
    /// while the run goes on (and after a kill).
    Journal,
    /// `results-not-written.txt`: the run could not write its results (a
    /// full disk); the error, or nothing if not even that fitted.
    WriteFailed,
}

impl RunFile {
    /// Every file a run directory may hold.
    pub const ALL: [RunFile; 12] = [
        Self::Config,
        Self::Summary,
        Self::Record,
        Self::Intervals,
        Self::Errors,
        Self::Hlog,
        Self::Monitor,
        Self::MonitorSummary,
        Self::Host,
        Self::Report,
        Self::Journal,
        Self::StateViolations,
    ];

    /// The file's name in the directory.
    pub fn name(self) -> &'static str {
        match self {
            Self::Config => "config.toml",
            Self::Summary => "summary.json",
            Self::Record => "record.json",
            Self::Intervals => "intervals.csv",
            Self::Errors => "errors.csv",
            Self::Hlog => "latency.hlog",
            Self::Monitor => "monitor.csv",
            Self::MonitorSummary => "monitor-summary.txt",
            Self::Host => "host.json",
            Self::Report => "report.html",
            Self::StateViolations => "state-violations.csv",
            Self::Journal => "intervals.jsonl",
            Self::WriteFailed => "results-not-written.txt",
        }
    }
}

/// `config.toml` as read: the text, shown verbatim in the report, and the
/// typed configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// The file as written.
    pub text: String,
    /// The file parsed.
    pub config: RunConfig,
}

/// Everything a run directory holds, read.
#[derive(Debug, Clone)]
pub struct Run {
    /// `record.json`.
    pub record: RunRecord,
    /// `summary.json`, with the monitor's findings filled in from
    /// `monitor.csv` when it had none.
    pub summary: Summary,
    /// `config.toml`, when there is one.
    pub config: Option<ConfigFile>,
    /// `host.json`, when there is one.
    pub host: Option<HostFacts>,
    /// `monitor.csv` reduced for the report, when it has rows.
    pub monitor: Option<MonitorView>,
}

impl Run {
    /// What the HTML report is rendered from.
    pub fn report_input(&self) -> ReportInput<'_> {
        ReportInput {
            record: &self.record,
            summary: &self.summary,
            config_toml: self.config.as_ref().map(|c| c.text.as_str()),
            host: self.host.as_ref(),
            monitor: self.monitor.as_ref(),
        }
    }
}

/// A run directory on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// The run directory at `path` (nothing is read yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Creates the directory (and its parents) if needed.
    pub fn create(path: impl Into<PathBuf>) -> Result<Self, RunDirError> {
        let dir = Self::new(path);
        std::fs::create_dir_all(&dir.path).map_err(RunDirError::io(&dir.path))?;
        Ok(dir)
    }

    /// The directory of a new run: `out`, or `runs/RUN_ID`; created, and
    /// refused when it holds a run or files peakhour does not write
    /// ([`RunDir::check_unused`]).
    pub fn start(out: Option<&Path>, run_id: &str) -> Result<Self, RunDirError> {
        let path = out.map_or_else(|| PathBuf::from(RUNS_DIR).join(run_id), Path::to_path_buf);
        RunDir::check_unused(&path)?;
        let dir = Self::new(path);
        std::fs::create_dir_all(&dir.path).map_err(|source| RunDirError::Create {
            path: dir.path.clone(),
            source,
        })?;
        Ok(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of one of its files.
    pub fn file(&self, file: RunFile) -> PathBuf {
        self.path.join(file.name())
    }

    /// Whether the file exists.
    pub fn has(&self, file: RunFile) -> bool {
        self.file(file).exists()
    }

    /// Whether a finished run is in it already (it has a `summary.json`).
    pub fn holds_run(&self) -> bool {
        self.has(RunFile::Summary)
    }

    /// Writes the whole file atomically: a reader or a crash sees the old
    /// file or the new one, never a part.
    fn write(&self, file: RunFile, bytes: &[u8]) -> Result<(), RunDirError> {
        let path = self.file(file);
        atomic::write_atomic(&path, bytes).map_err(RunDirError::io(path))
    }

    /// Creates (or truncates) a file written as the run goes on.
    fn create_appended(&self, file: RunFile) -> Result<std::fs::File, RunDirError> {
        let path = self.file(file);
        let created = std::fs::File::create(&path).map_err(RunDirError::io(&path))?;
        atomic::sync_parent(&path).map_err(RunDirError::io(path))?;
        Ok(created)
    }

    fn render_error(&self, file: RunFile, source: peakhour_report::ReportError) -> RunDirError {
        RunDirError::Render {
            path: self.file(file),
            source,
        }
    }

    fn parse_error(&self, file: RunFile, field: &str, message: String) -> RunDirError {
        RunDirError::Parse {
            path: self.file(file),
            field: field.to_owned(),
            message,
        }
    }

    /// A journal that appends the run's closed intervals to this directory
    /// as they close (see [`RunJournal`]). It also keeps a little room on
    /// the disk for saying, should the results not fit, why (see
    /// [`RunDir::finish_run`]).
    pub fn journal(&self) -> Result<RunJournal, RunDirError> {
        self.reserve_room();
        RunJournal::start(self)
    }

    /// Writes `config.toml`.
    pub fn write_config(&self, config: &RunConfig) -> Result<(), RunDirError> {
        self.write(RunFile::Config, config.to_toml()?.as_bytes())
    }

    /// Writes the results: `record.json`, `intervals.csv`, `errors.csv`,
    /// `latency.hlog`, and `summary.json` last, each atomically, so that a
    /// directory with a summary holds a finished run; then removes the
    /// journal, which `record.json` supersedes.
    pub fn write_results(&self, record: &RunRecord, summary: &Summary) -> Result<(), RunDirError> {
        let record_text = serde_json::to_string(record)
            .map_err(peakhour_report::ReportError::from)
            .map_err(|source| self.render_error(RunFile::Record, source))?;
        self.write(RunFile::Record, record_text.as_bytes())?;
        let mut csv = Vec::new();
        peakhour_report::write_intervals_csv(record, &mut csv)
            .map_err(|source| self.render_error(RunFile::Intervals, source))?;
        self.write(RunFile::Intervals, &csv)?;
        let mut errors = Vec::new();
        peakhour_report::write_errors_csv(record, &mut errors)
            .map_err(|source| self.render_error(RunFile::Errors, source))?;
        self.write(RunFile::Errors, &errors)?;
        let mut hlog = Vec::new();
        peakhour_report::write_hlog(record, &mut hlog)
            .map_err(|source| self.render_error(RunFile::Hlog, source))?;
        self.write(RunFile::Hlog, &hlog)?;
        if record.state_checks.is_some() {
            let mut violations = Vec::new();
            peakhour_report::write_state_violations_csv(record, &mut violations)
                .map_err(|source| self.render_error(RunFile::StateViolations, source))?;
            self.write(RunFile::StateViolations, &violations)?;
            self.write_session_logs(record)?;
        }
        let summary_text = peakhour_report::summary_json(summary)
            .map_err(|source| self.render_error(RunFile::Summary, source))?;
        self.write(RunFile::Summary, summary_text.as_bytes())?;
        let journal = self.file(RunFile::Journal);
        match std::fs::remove_file(&journal) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RunDirError::io(journal)(e)),
            _ => Ok(()),
        }
    }

    /// Writes `state-violations/<client>.log`: the raw log of each session
    /// that had a state-check violation (its last lines around it).
    fn write_session_logs(&self, record: &RunRecord) -> Result<(), RunDirError> {
        let logs = record.state_checks.iter().flat_map(|s| &s.session_logs);
        let dir = self.file(RunFile::StateViolations).with_extension("");
        for (at, (client, log)) in logs.enumerate() {
            if at == 0 {
                std::fs::create_dir_all(&dir).map_err(RunDirError::io(&dir))?;
            }
            let path = dir.join(peakhour_analysis::session_log_file(client));
            atomic::write_atomic(&path, log.as_bytes()).map_err(RunDirError::io(path))?;
        }
        Ok(())
    }

    /// Writes `host.json`.
    pub fn write_host(&self, facts: &HostFacts) -> Result<(), RunDirError> {
        let text = serde_json::to_string_pretty(facts)
            .map_err(peakhour_report::ReportError::from)
            .map_err(|source| self.render_error(RunFile::Host, source))?;
        self.write(RunFile::Host, (text + "\n").as_bytes())
    }

    /// Creates (or truncates) `monitor.csv` for the monitor to write into.
    pub fn create_monitor_csv(&self) -> Result<std::fs::File, RunDirError> {
        let path = self.file(RunFile::Monitor);
        std::fs::File::create(&path).map_err(RunDirError::io(path))
    }

    /// Writes `monitor-summary.txt`.
    pub fn write_monitor_summary(&self, text: &str) -> Result<(), RunDirError> {
        self.write(RunFile::MonitorSummary, text.as_bytes())
    }

    /// Writes `report.html` from every file of the run, and returns its
    /// path. It reads the directory only: a run without `host.json` is
    /// reported with its client host and server software unknown, and no
    /// server is asked (issue 26).
    pub fn write_report(&self) -> Result<PathBuf, RunDirError> {
        let run = self.load()?;
        let path = self.file(RunFile::Report);
        let html = peakhour_report::render_html(&run.report_input())
            .map_err(|source| self.render_error(RunFile::Report, source))?;
        self.write(RunFile::Report, html.as_bytes())?;
        Ok(path)
    }

    /// The file's text; `None` when it does not exist.
    fn read_optional(&self, file: RunFile) -> Result<Option<String>, RunDirError> {
        let path = self.file(file);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(RunDirError::io(path)(e)),
        }
    }

    /// The file's text; a missing file means this is not a run directory.
    fn read_required(&self, file: RunFile) -> Result<String, RunDirError> {
        self.read_optional(file)?
            .ok_or_else(|| RunDirError::NotARun {
                path: self.file(file),
                dir: self.path.clone(),
            })
    }

    fn parse_json<T: DeserializeOwned>(&self, file: RunFile, text: &str) -> Result<T, RunDirError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| RunDirError::Parse {
            path: self.file(file),
            field: e.path().to_string(),
            message: e.into_inner().to_string(),
        })
    }

    /// `record.json`.
    pub fn read_record(&self) -> Result<RunRecord, RunDirError> {
        let text = self.read_required(RunFile::Record)?;
        self.parse_json(RunFile::Record, &text)
    }

    /// `summary.json`, typed: what a sweep reads of each step.
    pub fn read_summary(&self) -> Result<Summary, RunDirError> {
        let text = self.read_required(RunFile::Summary)?;
        self.parse_json(RunFile::Summary, &text)
    }

    /// `host.json`, when there is one.
    pub fn read_host(&self) -> Result<Option<HostFacts>, RunDirError> {
        self.read_optional(RunFile::Host)?
            .map(|text| self.parse_json(RunFile::Host, &text))
            .transpose()
    }

    /// `config.toml`, when there is one.
    pub fn read_config(&self) -> Result<Option<ConfigFile>, RunDirError> {
        let Some(text) = self.read_optional(RunFile::Config)? else {
            return Ok(None);
        };
        let de = toml::Deserializer::parse(&text).map_err(|e| self.config_error(&text, ".", &e))?;
        let config = serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            self.config_error(&text, &field, e.inner())
        })?;
        Ok(Some(ConfigFile { text, config }))
    }

    fn config_error(&self, text: &str, field: &str, error: &toml::de::Error) -> RunDirError {
        let mut message = error.message().trim_end().to_owned();
        if let Some(span) = error.span() {
            let line = text
                .get(..span.start)
                .map_or(0, |before| before.matches('\n').count() + 1);
            message.push_str(&format!(" (line {line})"));
        }
        self.parse_error(RunFile::Config, field, message)
    }

    /// `monitor.csv`, when there is one.
    pub fn read_monitor(&self) -> Result<Option<MetricTable>, RunDirError> {
        let path = self.file(RunFile::Monitor);
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(RunDirError::io(path)(e)),
        };
        MetricTable::from_csv(BufReader::new(file), DEFAULT_MAX_ROWS)
            .map(Some)
            .map_err(|source| RunDirError::Monitor { path, source })
    }

    /// Every file the report and the comparison use. `record.json` and
    /// `summary.json` must be there and parse; the others are read when
    /// present. When the summary has no monitor findings and `monitor.csv`
    /// has rows, they are computed from it over the steady phase.
    pub fn load(&self) -> Result<Run, RunDirError> {
        let record = self.read_record()?;
        let mut summary = self.read_summary()?;
        let config = self.read_config()?;
        let host = self.read_host()?;
        let table = self.read_monitor()?.filter(|t| !t.is_empty());
        let monitor = table.map(|table| {
            let window = steady_window(&summary);
            if summary.resources.is_empty() {
                let min_window = config.as_ref().map_or(DEFAULT_HIGH_AVERAGE_WINDOW, |c| {
                    c.config.monitor.high_average_window.0
                });
                let found = findings(&table, window, min_window);
                summary.resources = found.resources;
                summary.bottleneck.get_or_insert(found.bottleneck);
            }
            let mut view = peakhour_report::monitor_view(&table, window);
            if let Some(c) = &config {
                view.config.extend(c.config.monitor.entries());
            }
            view
        });
        Ok(Run {
            record,
            summary,
            config,
            host,
            monitor,
        })
    }
}

/// The steady phase on the monitor's time axis: a sample at t covers the
/// (1 s) interval before t, so the phase's samples are those at start + 1 s
/// ... end; half an interval either way takes them and no other.
/// The memory of the working sessions of the run in `dir` (`plan
/// --working-run`; [`peakhour_analysis::monitor::server::working_memory`]
/// over its steady window, with the monitor's 1 s samples).
pub fn read_working_memory(
    dir: &Path,
) -> Result<peakhour_analysis::plan::WorkingMemory, RunDirError> {
    let run = RunDir::new(dir);
    let summary = run.read_summary()?;
    let table = run
        .read_monitor()?
        .ok_or_else(|| RunDirError::NoMonitor(dir.to_path_buf()))?;
    peakhour_analysis::monitor::server::working_memory(
        &summary,
        &table,
        std::time::Duration::from_secs(1),
        dir.display().to_string(),
    )
    .ok_or_else(|| RunDirError::NoWorkingMemory(dir.to_path_buf()))
}

fn steady_window(summary: &Summary) -> TimeWindow {
    let start = summary.steady.start_s;
    TimeWindow::new(start + 0.5, start + summary.steady.length_s + 0.5)
}
