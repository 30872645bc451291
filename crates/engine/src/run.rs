//! A run: log every user on over the ramp-up, measure the steady phase, drain,
//! then reconcile deliveries. Events go, in time order and from one task, to
//! the run's [`RunRecorder`] and then to an [`Observer`] (the live line).
//!
//! Every instant here is tokio's, so that tests can drive a whole run on a
//! paused clock; only the recorded start date is the wall clock's.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use peakhour_analysis::{AnalysisError, RunRecord};
use peakhour_smtp::Flavor;
use peakhour_workload::ActionKind;
use peakhour_workload::{MessageGenerator, Plan, Shard};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connector::{Connector, NetConnector};
use crate::core::{
    Halt, Load, Observer, RunClock, RunLoop, RunRecorder, ScheduleProgress, Tasks, Tee,
};
use crate::delivery::{DeliveryTracker, LOST_LIST_CAP, Lost};
use crate::delivery_check::check_deliveries;
use crate::events::{Counter, Event, EventSink};
use crate::population::{Population, PopulationError};
use crate::reconcile::{Reconciled, Reconciliation};
use crate::sessions::groupware::GroupwareCheckError;
use crate::sessions::{Shared, Timeline, User};
use crate::target::{Target, imap_deadline, smtp_deadline};

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
        crate::sessions::jmap::session_capabilities(target, login, password, timeout).await
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
    offered.extend(
        crate::sessions::groupware::groupware_preflight(plan, target, &population, timeout).await?,
    );
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
    let delivery = DeliveryTracker::for_run(settings.shard, &settings.run_id);
    let delivery = Arc::new(delivery.checking_content(settings.check_state.is_some())); // state checks
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
        moves: Default::default(),
    });
    let state_checks = shared.state_checks.clone(); // state checks
    let mut head = crate::recording::run_meta(&plan, &settings, started_at, true);
    head.shards = crate::distributed::shard_marks(&plan, &settings, late, true);
    observer.started(&head);
    let mut load = MailUsers {
        shared: Some(shared),
        plan: &plan,
        progress: &progress,
        settings: &settings,
    };
    let users = load.spawn(&clock, &stop);

    let mut both = Tee {
        recorder: &mut recorder,
        observer,
        handed_on: 0,
    };
    let run_loop = RunLoop {
        clock: &clock,
        halt: &halt,
        deadline: Some(clock.steady_end + settings.drain + settings.action_timeout),
    };
    let ended = run_loop
        .observe(&load, &mut both, inbox, users, &mut stop)
        .await;
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
        let hub = state_checks.as_ref();
        Some(reconcile_and_audit(&reconciliation, hub, &mut both, &clock, &mut stop).await)
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
    record.meta.protocols = crate::sessions::action_protocols(&plan, &target, settings.protocol);
    record.state_checks = state_checks.map(|hub| hub.report()); // state checks
    Ok(RunResult { outcome, record })
}

/// The reconciliation; then, with the state checks on, each delivered copy
/// against its submission and, over JMAP, Stalwart's audit.
async fn reconcile_and_audit<C: Connector>(
    reconciliation: &Reconciliation<'_, C>,
    hub: Option<&Arc<crate::state_checks::StateCheckHub>>,
    observer: &mut dyn Observer,
    clock: &RunClock,
    stop: &mut watch::Receiver<bool>,
) -> Reconciled {
    let reconciled = timed_reconciliation(reconciliation, observer, clock, stop).await;
    delivery_checks(reconciliation, hub, observer, clock, stop).await; // state checks
    if let Some(hub) = hub {
        let Reconciliation {
            target,
            population,
            settings,
            ..
        } = reconciliation;
        hub.audit_jmap(target, population, settings.action_timeout)
            .await; // state checks: Stalwart's audit
    }
    reconciled
}

/// With the state checks on, compares each delivered copy with its
/// submission ([`check_deliveries`]); a mailbox it could not search is a
/// reconciliation error of kind `imap:delivery-check`.
async fn delivery_checks<C: Connector>(
    reconciliation: &Reconciliation<'_, C>,
    hub: Option<&Arc<crate::state_checks::StateCheckHub>>,
    observer: &mut dyn Observer,
    clock: &RunClock,
    stop: &mut watch::Receiver<bool>,
) {
    let Some(hub) = hub else {
        return;
    };
    let unsearched = check_deliveries(reconciliation, hub, stop).await;
    for _ in 0..unsearched {
        let failed = Event::SearchFailed("imap:delivery-check".to_owned());
        observer.event(clock, Instant::now(), &failed);
    }
}

/// Reconciles the deliveries after the drain, and records what it cost:
/// searching 5,000 mailboxes must stay under 30 s (issue 16;
/// scripts/bench-5000.sh reads this).
async fn timed_reconciliation<C: Connector>(
    reconciliation: &Reconciliation<'_, C>,
    observer: &mut dyn Observer,
    clock: &RunClock,
    stop: &mut watch::Receiver<bool>,
) -> Reconciled {
    let started = Instant::now();
    let reconciled = reconciliation.run(observer, clock, stop).await;
    let by = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let count = Event::Count {
        counter: Counter::ReconcileMs,
        by,
    };
    observer.event(clock, Instant::now(), &count);
    reconciled
}

/// A mail run's load: one simulated user per task, each logging on at its
/// slot of the ramp-up and keeping to its schedule.
struct MailUsers<'a, C> {
    /// Moved into the users at spawn, so that they hold the only senders of
    /// its event channel, which closes when the last one is done.
    shared: Option<Arc<Shared<C>>>,
    plan: &'a Plan,
    progress: &'a ScheduleProgress,
    settings: &'a RunSettings,
}

impl<C: Connector> Load for MailUsers<'_, C> {
    fn spawn(&mut self, clock: &RunClock, stop: &watch::Receiver<bool>) -> Tasks {
        let mut tasks = Tasks::new();
        let Some(shared) = self.shared.take() else {
            return tasks;
        };
        let settings = self.settings;
        // A shard's users log on at their slots of the whole ramp-up, so that
        // the shards together log on as one process would.
        for index in settings.shard.users(shared.plan.users()) {
            let stagger = shared.plan.logon_offset(index, settings.ramp_up);
            let timeline = Timeline {
                logon_at: clock.t0 + stagger,
                steady_start: clock.steady_start,
                steady_end: clock.steady_end,
                drain_end: clock.steady_end + settings.drain,
            };
            tasks.spawn(
                index,
                User::new(index, shared.clone()).run(timeline, stop.clone()),
            );
        }
        tasks
    }

    fn panicked(&self, _index: u32) -> Option<Event> {
        Some(Event::Panicked { role: "user" })
    }

    fn owed(&self, user: u32, clock: &RunClock, cut: Instant) -> Vec<(Instant, ActionKind)> {
        let next = self.progress.next(user);
        self.plan
            .schedule(user)
            .skip_while(|s| s.seq < next)
            .map(|s| (clock.steady_start + s.at, s.kind))
            .take_while(|(at, _)| *at < cut)
            .collect()
    }
}
