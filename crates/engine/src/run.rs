//! A run: log every user on over the ramp-up, measure the steady phase, drain,
//! then reconcile deliveries. Events go, in time order and from one task, to
//! the run's [`RunRecorder`] and then to an [`Observer`] (the live line).
//!
//! Every instant here is tokio's, so that tests can drive a whole run on a
//! paused clock; only the recorded start date is the wall clock's.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use peakhour_analysis::{AnalysisError, RunRecord};
use peakhour_smtp::Flavor;
use peakhour_workload::{MessageGenerator, Plan};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

use crate::connector::{Connector, NetConnector};
use crate::delivery::{DeliveryTracker, Lost};
use crate::events::{Event, EventSink};
use crate::reconcile::{ReconcileProgress, reconcile};
use crate::recording::RunRecorder;
use crate::selfcheck::{CpuMeter, LagProbe};
use crate::target::Target;
use crate::user::{Shared, Timeline, User};

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
pub(crate) const TICK: Duration = Duration::from_secs(1);

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
