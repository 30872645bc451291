//! What every run's record opens with, whatever its load: who ran what, when,
//! on how many cores, cut into which intervals, and whether it was cut short.
//! The mail run (`crate::recording`) and the file run (`crate::files`) add
//! what is theirs.

use std::time::{Duration, SystemTime};

use peakhour_analysis::{PhaseLengths, RunMeta};

use crate::sessions::LATE_AFTER;

/// A run's identity and shape, as the load knows them.
pub(crate) struct RunShape<'a> {
    pub(crate) run_id: &'a str,
    /// The profile's name.
    pub(crate) name: &'a str,
    /// Users or clients.
    pub(crate) users: u32,
    pub(crate) seed: u64,
    pub(crate) started_at: SystemTime,
    pub(crate) interval: Duration,
    pub(crate) phases: PhaseLengths,
    pub(crate) interrupted: bool,
}

/// The metadata every run's record carries.
pub(crate) fn run_meta(shape: RunShape<'_>) -> RunMeta {
    let started_at = chrono::DateTime::<chrono::Utc>::from(shape.started_at)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut meta = RunMeta::new(
        shape.run_id.to_owned(),
        shape.name,
        shape.users,
        shape.seed,
        started_at,
    );
    meta.interval = shape.interval;
    meta.phases = shape.phases;
    meta.late_start_threshold = LATE_AFTER;
    meta.client_cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    meta.interrupted = shape.interrupted;
    meta.peakhour_version = env!("CARGO_PKG_VERSION").to_owned();
    meta
}
