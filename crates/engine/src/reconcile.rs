//! After the drain: the copies nobody has noticed yet are searched for, in
//! rounds, in every folder but Sent of each waiting recipient's mailbox.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use peakhour_imap::{FetchItem, ImapError, SearchKey};
use peakhour_workload::{ActionKind, Plan};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::connector::{Connector, open_imap};
use crate::delivery::DeliveryTracker;
use crate::events::Event;
use crate::pop3_user::search_maildrop;
use crate::run::{Observer, RunClock, RunSettings, TICK};
use crate::target::Target;
use crate::user::sleep_until;

/// How far the reconciliation after the drain has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconcileProgress {
    /// Search round, from 1: mailboxes still waiting are searched again
    /// until the drain time runs out.
    pub round: u32,
    /// Mailboxes searched in this round.
    pub searched: usize,
    /// Mailboxes this round searches.
    pub mailboxes: usize,
    /// Recipients of accepted submissions.
    pub submitted_recipients: u64,
    /// Recipients whose copy has been seen so far.
    pub delivered_recipients: u64,
}

/// The longest reconciliation after the drain, however many copies are still
/// arriving.
pub const RECONCILE_LIMIT: Duration = Duration::from_secs(600);

/// Where reconciliation stands before a round.
#[derive(Debug, Clone, Copy)]
struct RoundStart {
    /// Rounds done so far.
    rounds: u32,
    /// Copies the last round found.
    found_last_round: usize,
    /// Recipients still waiting for a copy.
    waiting: usize,
    /// Past the drain time (counted from the reconciliation's start).
    past_deadline: bool,
    /// Past [`RECONCILE_LIMIT`].
    past_limit: bool,
}

/// The stopping rule: done when nothing is waiting any more, or when the
/// drain time has run out *and* the last round found nothing new (a round
/// that still finds copies means deliveries are still arriving), or at the
/// limit in any case.
fn reconciliation_done(at: RoundStart) -> bool {
    let still_arriving = at.rounds == 0 || at.found_last_round > 0;
    at.waiting == 0 || (at.past_deadline && !still_arriving) || at.past_limit
}

/// After the drain, looks for every copy not yet seen with a header search
/// in each waiting recipient's mailbox, in rounds, until
/// [`reconciliation_done`] says so. Stopping while rounds still find copies
/// would call delivered copies lost, as an 800-user run did with 2,460 of
/// them while Postfix's queue was still emptying (a server past saturation
/// drains its mail queue for minutes). What is still missing at the end is
/// lost.
///
/// Returns false when `stop` was raised before it finished.
#[allow(
    clippy::too_many_arguments,
    reason = "the run's parts, borrowed for the reconciliation's duration"
)]
pub(crate) async fn reconcile<C: Connector>(
    connector: &Arc<C>,
    plan: &Plan,
    target: &Arc<Target>,
    settings: &RunSettings,
    delivery: &Arc<DeliveryTracker>,
    observer: &mut dyn Observer,
    clock: &RunClock,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    let start = Instant::now();
    let deadline = start + settings.drain.max(Duration::from_secs(5));
    let limit = start + RECONCILE_LIMIT;
    let mut rounds = 0;
    let mut found_last_round = 0_usize;
    loop {
        let waiting = delivery.outstanding_users();
        let now = Instant::now();
        if *stop.borrow() {
            return false;
        }
        let at = RoundStart {
            rounds,
            found_last_round,
            waiting: waiting.len(),
            past_deadline: now >= deadline,
            past_limit: now >= limit,
        };
        if reconciliation_done(at) {
            return true;
        }
        rounds += 1;
        let round = SearchRound {
            connector,
            plan,
            target,
            settings,
            delivery,
            round: rounds,
        };
        match round.run(&waiting, observer, clock, stop).await {
            Some(found) => found_last_round = found,
            None => return false,
        }
        sleep_until(Instant::now() + Duration::from_millis(500), stop).await;
    }
}

/// One round of reconciliation: every waiting recipient's mailbox searched once.
struct SearchRound<'a, C> {
    connector: &'a Arc<C>,
    plan: &'a Plan,
    target: &'a Arc<Target>,
    settings: &'a RunSettings,
    delivery: &'a Arc<DeliveryTracker>,
    round: u32,
}

impl<C: Connector> SearchRound<'_, C> {
    /// Searches the mailboxes of `waiting`, reporting progress once a
    /// second; returns how many copies it found, or `None` if `stop` was
    /// raised.
    async fn run(
        &self,
        waiting: &[u32],
        observer: &mut dyn Observer,
        clock: &RunClock,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<usize> {
        let searched = Arc::new(AtomicUsize::new(0));
        let mut searches = JoinSet::new();
        // Bounded concurrency: a reconciliation must not become a load of its own.
        for chunk in waiting.chunks(waiting.len().div_ceil(16).max(1)) {
            searches.spawn(self.search(chunk, searched.clone()));
        }
        let mut found = 0;
        let mut progress_tick = tokio::time::interval(TICK);
        let mut stop_open = true;
        loop {
            tokio::select! {
                changed = stop.changed(), if stop_open => {
                    if changed.is_err() {
                        stop_open = false; // nobody can raise it any more
                    } else if *stop.borrow() {
                        searches.abort_all();
                        return None;
                    }
                }
                result = searches.join_next() => match result {
                    Some(result) => {
                        let latencies = result.unwrap_or_default();
                        found += latencies.len();
                        for latency in latencies {
                            observer.event(clock, Instant::now(), &Event::Delivered(latency));
                        }
                    }
                    None => return Some(found),
                },
                _ = progress_tick.tick() => {
                    let (submitted_recipients, delivered_recipients) = self.delivery.totals();
                    observer.reconciling(ReconcileProgress {
                        round: self.round,
                        searched: searched.load(Ordering::Relaxed),
                        mailboxes: waiting.len(),
                        submitted_recipients,
                        delivered_recipients,
                    });
                }
            }
        }
    }

    /// One search task: the mailboxes of `users` one after the other;
    /// returns the delivery latencies of the copies it found.
    fn search(
        &self,
        users: &[u32],
        searched: Arc<AtomicUsize>,
    ) -> impl Future<Output = Vec<Duration>> + Send + 'static {
        let users: Vec<(u32, String)> = users.iter().map(|&u| (u, self.plan.address(u))).collect();
        let connector = self.connector.clone();
        let target = self.target.clone();
        let run_id = self.settings.run_id.clone();
        let delivery = self.delivery.clone();
        let timeout = self.settings.connect_timeout;
        let sent_folder = self.plan.params().sent_folder.clone();
        // POP3 users' maildrops are searched over POP3 (UIDL, TOP 0).
        let over_pop3 = self.plan.actions().contains(&ActionKind::DownloadMail);
        async move {
            let mut found = Vec::new();
            for (user, address) in users {
                let search = MailboxSearch {
                    target: &target,
                    user,
                    address: &address,
                    run_id: &run_id,
                    sent_folder: &sent_folder,
                    timeout,
                };
                let seen = if over_pop3 {
                    search_maildrop(&target, user, &address, &run_id, timeout)
                        .await
                        .ok()
                } else {
                    search.run(&*connector).await.ok()
                };
                if let Some(seen) = seen {
                    let at = Instant::now();
                    for id in seen {
                        if let Some(latency) = delivery.noticed(&id, user, at) {
                            found.push(latency);
                        }
                    }
                }
                searched.fetch_add(1, Ordering::Relaxed);
            }
            found
        }
    }
}

/// Message-IDs of this run's messages anywhere in `address`'s mailbox but
/// its Sent folder. Every folder, not just the Inbox: a user may have moved
/// or deleted a copy before its arrival was noticed, and a copy filed away is
/// still delivered. Sent is left out because the sender's own copy there
/// carries the same Message-ID and would count a self-addressed copy twice.
struct MailboxSearch<'a> {
    target: &'a Target,
    user: u32,
    address: &'a str,
    run_id: &'a str,
    sent_folder: &'a str,
    timeout: Duration,
}

impl MailboxSearch<'_> {
    async fn run<C: Connector>(&self, connector: &C) -> Result<Vec<String>, ImapError> {
        let MailboxSearch {
            target,
            user,
            address,
            run_id,
            sent_folder,
            timeout,
        } = *self;
        let mut imap = open_imap(connector, target, timeout).await?;
        let (login, password) = target.login(user, address);
        imap.login(login, password).await?;
        let folders: Vec<String> = imap
            .list("", "*")
            .await?
            .value
            .into_iter()
            .filter(|entry| {
                !entry
                    .attributes
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case("\\Noselect"))
                    && !entry.name.eq_ignore_ascii_case(sent_folder)
            })
            .map(|entry| entry.name)
            .collect();
        let mut ids = Vec::new();
        for folder in folders {
            if imap.examine(&folder).await?.value.exists == 0 {
                continue;
            }
            let uids = imap
                .search(
                    &SearchKey::Header("X-Peakhour-Run".into(), run_id.into()),
                    true,
                )
                .await?
                .value;
            if uids.is_empty() {
                continue;
            }
            let set = uids
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",");
            let fetched = imap
                .fetch(&set, &[FetchItem::Uid, FetchItem::Envelope], true)
                .await?
                .value;
            ids.extend(
                fetched
                    .into_iter()
                    .filter_map(|m| m.envelope.and_then(|e| e.message_id)),
            );
        }
        let _ = imap.logout().await;
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciliation_stops_when_all_are_found_or_when_copies_stop_arriving_past_the_deadline() {
        let at = |rounds, found_last_round, waiting, past_deadline, past_limit| RoundStart {
            rounds,
            found_last_round,
            waiting,
            past_deadline,
            past_limit,
        };
        // (round start, done?)
        let table = [
            (at(0, 0, 0, false, false), true),  // nothing to look for
            (at(0, 0, 5, true, false), false),  // the first round always runs
            (at(3, 0, 5, false, false), false), // drain time left
            (at(3, 2, 5, true, false), false),  // still arriving past the deadline
            (at(3, 0, 5, true, false), true),   // past it, and the last round found nothing
            (at(3, 2, 5, true, true), true),    // the limit, whatever arrives
            (at(3, 2, 0, false, false), true),  // everything found
        ];
        for (start, done) in table {
            assert_eq!(reconciliation_done(start), done, "{start:?}");
        }
    }
}
