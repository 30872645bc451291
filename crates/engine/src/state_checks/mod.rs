//! State checks in a run (`run --check-state`, issue 27 item 2): every IMAP
//! session's recorded wire goes to its own
//! `SessionModel` (peakhour-state-check), and every interval a
//! checkpoint makes the sessions of each account agree.
//!
//! * [`StateCheckHub`] is the run's coordinator, shared by every user: it asks
//!   for checkpoints (a generation number on a watch channel), groups the
//!   sessions by the account they logged on to, adds up the checks and keeps
//!   the violations, and knows how long each user has been held at
//!   checkpoints.
//! * [`SessionChecker`] sits beside one IMAP session: `feed` hands it what
//!   went over the wire, `hold` takes it through a checkpoint.
//!
//! A checkpoint, for the sessions of one account (imaptest's, in
//! `src/checkpoint.c`): each session, once its action is over, arrives and
//! waits until every other session of the account has arrived too (nothing
//! changes the mailbox from then on); then each sends NOOP (which ends its
//! IDLE), so that it is told of every change, and hands in its snapshot; the
//! last one in compares them (peakhour-state-check's `checkpoint`). A session that does not
//! arrive within the limit (it is in a long action, or reconnecting) makes
//! the group give up that checkpoint, counted as missed.
//!
//! **The pause is not latency.** While a user waits at a checkpoint its
//! schedule stands still: the pause is added to every later intended start
//! ([`StateCheckHub::shift`]), so no action is measured late, or slower,
//! because of it. The price is that actions pushed past the end of the
//! steady phase are not run; the summary says how long the pauses were.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use peakhour_analysis::{KindCount, StateChecks, StateViolation, VIOLATIONS_KEPT};
use peakhour_imap::{ImapConnection, ImapError, SearchKey, Wire};
use peakhour_state_check::{
    CheckCounts, CheckKind, RawLog, SessionModel, SessionOptions, Snapshot, Violation, checkpoint,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;

mod evidence;
#[cfg(test)]
mod tests;

// JMAP and CalDAV sessions' checks and the audit after a run over JMAP.
mod caldav;
mod jmap;
pub(crate) use caldav::CalDavChecker;
pub(crate) use jmap::{JmapChecker, options as jmap_options};

/// The default time between two checkpoints (`--check-state` without a value).
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(30);

/// The run's state checks: checkpoints asked for, sessions grouped by
/// account, and what they found.
#[derive(Debug)]
pub struct StateCheckHub {
    interval: Duration,
    /// How long a session waits at a checkpoint for the others.
    limit: Duration,
    /// The checkpoint generation: raised once per interval.
    requested: watch::Sender<u64>,
    groups: Mutex<HashMap<u32, Arc<watch::Sender<Group>>>>,
    totals: Mutex<Totals>,
    /// Per user, nanoseconds held at checkpoints so far.
    shifts: Box<[AtomicU64]>,
    /// The JMAP sessions' expectations, for the audit after the run.
    jmap: jmap::JmapRecords,
    /// When the checks began (the run's start): violations are timed from it.
    epoch: Instant,
}

/// One account's sessions at the current checkpoint.
#[derive(Debug, Default)]
struct Group {
    /// Sessions logged on to the account: member id and the generation
    /// current when it joined (it takes part from the next one on).
    members: BTreeMap<u64, u64>,
    generation: u64,
    arrived: BTreeSet<u64>,
    /// Every session has arrived: no more come for this generation.
    closed: bool,
    submitted: usize,
    snapshots: Vec<Snapshot>,
    /// A session did not come in time: this generation is given up.
    abandoned: bool,
    compared: bool,
}

impl Group {
    fn everyone_arrived(&self) -> bool {
        self.members
            .iter()
            .filter(|(_, joined)| **joined < self.generation)
            .all(|(member, _)| self.arrived.contains(member))
    }
}

#[derive(Debug, Default)]
struct Totals {
    checks: CheckCounts,
    violations: BTreeMap<CheckKind, u64>,
    examples: Vec<StateViolation>,
    checkpoints: u64,
    missed: u64,
    pause: Duration,
    lost_track: u64,
    undecodable: u64,
    /// The raw logs of sessions with a violation.
    logs: evidence::SessionLogs,
}

/// Whether user `user`'s IMAP session is its account's only writer of
/// flags, so that its own STOREs are checked (`own_store_lost`): its
/// account is its own (`Plan::sessions_on`), no POP3 download marks or
/// deletes its messages, and it imitates no recorded client (whose other
/// connections write too). Mail delivered meanwhile only adds messages.
pub(crate) fn sole_writer(plan: &peakhour_workload::Plan, user: u32) -> bool {
    use peakhour_workload::ActionKind;
    plan.sessions_on(plan.account_of(user)) == 1
        && !plan.actions().contains(&ActionKind::DownloadMail)
        && plan.client_of(user) == peakhour_workload::Personality::Peakhour
}

impl StateCheckHub {
    /// Checks for a run of `users` users, a checkpoint every `interval`,
    /// each session waiting at most `limit` for the others of its account.
    pub fn new(interval: Duration, limit: Duration, users: u32) -> Arc<Self> {
        Arc::new(StateCheckHub {
            interval,
            limit,
            requested: watch::Sender::new(0),
            groups: Mutex::new(HashMap::new()),
            totals: Mutex::new(Totals::default()),
            shifts: (0..users).map(|_| AtomicU64::new(0)).collect(),
            jmap: jmap::JmapRecords::default(),
            epoch: Instant::now(),
        })
    }

    /// The time between two checkpoints.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Asks every session for a checkpoint (the run's ticker calls it once
    /// per interval).
    pub fn request_checkpoint(&self) {
        self.requested.send_modify(|g| *g += 1);
    }

    /// Asks for a checkpoint every interval until `until`.
    pub(crate) async fn tick_until(self: Arc<Self>, until: Instant) {
        let mut next = Instant::now() + self.interval;
        while next < until {
            tokio::time::sleep_until(next).await;
            self.request_checkpoint();
            next += self.interval;
        }
    }

    /// How long user `user` has been held at checkpoints: its schedule
    /// stands still meanwhile, so every later intended start moves by it.
    pub fn shift(&self, user: u32) -> Duration {
        self.shifts.get(user as usize).map_or(Duration::ZERO, |s| {
            Duration::from_nanos(s.load(Ordering::Relaxed))
        })
    }

    /// The checker of a new session of user `user`, logged on to the account
    /// of user `account`; `client` names it in violations.
    /// `sole_writer`: no other session changes the account (the module's `sole_writer`).
    pub fn session(
        self: &Arc<Self>,
        user: u32,
        account: u32,
        client: String,
        sole_writer: bool,
    ) -> SessionChecker {
        let group = self.group(account);
        let seen = *self.requested.borrow();
        let member = next_member_id();
        group.send_modify(|g| {
            g.members.insert(member, seen);
        });
        SessionChecker {
            model: SessionModel::new(client, SessionOptions { sole_writer }),
            hub: self.clone(),
            group,
            member,
            user,
            requests: self.requested.subscribe(),
            seen,
            log: RawLog::new(),
        }
    }

    fn group(&self, account: u32) -> Arc<watch::Sender<Group>> {
        self.groups
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(account)
            .or_insert_with(|| Arc::new(watch::Sender::new(Group::default())))
            .clone()
    }

    fn totals(&self) -> std::sync::MutexGuard<'_, Totals> {
        self.totals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, violations: Vec<Violation>) {
        if violations.is_empty() {
            return;
        }
        let at_s = self.epoch.elapsed().as_secs_f64();
        let mut totals = self.totals();
        for v in violations {
            *totals.violations.entry(v.kind).or_default() += 1;
            totals.logs.want(&v.client, None);
            if totals.examples.len() < VIOLATIONS_KEPT {
                totals.examples.push(StateViolation {
                    check: v.kind.name().to_owned(),
                    client: v.client,
                    mailbox: v.mailbox,
                    seq: v.seq,
                    uid: v.uid,
                    expected: v.expected,
                    seen: v.seen,
                    at_s: Some(at_s),
                });
            }
        }
    }

    /// Checks made and violations found outside any session (the delivery
    /// checks after the drain).
    pub(crate) fn add_checked(&self, checks: &CheckCounts, violations: Vec<Violation>) {
        self.totals().checks.add(checks);
        self.record(violations);
    }

    fn compare(&self, snapshots: &[Snapshot]) {
        let mailboxes: BTreeSet<&str> = snapshots.iter().map(|s| s.mailbox.as_str()).collect();
        let mut found = Vec::new();
        for mailbox in mailboxes {
            let outcome = checkpoint(mailbox, snapshots);
            let mut totals = self.totals();
            totals.checks.add(&outcome.checks);
            totals.checkpoints += 1;
            // Every session compared shows its side of a disagreement.
            for v in &outcome.violations {
                for s in snapshots.iter().filter(|s| s.mailbox == mailbox) {
                    totals.logs.want(&s.client, Some(v.to_string()));
                }
            }
            drop(totals);
            found.extend(outcome.violations);
        }
        self.record(found);
    }

    /// The run's state checks, for its record. Call it once every session
    /// has ended (each adds its counts when it is dropped).
    pub fn report(&self) -> StateChecks {
        let totals = self.totals();
        let by_kind = CheckKind::ALL
            .iter()
            .map(|&kind| {
                let count = KindCount {
                    checks: totals.checks.get(kind),
                    violations: totals.violations.get(&kind).copied().unwrap_or(0),
                };
                (kind.name().to_owned(), count)
            })
            .collect();
        StateChecks {
            enabled: true,
            interval_s: self.interval.as_secs_f64(),
            checks: totals.checks.total(),
            violations: totals.violations.values().sum(),
            by_kind,
            checkpoints: totals.checkpoints,
            checkpoints_missed: totals.missed,
            checkpoint_pause_s: totals.pause.as_secs_f64(),
            sessions_lost_track: totals.lost_track,
            undecodable: totals.undecodable,
            examples: totals.examples.clone(),
            session_logs: totals.logs.logs(),
        }
    }
}

fn next_member_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The state checks of one IMAP session: its model, and its place in its
/// account's checkpoints. Dropping it (the session ended) adds its counts to
/// the run's.
#[derive(Debug)]
pub struct SessionChecker {
    model: SessionModel,
    hub: Arc<StateCheckHub>,
    group: Arc<watch::Sender<Group>>,
    member: u64,
    user: u32,
    requests: watch::Receiver<u64>,
    /// The last checkpoint generation this session has seen.
    seen: u64,
    /// The session's last lines, for a violation's evidence.
    log: RawLog,
}

impl SessionChecker {
    /// Hands the model what went over the wire; the violations go to the run.
    pub fn feed(&mut self, wire: Vec<Wire>) {
        let mut found = Vec::new();
        for piece in wire {
            match piece {
                Wire::Sent(bytes) => {
                    self.log.sent(&bytes);
                    self.model.sent(&bytes);
                }
                Wire::Received(bytes) => {
                    self.log.received(&bytes);
                    let violations = self.model.received(&bytes);
                    for v in &violations {
                        self.log.mark(&v.to_string());
                    }
                    found.extend(violations);
                }
            }
        }
        let any = !found.is_empty();
        self.hub.record(found);
        if any {
            self.hand_in_log();
        }
    }

    /// Hands the session's last lines to the run if they are wanted (it had
    /// a violation, here or at a checkpoint).
    fn hand_in_log(&mut self) {
        let client = self.model.client().to_owned();
        let mut totals = self.hub.totals();
        if let Some(marks) = totals.logs.take_wanted(&client) {
            for mark in marks {
                self.log.mark(&mark);
            }
            totals.logs.keep(&client, &self.log.text());
        }
    }

    /// A checkpoint was asked for that this session has not held yet.
    pub fn requested(&self) -> bool {
        *self.requests.borrow() > self.seen
    }

    /// Resolves when a checkpoint is asked for (for a `select!` beside IDLE).
    pub async fn wait_for_request(&mut self) {
        let seen = self.seen;
        if self.requests.wait_for(|g| *g > seen).await.is_err() {
            // The run is over: no more checkpoints.
            std::future::pending::<()>().await;
        }
    }

    /// Arrives at checkpoint `generation` and waits until every session of
    /// the account has (or the limit passes); whether it goes on.
    async fn arrive(&mut self, generation: u64, stop: &mut watch::Receiver<bool>) -> bool {
        let member = self.member;
        let mut stale = false;
        self.group.send_modify(|g| {
            if g.generation > generation {
                stale = true;
                return;
            }
            if g.generation < generation {
                *g = Group {
                    members: std::mem::take(&mut g.members),
                    generation,
                    ..Group::default()
                };
            }
            g.arrived.insert(member);
            if g.everyone_arrived() {
                g.closed = true;
            }
        });
        if stale {
            return false;
        }
        let mut watching = self.group.subscribe();
        let ready = tokio::select! {
            together = tokio::time::timeout(
                self.hub.limit,
                watching.wait_for(|g| g.generation != generation || g.closed || g.abandoned),
            ) => matches!(&together, Ok(Ok(g)) if g.generation == generation && g.closed),
            // The run is stopping: nobody waits for a checkpoint any more.
            _ = stop.wait_for(|stopped| *stopped) => false,
        };
        if !ready {
            self.group.send_modify(|g| {
                if g.generation == generation && !g.abandoned && !g.closed {
                    g.abandoned = true;
                    self.hub.totals().missed += 1;
                }
            });
        }
        ready
    }

    /// Hands in this session's snapshot (none if it has none) and waits for
    /// the group's comparison; the last one in compares.
    async fn submit(
        &mut self,
        generation: u64,
        snapshot: Option<Snapshot>,
        stop: &mut watch::Receiver<bool>,
    ) {
        let hub = self.hub.clone();
        let mut compare = None;
        self.group.send_modify(|g| {
            if g.generation != generation || g.abandoned {
                return;
            }
            g.submitted += 1;
            g.snapshots.extend(snapshot);
            if g.submitted >= g.arrived.len() && !g.compared {
                g.compared = true;
                compare = Some(std::mem::take(&mut g.snapshots));
            }
        });
        if let Some(snapshots) = compare {
            hub.compare(&snapshots);
            // Wake the others: the comparison is done.
            self.group.send_modify(|_| {});
            return;
        }
        let mut watching = self.group.subscribe();
        tokio::select! {
            _ = tokio::time::timeout(
                self.hub.limit,
                watching.wait_for(|g| g.generation != generation || g.compared || g.abandoned),
            ) => {}
            _ = stop.wait_for(|stopped| *stopped) => {}
        }
    }
}

impl Drop for SessionChecker {
    fn drop(&mut self) {
        let member = self.member;
        self.group.send_modify(|g| {
            g.members.remove(&member);
            // Those waiting for this session need not wait any more.
            if !g.closed && g.everyone_arrived() && !g.arrived.is_empty() {
                g.closed = true;
            }
        });
        let mut totals = self.hub.totals();
        totals.checks.add(self.model.checks());
        totals.undecodable += self.model.undecodable();
        if self.model.lost_track().is_some() {
            totals.lost_track += 1;
        }
    }
}

/// Hands what `imap`'s wire carried since the last call to its checker, if
/// the session has one.
pub(crate) fn feed<S>(checker: Option<&mut SessionChecker>, imap: &mut ImapConnection<S>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    if let Some(checker) = checker {
        checker.feed(imap.take_wire());
    }
}

/// Resolves when `checker` is asked for a checkpoint; never without one.
pub(crate) async fn requested(checker: Option<&mut SessionChecker>) {
    match checker {
        Some(checker) => checker.wait_for_request().await,
        None => std::future::pending().await,
    }
}

/// Takes the session through the checkpoint asked for, if one is: arrive,
/// wait for the account's other sessions, NOOP (ending any IDLE), snapshot,
/// compare; a raised `stop` ends the waits. Returns how long the user was held (its schedule moves by that
/// much; [`StateCheckHub::shift`] has it too), and the NOOP's error if it
/// failed.
pub(crate) async fn hold<S>(
    checker: &mut SessionChecker,
    imap: &mut ImapConnection<S>,
    stop: &mut watch::Receiver<bool>,
) -> (Duration, Option<ImapError>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    if !checker.requested() {
        return (Duration::ZERO, None);
    }
    let generation = *checker.requests.borrow_and_update();
    checker.seen = generation;
    let arrived_at = Instant::now();
    checker.feed(imap.take_wire());
    let mut result = Ok(());
    if checker.arrive(generation, stop).await {
        // The commands' own time is the checker's, not an action's: they
        // are not recorded. The account is quiet now: its UID SEARCH ALL
        // must answer every message the session knows that the NOOP does
        // not report expunged (`search_missing`).
        if imap.mailbox().is_some() {
            result = imap.search(&SearchKey::All, true).await.map(drop);
        }
        if result.is_ok() {
            result = imap.noop().await.map(drop);
        }
        checker.feed(imap.take_wire());
        let snapshot = result
            .as_ref()
            .ok()
            .and_then(|()| checker.model.snapshot().ok());
        checker.submit(generation, snapshot, stop).await;
        checker.hand_in_log();
    }
    let pause = arrived_at.elapsed();
    checker.hub.totals().pause += pause;
    if let Some(shift) = checker.hub.shifts.get(checker.user as usize) {
        let nanos = u64::try_from(pause.as_nanos()).unwrap_or(u64::MAX);
        shift.fetch_add(nanos, Ordering::Relaxed);
    }
    (pause, result.err())
}

/// The run's state checks, if `settings` asks for them: the hub, with its
/// ticker asking for a checkpoint every interval until `until` (the end of
/// the steady phase: draining users are not held).
pub(crate) fn start(
    settings: &crate::RunSettings,
    users: u32,
    until: Instant,
) -> Option<Arc<StateCheckHub>> {
    let interval = settings.check_state?;
    let hub = StateCheckHub::new(interval, settings.action_timeout, users);
    tokio::spawn(hub.clone().tick_until(until));
    Some(hub)
}
