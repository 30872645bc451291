//! What can go wrong with a run directory. Every variant names the file.

use std::path::PathBuf;

/// An error reading or writing a run directory.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// A file or the directory could not be read, written or created.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A new run's directory holds a run already (finished or killed).
    #[error(
        "{} already holds a run ({file}); choose another --out: nothing was overwritten",
        dir.display()
    )]
    Taken {
        /// The directory.
        dir: PathBuf,
        /// The run's file that says so.
        file: String,
    },
    /// A new run's directory holds files a run does not write.
    #[error(
        "{} is not empty and is not a peakhour run directory (it holds {file}); choose a new \
         or empty directory for --out: nothing was overwritten",
        dir.display()
    )]
    NotARunDir {
        /// The directory.
        dir: PathBuf,
        /// One of the files (or directories) a run does not write.
        file: String,
    },
    /// A directory chosen for new results already holds the file `marker`
    /// (a `tasks.json`, a `matrix.json`, a sweep's `capacity.csv`).
    #[error("{} already holds {marker}; choose another --out", dir.display())]
    Holds {
        /// The directory.
        dir: PathBuf,
        /// What it holds.
        marker: String,
    },
    /// A run that should have had the server monitor beside it has no `monitor.csv`.
    #[error("{} has no monitor.csv", .0.display())]
    NoMonitor(PathBuf),
    /// A run given for the working sessions' memory has too few memory
    /// samples in its steady window.
    #[error("{}: too few memory samples in the steady window of monitor.csv to fit the working sessions' memory", .0.display())]
    NoWorkingMemory(PathBuf),
    /// A sweep's `capacity.json` has no QoS capacity (even its smallest
    /// step failed the limit).
    #[error("{}: the sweep has no QoS capacity", .0.display())]
    NoQosCapacity(PathBuf),
    /// A new run's directory cannot be created.
    #[error("cannot create the run directory {}", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file every run has is missing.
    #[error("{} not found: is {} a run directory written by `peakhour run`?", path.display(), dir.display())]
    NotARun {
        /// The missing file.
        path: PathBuf,
        /// The directory that was read.
        dir: PathBuf,
    },
    /// A file does not parse; `field` is the path to the value that does
    /// not (`delivery.lost`, `run.ramp_up`), or `.` for the file's syntax.
    #[error("{}: field `{field}`: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where in the file.
        field: String,
        /// What is wrong there.
        message: String,
    },
    /// `monitor.csv` does not read.
    #[error("{}: {source}", path.display())]
    Monitor {
        /// The file.
        path: PathBuf,
        /// Why.
        source: peakhour_analysis::monitor::MonitorCsvError,
    },
    /// A file could not be rendered.
    #[error("{}: {source}", path.display())]
    Render {
        /// The file that was to be written.
        path: PathBuf,
        /// Why.
        source: peakhour_report::ReportError,
    },
    /// The resolved plan could not be written as TOML.
    #[error("config.toml: the plan: {0}")]
    Plan(#[from] peakhour_workload::PlanError),
    /// The configuration could not be written as TOML.
    #[error("config.toml: {0}")]
    ConfigToml(#[from] toml::ser::Error),
    /// Shards that are not of one run, or whose histograms do not add.
    #[error("merging shards: {0}")]
    Merge(#[from] peakhour_analysis::MergeError),
    /// A plan written by this version did not read back as TOML.
    #[error("config.toml: the plan's TOML does not read back: {0}")]
    PlanToml(#[from] toml::de::Error),
}

impl RunDirError {
    /// Whether the command line cannot run as given (bad usage: exit code
    /// 2): an `--out` that is taken.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Taken { .. } | Self::NotARunDir { .. })
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
