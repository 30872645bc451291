//! A simulated user who reads its mail over POP3 (RFC 1939).
//!
//! A POP3 client holds no session between checks: each `download_mail`
//! connects, logs in (USER, PASS), asks STAT and UIDL, downloads (RETR)
//! every message it has not downloaded before, deletes each one (DELE)
//! unless the user leaves mail on the server, and QUITs, which commits the
//! deletions. That is what Thunderbird does every `check_time` minutes
//! (docs/profiles.md, `pop3-user`). Every command is timed by the driver and
//! recorded as `pop3.<COMMAND>` (`pop3.RETR`, `pop3.UIDL` ...), the
//! connection and greeting as `pop3.CONNECT`.
//!
//! A tracked message is noticed, and its delivery latency recorded, when
//! RETR brings it: its Message-ID is in the bytes downloaded. What no check
//! brought before the run ended is looked for by [`search_maildrop`]: UIDL,
//! then TOP 0 of each message for its `X-Peakhour-Run` header, as the
//! IMAP header search does for IMAP users.

use std::collections::HashSet;
use std::time::Duration;

use peakhour_net::{Secret, Timed};
use peakhour_pop3::{Command, Pop3Connection, Pop3Error};
use tokio::time::Instant;

use crate::connector::Connector;
use crate::delivery::DeliveryTracker;
use crate::events::{Counter, EventSink, Outcome};
use crate::sessions::{Action, Actor, Failure, UserSession, header};
use crate::target::{Endpoint, Target, TlsMode};

/// The most UIDs a leave-on-server user remembers: a bound on memory far
/// above what a maildrop holds in any profile. Past it, the oldest are
/// forgotten and, if still on the server, downloaded again, as a client
/// that lost its state would.
const MAX_REMEMBERED: usize = 100_000;

/// Why a POP3 check failed.
#[derive(Debug)]
pub(crate) struct Pop3Failure {
    /// `pop3:<kind>`, counted in the run's errors.
    pub(crate) kind: String,
    /// The error as a person reads it, the example of its kind.
    pub(crate) detail: Option<String>,
}

impl Pop3Failure {
    /// A failure with nothing to say beyond its kind.
    fn bare(kind: &str) -> Self {
        Pop3Failure {
            kind: kind.to_owned(),
            detail: None,
        }
    }
}

impl From<Pop3Error> for Pop3Failure {
    fn from(error: Pop3Error) -> Self {
        Pop3Failure {
            kind: format!("pop3:{}", error.kind()),
            detail: Some(error.to_string()),
        }
    }
}

/// What a check needs from the run.
pub(crate) struct CheckContext<'a> {
    pub(crate) target: &'a Target,
    pub(crate) events: &'a EventSink,
    pub(crate) delivery: &'a DeliveryTracker,
    pub(crate) user: u32,
    pub(crate) address: &'a str,
    pub(crate) connect_timeout: Duration,
    pub(crate) command_timeout: Duration,
}

impl<'a> CheckContext<'a> {
    /// A context for a check or a search, not the users' load: its commands
    /// go to `sink`, which nobody reads, and every step has `timeout`.
    fn unrecorded(
        target: &'a Target,
        sink: &'a EventSink,
        delivery: &'a DeliveryTracker,
        (user, address): (u32, &'a str),
        timeout: Duration,
    ) -> Self {
        CheckContext {
            target,
            events: sink,
            delivery,
            user,
            address,
            connect_timeout: timeout,
            command_timeout: timeout,
        }
    }
}

/// One user's POP3 client state between checks.
#[derive(Debug)]
pub(crate) struct Pop3Mailbox {
    leave_on_server: bool,
    /// UIDs downloaded and left on the server (leave-on-server users only).
    downloaded: HashSet<String>,
}

impl Pop3Mailbox {
    /// A client that deletes what it downloads, or leaves it on the server.
    pub(crate) fn new(leave_on_server: bool) -> Pop3Mailbox {
        Pop3Mailbox {
            leave_on_server,
            downloaded: HashSet::new(),
        }
    }

    /// One check of the maildrop: see the module documentation.
    pub(crate) async fn download(
        &mut self,
        ctx: &CheckContext<'_>,
    ) -> Result<Outcome, Pop3Failure> {
        let events = ctx.events;
        let mut pop = log_on(ctx).await?;
        let stat = pop.stat().await?;
        let stat = record(events, "pop3.STAT", stat);
        if stat.count == 0 {
            let quit = pop.quit().await?;
            record(events, "pop3.QUIT", quit);
            self.downloaded.clear();
            return Ok(Outcome::Ok);
        }
        let listing = pop.uidl().await?;
        let listing = record(events, "pop3.UIDL", listing);
        if self.leave_on_server {
            // Forget what the server no longer holds.
            let present: HashSet<&str> = listing.iter().map(|e| e.uid.as_str()).collect();
            self.downloaded.retain(|uid| present.contains(uid.as_str()));
        }
        for entry in &listing {
            if self.downloaded.contains(&entry.uid) {
                continue;
            }
            let message = pop.retr(entry.msg).await?;
            let message = record(events, "pop3.RETR", message);
            events.count(Counter::MessagesDownloaded, 1);
            notice(ctx, &message, Instant::now());
            if self.leave_on_server {
                if self.downloaded.len() < MAX_REMEMBERED {
                    self.downloaded.insert(entry.uid.clone());
                }
            } else {
                let deleted = pop.dele(entry.msg).await?;
                record(events, "pop3.DELE", deleted);
            }
        }
        let quit = pop.quit().await?;
        record(events, "pop3.QUIT", quit);
        Ok(Outcome::Ok)
    }
}

/// Connects (STLS when the endpoint asks for it) and logs in, each step
/// recorded.
async fn log_on(ctx: &CheckContext<'_>) -> Result<Pop3Connection, Pop3Failure> {
    let endpoint = pop3_endpoint(ctx.target)?;
    let connected = Pop3Connection::connect(
        &endpoint.host,
        endpoint.port,
        endpoint.security(),
        Some(ctx.target.tls.clone()),
        ctx.connect_timeout,
    )
    .await?;
    let mut pop = record(ctx.events, "pop3.CONNECT", connected);
    pop.set_command_timeout(Some(ctx.command_timeout));
    if endpoint.tls == TlsMode::StartTls {
        // The handshake has no deadline of its own in the driver: bound it here.
        let stls = tokio::time::timeout(
            ctx.connect_timeout,
            pop.stls(&endpoint.host, ctx.target.tls.clone()),
        )
        .await
        .map_err(|_| Pop3Failure::bare("pop3:timeout"))??;
        record(ctx.events, "pop3.STLS", stls);
    }
    let (login, password) = ctx.target.login(ctx.user, ctx.address);
    login_timed(&mut pop, ctx.events, login, password).await?;
    Ok(pop)
}

/// USER then PASS, each recorded under its own name.
async fn login_timed(
    pop: &mut Pop3Connection,
    events: &EventSink,
    login: &str,
    password: &Secret<String>,
) -> Result<(), Pop3Failure> {
    let user = pop.execute(Command::User(login.to_owned())).await?;
    record(events, "pop3.USER", user);
    let pass = pop.execute(Command::Pass(password.clone())).await?;
    record(events, "pop3.PASS", pass);
    Ok(())
}

fn pop3_endpoint(target: &Target) -> Result<&Endpoint, Pop3Failure> {
    target
        .pop3
        .as_ref()
        .ok_or_else(|| Pop3Failure::bare("pop3:no-server"))
}

/// Records a command's time under `name` and hands its value on.
fn record<T>(events: &EventSink, name: &'static str, timed: Timed<T>) -> T {
    events.command(name, timed.elapsed);
    timed.value
}

/// Reports a downloaded message as delivered if the run is waiting for it.
fn notice(ctx: &CheckContext<'_>, message: &[u8], at: Instant) {
    if let Some(id) = header(message, "Message-ID") {
        ctx.events.noticed(ctx.delivery.notice(&id, ctx.user, at));
    }
}

/// Whether user 0 can log in over POP3 (connect, USER, PASS, CAPA, QUIT);
/// returns the CAPA lines as sent (none from a server without CAPA).
pub(crate) async fn check_login(
    target: &Target,
    address: &str,
    timeout: Duration,
) -> Result<Vec<String>, Pop3Failure> {
    let (sink, delivery) = (EventSink::channel().0, DeliveryTracker::default());
    let ctx = CheckContext::unrecorded(target, &sink, &delivery, (0, address), timeout);
    let mut pop = log_on(&ctx).await?;
    // After login: a server may offer more then (RFC 2449 §5).
    let offered = match pop.capa().await {
        Ok(capa) => capa.value.lines().to_vec(),
        Err(_) => Vec::new(),
    };
    pop.quit().await?;
    Ok(offered)
}

/// The reconciliation's search of a POP3 user's maildrop: the Message-IDs
/// of this run's messages still there, found with UIDL and then TOP 0 (the
/// header only) of each message, read for its `X-Peakhour-Run` header.
/// Nothing is deleted (the session ends with QUIT and no DELE).
pub(crate) async fn search_maildrop(
    target: &Target,
    user: u32,
    address: &str,
    run_id: &str,
    timeout: Duration,
) -> Result<Vec<String>, Pop3Failure> {
    // The reconciliation's searches are not the users' load: not recorded.
    let (sink, delivery) = (EventSink::channel().0, DeliveryTracker::default());
    let ctx = CheckContext::unrecorded(target, &sink, &delivery, (user, address), timeout);
    let mut pop = log_on(&ctx).await?;
    let listing = pop.uidl().await?.value;
    let mut ids = Vec::new();
    for entry in listing {
        let head = pop.top(entry.msg, 0).await?.value;
        if header(&head, "X-Peakhour-Run").as_deref() == Some(run_id)
            && let Some(id) = header(&head, "Message-ID")
        {
            ids.push(id);
        }
    }
    let _ = pop.quit().await;
    Ok(ids)
}

impl<'a, C: Connector> UserSession<Actor<'a, C>> for Pop3Mailbox {
    type Action = Action;
    type Done = Result<Outcome, Failure>;

    async fn act(&mut self, actor: &Actor<'a, C>, _action: &Action) -> Self::Done {
        let shared = actor.shared;
        let ctx = CheckContext {
            target: &shared.target,
            events: &shared.events,
            delivery: &shared.delivery,
            user: actor.index,
            address: actor.address,
            connect_timeout: shared.connect_timeout,
            command_timeout: shared.action_timeout,
        };
        self.download(&ctx).await.map_err(Failure::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_under_pop3_kinds() {
        let failure = Pop3Failure::from(Pop3Error::Unusable);
        assert_eq!(failure.kind, "pop3:unusable");
    }
}
