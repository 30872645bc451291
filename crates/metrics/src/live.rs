//! The live state of a run as the exporter serves it: counters, gauges and
//! histograms, updated from the run's events with no clock and no I/O, so
//! that the encoding can be tested on a state built by hand.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::catalogue::{self, Family};
use crate::histogram::{
    ACTION_LATENCY_BOUNDS, DELIVERY_LATENCY_BOUNDS, Histogram, SCHEDULING_LAG_BOUNDS,
};

/// The phase a measurement is counted in, as the run's record counts it:
/// the `phase` label. `summary.json` reports the steady phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum RunPhase {
    /// Users logging on (ramp-up).
    #[default]
    Logon,
    /// The measured phase.
    Steady,
    /// Users finishing; deliveries reconciled.
    Drain,
}

impl RunPhase {
    /// Every phase, in order.
    pub const ALL: [RunPhase; 3] = [RunPhase::Logon, RunPhase::Steady, RunPhase::Drain];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            RunPhase::Logon => "logon",
            RunPhase::Steady => "steady",
            RunPhase::Drain => "drain",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One count per phase.
pub(crate) type PerPhase = [u64; 3];

/// A counter of the run that is counted per phase (`peakhour_*_total{phase}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tally {
    /// Messages accepted for submission.
    MessagesSubmitted,
    /// Recipients of accepted submissions.
    RecipientsSubmitted,
    /// Recipients refused at submission.
    RecipientsRefused,
    /// Recipients that noticed their copy.
    RecipientsDelivered,
    /// Message bodies opened.
    MessageOpens,
    /// Folders opened.
    FolderOpens,
    /// Connections re-established.
    Reconnects,
    /// Calendar events created.
    EventsCreated,
    /// Calendar events changed.
    EventsChanged,
    /// Messages downloaded over POP3.
    MessagesDownloaded,
}

impl Tally {
    /// Every tally, in the order of the exposition.
    pub const ALL: [Tally; 10] = [
        Tally::MessagesSubmitted,
        Tally::RecipientsSubmitted,
        Tally::RecipientsRefused,
        Tally::RecipientsDelivered,
        Tally::MessageOpens,
        Tally::FolderOpens,
        Tally::Reconnects,
        Tally::EventsCreated,
        Tally::EventsChanged,
        Tally::MessagesDownloaded,
    ];

    /// The family it is served as.
    pub fn family(self) -> &'static Family {
        match self {
            Tally::MessagesSubmitted => &catalogue::MESSAGES_SUBMITTED,
            Tally::RecipientsSubmitted => &catalogue::RECIPIENTS_SUBMITTED,
            Tally::RecipientsRefused => &catalogue::RECIPIENTS_REFUSED,
            Tally::RecipientsDelivered => &catalogue::RECIPIENTS_DELIVERED,
            Tally::MessageOpens => &catalogue::MESSAGE_OPENS,
            Tally::FolderOpens => &catalogue::FOLDER_OPENS,
            Tally::Reconnects => &catalogue::RECONNECTS,
            Tally::EventsCreated => &catalogue::EVENTS_CREATED,
            Tally::EventsChanged => &catalogue::EVENTS_CHANGED,
            Tally::MessagesDownloaded => &catalogue::MESSAGES_DOWNLOADED,
        }
    }
}

/// Where the run is: the states of `peakhour_phase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Stage {
    /// A shard of a distributed run waiting for `--start-at`: no user has
    /// logged on yet.
    Waiting,
    /// Ramp-up.
    #[default]
    Logon,
    /// Measured.
    Steady,
    /// Users finishing.
    Drain,
    /// Searching for deliveries not yet seen.
    Reconcile,
    /// The run is over and every figure is final.
    Finished,
}

impl Stage {
    /// Its state name (one of [`catalogue::PHASE_STATES`]).
    pub fn label(self) -> &'static str {
        catalogue::PHASE_STATES[self as usize]
    }
}

/// How an action ended, as the exporter counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending<'a> {
    /// It did what it should; its latency goes into the histogram.
    Ok,
    /// It failed with this error kind.
    Error(&'a str),
    /// It had nothing to act on, for this reason; not timed.
    Skipped(&'a str),
}

/// What is counted of one action (or of one source of errors outside
/// actions, such as `logon`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ActionCounts {
    /// A timed action (planned, or seen ending), as opposed to a source of
    /// errors only: only timed actions have `peakhour_actions_total` and a
    /// latency histogram.
    pub(crate) timed: bool,
    pub(crate) ok: PerPhase,
    pub(crate) failed: PerPhase,
    pub(crate) late: PerPhase,
    pub(crate) errors: BTreeMap<String, PerPhase>,
    pub(crate) skipped: BTreeMap<String, PerPhase>,
    pub(crate) latency: Histogram,
}

impl ActionCounts {
    fn new(timed: bool) -> Self {
        ActionCounts {
            timed,
            ok: [0; 3],
            failed: [0; 3],
            late: [0; 3],
            errors: BTreeMap::new(),
            skipped: BTreeMap::new(),
            latency: Histogram::new(ACTION_LATENCY_BOUNDS),
        }
    }
}

/// The run's identity (`peakhour_run_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    /// The run's id (its directory's name).
    pub run_id: String,
    /// The profile.
    pub profile: String,
    /// The seed.
    pub seed: u64,
    /// `I/N` for shard I (from 1) of a distributed run of N shards; `1/1`
    /// for a run of the whole population in one process.
    pub shard: String,
    /// peakhour's version.
    pub version: String,
}

/// Everything the exporter serves, as of the last event.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveMetrics {
    pub(crate) run: Option<RunInfo>,
    pub(crate) users: u32,
    pub(crate) phase: RunPhase,
    pub(crate) stage: Stage,
    pub(crate) elapsed: Duration,
    pub(crate) logged_on: u32,
    pub(crate) actions: BTreeMap<String, ActionCounts>,
    pub(crate) commands: BTreeMap<String, u64>,
    pub(crate) tallies: [PerPhase; Tally::ALL.len()],
    pub(crate) delivery: Histogram,
    pub(crate) cpu_ratio: f64,
    pub(crate) lag: Histogram,
    pub(crate) lag_max: Duration,
    pub(crate) reconcile_mailboxes: u64,
    pub(crate) reconcile_searched: u64,
}

impl Default for LiveMetrics {
    fn default() -> Self {
        LiveMetrics {
            run: None,
            users: 0,
            phase: RunPhase::Logon,
            stage: Stage::Logon,
            elapsed: Duration::ZERO,
            logged_on: 0,
            actions: BTreeMap::new(),
            commands: BTreeMap::new(),
            tallies: [[0; 3]; Tally::ALL.len()],
            delivery: Histogram::new(DELIVERY_LATENCY_BOUNDS),
            cpu_ratio: 0.0,
            lag: Histogram::new(SCHEDULING_LAG_BOUNDS),
            lag_max: Duration::ZERO,
            reconcile_mailboxes: 0,
            reconcile_searched: 0,
        }
    }
}

impl LiveMetrics {
    /// The run began: who it is, how many users it has, and its planned
    /// actions, whose series start at zero so that a rate over them is
    /// defined from the first scrape.
    pub fn start<'a>(
        &mut self,
        run: RunInfo,
        users: u32,
        actions: impl IntoIterator<Item = &'a str>,
    ) {
        self.run = Some(run);
        self.users = users;
        self.stage = self.stage.max(Stage::Logon);
        for action in actions {
            self.entry(action).timed = true;
        }
    }

    /// Moves the run into `phase` if it is later than the current one:
    /// phases only go forward, as the run's record moves through them.
    pub fn enter(&mut self, phase: RunPhase) {
        self.phase = self.phase.max(phase);
        let stage = match self.phase {
            RunPhase::Logon => Stage::Logon,
            RunPhase::Steady => Stage::Steady,
            RunPhase::Drain => Stage::Drain,
        };
        self.stage = self.stage.max(stage);
    }

    /// The phase measurements are counted in now.
    pub fn phase(&self) -> RunPhase {
        self.phase
    }

    /// The run waits for its `--start-at` before its logon phase: until
    /// [`Self::start`], the phase served is `waiting`, not `logon`.
    pub fn waiting(&mut self) {
        if self.run.is_none() {
            self.stage = Stage::Waiting;
        }
    }

    /// Where the run is now.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// An action ended: its latency from the intended start, and whether it
    /// started late.
    pub fn action(&mut self, action: &str, ending: Ending<'_>, latency: Duration, late: bool) {
        let phase = self.phase.index();
        let counts = self.entry(action);
        if let Ending::Skipped(reason) = ending {
            bump(&mut counts.skipped, reason, phase);
            return;
        }
        counts.timed = true;
        if late {
            counts.late[phase] += 1;
        }
        match ending {
            Ending::Ok => {
                counts.ok[phase] += 1;
                counts.latency.observe(latency);
            }
            Ending::Error(kind) => {
                counts.failed[phase] += 1;
                bump(&mut counts.errors, kind, phase);
            }
            Ending::Skipped(_) => {}
        }
    }

    /// An error outside any action, counted under `source` (`logon`,
    /// `session`, `reconcile`, or a panicked task's role).
    pub fn error(&mut self, source: &str, kind: &str) {
        let phase = self.phase.index();
        bump(&mut self.entry(source).errors, kind, phase);
    }

    /// A protocol command got its final reply.
    pub fn command(&mut self, name: &str) {
        match self.commands.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.commands.insert(name.to_owned(), 1);
            }
        }
    }

    /// A counter of the run went up.
    pub fn tally(&mut self, tally: Tally, by: u64) {
        // Tally::ALL lists the variants in declaration order.
        self.tallies[tally as usize][self.phase.index()] += by;
    }

    /// A recipient noticed a tracked message this long after its submission.
    pub fn delivered(&mut self, latency: Duration) {
        self.tally(Tally::RecipientsDelivered, 1);
        self.delivery.observe(latency);
    }

    /// The number of users logged on changed.
    pub fn logged_on(&mut self, change: i32) {
        self.logged_on = self.logged_on.saturating_add_signed(change);
    }

    /// One reading of the scheduling-lag probe.
    pub fn lag(&mut self, lag: Duration) {
        self.lag.observe(lag);
    }

    /// The once-a-second self-check: time since the start, the generator's
    /// CPU over the last second in cores, and its worst lag.
    pub fn self_check(&mut self, elapsed: Duration, cpu_cores: f64, max_lag: Duration) {
        self.elapsed = self.elapsed.max(elapsed);
        self.cpu_ratio = if cpu_cores.is_finite() {
            cpu_cores
        } else {
            0.0
        };
        self.lag_max = max_lag;
    }

    /// The reconciliation after the drain has searched `searched` of the
    /// `mailboxes` of its current round.
    pub fn reconciling(&mut self, searched: u64, mailboxes: u64) {
        self.stage = self.stage.max(Stage::Reconcile);
        self.reconcile_searched = searched;
        self.reconcile_mailboxes = mailboxes;
    }

    /// The run is over: every figure is final.
    pub fn finished(&mut self) {
        self.stage = Stage::Finished;
    }

    /// Actions that ended in `phase` with `ok` or an error, over every action.
    pub fn actions_in(&self, phase: RunPhase, ok: bool) -> u64 {
        self.actions
            .values()
            .map(|a| if ok { a.ok } else { a.failed }[phase.index()])
            .sum()
    }

    /// Users logged on now.
    pub fn users_logged_on(&self) -> u32 {
        self.logged_on
    }

    fn entry(&mut self, action: &str) -> &mut ActionCounts {
        // Looked up by &str first: an event allocates only the first time
        // its action is seen.
        if !self.actions.contains_key(action) {
            self.actions
                .insert(action.to_owned(), ActionCounts::new(false));
        }
        self.actions
            .get_mut(action)
            .expect("the action was inserted above")
    }
}

/// Adds one to `key`'s count in phase `phase`, allocating the key only the
/// first time it is seen.
fn bump(map: &mut BTreeMap<String, PerPhase>, key: &str, phase: usize) {
    match map.get_mut(key) {
        Some(counts) => counts[phase] += 1,
        None => {
            let mut counts = [0; 3];
            counts[phase] = 1;
            map.insert(key.to_owned(), counts);
        }
    }
}
