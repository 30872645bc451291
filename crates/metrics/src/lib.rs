//! # peakhour-metrics
//!
//! Live metrics of a run, for a Prometheus (or anything that reads
//! OpenMetrics) to scrape while the run goes on: `peakhour run
//! --metrics-listen ADDR` serves them at `http://ADDR/metrics`.
//!
//! * An [`Exporter`] binds the address and answers scrapes from a thread of
//!   its own; its [`MetricsObserver`] is an engine
//!   [`Observer`](peakhour_engine::Observer) the binary plugs in beside the
//!   live line and the journal, so the metrics come from the same events, in
//!   the same order, as the run's record.
//! * [`LiveMetrics`] is the state: counters per action, phase and outcome,
//!   errors by kind, users logged on, the phase, the generator's CPU and
//!   scheduling lag, and latency histograms with fixed bounds in seconds
//!   ([`histogram`]), counted as events arrive. It has no clock and no I/O.
//! * [`encode`] writes it as OpenMetrics 1.0 text, or as the Prometheus
//!   text format 0.0.4 when the scraper's `Accept` prefers that
//!   ([`http::negotiate`]).
//! * [`catalogue::FAMILIES`] lists every family served, with its type,
//!   unit, labels and help: the contract `docs/live-metrics.md` documents
//!   and `docs/grafana/peakhour.json` reads; tests hold all three together.
//!
//! Counters carry the `phase` label the run's record assigns (an event
//! counts in the latest phase any event has reached), so the `steady`
//! series end equal to what `summary.json` reports for the run.
#![deny(missing_docs)]

pub mod catalogue;
mod encode;
pub mod histogram;
pub mod http;
mod live;
mod observer;
mod server;

pub use encode::{Format, encode};
pub use live::{Ending, LiveMetrics, RunInfo, RunPhase, Stage, Tally};
pub use observer::{MetricsObserver, count_event, run_phase, tally};
pub use server::{Exporter, MAX_LINGER, MetricsError};
