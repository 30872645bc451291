//! After the drain: the copies nobody has noticed yet are searched for, in
//! rounds, in the mailboxes of the recipients still waiting for one, and
//! only in those.
//!
//! Each round searches its mailboxes in parallel ([`SEARCH_TASKS`] tasks
//! taking the next mailbox from one shared list, so a slow mailbox holds up
//! no others), with one session and, in the common case, one search per
//! mailbox: a copy nobody has noticed is still in the Inbox, so the Inbox
//! is searched first, and the other folders (every one but Sent) only while
//! the mailbox still waits for a copy after that. An 800-user run spent
//! about 3 minutes searching every folder of every waiting mailbox
//! (issue 16); 5,000 mailboxes must take under 30 s.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use peakhour_imap::{FetchItem, ImapConnection, ImapError, SearchKey};
use peakhour_workload::{ActionKind, Plan};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::connector::{Connector, open_imap};
use crate::core::{Observer, RunClock, TICK};
use crate::delivery::{DeliveryTracker, Noticed};
use crate::events::{Counter, Event};
use crate::folders::discover;
use crate::population::Population;
use crate::run::RunSettings;
use crate::sessions::pop3::search_maildrop;
use crate::sessions::sleep_until;
use crate::target::{Target, imap_deadline};

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

/// One mailbox's search may take this long at most (its every command has
/// the action timeout as well): a mailbox that does not answer must not hold
/// up the others searched after it by the same task.
pub const MAILBOX_SEARCH_LIMIT: Duration = Duration::from_secs(120);

/// How a reconciliation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reconciled {
    /// It ran to its end (false: `stop` was raised).
    pub(crate) finished: bool,
    /// Search tasks that panicked: the mailboxes they had not searched yet
    /// stay marked unsearched, so their copies are reported as such.
    pub(crate) panics: u64,
}

/// What the reconciliation works with: the run's parts, borrowed for its
/// duration.
pub(crate) struct Reconciliation<'a, C> {
    pub(crate) connector: &'a Arc<C>,
    pub(crate) plan: &'a Plan,
    pub(crate) population: &'a Arc<Population>,
    pub(crate) target: &'a Arc<Target>,
    pub(crate) settings: &'a RunSettings,
    pub(crate) delivery: &'a Arc<DeliveryTracker>,
}

impl<C: Connector> Reconciliation<'_, C> {
    /// After the drain, looks for every copy not yet seen with a header
    /// search in each waiting recipient's mailbox, in rounds, until
    /// [`reconciliation_done`] says so. Stopping while rounds still find
    /// copies would call delivered copies lost, as an 800-user run did with
    /// 2,460 of them while Postfix's queue was still emptying (a server past
    /// saturation drains its mail queue for minutes). What is still missing
    /// at the end is lost; what could not be searched is marked so.
    ///
    /// [`RECONCILE_LIMIT`] holds inside a round too: a round still
    /// searching at the limit is abandoned there.
    pub(crate) async fn run(
        &self,
        observer: &mut dyn Observer,
        clock: &RunClock,
        stop: &mut watch::Receiver<bool>,
    ) -> Reconciled {
        let start = Instant::now();
        let deadline = start + self.settings.drain.max(Duration::from_secs(5));
        let limit = start + RECONCILE_LIMIT;
        let mut rounds = 0;
        let mut found_last_round = 0_usize;
        let mut ended = Reconciled {
            finished: false,
            panics: 0,
        };
        // A sharded run cannot know which copies other shards sent its
        // users: it searches every one of its mailboxes, round after round
        // while a round still finds copies (docs/architecture.md).
        let shard = self.settings.shard;
        let own_users: Vec<u32> = shard.users(self.plan.users()).collect();
        loop {
            let search_all = shard.count() > 1 && (rounds == 0 || found_last_round > 0);
            let waiting = if search_all {
                own_users.clone()
            } else {
                self.delivery.outstanding_users()
            };
            let now = Instant::now();
            if *stop.borrow() {
                return ended;
            }
            let at = RoundStart {
                rounds,
                found_last_round,
                waiting: waiting.len(),
                past_deadline: now >= deadline,
                past_limit: now >= limit,
            };
            if reconciliation_done(at) {
                ended.finished = true;
                return ended;
            }
            rounds += 1;
            let round = SearchRound {
                parts: self,
                round: rounds,
                limit,
            };
            let Some(result) = round.run(&waiting, observer, clock, stop).await else {
                return ended;
            };
            found_last_round = result.found;
            ended.panics += result.panics;
            sleep_until(Instant::now() + Duration::from_millis(500), stop).await;
        }
    }
}

/// What one round did.
struct RoundResult {
    /// Copies found.
    found: usize,
    /// Search tasks that panicked.
    panics: u64,
}

/// One round of reconciliation: every waiting recipient's mailbox searched once.
struct SearchRound<'a, 'b, C> {
    parts: &'a Reconciliation<'b, C>,
    round: u32,
    /// The reconciliation's overall limit: the round is abandoned there.
    limit: Instant,
}

impl<C: Connector> SearchRound<'_, '_, C> {
    /// Searches the mailboxes of `waiting`, reporting progress once a
    /// second, until done or the limit; `None` if `stop` was raised.
    async fn run(
        &self,
        waiting: &[u32],
        observer: &mut dyn Observer,
        clock: &RunClock,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<RoundResult> {
        let delivery = self.parts.delivery;
        // Unsearched until a search says otherwise: a search that fails,
        // times out, panics or is cut off by the limit leaves its mailbox so.
        delivery.searching(waiting);
        let searched = Arc::new(AtomicUsize::new(0));
        let queue = Arc::new(self.mailboxes(waiting));
        let mut searches = JoinSet::new();
        // Bounded concurrency: a reconciliation must not become a load of its own.
        for _ in 0..SEARCH_TASKS.min(waiting.len()) {
            searches.spawn(self.search(queue.clone(), searched.clone()));
        }
        let mut result = RoundResult {
            found: 0,
            panics: 0,
        };
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
                joined = searches.join_next() => match joined {
                    Some(Ok(outcome)) => {
                        result.found += outcome.latencies.len() + outcome.from_other_shards as usize;
                        for latency in outcome.latencies {
                            observer.event(clock, Instant::now(), &Event::Delivered(latency));
                        }
                        if outcome.from_other_shards > 0 {
                            let counter = Counter::RecipientsDeliveredFromOtherShard;
                            let by = outcome.from_other_shards;
                            observer.event(clock, Instant::now(), &Event::Count { counter, by });
                        }
                        for (kind, example) in outcome.failures {
                            if let Some(example) = example {
                                // The first of each kind is kept (RunRecorder).
                                let action = "reconcile".to_owned();
                                let kind = kind.clone();
                                let said = Event::ErrorExample { action, kind, example };
                                observer.event(clock, Instant::now(), &said);
                            }
                            observer.event(clock, Instant::now(), &Event::SearchFailed(kind));
                        }
                    }
                    Some(Err(error)) => {
                        if error.is_panic() {
                            // Not "found nothing": its mailboxes stay unsearched.
                            result.panics += 1;
                            observer.event(clock, Instant::now(), &Event::Panicked { role: "reconcile" });
                        }
                    }
                    None => return Some(result),
                },
                () = tokio::time::sleep_until(self.limit) => {
                    searches.abort_all();
                    return Some(result);
                }
                _ = progress_tick.tick() => {
                    let (submitted_recipients, delivered_recipients) = delivery.totals();
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

    /// The mailboxes of `users` as one list the search tasks share.
    fn mailboxes(&self, users: &[u32]) -> MailboxQueue {
        let population = self.parts.population;
        MailboxQueue {
            mailboxes: users
                .iter()
                .filter_map(|&u| population.address(u).ok().map(|a| (u, a)))
                .collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// One search task: the next mailbox of `queue` until none is left.
    fn search(
        &self,
        queue: Arc<MailboxQueue>,
        searched: Arc<AtomicUsize>,
    ) -> impl Future<Output = SearchOutcome> + Send + 'static {
        let parts = self.parts;
        let connector = parts.connector.clone();
        let target = parts.target.clone();
        let run_id = parts.settings.run_id.clone();
        let delivery = parts.delivery.clone();
        let timeout = parts.settings.connect_timeout;
        let command_timeout = parts.settings.action_timeout;
        let sent_folder = parts.plan.params().sent_folder.clone();
        // POP3 users' maildrops are searched over POP3 (UIDL, TOP 0).
        let over_pop3 = parts.plan.actions().contains(&ActionKind::DownloadMail);
        async move {
            let mut outcome = SearchOutcome::default();
            while let Some((user, address)) = queue.take() {
                let search = MailboxSearch {
                    target: &target,
                    delivery: &delivery,
                    user: *user,
                    address,
                    run_id: &run_id,
                    sent_folder: &sent_folder,
                    timeout,
                    command_timeout,
                };
                let found = if over_pop3 {
                    let search = search_maildrop(&target, *user, address, &run_id, timeout);
                    match tokio::time::timeout(MAILBOX_SEARCH_LIMIT, search).await {
                        Ok(Ok(seen)) => {
                            let mut found = Found::default();
                            let at = Instant::now();
                            for id in &seen {
                                found.add(delivery.notice(id, *user, at));
                            }
                            Ok(found)
                        }
                        Ok(Err(failure)) => Err((failure.kind, failure.detail)),
                        Err(_) => Err(("pop3:timeout".to_owned(), None)),
                    }
                } else {
                    imap_deadline(MAILBOX_SEARCH_LIMIT, "SEARCH", search.run(&*connector))
                        .await
                        .map_err(|error| {
                            (format!("imap:{}", error.kind()), Some(error.to_string()))
                        })
                };
                match found {
                    Ok(found) => {
                        delivery.searched(*user);
                        outcome.latencies.extend(found.latencies);
                        outcome.from_other_shards += found.from_other_shards;
                    }
                    Err((kind, detail)) => {
                        let example = detail.map(|d| format!("searching {address}: {d}"));
                        outcome.failures.push((kind, example));
                    }
                }
                searched.fetch_add(1, Ordering::Relaxed);
            }
            outcome
        }
    }
}

/// Search tasks of a round: enough to keep a two-core server busy, few
/// enough not to become a load of their own.
pub const SEARCH_TASKS: usize = 16;

/// The mailboxes one round searches (user, address), taken in order by
/// whichever search task is free.
struct MailboxQueue {
    mailboxes: Vec<(u32, String)>,
    next: AtomicUsize,
}

impl MailboxQueue {
    fn take(&self) -> Option<&(u32, String)> {
        self.mailboxes
            .get(self.next.fetch_add(1, Ordering::Relaxed))
    }
}

/// What one search task found.
#[derive(Debug, Default)]
struct SearchOutcome {
    /// Delivery latencies of the copies it found.
    latencies: Vec<Duration>,
    /// Copies from other shards' senders it found (sharded runs).
    from_other_shards: u64,
    /// Error kinds of the searches that failed, each with what it said.
    failures: Vec<(String, Option<String>)>,
}

/// The copies one mailbox search found and noticed in the delivery books.
#[derive(Debug, Default)]
struct Found {
    /// Delivery latencies of this shard's own copies.
    latencies: Vec<Duration>,
    /// Copies from other shards' senders (sharded runs).
    from_other_shards: u64,
}

impl Found {
    fn add(&mut self, noticed: Noticed) {
        match noticed {
            Noticed::Delivered(latency) => self.latencies.push(latency),
            Noticed::FromOtherShard => self.from_other_shards += 1,
            Noticed::Nothing => {}
        }
    }
}

/// The copies of this run's messages that `address` was waiting for, found
/// in its mailbox and noticed in the delivery books, as delivery latencies.
///
/// The Inbox first: a copy nobody noticed is still there, so one search
/// usually settles the mailbox. Only while the mailbox still waits after
/// that are the other folders listed and searched, every one but Sent: a
/// user may have moved or deleted a copy before its arrival was noticed,
/// and a copy filed away is still delivered. Sent is left out because the
/// sender's own copy there carries the same Message-ID and would count a
/// self-addressed copy twice.
struct MailboxSearch<'a> {
    target: &'a Target,
    delivery: &'a DeliveryTracker,
    user: u32,
    address: &'a str,
    run_id: &'a str,
    sent_folder: &'a str,
    timeout: Duration,
    command_timeout: Duration,
}

impl MailboxSearch<'_> {
    async fn run<C: Connector>(&self, connector: &C) -> Result<Found, ImapError> {
        let mut imap =
            open_imap(connector, self.target, self.timeout, self.command_timeout).await?;
        let (login, password) = self.target.login(self.user, self.address);
        imap.login(login, password).await?;
        let mut found = Found::default();
        self.search_folder(&mut imap, "INBOX", &mut found).await?;
        if self.still_waiting() {
            let prefix = self.target.options.folder_prefix.as_deref();
            let (server, listing) = discover(&mut imap, prefix, |_, _| {}).await?;
            // The profile's Sent as the server names it (`INBOX.Sent`, or the
            // folder marked \Sent).
            let sent = server
                .sent
                .clone()
                .unwrap_or_else(|| server.name(self.sent_folder));
            let folders: Vec<String> = listing
                .into_iter()
                .filter(|entry| {
                    !entry
                        .attributes
                        .iter()
                        .any(|a| a.eq_ignore_ascii_case("\\Noselect"))
                        && !entry.name.eq_ignore_ascii_case(&sent)
                        && !entry.name.eq_ignore_ascii_case("INBOX")
                })
                .map(|entry| entry.name)
                .collect();
            for folder in folders {
                if !self.still_waiting() {
                    break;
                }
                self.search_folder(&mut imap, &folder, &mut found).await?;
            }
        }
        let _ = imap.logout().await;
        Ok(found)
    }

    /// Whether the mailbox may still hold copies nobody noticed: this
    /// shard's books say so, or (in a sharded run) copies from other shards'
    /// senders, which no book here lists, may be anywhere.
    fn still_waiting(&self) -> bool {
        self.delivery.is_sharded() || self.delivery.is_waiting(self.user)
    }

    /// Searches one folder for the run's messages and notices the copies
    /// found, adding them to `found`.
    async fn search_folder<S>(
        &self,
        imap: &mut ImapConnection<S>,
        folder: &str,
        found: &mut Found,
    ) -> Result<(), ImapError>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send,
    {
        let Some(set) = run_messages_in(imap, folder, self.run_id).await? else {
            return Ok(());
        };
        let fetched = imap
            .fetch(&set, &[FetchItem::Uid, FetchItem::Envelope], true)
            .await?
            .value;
        let at = Instant::now();
        for id in fetched
            .into_iter()
            .filter_map(|m| m.envelope.and_then(|e| e.message_id))
        {
            found.add(self.delivery.notice(&id, self.user, at));
        }
        Ok(())
    }
}

/// The UID set of this run's messages in `folder` (the ones carrying its
/// `X-Peakhour-Run` header), opened read-only; `None` when it holds none.
/// The reconciliation and the delivery checks both look for them so.
pub(crate) async fn run_messages_in<S>(
    imap: &mut ImapConnection<S>,
    folder: &str,
    run_id: &str,
) -> Result<Option<String>, ImapError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send,
{
    if imap.examine(folder).await?.value.exists == 0 {
        return Ok(None);
    }
    let header = SearchKey::Header("X-Peakhour-Run".into(), run_id.into());
    let uids = imap.search(&header, true).await?.value;
    if uids.is_empty() {
        return Ok(None);
    }
    let set = uids.iter().map(u32::to_string).collect::<Vec<_>>();
    Ok(Some(set.join(",")))
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
