//! A run: log every user on over the ramp-up, measure the steady phase, drain,
//! then reconcile deliveries. Events go, in time order and from one task, to
//! the run's [`RunRecorder`] and then to an [`Observer`] (the live line).
//!
//! Every instant here is tokio's, so that tests can drive a whole run on a
//! paused clock; only the recorded start date is the wall clock's.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use peakhour_analysis::{AnalysisError, IntervalArchive, IntervalRecord, RunMeta, RunRecord};
use peakhour_smtp::Flavor;
use peakhour_workload::ActionKind;
use peakhour_workload::{MessageGenerator, Plan, Shard};
use tokio::sync::{mpsc, watch};
use tokio::task::{Id as TaskId, JoinSet};
use tokio::time::{Instant, MissedTickBehavior};

use crate::connector::{Connector, NetConnector};
use crate::delivery::{DeliveryTracker, LOST_LIST_CAP, Lost};
use crate::events::{Counter, Event, EventSink, NOT_ATTEMPTED, Outcome};
use crate::groupware::GroupwareCheckError;
use crate::population::{Population, PopulationError};
use crate::reconcile::{ReconcileProgress, Reconciliation};
use crate::recording::RunRecorder;
use crate::selfcheck::{CpuMeter, LagProbe};
use crate::target::{Target, imap_deadline, smtp_deadline};
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
    /// The part of the population this process runs (`--shard I/N`);
    /// [`Shard::whole`] for all of it.
    pub shard: Shard,
    /// When the logon phase begins (`--start-at`): every shard of a
    /// distributed run waits for the same instant. `None`: at once.
    pub start_at: Option<SystemTime>,
    /// What users read, file and send mail with.
    pub protocol: MailProtocol,
    /// State checks (`--check-state`): the time between two checkpoints;
    /// `None` when off ([`crate::state_checks`]).
    pub check_state: Option<Duration>,
}

/// The protocol a run's users keep their mail session in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MailProtocol {
    /// IMAP for reading and filing, SMTP for sending (every profile's own).
    #[default]
    Imap,
    /// JMAP for everything: `Email/query`, `Email/get`, `Email/set`, and
    /// `Email/import` with `EmailSubmission/set` to send; new mail noticed
    /// by JMAP push. Needs the target's JMAP endpoint.
    Jmap,
}

impl MailProtocol {
    /// Parses `imap` or `jmap`, as `--protocol` takes them.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "imap" => Ok(MailProtocol::Imap),
            "jmap" => Ok(MailProtocol::Jmap),
            other => Err(format!("unknown protocol {other:?}: imap or jmap")),
        }
    }

    /// `imap` or `jmap`.
    pub fn as_str(self) -> &'static str {
        match self {
            MailProtocol::Imap => "imap",
            MailProtocol::Jmap => "jmap",
        }
    }
}

/// The longest phase (ramp-up, steady or drain) a run may have: a month,
/// far past any sensible run, and small enough that no instant of a run
/// can overflow.
pub const MAX_PHASE: Duration = Duration::from_secs(31 * 24 * 3600);
/// The longest timeout (action or connect) a run may have.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

impl RunSettings {
    /// These settings with the phases `plan`'s window runs: the morning
    /// measures its logons, so its measured phase holds the whole logon
    /// storm and nothing comes before it ([`Plan::window_phases`]).
    pub fn in_window(mut self, plan: &Plan) -> Self {
        (self.ramp_up, self.duration) = plan.window_phases(self.ramp_up, self.duration);
        self
    }

    /// Refuses settings no run can have: a zero or absurd timeout or
    /// interval, a phase longer than [`MAX_PHASE`]. The command line checks
    /// its own, tighter bounds first; this keeps the engine's arithmetic on
    /// instants from overflowing whoever calls it.
    pub fn check(&self) -> Result<(), RunError> {
        let bad = |what: &str, why: String| Err(RunError::Settings(format!("{what} {why}")));
        for (what, phase) in [
            ("ramp-up", self.ramp_up),
            ("duration", self.duration),
            ("drain", self.drain),
        ] {
            if phase > MAX_PHASE {
                return bad(what, format!("{phase:?} is longer than {MAX_PHASE:?}"));
            }
        }
        for (what, timeout) in [
            ("action timeout", self.action_timeout),
            ("connect timeout", self.connect_timeout),
            ("interval", self.interval),
        ] {
            if timeout.is_zero() || timeout > MAX_TIMEOUT {
                return bad(
                    what,
                    format!("{timeout:?} is not between 0 and {MAX_TIMEOUT:?}"),
                );
            }
        }
        if let Some(ms) = self.qos_p95_ms
            && !(ms.is_finite() && ms > 0.0)
        {
            return bad("the p95 limit", format!("{ms} ms is not a positive number"));
        }
        Ok(())
    }
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
    /// The timeline of a run shaped by `settings` that starts now; an error
    /// if an instant of it cannot be represented (see [`RunSettings::check`]).
    pub fn starting_now(settings: &RunSettings) -> Result<Self, RunError> {
        let t0 = Instant::now();
        let steady_start = later(t0, settings.ramp_up)?;
        let steady_end = later(steady_start, settings.duration)?;
        // Checked here so that every later sum of the run (the drain, the
        // deadlines) stays representable.
        later(
            steady_end,
            settings.drain + settings.action_timeout * 2 + STOP_GRACE,
        )?;
        Ok(RunClock {
            t0,
            steady_start,
            steady_end,
        })
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

/// `at + after`, or an error when the sum overflows tokio's clock.
fn later(at: Instant, after: Duration) -> Result<Instant, RunError> {
    at.checked_add(after)
        .ok_or_else(|| RunError::Settings(format!("{after:?} from now is past the clock's end")))
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
    /// Once, before the first user logs on: the run's metadata as the record
    /// will carry it (marked `interrupted`, which the finished record
    /// corrects), for a journal of the run to open with.
    fn started(&mut self, _meta: &RunMeta) {}
    /// Once, before the run waits for its agreed start (`--start-at`) when
    /// that is still ahead; [`Self::started`] follows when the wait ends.
    fn waiting(&mut self, _until: SystemTime) {}
    /// An interval of the record has closed: it will not change any more.
    /// Intervals come in order, each once; the last one, cut short where the
    /// run ends, is only in the finished record.
    fn interval_closed(&mut self, _interval: &IntervalRecord) {}
    /// Where this observer stores the closed intervals it is handed, if it
    /// can give them back at the end (the run's journal): the record then
    /// holds in memory only those not yet stored, and reads the rest back
    /// when the run ends (issue 11: memory does not grow with the run's
    /// length).
    fn interval_archive(&self) -> Option<Arc<dyn IntervalArchive>> {
        None
    }
}

/// Two observers as one: each gets everything, the first first (the binary
/// shows the live line and journals the run's intervals to disk).
pub struct Both<'a>(pub &'a mut dyn Observer, pub &'a mut dyn Observer);

impl Observer for Both<'_> {
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event) {
        self.0.event(clock, at, event);
        self.1.event(clock, at, event);
    }
    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration) {
        self.0.lag(clock, at, lag);
        self.1.lag(clock, at, lag);
    }
    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample) {
        self.0.tick(clock, at, sample);
        self.1.tick(clock, at, sample);
    }
    fn reconciling(&mut self, progress: ReconcileProgress) {
        self.0.reconciling(progress);
        self.1.reconciling(progress);
    }
    fn started(&mut self, meta: &RunMeta) {
        self.0.started(meta);
        self.1.started(meta);
    }
    fn waiting(&mut self, until: SystemTime) {
        self.0.waiting(until);
        self.1.waiting(until);
    }
    fn interval_closed(&mut self, interval: &IntervalRecord) {
        self.0.interval_closed(interval);
        self.1.interval_closed(interval);
    }
    fn interval_archive(&self) -> Option<Arc<dyn IntervalArchive>> {
        self.0
            .interval_archive()
            .or_else(|| self.1.interval_archive())
    }
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
    /// Copies never seen (after reconciliation, unless interrupted): the
    /// first [`LOST_LIST_CAP`](crate::LOST_LIST_CAP), by sender, message and
    /// recipient.
    pub lost: Vec<Lost>,
    /// Every copy never seen, listed in `lost` or not.
    pub lost_total: u64,
    /// Of `lost_total`, copies in mailboxes the last reconciliation round
    /// could not search (the search failed, timed out or panicked).
    pub lost_unsearched: u64,
    /// Whether the reconciliation search ran.
    pub reconciled: bool,
    /// Tasks of the run that panicked (simulated users and reconciliation
    /// searches): each is a bug in peakhour, and the verdict fails.
    pub panics: u64,
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
    /// The settings are out of bounds (see [`RunSettings::check`]).
    #[error("the run's settings are out of bounds: {0}")]
    Settings(String),
    /// The test population is unusable, or a recipient outside it reached
    /// the SMTP stage (then the run was stopped before sending to it).
    #[error(transparent)]
    Population(#[from] PopulationError),
    /// A server the profile's calendar or POP3 actions need is missing or
    /// unusable.
    #[error(transparent)]
    Groupware(#[from] GroupwareCheckError),
}

/// Checks, before any load, that the first user can log on over IMAP and
/// authenticate over SMTP. An unreachable target is reported here, not as a
/// storm of errors in the first seconds of a run.
///
/// Every step has a deadline of `timeout`: connecting (with the TLS
/// handshake and the greeting), STARTTLS, LOGIN, AUTH, and the goodbyes.
/// A profile with calendar or POP3 actions also has its CalDAV and POP3
/// servers checked ([`GroupwareCheckError`](crate::GroupwareCheckError) says what failed).
///
/// Returns what the server offers, by protocol: `imap` (its capabilities
/// after login), `smtp` (its EHLO keywords, after STARTTLS when used),
/// `jmap` (the capabilities of its session, for a target with a JMAP
/// server) and, for a profile that downloads over POP3, `pop3` (its CAPA
/// lines), for the record ([`ServerRecord::capabilities`](peakhour_analysis::ServerRecord)).
///
/// What the servers said, in the capabilities and in an error, has passed
/// the run's redaction ([`Target::redactor`]): a server that quotes a
/// refused LOGIN or AUTH does not put the password on the terminal.
pub async fn preflight(
    plan: &Plan,
    target: &Target,
    timeout: Duration,
) -> Result<BTreeMap<String, Vec<String>>, RunError> {
    let redactor = target.redactor();
    let redact = |reason: String| redactor.redact(&reason);
    match check_before_load(plan, target, timeout).await {
        Ok(mut offered) => {
            for names in offered.values_mut() {
                names.iter_mut().for_each(|n| *n = redactor.redact(n));
            }
            Ok(offered)
        }
        Err(RunError::Imap { endpoint, reason }) => Err(RunError::Imap {
            endpoint,
            reason: redact(reason),
        }),
        Err(RunError::Smtp { endpoint, reason }) => Err(RunError::Smtp {
            endpoint,
            reason: redact(reason),
        }),
        Err(RunError::Groupware(GroupwareCheckError::CalDav { endpoint, reason })) => {
            Err(GroupwareCheckError::CalDav {
                endpoint,
                reason: redact(reason),
            }
            .into())
        }
        Err(RunError::Groupware(GroupwareCheckError::Pop3 { endpoint, reason })) => {
            Err(GroupwareCheckError::Pop3 {
                endpoint,
                reason: redact(reason),
            }
            .into())
        }
        Err(other) => Err(other),
    }
}

/// [`preflight`] before its redaction.
async fn check_before_load(
    plan: &Plan,
    target: &Target,
    timeout: Duration,
) -> Result<BTreeMap<String, Vec<String>>, RunError> {
    let mut offered = BTreeMap::new();
    let population = Population::new(plan, &target.credentials)?;
    let address = population.address(0)?;
    let (login, password) = target.login(0, &address);
    let imap_error = |reason: String| RunError::Imap {
        endpoint: target.imap.to_string(),
        reason,
    };
    let mut imap = target
        .connect_imap(timeout, timeout)
        .await
        .map_err(|e| imap_error(e.to_string()))?;
    imap.login(login, password)
        .await
        .map_err(|e| imap_error(format!("login as {login} failed: {e}")))?;
    // Capabilities change at login (RFC 3501 §6.2.3): ask again after it.
    if let Ok(Ok(asked)) = tokio::time::timeout(timeout, imap.capability()).await {
        offered.insert(
            "imap".to_owned(),
            asked.value.names().map(str::to_owned).collect(),
        );
    }
    let _ = imap_deadline(timeout, "LOGOUT", imap.logout()).await;
    if let Some(jmap) =
        crate::user::jmap::session_capabilities(target, login, password, timeout).await
    {
        offered.insert("jmap".to_owned(), jmap);
    }

    let smtp_error = |reason: String| RunError::Smtp {
        endpoint: target.smtp.to_string(),
        reason,
    };
    let mut smtp = target
        .connect_smtp(&target.smtp, Flavor::Smtp, "preflight.peakhour", timeout)
        .await
        .map_err(|e| smtp_error(e.to_string()))?;
    let encrypted = target.smtp.tls != crate::target::TlsMode::None;
    smtp.authenticate_as(target.options.smtp_auth, encrypted, login, password)
        .await
        .map_err(|e| smtp_error(format!("AUTH as {login} failed: {e}")))?;
    offered.insert("smtp".to_owned(), smtp.extensions().keywords.clone());
    let _ = smtp_deadline(timeout, "QUIT", smtp.quit()).await;
    offered
        .extend(crate::groupware::groupware_preflight(plan, target, &population, timeout).await?);
    Ok(offered)
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
    let settings = settings.in_window(&plan);
    settings.check()?;
    let population = Arc::new(Population::new(&plan, &target.credentials)?);
    if population.users() < plan.users() {
        return Err(PopulationError::NoSuchUser {
            user: population.users(),
            users: population.users(),
        }
        .into());
    }
    let mut recorder = RunRecorder::new(settings.interval)?;
    recorder.redact_with(target.redactor());
    if let Some(archive) = observer.interval_archive() {
        recorder.archive_to(archive);
    }
    let late = crate::distributed::observed_wait(settings.start_at, &mut stop, observer).await;
    let started_at = SystemTime::now();
    let clock = RunClock::starting_now(&settings)?;
    let delivery = Arc::new(DeliveryTracker::for_run(settings.shard, &settings.run_id));
    let shard_marks = crate::distributed::shard_marks(&plan, &settings, late, false);
    let halt = Arc::new(Halt::default());
    let progress = Arc::new(ScheduleProgress::new(plan.users()));
    let (events, inbox) = EventSink::channel();
    let shared = Arc::new(Shared {
        connector: connector.clone(),
        plan: plan.clone(),
        target: target.clone(),
        population: population.clone(),
        events,
        delivery: delivery.clone(),
        generator: MessageGenerator::new(plan.seed()),
        run_id: settings.run_id.clone(),
        action_timeout: settings.action_timeout,
        connect_timeout: settings.connect_timeout,
        client_name: settings.client_name.clone(),
        halt: halt.clone(),
        progress: progress.clone(),
        protocol: settings.protocol,
        state_checks: crate::state_checks::start(&settings, plan.users(), clock.steady_end), // state checks: the run's coordinator and ticker
    });
    let state_checks = shared.state_checks.clone(); // state checks
    let mut head = crate::recording::run_meta(&plan, &settings, started_at, true);
    head.shards = crate::distributed::shard_marks(&plan, &settings, late, true);
    observer.started(&head);
    let users = spawn_users(shared, &clock, &settings, &stop);

    let mut both = Tee {
        recorder: &mut recorder,
        observer,
        handed_on: 0,
    };
    let supervisor = Supervisor {
        plan: &plan,
        clock: &clock,
        progress: &progress,
        halt: &halt,
        drain_deadline: clock.steady_end + settings.drain + settings.action_timeout,
    };
    let ended = supervisor.observe(&mut both, inbox, users, &mut stop).await;
    if let Some(fault) = halt.fault() {
        return Err(fault.into());
    }
    // A stop during the reconciliation (which can take minutes past
    // saturation) ends it too: the run is then interrupted and unreconciled.
    let reconciliation = if ended.interrupted {
        None
    } else {
        let reconciliation = Reconciliation {
            connector: &connector,
            plan: &plan,
            population: &population,
            target: &target,
            settings: &settings,
            delivery: &delivery,
        };
        let started = Instant::now();
        let reconciled = reconciliation.run(&mut both, &clock, &mut stop).await;
        // What it cost, on record: searching 5,000 mailboxes must stay
        // under 30 s (issue 16; scripts/bench-5000.sh reads this).
        let by = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let count = Event::Count {
            counter: Counter::ReconcileMs,
            by,
        };
        both.event(&clock, Instant::now(), &count);
        Some(reconciled)
    };
    let reconciled = reconciliation.as_ref().is_some_and(|r| r.finished);
    let search_panics = reconciliation.as_ref().map_or(0, |r| r.panics);
    let (submitted_recipients, delivered_recipients) = delivery.totals();
    let lost = delivery.lost(LOST_LIST_CAP);
    let outcome = RunOutcome {
        started_at,
        clock,
        interrupted: ended.interrupted || !reconciled,
        submitted_recipients,
        delivered_recipients,
        lost: lost.listed,
        lost_total: lost.total,
        lost_unsearched: lost.unsearched,
        reconciled,
        panics: ended.panics + search_panics,
    };
    let mut record = recorder.finish(&plan, &population, &settings, &outcome)?;
    crate::distributed::mark_record(&mut record, shard_marks, outcome.interrupted);
    record.delivery.cross_shard = delivery.cross_shard(&population);
    // Which protocol each action spoke (update_calendar: CalDAV or IMAP;
    // the mail actions JMAP in a run over JMAP).
    record.meta.protocols = crate::groupware::action_protocols(&plan, &target, settings.protocol);
    record.state_checks = state_checks.map(|hub| hub.report()); // state checks
    Ok(RunResult { outcome, record })
}

/// Set by a user that finds a recipient outside the population: the run
/// stops at once and returns the error instead of a result.
#[derive(Debug, Default)]
pub(crate) struct Halt {
    fault: std::sync::Mutex<Option<PopulationError>>,
    raised: tokio::sync::Notify,
}

impl Halt {
    pub(crate) fn raise(&self, error: PopulationError) {
        self.fault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert(error);
        self.raised.notify_one();
    }

    fn fault(&self) -> Option<PopulationError> {
        self.fault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// How far each user has come through its schedule: the `seq` of the first
/// scheduled action it has not yet reported. When a user cannot go on (its
/// task panicked, or was still stuck when the run had to end), the actions
/// from there on are counted `not-attempted`, so that nothing it was due to
/// do goes missing from the results.
#[derive(Debug)]
pub(crate) struct ScheduleProgress(Box<[AtomicU64]>);

impl ScheduleProgress {
    fn new(users: u32) -> Self {
        ScheduleProgress((0..users).map(|_| AtomicU64::new(0)).collect())
    }

    /// User `user` has reported every action before `seq`.
    pub(crate) fn reported(&self, user: u32, next_seq: u64) {
        if let Some(slot) = self.0.get(user as usize) {
            slot.store(next_seq, Ordering::Relaxed);
        }
    }

    fn next(&self, user: u32) -> u64 {
        self.0
            .get(user as usize)
            .map_or(0, |slot| slot.load(Ordering::Relaxed))
    }
}

/// The users' tasks, and which user each task is.
struct UserTasks {
    tasks: JoinSet<()>,
    users: HashMap<TaskId, u32>,
}

/// Starts one task per user, each logging on at its slot of the ramp-up.
/// `shared` is moved in, so the users hold the only senders of its event
/// channel, which closes when the last one is done.
fn spawn_users<C: Connector>(
    shared: Arc<Shared<C>>,
    clock: &RunClock,
    settings: &RunSettings,
    stop: &watch::Receiver<bool>,
) -> UserTasks {
    let users = shared.plan.users();
    let mut tasks = JoinSet::new();
    let mut ids = HashMap::new();
    // A shard's users log on at their slots of the whole ramp-up, so that
    // the shards together log on as one process would.
    for index in settings.shard.users(users) {
        let stagger = shared.plan.logon_offset(index, settings.ramp_up);
        let timeline = Timeline {
            logon_at: clock.t0 + stagger,
            steady_start: clock.steady_start,
            steady_end: clock.steady_end,
            drain_end: clock.steady_end + settings.drain,
        };
        let task = tasks.spawn(User::new(index, shared.clone()).run(timeline, stop.clone()));
        ids.insert(task.id(), index);
    }
    UserTasks { tasks, users: ids }
}

/// How a run's load phase ended.
struct Ended {
    /// Stopped by the caller's signal.
    interrupted: bool,
    /// User tasks that panicked.
    panics: u64,
}

/// The run's loop, from the first logon to the end of the drain.
struct Supervisor<'a> {
    plan: &'a Plan,
    clock: &'a RunClock,
    progress: &'a ScheduleProgress,
    halt: &'a Halt,
    drain_deadline: Instant,
}

impl Supervisor<'_> {
    /// Hands every event to `observer` in arrival order, with the
    /// generator's own health once a second, until every user is done,
    /// the drain deadline passes, two seconds after `stop` was raised, or a
    /// fault halts the run. A user that panics is counted, and its remaining
    /// actions are counted `not-attempted` as they fall due; users still
    /// stuck at the end have theirs counted then.
    async fn observe(
        &self,
        observer: &mut dyn Observer,
        mut inbox: mpsc::UnboundedReceiver<Event>,
        mut users: UserTasks,
        stop: &mut watch::Receiver<bool>,
    ) -> Ended {
        let clock = self.clock;
        let mut cpu = CpuMeter::start();
        let mut probe = LagProbe::start();
        let mut max_lag = Duration::ZERO;
        let mut ticks = tokio::time::interval_at(clock.t0 + TICK, TICK);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut ended = Ended {
            interrupted: false,
            panics: 0,
        };
        let mut stop_open = true;
        let mut inbox_open = true;
        // Actions scheduled after this are not owed: the steady phase's end,
        // or the moment the run was stopped.
        let mut cut = clock.steady_end;
        let mut deadline = self.drain_deadline;
        if *stop.borrow() {
            // Stopped while waiting for --start-at: nothing runs.
            ended.interrupted = true;
            cut = clock.t0;
            deadline = Instant::now() + STOP_GRACE;
        }
        let mut owed = Owed::default();
        // One timer for the deadline, moved when it changes, rather than one
        // armed and dropped at every turn of the loop; and the events that
        // queued up while users ran are taken together (with one clock
        // reading), so the loop turns once per wake-up, not once per event.
        let give_up = tokio::time::sleep_until(deadline);
        tokio::pin!(give_up);
        let mut batch = Vec::with_capacity(EVENT_BATCH);
        while inbox_open || !owed.is_empty() {
            if give_up.deadline() != deadline {
                give_up.as_mut().reset(deadline);
            }
            tokio::select! {
                biased;
                () = self.halt.raised.notified() => break,
                changed = stop.changed(), if stop_open && !ended.interrupted => {
                    if changed.is_err() {
                        stop_open = false; // nobody can raise it any more
                    } else if *stop.borrow() {
                        ended.interrupted = true;
                        cut = cut.min(Instant::now());
                        owed.cut(cut);
                        // In-flight actions get two seconds, then are abandoned.
                        deadline = Instant::now() + STOP_GRACE;
                    }
                }
                received = inbox.recv_many(&mut batch, EVENT_BATCH), if inbox_open => {
                    if received == 0 {
                        inbox_open = false; // every user is done
                    }
                    let now = Instant::now();
                    for event in batch.drain(..) {
                        observer.event(clock, now, &event);
                    }
                }
                Some(joined) = users.tasks.join_next_with_id() => {
                    if let Err(error) = joined {
                        let user = users.users.remove(&error.id());
                        if error.is_panic() && let Some(user) = user {
                            ended.panics += 1;
                            observer.event(clock, Instant::now(), &Event::Panicked { role: "user" });
                            owed.extend(self.remaining(user, cut));
                        }
                    }
                }
                () = sleep_until_due(owed.next_due()), if !owed.is_empty() => {
                    owed.emit_due(observer, clock, Instant::now());
                }
                Some(lag) = probe.next() => {
                    max_lag = max_lag.max(lag);
                    observer.lag(clock, Instant::now(), lag);
                }
                _ = ticks.tick() => {
                    let sample = SelfSample { cpu_percent: cpu.percent(), max_lag };
                    max_lag = Duration::ZERO;
                    observer.tick(clock, Instant::now(), sample);
                }
                () = &mut give_up => break,
            }
        }
        users.tasks.abort_all();
        while let Some(joined) = users.tasks.join_next_with_id().await {
            let Err(error) = joined else { continue };
            let Some(user) = users.users.remove(&error.id()) else {
                continue;
            };
            if error.is_panic() {
                ended.panics += 1;
                observer.event(clock, Instant::now(), &Event::Panicked { role: "user" });
            }
            // Stuck (or panicked) when the run had to end: what it still
            // owed is counted now.
            owed.extend(self.remaining(user, cut));
        }
        // Events users sent before being stopped still count.
        while let Ok(event) = inbox.try_recv() {
            observer.event(clock, Instant::now(), &event);
        }
        owed.cut(cut);
        owed.emit_all(observer, clock, Instant::now());
        ended
    }

    /// The actions of `user` it has not reported, due before `cut`.
    fn remaining(&self, user: u32, cut: Instant) -> impl Iterator<Item = (Instant, ActionKind)> {
        let next = self.progress.next(user);
        let steady_start = self.clock.steady_start;
        self.plan
            .schedule(user)
            .skip_while(move |s| s.seq < next)
            .map(move |s| (steady_start + s.at, s.kind))
            .take_while(move |(at, _)| *at < cut)
    }
}

async fn sleep_until_due(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Actions owed by users that cannot go on, counted `not-attempted` at
/// their intended time (or at once, for those already due).
#[derive(Debug, Default)]
struct Owed(BinaryHeap<Reverse<(Instant, ActionKind)>>);

impl Owed {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn extend(&mut self, actions: impl Iterator<Item = (Instant, ActionKind)>) {
        self.0.extend(actions.map(Reverse));
    }

    fn next_due(&self) -> Option<Instant> {
        self.0.peek().map(|Reverse((at, _))| *at)
    }

    /// Forgets actions due at or after `cut`.
    fn cut(&mut self, cut: Instant) {
        self.0.retain(|Reverse((at, _))| *at < cut);
    }

    fn emit_due(&mut self, observer: &mut dyn Observer, clock: &RunClock, now: Instant) {
        while let Some(Reverse((at, kind))) = self.0.peek().copied() {
            if at > now {
                break;
            }
            self.0.pop();
            observer.event(clock, now, &not_attempted(kind, at));
        }
    }

    fn emit_all(&mut self, observer: &mut dyn Observer, clock: &RunClock, now: Instant) {
        while let Some(Reverse((at, kind))) = self.0.pop() {
            observer.event(clock, now, &not_attempted(kind, at));
        }
    }
}

/// An action that was due at `intended` and never started: an error, not a
/// late start (it never started) and not a latency (it has none).
pub(crate) fn not_attempted(kind: ActionKind, intended: Instant) -> Event {
    Event::Action {
        kind,
        intended,
        started: intended,
        finished: intended,
        outcome: Outcome::Error(NOT_ATTEMPTED.into()),
    }
}

/// How often the generator's own CPU is sampled (and the live line drawn).
pub(crate) const TICK: Duration = Duration::from_secs(1);

/// Most events the observer takes from the users' channel at one turn of its loop.
const EVENT_BATCH: usize = 256;

/// How long in-flight actions may finish after `stop` is raised.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// The record first, then the live view: one observer for the run's loop.
/// Every interval the recorder closes is handed on to the observer once,
/// right after the event that closed it.
struct Tee<'a> {
    recorder: &'a mut RunRecorder,
    observer: &'a mut dyn Observer,
    /// Closed intervals already handed on.
    handed_on: usize,
}

impl Tee<'_> {
    fn hand_on_closed(&mut self) {
        for interval in self.recorder.closed_since(self.handed_on) {
            self.observer.interval_closed(interval);
        }
        self.handed_on = self.recorder.closed_count();
    }
}

impl Observer for Tee<'_> {
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event) {
        self.recorder.event(clock, at, event);
        self.hand_on_closed();
        self.observer.event(clock, at, event);
    }

    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration) {
        self.recorder.lag(clock, at, lag);
        self.hand_on_closed();
        self.observer.lag(clock, at, lag);
    }

    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample) {
        self.recorder.tick(clock, at, sample);
        self.hand_on_closed();
        self.observer.tick(clock, at, sample);
    }

    fn reconciling(&mut self, progress: ReconcileProgress) {
        self.observer.reconciling(progress);
    }
}
