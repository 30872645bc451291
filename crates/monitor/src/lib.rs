//! # peakhour-monitor
//!
//! The monitor layer of peakhour: today's STAT.NLM and Perfmon. While the
//! load runs it samples the server at a fixed interval (1 s by default) and
//! keeps what it saw, so the analysis can say what ran out first.
//!
//! * A [`Source`] produces typed [`Sample`]s: [`LocalSource`] reads this
//!   machine's `/proc` (system CPU, memory, disks, network, PSI, process
//!   groups such as Dovecot and Postfix, Postfix's queues, Dovecot's
//!   connections); [`NodeExporterSource`] scrapes a Prometheus
//!   node_exporter for the system part of a remote host.
//! * A [`Monitor`] is a tokio task that samples a source every interval,
//!   aligned to the run's start, writes `monitor.csv` through a
//!   [`CsvWriter`] (columns named by [`MetricKey`](peakhour_analysis::monitor::MetricKey), documented in
//!   `docs/metrics.md`), keeps the samples in a bounded
//!   [`MetricTable`](peakhour_analysis::monitor::MetricTable), and
//!   measures its own CPU cost
//!   ([`MonitorCost`](peakhour_analysis::monitor::MonitorCost)).
//! * What the samples mean is pure and lives in the analysis layer
//!   ([`peakhour_analysis::monitor`]): the typed metric keys, the table,
//!   steady-state mean, p95 and max per metric, seed 001's *high average*
//!   with its standard deviation, and the USE summary that names the
//!   bottleneck in one line. This crate keeps the samplers and their I/O.
//! * Beside a load, the monitor samples on a thread of its own
//!   ([`MonitorThread`]) and adds its findings over the steady phase to the
//!   run's summary ([`MonitorRun::add_findings`]).
//! * [`server`] reads this machine's cores, memory and load for the
//!   planner (how a table reads in the planner's terms is
//!   `peakhour_analysis::monitor::server`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), peakhour_monitor::MonitorError> {
//! use peakhour_monitor::{LocalConfig, LocalSource, Monitor, MonitorConfig};
//! use peakhour_analysis::monitor::{self as analysis, TimeWindow, Thresholds};
//!
//! let source = LocalSource::new(LocalConfig::default())?;
//! let csv = std::fs::File::create("monitor.csv").map_err(peakhour_monitor::MonitorError::Write)?;
//! let monitor = Monitor::start(source, Some(csv), MonitorConfig::default())?;
//! // ... the load runs ...
//! let report = monitor.finish().await?;
//! let verdict = analysis::use_summary(&report.table, TimeWindow::ALL, &Thresholds::DEFAULT);
//! println!("{}", verdict.line);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod beside;
mod cgroup;
mod client_net;
mod cost;
mod csv;
mod error;
mod group_conditions;
mod group_tracker;
mod groups;
mod kept_files;
mod live;
mod mail;
mod monitor;
mod mta_log;
mod procfs;
mod sample;
pub mod server;
mod sockets;
mod source;
mod spill;
mod system;

pub use beside::{BesideNote, MonitorRun, MonitorThread, add_steady_findings};
pub use cgroup::{
    CgroupCounters, CgroupFiles, CgroupLayout, CgroupSample, cgroup_sample, parse_cgroup_counters,
};
pub use client_net::{ClientBytesFn, ClientNetSample};
pub use cost::{cpu_timed, process_cpu_time, thread_cpu_time};
pub use csv::CsvWriter;
pub use error::MonitorError;
pub use group_tracker::{GroupTracker, ProcessCounters};
pub use groups::{
    CYRUS_NAMES, Condition, DOVECOT_NAMES, GroupSpec, LabMailStore, POSTFIX_NAMES, ProcessMatcher,
    RADICALE_NAMES, SAMBA_NAMES, assign_groups,
};
pub use mail::{MailProbes, count_files, postfix_queue_sizes};
pub use monitor::{Monitor, MonitorConfig, StopHandle, signed_secs};
pub use mta_log::{LogMark, postfix_delivery_delays};
#[doc(hidden)]
pub use procfs::parse_every_proc_file;
pub use procfs::{PidStat, parse_pid_stat};
pub use sample::{
    CpuSample, CpuShares, DiskSample, GroupSample, MailSample, MemorySample, NetworkSample,
    PressureSample, QueueSizes, Sample, SystemSample,
};
pub use sockets::{ConnectionCounter, CountMethod};
pub use source::{
    LocalConfig, LocalSource, MAX_CPUS, NodeExporterSource, PROCESS_READ_BUDGET, SampleFuture,
    Source, parse_exposition, parse_scrape_response,
};
pub use system::{
    CpuCounters, DiskCounters, MemoryCounters, NetCounters, PressureCounters, SystemCounters,
    counter_delta, cpu_shares, system_sample,
};
