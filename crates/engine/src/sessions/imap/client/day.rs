//! The user's day as a recorded client lives it: an action, the copy of a
//! sent message, the logon, and the waits between actions (the client's idle
//! rhythm and its periodic sweeps).

use std::time::Duration;

use peakhour_imap::clients::{ClientModel, Step, profile_key};
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
        self.discovery_done(actor).await?;
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
                let shown = self.steps(|m, v| m.shown_after_move(v, uid, delete));
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
                client.pending_seen.extend(shown);
                client.changed.insert(folder, true);
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

    /// The end of the client's folder discovery, if it is still to come
    /// ([`ClientModel::discovery_tail`]).
    async fn discovery_done<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
    ) -> Result<(), Failure> {
        let tail = std::mem::take(&mut self.client().tail);
        self.perform(actor, tail).await
    }

    /// The user did something: a client whose wake-ups count from its last
    /// activity starts counting again (neomutt's `timeout`, Roundcube's
    /// refresh); mbsync's timer and the server's keepalive that Thunderbird
    /// answers keep their schedule ([`ClientModel::wakes_on_schedule`]).
    pub(super) fn after_activity<C: Connector<Stream = S>>(&mut self, actor: &Actor<'_, C>) {
        if !self.client().model.wakes_on_schedule() {
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
        self.discovery_done(actor).await?;
        let steps = self.steps(|m, v| m.save_sent(v, message));
        self.perform(actor, steps).await?;
        let sent = self.params.sent_folder.clone();
        self.client().changed.entry(sent).or_insert(false);
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
        // One fixed folder order per user, as a profile's directory keeps it.
        let profile = profile_key(actor.shared.plan.seed(), actor.index);
        let order = self.steps(|m, v| m.sweep_order(v, profile));
        let changed = self.steps(|m, v| m.changed_at_start(v));
        let tail = self.steps(|m, v| m.discovery_tail(v));
        let client = self.client();
        let now = Instant::now();
        let speed = client.speed.max(1e-9);
        client.next_burst = now + period;
        client.synced = true;
        client
            .changed
            .extend(changed.into_iter().map(|folder| (folder, false)));
        client.tail = tail;
        if let Some((start, spacing)) = client.model.startup_sweep() {
            for (i, folder) in order.into_iter().enumerate() {
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
            let later = self.client().later.iter().map(|(at, _)| *at).min();
            let wake = [sweep, later]
                .into_iter()
                .flatten()
                .fold(next, Instant::min);
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

    /// The folders of the start's sweep, and the steps the client put off,
    /// whose time has come.
    pub(super) async fn sweep_due<C: Connector<Stream = S>>(
        &mut self,
        actor: &Actor<'_, C>,
    ) -> Result<(), Failure> {
        let now = Instant::now();
        loop {
            let later = &mut self.client().later;
            let Some(first) = (0..later.len())
                .filter(|&i| later[i].0 <= now)
                .min_by_key(|&i| later[i].0)
            else {
                break;
            };
            let (_, step) = later.remove(first);
            match step {
                Step::Idle(slot) => {
                    let done = self.idle_now(actor, slot).await;
                    self.trace_slot(slot);
                    done?;
                }
                step => self.perform(actor, vec![step]).await?,
            }
        }
        while let Some((at, folder)) = self.client().sweep.front().cloned() {
            if at > now {
                break;
            }
            self.client().sweep.pop_front();
            // The discovery ends before the sweep at the latest, on a folder
            // connection still young (Dovecot drops a silent one after 30
            // minutes), when the user's first action comes later.
            self.discovery_done(actor).await?;
            let changed = self.client().changed.remove(&folder);
            let steps = self.steps(|m, v| m.sweep_folder(v, &folder, changed));
            self.perform(actor, steps).await?;
        }
        Ok(())
    }
}
