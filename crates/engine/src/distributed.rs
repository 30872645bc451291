//! A distributed run's shard: the synchronized start (`--start-at`) and
//! the shard's mark in its record. Which users a shard runs is the
//! workload's [`Shard`](peakhour_workload::Shard); the copies of mail that
//! cross between shards are the [`DeliveryTracker`](crate::DeliveryTracker)'s.

use std::time::{Duration, SystemTime};

use peakhour_analysis::{LATE_START_TOLERANCE_MS, RunMeta, ShardMark};
use peakhour_workload::{HumanDuration, Plan};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::core::Observer;
use crate::run::RunSettings;
use crate::{Event, RunClock, SelfSample};

/// How far ahead `--start-at` may be: a day. A start further out is a typo
/// (`9999-12-31T23:59:59Z` waited 69,890,731 hours; issue 26, item 6), not a
/// plan, and a shard waiting for it holds its machine for nothing.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// How far in the past `--start-at` may be: an hour. A shard that late
/// shares no load with the others (a pod restarted from an old manifest);
/// a few seconds or minutes late runs, and records how late it began.
pub const MAX_START_BEHIND: Duration = Duration::from_secs(3600);

/// Why a `--start-at` was refused.
#[derive(Debug, thiserror::Error)]
pub enum StartAtError {
    /// Not an RFC 3339 instant.
    #[error("--start-at {text:?} is not an RFC 3339 time (2026-05-01T12:00:00Z): {source}")]
    NotRfc3339 {
        /// What was given.
        text: String,
        /// Why it does not parse.
        source: chrono::ParseError,
    },
    /// Further ahead than [`MAX_START_AHEAD`].
    #[error(
        "--start-at {text} is {} from now, more than the {} a shard may wait for its start",
        roughly(*.ahead), HumanDuration(MAX_START_AHEAD)
    )]
    TooFarAhead {
        /// What was given.
        text: String,
        /// How far ahead of now it is.
        ahead: Duration,
    },
    /// Further behind than [`MAX_START_BEHIND`].
    #[error(
        "--start-at {text} passed {} ago, more than the {} a shard may start late: \
         agree on a new start",
        roughly(*.behind), HumanDuration(MAX_START_BEHIND)
    )]
    TooFarBehind {
        /// What was given.
        text: String,
        /// How long ago it was.
        behind: Duration,
    },
}

/// A long wait as a person reads it: whole days past two days (a start
/// in the year 9999 is millions of days away, not trillions of ms).
fn roughly(wait: Duration) -> String {
    match wait.as_secs() / 86_400 {
        days @ 2.. => format!("{days} days"),
        _ => HumanDuration(Duration::from_secs(wait.as_secs())).to_string(),
    }
}

/// The instant an RFC 3339 `--start-at` names, if it lies within
/// [`MAX_START_AHEAD`] ahead of `now` and [`MAX_START_BEHIND`] behind it.
pub fn parse_start_at(text: &str, now: SystemTime) -> Result<SystemTime, StartAtError> {
    let at =
        chrono::DateTime::parse_from_rfc3339(text).map_err(|source| StartAtError::NotRfc3339 {
            text: text.to_owned(),
            source,
        })?;
    let at: SystemTime = at.with_timezone(&chrono::Utc).into();
    match at.duration_since(now) {
        Ok(ahead) if ahead > MAX_START_AHEAD => Err(StartAtError::TooFarAhead {
            text: text.to_owned(),
            ahead,
        }),
        Ok(_) => Ok(at),
        Err(behind) if behind.duration() > MAX_START_BEHIND => Err(StartAtError::TooFarBehind {
            text: text.to_owned(),
            behind: behind.duration(),
        }),
        Err(_) => Ok(at),
    }
}

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

/// Puts the shard's marks into its finished record, the first one saying
/// whether the run was interrupted.
pub(crate) fn mark_record(
    record: &mut peakhour_analysis::RunRecord,
    marks: Vec<peakhour_analysis::ShardMark>,
    interrupted: bool,
) {
    record.meta.shards = marks;
    if let Some(mark) = record.meta.shards.first_mut() {
        mark.interrupted = interrupted;
    }
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

/// Tells a person, through `say`, about a shard's start: that it waits for
/// `--start-at` (said when the run begins to wait, after the observers
/// beside it were told, so that whoever reads the line and then looks at the
/// live metrics sees the phase `waiting`; and where a stop can already be
/// asked for, so that the wait it announces can be cancelled), and that its
/// logon phase began late.
pub struct StartNotice<F> {
    say: F,
}

impl<F: FnMut(&str) + Send> StartNotice<F> {
    /// A notice that speaks through `say`.
    pub fn new(say: F) -> Self {
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
    fn waiting(&mut self, until: SystemTime) {
        // Under a second to go is no wait worth a line (nor late either).
        let Ok(left) = until.duration_since(SystemTime::now()) else {
            return;
        };
        if left >= Duration::from_secs(1) {
            (self.say)(&format!(
                "waiting {} for --start-at {}",
                HumanDuration(Duration::from_secs(left.as_secs())),
                chrono::DateTime::<chrono::Utc>::from(until)
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            ));
        }
    }
}
