//! The IMAP session's actions, as the routing table sends them to it.

use peakhour_imap::{BodySection, FetchItem, ImapError, Refusal, StoreMode};
use tokio::time::Instant;

use super::{ImapSession, merge, newest_page};
use crate::connector::Connector;
use crate::events::{Counter, Outcome};
use crate::sessions::raced::imap_message;
use crate::sessions::{Action, Actor, Failure, UserSession, calendar_item, on_folder};
use peakhour_workload::ActionKind;

impl<'a, C: Connector> UserSession<Actor<'a, C>> for ImapSession<C::Stream> {
    type Action = Action;
    type Done = Result<Outcome, Failure>;

    async fn act(&mut self, actor: &Actor<'a, C>, action: &Action) -> Self::Done {
        // A user imitating a recorded client: its client decides the commands.
        if self.client.is_some() {
            return self.client_act(actor, action).await;
        }
        match action.kind {
            ActionKind::CheckInbox => self.check_inbox(actor).await,
            ActionKind::Read => self.read(actor, action.seq).await,
            ActionKind::Move => self.move_message(actor, action.seq, false).await,
            ActionKind::Delete => self.move_message(actor, action.seq, true).await,
            ActionKind::UpdateCalendar => self.update_calendar(actor, action.nth).await,
            // Routed to the other sessions (`crate::sessions::route`).
            ActionKind::Send
            | ActionKind::PollCalendar
            | ActionKind::CreateEvent
            | ActionKind::ChangeEvent
            | ActionKind::DownloadMail => Ok(Outcome::Skipped("not_routed")),
        }
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> ImapSession<S> {
    async fn check_inbox<C: Connector>(
        &mut self,
        actor: &Actor<'_, C>,
    ) -> Result<Outcome, Failure> {
        let inbox = self.params.inbox.clone();
        let page = actor.shared.plan.params().page_size.max(1);
        let events = actor.shared.events.clone();
        let session = self;
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
                actor.notice(message, seen_at);
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
            actor.notice(message, seen_at);
        }
        Ok(Outcome::Ok)
    }

    async fn read<C: Connector>(
        &mut self,
        actor: &Actor<'_, C>,
        seq: u64,
    ) -> Result<Outcome, Failure> {
        let unread_first = actor.shared.plan.params().unread_first;
        let events = actor.shared.events.clone();
        let seen = self.inbox.iter().map(|k| k.seen);
        let Some(index) = actor.pick_message(seen, seq, unread_first) else {
            return Ok(Outcome::Skipped("empty_inbox"));
        };
        let session = self;
        let inbox = session.params.inbox.clone();
        let uid = session.inbox[index].uid;
        let label = actor.shared.plan.label_of_read(actor.index, seq);
        // BODY[] (not PEEK): opening a message marks it read, as a client does.
        let body = [FetchItem::Body {
            section: BodySection::Full,
            peek: false,
        }];
        let imap = match label {
            Some(_) => &mut session.imap,
            None => session.last_command(),
        };
        let fetched = match imap.fetch(&uid.to_string(), &body, true).await {
            Ok(fetched) => fetched,
            // The workload's race on a shared account (`raced`).
            Err(error) if rejected(&error) && actor.raced(&imap_message(&inbox, uid)) => {
                session.inbox.swap_remove(index);
                return Ok(Outcome::Skipped("raced"));
            }
            Err(error) => return Err(on_folder(&inbox)(error)),
        };
        events.command("imap.UID FETCH", fetched.elapsed);
        events.count(Counter::MessageOpens, 1);
        if fetched.value.is_empty() {
            // Gone (expunged elsewhere): forget it.
            session.inbox.swap_remove(index);
            if actor.raced(&imap_message(&inbox, uid)) {
                return Ok(Outcome::Skipped("raced"));
            }
            return Ok(Outcome::Error("imap:message-gone".into()));
        }
        session.inbox[index].seen = true;
        if let Some(label) = label {
            // The user tags it, as with Thunderbird's tags (a keyword).
            let stored = session
                .last_command()
                .store(&uid.to_string(), StoreMode::Add, &[label], false, true)
                .await
                .map_err(on_folder(&inbox))?;
            events.command("imap.UID STORE", stored.elapsed);
        }
        Ok(Outcome::Ok)
    }

    async fn move_message<C: Connector>(
        &mut self,
        actor: &Actor<'_, C>,
        seq: u64,
        delete: bool,
    ) -> Result<Outcome, Failure> {
        let params = self.params.clone();
        let events = actor.shared.events.clone();
        let seen = self.inbox.iter().map(|k| k.seen);
        let Some(index) = actor.pick_message(seen, seq, false) else {
            return Ok(Outcome::Skipped("empty_inbox"));
        };
        let Some(folder) = actor.move_folder(&params, seq, delete) else {
            return Ok(Outcome::Skipped("no_folders"));
        };
        let session = self;
        let uid = session.inbox[index].uid;
        let message = imap_message(&params.inbox, uid); // the Inbox it picked from
        actor.moving(message.clone());
        let moved = match session
            .last_command()
            .move_messages(&uid.to_string(), &folder, true)
            .await
        {
            Ok(moved) => moved,
            // The workload's race on a shared account (`raced`).
            Err(error) if rejected(&error) && actor.raced(&message) => {
                session.inbox.swap_remove(index);
                return Ok(Outcome::Skipped("raced"));
            }
            Err(error) => return Err(on_folder(&folder)(error)),
        };
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

    pub(crate) async fn update_calendar<C: Connector>(
        &mut self,
        actor: &Actor<'_, C>,
        nth: u64,
    ) -> Result<Outcome, Failure> {
        let params = self.params.clone();
        let events = actor.shared.events.clone();
        let item = calendar_item(&actor.shared.run_id, actor.index, nth, actor.address);
        let calendar = &params.calendar_folder;
        let session = self;
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

    /// Keeps a copy of a message the user sent in its Sent folder, as a
    /// client that saves sent mail does.
    pub(crate) async fn save_copy<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
        message: &[u8],
    ) -> Result<(), Failure> {
        if self.client.is_some() {
            return self.client_save_copy(actor, message).await;
        }
        let sent_folder = self.params.sent_folder.clone();
        let appended = self
            .last_command()
            .append(&sent_folder, &["\\Seen"], None, message)
            .await
            .map_err(on_folder(&sent_folder))?;
        actor.shared.events.command("imap.APPEND", appended.elapsed);
        Ok(())
    }
}

/// A `NO` to the command: the server refused it and the session goes on.
fn rejected(error: &ImapError) -> bool {
    matches!(
        error,
        ImapError::Rejected {
            refusal: Refusal::No,
            ..
        }
    )
}
