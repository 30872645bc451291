//! A file run: one task per client, the events recorded in time order by one task, the
//! generator's own CPU and lag beside them, and a stop honoured within [`STOP_GRACE`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use peakhour_analysis::{
    AnalysisError, IntervalArchive, IntervalRecord, Phase, PhaseLengths, QosThresholds, RunMeta,
    RunRecord,
};
use peakhour_workload::files::FilePlan;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

use crate::files::client::Shared;
use crate::files::events::{FileEvent, FileSink};
use crate::files::mix::run_mix_client;
use crate::files::recording::{BYTES_READ, BYTES_WRITTEN, FileRecorder, Window};
use crate::files::replay::{LoadFile, run_replay_client};
use crate::files::target::FileTarget;
use crate::run::{STOP_GRACE, TICK};
use crate::selfcheck::{CpuMeter, LagProbe};
use crate::user::LATE_AFTER;

/// What the clients do.
#[derive(Debug, Clone)]
pub enum FileWorkload {
    /// NetBench's disk mix: iterations of a weighted script (seed 004).
    Mix(Arc<FilePlan>),
    /// A dbench/NBENCH load file replayed by every client, for `--ramp-up` plus
    /// `--duration`.
    Replay {
        /// The parsed file.
        load: Arc<LoadFile>,
        /// Clients.
        clients: u32,
        /// The profile's name in results (`nbench`).
        name: String,
        /// The run's seed (recorded; a replay draws nothing at random).
        seed: u64,
    },
}

impl FileWorkload {
    /// The profile's name.
    pub fn name(&self) -> &str {
        match self {
            FileWorkload::Mix(plan) => plan.name(),
            FileWorkload::Replay { name, .. } => name,
        }
    }

    /// Number of clients.
    pub fn clients(&self) -> u32 {
        match self {
            FileWorkload::Mix(plan) => plan.clients(),
            FileWorkload::Replay { clients, .. } => *clients,
        }
    }

    /// The directories above the workspaces that clients share, parents first.
    pub fn shared_dirs(&self) -> Vec<String> {
        match self {
            FileWorkload::Mix(plan) => plan.shared_dirs(),
            FileWorkload::Replay { load, .. } => load.shared_dirs(),
        }
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        match self {
            FileWorkload::Mix(plan) => plan.seed(),
            FileWorkload::Replay { seed, .. } => *seed,
        }
    }
}

/// How a file run is shaped.
#[derive(Debug, Clone)]
pub struct FileRunSettings {
    /// Run id.
    pub run_id: String,
    /// A replay's warm-up, not measured (the disk mix uses its ramp-up iterations).
    pub ramp_up: Duration,
    /// A replay's measured phase (the disk mix uses its measured iterations).
    pub duration: Duration,
    /// An operation without an answer after this long fails and ends its client.
    pub op_timeout: Duration,
    /// A client's connection must be up within this.
    pub connect_timeout: Duration,
    /// The recorder's interval.
    pub interval: Duration,
    /// A p95 limit (ms) for every operation (default: 1000 ms).
    pub qos_p95_ms: Option<f64>,
    /// Delete the workspaces at the end (seed 004's last mix).
    pub cleanup: bool,
}

/// Once a second while a file run goes on: for a live line.
#[derive(Debug, Clone, Default)]
pub struct FileProgress {
    /// Since the run started.
    pub elapsed: Duration,
    /// `logon`, `steady` or `drain`: before, inside and after the measured window.
    pub phase: &'static str,
    /// Clients still running.
    pub clients_running: u32,
    /// Clients that failed.
    pub clients_failed: u32,
    /// Operations answered so far, and how many got another answer than expected.
    pub operations: u64,
    /// Of them, failed.
    pub errors: u64,
    /// Bytes moved in measured operations so far.
    pub bytes: u64,
    /// peakhour's CPU over the last second, % of one core.
    pub cpu_percent: f64,
}

/// Sees a file run as it goes.
pub trait FileObserver: Send {
    /// Every event, as it arrives.
    fn event(&mut self, _event: &FileEvent) {}
    /// Once a second.
    fn tick(&mut self, _progress: &FileProgress) {}
    /// Once, before the first client starts: the run's metadata as the record will
    /// carry it (marked `interrupted`, which the finished record corrects), for a
    /// journal of the run to open with (as `crate::Observer::started`).
    fn started(&mut self, _meta: &RunMeta) {}
    /// An interval of the record has closed and will not change: in order, each once;
    /// the last one, cut short where the run ends, is only in the finished record.
    fn interval_closed(&mut self, _interval: &IntervalRecord) {}
    /// Where this observer stores the closed intervals it is handed, if it can give
    /// them back at the end (the run's journal; as `crate::Observer::interval_archive`).
    fn interval_archive(&self) -> Option<Arc<dyn IntervalArchive>> {
        None
    }
}

/// Two file observers as one: each gets everything, the first first (the binary draws
/// the live line and journals the closed intervals to the run directory).
pub struct FileBoth<'a>(pub &'a mut dyn FileObserver, pub &'a mut dyn FileObserver);

impl FileObserver for FileBoth<'_> {
    fn event(&mut self, event: &FileEvent) {
        self.0.event(event);
        self.1.event(event);
    }
    fn tick(&mut self, progress: &FileProgress) {
        self.0.tick(progress);
        self.1.tick(progress);
    }
    fn started(&mut self, meta: &RunMeta) {
        self.0.started(meta);
        self.1.started(meta);
    }
    fn interval_closed(&mut self, interval: &IntervalRecord) {
        self.0.interval_closed(interval);
        self.1.interval_closed(interval);
    }
    fn interval_archive(&self) -> Option<Arc<dyn IntervalArchive>> {
        self.0
            .interval_archive()
            .or_else(|| self.1.interval_archive())
    }
}

/// What a file run ends with.
#[derive(Debug, Clone)]
pub struct FileRunOutcome {
    /// When the run started (wall clock).
    pub started_at: SystemTime,
    /// When it started (tokio's clock): the zero of every offset in the record.
    pub t0: Instant,
    /// Stopped by a signal.
    pub interrupted: bool,
    /// Clients that failed, with why.
    pub failed_clients: Vec<(u32, String)>,
    /// What cleanup could not delete: path and status.
    pub leftovers: Vec<(String, String)>,
    /// Bytes read and written in the measured window.
    pub bytes_read: u64,
    /// Bytes written in the measured window.
    pub bytes_written: u64,
}

/// A finished file run.
#[derive(Debug)]
pub struct FileRunResult {
    /// How it ended.
    pub outcome: FileRunOutcome,
    /// Everything measured.
    pub record: RunRecord,
}

/// Runs `workload` against `target`. Raising `stop` ends it: clients stop between
/// operations, clean up what they can within [`STOP_GRACE`], and are then abandoned.
pub async fn run_files(
    workload: FileWorkload,
    target: Arc<FileTarget>,
    settings: FileRunSettings,
    mut stop: watch::Receiver<bool>,
    observer: &mut dyn FileObserver,
) -> Result<FileRunResult, AnalysisError> {
    let started_at = SystemTime::now();
    let t0 = Instant::now();
    let clients = workload.clients();
    let window = match &workload {
        FileWorkload::Mix(_) => Window::Iterations {
            waiting: (1..=clients).collect::<BTreeSet<u32>>(),
        },
        FileWorkload::Replay { .. } => Window::Clock {
            steady_start: t0 + settings.ramp_up,
            steady_end: t0 + settings.ramp_up + settings.duration,
        },
    };
    let mut recorder = FileRecorder::new(t0, settings.interval, window)?;
    if let Some(archive) = observer.interval_archive() {
        recorder.archive_to(archive);
    }
    let (events, inbox) = FileSink::channel();
    let shared = Arc::new(Shared {
        target: target.clone(),
        events,
        op_timeout: settings.op_timeout,
        connect_timeout: settings.connect_timeout,
        cleanup: settings.cleanup,
    });
    observer.started(&run_meta(&workload, &settings, started_at, true));
    let tasks = spawn_clients(&workload, shared, t0, &settings, &stop);
    let mut watch = Watch {
        recorder: &mut recorder,
        observer,
        progress: FileProgress {
            clients_running: clients,
            ..FileProgress::default()
        },
        failed: Vec::new(),
        leftovers: Vec::new(),
    };
    let interrupted = watch.observe(t0, inbox, tasks, &mut stop).await;
    let (failed_clients, mut leftovers) = (watch.failed, watch.leftovers);
    if settings.cleanup && !target.has_homes() {
        let budget = if interrupted {
            STOP_GRACE
        } else {
            settings.connect_timeout + settings.op_timeout
        };
        let dirs = workload.shared_dirs();
        match tokio::time::timeout(budget, remove_shared_dirs(&target, &dirs)).await {
            Ok(left) => leftovers.extend(left),
            Err(_) => leftovers.extend(dirs.first().map(|d| (d.clone(), "timeout".to_owned()))),
        }
    }
    let end = Instant::now();
    let (intervals, steady_at, drain_at) = recorder.finish(end)?;
    let count = |name: &str| -> u64 {
        intervals
            .iter()
            .filter(|i| i.phase == Phase::Steady)
            .filter_map(|i| i.counters.get(name))
            .sum()
    };
    let outcome = FileRunOutcome {
        started_at,
        t0,
        interrupted,
        failed_clients,
        leftovers,
        bytes_read: count(BYTES_READ),
        bytes_written: count(BYTES_WRITTEN),
    };
    let mut meta = run_meta(&workload, &settings, started_at, interrupted);
    meta.phases = PhaseLengths {
        logon: steady_at,
        steady: drain_at.saturating_sub(steady_at),
        drain: end.saturating_duration_since(t0).saturating_sub(drain_at),
    };
    let record = RunRecord::new(meta, intervals, Default::default());
    Ok(FileRunResult { outcome, record })
}

/// Removes the directories the clients shared (`clients`), deepest first, once they are
/// all done: what is left in them is reported, and they are then left too.
async fn remove_shared_dirs(target: &FileTarget, dirs: &[String]) -> Vec<(String, String)> {
    use peakhour_files::{FileBackend, NtStatus};
    let mut left = Vec::new();
    let Some(top) = dirs.first() else {
        return left;
    };
    let mut backend = match target.connect(1, Duration::from_secs(10)).await {
        Ok(b) => b,
        Err(e) => return vec![(top.clone(), e)],
    };
    for dir in dirs.iter().rev() {
        match backend.remove_dir(dir).await {
            Ok(t) if t.value.status.is_success() => {}
            Ok(t) if t.value.status == NtStatus::OBJECT_NAME_NOT_FOUND => {}
            Ok(t) => left.push((dir.clone(), t.value.status.to_string())),
            Err(e) => left.push((dir.clone(), e.to_string())),
        }
    }
    let _ = backend.disconnect().await;
    left
}

fn spawn_clients(
    workload: &FileWorkload,
    shared: Arc<Shared>,
    t0: Instant,
    settings: &FileRunSettings,
    stop: &watch::Receiver<bool>,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    for n in 1..=workload.clients() {
        match workload {
            FileWorkload::Mix(plan) => {
                tasks.spawn(run_mix_client(
                    n,
                    plan.clone(),
                    shared.clone(),
                    t0,
                    stop.clone(),
                ));
            }
            FileWorkload::Replay { load, .. } => {
                let end = t0 + settings.ramp_up + settings.duration;
                tasks.spawn(run_replay_client(
                    n,
                    load.clone(),
                    shared.clone(),
                    end,
                    stop.clone(),
                ));
            }
        }
    }
    tasks
}

/// The run's loop: events to the recorder then the observer, the self-check once a
/// second, until every client is done or the grace after a stop has passed.
struct Watch<'a> {
    recorder: &'a mut FileRecorder,
    observer: &'a mut dyn FileObserver,
    progress: FileProgress,
    failed: Vec<(u32, String)>,
    leftovers: Vec<(String, String)>,
}

impl Watch<'_> {
    /// Hands every interval the recorder has closed since the last call to the observer.
    fn hand_on_closed(&mut self) {
        for interval in self.recorder.newly_closed() {
            self.observer.interval_closed(interval);
        }
    }

    fn event(&mut self, event: &FileEvent) {
        self.recorder.event(Instant::now(), event);
        self.hand_on_closed();
        match event {
            FileEvent::Op(op) => {
                self.progress.operations += 1;
                if op.outcome != crate::files::events::OpOutcome::Ok {
                    self.progress.errors += 1;
                }
                if op.measured {
                    self.progress.bytes += op.bytes_read + op.bytes_written;
                }
            }
            FileEvent::Failed { client, error, .. } => {
                self.progress.clients_failed += 1;
                self.failed.push((*client, error.clone()));
            }
            FileEvent::Leftover { path, status } => {
                self.leftovers.push((path.clone(), status.clone()));
            }
            _ => {}
        }
        self.observer.event(event);
    }

    async fn observe(
        &mut self,
        t0: Instant,
        mut inbox: mpsc::UnboundedReceiver<FileEvent>,
        mut tasks: JoinSet<()>,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let mut cpu = CpuMeter::start();
        let mut probe = LagProbe::start();
        let mut ticks = tokio::time::interval_at(t0 + TICK, TICK);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut interrupted = false;
        let mut stop_open = true;
        // No deadline until a stop: every client's operations are bounded by the
        // operation timeout, and its script (or replay time) is finite.
        let mut deadline: Option<Instant> = None;
        loop {
            tokio::select! {
                biased;
                changed = stop.changed(), if stop_open && !interrupted => {
                    if changed.is_err() {
                        stop_open = false;
                    } else if *stop.borrow() {
                        interrupted = true;
                        deadline = Some(Instant::now() + STOP_GRACE);
                    }
                }
                event = inbox.recv() => match event {
                    Some(event) => self.event(&event),
                    None => break,
                },
                done = tasks.join_next() => {
                    if done.is_some() {
                        self.progress.clients_running =
                            self.progress.clients_running.saturating_sub(1);
                    }
                }
                Some(lag) = probe.next() => {
                    self.recorder.lag(Instant::now(), lag);
                    self.hand_on_closed();
                }
                _ = ticks.tick() => {
                    let now = Instant::now();
                    let percent = cpu.percent();
                    self.recorder.cpu(now, percent);
                    self.hand_on_closed();
                    self.progress.elapsed = now.saturating_duration_since(t0);
                    self.progress.cpu_percent = percent;
                    self.progress.phase = self.recorder.phase().as_str();
                    self.observer.tick(&self.progress);
                }
                _ = sleep_until(deadline) => break,
            }
        }
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        while let Ok(event) = inbox.try_recv() {
            self.event(&event);
        }
        interrupted
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The run's metadata; its phases are those of the settings until the run has found
/// its measured window.
fn run_meta(
    workload: &FileWorkload,
    settings: &FileRunSettings,
    started_at: SystemTime,
    interrupted: bool,
) -> RunMeta {
    let started_at = chrono::DateTime::<chrono::Utc>::from(started_at)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut meta = RunMeta::new(
        settings.run_id.clone(),
        workload.name(),
        workload.clients(),
        workload.seed(),
        started_at,
    );
    meta.interval = settings.interval;
    meta.late_start_threshold = LATE_AFTER;
    meta.client_cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    meta.phases = PhaseLengths {
        logon: settings.ramp_up,
        steady: settings.duration,
        drain: Duration::ZERO,
    };
    meta.interrupted = interrupted;
    meta.peakhour_version = env!("CARGO_PKG_VERSION").to_owned();
    let mut qos = QosThresholds::default();
    if let Some(ms) = settings.qos_p95_ms {
        qos.default_p95_ms = ms;
    }
    meta.qos = qos;
    meta
}
