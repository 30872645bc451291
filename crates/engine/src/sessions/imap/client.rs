//! The IMAP session of a user who imitates a recorded client (issue 28):
//! the steps a [`ClientModel`] chooses for each action and each idle period
//! (`peakhour_imap::clients`, pure) performed here over the session's
//! connection slots, and the session's knowledge of its Inbox kept from
//! the replies, as for peakhour's own client. `run --client` and a
//! profile's `[clients]` choose the model ([`peakhour_workload::Personality`]).

use std::time::Duration;

use peakhour_imap::clients::{ClientModel, MAX_SLOTS, Slot, Step, View};
use peakhour_imap::fidelity::{WireCursor, wire_lines};
use peakhour_imap::{
    FetchItem, FetchedMessage, ImapConnection, ListEntry, Reply, Request, SearchKey, Wire,
};
use peakhour_workload::{ActionKind, Personality};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{ImapSession, Known, known};
use crate::connector::Connector;
use crate::events::Outcome;
use crate::sessions::{Action, Actor, Failure, header, on_folder, sleep_until};

/// The model a personality follows; `None` for peakhour's own client.
pub(crate) fn model_of(personality: Personality) -> Option<ClientModel> {
    match personality {
        Personality::Peakhour => None,
        Personality::Thunderbird => Some(ClientModel::Thunderbird),
        Personality::Mbsync => Some(ClientModel::Mbsync),
        Personality::Neomutt => Some(ClientModel::Neomutt),
        Personality::Roundcube => Some(ClientModel::Roundcube),
    }
}

/// What a session imitating a client keeps beside peakhour's own state.
pub(crate) struct ClientState<S> {
    pub(crate) model: ClientModel,
    /// Slots 1.. (slot 0 is the session's own connection).
    extra: Vec<Option<ImapConnection<S>>>,
    /// Per slot, the folder selected on its open connection.
    open: Vec<Option<String>>,
    /// Every selectable folder, as the server listed them.
    folders: Vec<String>,
    drafts: String,
    /// Read but not yet marked `\Seen` on the server.
    pending_seen: Vec<u32>,
    /// Inbox UIDs the last FETCH found that the session did not know.
    fresh: Vec<u32>,
    /// When the client next wakes up while idle.
    next_burst: Instant,
    /// Folders the start's sweep has still to look at, each with its time.
    sweep: std::collections::VecDeque<(Instant, String)>,
    /// Folders mail went into since the client last looked at them.
    changed: std::collections::BTreeSet<String>,
    /// The day's speed (the plan's; a trace may change it).
    pub(crate) speed: f64,
    /// The client's start is over: a FETCH's unknown UIDs are new mail from
    /// now on (at the start they are the mailbox the client already has).
    synced: bool,
    /// The wire of every connection, when traced (the fidelity test).
    pub(crate) trace: Option<Trace>,
}

/// Every connection's traffic in the fixtures' transcript format.
#[derive(Default)]
pub(crate) struct Trace {
    pub(crate) started: Option<std::time::Instant>,
    /// Simulated seconds per real second (the plan's speed): the
    /// transcript is in the day's time, as a recording is.
    pub(crate) scale: f64,
    /// Simulated seconds before `started` (a rescaled trace).
    offset: f64,
    pub(crate) lines: Vec<String>,
    /// Per slot: the connection number it has now, and its cursors.
    connections: Vec<(u32, WireCursor, WireCursor)>,
    opened: u32,
}

impl Trace {
    /// Simulated seconds since the trace started.
    pub(crate) fn seconds(&self) -> f64 {
        self.offset
            + self
                .started
                .map_or(0.0, |s| s.elapsed().as_secs_f64() * self.scale)
    }

    /// From now on, `scale` simulated seconds per real second.
    pub(crate) fn rescale(&mut self, scale: f64) {
        self.offset = self.seconds();
        self.started = Some(std::time::Instant::now());
        self.scale = scale;
    }

    fn open(&mut self, slot: Slot) {
        self.opened += 1;
        if self.connections.len() <= slot {
            self.connections.resize_with(slot + 1, || {
                (0, WireCursor::default(), WireCursor::default())
            });
        }
        self.connections[slot] = (self.opened, WireCursor::default(), WireCursor::default());
        let at = self.seconds();
        self.lines.push(format!("{at:.6} c{} open", self.opened));
    }

    fn record(&mut self, slot: Slot, wire: Vec<Wire>) {
        let at = self.seconds();
        let Some((number, sent, received)) = self.connections.get_mut(slot) else {
            return;
        };
        for chunk in wire {
            let (side, bytes, cursor) = match &chunk {
                Wire::Sent(bytes) => ("C", bytes, &mut *sent),
                Wire::Received(bytes) => ("S", bytes, &mut *received),
            };
            for line in wire_lines(bytes, cursor) {
                self.lines.push(format!("{at:.6} c{number} {side}: {line}"));
            }
        }
    }
}

impl<S> ClientState<S> {
    /// The day runs at `speed` from now on: the client's pending wake-ups
    /// keep their distance in the day's time.
    pub(crate) fn set_speed(&mut self, speed: f64) {
        let now = Instant::now();
        let ratio = self.speed.max(1e-9) / speed.max(1e-9);
        let rescale = |at: Instant| now + at.saturating_duration_since(now).mul_f64(ratio);
        self.next_burst = rescale(self.next_burst);
        for (at, _) in &mut self.sweep {
            *at = rescale(*at);
        }
        self.speed = speed;
        if let Some(trace) = self.trace.as_mut() {
            trace.rescale(speed);
        }
    }

    /// The state of a session that follows `model`, with the folders the
    /// server listed.
    pub(crate) fn new(
        model: ClientModel,
        listing: &[ListEntry],
        inbox: &str,
        traced: Option<f64>,
    ) -> Self {
        let selectable = |e: &&ListEntry| {
            !e.attributes.iter().any(|a| {
                a.eq_ignore_ascii_case("\\Noselect") || a.eq_ignore_ascii_case("\\NonExistent")
            })
        };
        let mut folders: Vec<String> = listing
            .iter()
            .filter(selectable)
            .map(|e| e.name.clone())
            .collect();
        if !folders.iter().any(|f| f == inbox) {
            folders.insert(0, inbox.to_owned());
        }
        let drafts = listing
            .iter()
            .find(|e| {
                e.attributes
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case("\\Drafts"))
            })
            .map_or_else(|| "Drafts".to_owned(), |e| e.name.clone());
        let mut open = vec![None; MAX_SLOTS];
        open[0] = Some(String::new());
        let trace = traced.map(|scale| {
            let mut trace = Trace {
                started: Some(std::time::Instant::now()),
                scale,
                ..Trace::default()
            };
            trace.open(0);
            trace
        });
        ClientState {
            model,
            extra: (1..MAX_SLOTS).map(|_| None).collect(),
            open,
            folders,
            drafts,
            pending_seen: Vec::new(),
            fresh: Vec::new(),
            next_burst: Instant::now(),
            sweep: std::collections::VecDeque::new(),
            changed: std::collections::BTreeSet::new(),
            speed: 1.0,
            synced: false,
            trace,
        }
    }
}

/// The Message-ID in any header or body section a FETCH returned.
fn message_id_in(message: &FetchedMessage) -> Option<String> {
    if let Some(id) = message.envelope.as_ref().and_then(|e| e.message_id.clone()) {
        return Some(id);
    }
    message
        .sections
        .iter()
        .find_map(|(_, bytes)| header(bytes, "Message-ID"))
}

/// The name a command is recorded under (`imap.UID FETCH`).
fn event_name(request: &Request) -> &'static str {
    match request.name() {
        "NOOP" => "imap.NOOP",
        "SELECT" => "imap.SELECT",
        "STATUS" => "imap.STATUS",
        "FETCH" => "imap.FETCH",
        "UID FETCH" => "imap.UID FETCH",
        "UID STORE" => "imap.UID STORE",
        "UID COPY" => "imap.UID COPY",
        "UID MOVE" => "imap.UID MOVE",
        "UID SEARCH" => "imap.UID SEARCH",
        "EXPUNGE" => "imap.EXPUNGE",
        "APPEND" => "imap.APPEND",
        "LIST" => "imap.LIST",
        "LSUB" => "imap.LSUB",
        "NAMESPACE" => "imap.NAMESPACE",
        "CLOSE" => "imap.CLOSE",
        "CHECK" => "imap.CHECK",
        "CAPABILITY" => "imap.CAPABILITY",
        "ENABLE" => "imap.ENABLE",
        "ID" => "imap.ID",
        "LOGOUT" => "imap.LOGOUT",
        _ => "imap.OTHER",
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> ImapSession<S> {
    fn client(&mut self) -> &mut ClientState<S> {
        self.client.as_deref_mut().expect("a client session")
    }

    /// The connection of `slot`, if it is open.
    fn slot(&mut self, slot: Slot) -> Option<&mut ImapConnection<S>> {
        let client = self.client.as_deref_mut()?;
        client.open.get(slot)?.as_ref()?;
        if slot == 0 {
            Some(&mut self.imap)
        } else {
            client.extra.get_mut(slot - 1)?.as_mut()
        }
    }

    /// Asks the model for steps with the session's view of its mailbox.
    fn steps(&mut self, ask: impl FnOnce(ClientModel, &View<'_>) -> Vec<Step>) -> Vec<Step> {
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

    fn trace_slot(&mut self, slot: Slot) {
        let wire = match self.slot(slot) {
            Some(conn) => conn.take_wire(),
            None if slot == 0 => self.imap.take_wire(),
            None => return,
        };
        if let Some(trace) = self.client().trace.as_mut() {
            trace.record(slot, wire);
        }
    }

    async fn step<C: Connector<Stream = S>>(
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
                if let Some(conn) = self.slot(slot)
                    && !conn.idle_in_progress()
                    && conn.capabilities().has("IDLE")
                {
                    let started = conn.idle_start().await?;
                    events.command("imap.IDLE", started.elapsed);
                }
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

    fn close_slot(&mut self, slot: Slot) {
        let client = self.client();
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
    async fn run<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
        slot: Slot,
        request: &Request,
    ) -> Result<(), Failure> {
        let inbox = self.params.inbox.clone();
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

    /// The user's action, as the session's client performs it.
    pub(crate) async fn client_act<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
        action: &Action,
    ) -> Result<Outcome, Failure> {
        match action.kind {
            ActionKind::CheckInbox => {
                let steps = self.steps(|m, v| m.check_inbox(v));
                self.perform(actor, steps).await?;
            }
            ActionKind::Read => {
                let unread_first = actor.shared.plan.params().unread_first;
                let seen = self.inbox.iter().map(|k| k.seen);
                let Some(index) = actor.pick_message(seen, action.seq, unread_first) else {
                    return Ok(Outcome::Skipped("empty_inbox"));
                };
                let uid = self.inbox[index].uid;
                let steps = self.steps(|m, v| m.read(v, uid));
                self.perform(actor, steps).await?;
                actor
                    .shared
                    .events
                    .count(crate::events::Counter::MessageOpens, 1);
                self.inbox[index].seen = true;
                if matches!(
                    self.client().model,
                    ClientModel::Thunderbird | ClientModel::Neomutt
                ) {
                    self.client().pending_seen.push(uid);
                }
            }
            ActionKind::Move | ActionKind::Delete => {
                let delete = action.kind == ActionKind::Delete;
                let params = self.params.clone();
                let seen = self.inbox.iter().map(|k| k.seen);
                let Some(index) = actor.pick_message(seen, action.seq, false) else {
                    return Ok(Outcome::Skipped("empty_inbox"));
                };
                let Some(folder) = actor.move_folder(&params, action.seq, delete) else {
                    return Ok(Outcome::Skipped("no_folders"));
                };
                let uid = self.inbox[index].uid;
                let upload = if self.client().model == ClientModel::Mbsync && !delete {
                    actor
                        .compose(action.nth)
                        .map(|o| o.message)
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                let steps = self.steps(|m, v| m.move_message(v, uid, &folder, delete, &upload));
                self.perform(actor, steps).await?;
                self.inbox.retain(|k| k.uid != uid);
                let client = self.client();
                client.pending_seen.retain(|&u| u != uid);
                client.changed.insert(folder);
            }
            ActionKind::UpdateCalendar => {
                // Not one of the recorded actions: peakhour's own, on a
                // connection of its own when the client holds none.
                let closed = self.client().open[0].is_none();
                if closed {
                    self.perform(actor, vec![Step::Open(0)]).await?;
                }
                let outcome = self.update_calendar(actor, action.nth).await;
                if closed {
                    self.perform(actor, vec![Step::Logout(0)]).await?;
                }
                return outcome;
            }
            ActionKind::Send
            | ActionKind::PollCalendar
            | ActionKind::CreateEvent
            | ActionKind::ChangeEvent
            | ActionKind::DownloadMail => return Ok(Outcome::Skipped("not_routed")),
        }
        self.after_activity(actor);
        Ok(Outcome::Ok)
    }

    /// The user did something: a client whose wake-ups count from its last
    /// activity starts counting again (Thunderbird's IDLE renewal, neomutt's
    /// `timeout`, Roundcube's refresh); mbsync's timer keeps its schedule.
    fn after_activity<C: Connector<Stream = S>>(&mut self, actor: &Actor<'_, C>) {
        if self.client().model != ClientModel::Mbsync {
            let period = self.idle_period(actor);
            self.client().next_burst = Instant::now() + period;
        }
    }

    /// The copy of a sent message, as the client keeps it.
    pub(crate) async fn client_save_copy<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
        message: &[u8],
    ) -> Result<(), Failure> {
        let steps = self.steps(|m, v| m.save_sent(v, message));
        self.perform(actor, steps).await?;
        let sent = self.params.sent_folder.clone();
        self.client().changed.insert(sent);
        self.after_activity(actor);
        Ok(())
    }

    /// The client's start after the engine's logon (folders read on slot 0).
    pub(crate) async fn client_logon<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
    ) -> Result<(), Failure> {
        self.client().speed = actor.shared.plan.speed();
        let steps = self.steps(|m, v| m.logon(v));
        self.perform(actor, steps).await?;
        let period = self.idle_period(actor);
        let inbox = self.params.inbox.clone();
        let client = self.client();
        let now = Instant::now();
        client.next_burst = now + period;
        client.synced = true;
        if let Some((start, spacing)) = client.model.startup_sweep() {
            let speed = client.speed.max(1e-9);
            let folders: Vec<String> = client
                .folders
                .iter()
                .filter(|f| **f != inbox)
                .cloned()
                .collect();
            for (i, folder) in folders.into_iter().enumerate() {
                let due = now + (start + spacing * i as u32).div_f64(speed);
                client.sweep.push_back((due, folder));
            }
        }
        Ok(())
    }

    /// The idle period in real time: the model's, compressed with the day.
    fn idle_period<C: Connector<Stream = S>>(&mut self, actor: &Actor<'_, C>) -> Duration {
        let _ = actor;
        let client = self.client();
        client.model.idle_period().div_f64(client.speed.max(1e-9))
    }

    /// Waits until `due` as the client does: asleep (or in IDLE, which the
    /// server holds) between its periodic wake-ups, each one the model's
    /// idle burst.
    pub(crate) async fn client_wait<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
        due: Instant,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), Failure> {
        loop {
            self.sweep_due(actor).await?;
            let next = self.client().next_burst;
            let sweep = self.client().sweep.front().map(|(at, _)| *at);
            let wake = sweep.map_or(next, |s| s.min(next));
            if wake > due {
                sleep_until(due, stop).await;
                return Ok(());
            }
            if !sleep_until(wake, stop).await {
                return Ok(());
            }
            if wake < next {
                continue;
            }
            let steps = self.steps(|m, v| m.idle_burst(v));
            let period = self.idle_period(actor);
            self.client().next_burst = next + period;
            self.perform(actor, steps).await?;
        }
    }

    /// The folders of the start's sweep whose time has come.
    async fn sweep_due<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
    ) -> Result<(), Failure> {
        let now = Instant::now();
        while let Some((at, folder)) = self.client().sweep.front().cloned() {
            if at > now {
                break;
            }
            self.client().sweep.pop_front();
            let changed = self.client().changed.remove(&folder);
            let steps = self.steps(|m, v| m.sweep_folder(v, &folder, changed));
            self.perform(actor, steps).await?;
        }
        Ok(())
    }
}
