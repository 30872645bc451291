//! The user's day as a recorded client lives it: an action, the copy of a
//! sent message, the logon, and the waits between actions (the client's idle
//! rhythm and its periodic sweeps).

use std::time::Duration;

use peakhour_imap::clients::{ClientModel, Step};
use peakhour_workload::ActionKind;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;

use super::super::ImapSession;
use crate::connector::Connector;
use crate::events::Outcome;
use crate::sessions::{Action, Actor, Failure, sleep_until};

impl<S: AsyncRead + AsyncWrite + Unpin + Send> ImapSession<S> {
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
    pub(super) fn after_activity<C: Connector<Stream = S>>(&mut self, actor: &Actor<'_, C>) {
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
    pub(super) fn idle_period<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
    ) -> Duration {
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
    pub(super) async fn sweep_due<C: Connector<Stream = S>>(
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
