//! A file run: the file clients as a [`Load`] of the run core, which records their
//! events and watches the run as it does a mail run's; what is the file run's own is
//! its workload, its settings, its metadata and the cleanup of the shared directories.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use peakhour_analysis::{AnalysisError, Phase, PhaseLengths, QosThresholds, RunMeta, RunRecord};
use peakhour_workload::files::FilePlan;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::core::meta::RunShape;
use crate::core::{
    BYTES_READ, BYTES_WRITTEN, Both, Halt, Load, Observer, RunClock, RunLoop, RunRecorder,
    STOP_GRACE, SelfSample, Tasks, Tee,
};
use crate::events::{Event, EventSink};
use crate::files::events::FileEvent;
use crate::files::target::FileTarget;
use crate::sessions::files::client::Shared;
use crate::sessions::files::mix::run_mix_client;
use crate::sessions::files::replay::{LoadFile, run_replay_client};

pub(crate) use crate::live::FileProgress;

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

/// Runs `workload` against `target` on the run core (`crate::core`): every event is
/// recorded, then shown to `observer`. Raising `stop` ends it: clients stop between
/// operations, clean up what they can within [`STOP_GRACE`], and are then abandoned.
pub async fn run_files(
    workload: FileWorkload,
    target: Arc<FileTarget>,
    settings: FileRunSettings,
    mut stop: watch::Receiver<bool>,
    observer: &mut dyn Observer,
) -> Result<FileRunResult, AnalysisError> {
    let started_at = SystemTime::now();
    let t0 = Instant::now();
    let clock = RunClock {
        t0,
        steady_start: t0 + settings.ramp_up,
        steady_end: t0 + settings.ramp_up + settings.duration,
    };
    let mut recorder = RunRecorder::new(settings.interval)?;
    if let FileWorkload::Mix(_) = &workload {
        recorder.measured_by_clients(1..=workload.clients());
    }
    if let Some(archive) = observer.interval_archive() {
        recorder.archive_to(archive);
    }
    let (events, inbox) = EventSink::channel();
    let shared = Arc::new(Shared {
        target: target.clone(),
        events,
        op_timeout: settings.op_timeout,
        connect_timeout: settings.connect_timeout,
        cleanup: settings.cleanup,
    });
    observer.started(&run_meta(&workload, &settings, started_at, true));
    let mut load = FileClients {
        workload: &workload,
        shared: Some(shared),
        end: clock.steady_end,
    };
    let tasks = load.spawn(&clock, &stop);
    let mut tally = Tally::default();
    let mut both = Both(observer, &mut tally);
    let mut tee = Tee {
        recorder: &mut recorder,
        observer: &mut both,
        handed_on: 0,
    };
    let halt = Halt::default();
    let run_loop = RunLoop {
        clock: &clock,
        halt: &halt,
        deadline: None,
    };
    let interrupted = run_loop
        .observe(&load, &mut tee, inbox, tasks, &mut stop)
        .await
        .interrupted;
    let Tally {
        failed: failed_clients,
        mut leftovers,
    } = tally;
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
    recorder.close_at(&clock, Instant::now());
    let (end, steady_at, drain_at) = recorder.phase_offsets();
    let intervals = recorder.intervals()?;
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
        drain: end.saturating_sub(drain_at),
    };
    let record = RunRecord::new(meta, intervals, Default::default());
    Ok(FileRunResult { outcome, record })
}

/// What the run's outcome lists: the clients that failed and what cleanup left.
#[derive(Default)]
struct Tally {
    failed: Vec<(u32, String)>,
    leftovers: Vec<(String, String)>,
}

impl Observer for Tally {
    fn event(&mut self, _: &RunClock, _: Instant, event: &Event) {
        let Event::File(event) = event else { return };
        match &**event {
            FileEvent::Failed { client, error, .. } => {
                self.failed.push((*client, error.clone()));
            }
            FileEvent::Leftover { path, status } => {
                self.leftovers.push((path.clone(), status.clone()));
            }
            _ => {}
        }
    }
    fn lag(&mut self, _: &RunClock, _: Instant, _: Duration) {}
    fn tick(&mut self, _: &RunClock, _: Instant, _: SelfSample) {}
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

/// A file run's load: one task per client, each running the disk mix or
/// replaying the load file.
struct FileClients<'a> {
    workload: &'a FileWorkload,
    /// Moved into the clients at spawn: they hold the only event senders.
    shared: Option<Arc<Shared>>,
    /// When a replay stops.
    end: Instant,
}

impl Load for FileClients<'_> {
    fn spawn(&mut self, clock: &RunClock, stop: &watch::Receiver<bool>) -> Tasks {
        let mut tasks = Tasks::new();
        let Some(shared) = self.shared.take() else {
            return tasks;
        };
        for n in 1..=self.workload.clients() {
            match self.workload {
                FileWorkload::Mix(plan) => tasks.spawn(
                    n,
                    run_mix_client(n, plan.clone(), shared.clone(), clock.t0, stop.clone()),
                ),
                FileWorkload::Replay { load, .. } => tasks.spawn(
                    n,
                    run_replay_client(n, load.clone(), shared.clone(), self.end, stop.clone()),
                ),
            }
        }
        tasks
    }

    fn finished(&self, client: u32) -> Option<Event> {
        Some(Event::File(Box::new(FileEvent::Ended { client })))
    }

    fn panicked(&self, client: u32) -> Option<Event> {
        self.finished(client)
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
    let mut meta = crate::core::meta::run_meta(RunShape {
        run_id: &settings.run_id,
        name: workload.name(),
        users: workload.clients(),
        seed: workload.seed(),
        started_at,
        interval: settings.interval,
        phases: PhaseLengths {
            logon: settings.ramp_up,
            steady: settings.duration,
            drain: Duration::ZERO,
        },
        interrupted,
    });
    let mut qos = QosThresholds::default();
    if let Some(ms) = settings.qos_p95_ms {
        qos.default_p95_ms = ms;
    }
    meta.qos = qos;
    meta
}
