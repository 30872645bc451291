//! Performing a client model's steps over the session's connection slots:
//! opening and closing slots, one step's command and what its reply teaches
//! the session, and a list of steps run in order.

use peakhour_imap::clients::{ClientModel, Slot, Step, View};
use peakhour_imap::{FetchItem, ImapConnection, Reply, Request, SearchKey};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::super::{ImapSession, Known, known};
use super::{ClientState, event_name, message_id_in};
use crate::connector::Connector;
use crate::sessions::{Actor, Failure, on_folder};

impl<S: AsyncRead + AsyncWrite + Unpin + Send> ImapSession<S> {
    pub(super) fn client(&mut self) -> &mut ClientState<S> {
        self.client.as_deref_mut().expect("a client session")
    }

    /// The connection of `slot`, if it is open.
    pub(super) fn slot(&mut self, slot: Slot) -> Option<&mut ImapConnection<S>> {
        let client = self.client.as_deref_mut()?;
        client.open.get(slot)?.as_ref()?;
        if slot == 0 {
            Some(&mut self.imap)
        } else {
            client.extra.get_mut(slot - 1)?.as_mut()
        }
    }

    /// Asks the model for steps (or anything else) with the session's view
    /// of its mailbox.
    pub(super) fn steps<T>(&mut self, ask: impl FnOnce(ClientModel, &View<'_>) -> T) -> T {
        let params = self.params.clone();
        let mut uids: Vec<u32> = self.inbox.iter().map(|k| k.uid).collect();
        uids.sort_unstable();
        let client = self.client.as_deref().expect("a client session");
        let view = View {
            inbox: &params.inbox,
            sent: &params.sent_folder,
            trash: &params.trash,
            drafts: &client.drafts,
            folders: &client.folders,
            uids: &uids,
            open: &client.open,
            pending_seen: &client.pending_seen,
        };
        ask(client.model, &view)
    }

    /// Performs `steps`; every command timed and recorded.
    pub(crate) async fn perform<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
        steps: Vec<Step>,
    ) -> Result<(), Failure> {
        let marks_seen = steps.iter().any(|s| {
            matches!(s, Step::Run(_, Request::Store { flags, .. }) if flags.iter().any(|f| f == "\\Seen"))
        });
        for step in steps {
            let slot = match &step {
                Step::Open(s)
                | Step::Run(s, _)
                | Step::RunIfAny(s, _)
                | Step::FetchNew { slot: s, .. }
                | Step::Idle(s)
                | Step::Logout(s)
                | Step::Drop(s) => *s,
            };
            let done = self.step(actor, step).await;
            self.trace_slot(slot);
            done?;
        }
        if marks_seen {
            self.client().pending_seen.clear();
        }
        Ok(())
    }

    pub(super) fn trace_slot(&mut self, slot: Slot) {
        let wire = match self.slot(slot) {
            Some(conn) => conn.take_wire(),
            None if slot == 0 => self.imap.take_wire(),
            None => return,
        };
        if let Some(trace) = self.client().trace.as_mut() {
            trace.record(slot, wire);
        }
    }

    pub(super) async fn step<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
        step: Step,
    ) -> Result<(), Failure> {
        let events = actor.shared.events.clone();
        match step {
            Step::Open(slot) => {
                let traced = self.client().trace.is_some();
                let conn = actor.imap_open(true, traced).await?;
                let client = self.client();
                client.open[slot] = Some(String::new());
                if let Some(trace) = client.trace.as_mut() {
                    trace.open(slot);
                }
                if slot == 0 {
                    let old = std::mem::replace(&mut self.imap, conn);
                    drop(old);
                } else {
                    self.client().extra[slot - 1] = Some(conn);
                }
                // The login's own bytes.
                self.trace_slot(slot);
            }
            Step::Run(slot, request) => self.run(actor, slot, &request).await?,
            Step::RunIfAny(slot, request) => {
                let any = self
                    .slot(slot)
                    .and_then(|c| c.mailbox())
                    .is_some_and(|m| m.exists > 0);
                if any {
                    self.run(actor, slot, &request).await?;
                }
            }
            Step::FetchNew {
                slot,
                items,
                one_by_one,
            } => {
                let mut fresh = std::mem::take(&mut self.client().fresh);
                // Announced (EXISTS) but not yet listed: the UIDs past the
                // highest known.
                let inbox = self.params.inbox.clone();
                let exists = (self.slot(slot).and_then(|c| c.mailbox()))
                    .filter(|m| m.name == inbox)
                    .map_or(0, |m| m.exists);
                if fresh.is_empty() && exists as usize > self.inbox.len() {
                    let request = Request::Fetch {
                        set: format!("{}:*", self.highest_uid + 1),
                        items: vec![FetchItem::Uid, FetchItem::Flags],
                        uid: true,
                    };
                    self.run(actor, slot, &request).await?;
                    fresh = std::mem::take(&mut self.client().fresh);
                }
                let sets: Vec<String> = if one_by_one {
                    fresh.iter().map(u32::to_string).collect()
                } else if fresh.is_empty() {
                    Vec::new()
                } else {
                    vec![
                        fresh
                            .iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(","),
                    ]
                };
                for set in sets {
                    let request = Request::Fetch {
                        set,
                        items: items.clone(),
                        uid: true,
                    };
                    self.run(actor, slot, &request).await?;
                }
            }
            Step::Idle(slot) => {
                let client = self.client();
                let delay = client.model.idle_delay();
                if delay.is_zero() {
                    return self.idle_now(actor, slot).await;
                }
                // Thunderbird enters IDLE a moment after its last command;
                // another command on the slot before then cancels it.
                let due = Instant::now() + delay.div_f64(client.speed.max(1e-9));
                client.later.retain(|(_, s)| *s != Step::Idle(slot));
                client.later.push((due, Step::Idle(slot)));
            }
            Step::Logout(slot) => {
                if let Some(conn) = self.slot(slot) {
                    let done = conn.run(&Request::Logout).await?;
                    events.command("imap.LOGOUT", done.elapsed);
                }
                self.trace_slot(slot);
                self.close_slot(slot);
            }
            Step::Drop(slot) => self.close_slot(slot),
        }
        Ok(())
    }

    /// Enters IDLE on the slot now.
    pub(super) async fn idle_now<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
        slot: Slot,
    ) -> Result<(), Failure> {
        if let Some(conn) = self.slot(slot)
            && !conn.idle_in_progress()
            && conn.capabilities().has("IDLE")
        {
            let started = conn.idle_start().await?;
            actor.shared.events.command("imap.IDLE", started.elapsed);
        }
        Ok(())
    }

    pub(super) fn close_slot(&mut self, slot: Slot) {
        let client = self.client();
        client.later.retain(|(_, s)| *s != Step::Idle(slot));
        client.open[slot] = None;
        if slot > 0 {
            client.extra[slot - 1] = None;
        }
        if let Some(trace) = client.trace.as_mut() {
            let at = trace.seconds();
            if let Some((number, _, _)) = trace.connections.get(slot) {
                let number = *number;
                trace.lines.push(format!("{at:.6} c{number} close"));
            }
        }
    }

    /// Runs one command on `slot` and keeps what it says about the Inbox.
    pub(super) async fn run<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
        slot: Slot,
        request: &Request,
    ) -> Result<(), Failure> {
        let inbox = self.params.inbox.clone();
        // A command before the slot's delayed IDLE: no IDLE yet.
        self.client().later.retain(|(_, s)| *s != Step::Idle(slot));
        let Some(conn) = self.slot(slot) else {
            return Err(Failure::bare("imap:client-slot-closed", false));
        };
        let done = conn.run(request).await.map_err(on_folder(&inbox))?;
        actor
            .shared
            .events
            .command(event_name(request), done.elapsed);
        let on_inbox = conn.mailbox().is_some_and(|m| m.name == inbox);
        let selected = conn.mailbox().map(|m| m.name.clone());
        if let Some(name) = selected {
            self.client().open[slot] = Some(name);
        }
        if !on_inbox {
            return Ok(());
        }
        match done.value {
            Reply::Fetch(messages) => {
                let seen_at = Instant::now();
                let mut fresh = Vec::new();
                for message in &messages {
                    if let Some(new) = known(message) {
                        match self.inbox.iter_mut().find(|k| k.uid == new.uid) {
                            Some(existing) => existing.seen = new.seen || existing.seen,
                            None => {
                                fresh.push(new.uid);
                                self.inbox.push(new);
                            }
                        }
                        self.highest_uid = self.highest_uid.max(new.uid);
                    }
                    if let Some(id) = message_id_in(message) {
                        actor.shared.events.noticed(actor.shared.delivery.notice(
                            &id,
                            actor.index,
                            seen_at,
                        ));
                    }
                }
                if !fresh.is_empty() && self.client().synced {
                    self.client().fresh = fresh;
                }
            }
            Reply::Numbers(uids)
                if matches!(
                    request,
                    Request::Search {
                        criteria: SearchKey::All,
                        uid: true
                    }
                ) =>
            {
                // The whole Inbox by UID (Roundcube's list): forget what is
                // gone, learn what is new.
                self.inbox.retain(|k| uids.contains(&k.uid));
                for uid in uids {
                    if !self.inbox.iter().any(|k| k.uid == uid) {
                        self.inbox.push(Known { uid, seen: false });
                        self.highest_uid = self.highest_uid.max(uid);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}
