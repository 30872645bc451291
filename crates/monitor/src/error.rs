//! The monitor's errors.

use std::path::PathBuf;

/// What can go wrong while sampling, scraping or writing samples.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MonitorError {
    /// A file under `/proc` (or a queue directory) could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file had a shape the parser did not expect.
    #[error("cannot parse {what}: {detail}")]
    Parse {
        /// Which file or format, e.g. `/proc/stat`.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A node_exporter URL that this source cannot scrape.
    #[error("invalid node_exporter URL {url:?}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The HTTP scrape of node_exporter failed.
    #[error("scrape of {url} failed: {detail}")]
    Scrape {
        /// The URL scraped.
        url: String,
        /// What went wrong (connection, status, timeout, framing).
        detail: String,
    },
    /// A process-group regex did not compile.
    #[error("invalid regex for process group {group:?}: {source}")]
    Regex {
        /// The group's name.
        group: String,
        /// The regex error.
        source: regex_lite::Error,
    },
    /// A process group given as text (`NAME=REGEX`) that is not one.
    #[error("{reason}")]
    GroupSpec {
        /// The text as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A configuration value out of range (e.g. a zero interval).
    #[error("invalid monitor configuration: {0}")]
    Config(String),
    /// Writing `monitor.csv` failed.
    #[error("cannot write monitor samples: {0}")]
    Write(#[source] std::io::Error),
}

impl MonitorError {
    pub(crate) fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Read {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn parse(what: &'static str, detail: impl Into<String>) -> Self {
        Self::Parse {
            what,
            detail: detail.into(),
        }
    }
}
