//! The atomic tasks of `peakhour tasks` (seed 001): which tasks a profile
//! offers ([`choose_tasks`]), and the session tasks, which are not actions
//! of a profile and so are run here rather than by a `peakhour run`:
//!
//! * `logon`: connect, LOGIN, LOGOUT (one task = one whole logon);
//! * `deliver`: one message to one recipient through the MTA (SMTP into
//!   Postfix, which hands it to Dovecot by LMTP), each workstation on a
//!   connection of its own;
//! * `search_unindexed`: `SEARCH TEXT` for a word no message holds, over
//!   the Inbox, which Dovecot without a full-text index answers by reading
//!   every message (seed 001's non-indexed search);
//! * `idle_session`: sessions logged in, the Inbox selected, in IDLE, held
//!   open (its unit is a session-hour).
//!
//! Each workstation starts tasks at a steady, evenly spaced rate; a task is
//! timed from its intended start (a late start counts its lateness) and
//! counted when that start falls inside the steady window. `peakhour-app`'s
//! `TaskMeter` measures each with the server monitor beside it, and the idle
//! baseline: the engine knows no monitor.

use std::sync::Arc;
use std::time::Duration;

use peakhour_analysis::LatencyHistogram;
use peakhour_imap::{ImapConnection, ImapError, SearchKey};
use peakhour_smtp::{Flavor, SmtpConnection, SmtpError};
use tokio::time::Instant;

use crate::Target;

/// Why one session task failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionTaskError {
    /// The IMAP server failed or refused.
    #[error("IMAP: {0}")]
    Imap(#[from] ImapError),
    /// The MTA failed or refused.
    #[error("SMTP: {0}")]
    Smtp(#[from] SmtpError),
    /// The MTA accepted the transaction but not its recipient.
    #[error("the recipient was refused")]
    Refused,
}

/// The session tasks, in the order they run.
pub const SESSION_TASKS: [&str; 4] = ["logon", "idle_session", "deliver", "search_unindexed"];

/// Actions that take messages out of the Inbox: they run last, and the
/// Inbox is topped up before each.
pub const CONSUMING_ACTIONS: [&str; 2] = ["move", "delete"];

/// One atomic task to measure.
#[derive(Clone, Debug, PartialEq)]
pub enum AtomicTask {
    /// An action of the profile, by name (run as a one-action `peakhour run`).
    Action(String),
    /// A session task run by a pool of workstations ([`run_pool`]).
    Pool(SessionTask),
    /// Idle sessions held open ([`HeldSessions`]).
    IdleSessions,
}

impl AtomicTask {
    /// The task's name in tasks.json.
    pub fn name(&self) -> &str {
        match self {
            AtomicTask::Action(name) => name,
            AtomicTask::Pool(t) => t.name(),
            AtomicTask::IdleSessions => "idle_session",
        }
    }

    /// Whether this task takes messages out of the Inbox.
    pub fn consumes_inbox(&self) -> bool {
        matches!(self, AtomicTask::Action(a) if CONSUMING_ACTIONS.contains(&a.as_str()))
    }
}

/// An unknown task name in `--tasks`.
#[derive(Debug, thiserror::Error)]
#[error("no task {name:?}; this profile has {offered}")]
pub struct UnknownTask {
    /// The name asked for.
    pub name: String,
    /// The names this profile offers, comma-separated.
    pub offered: String,
}

/// The tasks `asked` for (all of them when empty), checked against the
/// profile's `actions`, without repeats, the Inbox-consuming actions last so
/// that the others see the profile's mailboxes.
pub fn choose_tasks(asked: &[String], actions: &[String]) -> Result<Vec<AtomicTask>, UnknownTask> {
    let session = |name: &str| match name {
        "logon" => Some(AtomicTask::Pool(SessionTask::Logon)),
        "deliver" => Some(AtomicTask::Pool(SessionTask::Deliver)),
        "search_unindexed" => Some(AtomicTask::Pool(SessionTask::SearchUnindexed)),
        "idle_session" => Some(AtomicTask::IdleSessions),
        _ => None,
    };
    let all: Vec<&str> = actions
        .iter()
        .map(String::as_str)
        .chain(SESSION_TASKS)
        .collect();
    let names: Vec<&str> = if asked.is_empty() {
        all.clone()
    } else {
        asked.iter().map(String::as_str).collect()
    };
    let mut tasks = Vec::new();
    for name in names {
        let task = if actions.iter().any(|a| a == name) {
            AtomicTask::Action(name.to_owned())
        } else {
            session(name).ok_or_else(|| UnknownTask {
                name: name.to_owned(),
                offered: all.join(", "),
            })?
        };
        if !tasks.contains(&task) {
            tasks.push(task);
        }
    }
    tasks.sort_by_key(AtomicTask::consumes_inbox);
    Ok(tasks)
}

/// How long one connection or command may take before it counts as failed.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A session task run by a pool of workstations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionTask {
    /// Connect, LOGIN, LOGOUT.
    Logon,
    /// One message to one recipient through the MTA.
    Deliver,
    /// `SEARCH TEXT` over the Inbox for a word no message holds.
    SearchUnindexed,
}

impl SessionTask {
    /// The task's name in tasks.json.
    pub fn name(self) -> &'static str {
        match self {
            SessionTask::Logon => "logon",
            SessionTask::Deliver => "deliver",
            SessionTask::SearchUnindexed => "search_unindexed",
        }
    }
}

/// When the load runs, on the tokio clock.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// First intended start.
    pub load_start: Instant,
    /// The steady window: tasks intended to start in it are counted.
    pub steady_start: Instant,
    /// The end of the steady window: no task starts after it.
    pub steady_end: Instant,
    /// No task starts after this; in-flight ones may finish until `+ drain`.
    pub drain: Duration,
}

/// Logins of the workstations: `(login, password)` per user, and the mail
/// addresses deliveries go to.
#[derive(Clone, Debug)]
pub struct TaskPopulation {
    /// Where and how the workstations sign in.
    pub target: Arc<Target>,
    /// Mail addresses of user 1 … N (0-based here).
    pub addresses: Arc<Vec<String>>,
}

impl TaskPopulation {
    fn login(&self, user: usize) -> (String, peakhour_net::Secret<String>) {
        let address = &self.addresses[user % self.addresses.len()];
        let (login, password) = self.target.login(user as u32, address);
        (login.to_owned(), password.clone())
    }

    async fn logged_in(&self, user: usize) -> Result<ImapConnection, SessionTaskError> {
        let mut imap = self.target.connect_imap(TIMEOUT, TIMEOUT).await?;
        let (login, password) = self.login(user);
        imap.login(&login, &password).await?;
        Ok(imap)
    }
}

/// What a pool of workstations measured.
#[derive(Default)]
pub struct PoolResult {
    /// Response times of the counted tasks, from their intended starts.
    pub latency: LatencyHistogram,
    /// Tasks completed whose intended start was in the steady window.
    pub completed: u64,
    /// Counted tasks that failed.
    pub errors: u64,
    /// The last failure, for the message.
    pub last_error: Option<String>,
}

/// Runs `task` from `workstations` workstations, each starting `rate` tasks
/// per second, on the schedule.
pub async fn run_pool(
    task: SessionTask,
    population: &TaskPopulation,
    workstations: u32,
    rate: f64,
    schedule: Schedule,
) -> PoolResult {
    let period = Duration::from_secs_f64(1.0 / rate);
    let mut handles = Vec::new();
    for w in 0..workstations {
        let population = population.clone();
        // Workstations are spread evenly over one period.
        let offset = period.mul_f64(f64::from(w) / f64::from(workstations));
        handles.push(tokio::spawn(async move {
            workstation(task, population, w as usize, period, offset, schedule).await
        }));
    }
    let mut total = PoolResult::default();
    for h in handles {
        if let Ok(r) = h.await {
            let _ = total.latency.add(&r.latency);
            total.completed += r.completed;
            total.errors += r.errors;
            if r.last_error.is_some() {
                total.last_error = r.last_error;
            }
        }
    }
    total
}

/// One workstation: a task every `period`, from `load_start + offset` until
/// the steady window ends.
async fn workstation(
    task: SessionTask,
    population: TaskPopulation,
    index: usize,
    period: Duration,
    offset: Duration,
    schedule: Schedule,
) -> PoolResult {
    let mut result = PoolResult::default();
    let mut state = Workstation {
        population,
        user: index,
        imap: None,
        smtp: None,
        sent: 0,
    };
    let mut next = schedule.load_start + offset;
    let deadline = schedule.steady_end + schedule.drain;
    while next < schedule.steady_end {
        tokio::time::sleep_until(next).await;
        let intended = next;
        next += period;
        let outcome = tokio::time::timeout_at(deadline, state.once(task)).await;
        let counted = intended >= schedule.steady_start;
        match outcome {
            Ok(Ok(())) if counted => {
                result.latency.record(Instant::now() - intended);
                result.completed += 1;
            }
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                state.imap = None;
                state.smtp = None;
                if counted {
                    result.errors += 1;
                    result.last_error = Some(e.to_string());
                }
            }
            Err(_) => break,
        }
    }
    state.close().await;
    result
}

/// A workstation's connections, kept between tasks where the task allows.
struct Workstation {
    population: TaskPopulation,
    user: usize,
    imap: Option<ImapConnection>,
    smtp: Option<SmtpConnection>,
    sent: u64,
}

impl Workstation {
    async fn once(&mut self, task: SessionTask) -> Result<(), SessionTaskError> {
        match task {
            SessionTask::Logon => {
                let imap = self.population.logged_in(self.user).await?;
                imap.logout().await?;
            }
            SessionTask::SearchUnindexed => {
                if self.imap.is_none() {
                    let mut imap = self.population.logged_in(self.user).await?;
                    imap.examine("INBOX").await?;
                    self.imap = Some(imap);
                }
                if let Some(imap) = self.imap.as_mut() {
                    // A word no generated message contains: every message is read.
                    let key = SearchKey::Text("zqxjkpeakhourneedle".to_owned());
                    imap.search(&key, true).await?;
                }
            }
            SessionTask::Deliver => self.deliver().await?,
        }
        Ok(())
    }

    async fn deliver(&mut self) -> Result<(), SessionTaskError> {
        if self.smtp.is_none() {
            let target = &self.population.target;
            let mut smtp = target
                .connect_smtp(&target.smtp, Flavor::Smtp, "tasks.peakhour.test", TIMEOUT)
                .await?;
            let (login, password) = self.population.login(self.user);
            smtp.authenticate(&login, &password).await?;
            self.smtp = Some(smtp);
        }
        let addresses = &self.population.addresses;
        let from = addresses[self.user % addresses.len()].clone();
        // Recipients walk the population so that no Inbox takes them all.
        self.sent += 1;
        let to = addresses[(self.user * 7 + self.sent as usize) % addresses.len()].clone();
        let message = message(&from, &to, self.user, self.sent);
        if let Some(smtp) = self.smtp.as_mut() {
            let outcome = smtp.send_mail(&from, &[to], &message).await?;
            if !outcome.value.all_delivered() {
                return Err(SessionTaskError::Refused);
            }
        }
        Ok(())
    }

    async fn close(&mut self) {
        if let Some(imap) = self.imap.take() {
            let _ = imap.logout().await;
        }
        if let Some(smtp) = self.smtp.take() {
            let _ = smtp.quit().await;
        }
    }
}

/// A 1 KiB text message (the size of MMB's most common message, seed 002
/// Table 4).
fn message(from: &str, to: &str, user: usize, n: u64) -> Vec<u8> {
    let mut body = String::new();
    while body.len() < 1024 {
        body.push_str("The quarterly figures are attached for review before the meeting.\r\n");
    }
    format!(
        "From: <{from}>\r\nTo: <{to}>\r\nSubject: peakhour tasks: deliver {user}-{n}\r\n\
         Message-ID: <tasks-{user}-{n}@tasks.peakhour.test>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=us-ascii\r\n\r\n{body}"
    )
    .into_bytes()
}

/// Idle sessions held open: logged in, the Inbox selected, in IDLE.
pub struct HeldSessions {
    sessions: Vec<ImapConnection>,
    /// Sessions that could not be opened.
    pub errors: u64,
    /// The last failure, for the message.
    pub last_error: Option<String>,
}

impl Default for HeldSessions {
    fn default() -> Self {
        Self::new()
    }
}

impl HeldSessions {
    /// No session held.
    pub fn new() -> Self {
        Self {
            sessions: Vec::new(),
            errors: 0,
            last_error: None,
        }
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Opens sessions until `count` are held, `parallel` at a time.
    pub async fn open_until(&mut self, population: &TaskPopulation, count: usize) {
        const PARALLEL: usize = 16;
        while self.sessions.len() < count {
            let start = self.sessions.len();
            let batch = (count - start).min(PARALLEL);
            let mut handles = Vec::new();
            for i in start..start + batch {
                let population = population.clone();
                handles.push(tokio::spawn(async move {
                    let mut imap = population.logged_in(i).await?;
                    imap.select("INBOX").await?;
                    imap.idle_start().await?;
                    Ok::<_, SessionTaskError>(imap)
                }));
            }
            let mut opened = 0;
            for h in handles {
                match h.await {
                    Ok(Ok(imap)) => {
                        self.sessions.push(imap);
                        opened += 1;
                    }
                    Ok(Err(e)) => {
                        self.errors += 1;
                        self.last_error = Some(e.to_string());
                    }
                    Err(e) => {
                        self.errors += 1;
                        self.last_error = Some(e.to_string());
                    }
                }
            }
            if opened == 0 {
                break;
            }
        }
    }

    /// Ends IDLE and logs every session out.
    pub async fn close(self) {
        for mut imap in self.sessions {
            let _ = imap.idle_done().await;
            let _ = imap.logout().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consuming_actions_run_last_and_unknown_tasks_are_refused() {
        let actions: Vec<String> = ["check_inbox", "send", "read", "move", "delete"]
            .map(String::from)
            .to_vec();
        let tasks = choose_tasks(&[], &actions).unwrap();
        let names: Vec<&str> = tasks.iter().map(AtomicTask::name).collect();
        assert_eq!(
            names,
            [
                "check_inbox",
                "send",
                "read",
                "logon",
                "idle_session",
                "deliver",
                "search_unindexed",
                "move",
                "delete"
            ]
        );
        let err = choose_tasks(&["fly".into()], &actions).unwrap_err();
        assert_eq!(err.name, "fly");
        assert!(err.offered.contains("search_unindexed"), "{err}");
    }

    #[test]
    fn a_delivered_message_names_its_sender_and_recipient_and_is_a_kibibyte() {
        let m = String::from_utf8(message("a@x.test", "b@x.test", 3, 7)).unwrap();
        assert!(
            m.starts_with("From: <a@x.test>\r\nTo: <b@x.test>\r\n"),
            "{m}"
        );
        assert!(m.contains("Message-ID: <tasks-3-7@tasks.peakhour.test>"));
        assert!(m.len() > 1024);
    }
}

/// When [`hold_idle_sessions`] held how many sessions.
#[derive(Clone, Debug)]
pub struct IdleHold {
    /// Sessions held in the first step.
    pub half: usize,
    /// When the first step's count was held, steadily.
    pub half_held: (Instant, Instant),
    /// Sessions held in the second step.
    pub full: usize,
    /// The steady window with all of them held.
    pub steady: (Instant, Instant),
    /// Sessions that could not be opened.
    pub errors: u64,
    /// The last failure, for the message.
    pub last_error: Option<String>,
}

/// How long each step of [`hold_idle_sessions`] lasts.
#[derive(Clone, Copy, Debug)]
pub struct IdleSteps {
    /// The first step, with half the sessions.
    pub half: Duration,
    /// Settling after all are open, before the steady window.
    pub ramp_up: Duration,
    /// The steady window.
    pub steady: Duration,
    /// Held on after it, so that a sampler's last sample sees no logout.
    pub tail: Duration,
}

/// The memory model's sessions: `wanted / 2` idle sessions held for
/// `steps.half`, then `wanted`, through the ramp-up, the steady window and
/// the tail; then every one is logged out.
pub async fn hold_idle_sessions(
    population: &TaskPopulation,
    wanted: usize,
    steps: IdleSteps,
) -> IdleHold {
    let mut held = HeldSessions::new();
    held.open_until(population, wanted / 2).await;
    let half = held.len();
    let half_from = Instant::now();
    tokio::time::sleep(steps.half).await;
    let half_held = (half_from, Instant::now());
    held.open_until(population, wanted).await;
    let full = held.len();
    tokio::time::sleep(steps.ramp_up).await;
    let steady_from = Instant::now();
    tokio::time::sleep(steps.steady).await;
    let steady = (steady_from, Instant::now());
    tokio::time::sleep(steps.tail).await;
    let (errors, last_error) = (held.errors, held.last_error.clone());
    held.close().await;
    IdleHold {
        half,
        half_held,
        full,
        steady,
        errors,
        last_error,
    }
}
