//! A simulated user's IMAP session: kept for the whole day, as an online
//! client keeps it; it knows which messages its Inbox holds and which are
//! unread, and idles between actions so that new mail is noticed (and its
//! delivery latency recorded) as it arrives. Its actions are in `actions`.

mod actions;
pub(crate) mod client;
pub(crate) mod trace;

use std::sync::Arc;
use std::time::Duration;

use peakhour_imap::{FetchItem, FetchedMessage, Idle, ImapConnection, MailboxUpdate, Request};
use peakhour_workload::ActionParams;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connector::Connector;
use crate::folders::{discover, listed};
use crate::sessions::{Actor, Failure, on_folder};
use crate::target::{TlsMode, imap_connect_deadline, imap_deadline};

/// Waits shorter than this sleep instead of entering IDLE (IDLE and DONE are
/// two more commands for the server, even when they share writes with others).
pub(crate) const MIN_IDLE: Duration = Duration::from_millis(50);

/// A message the user knows is in its Inbox.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Known {
    pub(crate) uid: u32,
    pub(crate) seen: bool,
}

/// One user's IMAP session.
pub(crate) struct ImapSession<S> {
    /// The profile's action parameters with the folders as this server
    /// names them ([`ServerFolders`](crate::ServerFolders)).
    pub(crate) params: Arc<ActionParams>,
    pub(crate) imap: ImapConnection<S>,
    pub(crate) inbox: Vec<Known>,
    pub(crate) highest_uid: u32,
    pub(crate) calendar_item: Option<u32>,
    pub(crate) can_idle: bool,
    /// The user idles after the action under way: its last IMAP command
    /// carries IDLE in the same write (see `last_command`).
    pub(crate) idle_next: bool,
    /// state checks: the session's model and checkpoints, when on.
    pub(crate) state: Option<crate::state_checks::SessionChecker>,
    /// The recorded client this user imitates (`client`), if not peakhour's own.
    pub(crate) client: Option<Box<client::ClientState<S>>>,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> ImapSession<S> {
    /// The connection, for an action's last IMAP command.
    pub(crate) fn last_command(&mut self) -> &mut ImapConnection<S> {
        if std::mem::take(&mut self.idle_next) {
            self.imap.idle_after_next_command();
        }
        &mut self.imap
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> ImapSession<S> {
    /// IDLEs until `due`, `stop`, or new mail; returns whether mail arrived.
    pub(crate) async fn idle_until<C: Connector>(
        &mut self,
        actor: &Actor<'_, C>,
        due: Instant,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<bool, Failure> {
        // Sends IDLE, or takes up the one sent behind the last action.
        self.imap.idle_start().await?;
        self.note_idle_commands(actor);
        let session = self;
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
                _ = crate::state_checks::requested(session.state.as_mut()) => break, // state checks
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
    pub(crate) fn note_idle_commands<C: Connector>(&mut self, actor: &Actor<'_, C>) {
        let session = self;
        if let Some(elapsed) = session.imap.take_idle_start_time() {
            actor.shared.events.command("imap.IDLE", elapsed);
        }
        if let Some(elapsed) = session.imap.take_idle_done_time() {
            actor.shared.events.command("imap.DONE", elapsed);
        }
    }

    /// Fetches envelopes of messages that arrived since the last look, and
    /// reports tracked ones as delivered.
    pub(crate) async fn fetch_new_mail<C: Connector>(
        &mut self,
        actor: &Actor<'_, C>,
    ) -> Result<(), Failure> {
        let session = self;
        let set = format!("{}:*", session.highest_uid + 1);
        let fetched = session
            .imap
            .fetch(
                &set,
                &[FetchItem::Uid, FetchItem::Flags, FetchItem::Envelope],
                true,
            )
            .await?;
        actor
            .shared
            .events
            .command("imap.UID FETCH", fetched.elapsed);
        let seen_at = Instant::now();
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
            actor.shared.events.command("imap.FETCH", all.elapsed);
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
            actor.notice(message, seen_at);
        }
        Ok(())
    }
}

impl<C: Connector> Actor<'_, C> {
    /// Logs on over IMAP; `logon` counts this user's logons from 1 (it names
    /// the session in state checks).
    pub(crate) async fn imap_log_on(&self, logon: u32) -> Result<ImapSession<C::Stream>, Failure> {
        self.imap_log_on_traced(logon, false).await
    }

    /// Connects to the user's IMAP endpoint and logs in: LOGIN, or
    /// AUTHENTICATE PLAIN (`sasl`) as the recorded clients do; the wire is
    /// recorded when `record` (or the state checks) asks for it.
    pub(crate) async fn imap_open(
        &self,
        sasl: bool,
        record: bool,
    ) -> Result<peakhour_imap::ImapConnection<C::Stream>, Failure> {
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
        // state checks: sessions_per_account users share the first one's account; the wire is recorded for the model
        let account = self.shared.plan.account_of(self.index);
        let address = self.shared.population.address(account).unwrap_or_default();
        imap.record_wire(self.shared.state_checks.is_some() || record);
        let (login, password) = target.login(account, &address);
        if sasl && imap.capabilities().has("AUTH=PLAIN") {
            let done = imap.authenticate_plain(login, password).await?;
            self.command("imap.AUTHENTICATE", done);
        } else {
            let done = imap.login(login, password).await?;
            self.command("imap.LOGIN", done);
        }
        Ok(imap)
    }

    /// [`Actor::imap_log_on`], every connection's wire kept in the session's
    /// trace when `traced` (the fidelity test, `crate::trace`).
    pub(crate) async fn imap_log_on_traced(
        &self,
        logon: u32,
        traced: bool,
    ) -> Result<ImapSession<C::Stream>, Failure> {
        let target = &self.shared.target;
        let account = self.shared.plan.account_of(self.index);
        let model = client::model_of(self.shared.plan.client_of(self.index));
        let mut imap = self.imap_open(model.is_some(), traced).await?;
        // Where the user's folders are (NAMESPACE, LIST with special-use
        // attributes): the profile's names as this server spells them.
        let events = &self.shared.events;
        let prefix = target.options.folder_prefix.as_deref();
        let (server, listing) = discover(&mut imap, prefix, |name, elapsed| {
            events.command(name, elapsed)
        })
        .await?;
        let params = server.params(self.shared.plan.params());
        let existing: Vec<String> = listing.iter().map(|e| e.name.clone()).collect();
        let listing_entries = listing;
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
        if let Some(model) = model {
            let client = client::ClientState::new(
                model,
                &listing_entries,
                &params.inbox,
                traced.then(|| self.shared.plan.speed()),
            );
            let mut session = ImapSession {
                params: Arc::new(params),
                imap,
                inbox: Vec::new(),
                highest_uid: 0,
                calendar_item: None,
                can_idle: false,
                idle_next: false,
                state: None,
                client: Some(Box::new(client)),
            };
            session.client_logon(self).await?;
            return Ok(session);
        }
        // state checks: with CONDSTORE on, every FETCH carries the message's
        // MODSEQ (RFC 7162 §3.1.4), so the model can see one go backwards
        // (imaptest's check); without the checks the session stays the plain
        // client it is.
        if self.shared.state_checks.is_some() && imap.capabilities().has("CONDSTORE") {
            let enabled = imap
                .run(&Request::Enable(vec!["CONDSTORE".into()]))
                .await
                .map_err(Failure::from)?;
            self.command("imap.ENABLE", enabled);
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
        // state checks: a model for this session, in its account's group
        let client = format!("{}#{}", self.address, logon);
        let sole_writer = crate::state_checks::sole_writer(&self.shared.plan, self.index);
        let mut state = (self.shared.state_checks.as_ref())
            .map(|h| h.session(self.index, account, client, sole_writer));
        crate::state_checks::feed(state.as_mut(), &mut imap);
        Ok(ImapSession {
            params: Arc::new(params),
            imap,
            inbox,
            highest_uid,
            calendar_item: None,
            can_idle,
            idle_next: false,
            state,
            client: None,
        })
    }

    pub(crate) fn notice(&self, message: &FetchedMessage, at: Instant) {
        let id = message
            .envelope
            .as_ref()
            .and_then(|e| e.message_id.as_deref());
        if let Some(id) = id {
            // The copy in the account's mailbox is its owner's, whichever
            // session of the account sees it (`users.sessions_per_account`).
            let owner = self.shared.plan.account_of(self.index);
            self.shared
                .events
                .noticed(self.shared.delivery.notice(id, owner, at));
        }
    }
}

pub(crate) fn known(message: &FetchedMessage) -> Option<Known> {
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
pub(crate) fn newest_page(known: &[Known], page: u32, exists: u32) -> Option<String> {
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
pub(crate) fn merge<S>(session: &mut ImapSession<S>, fetched: &[FetchedMessage]) {
    for message in fetched {
        let Some(new) = known(message) else { continue };
        match session.inbox.iter_mut().find(|k| k.uid == new.uid) {
            Some(existing) => existing.seen = new.seen,
            None => session.inbox.push(new),
        }
        session.highest_uid = session.highest_uid.max(new.uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::{header, rfc5322};

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
