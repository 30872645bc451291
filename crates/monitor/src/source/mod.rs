//! Where samples come from.
//!
//! A [`Source`] produces one [`Sample`] per call to [`Source::sample`],
//! keeping whatever it needs (the previous counters) to turn cumulative
//! counters into rates. Two exist:
//!
//! * [`LocalSource`] reads this machine's `/proc`: system metrics, process
//!   groups and mail probes;
//! * [`NodeExporterSource`] scrapes a Prometheus node_exporter over HTTP:
//!   system metrics only (process groups and queues are local-only).
//!
//! `docs/metrics.md` says how to add another (e.g. process-exporter).

mod local;
mod node_exporter;

use std::future::Future;
use std::pin::Pin;

pub use local::{LocalConfig, LocalSource, PROCESS_READ_BUDGET};
pub use node_exporter::{MAX_CPUS, NodeExporterSource, parse_exposition, parse_scrape_response};

use crate::error::MonitorError;
use crate::sample::Sample;

/// The future a [`Source`] returns.
pub type SampleFuture<'a> = Pin<Box<dyn Future<Output = Result<Sample, MonitorError>> + Send + 'a>>;

/// A producer of samples. The monitor calls [`Source::sample`] once per
/// interval; the first call gives gauges but no rates.
pub trait Source: Send {
    /// A short name for logs and errors, e.g. `local` or the scraped URL.
    fn name(&self) -> &str;

    /// Reads the counters now and returns the sample since the last call.
    /// [`Sample::time_s`] is filled in by the caller.
    fn sample(&mut self) -> SampleFuture<'_>;
}
