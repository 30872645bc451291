//! A simulated user's JMAP session (`run --protocol jmap`): the same
//! profile's actions as over IMAP, as a JMAP client makes them.
//!
//! | action | JMAP |
//! |---|---|
//! | log on | session discovery, `Mailbox/get`, `Identity/get`, `Email/query` + `Email/get` of the Inbox; push (EventSource) on a second connection |
//! | check_inbox | `Email/query` of the Inbox's newest page, `Email/get` of ids not yet known |
//! | read | `Email/get` with the text body, `Email/set` of `$seen` |
//! | move, delete | `Email/set` of `mailboxIds` (delete moves to Trash, as over IMAP) |
//! | send | upload, then `Email/import` into Sent with `EmailSubmission/set` (one request) |
//! | update_calendar | upload, `Email/import` into the calendar folder; every other one destroys the previous item (`Email/set`) |
//!
//! Every request is recorded as `jmap.<method>` (`jmap.upload`,
//! `jmap.session`); new mail is noticed by push (`StateChange` of `Email`),
//! then fetched, as an online client does. Without push (a server that
//! answers the EventSource URL with 204, as Debian 12's Cyrus 3.6 does, or
//! a stream that ended) the user looks at its Inbox every
//! [`POLL_WITHOUT_PUSH`] while it waits, and the reconciliation finds the
//! rest.
//!
//! Under `run --check-state` the client keeps each request and response for
//! the session's model, and the checker syncs with `Email/changes` after an
//! action that changed an Email (`crate::state_checks`, its `jmap` module).

use std::collections::BTreeMap;
use std::time::Duration;

use peakhour_http::{BasicAuth, ConnectionOptions, Endpoint as HttpEndpoint, HttpConnection};
use peakhour_jmap::envelope::SubmissionEnvelope;
use peakhour_jmap::{JmapClient, JmapError, PushEvent, PushStream};
use peakhour_net::Security;
use peakhour_workload::ActionKind;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connector::Connector;
use crate::events::{Counter, Event, Outcome};
use crate::sessions::smtp::Outgoing;
use crate::sessions::user::actor;
use crate::sessions::{Action, Actor, Failure, User, UserSession, calendar_item, sleep_until};
use crate::target::{Endpoint, Target, TlsMode};

/// How often a user without push looks at its Inbox for new mail. Cyrus
/// 3.6 from Debian 12 offers no push (its `httpd` is built without Wslay,
/// so `jmap_pushpoll` stays 0 and the EventSource URL answers 204): a JMAP
/// user there polls. Two seconds keeps the delivery notice close to what
/// IMAP IDLE gives on the same lab (Cyrus's `imapidlepoll: 1`), at one
/// `Email/query` per user every two seconds, which the server's load and
/// the run's `jmap.Email/query` count include. See docs/lab.md.
pub(crate) const POLL_WITHOUT_PUSH: Duration = Duration::from_secs(2);

/// Properties fetched to know a message: its keywords (seen) and its
/// Message-ID (delivery tracking).
const KNOW: [&str; 3] = ["id", "keywords", "messageId"];

/// For `map_err`: the JMAP request `method` failed, the method named (an
/// HTTP error or a status says which request, not which method).
fn calling(method: &'static str) -> impl FnOnce(JmapError) -> Failure {
    move |error| Failure::from(error).about("method", method)
}

/// A message the user knows is in its Inbox.
#[derive(Debug, Clone)]
struct KnownEmail {
    id: String,
    seen: bool,
}

/// One user's JMAP session.
#[derive(Debug)]
pub(crate) struct JmapSession {
    client: JmapClient,
    /// Mailbox ids by name (and `inbox` by role).
    mailboxes: BTreeMap<String, String>,
    inbox_id: String,
    identity: String,
    inbox: Vec<KnownEmail>,
    /// The calendar item the last update imported.
    calendar_item: Option<String>,
    push: Option<PushStream>,
    /// When to look at the Inbox next, without push.
    next_poll: Instant,
    /// state checks: the session's model, when `--check-state` is on.
    pub(crate) state: Option<crate::state_checks::JmapChecker>,
}

impl JmapSession {
    /// state checks: hands the requests and responses since the last call
    /// to the session's model.
    pub(crate) fn feed_state_checks(&mut self) {
        if let Some(state) = self.state.as_mut() {
            state.feed(self.client.take_exchanges());
        }
    }
}

impl JmapSession {
    fn mailbox(&self, name: &str) -> Result<String, Failure> {
        self.mailboxes
            .get(&name.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| Failure {
                kind: "jmap:no-such-mailbox".into(),
                session_lost: false,
                detail: Some(format!("Mailbox/get listed no mailbox {name:?}")),
            })
    }
}

/// How to reach the JMAP server at `endpoint`.
pub(crate) fn dial(
    endpoint: &Endpoint,
    target: &Target,
    connect_timeout: Duration,
) -> HttpEndpoint {
    HttpEndpoint {
        host: endpoint.host.clone(),
        port: endpoint.port,
        security: match endpoint.tls {
            TlsMode::Implicit => Security::ImplicitTls,
            TlsMode::None | TlsMode::StartTls => Security::Plain,
        },
        tls: Some(target.tls.clone()),
        connect_timeout,
        source: endpoint.source,
    }
}

/// What the target's JMAP server offers (the capability URIs of its
/// session resource), as `login` sees it; `None` without a JMAP endpoint
/// or when the session cannot be read within `timeout`.
pub(crate) async fn session_capabilities(
    target: &Target,
    login: &str,
    password: &peakhour_net::Secret<String>,
    timeout: Duration,
) -> Option<Vec<String>> {
    let endpoint = target.jmap.as_ref()?;
    let options = ConnectionOptions {
        auth: Some(BasicAuth::new(login, password)),
        request_timeout: timeout,
        ..ConnectionOptions::default()
    };
    let mut client = JmapClient::new(HttpConnection::new(
        dial(endpoint, target, timeout),
        options,
    ));
    tokio::time::timeout(timeout, client.discover())
        .await
        .ok()?
        .ok()?;
    Some(client.session()?.capabilities.keys().cloned().collect())
}

impl<C: Connector> Actor<'_, C> {
    /// The HTTP connection options of this user: the credentials of the
    /// account it logs on to (its own, or the one it shares:
    /// `users.sessions_per_account`), and the action timeout for every request.
    fn http_options(&self, account: u32, address: &str) -> ConnectionOptions {
        let (login, password) = self.shared.target.login(account, address);
        ConnectionOptions {
            auth: Some(BasicAuth::new(login, password)),
            request_timeout: self.shared.action_timeout,
            ..ConnectionOptions::default()
        }
    }

    /// Logs on for the `logon`th time of this user (1 first).
    pub(crate) async fn jmap_log_on(&self, logon: u32) -> Result<JmapSession, Failure> {
        let target = &self.shared.target;
        let endpoint = target.jmap.as_ref().ok_or(Failure {
            kind: "jmap:no-endpoint".into(),
            session_lost: true,
            detail: None,
        })?;
        // From the user's source address: its API and push connections alike.
        let endpoint = &target.from_source(endpoint, self.index);
        let dial = dial(endpoint, target, self.shared.connect_timeout);
        // state checks: sessions_per_account users share the first one's account, as over IMAP
        let account = self.shared.plan.account_of(self.index);
        let account_address = self.shared.population.address(account).unwrap_or_default();
        let options = self.http_options(account, &account_address);
        let mut client = JmapClient::new(HttpConnection::new(dial, options.clone()));
        let hub = self.shared.state_checks.as_ref();
        client.record_exchanges(hub.is_some()); // state checks
        let discovered = client.discover().await.map_err(calling("session"))?;
        self.command("jmap.session", discovered);
        let listed = client.mailboxes().await.map_err(calling("Mailbox/get"))?;
        let listed = self.command("jmap.Mailbox/get", listed);
        let mut mailboxes = BTreeMap::new();
        let mut inbox_id = None;
        for mailbox in listed.list {
            if mailbox.role.as_deref() == Some("inbox") {
                inbox_id = Some(mailbox.id.clone());
            }
            mailboxes.insert(mailbox.name.to_ascii_lowercase(), mailbox.id);
        }
        let inbox_id = inbox_id.ok_or(Failure {
            kind: "jmap:no-inbox".into(),
            session_lost: true,
            detail: None,
        })?;
        let inbox_name = self.shared.plan.params().inbox.to_ascii_lowercase();
        mailboxes.insert(inbox_name, inbox_id.clone());
        let identities = client.identities().await.map_err(calling("Identity/get"))?;
        let identities = self.command("jmap.Identity/get", identities);
        let identity = identities
            .list
            .iter()
            .find(|i| i.email.eq_ignore_ascii_case(&account_address))
            .or(identities.list.first())
            .map(|i| i.id.clone())
            .ok_or(Failure {
                kind: "jmap:no-identity".into(),
                session_lost: true,
                detail: None,
            })?;
        // Push on a second connection; without it, new mail is noticed at
        // the next check of the Inbox.
        let push = match client.event_stream(options, "Email", 0).await {
            Ok(stream) => Some(self.command("jmap.eventsource", stream)),
            // 204: the server offers no push (Cyrus 3.6.1 answers so).
            Err(JmapError::Status { status: 204, .. }) => None,
            Err(error) => {
                self.shared
                    .events
                    .send(Event::SessionError(format!("jmap:{}", error.kind())));
                None
            }
        };
        let mut session = JmapSession {
            client,
            mailboxes,
            inbox_id,
            identity,
            inbox: Vec::new(),
            calendar_item: None,
            push,
            next_poll: Instant::now() + POLL_WITHOUT_PUSH,
            // state checks: a model for this session
            state: hub.map(|h| {
                let client = format!("{}#{logon}", self.address);
                let options = crate::state_checks::jmap_options(&self.shared.plan, account);
                h.jmap_session(self.index, account, client, options)
            }),
        };
        // Mail that arrived while this user was offline is noticed now.
        let page = self.shared.plan.params().page_size.max(1);
        self.jmap_refresh(&mut session, page.max(256)).await?;
        Ok(session)
    }

    /// `Email/query` of the Inbox's newest `limit`, then `Email/get` of the
    /// ids not known yet; every tracked arrival among them is noticed.
    async fn jmap_refresh(&self, session: &mut JmapSession, limit: u32) -> Result<(), Failure> {
        let queried = session
            .client
            .query(&session.inbox_id, limit)
            .await
            .map_err(calling("Email/query"))?;
        let ids = self.command("jmap.Email/query", queried).ids;
        let new: Vec<String> = ids
            .iter()
            .filter(|id| !session.inbox.iter().any(|k| &k.id == *id))
            .cloned()
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        let mut properties = KNOW.to_vec();
        if self.shared.state_checks.is_some() {
            properties.push("mailboxIds"); // state checks: for the audit's `in_several`
        }
        let got = session
            .client
            .get(new, properties, false)
            .await
            .map_err(calling("Email/get"))?;
        let got = self.command("jmap.Email/get", got);
        let seen_at = Instant::now();
        // The copy in the account's mailbox is its owner's, whichever
        // session of the account sees it (`users.sessions_per_account`).
        let owner = self.shared.plan.account_of(self.index);
        for email in got.list {
            let message_ids = email.other.get("messageId").and_then(|v| v.as_array());
            for id in message_ids.into_iter().flatten().filter_map(|v| v.as_str()) {
                if let Some(latency) = self.shared.delivery.noticed(id, owner, seen_at) {
                    self.shared.events.send(Event::Delivered(latency));
                }
            }
            session.inbox.push(KnownEmail {
                seen: email.keywords.get("$seen").copied().unwrap_or(false),
                id: email.id,
            });
        }
        Ok(())
    }

    async fn jmap_check_inbox(&self, session: &mut JmapSession) -> Result<Outcome, Failure> {
        let page = self.shared.plan.params().page_size.max(1);
        self.shared.events.count(Counter::FolderOpens, 1);
        self.jmap_refresh(session, page).await?;
        Ok(Outcome::Ok)
    }

    async fn jmap_read(&self, session: &mut JmapSession, seq: u64) -> Result<Outcome, Failure> {
        let unread_first = self.shared.plan.params().unread_first;
        let seen = session.inbox.iter().map(|k| k.seen);
        let Some(index) = self.pick_message(seen, seq, unread_first) else {
            return Ok(Outcome::Skipped("empty_inbox"));
        };
        let id = session.inbox[index].id.clone();
        let properties = vec!["id", "subject", "textBody", "bodyValues"];
        let got = session
            .client
            .get(vec![id.clone()], properties, true)
            .await
            .map_err(calling("Email/get"))?;
        let got = self.command("jmap.Email/get", got);
        self.shared.events.count(Counter::MessageOpens, 1);
        if got.list.is_empty() {
            session.inbox.swap_remove(index);
            if self.raced(&id) {
                return Ok(Outcome::Skipped("raced")); // the workload's race (`raced`)
            }
            return Ok(Outcome::Error("jmap:message-gone".into()));
        }
        // Opening a message marks it read, as a client does.
        if !session.inbox[index].seen {
            let set = session
                .client
                .set_keyword(&id, "$seen", true)
                .await
                .map_err(calling("Email/set"))?;
            let set = self.command("jmap.Email/set", set);
            if !set.failures().is_empty() {
                return Ok(Outcome::Error("jmap:not-updated".into()));
            }
            session.inbox[index].seen = true;
        }
        if let Some(label) = self.shared.plan.label_of_read(self.index, seq) {
            // The user tags it, as with Thunderbird's tags (a keyword).
            let set = session
                .client
                .set_keyword(&id, label, true)
                .await
                .map_err(calling("Email/set"))?;
            let set = self.command("jmap.Email/set", set);
            if !set.failures().is_empty() {
                return Ok(Outcome::Error("jmap:not-updated".into()));
            }
        }
        Ok(Outcome::Ok)
    }

    async fn jmap_move(
        &self,
        session: &mut JmapSession,
        seq: u64,
        delete: bool,
    ) -> Result<Outcome, Failure> {
        let params = self.shared.plan.params().clone();
        let seen = session.inbox.iter().map(|k| k.seen);
        let Some(index) = self.pick_message(seen, seq, false) else {
            return Ok(Outcome::Skipped("empty_inbox"));
        };
        let Some(folder) = self.move_folder(&params, seq, delete) else {
            return Ok(Outcome::Skipped("no_folders"));
        };
        let to = session.mailbox(&folder)?;
        let id = session.inbox[index].id.clone();
        let from = session.inbox_id.clone();
        self.moving(id.clone());
        let moved = session
            .client
            .move_email(&id, &from, &to)
            .await
            .map_err(|e| calling("Email/set")(e).about("folder", &folder))?;
        let moved = self.command("jmap.Email/set", moved);
        session.inbox.swap_remove(index);
        if !moved.failures().is_empty() {
            if self.raced(&id) {
                return Ok(Outcome::Skipped("raced")); // the workload's race (`raced`)
            }
            return Ok(Outcome::Error("jmap:not-updated".into()));
        }
        if delete && params.empty_trash {
            // The trash emptied of it (`actions.delete.empty_trash`): destroyed.
            let destroyed = session
                .client
                .destroy(vec![id.clone()])
                .await
                .map_err(calling("Email/set"))?;
            let destroyed = self.command("jmap.Email/set", destroyed);
            if !destroyed.failures().is_empty() && self.raced(&id) {
                return Ok(Outcome::Skipped("raced"));
            }
            if !destroyed.failures().is_empty() {
                return Ok(Outcome::Error("jmap:not-destroyed".into()));
            }
        }
        Ok(Outcome::Ok)
    }

    async fn jmap_send(&self, session: &mut JmapSession, nth: u64) -> Result<Outcome, Failure> {
        let plan = &self.shared.plan;
        let outgoing: Outgoing = self.compose(nth)?;
        let uploaded = session
            .client
            .upload("message/rfc822", outgoing.message)
            .await
            .map_err(calling("upload"))?;
        let blob = self.command("jmap.upload", uploaded).blob_id;
        // The copy goes to Sent (JMAP sends a stored message), as a client
        // that saves sent mail does.
        let sent = session.mailbox(&plan.params().sent_folder)?;
        let identity = session.identity.clone();
        let submitted = session
            .client
            .import_and_submit_to(
                &blob,
                &sent,
                &identity,
                Some(SubmissionEnvelope::new(self.address, &outgoing.envelope)),
            )
            .await
            .map_err(calling("EmailSubmission/set"))?;
        let (imported, submission) = self.command("jmap.EmailSubmission/set", submitted);
        if imported.created_id("m").is_none() || submission.created_id("s").is_none() {
            return Ok(Outcome::Error("jmap:not-submitted".into()));
        }
        self.submitted(&outgoing.message_id, &outgoing.recipients);
        Ok(Outcome::Ok)
    }

    async fn jmap_update_calendar(
        &self,
        session: &mut JmapSession,
        nth: u64,
    ) -> Result<Outcome, Failure> {
        let folder = self.shared.plan.params().calendar_folder.clone();
        let calendar = session.mailbox(&folder)?;
        let item = calendar_item(&self.shared.run_id, self.index, nth, self.address);
        let uploaded = session
            .client
            .upload("message/rfc822", item)
            .await
            .map_err(calling("upload"))?;
        let blob = self.command("jmap.upload", uploaded).blob_id;
        let imported = session
            .client
            .import(&blob, &calendar, &[])
            .await
            .map_err(|e| calling("Email/import")(e).about("folder", &folder))?;
        let imported = self.command("jmap.Email/import", imported);
        let previous = session.calendar_item.take();
        session.calendar_item = imported.created_id("m").map(str::to_owned);
        if session.calendar_item.is_none() {
            return Ok(Outcome::Error("jmap:not-created".into()));
        }
        // Every other update replaces the previous item instead of adding one.
        if nth % 2 == 1
            && let Some(old) = previous
        {
            let destroyed = session
                .client
                .destroy(vec![old])
                .await
                .map_err(calling("Email/set"))?;
            self.command("jmap.Email/set", destroyed);
        }
        Ok(Outcome::Ok)
    }
}

impl<'a, C: Connector> UserSession<Actor<'a, C>> for JmapSession {
    type Action = Action;
    type Done = Result<Outcome, Failure>;

    async fn act(&mut self, actor: &Actor<'a, C>, action: &Action) -> Self::Done {
        let (seq, nth) = (action.seq, action.nth);
        match action.kind {
            ActionKind::CheckInbox => actor.jmap_check_inbox(self).await,
            ActionKind::Read => actor.jmap_read(self, seq).await,
            ActionKind::Move => actor.jmap_move(self, seq, false).await,
            ActionKind::Delete => actor.jmap_move(self, seq, true).await,
            ActionKind::Send => actor.jmap_send(self, nth).await,
            ActionKind::UpdateCalendar => actor.jmap_update_calendar(self, nth).await,
            // Routed to the groupware sessions (`crate::sessions::route`).
            ActionKind::PollCalendar
            | ActionKind::CreateEvent
            | ActionKind::ChangeEvent
            | ActionKind::DownloadMail => Ok(Outcome::Skipped("not_groupware")),
        }
    }
}

/// Waiting between actions over JMAP: push, or polling without it.
impl<C: Connector> User<C> {
    /// Waits for `due`, fetching new mail whenever push says the user's
    /// email changed or, without push, every [`POLL_WITHOUT_PUSH`].
    pub(crate) async fn jmap_wait_until(&mut self, due: Instant, stop: &mut watch::Receiver<bool>) {
        let due = due + self.jmap_sync_state_checks().await; // state checks
        loop {
            let Some(session) = self.jmap.as_mut() else {
                sleep_until(due, stop).await;
                return;
            };
            let Some(push) = session.push.as_mut() else {
                return self.jmap_poll_until(due, stop).await;
            };
            let account = session.client.account().to_owned();
            let event = tokio::select! {
                // PushStream::next is cancel-safe.
                event = push.next() => event,
                _ = tokio::time::sleep_until(due) => return,
                _ = stop.changed() => return,
            };
            match event {
                Ok(Some(PushEvent::StateChange(change))) if change.changed(&account, "Email") => {
                    self.jmap_refresh_in_background().await;
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => {
                    // The stream ended: carry on without push (polling).
                    if let Some(session) = self.jmap.as_mut() {
                        session.push = None;
                        session.next_poll = Instant::now();
                    }
                    self.shared
                        .events
                        .send(Event::SessionError("jmap:push-ended".into()));
                }
            }
        }
    }
    /// Without push: looks at the Inbox every [`POLL_WITHOUT_PUSH`] until
    /// `due`, as a client that cannot be told of new mail does.
    async fn jmap_poll_until(&mut self, due: Instant, stop: &mut watch::Receiver<bool>) {
        loop {
            let Some(next_poll) = self.jmap.as_ref().map(|s| s.next_poll) else {
                sleep_until(due, stop).await;
                return;
            };
            if next_poll >= due {
                sleep_until(due, stop).await;
                return;
            }
            if !sleep_until(next_poll, stop).await {
                return;
            }
            if let Some(session) = self.jmap.as_mut() {
                session.next_poll = Instant::now() + POLL_WITHOUT_PUSH;
            }
            self.jmap_refresh_in_background().await;
        }
    }
    /// state checks: the checker's `Email/changes` after an action that
    /// changed an Email; the user's schedule moves by its time.
    async fn jmap_sync_state_checks(&mut self) -> Duration {
        let Some(session) = self.jmap.as_mut() else {
            return Duration::ZERO;
        };
        session.feed_state_checks();
        let Some(state) = session.state.as_mut() else {
            return Duration::ZERO;
        };
        match state.sync(&mut session.client).await {
            Ok(took) => took,
            Err(error) => {
                self.background_failure(calling("Email/changes")(error));
                Duration::ZERO
            }
        }
    }

    /// Fetches what is new in the Inbox outside any action: a failure is
    /// counted as a session error, and a session that did not survive it
    /// is dropped.
    async fn jmap_refresh_in_background(&mut self) {
        let page = self.shared.plan.params().page_size.max(1);
        let Some(mut session) = self.jmap.take() else {
            return;
        };
        let refreshed = actor!(self).jmap_refresh(&mut session, page).await;
        self.jmap = Some(session);
        if let Err(failure) = refreshed {
            self.background_failure(failure);
        }
    }
}
