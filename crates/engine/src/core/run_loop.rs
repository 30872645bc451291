//! The run's loop, the same for every load: one task per simulated user or
//! file client, their events recorded in arrival order by one task and shown
//! to the [`Observer`], the generator's own CPU and lag beside them, a stop
//! honoured within [`STOP_GRACE`], and what a task that cannot go on still
//! owed counted `not-attempted`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use peakhour_workload::ActionKind;
use tokio::sync::{mpsc, watch};
use tokio::task::{Id as TaskId, JoinSet};
use tokio::time::{Instant, MissedTickBehavior};

use crate::core::observer::{Observer, RunClock, SelfSample};
use crate::core::recorder::RunRecorder;
use crate::events::{Event, NOT_ATTEMPTED, Outcome};
use crate::population::PopulationError;
use crate::reconcile::ReconcileProgress;
use crate::run::MAX_PHASE;
use crate::selfcheck::{CpuMeter, LagProbe};

/// Set by a user that finds a recipient outside the population: the run
/// stops at once and returns the error instead of a result.
#[derive(Debug, Default)]
pub(crate) struct Halt {
    fault: std::sync::Mutex<Option<PopulationError>>,
    raised: tokio::sync::Notify,
}

impl Halt {
    pub(crate) fn raise(&self, error: PopulationError) {
        self.fault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert(error);
        self.raised.notify_one();
    }

    pub(crate) fn fault(&self) -> Option<PopulationError> {
        self.fault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// How far each user has come through its schedule: the `seq` of the first
/// scheduled action it has not yet reported. When a user cannot go on (its
/// task panicked, or was still stuck when the run had to end), the actions
/// from there on are counted `not-attempted`, so that nothing it was due to
/// do goes missing from the results.
#[derive(Debug)]
pub(crate) struct ScheduleProgress(Box<[AtomicU64]>);

impl ScheduleProgress {
    pub(crate) fn new(users: u32) -> Self {
        ScheduleProgress((0..users).map(|_| AtomicU64::new(0)).collect())
    }

    /// User `user` has reported every action before `seq`.
    pub(crate) fn reported(&self, user: u32, next_seq: u64) {
        if let Some(slot) = self.0.get(user as usize) {
            slot.store(next_seq, Ordering::Relaxed);
        }
    }

    pub(crate) fn next(&self, user: u32) -> u64 {
        self.0
            .get(user as usize)
            .map_or(0, |slot| slot.load(Ordering::Relaxed))
    }
}

/// The tasks of a load, and which user or client each task is.
pub(crate) struct Tasks {
    pub(crate) tasks: JoinSet<()>,
    pub(crate) ids: HashMap<TaskId, u32>,
}

impl Tasks {
    pub(crate) fn new() -> Self {
        Tasks {
            tasks: JoinSet::new(),
            ids: HashMap::new(),
        }
    }

    /// Starts `task` as user or client `index`.
    pub(crate) fn spawn(
        &mut self,
        index: u32,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let handle = self.tasks.spawn(task);
        self.ids.insert(handle.id(), index);
    }
}

/// What the run core drives: the tasks of one load (the simulated mail users
/// of a plan, the file clients of a disk mix or a replay). The loop knows no
/// protocol; a load knows no phase beyond what its tasks are told at spawn.
pub(crate) trait Load {
    /// Starts one task per user or client. The load hands its event sink
    /// over to them, so that the channel closes when the last one is done.
    fn spawn(&mut self, clock: &RunClock, stop: &watch::Receiver<bool>) -> Tasks;
    /// The event, if any, for a task that ended on its own.
    fn finished(&self, _index: u32) -> Option<Event> {
        None
    }
    /// The event, if any, for a task that panicked.
    fn panicked(&self, index: u32) -> Option<Event>;
    /// The scheduled actions `index` had not reported, due before `cut`:
    /// counted `not-attempted` when its task cannot go on.
    fn owed(&self, _index: u32, _clock: &RunClock, _cut: Instant) -> Vec<(Instant, ActionKind)> {
        Vec::new()
    }
}

/// How a run's load phase ended.
pub(crate) struct Ended {
    /// Stopped by the caller's signal.
    pub(crate) interrupted: bool,
    /// User tasks that panicked.
    pub(crate) panics: u64,
}

/// The run's loop, from the first task's start to the end of the drain (or
/// of the last client).
pub(crate) struct RunLoop<'a> {
    pub(crate) clock: &'a RunClock,
    pub(crate) halt: &'a Halt,
    /// When the loop gives up on tasks still running; `None`: only a stop
    /// ends it early (every file operation has its own timeout).
    pub(crate) deadline: Option<Instant>,
}

impl RunLoop<'_> {
    /// Hands every event to `observer` in arrival order, with the
    /// generator's own health once a second, until every task is done,
    /// the deadline passes, [`STOP_GRACE`] after `stop` was raised, or a
    /// fault halts the run. A task that panics is counted, and what it
    /// still owed is counted `not-attempted` as it falls due; tasks still
    /// stuck at the end have theirs counted then.
    pub(crate) async fn observe(
        &self,
        load: &dyn Load,
        observer: &mut dyn Observer,
        mut inbox: mpsc::UnboundedReceiver<Event>,
        mut users: Tasks,
        stop: &mut watch::Receiver<bool>,
    ) -> Ended {
        let clock = self.clock;
        let mut cpu = CpuMeter::start();
        let mut probe = LagProbe::start();
        let mut max_lag = Duration::ZERO;
        let mut ticks = tokio::time::interval_at(clock.t0 + TICK, TICK);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut ended = Ended {
            interrupted: false,
            panics: 0,
        };
        let mut stop_open = true;
        let mut inbox_open = true;
        // Actions scheduled after this are not owed: the steady phase's end,
        // or the moment the run was stopped.
        let mut cut = clock.steady_end;
        let mut deadline = self.deadline;
        if *stop.borrow() {
            // Stopped while waiting for --start-at: nothing runs.
            ended.interrupted = true;
            cut = clock.t0;
            deadline = Some(Instant::now() + STOP_GRACE);
        }
        let mut owed = Owed::default();
        // One timer for the deadline, moved when it changes, rather than one
        // armed and dropped at every turn of the loop; and the events that
        // queued up while users ran are taken together (with one clock
        // reading), so the loop turns once per wake-up, not once per event.
        let give_up = tokio::time::sleep_until(deadline.unwrap_or(clock.t0 + MAX_PHASE));
        tokio::pin!(give_up);
        let mut batch = Vec::with_capacity(EVENT_BATCH);
        while inbox_open || !owed.is_empty() {
            if let Some(deadline) = deadline
                && give_up.deadline() != deadline
            {
                give_up.as_mut().reset(deadline);
            }
            tokio::select! {
                biased;
                () = self.halt.raised.notified() => break,
                changed = stop.changed(), if stop_open && !ended.interrupted => {
                    if changed.is_err() {
                        stop_open = false; // nobody can raise it any more
                    } else if *stop.borrow() {
                        ended.interrupted = true;
                        cut = cut.min(Instant::now());
                        owed.cut(cut);
                        // In-flight actions get two seconds, then are abandoned.
                        deadline = Some(Instant::now() + STOP_GRACE);
                    }
                }
                received = inbox.recv_many(&mut batch, EVENT_BATCH), if inbox_open => {
                    if received == 0 {
                        inbox_open = false; // every task is done
                    }
                    let now = Instant::now();
                    for event in batch.drain(..) {
                        observer.event(clock, now, &event);
                    }
                }
                Some(joined) = users.tasks.join_next_with_id() => {
                    let (id, event) = match joined {
                        Ok((id, ())) => (id, users.ids.get(&id).and_then(|&i| load.finished(i))),
                        Err(error) if error.is_panic() => {
                            let Some(index) = users.ids.remove(&error.id()) else { continue };
                            ended.panics += 1;
                            owed.extend(load.owed(index, clock, cut));
                            (error.id(), load.panicked(index))
                        }
                        Err(error) => (error.id(), None),
                    };
                    users.ids.remove(&id);
                    if let Some(event) = event {
                        observer.event(clock, Instant::now(), &event);
                    }
                }
                () = sleep_until_due(owed.next_due()), if !owed.is_empty() => {
                    owed.emit_due(observer, clock, Instant::now());
                }
                Some(lag) = probe.next() => {
                    max_lag = max_lag.max(lag);
                    observer.lag(clock, Instant::now(), lag);
                }
                _ = ticks.tick() => {
                    let sample = SelfSample { cpu_percent: cpu.percent(), max_lag };
                    max_lag = Duration::ZERO;
                    observer.tick(clock, Instant::now(), sample);
                }
                () = &mut give_up, if deadline.is_some() => break,
            }
        }
        wind_up(load, observer, clock, inbox, users, owed, cut, &mut ended).await;
        ended
    }
}

/// The loop's end: abandons the tasks still running (what each still owed is
/// counted), takes the events they sent before, and counts every owed action
/// due before `cut`.
#[allow(clippy::too_many_arguments)]
async fn wind_up(
    load: &dyn Load,
    observer: &mut dyn Observer,
    clock: &RunClock,
    mut inbox: mpsc::UnboundedReceiver<Event>,
    mut users: Tasks,
    mut owed: Owed,
    cut: Instant,
    ended: &mut Ended,
) {
    users.tasks.abort_all();
    while let Some(joined) = users.tasks.join_next_with_id().await {
        let Err(error) = joined else { continue };
        let Some(index) = users.ids.remove(&error.id()) else {
            continue;
        };
        if error.is_panic() {
            ended.panics += 1;
            if let Some(event) = load.panicked(index) {
                observer.event(clock, Instant::now(), &event);
            }
        }
        // Stuck (or panicked) when the run had to end: what it still
        // owed is counted now.
        owed.extend(load.owed(index, clock, cut));
    }
    // Events tasks sent before being stopped still count.
    while let Ok(event) = inbox.try_recv() {
        observer.event(clock, Instant::now(), &event);
    }
    owed.cut(cut);
    owed.emit_all(observer, clock, Instant::now());
}

async fn sleep_until_due(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Actions owed by users that cannot go on, counted `not-attempted` at
/// their intended time (or at once, for those already due).
#[derive(Debug, Default)]
struct Owed(BinaryHeap<Reverse<(Instant, ActionKind)>>);

impl Owed {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn extend(&mut self, actions: Vec<(Instant, ActionKind)>) {
        self.0.extend(actions.into_iter().map(Reverse));
    }

    fn next_due(&self) -> Option<Instant> {
        self.0.peek().map(|Reverse((at, _))| *at)
    }

    /// Forgets actions due at or after `cut`.
    fn cut(&mut self, cut: Instant) {
        self.0.retain(|Reverse((at, _))| *at < cut);
    }

    fn emit_due(&mut self, observer: &mut dyn Observer, clock: &RunClock, now: Instant) {
        while let Some(Reverse((at, kind))) = self.0.peek().copied() {
            if at > now {
                break;
            }
            self.0.pop();
            observer.event(clock, now, &not_attempted(kind, at));
        }
    }

    fn emit_all(&mut self, observer: &mut dyn Observer, clock: &RunClock, now: Instant) {
        while let Some(Reverse((at, kind))) = self.0.pop() {
            observer.event(clock, now, &not_attempted(kind, at));
        }
    }
}

/// An action that was due at `intended` and never started: an error, not a
/// late start (it never started) and not a latency (it has none).
pub(crate) fn not_attempted(kind: ActionKind, intended: Instant) -> Event {
    Event::Action {
        kind,
        intended,
        started: intended,
        finished: intended,
        outcome: Outcome::Error(NOT_ATTEMPTED.into()),
    }
}

/// How often the generator's own CPU is sampled (and the live line drawn).
pub(crate) const TICK: Duration = Duration::from_secs(1);

/// Most events the observer takes from the users' channel at one turn of its loop.
const EVENT_BATCH: usize = 256;

/// How long in-flight actions may finish after `stop` is raised.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// The record first, then the live view: one observer for the run's loop.
/// Every interval the recorder closes is handed on to the observer once,
/// right after the event that closed it.
pub(crate) struct Tee<'a> {
    pub(crate) recorder: &'a mut RunRecorder,
    pub(crate) observer: &'a mut dyn Observer,
    /// Closed intervals already handed on.
    pub(crate) handed_on: usize,
}

impl Tee<'_> {
    fn hand_on_closed(&mut self) {
        for interval in self.recorder.closed_since(self.handed_on) {
            self.observer.interval_closed(interval);
        }
        self.handed_on = self.recorder.closed_count();
    }
}

impl Observer for Tee<'_> {
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event) {
        self.recorder.event(clock, at, event);
        self.hand_on_closed();
        // The observer sees the timeline as the record has found it so far
        // (a disk mix finds its measured window as its clients go).
        let seen = self.recorder.timeline(clock);
        self.observer.event(&seen, at, event);
    }

    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration) {
        self.recorder.lag(clock, at, lag);
        self.hand_on_closed();
        let seen = self.recorder.timeline(clock);
        self.observer.lag(&seen, at, lag);
    }

    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample) {
        self.recorder.tick(clock, at, sample);
        self.hand_on_closed();
        let seen = self.recorder.timeline(clock);
        self.observer.tick(&seen, at, sample);
    }

    fn reconciling(&mut self, progress: ReconcileProgress) {
        self.observer.reconciling(progress);
    }
}
