//! A run: log every user on over the ramp-up, measure the steady phase, drain,
//! then reconcile deliveries. Events go, in time order and from one task, to
//! the run's [`RunRecorder`] and then to an [`Observer`] (the live line).
//!
//! Every instant here is tokio's, so that tests can drive a whole run on a
//! paused clock; only the recorded start date is the wall clock's.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use peakhour_analysis::{AnalysisError, RunRecord};
use peakhour_imap::{FetchItem, ImapError, SearchKey};
use peakhour_smtp::Flavor;
use peakhour_workload::{MessageGenerator, Plan};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

use crate::connector::{Connector, NetConnector, open_imap};
use crate::delivery::{DeliveryTracker, Lost};
use crate::events::{Event, EventSink};
use crate::recording::RunRecorder;
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
    /// The recorder's interval: one histogram per action per interval.
    pub interval: Duration,
    /// A p95 limit (ms) for every action, instead of the profile's.
    pub qos_p95_ms: Option<f64>,
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
    /// The timeline of a run shaped by `settings` that starts now.
    pub fn starting_now(settings: &RunSettings) -> Self {
        let t0 = Instant::now();
        let steady_start = t0 + settings.ramp_up;
        RunClock {
            t0,
            steady_start,
            steady_end: steady_start + settings.duration,
        }
    }

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
    /// The run's timeline (tokio's clock).
    pub clock: RunClock,
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
    /// The recorder refused its settings (a zero interval) or could not
    /// encode what it recorded.
    #[error("recording the run failed: {0}")]
    Record(#[from] AnalysisError),
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

/// What a run produces: its record (every measurement, the metadata and the
/// reconciled deliveries) and how it ended.
#[derive(Debug)]
pub struct RunResult {
    /// How the run ended.
    pub outcome: RunOutcome,
    /// Everything measured, ready for the summary and the output files.
    pub record: RunRecord,
}

/// Runs `plan` against `target` over TCP (and TLS). Raising `stop` ends it
/// early: scheduling stops, in-flight actions get two seconds, and the
/// outcome says `interrupted`. Every event is recorded into the run's
/// record, then shown to `observer` (the live line).
pub async fn run(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: RunSettings,
    stop: watch::Receiver<bool>,
    observer: &mut dyn Observer,
) -> Result<RunResult, RunError> {
    run_with(
        Arc::new(NetConnector),
        plan,
        target,
        settings,
        stop,
        observer,
    )
    .await
}

/// [`run`] with the connections opened by `connector`: tests hand in one
/// that connects users to fake servers over in-memory streams.
pub async fn run_with<C: Connector>(
    connector: Arc<C>,
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: RunSettings,
    mut stop: watch::Receiver<bool>,
    observer: &mut dyn Observer,
) -> Result<RunResult, RunError> {
    let mut recorder = RunRecorder::new(settings.interval)?;
    let started_at = SystemTime::now();
    let clock = RunClock::starting_now(&settings);
    let delivery = Arc::new(DeliveryTracker::default());
    let (events, inbox) = EventSink::channel();
    let shared = Arc::new(Shared {
        connector: connector.clone(),
        plan: plan.clone(),
        target: target.clone(),
        events,
        delivery: delivery.clone(),
        generator: MessageGenerator::new(plan.seed()),
        run_id: settings.run_id.clone(),
        action_timeout: settings.action_timeout,
        connect_timeout: settings.connect_timeout,
        client_name: settings.client_name.clone(),
    });
    let tasks = spawn_users(shared, &clock, &settings, &stop);

    let mut both = Tee {
        recorder: &mut recorder,
        observer,
    };
    let drain_deadline = clock.steady_end + settings.drain + settings.action_timeout;
    let interrupted = observe(&mut both, &clock, inbox, tasks, &mut stop, drain_deadline).await;
    // A stop during the reconciliation (which can take minutes past
    // saturation) ends it too: the run is then interrupted and unreconciled.
    let reconciled = !interrupted
        && reconcile(
            &connector, &plan, &target, &settings, &delivery, &mut both, &clock, &mut stop,
        )
        .await;
    let (submitted_recipients, delivered_recipients) = delivery.totals();
    let outcome = RunOutcome {
        started_at,
        clock,
        interrupted: interrupted || !reconciled,
        submitted_recipients,
        delivered_recipients,
        lost: delivery.lost(),
        reconciled,
    };
    let record = recorder.finish(&plan, &settings, &outcome)?;
    Ok(RunResult { outcome, record })
}

/// Starts one task per user, each logging on at its slot of the ramp-up.
/// `shared` is moved in, so the users hold the only senders of its event
/// channel, which closes when the last one is done.
fn spawn_users<C: Connector>(
    shared: Arc<Shared<C>>,
    clock: &RunClock,
    settings: &RunSettings,
    stop: &watch::Receiver<bool>,
) -> JoinSet<()> {
    let users = shared.plan.users();
    let mut tasks = JoinSet::new();
    for index in 0..users {
        let stagger = settings
            .ramp_up
            .mul_f64(f64::from(index) / f64::from(users.max(1)));
        let timeline = Timeline {
            logon_at: clock.t0 + stagger,
            steady_start: clock.steady_start,
            steady_end: clock.steady_end,
            drain_end: clock.steady_end + settings.drain,
        };
        tasks.spawn(User::new(index, shared.clone()).run(timeline, stop.clone()));
    }
    tasks
}

/// Hands every event to `observer` in arrival order, with the generator's
/// own health once a second, until every user is done, `drain_deadline`
/// passes, or two seconds after `stop` was raised. Returns whether it was
/// stopped.
async fn observe(
    observer: &mut dyn Observer,
    clock: &RunClock,
    mut inbox: mpsc::UnboundedReceiver<Event>,
    mut tasks: JoinSet<()>,
    stop: &mut watch::Receiver<bool>,
    drain_deadline: Instant,
) -> bool {
    let mut cpu = CpuMeter::start();
    let mut probe = LagProbe::start();
    let mut max_lag = Duration::ZERO;
    let mut ticks = tokio::time::interval_at(clock.t0 + TICK, TICK);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut interrupted = false;
    let mut stop_open = true;
    let mut deadline = drain_deadline;
    loop {
        tokio::select! {
            biased;
            changed = stop.changed(), if stop_open && !interrupted => {
                if changed.is_err() {
                    stop_open = false; // nobody can raise it any more
                } else if *stop.borrow() {
                    interrupted = true;
                    // In-flight actions get two seconds, then are abandoned.
                    deadline = Instant::now() + STOP_GRACE;
                }
            }
            event = inbox.recv() => match event {
                Some(event) => observer.event(clock, Instant::now(), &event),
                None => break, // every user is done
            },
            Some(lag) = probe.next() => {
                max_lag = max_lag.max(lag);
                observer.lag(clock, Instant::now(), lag);
            }
            _ = ticks.tick() => {
                let sample = SelfSample { cpu_percent: cpu.percent(), max_lag };
                max_lag = Duration::ZERO;
                observer.tick(clock, Instant::now(), sample);
            }
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    // Events users sent before being stopped still count.
    while let Ok(event) = inbox.try_recv() {
        observer.event(clock, Instant::now(), &event);
    }
    interrupted
}

/// How often the generator's own CPU is sampled (and the live line drawn).
const TICK: Duration = Duration::from_secs(1);

/// How long in-flight actions may finish after `stop` is raised.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// The record first, then the live view: one observer for the run's loop.
struct Tee<'a> {
    recorder: &'a mut RunRecorder,
    observer: &'a mut dyn Observer,
}

impl Observer for Tee<'_> {
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event) {
        self.recorder.event(clock, at, event);
        self.observer.event(clock, at, event);
    }

    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration) {
        self.recorder.lag(clock, at, lag);
        self.observer.lag(clock, at, lag);
    }

    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample) {
        self.recorder.tick(clock, at, sample);
        self.observer.tick(clock, at, sample);
    }

    fn reconciling(&mut self, progress: ReconcileProgress) {
        self.observer.reconciling(progress);
    }
}

/// The longest reconciliation after the drain, however many copies are still
/// arriving.
pub const RECONCILE_LIMIT: Duration = Duration::from_secs(600);

/// Where reconciliation stands before a round.
#[derive(Debug, Clone, Copy)]
struct RoundStart {
    /// Rounds done so far.
    rounds: u32,
    /// Copies the last round found.
    found_last_round: usize,
    /// Recipients still waiting for a copy.
    waiting: usize,
    /// Past the drain time (counted from the reconciliation's start).
    past_deadline: bool,
    /// Past [`RECONCILE_LIMIT`].
    past_limit: bool,
}

/// The stopping rule: done when nothing is waiting any more, or when the
/// drain time has run out *and* the last round found nothing new (a round
/// that still finds copies means deliveries are still arriving), or at the
/// limit in any case.
fn reconciliation_done(at: RoundStart) -> bool {
    let still_arriving = at.rounds == 0 || at.found_last_round > 0;
    at.waiting == 0 || (at.past_deadline && !still_arriving) || at.past_limit
}

/// After the drain, looks for every copy not yet seen with a header search
/// in each waiting recipient's mailbox, in rounds, until
/// [`reconciliation_done`] says so. Stopping while rounds still find copies
/// would call delivered copies lost, as an 800-user run did with 2,460 of
/// them while Postfix's queue was still emptying (a server past saturation
/// drains its mail queue for minutes). What is still missing at the end is
/// lost.
///
/// Returns false when `stop` was raised before it finished.
#[allow(
    clippy::too_many_arguments,
    reason = "the run's parts, borrowed for the reconciliation's duration"
)]
async fn reconcile<C: Connector>(
    connector: &Arc<C>,
    plan: &Plan,
    target: &Arc<Target>,
    settings: &RunSettings,
    delivery: &Arc<DeliveryTracker>,
    observer: &mut dyn Observer,
    clock: &RunClock,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    let start = Instant::now();
    let deadline = start + settings.drain.max(Duration::from_secs(5));
    let limit = start + RECONCILE_LIMIT;
    let mut rounds = 0;
    let mut found_last_round = 0_usize;
    loop {
        let waiting = delivery.outstanding_users();
        let now = Instant::now();
        if *stop.borrow() {
            return false;
        }
        let at = RoundStart {
            rounds,
            found_last_round,
            waiting: waiting.len(),
            past_deadline: now >= deadline,
            past_limit: now >= limit,
        };
        if reconciliation_done(at) {
            return true;
        }
        rounds += 1;
        let round = SearchRound {
            connector,
            plan,
            target,
            settings,
            delivery,
            round: rounds,
        };
        match round.run(&waiting, observer, clock, stop).await {
            Some(found) => found_last_round = found,
            None => return false,
        }
        sleep_until(Instant::now() + Duration::from_millis(500), stop).await;
    }
}

/// One round of reconciliation: every waiting recipient's mailbox searched once.
struct SearchRound<'a, C> {
    connector: &'a Arc<C>,
    plan: &'a Plan,
    target: &'a Arc<Target>,
    settings: &'a RunSettings,
    delivery: &'a Arc<DeliveryTracker>,
    round: u32,
}

impl<C: Connector> SearchRound<'_, C> {
    /// Searches the mailboxes of `waiting`, reporting progress once a
    /// second; returns how many copies it found, or `None` if `stop` was
    /// raised.
    async fn run(
        &self,
        waiting: &[u32],
        observer: &mut dyn Observer,
        clock: &RunClock,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<usize> {
        let searched = Arc::new(AtomicUsize::new(0));
        let mut searches = JoinSet::new();
        // Bounded concurrency: a reconciliation must not become a load of its own.
        for chunk in waiting.chunks(waiting.len().div_ceil(16).max(1)) {
            searches.spawn(self.search(chunk, searched.clone()));
        }
        let mut found = 0;
        let mut progress_tick = tokio::time::interval(TICK);
        let mut stop_open = true;
        loop {
            tokio::select! {
                changed = stop.changed(), if stop_open => {
                    if changed.is_err() {
                        stop_open = false; // nobody can raise it any more
                    } else if *stop.borrow() {
                        searches.abort_all();
                        return None;
                    }
                }
                result = searches.join_next() => match result {
                    Some(result) => {
                        let latencies = result.unwrap_or_default();
                        found += latencies.len();
                        for latency in latencies {
                            observer.event(clock, Instant::now(), &Event::Delivered(latency));
                        }
                    }
                    None => return Some(found),
                },
                _ = progress_tick.tick() => {
                    let (submitted_recipients, delivered_recipients) = self.delivery.totals();
                    observer.reconciling(ReconcileProgress {
                        round: self.round,
                        searched: searched.load(Ordering::Relaxed),
                        mailboxes: waiting.len(),
                        submitted_recipients,
                        delivered_recipients,
                    });
                }
            }
        }
    }

    /// One search task: the mailboxes of `users` one after the other;
    /// returns the delivery latencies of the copies it found.
    fn search(
        &self,
        users: &[u32],
        searched: Arc<AtomicUsize>,
    ) -> impl Future<Output = Vec<Duration>> + Send + 'static {
        let users: Vec<(u32, String)> = users.iter().map(|&u| (u, self.plan.address(u))).collect();
        let connector = self.connector.clone();
        let target = self.target.clone();
        let run_id = self.settings.run_id.clone();
        let delivery = self.delivery.clone();
        let timeout = self.settings.connect_timeout;
        let sent_folder = self.plan.params().sent_folder.clone();
        async move {
            let mut found = Vec::new();
            for (user, address) in users {
                let search = MailboxSearch {
                    target: &target,
                    user,
                    address: &address,
                    run_id: &run_id,
                    sent_folder: &sent_folder,
                    timeout,
                };
                if let Ok(seen) = search.run(&*connector).await {
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
        }
    }
}

/// Message-IDs of this run's messages anywhere in `address`'s mailbox but
/// its Sent folder. Every folder, not just the Inbox: a user may have moved
/// or deleted a copy before its arrival was noticed, and a copy filed away is
/// still delivered. Sent is left out because the sender's own copy there
/// carries the same Message-ID and would count a self-addressed copy twice.
struct MailboxSearch<'a> {
    target: &'a Target,
    user: u32,
    address: &'a str,
    run_id: &'a str,
    sent_folder: &'a str,
    timeout: Duration,
}

impl MailboxSearch<'_> {
    async fn run<C: Connector>(&self, connector: &C) -> Result<Vec<String>, ImapError> {
        let MailboxSearch {
            target,
            user,
            address,
            run_id,
            sent_folder,
            timeout,
        } = *self;
        let mut imap = open_imap(connector, target, timeout).await?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciliation_stops_when_all_are_found_or_when_copies_stop_arriving_past_the_deadline() {
        let at = |rounds, found_last_round, waiting, past_deadline, past_limit| RoundStart {
            rounds,
            found_last_round,
            waiting,
            past_deadline,
            past_limit,
        };
        // (round start, done?)
        let table = [
            (at(0, 0, 0, false, false), true),  // nothing to look for
            (at(0, 0, 5, true, false), false),  // the first round always runs
            (at(3, 0, 5, false, false), false), // drain time left
            (at(3, 2, 5, true, false), false),  // still arriving past the deadline
            (at(3, 0, 5, true, false), true),   // past it, and the last round found nothing
            (at(3, 2, 5, true, true), true),    // the limit, whatever arrives
            (at(3, 2, 0, false, false), true),  // everything found
        ];
        for (start, done) in table {
            assert_eq!(reconciliation_done(start), done, "{start:?}");
        }
    }
}
