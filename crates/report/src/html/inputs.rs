//! What the HTML report is drawn from, beyond the run record and summary:
//! facts about the client host and the server software (`host.json`), and
//! the server monitor's samples reduced to what the report shows.
//!
//! The command-line layer reads the files and fills these; the renderers
//! only read them.

use serde::{Deserialize, Serialize};

/// Facts about the machine peakhour ran on and the server software it
/// measured: the "client configuration" and "server software" parts of a
/// full-disclosure report. Stored as `host.json` in the run directory.
///
/// Every field is optional: what could not be found is left out and the
/// report says "not recorded".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// When the facts were collected, RFC 3339 UTC.
    #[serde(default)]
    pub collected_at: Option<String>,
    /// The client's CPU model (`/proc/cpuinfo` `model name`).
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// Logical CPUs of the client (`processor` entries in `/proc/cpuinfo`).
    #[serde(default)]
    pub cpu_cores: Option<u32>,
    /// The client's memory, KiB (`/proc/meminfo` `MemTotal`).
    #[serde(default)]
    pub memory_kb: Option<u64>,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    #[serde(default)]
    pub kernel: Option<String>,
    /// Operating system (`/etc/os-release` `PRETTY_NAME`).
    #[serde(default)]
    pub os: Option<String>,
    /// Server software detected, in the order found.
    #[serde(default)]
    pub servers: Vec<ServerSoftware>,
}

/// One piece of server software and how it was identified.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSoftware {
    /// What it serves, e.g. `imap 127.0.0.1:10143` or `package`.
    pub service: String,
    /// What it said or what is installed, e.g. `Dovecot (Debian) ready.` or
    /// `postfix 3.7.11-0+deb12u1`.
    pub software: String,
    /// How it was found: `greeting`, `IMAP ID`, `dpkg-query` ...
    pub source: String,
}

/// The server monitor's samples, reduced for the report: a few derived
/// timelines on the run's time axis, the steady-state table in seed 002's
/// vocabulary, and the monitor's configuration.
///
/// High averages come from [`Summary::resources`](peakhour_analysis::Summary).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorView {
    /// Sample times, seconds since the run's start (shared with the load's
    /// intervals).
    pub times_s: Vec<f64>,
    /// Derived timelines, e.g. CPU %, disk KiB/s, network, mail queue.
    pub charts: Vec<MonitorChart>,
    /// Steady-state figures, grouped into sections (`Processor
    /// Utilization`, `Memory Utilization` ...).
    pub table: Vec<ServerCounter>,
    /// How the monitor was set up: source, interval, columns, window.
    pub config: Vec<(String, String)>,
}

/// One timeline of monitor data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorChart {
    /// Which of the report's timelines it fills: `cpu`, `memory`, `disk`,
    /// `network` or `queue`.
    pub key: String,
    /// Chart title.
    pub title: String,
    /// Unit of the values.
    pub unit: String,
    /// Named series, each as long as [`MonitorView::times_s`] (NaN = no value).
    pub lines: Vec<(String, Vec<f64>)>,
}

/// One row of the server-counter table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerCounter {
    /// Section heading, e.g. `Transaction Queues`.
    pub section: String,
    /// Row label, e.g. `Postfix active queue length`.
    pub label: String,
    /// Unit, e.g. `%`, `KiB/s`.
    pub unit: String,
    /// Steady-state mean.
    pub mean: Option<f64>,
    /// Steady-state p95.
    pub p95: Option<f64>,
    /// Steady-state maximum.
    pub max: Option<f64>,
}
