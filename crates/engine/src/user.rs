//! One simulated user: an online client that keeps an IMAP session for the
//! whole day, idles between actions (so new mail is noticed as it arrives),
//! and performs its scheduled actions on real messages.

use std::sync::Arc;
use std::time::Duration;

use peakhour_imap::{
    BodySection, FetchItem, FetchedMessage, Idle, ImapConnection, ImapError, MailboxUpdate,
    StoreMode,
};
use peakhour_net::Timed;
use peakhour_smtp::{Flavor, SmtpError};
use peakhour_workload::{ActionKind, ActionParams, MessageGenerator, MessageSpec, Plan, Window};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connector::Connector;
use crate::core::{Halt, ScheduleProgress, not_attempted};
use crate::delivery::DeliveryTracker;
use crate::events::{Counter, Event, EventSink, Outcome};
use crate::folders::{discover, listed};
use crate::groupware::GroupwareClients;
use crate::population::Population;
use crate::run::MailProtocol;
use crate::target::{
    Target, TlsMode, imap_connect_deadline, imap_deadline, smtp_connect_deadline, smtp_deadline,
};

/// The JMAP session, behind the same seams as the IMAP one (`log_on`, `act`,
/// `wait_until`).
pub(crate) mod jmap;

/// An action that starts this much after its intended time counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(10);
/// Waits shorter than this sleep instead of entering IDLE (IDLE and DONE are
/// two more commands for the server, even when they share writes with others).
const MIN_IDLE: Duration = Duration::from_millis(50);
/// The longest pause between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// What every user of a run shares.
#[derive(Debug)]
pub(crate) struct Shared<C> {
    pub(crate) connector: Arc<C>,
    pub(crate) plan: Arc<Plan>,
    pub(crate) target: Arc<Target>,
    /// The only addresses mail may go to.
    pub(crate) population: Arc<Population>,
    pub(crate) events: EventSink,
    pub(crate) delivery: Arc<DeliveryTracker>,
    pub(crate) generator: MessageGenerator,
    pub(crate) run_id: String,
    pub(crate) action_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) client_name: String,
    /// Raised, with the error, when a recipient outside the population
    /// reaches the SMTP stage.
    pub(crate) halt: Arc<Halt>,
    /// Where each user is in its schedule.
    pub(crate) progress: Arc<ScheduleProgress>,
    /// IMAP or JMAP for the users' mail sessions.
    pub(crate) protocol: MailProtocol,
}

/// A message the user knows is in its Inbox.
#[derive(Debug, Clone, Copy)]
struct Known {
    uid: u32,
    seen: bool,
}

/// Why an action failed, and whether the session survived it.
pub(crate) struct Failure {
    pub(crate) kind: String,
    pub(crate) session_lost: bool,
    /// The error as the user would read it (the command and the server's
    /// own text), when there is more to say than the kind.
    pub(crate) detail: Option<String>,
}

impl Failure {
    /// A failure with nothing to say beyond its kind.
    pub(crate) fn bare(kind: impl Into<String>, session_lost: bool) -> Self {
        Failure {
            kind: kind.into(),
            session_lost,
            detail: None,
        }
    }
}

impl Failure {
    /// Names what the failed command was about (`folder "Sent"`,
    /// `recipient "a@b"`) unless the error's own text already does: a
    /// server's `NO` to SELECT or APPEND rarely says which folder it refused.
    pub(crate) fn about(mut self, what: &str, name: &str) -> Self {
        if let Some(detail) = &mut self.detail
            && !detail.contains(name)
        {
            detail.push_str(&format!(" ({what} {name:?})"));
        }
        self
    }
}

/// For `map_err`: an IMAP command on `folder` failed, the folder named.
fn on_folder(folder: &str) -> impl FnOnce(ImapError) -> Failure + '_ {
    move |error| Failure::from(error).about("folder", folder)
}

impl From<ImapError> for Failure {
    fn from(error: ImapError) -> Self {
        let session_lost = !matches!(error, ImapError::Rejected { .. } | ImapError::NotOffered(_));
        Failure {
            kind: format!("imap:{}", error.kind()),
            session_lost,
            detail: Some(error.to_string()),
        }
    }
}

impl From<SmtpError> for Failure {
    fn from(error: SmtpError) -> Self {
        // SMTP sessions are per send; the IMAP session is unaffected.
        Failure {
            kind: format!("smtp:{}", error.kind()),
            session_lost: false,
            detail: Some(error.to_string()),
        }
    }
}

struct Session<S> {
    /// The profile's action parameters with the folders as this server
    /// names them ([`ServerFolders`](crate::ServerFolders)).
    params: Arc<ActionParams>,
    imap: ImapConnection<S>,
    inbox: Vec<Known>,
    highest_uid: u32,
    calendar_item: Option<u32>,
    can_idle: bool,
    /// The user idles after the action under way: its last IMAP command
    /// carries IDLE in the same write (see `last_command`).
    idle_next: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// The connection, for an action's last IMAP command.
    fn last_command(&mut self) -> &mut ImapConnection<S> {
        if std::mem::take(&mut self.idle_next) {
            self.imap.idle_after_next_command();
        }
        &mut self.imap
    }
}

/// A session just logged on.
enum Online<S> {
    Imap(Box<Session<S>>),
    Jmap(Box<jmap::JmapSession>),
}

/// The user's phase timeline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeline {
    pub(crate) logon_at: Instant,
    pub(crate) steady_start: Instant,
    pub(crate) steady_end: Instant,
    /// Until when the user stays on to notice deliveries it is still waiting for.
    pub(crate) drain_end: Instant,
}

pub(crate) struct User<C: Connector> {
    index: u32,
    address: String,
    shared: Arc<Shared<C>>,
    session: Option<Session<C::Stream>>,
    /// The JMAP session instead, in a run over JMAP.
    jmap: Option<Box<jmap::JmapSession>>,
    /// The calendar and POP3 clients, for the profiles that use them.
    groupware: GroupwareClients,
    failures_in_a_row: u32,
    /// The (action, error kind) pairs this user has sent an example of.
    examples_sent: Vec<(String, String)>,
    /// Sessions established so far: any after the first is a reconnect.
    logons: u32,
}

impl<C: Connector> User<C> {
    pub(crate) fn new(index: u32, shared: Arc<Shared<C>>) -> Self {
        // The run checked that the population covers every user of the plan.
        let address = shared.population.address(index).unwrap_or_default();
        let groupware = GroupwareClients::new(&shared, index, &address);
        User {
            index,
            address,
            shared,
            session: None,
            jmap: None,
            groupware,
            failures_in_a_row: 0,
            examples_sent: Vec::new(),
            logons: 0,
        }
    }

    /// Runs the user's whole day: log on at its slot, act on schedule until
    /// the steady phase ends or `stop` is raised, then log off.
    pub(crate) async fn run(mut self, timeline: Timeline, mut stop: watch::Receiver<bool>) {
        if !sleep_until(timeline.logon_at, &mut stop).await {
            return;
        }
        let plan = self.shared.plan.clone();
        let schedule = plan.schedule(self.index);
        // A closed loop (seed 000's scripted sends) starts each action when the
        // previous one ended, plus the pause; an open (Poisson) schedule keeps
        // to its own clock whatever the server does.
        let closed_loop = schedule.is_closed_loop();
        let mut schedule = schedule.peekable();
        let action_timeout = self.shared.action_timeout;
        // Logging on is retried until the first action is past saving (its
        // intended time plus the action timeout), not through the whole
        // steady phase: the actions that fall due meanwhile are counted as
        // they fall due, not all at once at the end.
        let first_due = schedule
            .peek()
            .map(|first| timeline.steady_start + first.at + action_timeout);
        let until = first_due.map_or(timeline.steady_end, |due| due.min(timeline.steady_end));
        self.ensure_session(&mut stop, until).await;
        self.note_first_logon(timeline.logon_at, *stop.borrow());
        let mut previous_end = timeline.steady_start;
        let mut completed = true;
        let mut schedule = schedule.peekable();
        while let Some(scheduled) = schedule.next() {
            // Whether the wait after this action will be long enough to idle.
            let idle_next = if closed_loop {
                plan.pause() >= MIN_IDLE
            } else {
                schedule
                    .peek()
                    .is_none_or(|next| next.at.saturating_sub(scheduled.at) >= MIN_IDLE)
            };
            let mut intended = timeline.steady_start + scheduled.at;
            if closed_loop {
                intended = intended.max(previous_end + plan.pause());
            }
            if intended >= timeline.steady_end || *stop.borrow() {
                completed = false;
                break;
            }
            self.wait_until(intended, &mut stop).await;
            if *stop.borrow() {
                completed = false;
                break;
            }
            if Instant::now().saturating_duration_since(intended) > action_timeout {
                // So far behind (a stalled server held the user up) that the
                // action could not even start within its timeout: it failed
                // without being tried, and the backlog does not turn into a
                // burst of load once the server answers again.
                self.shared
                    .events
                    .send(not_attempted(scheduled.kind, intended));
                self.reported(scheduled.seq);
                continue;
            }
            if !self.logged_on()
                && !self
                    .log_back_on(scheduled.kind, intended, timeline.steady_end, &mut stop)
                    .await
            {
                self.reported(scheduled.seq);
                continue;
            }
            if let Some(session) = self.session.as_mut() {
                session.idle_next = idle_next && session.can_idle;
            }
            let started = Instant::now();
            let outcome = match tokio::time::timeout(
                self.shared.action_timeout,
                self.act(scheduled.kind, scheduled.seq, scheduled.nth),
            )
            .await
            {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(failure)) => {
                    if failure.session_lost {
                        self.drop_session();
                    }
                    self.example(scheduled.kind.name(), &failure);
                    Outcome::Error(failure.kind)
                }
                Err(_) => {
                    // The session is mid-command and unusable: start over.
                    self.drop_session();
                    Outcome::Error("timeout".into())
                }
            };
            let finished = Instant::now();
            previous_end = finished;
            self.note_idle_commands();
            self.shared.events.send(Event::Action {
                kind: scheduled.kind,
                intended,
                started,
                finished,
                outcome,
            });
            self.reported(scheduled.seq);
        }
        if closed_loop && completed {
            self.shared.events.send(Event::Finished);
        }
        self.end_of_day(timeline, &mut stop).await;
    }

    /// In a measured morning (`--window morning`) the first logon is itself
    /// measured: from the user's logon slot until its session was ready, or
    /// until it gave up (a failure). A run stopped meanwhile measures nothing.
    fn note_first_logon(&self, slot: Instant, stopped: bool) {
        if self.shared.plan.window() != Window::Morning || stopped {
            return;
        }
        self.shared.events.send(Event::Logon {
            intended: slot,
            finished: Instant::now(),
            ok: self.logged_on(),
        });
    }

    /// Logs back on for an action due at `intended`, within its timeout and
    /// the steady phase. False when that failed: the action is then counted,
    /// as not tried (no time was left) or as failed (`not-logged-on`).
    async fn log_back_on(
        &mut self,
        kind: ActionKind,
        intended: Instant,
        steady_end: Instant,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let until = (intended + self.shared.action_timeout).min(steady_end);
        if Instant::now() >= until {
            // Held up past the end of the steady phase (a stalled command ran
            // into it): no time is left to log back on, so the action was not
            // tried, rather than refused.
            self.shared.events.send(not_attempted(kind, intended));
            return false;
        }
        self.ensure_session(stop, until).await;
        if self.logged_on() {
            return true;
        }
        // Could not log back on: the action failed, and it is counted.
        let now = Instant::now();
        self.shared.events.send(Event::Action {
            kind,
            intended,
            started: now,
            finished: now,
            outcome: Outcome::Error("not-logged-on".into()),
        });
        false
    }

    /// After the last action: online until the steady phase ends (mail
    /// keeps arriving), through the drain while mail is on its way to this
    /// user, then off.
    async fn end_of_day(&mut self, timeline: Timeline, stop: &mut watch::Receiver<bool>) {
        self.wait_until(timeline.steady_end, stop).await;
        // Stay on through the drain while mail sent to this user is still on
        // its way, so its delivery is noticed as it happens, not at reconciliation.
        while self.logged_on()
            && !*stop.borrow()
            && Instant::now() < timeline.drain_end
            && self.shared.delivery.is_waiting(self.index)
        {
            let next = (Instant::now() + Duration::from_secs(1)).min(timeline.drain_end);
            self.wait_until(next, stop).await;
        }
        if let Some(session) = self.session.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), session.imap.logout()).await;
            self.shared.events.send(Event::LoggedOn(-1));
        }
        self.drop_session();
        self.groupware.go_offline(&self.shared);
    }

    /// Logged on: holding its mail session (IMAP or JMAP), or running
    /// without one (see [`crate::groupware`]).
    fn logged_on(&self) -> bool {
        self.session.is_some() || self.jmap.is_some() || self.groupware.online()
    }

    /// Every action of the schedule is reported once: the run knows how far
    /// the user got, for when it cannot go on (an action in flight then is
    /// counted `not-attempted`).
    fn reported(&self, seq: u64) {
        self.shared.progress.reported(self.index, seq + 1);
    }

    fn drop_session(&mut self) {
        if self.session.take().is_some() || self.jmap.take().is_some() {
            self.shared.events.send(Event::LoggedOn(-1));
        }
    }

    /// A failure outside any action (idling, noticing mail): counted, and the
    /// session is dropped if it did not survive.
    fn background_failure(&mut self, failure: Failure) {
        self.example("session", &failure);
        self.shared.events.send(Event::SessionError(failure.kind));
        if failure.session_lost {
            self.drop_session();
        }
    }

    /// Sends what `failure` looked like, the first time this user meets
    /// its kind in `action`: the login sent, then the error's own text
    /// (the command and the server's words, once).
    fn example(&mut self, action: &str, failure: &Failure) {
        let Some(detail) = &failure.detail else {
            return;
        };
        let key = (action.to_owned(), failure.kind.clone());
        if self.examples_sent.contains(&key) || self.examples_sent.len() >= 16 {
            return;
        }
        self.examples_sent.push(key);
        let (login, _) = self.shared.target.login(self.index, &self.address);
        self.shared.events.send(Event::ErrorExample {
            action: action.to_owned(),
            kind: failure.kind.clone(),
            example: format!("as {login}: {detail}"),
        });
    }

    fn command<T>(&self, name: &'static str, timed: Timed<T>) -> T {
        self.shared.events.command(name, timed.elapsed);
        timed.value
    }

    /// Logs on, retrying with backoff until it works, `stop` is raised or `until` passes.
    async fn ensure_session(&mut self, stop: &mut watch::Receiver<bool>, until: Instant) {
        if !self.groupware.imap_needed() {
            // No mail session needed (the name says IMAP; over JMAP the
            // same actions need the JMAP session).
            self.groupware.go_online(&self.shared);
            return;
        }
        while !self.logged_on() && !*stop.borrow() && Instant::now() < until {
            let began = Instant::now();
            match tokio::time::timeout(self.shared.action_timeout, self.log_on_any()).await {
                Ok(Ok(online)) => {
                    if self.logons > 0 {
                        self.shared.events.count(Counter::Reconnects, 1);
                    }
                    self.logons += 1;
                    self.failures_in_a_row = 0;
                    match online {
                        Online::Imap(session) => self.session = Some(*session),
                        Online::Jmap(session) => self.jmap = Some(session),
                    }
                    // A measured morning's first logon is recorded once, from its
                    // slot (`note_first_logon`); every other logon is an attempt here.
                    let morning_first =
                        self.logons == 1 && self.shared.plan.window() == Window::Morning;
                    if !morning_first {
                        self.shared.events.send(Event::LogonSucceeded {
                            started: began,
                            finished: Instant::now(),
                        });
                    }
                    self.shared.events.send(Event::LoggedOn(1));
                }
                Ok(Err(failure)) => {
                    self.example("logon", &failure);
                    self.logon_failed(failure.kind, stop).await
                }
                Err(_) => self.logon_failed("timeout".into(), stop).await,
            }
        }
    }

    async fn logon_failed(&mut self, kind: String, stop: &mut watch::Receiver<bool>) {
        self.shared.events.send(Event::LogonFailed(kind));
        self.failures_in_a_row += 1;
        let backoff = Duration::from_millis(250 << self.failures_in_a_row.min(5)).min(MAX_BACKOFF);
        sleep_until(Instant::now() + backoff, stop).await;
    }

    /// Logs on over the run's protocol.
    async fn log_on_any(&self) -> Result<Online<C::Stream>, Failure> {
        match self.shared.protocol {
            MailProtocol::Imap => self.log_on().await.map(|s| Online::Imap(Box::new(s))),
            MailProtocol::Jmap => self.jmap_log_on().await.map(|s| Online::Jmap(Box::new(s))),
        }
    }

    async fn log_on(&self) -> Result<Session<C::Stream>, Failure> {
        let target = &self.shared.target;
        let connector = &self.shared.connector;
        let endpoint = &target.from_source(&target.imap, self.index);
        let connect_timeout = self.shared.connect_timeout;
        // The connector is not trusted to bound its waits: connecting, the
        // TLS handshake and the greeting get the connect timeout, STARTTLS
        // too, and every command of the session the action timeout.
        let connected = imap_connect_deadline(
            connect_timeout,
            connector.connect_imap(endpoint, &target.tls, connect_timeout),
        )
        .await?;
        let mut imap = self.command("imap.CONNECT", connected);
        imap.set_command_timeout(Some(self.shared.action_timeout));
        if endpoint.tls == TlsMode::StartTls {
            let done = imap_deadline(
                connect_timeout,
                "STARTTLS",
                connector.starttls_imap(&mut imap, endpoint, &target.tls),
            )
            .await?;
            self.command("imap.STARTTLS", done);
        }
        let (login, password) = target.login(self.index, &self.address);
        let done = imap.login(login, password).await?;
        self.command("imap.LOGIN", done);
        // Where the user's folders are (NAMESPACE, LIST with special-use
        // attributes): the profile's names as this server spells them.
        let events = &self.shared.events;
        let prefix = target.options.folder_prefix.as_deref();
        let (server, listing) = discover(&mut imap, prefix, |name, elapsed| {
            events.command(name, elapsed)
        })
        .await?;
        let params = server.params(self.shared.plan.params());
        let existing: Vec<String> = listing.into_iter().map(|e| e.name).collect();
        // Folders a run needs: create any that `init` has not (idempotent).
        let mut needed: Vec<&str> =
            vec![&params.trash, &params.sent_folder, &params.calendar_folder];
        needed.extend(params.move_targets.iter().map(String::as_str));
        for folder in needed {
            if !listed(&existing, folder) {
                let done = imap.create(folder).await.map_err(on_folder(folder))?;
                self.command("imap.CREATE", done);
            }
        }
        let selected = imap
            .select(&params.inbox)
            .await
            .map_err(on_folder(&params.inbox))?;
        let info = self.command("imap.SELECT", selected);
        let mut inbox = Vec::new();
        if info.exists > 0 {
            // Envelopes too: mail that arrived while this user was offline is
            // noticed now, before an action can move it out of the Inbox.
            let fetched = imap
                .fetch(
                    "1:*",
                    &[FetchItem::Uid, FetchItem::Flags, FetchItem::Envelope],
                    false,
                )
                .await
                .map_err(on_folder(&params.inbox))?;
            let fetched = self.command("imap.FETCH", fetched);
            let seen_at = Instant::now();
            for message in &fetched {
                self.notice(message, seen_at);
            }
            inbox = fetched.iter().filter_map(known).collect();
        }
        let highest_uid = inbox.iter().map(|k| k.uid).max().unwrap_or(0);
        let can_idle = imap.capabilities().has("IDLE");
        Ok(Session {
            params: Arc::new(params),
            imap,
            inbox,
            highest_uid,
            calendar_item: None,
            can_idle,
            idle_next: false,
        })
    }

    /// Waits for `due`, idling on the Inbox so that arriving mail is noticed
    /// (and its delivery latency recorded) as an online client would.
    async fn wait_until(&mut self, due: Instant, stop: &mut watch::Receiver<bool>) {
        if self.jmap.is_some() {
            return self.jmap_wait_until(due, stop).await;
        }
        loop {
            // Mail announced while a command ran (an untagged EXISTS) is fetched
            // now: IDLE would not announce it again.
            let unseen_arrivals = self.session.as_ref().is_some_and(|s| {
                s.imap
                    .mailbox()
                    .is_some_and(|m| m.exists as usize > s.inbox.len())
            });
            if unseen_arrivals && let Err(failure) = self.fetch_new_mail().await {
                self.background_failure(failure);
            }
            self.note_idle_commands();
            let now = Instant::now();
            if now >= due || *stop.borrow() {
                return;
            }
            // An IDLE sent behind the last action is taken up whatever the wait.
            let idle = self.session.as_ref().is_some_and(|s| {
                s.can_idle && (due - now >= MIN_IDLE || s.imap.idle_in_progress())
            });
            if !idle {
                sleep_until(due, stop).await;
                return;
            }
            match self.idle_until(due, stop).await {
                // New mail: the next turn of the loop fetches it.
                Ok(true) => {}
                Ok(false) => return,
                Err(failure) => {
                    self.background_failure(failure);
                    sleep_until(due, stop).await;
                    return;
                }
            }
        }
    }

    /// IDLEs until `due`, `stop`, or new mail; returns whether mail arrived.
    async fn idle_until(
        &mut self,
        due: Instant,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<bool, Failure> {
        let Some(session) = self.session.as_mut() else {
            return Ok(false);
        };
        // Sends IDLE, or takes up the one sent behind the last action.
        session.imap.idle_start().await?;
        self.note_idle_commands();
        let Some(session) = self.session.as_mut() else {
            return Ok(false);
        };
        let mut new_mail = false;
        loop {
            let now = Instant::now();
            if now >= due || new_mail {
                break;
            }
            tokio::select! {
                // idle_wait is cancel-safe: losing the race to `stop` loses no update.
                waited = session.imap.idle_wait(due - now) => match waited? {
                    Idle::Updates(updates) => {
                        new_mail = updates.iter().any(|u| matches!(u, MailboxUpdate::Exists(_)));
                    }
                    Idle::TimedOut => break,
                },
                _ = stop.changed() => break,
            }
        }
        // IDLE goes on: the next command ends it, with DONE in its write
        // (the next action, or the fetch of new mail), and a next wait
        // carries on with it.
        Ok(new_mail)
    }

    /// Counts the IDLE and DONE that went out with the last IMAP commands.
    /// They are commands on the wire like any other, so the cost per command
    /// (docs/PERFORMANCE.md) counts them too.
    fn note_idle_commands(&mut self) {
        let Some(session) = self.session.as_mut() else {
            return;
        };
        if let Some(elapsed) = session.imap.take_idle_start_time() {
            self.shared.events.command("imap.IDLE", elapsed);
        }
        if let Some(elapsed) = session.imap.take_idle_done_time() {
            self.shared.events.command("imap.DONE", elapsed);
        }
    }

    /// Fetches envelopes of messages that arrived since the last look, and
    /// reports tracked ones as delivered.
    async fn fetch_new_mail(&mut self) -> Result<(), Failure> {
        let Some(session) = self.session.as_mut() else {
            return Ok(());
        };
        let set = format!("{}:*", session.highest_uid + 1);
        let fetched = session
            .imap
            .fetch(
                &set,
                &[FetchItem::Uid, FetchItem::Flags, FetchItem::Envelope],
                true,
            )
            .await?;
        self.shared
            .events
            .command("imap.UID FETCH", fetched.elapsed);
        let seen_at = Instant::now();
        let session = self
            .session
            .as_mut()
            .ok_or(Failure::bare("no-session", true))?;
        merge(session, &fetched.value);
        let mut seen = fetched.value;
        // Still out of step with the server (something expunged or added that
        // we did not see): list the Inbox again rather than fetch in a loop,
        // with envelopes, so that no arrival joins the known Inbox unnoticed
        // (and is then moved away before anyone saw it).
        if session
            .imap
            .mailbox()
            .is_some_and(|m| m.exists as usize != session.inbox.len())
        {
            let all = session
                .imap
                .fetch(
                    "1:*",
                    &[FetchItem::Uid, FetchItem::Flags, FetchItem::Envelope],
                    false,
                )
                .await?;
            self.shared.events.command("imap.FETCH", all.elapsed);
            session.inbox = all.value.iter().filter_map(known).collect();
            session.highest_uid = session
                .inbox
                .iter()
                .map(|k| k.uid)
                .max()
                .unwrap_or(0)
                .max(session.highest_uid);
            seen.extend(all.value);
        }
        for message in &seen {
            self.notice(message, seen_at);
        }
        Ok(())
    }

    fn notice(&self, message: &FetchedMessage, at: Instant) {
        let id = message
            .envelope
            .as_ref()
            .and_then(|e| e.message_id.as_deref());
        if let Some(id) = id {
            self.shared
                .events
                .noticed(self.shared.delivery.notice(id, self.index, at));
        }
    }

    async fn act(&mut self, kind: ActionKind, seq: u64, nth: u64) -> Result<Outcome, Failure> {
        let groupware = self
            .groupware
            .act(&self.shared, self.index, &self.address, kind, seq, nth);
        if let Some(done) = groupware.await {
            return done;
        }
        if self.jmap.is_some() {
            return self.jmap_act(kind, seq, nth).await;
        }
        match kind {
            ActionKind::CheckInbox => self.check_inbox().await,
            ActionKind::Read => self.read(seq).await,
            ActionKind::Move => self.move_message(seq, false).await,
            ActionKind::Delete => self.move_message(seq, true).await,
            ActionKind::Send => self.send(nth).await,
            ActionKind::UpdateCalendar => self.update_calendar(nth).await,
            // Handled by the groupware clients above.
            ActionKind::PollCalendar
            | ActionKind::CreateEvent
            | ActionKind::ChangeEvent
            | ActionKind::DownloadMail => Ok(Outcome::Skipped("not_groupware")),
        }
    }

    /// The action parameters of the session's server (its folder names).
    fn session_params(&self) -> Result<Arc<ActionParams>, Failure> {
        self.session
            .as_ref()
            .map(|s| s.params.clone())
            .ok_or(Failure::bare("no-session", true))
    }

    fn session(&mut self) -> Result<&mut Session<C::Stream>, Failure> {
        self.session
            .as_mut()
            .ok_or(Failure::bare("no-session", true))
    }

    async fn check_inbox(&mut self) -> Result<Outcome, Failure> {
        let inbox = self.session_params()?.inbox.clone();
        let page = self.shared.plan.params().page_size.max(1);
        let events = self.shared.events.clone();
        let session = self.session()?;
        if session
            .imap
            .mailbox()
            .is_some_and(|m| m.name == inbox && !m.read_only)
        {
            // Open already (the user idles on it), and its state is current
            // from the server's updates: no SELECT. The newest page is asked
            // by UID, which goes out behind IDLE's DONE in the same write.
            events.count(Counter::FolderOpens, 1);
            let exists = session.imap.mailbox().map_or(0, |m| m.exists);
            let Some(set) = newest_page(&session.inbox, page, exists) else {
                // Empty: nothing to list, but the client still asks the
                // server for news (and ends IDLE, as any check does).
                let polled = session
                    .last_command()
                    .noop()
                    .await
                    .map_err(on_folder(&inbox))?;
                events.command("imap.NOOP", polled.elapsed);
                return Ok(Outcome::Ok);
            };
            let items = [FetchItem::Uid, FetchItem::Flags, FetchItem::Envelope];
            let fetched = session
                .last_command()
                .fetch(&set, &items, true)
                .await
                .map_err(on_folder(&inbox))?;
            events.command("imap.UID FETCH", fetched.elapsed);
            let seen_at = Instant::now();
            merge(session, &fetched.value);
            for message in &fetched.value {
                self.notice(message, seen_at);
            }
            return Ok(Outcome::Ok);
        }
        let selected = session
            .imap
            .select(&inbox)
            .await
            .map_err(on_folder(&inbox))?;
        events.command("imap.SELECT", selected.elapsed);
        events.count(Counter::FolderOpens, 1);
        let exists = selected.value.exists;
        if exists == 0 {
            return Ok(Outcome::Ok);
        }
        let first = exists.saturating_sub(page - 1).max(1);
        let fetched = session
            .last_command()
            .fetch(
                &format!("{first}:{exists}"),
                &[FetchItem::Uid, FetchItem::Flags, FetchItem::Envelope],
                false,
            )
            .await
            .map_err(on_folder(&inbox))?;
        events.command("imap.FETCH", fetched.elapsed);
        let seen_at = Instant::now();
        merge(session, &fetched.value);
        for message in &fetched.value {
            self.notice(message, seen_at);
        }
        Ok(Outcome::Ok)
    }

    /// Picks a message of the Inbox: unread ones first when the profile says so.
    fn pick_message(&self, seq: u64, unread_first: bool) -> Option<usize> {
        let session = self.session.as_ref()?;
        let unread: Vec<usize> = (0..session.inbox.len())
            .filter(|&i| !session.inbox[i].seen)
            .collect();
        let candidates: Vec<usize> = if unread_first && !unread.is_empty() {
            unread
        } else {
            (0..session.inbox.len()).collect()
        };
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[self.shared.plan.pick(self.index, seq, candidates.len())])
    }

    async fn read(&mut self, seq: u64) -> Result<Outcome, Failure> {
        let unread_first = self.shared.plan.params().unread_first;
        let events = self.shared.events.clone();
        let picked = self.pick_message(seq, unread_first);
        let Some(index) = picked else {
            return Ok(Outcome::Skipped("empty_inbox"));
        };
        let session = self.session()?;
        let inbox = session.params.inbox.clone();
        let uid = session.inbox[index].uid;
        // BODY[] (not PEEK): opening a message marks it read, as a client does.
        let body = [FetchItem::Body {
            section: BodySection::Full,
            peek: false,
        }];
        let fetched = session
            .last_command()
            .fetch(&uid.to_string(), &body, true)
            .await
            .map_err(on_folder(&inbox))?;
        events.command("imap.UID FETCH", fetched.elapsed);
        events.count(Counter::MessageOpens, 1);
        if fetched.value.is_empty() {
            // Gone (expunged elsewhere): forget it.
            session.inbox.swap_remove(index);
            return Ok(Outcome::Error("imap:message-gone".into()));
        }
        session.inbox[index].seen = true;
        Ok(Outcome::Ok)
    }

    /// Where a move or delete takes its message: Trash for a delete, else one
    /// of the move targets by a second, independent pick (`seq` is shared
    /// with the message pick); `None` when the profile has no move targets.
    /// The same choice over IMAP and JMAP.
    fn move_folder(&self, params: &ActionParams, seq: u64, delete: bool) -> Option<String> {
        if delete {
            return Some(params.trash.clone());
        }
        if params.move_targets.is_empty() {
            return None;
        }
        let choice = self
            .shared
            .plan
            .pick(self.index, seq ^ (1 << 63), params.move_targets.len());
        Some(params.move_targets[choice].clone())
    }

    async fn move_message(&mut self, seq: u64, delete: bool) -> Result<Outcome, Failure> {
        let params = self.session_params()?;
        let events = self.shared.events.clone();
        let picked = self.pick_message(seq, false);
        let Some(index) = picked else {
            return Ok(Outcome::Skipped("empty_inbox"));
        };
        let Some(folder) = self.move_folder(&params, seq, delete) else {
            return Ok(Outcome::Skipped("no_folders"));
        };
        let session = self.session()?;
        let uid = session.inbox[index].uid;
        let moved = session
            .last_command()
            .move_messages(&uid.to_string(), &folder, true)
            .await
            .map_err(on_folder(&folder))?;
        // Recorded under the commands actually sent: a server without MOVE
        // got COPY, STORE and EXPUNGE (RFC 6851's fallback).
        let sent = if session.imap.capabilities().has("MOVE") {
            "imap.UID MOVE"
        } else {
            "imap.UID COPY+STORE+EXPUNGE"
        };
        events.command(sent, moved.elapsed);
        session.inbox.swap_remove(index);
        Ok(Outcome::Ok)
    }

    /// The `nth` message this user sends: its recipients (distribution lists
    /// expanded by the client, as Outlook expands a personal list: the
    /// envelope names every member, and every member is a member of the
    /// population, checked before anything is sent), and its text.
    fn compose(&self, nth: u64) -> Result<Outgoing, Failure> {
        let shared = &self.shared;
        let plan = &shared.plan;
        let choice = plan.send_choice(self.index, nth);
        let recipients = plan.delivered_to(&choice);
        let envelope = self.envelope(&recipients)?;
        let mut to: Vec<String> = choice
            .direct
            .iter()
            .filter_map(|&u| shared.population.address(u).ok())
            .collect();
        if let Some(list) = choice.list {
            to.push(plan.list_address(list));
        }
        let date = rfc5322(chrono::Utc::now());
        let message = shared.generator.generate(&MessageSpec {
            run_id: &shared.run_id,
            id: &choice.id,
            from: &self.address,
            to: &to,
            date: &date,
            kind: &plan.mix()[choice.mix],
        });
        let message_id = header(&message, "Message-ID").unwrap_or_default();
        Ok(Outgoing {
            recipients,
            envelope,
            message,
            message_id,
        })
    }

    /// The server accepted `message_id` for `accepted`: into the delivery
    /// books and the counters.
    fn submitted(&self, message_id: &str, accepted: &[u32]) {
        let shared = &self.shared;
        shared
            .delivery
            .submitted(message_id, accepted, Instant::now());
        shared.events.count(Counter::MessagesSubmitted, 1);
        shared
            .events
            .count(Counter::RecipientsSubmitted, accepted.len() as u64);
    }

    async fn send(&mut self, nth: u64) -> Result<Outcome, Failure> {
        let shared = self.shared.clone();
        let plan = &shared.plan;
        let Outgoing {
            recipients,
            envelope,
            message,
            message_id,
        } = self.compose(nth)?;

        let target = &shared.target;
        let endpoint = &target.from_source(&target.smtp, self.index);
        let connected = smtp_connect_deadline(
            shared.connect_timeout,
            shared.connector.connect_smtp(
                endpoint,
                Flavor::Smtp,
                &target.tls,
                shared.connect_timeout,
            ),
        )
        .await?;
        let mut smtp = self.command("smtp.CONNECT", connected);
        let done = smtp.ehlo(&shared.client_name).await?;
        self.command("smtp.EHLO", done);
        if endpoint.tls == TlsMode::StartTls {
            let done = smtp_deadline(
                shared.connect_timeout,
                "STARTTLS",
                shared
                    .connector
                    .starttls_smtp(&mut smtp, endpoint, &target.tls),
            )
            .await?;
            self.command("smtp.STARTTLS", done);
            let done = smtp.ehlo(&shared.client_name).await?;
            self.command("smtp.EHLO", done);
        }
        let (login, password) = target.login(self.index, &self.address);
        let encrypted = endpoint.tls != TlsMode::None;
        let policy = target.options.smtp_auth;
        if let Some(done) = smtp
            .authenticate_as(policy, encrypted, login, password)
            .await?
        {
            self.command("smtp.AUTH", done);
        }
        let sent = smtp
            .send_mail(&self.address, &envelope, &message)
            .await
            .map_err(|error| transaction_failure(error, &self.address, &envelope))?;
        self.command("smtp.TRANSACTION", sent.clone().map(|_| ()));
        let outcome = sent.value;
        let accepted: Vec<u32> = recipients
            .iter()
            .zip(&outcome.recipients)
            .filter(|(_, r)| r.delivered())
            .map(|(&u, _)| u)
            .collect();
        let refused = recipients.len() - accepted.len();
        if let Some(first) = outcome.recipients.iter().find(|r| !r.delivered()) {
            self.example("send", &refusal(first));
        }
        if !accepted.is_empty() {
            self.submitted(&message_id, &accepted);
        }
        if refused > 0 {
            shared
                .events
                .count(Counter::RecipientsRefused, refused as u64);
        }
        if let Ok(quit) = smtp.quit().await {
            self.command("smtp.QUIT", quit);
        }

        if plan.params().save_copy {
            let sent_folder = self.session_params()?.sent_folder.clone();
            let session = self.session()?;
            let appended = session
                .last_command()
                .append(&sent_folder, &["\\Seen"], None, &message)
                .await
                .map_err(on_folder(&sent_folder))?;
            shared.events.command("imap.APPEND", appended.elapsed);
        }
        if refused > 0 {
            return Ok(Outcome::Error("smtp:recipient-refused".into()));
        }
        Ok(Outcome::Ok)
    }

    /// The addresses of `recipients`, each checked against the population
    /// before any SMTP transaction starts. One outside it is a bug: the run
    /// is halted rather than send to anyone else.
    fn envelope(&self, recipients: &[u32]) -> Result<Vec<String>, Failure> {
        let population = &self.shared.population;
        recipients
            .iter()
            .map(|&u| population.address(u))
            .collect::<Result<Vec<String>, _>>()
            .and_then(|envelope| population.admit(&envelope).map(|()| envelope))
            .map_err(|error| {
                self.shared.halt.raise(error);
                Failure::bare("outside-population", false)
            })
    }

    async fn update_calendar(&mut self, nth: u64) -> Result<Outcome, Failure> {
        let params = self.session_params()?;
        let events = self.shared.events.clone();
        let item = calendar_item(&self.shared.run_id, self.index, nth, &self.address);
        let calendar = &params.calendar_folder;
        let session = self.session()?;
        let appended = session
            .imap
            .append(calendar, &[], None, &item)
            .await
            .map_err(on_folder(calendar))?;
        events.command("imap.APPEND", appended.elapsed);
        let previous = session.calendar_item.take();
        session.calendar_item = appended.value.map(|a| a.uid);
        // Every other update replaces the previous item instead of adding one.
        if nth % 2 == 1
            && let Some(old) = previous
        {
            let selected = session
                .imap
                .select(calendar)
                .await
                .map_err(on_folder(calendar))?;
            events.command("imap.SELECT", selected.elapsed);
            let stored = session
                .imap
                .store(&old.to_string(), StoreMode::Add, &["\\Deleted"], true, true)
                .await
                .map_err(on_folder(calendar))?;
            events.command("imap.UID STORE", stored.elapsed);
            let expunged = session
                .imap
                .uid_expunge(&old.to_string())
                .await
                .map_err(on_folder(calendar))?;
            events.command("imap.UID EXPUNGE", expunged.elapsed);
            let selected = session
                .imap
                .select(&params.inbox)
                .await
                .map_err(on_folder(&params.inbox))?;
            events.command("imap.SELECT", selected.elapsed);
        }
        Ok(Outcome::Ok)
    }
}

fn known(message: &FetchedMessage) -> Option<Known> {
    Some(Known {
        uid: message.uid?,
        seen: message
            .flags
            .as_ref()
            .is_some_and(|flags| flags.iter().any(|f| f.eq_ignore_ascii_case("\\Seen"))),
    })
}

/// The UID set of the newest `page` messages of an Inbox whose known
/// messages are `known` and which holds `exists` now: from the oldest of the
/// newest `page` known UIDs to the end, so that arrivals not yet known are in
/// it too. `None` for an empty Inbox.
fn newest_page(known: &[Known], page: u32, exists: u32) -> Option<String> {
    if known.is_empty() && exists == 0 {
        return None;
    }
    let page = page.max(1) as usize;
    if known.len() <= page {
        return Some("1:*".to_owned());
    }
    let mut uids: Vec<u32> = known.iter().map(|k| k.uid).collect();
    let (_, oldest, _) = uids.select_nth_unstable_by(page - 1, |a, b| b.cmp(a));
    Some(format!("{oldest}:*"))
}

/// Adds fetched messages to the known Inbox, updating ones already known.
fn merge<S>(session: &mut Session<S>, fetched: &[FetchedMessage]) {
    for message in fetched {
        let Some(new) = known(message) else { continue };
        match session.inbox.iter_mut().find(|k| k.uid == new.uid) {
            Some(existing) => existing.seen = new.seen,
            None => session.inbox.push(new),
        }
        session.highest_uid = session.highest_uid.max(new.uid);
    }
}

/// Sleeps until `deadline`; false if `stop` was raised first.
pub(crate) async fn sleep_until(deadline: Instant, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return false;
    }
    tokio::select! {
        _ = tokio::time::sleep_until(deadline) => true,
        _ = stop.changed() => false,
    }
}

/// An RFC 5322 date in UTC, as a client writes into a message's `Date:`
/// header (`Sat, 21 Nov 2026 09:00:00 +0000`).
pub(crate) fn rfc5322(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// A failed mail transaction, with the address it was about: the sender
/// when MAIL was refused, the recipients otherwise.
fn transaction_failure(error: SmtpError, sender: &str, envelope: &[String]) -> Failure {
    let mail_refused = matches!(
        error,
        SmtpError::UnexpectedReply {
            command: "MAIL",
            ..
        }
    );
    let failure = Failure::from(error);
    match envelope {
        _ if mail_refused => failure.about("sender", sender),
        [only] => failure.about("recipient", only),
        [first, rest @ ..] => {
            failure.about("recipients", &format!("{first} and {} more", rest.len()))
        }
        [] => failure,
    }
}

/// A recipient the server did not take the message for, as the user would
/// read it: refused at RCPT, or after the message (LMTP's reply per recipient).
fn refusal(recipient: &peakhour_smtp::RecipientOutcome) -> Failure {
    let detail = match &recipient.delivery {
        _ if !recipient.accepted() => format!("RCPT refused: {}", recipient.rcpt.value),
        Some(reply) => format!("DATA refused: {}", reply.value),
        None => "no message sent after RCPT".to_owned(),
    };
    Failure {
        kind: "smtp:recipient-refused".into(),
        session_lost: false,
        detail: Some(detail),
    }
    .about("recipient", &recipient.address)
}

/// A message composed for sending (see `User::compose`).
struct Outgoing {
    /// The users it is for (lists expanded).
    recipients: Vec<u32>,
    /// Their addresses, for the envelope.
    envelope: Vec<String>,
    /// The message as sent.
    message: Vec<u8>,
    /// Its Message-ID, which delivery tracking follows.
    message_id: String,
}

/// The value of the first header `name` in a message.
pub(crate) fn header(message: &[u8], name: &str) -> Option<String> {
    let end = message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(message.len());
    let head = std::str::from_utf8(&message[..end]).ok()?;
    head.split("\r\n").find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}

/// A calendar item as a client that stores calendars in IMAP writes it.
fn calendar_item(run_id: &str, user: u32, nth: u64, address: &str) -> Vec<u8> {
    let date = rfc5322(chrono::Utc::now());
    let uid = format!("{run_id}-u{user}-e{}", nth / 2);
    format!(
        "From: {address}\r\nTo: {address}\r\nSubject: Meeting {nth}\r\nDate: {date}\r\n\
         Message-ID: <cal.{uid}.{nth}@peakhour.invalid>\r\nX-Peakhour-Run: {run_id}\r\n\
         MIME-Version: 1.0\r\nContent-Type: text/calendar; charset=utf-8; method=REQUEST\r\n\r\n\
         BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//peakhour//EN\r\nBEGIN:VEVENT\r\n\
         UID:{uid}\r\nSEQUENCE:{seq}\r\nDTSTAMP:20260101T090000Z\r\nDTSTART:20260102T{hour:02}0000Z\r\n\
         DTEND:20260102T{end:02}0000Z\r\nSUMMARY:Meeting {nth}\r\nORGANIZER:mailto:{address}\r\n\
         END:VEVENT\r\nEND:VCALENDAR\r\n",
        seq = nth % 2,
        hour = 8 + nth % 8,
        end = 9 + nth % 8,
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_headers_case_insensitively_and_only_in_the_head() {
        let message = b"Subject: x\r\nmessage-id: <a@b>\r\n\r\nMessage-ID: <body@b>\r\n";
        assert_eq!(header(message, "Message-ID").as_deref(), Some("<a@b>"));
        assert_eq!(header(message, "From"), None);
    }

    #[test]
    fn the_newest_page_runs_from_its_oldest_known_uid_to_the_end() {
        let known = |uids: &[u32]| -> Vec<Known> {
            uids.iter().map(|&uid| Known { uid, seen: false }).collect()
        };
        assert_eq!(newest_page(&[], 50, 0), None);
        // Nothing known yet, but the server says something is there.
        assert_eq!(newest_page(&[], 50, 3).as_deref(), Some("1:*"));
        assert_eq!(
            newest_page(&known(&[4, 9, 2]), 3, 3).as_deref(),
            Some("1:*")
        );
        assert_eq!(
            newest_page(&known(&[4, 9, 2, 17, 11]), 3, 5).as_deref(),
            Some("9:*")
        );
        assert_eq!(
            newest_page(&known(&[4, 9, 2]), 1, 3).as_deref(),
            Some("9:*")
        );
    }

    #[test]
    fn dates_are_rfc5322_in_utc() {
        let at = |secs| chrono::DateTime::from_timestamp(secs, 0).unwrap();
        assert_eq!(rfc5322(at(0)), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(
            rfc5322(at(1_795_251_600)),
            "Sat, 21 Nov 2026 09:00:00 +0000"
        );
        assert_eq!(rfc5322(at(951_782_400)), "Tue, 29 Feb 2000 00:00:00 +0000");
    }
}
