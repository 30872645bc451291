//! A distributed run's shard: the synchronized start (`--start-at`) and
//! the shard's mark in its record. Which users a shard runs is the
//! workload's [`Shard`](peakhour_workload::Shard); the copies of mail that
//! cross between shards are the [`DeliveryTracker`](crate::DeliveryTracker)'s.

use std::time::{Duration, SystemTime};

use peakhour_analysis::{LATE_START_TOLERANCE_MS, RunMeta, ShardMark};
use peakhour_workload::{HumanDuration, Plan};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::run::{Observer, RunSettings};
use crate::{Event, RunClock, SelfSample};

/// Waits until `start_at` (wall clock), or until `stop` is raised; returns
/// how late the logon phase begins when that is more than
/// [`LATE_START_TOLERANCE_MS`]: a shard that got there after the agreed
/// instant (a pod scheduled late) says so rather than pretend.
///
/// The wait is cut in steps of at most a second and re-reads the wall
/// clock each time, so a clock stepped by NTP meanwhile is followed.
pub async fn wait_for_start(
    start_at: Option<SystemTime>,
    stop: &mut watch::Receiver<bool>,
) -> Option<Duration> {
    let start_at = start_at?;
    loop {
        if *stop.borrow() {
            return None;
        }
        let Ok(left) = start_at.duration_since(SystemTime::now()) else {
            break;
        };
        if left.is_zero() {
            break;
        }
        let step = left.min(Duration::from_secs(1));
        tokio::select! {
            () = tokio::time::sleep(step) => {}
            changed = stop.changed() => if changed.is_err() {
                // Nobody can stop the wait any more: sleep the rest.
                tokio::time::sleep(left).await;
            },
        }
    }
    let late = SystemTime::now()
        .duration_since(start_at)
        .unwrap_or_default();
    (late > Duration::from_millis(LATE_START_TOLERANCE_MS)).then_some(late)
}

/// [`wait_for_start`], told first to `observer` when there is a wait ahead
/// (the live metrics then say `waiting`, not `logon`).
pub(crate) async fn observed_wait(
    start_at: Option<SystemTime>,
    stop: &mut watch::Receiver<bool>,
    observer: &mut dyn Observer,
) -> Option<Duration> {
    if let Some(until) = start_at.filter(|&at| at > SystemTime::now()) {
        observer.waiting(until);
    }
    wait_for_start(start_at, stop).await
}

/// The shard's mark for its record: none for a run of the whole
/// population without `--start-at`.
pub(crate) fn shard_marks(
    plan: &Plan,
    settings: &RunSettings,
    late: Option<Duration>,
    interrupted: bool,
) -> Vec<ShardMark> {
    let shard = settings.shard;
    if shard.count() <= 1 && settings.start_at.is_none() {
        return Vec::new();
    }
    let start_at = settings.start_at.map(|at| {
        chrono::DateTime::<chrono::Utc>::from(at)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    });
    vec![ShardMark {
        index: shard.number(),
        count: shard.count(),
        users: shard.user_count(plan.users()),
        start_at,
        started_late_ms: late.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        interrupted,
    }]
}

/// Tells a person, through `say`, about a shard's start: when made, that it
/// waits for `--start-at` (make it where a stop can already be asked for, so
/// that the wait it announces can be cancelled); as an [`Observer`] beside
/// the others, that its logon phase began late.
pub struct StartNotice<F> {
    say: F,
}

impl<F: FnMut(&str) + Send> StartNotice<F> {
    /// Says how long the shard waits for `settings.start_at`, if it waits.
    pub fn new(settings: &RunSettings, mut say: F) -> Self {
        // Under a second to go is no wait worth a line (nor late either).
        let waiting = settings.start_at.and_then(|at| {
            let left = at.duration_since(SystemTime::now()).ok()?;
            (left >= Duration::from_secs(1)).then_some((at, left))
        });
        if let Some((at, left)) = waiting {
            say(&format!(
                "waiting {} for --start-at {}",
                HumanDuration(Duration::from_secs(left.as_secs())),
                chrono::DateTime::<chrono::Utc>::from(at)
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            ));
        }
        StartNotice { say }
    }
}

impl<F: FnMut(&str) + Send> Observer for StartNotice<F> {
    fn event(&mut self, _: &RunClock, _: Instant, _: &Event) {}
    fn lag(&mut self, _: &RunClock, _: Instant, _: Duration) {}
    fn tick(&mut self, _: &RunClock, _: Instant, _: SelfSample) {}
    fn started(&mut self, meta: &RunMeta) {
        for note in meta.shards.iter().filter_map(ShardMark::late_note) {
            (self.say)(&format!("warning: {note}"));
        }
    }
}
