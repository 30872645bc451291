//! One user's IMAP traffic, traced (issue 28 item 3): a user who imitates
//! a recorded client logs on to a real server, performs a given list of
//! actions at given times of its day (waiting between them as its client
//! does), and every byte of every connection comes back as a transcript in
//! the fixtures' format, with each action's window, for
//! [`peakhour_imap::fidelity`] to measure against the recording.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use peakhour_imap::fidelity::ActionWindow;
use peakhour_workload::{ActionKind, MessageGenerator, Plan};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connector::NetConnector;
use crate::core::{Halt, ScheduleProgress};
use crate::delivery::DeliveryTracker;
use crate::events::EventSink;
use crate::population::Population;
use crate::run::MailProtocol;
use crate::sessions::{Action, Actor, Shared, UserSession};
use crate::target::Target;

/// One action of a traced day.
#[derive(Debug, Clone)]
pub struct TracedAction {
    /// Its name in the transcript's windows (`open_inbox`, `read`, `idle` ...).
    pub name: String,
    /// What the user does; `None` for idle time (the client's own wake-ups only).
    pub kind: Option<ActionKind>,
    /// When, in simulated time from the end of the logon.
    pub at: Duration,
    /// From this action on, the day runs at this speed instead of the
    /// plan's (a quick idle hour after actions at their recorded pace).
    pub speed: Option<f64>,
}

/// A traced day: the transcript and each action's window in it, in
/// simulated seconds.
#[derive(Debug, Clone)]
pub struct ClientTrace {
    /// The transcript (`<seconds> c<N> C: ...`), credentials replaced.
    pub transcript: String,
    /// The windows, the logon first (`logon`).
    pub actions: Vec<ActionWindow>,
}

/// Why a trace failed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The plan's users are not in the target's credentials.
    #[error(transparent)]
    Population(#[from] crate::population::PopulationError),
    /// The user's client failed (logon or an action), with what it was doing.
    #[error("user {user} ({client}): {doing}: {kind}: {detail}")]
    Client {
        /// The user's number.
        user: u32,
        /// The client it imitates.
        client: String,
        /// The logon or the action.
        doing: String,
        /// The failure's kind.
        kind: String,
        /// The failure's text.
        detail: String,
    },
}

/// Logs user `user` of `plan` on to `target` with the client the plan gives
/// it, performs `actions` at their times (the plan's speed compresses them
/// as it compresses a day) and returns its traffic. A user of peakhour's own
/// client has no trace (the transcript is empty).
pub async fn trace_client(
    plan: Arc<Plan>,
    target: Arc<Target>,
    user: u32,
    actions: &[TracedAction],
    timeout: Duration,
) -> Result<ClientTrace, TraceError> {
    let population = Arc::new(Population::new(&plan, &target.credentials)?);
    let shared = shared(&plan, target, population.clone(), timeout);
    let address = population.address(user).unwrap_or_default();
    let examples = Mutex::new(Vec::new());
    let actor = Actor {
        shared: &shared,
        index: user,
        address: &address,
        examples_sent: &examples,
    };
    let client = plan.client_of(user).name().to_owned();
    let failed = |doing: &str, f: crate::sessions::Failure| TraceError::Client {
        user,
        client: client.clone(),
        doing: doing.to_owned(),
        kind: f.kind.clone(),
        detail: f.detail.clone().unwrap_or_default(),
    };
    let mut session = actor
        .imap_log_on_traced(1, true)
        .await
        .map_err(|f| failed("logon", f))?;
    // Real time at which simulated `at` falls: segments of constant speed.
    let mut speed = plan.speed().max(1e-9);
    let mut segment = (Instant::now(), Duration::ZERO);
    let mut windows = vec![ActionWindow {
        action: "logon".to_owned(),
        start: 0.0,
        end: 0.0,
    }];
    let (_keep, mut stop) = watch::channel(false);
    let sim_now = |session: &super::ImapSession<_>| {
        (session.client.as_ref())
            .and_then(|c| c.trace.as_ref())
            .map_or(0.0, super::client::Trace::seconds)
    };
    for (nth, traced) in actions.iter().enumerate() {
        if let Some(new) = traced.speed {
            let now = Instant::now();
            let (began, at) = segment;
            let sim = at + (now - began).mul_f64(speed);
            segment = (now, sim.min(traced.at));
            speed = new.max(1e-9);
            if let Some(client) = session.client.as_mut() {
                client.set_speed(speed);
            }
        }
        let due = segment.0 + traced.at.saturating_sub(segment.1).div_f64(speed);
        if session.client.is_some() {
            session
                .client_wait(&actor, due, &mut stop)
                .await
                .map_err(|f| failed(&traced.name, f))?;
        } else {
            tokio::time::sleep_until(due).await;
        }
        let begun = sim_now(&session);
        if let Some(last) = windows.last_mut() {
            last.end = begun;
        }
        windows.push(ActionWindow {
            action: traced.name.clone(),
            start: begun,
            end: begun,
        });
        let Some(kind) = traced.kind else { continue };
        let action = Action {
            kind,
            seq: nth as u64,
            nth: nth as u64,
        };
        if kind == ActionKind::Send {
            let message = actor
                .compose(action.nth)
                .map_err(|f| failed(&traced.name, f))?
                .message;
            session
                .save_copy(&actor, &message)
                .await
                .map_err(|f| failed(&traced.name, f))?;
        } else {
            session
                .act(&actor, &action)
                .await
                .map_err(|f| failed(&traced.name, f))?;
        }
    }
    if let Some(last) = windows.last_mut() {
        last.end = sim_now(&session);
    }
    let transcript = session
        .client
        .as_mut()
        .and_then(|c| c.trace.take())
        .map(|t| t.lines.join("\n"))
        .unwrap_or_default();
    Ok(ClientTrace {
        transcript,
        actions: windows,
    })
}

/// What the traced user's sessions share: a run of one user whose events
/// go nowhere (the trace is the measurement).
fn shared(
    plan: &Arc<Plan>,
    target: Arc<Target>,
    population: Arc<Population>,
    timeout: Duration,
) -> Shared<NetConnector> {
    let (events, _ignored) = EventSink::channel();
    Shared {
        connector: Arc::new(NetConnector),
        plan: plan.clone(),
        target,
        population,
        events,
        delivery: Arc::new(DeliveryTracker::for_run(
            peakhour_workload::Shard::whole(),
            "trace",
        )),
        generator: MessageGenerator::new(plan.seed()),
        run_id: "trace".to_owned(),
        action_timeout: timeout,
        connect_timeout: timeout,
        client_name: "peakhour-trace".to_owned(),
        halt: Arc::new(Halt::default()),
        progress: Arc::new(ScheduleProgress::new(plan.users())),
        protocol: MailProtocol::Imap,
        state_checks: None,
        moves: Default::default(),
    }
}
