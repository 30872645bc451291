//! The session tasks of `peakhour tasks`, which are not actions of a
//! profile and so are run here rather than by a `peakhour run` child:
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
//! counted when that start falls inside the steady window.

use std::sync::Arc;
use std::time::Duration;

use peakhour_analysis::LatencyHistogram;
use peakhour_engine::Target;
use peakhour_imap::{ImapConnection, SearchKey};
use peakhour_smtp::{Flavor, SmtpConnection};
use tokio::time::Instant;

/// How long one connection or command may take before it counts as failed.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A session task run by a pool of workstations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SessionTask {
    Logon,
    Deliver,
    SearchUnindexed,
}

impl SessionTask {
    pub(super) fn name(self) -> &'static str {
        match self {
            SessionTask::Logon => "logon",
            SessionTask::Deliver => "deliver",
            SessionTask::SearchUnindexed => "search_unindexed",
        }
    }
}

/// When the load runs, on the tokio clock.
#[derive(Clone, Copy, Debug)]
pub(super) struct Schedule {
    /// First intended start.
    pub(super) load_start: Instant,
    /// The steady window: tasks intended to start in it are counted.
    pub(super) steady_start: Instant,
    pub(super) steady_end: Instant,
    /// No task starts after this; in-flight ones may finish until `+ drain`.
    pub(super) drain: Duration,
}

/// Logins of the workstations: `(login, password)` per user, and the mail
/// addresses deliveries go to.
#[derive(Clone)]
pub(super) struct Population {
    pub(super) target: Arc<Target>,
    /// Mail addresses of user 1 … N (0-based here).
    pub(super) addresses: Arc<Vec<String>>,
}

impl Population {
    fn login(&self, user: usize) -> (String, peakhour_net::Secret<String>) {
        let address = &self.addresses[user % self.addresses.len()];
        let (login, password) = self.target.login(user as u32, address);
        (login.to_owned(), password.clone())
    }

    async fn logged_in(&self, user: usize) -> anyhow::Result<ImapConnection> {
        let mut imap = self.target.connect_imap(TIMEOUT, TIMEOUT).await?;
        let (login, password) = self.login(user);
        imap.login(&login, &password).await?;
        Ok(imap)
    }
}

/// What a pool of workstations measured.
#[derive(Default)]
pub(super) struct PoolResult {
    pub(super) latency: LatencyHistogram,
    /// Tasks completed whose intended start was in the steady window.
    pub(super) completed: u64,
    pub(super) errors: u64,
    pub(super) last_error: Option<String>,
}

/// Runs `task` from `workstations` workstations, each starting `rate` tasks
/// per second, on the schedule.
pub(super) async fn run_pool(
    task: SessionTask,
    population: &Population,
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
    population: Population,
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
                    result.last_error = Some(format!("{e:#}"));
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
    population: Population,
    user: usize,
    imap: Option<ImapConnection>,
    smtp: Option<SmtpConnection>,
    sent: u64,
}

impl Workstation {
    async fn once(&mut self, task: SessionTask) -> anyhow::Result<()> {
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

    async fn deliver(&mut self) -> anyhow::Result<()> {
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
                anyhow::bail!("the recipient was refused");
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
pub(super) struct HeldSessions {
    sessions: Vec<ImapConnection>,
    pub(super) errors: u64,
    pub(super) last_error: Option<String>,
}

impl HeldSessions {
    pub(super) fn new() -> Self {
        Self {
            sessions: Vec::new(),
            errors: 0,
            last_error: None,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Opens sessions until `count` are held, `parallel` at a time.
    pub(super) async fn open_until(&mut self, population: &Population, count: usize) {
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
                    anyhow::Ok(imap)
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
                        self.last_error = Some(format!("{e:#}"));
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
    pub(super) async fn close(self) {
        for mut imap in self.sessions {
            let _ = imap.idle_done().await;
            let _ = imap.logout().await;
        }
    }
}
