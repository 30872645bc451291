//! A run: log every user on over the ramp-up, measure the steady phase, drain,
//! then reconcile deliveries. Events go to an [`Observer`] (the recorder and
//! the live line), in time order, from one task.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use peakhour_imap::{FetchItem, SearchKey};
use peakhour_smtp::Flavor;
use peakhour_workload::{MessageGenerator, Plan};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::delivery::{DeliveryTracker, Lost};
use crate::events::{Event, EventSink};
use crate::selfcheck::{CpuMeter, LagProbe};
use crate::target::Target;
use crate::user::{Shared, Timeline, User, sleep_until};

/// The phase a moment of the run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Users log on, staggered over the ramp-up; not measured.
    Logon,
    /// Measured.
    Steady,
    /// No new actions; in-flight ones finish; not measured.
    Drain,
}

/// How a run is shaped in time.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Run id, put into every message so deliveries can be reconciled.
    pub run_id: String,
    /// Users log on staggered over this long (LoadSim logged everyone on first).
    pub ramp_up: Duration,
    /// The measured steady phase.
    pub duration: Duration,
    /// How long, at most, to wait for in-flight actions and deliveries after the steady phase.
    pub drain: Duration,
    /// Any single action that takes longer fails with `timeout`.
    pub action_timeout: Duration,
    /// Connecting (TCP, TLS, greeting) must take less than this.
    pub connect_timeout: Duration,
    /// Name given in EHLO.
    pub client_name: String,
}

/// One second of the generator's own health.
#[derive(Debug, Clone, Copy)]
pub struct SelfSample {
    /// CPU used by peakhour since the last sample, % of one core.
    pub cpu_percent: f64,
    /// The worst scheduling lag seen since the last sample.
    pub max_lag: Duration,
}

/// The run's timeline, for turning instants into offsets and phases.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    /// When the run started.
    pub t0: Instant,
    /// When the steady (measured) phase starts.
    pub steady_start: Instant,
    /// When it ends.
    pub steady_end: Instant,
}

impl RunClock {
    /// Time since the run started.
    pub fn offset(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.t0)
    }

    /// The phase `at` falls in.
    pub fn phase(&self, at: Instant) -> Phase {
        if at < self.steady_start {
            Phase::Logon
        } else if at < self.steady_end {
            Phase::Steady
        } else {
            Phase::Drain
        }
    }
}

/// Receives everything a run measures, in arrival order, from a single task.
pub trait Observer: Send {
    /// One event; `at` is when it was received (actions carry their own times).
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event);
    /// A scheduling-lag probe result.
    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration);
    /// Once a second: the generator's own CPU and worst lag.
    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample);
    /// Once a second while deliveries are reconciled after the drain, which
    /// on a loaded server can take minutes (a header search in every folder
    /// of every waiting recipient).
    fn reconciling(&mut self, _progress: ReconcileProgress) {}
}

/// How far the reconciliation after the drain has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconcileProgress {
    /// Search round, from 1: mailboxes still waiting are searched again
    /// until the drain time runs out.
    pub round: u32,
    /// Mailboxes searched in this round.
    pub searched: usize,
    /// Mailboxes this round searches.
    pub mailboxes: usize,
    /// Recipients of accepted submissions.
    pub submitted_recipients: u64,
    /// Recipients whose copy has been seen so far.
    pub delivered_recipients: u64,
}

/// What a run ends with besides the observed events.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// When the run started (wall clock).
    pub started_at: SystemTime,
    /// Stopped by a signal before its end.
    pub interrupted: bool,
    /// Recipients of accepted submissions.
    pub submitted_recipients: u64,
    /// Recipients that saw their copy.
    pub delivered_recipients: u64,
    /// Copies never seen (after reconciliation, unless interrupted).
    pub lost: Vec<Lost>,
    /// Whether the reconciliation search ran.
    pub reconciled: bool,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The IMAP server did not let a user in before any load started.
    #[error("IMAP at {endpoint} is not usable: {reason}")]
    Imap {
        /// The endpoint.
        endpoint: String,
        /// The error.
        reason: String,
    },
    /// The SMTP server did not answer properly before any load started.
    #[error("SMTP at {endpoint} is not usable: {reason}")]
    Smtp {
        /// The endpoint.
        endpoint: String,
        /// The error.
        reason: String,
    },
}

/// Checks, before any load, that the first user can log on over IMAP and
/// authenticate over SMTP. An unreachable target is reported here, not as a
/// storm of errors in the first seconds of a run.
pub async fn preflight(plan: &Plan, target: &Target, timeout: Duration) -> Result<(), RunError> {
    let address = plan.address(0);
    let (login, password) = target.login(0, &address);
    let imap_error = |reason: String| RunError::Imap {
        endpoint: target.imap.to_string(),
        reason,
    };
    let mut imap = target
        .connect_imap(timeout)
        .await
        .map_err(|e| imap_error(e.to_string()))?;
    imap.login(login, password)
        .await
        .map_err(|e| imap_error(format!("login as {login} failed: {e}")))?;
    let _ = imap.logout().await;

    let smtp_error = |reason: String| RunError::Smtp {
        endpoint: target.smtp.to_string(),
        reason,
    };
    let mut smtp = target
        .connect_smtp(&target.smtp, Flavor::Smtp, "preflight.peakhour", timeout)
        .await
        .map_err(|e| smtp_error(e.to_string()))?;
    smtp.authenticate(login, password)
        .await
        .map_err(|e| smtp_error(format!("AUTH as {login} failed: {e}")))?;
    let _ = smtp.quit().await;
    Ok(())
}

/// Runs `plan` against `target`. Raising `stop` ends it early: scheduling
/// stops, in-flight actions get two seconds, and the outcome says `interrupted`.
pub async fn run(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: RunSettings,
    mut stop: watch::Receiver<bool>,
    observer: &mut dyn Observer,
) -> RunOutcome {
    let started_at = SystemTime::now();
    let t0 = Instant::now();
    let steady_start = t0 + settings.ramp_up;
    let steady_end = steady_start + settings.duration;
    let clock = RunClock {
        t0,
        steady_start,
        steady_end,
    };

    let (events, mut inbox) = EventSink::channel();
    let delivery = Arc::new(DeliveryTracker::default());
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        target: target.clone(),
        events: events.clone(),
        delivery: delivery.clone(),
        generator: MessageGenerator::new(plan.seed()),
        run_id: settings.run_id.clone(),
        action_timeout: settings.action_timeout,
        connect_timeout: settings.connect_timeout,
        client_name: settings.client_name.clone(),
    });

    let users = plan.users();
    let mut tasks = JoinSet::new();
    for index in 0..users {
        let stagger = settings
            .ramp_up
            .mul_f64(f64::from(index) / f64::from(users.max(1)));
        let timeline = Timeline {
            logon_at: t0 + stagger,
            steady_start,
            steady_end,
            drain_end: steady_end + settings.drain,
        };
        tasks.spawn(User::new(index, shared.clone()).run(timeline, stop.clone()));
    }
    // The users hold the only senders now, so the channel closes when the last one is done.
    drop(events);
    drop(shared);

    // The observer runs here, on this task: events in arrival order, ticks once a second.
    let mut cpu = CpuMeter::start();
    let mut probe = LagProbe::start();
    let mut max_lag = Duration::ZERO;
    let mut next_tick = Instant::now() + Duration::from_secs(1);
    let mut interrupted = false;
    let mut stop_deadline: Option<Instant> = None;
    let drain_deadline = steady_end + settings.drain + settings.action_timeout;
    loop {
        let deadline = stop_deadline.unwrap_or(drain_deadline);
        tokio::select! {
            biased;
            changed = stop.changed(), if !interrupted => {
                if changed.is_ok() && *stop.borrow() {
                    interrupted = true;
                    // In-flight actions get two seconds, then are abandoned.
                    stop_deadline = Some(Instant::now() + Duration::from_secs(2));
                }
            }
            event = inbox.recv() => match event {
                Some(event) => observer.event(&clock, Instant::now(), &event),
                None => break, // every user is done
            },
            Some(lag) = probe.next() => {
                max_lag = max_lag.max(lag);
                let now = Instant::now();
                observer.lag(&clock, now, lag);
                if now >= next_tick {
                    next_tick += Duration::from_secs(1);
                    let sample = SelfSample { cpu_percent: cpu.percent(), max_lag };
                    max_lag = Duration::ZERO;
                    observer.tick(&clock, now, sample);
                }
            }
            _ = tokio::time::sleep_until(deadline.into()) => break,
        }
    }
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    // Events users sent before being stopped still count.
    while let Ok(event) = inbox.try_recv() {
        observer.event(&clock, Instant::now(), &event);
    }

    // A stop during the reconciliation (which can take minutes past
    // saturation) ends it too: the run is then interrupted and unreconciled.
    let reconciled = !interrupted
        && reconcile(
            &plan, &target, &settings, &delivery, observer, &clock, &mut stop,
        )
        .await;
    let interrupted = interrupted || !reconciled;
    let (submitted_recipients, delivered_recipients) = delivery.totals();
    RunOutcome {
        started_at,
        interrupted,
        submitted_recipients,
        delivered_recipients,
        lost: delivery.lost(),
        reconciled,
    }
}

/// The longest reconciliation after the drain, however many copies are still
/// arriving.
const RECONCILE_LIMIT: Duration = Duration::from_secs(600);

/// After the drain, looks for every copy not yet seen with a header search
/// in each waiting recipient's mailbox, in rounds, until all are found or
/// the drain time has run out *and* the last round found nothing new. A
/// round that still finds copies means deliveries are still arriving (a
/// server past saturation drains its mail queue for minutes): stopping then
/// would call delivered copies lost, as an 800-user run did with 2,460 of
/// them while Postfix's queue was still emptying. [`RECONCILE_LIMIT`] bounds
/// it all. What is still missing at the end is lost.
///
/// Returns false when `stop` was raised before it finished.
async fn reconcile(
    plan: &Plan,
    target: &Target,
    settings: &RunSettings,
    delivery: &Arc<DeliveryTracker>,
    observer: &mut dyn Observer,
    clock: &RunClock,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    let start = Instant::now();
    let deadline = start + settings.drain.max(Duration::from_secs(5));
    let limit = start + RECONCILE_LIMIT;
    let mut round = 0;
    let mut found_last_round = 0_usize;
    loop {
        let waiting = delivery.outstanding_users();
        let now = Instant::now();
        let still_arriving = round == 0 || found_last_round > 0;
        if *stop.borrow() {
            return false;
        }
        if waiting.is_empty() || (now >= deadline && !still_arriving) || now >= limit {
            return true;
        }
        found_last_round = 0;
        round += 1;
        let searched = Arc::new(AtomicUsize::new(0));
        let mut searches = JoinSet::new();
        // Bounded concurrency: a reconciliation must not become a load of its own.
        for chunk in waiting.chunks(waiting.len().div_ceil(16).max(1)) {
            let chunk = chunk.to_vec();
            let plan_addresses: Vec<(u32, String)> =
                chunk.iter().map(|&u| (u, plan.address(u))).collect();
            let target = target.clone();
            let run_id = settings.run_id.clone();
            let delivery = delivery.clone();
            let timeout = settings.connect_timeout;
            let sent_folder = plan.params().sent_folder.clone();
            let searched = searched.clone();
            searches.spawn(async move {
                let mut found = Vec::new();
                for (user, address) in plan_addresses {
                    if let Ok(seen) =
                        search_run_messages(&target, user, &address, &run_id, &sent_folder, timeout)
                            .await
                    {
                        let at = Instant::now();
                        for id in seen {
                            if let Some(latency) = delivery.noticed(&id, user, at) {
                                found.push(latency);
                            }
                        }
                    }
                    searched.fetch_add(1, Ordering::Relaxed);
                }
                found
            });
        }
        let mut progress_tick = tokio::time::interval(Duration::from_secs(1));
        let mut stop_open = true;
        loop {
            tokio::select! {
                changed = stop.changed(), if stop_open => {
                    if changed.is_err() {
                        stop_open = false; // nobody can raise it any more
                    } else if *stop.borrow() {
                        searches.abort_all();
                        return false;
                    }
                }
                result = searches.join_next() => match result {
                    Some(result) => {
                        let found = result.unwrap_or_default();
                        found_last_round += found.len();
                        for latency in found {
                            observer.event(clock, Instant::now(), &Event::Delivered(latency));
                        }
                    }
                    None => break,
                },
                _ = progress_tick.tick() => {
                    let (submitted_recipients, delivered_recipients) = delivery.totals();
                    observer.reconciling(ReconcileProgress {
                        round,
                        searched: searched.load(Ordering::Relaxed),
                        mailboxes: waiting.len(),
                        submitted_recipients,
                        delivered_recipients,
                    });
                }
            }
        }
        sleep_until(Instant::now() + Duration::from_millis(500), stop).await;
    }
}

/// Message-IDs of this run's messages anywhere in `address`'s mailbox but
/// its Sent folder. Every folder, not just the Inbox: a user may have moved
/// or deleted a copy before its arrival was noticed, and a copy filed away is
/// still delivered. Sent is left out because the sender's own copy there
/// carries the same Message-ID and would count a self-addressed copy twice.
async fn search_run_messages(
    target: &Target,
    user: u32,
    address: &str,
    run_id: &str,
    sent_folder: &str,
    timeout: Duration,
) -> Result<Vec<String>, peakhour_imap::ImapError> {
    let mut imap = target.connect_imap(timeout).await?;
    let (login, password) = target.login(user, address);
    imap.login(login, password).await?;
    let folders: Vec<String> = imap
        .list("", "*")
        .await?
        .value
        .into_iter()
        .filter(|entry| {
            !entry
                .attributes
                .iter()
                .any(|a| a.eq_ignore_ascii_case("\\Noselect"))
                && !entry.name.eq_ignore_ascii_case(sent_folder)
        })
        .map(|entry| entry.name)
        .collect();
    let mut ids = Vec::new();
    for folder in folders {
        if imap.examine(&folder).await?.value.exists == 0 {
            continue;
        }
        let uids = imap
            .search(
                &SearchKey::Header("X-Peakhour-Run".into(), run_id.into()),
                true,
            )
            .await?
            .value;
        if uids.is_empty() {
            continue;
        }
        let set = uids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let fetched = imap
            .fetch(&set, &[FetchItem::Uid, FetchItem::Envelope], true)
            .await?
            .value;
        ids.extend(
            fetched
                .into_iter()
                .filter_map(|m| m.envelope.and_then(|e| e.message_id)),
        );
    }
    let _ = imap.logout().await;
    Ok(ids)
}
