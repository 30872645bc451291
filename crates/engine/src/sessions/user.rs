//! One simulated user's day: log on at its slot, keep its mail session (IMAP
//! or JMAP) and its other clients, act on schedule with the session the
//! routing table ([`route`]) names for each action, wait between actions
//! (idling, so new mail is noticed as it arrives), then log off. It knows the
//! phases only as the times of its [`Timeline`]; the sessions know none.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use peakhour_workload::{ActionKind, Window};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connector::Connector;
use crate::core::not_attempted;
use crate::events::{Counter, Event, Outcome};
use crate::run::MailProtocol;
use crate::sessions::groupware::GroupwareClients;
use crate::sessions::imap::{ImapSession, MIN_IDLE};
use crate::sessions::jmap;
use crate::sessions::smtp::Submission;
use crate::sessions::{
    Action, Actor, Failure, Protocol, Shared, Timeline, UserSession, no_session, route, sleep_until,
};

/// The longest pause between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// The user's [`Actor`], borrowing only the fields it needs, so that a
/// session field can be borrowed beside it.
macro_rules! actor {
    ($user:expr) => {
        Actor {
            shared: &$user.shared,
            index: $user.index,
            address: &$user.address,
            examples_sent: &$user.examples_sent,
        }
    };
}
pub(crate) use actor;

/// A session just logged on.
enum Online<S> {
    Imap(Box<ImapSession<S>>),
    Jmap(Box<jmap::JmapSession>),
}

/// One simulated user.
pub(crate) struct User<C: Connector> {
    pub(crate) index: u32,
    pub(crate) address: String,
    pub(crate) shared: Arc<Shared<C>>,
    pub(crate) session: Option<ImapSession<C::Stream>>,
    /// The JMAP session instead, in a run over JMAP.
    pub(crate) jmap: Option<Box<jmap::JmapSession>>,
    /// The calendar and POP3 clients, for the profiles that use them.
    groupware: GroupwareClients,
    failures_in_a_row: u32,
    /// The (action, error kind) pairs this user has sent an example of.
    pub(crate) examples_sent: Mutex<Vec<(String, String)>>,
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
            examples_sent: Mutex::new(Vec::new()),
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
        let finite = schedule.is_finite();
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
            // state checks: the schedule stands still while the user is held at checkpoints
            let shift = self.checkpoint_shift();
            let mut intended = timeline.steady_start + scheduled.at + shift;
            if closed_loop {
                intended = intended.max(previous_end + plan.pause());
            }
            if intended >= timeline.steady_end || *stop.borrow() {
                completed = false;
                break;
            }
            self.wait_until(intended, &mut stop).await;
            intended += self.checkpoint_shift() - shift; // state checks: held during the wait
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
                    self.actor().example(scheduled.kind.name(), &failure);
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
            self.feed_state_checks(); // state checks
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
        if finite && completed {
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
    /// without one (see [`crate::sessions::groupware`]).
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
    pub(crate) fn background_failure(&mut self, failure: Failure) {
        self.actor().example("session", &failure);
        self.shared.events.send(Event::SessionError(failure.kind));
        if failure.session_lost {
            self.drop_session();
        }
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
                    self.actor().example("logon", &failure);
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
            MailProtocol::Imap => self
                .actor()
                .imap_log_on(self.logons + 1)
                .await
                .map(|s| Online::Imap(Box::new(s))),
            MailProtocol::Jmap => {
                (self.actor().jmap_log_on(self.logons + 1).await).map(|s| Online::Jmap(Box::new(s)))
            }
        }
    }

    /// Who this user is, as its sessions see it.
    fn actor(&self) -> Actor<'_, C> {
        actor!(self)
    }

    /// state checks: hands what the session's wire carried to its model.
    fn feed_state_checks(&mut self) {
        if let Some(s) = self.session.as_mut() {
            crate::state_checks::feed(s.state.as_mut(), &mut s.imap);
        }
        if let Some(jmap) = self.jmap.as_mut() {
            jmap.feed_state_checks();
        }
    }

    /// state checks: how long this user has been held at checkpoints.
    fn checkpoint_shift(&self) -> Duration {
        (self.shared.state_checks.as_ref()).map_or(Duration::ZERO, |h| h.shift(self.index))
    }

    /// state checks: holds the checkpoint asked for, if any; how long it took.
    async fn hold_checkpoint(&mut self, stop: &mut watch::Receiver<bool>) -> Duration {
        let Some(s) = self.session.as_mut() else {
            return Duration::ZERO;
        };
        let Some(checker) = s.state.as_mut() else {
            return Duration::ZERO;
        };
        let (pause, failed) = crate::state_checks::hold(checker, &mut s.imap, stop).await;
        if let Some(error) = failed {
            self.background_failure(error.into());
        }
        pause
    }

    /// Counts the IDLE and DONE that went out with the last IMAP commands.
    fn note_idle_commands(&mut self) {
        if let Some(session) = self.session.as_mut() {
            session.note_idle_commands(&actor!(self));
        }
    }

    /// Waits for `due`, idling on the Inbox so that arriving mail is noticed
    /// (and its delivery latency recorded) as an online client would.
    async fn wait_until(&mut self, mut due: Instant, stop: &mut watch::Receiver<bool>) {
        if self.jmap.is_some() {
            return self.jmap_wait_until(due, stop).await;
        }
        // A user imitating a recorded client waits as that client does.
        if let Some(session) = self.session.as_mut()
            && session.client.is_some()
        {
            if let Err(failure) = session.client_wait(&actor!(self), due, stop).await {
                self.background_failure(failure);
                sleep_until(due, stop).await;
            }
            return;
        }
        loop {
            due += self.hold_checkpoint(stop).await; // state checks
            // Mail announced while a command ran (an untagged EXISTS) is fetched
            // now: IDLE would not announce it again.
            let unseen_arrivals = self.session.as_ref().is_some_and(|s| {
                s.imap
                    .mailbox()
                    .is_some_and(|m| m.exists as usize > s.inbox.len())
            });
            if unseen_arrivals
                && let Some(session) = self.session.as_mut()
                && let Err(failure) = session.fetch_new_mail(&actor!(self)).await
            {
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
            let Some(session) = self.session.as_mut() else {
                return;
            };
            match session.idle_until(&actor!(self), due, stop).await {
                // New mail: the next turn of the loop fetches it.
                Ok(true) => {}
                // state checks: a checkpoint ends the IDLE early; the next turn holds it
                Ok(false) => {}
                Err(failure) => {
                    self.background_failure(failure);
                    sleep_until(due, stop).await;
                    return;
                }
            }
        }
    }

    /// Performs `kind` with the session the routing table names for it.
    async fn act(&mut self, kind: ActionKind, seq: u64, nth: u64) -> Result<Outcome, Failure> {
        let action = Action { kind, seq, nth };
        let caldav = self.groupware.calendar.is_some();
        let actor = actor!(self);
        match route(kind, self.jmap.is_some(), caldav) {
            Protocol::Pop3 => match self.groupware.pop3.as_mut() {
                Some(pop3) => pop3.act(&actor, &action).await,
                None => Ok(Outcome::Error("pop3:no-server".into())),
            },
            Protocol::CalDav => match self.groupware.calendar.as_mut() {
                Some(calendar) => calendar.act(&actor, &action).await,
                None => Ok(Outcome::Error("caldav:no-server".into())),
            },
            Protocol::Jmap => match self.jmap.as_mut() {
                Some(jmap) => jmap.act(&actor, &action).await,
                None => Err(no_session()),
            },
            Protocol::Imap => match self.session.as_mut() {
                Some(session) => session.act(&actor, &action).await,
                // Nothing known to read without a session.
                None if kind == ActionKind::Read => Ok(Outcome::Skipped("empty_inbox")),
                None => Err(no_session()),
            },
            Protocol::Smtp => {
                let sent = Submission.act(&actor, &action).await?;
                if self.shared.plan.params().save_copy {
                    let session = self.session.as_mut().ok_or_else(no_session)?;
                    session.save_copy(&actor, &sent.message).await?;
                }
                Ok(sent.outcome)
            }
        }
    }
}
