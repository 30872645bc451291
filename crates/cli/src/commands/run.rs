//! `peakhour run`: simulate users, record, score, write the run directory.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use peakhour_analysis::{
    ActionTiming, DeliveryRecorder, IntervalRecorder, Outcome as Recorded, Phase as RecordedPhase,
    PhaseLengths, QosThresholds, RecorderConfig, RunMeta, RunRecord, Summary, Verdict,
};
use peakhour_engine::date::{epoch_secs, rfc3339};
use peakhour_engine::{
    Event, LATE_AFTER, Observer, Outcome, Phase, ReconcileProgress, RunClock, RunSettings,
    SelfSample,
};
use peakhour_monitor::analysis::{TimeWindow, mail_queue_at_end};
use peakhour_monitor::{Monitor, MonitorConfig};
use peakhour_rundir::{DirKind, MonitorSection, RunConfig, RunDir, RunSection, TargetSection};
use peakhour_workload::{ActionKind, HumanDuration, Overrides, Plan};
use tokio::sync::watch;

use super::monitor::{cost_line, findings, lab_probes, local_source, wait_for_signal};
use super::target::{load_profile, resolve_plan, resolve_target};
use crate::args::RunArgs;

/// The server monitor samples every second during a run.
const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

/// Exit code of a run stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: u8 = 130;

pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let profile = load_profile(&args.profile.profile)?;
    let resolved = resolve_target(&args.target)?;
    let overrides = Overrides {
        users: args.users,
        day: args.shape.day,
        speed: args.shape.speed,
        seed: args.shape.seed,
    };
    let plan = resolve_plan(&profile, overrides, &resolved)?;
    let target = resolved.target.clone();

    let now = std::time::SystemTime::now();
    let run_id = peakhour_rundir::dir_name(
        now,
        DirKind::Run {
            profile: plan.name(),
            users: plan.users(),
        },
    );
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs").join(&run_id));
    if dir.join("summary.json").exists() {
        bail!(
            "{} already holds a run; choose another --out",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the run directory {}", dir.display()))?;
    RunDir::new(&dir).write_config(&run_config(&plan, &args, &target)?)?;

    let qos = qos_thresholds(&plan, args.shape.qos_p95_ms);
    let settings = RunSettings {
        run_id: run_id.clone(),
        ramp_up: args.shape.ramp_up,
        duration: args.shape.duration,
        drain: args.shape.drain,
        action_timeout: args.shape.action_timeout,
        connect_timeout: Duration::from_secs(10),
        client_name: "client.peakhour.test".into(),
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime
        .block_on(peakhour_engine::preflight(
            &plan,
            &target,
            Duration::from_secs(10),
        ))
        .context("the target failed its check before the load; nothing was run")?;

    eprintln!(
        "run {run_id}: {} users of {}, day {} at speed {} (seed {}), ramp-up {:?}, steady {:?}, drain up to {:?}",
        plan.users(),
        plan.name(),
        humantime(plan.day()),
        plan.speed(),
        plan.seed(),
        args.shape.ramp_up,
        args.shape.duration,
        args.shape.drain
    );
    let mut observer = RunObserver::new(args.shape.interval, plan.actions())?;
    let (stop_tx, stop_rx) = watch::channel(false);
    // The server monitor: this machine's /proc, the lab's queue and Dovecot ports.
    let monitor_source = local_source(
        &[],
        resolved.lab.as_ref(),
        resolved.lab.as_ref().map(lab_probes).unwrap_or_default(),
    )
    .and_then(|source| {
        let path = dir.join("monitor.csv");
        let csv = std::fs::File::create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok((source, csv))
    });
    // The monitor samples on a runtime (and thread) of its own: a sample reads
    // /proc for every process, and must not delay the simulated users' timers.
    let monitor_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("peakhour-monitor")
        .enable_all()
        .build()?;
    let (outcome, monitor) = runtime.block_on(async {
        tokio::spawn(async move {
            wait_for_signal().await;
            eprintln!(
                "\nstopping: finishing in-flight actions (at most 2 s), then writing results"
            );
            let _ = stop_tx.send(true);
        });
        // The monitor's time_s counts from the run's start; a baseline samples the
        // idle server before it (negative time_s).
        let origin = tokio::time::Instant::now() + args.monitor_baseline;
        let monitor = match monitor_source {
            Ok((source, csv)) => {
                let config = MonitorConfig {
                    interval: MONITOR_INTERVAL,
                    origin: Some(origin),
                    ..MonitorConfig::default()
                };
                let _on_monitor_runtime = monitor_runtime.enter();
                Monitor::start(source, Some(csv), config).map_err(anyhow::Error::from)
            }
            Err(e) => Err(e),
        };
        let monitor = match monitor {
            Ok(m) => Some((m, origin.into_std())),
            Err(e) => {
                eprintln!(
                    "warning: the server monitor could not start ({e:#}); running without it"
                );
                None
            }
        };
        if monitor.is_some() && !args.monitor_baseline.is_zero() {
            eprintln!(
                "monitor: sampling the idle server for {} before the load",
                humantime(args.monitor_baseline)
            );
            tokio::time::sleep_until(origin).await;
        }
        let outcome = peakhour_engine::run(
            plan.clone(),
            target.clone(),
            settings,
            stop_rx,
            &mut observer,
        )
        .await;
        let monitor = match monitor {
            Some((m, origin)) => Some((m.finish().await, origin)),
            None => None,
        };
        (outcome, monitor)
    });
    observer.clear_live_line();
    let end = observer.last_offset;

    let mut meta = RunMeta::new(
        run_id.clone(),
        plan.name(),
        plan.users(),
        plan.seed(),
        rfc3339(epoch_secs(outcome.started_at)),
    );
    meta.interval = args.shape.interval;
    meta.phases = PhaseLengths {
        logon: args.shape.ramp_up,
        steady: args.shape.duration,
        drain: args.shape.drain,
    };
    meta.day = plan.day();
    meta.speed = plan.speed();
    meta.late_start_threshold = LATE_AFTER;
    meta.client_cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    meta.interrupted = outcome.interrupted;
    meta.peakhour_version = env!("CARGO_PKG_VERSION").to_owned();
    meta.action_weights = plan
        .rates()
        .iter()
        .map(|r| (r.kind.name().to_owned(), r.per_day))
        .collect();
    meta.qos = qos;
    if plan.mode() == peakhour_workload::Mode::Fixed {
        meta.completion = Some(peakhour_analysis::Completion {
            users_finished: observer.finished_users,
            time_to_finish: observer.last_finish,
        });
    }

    let mut delivery = std::mem::take(&mut observer.delivery);
    delivery.submitted(outcome.submitted_recipients);
    delivery.failed(observer.refused);
    for lost in &outcome.lost {
        delivery.lost(&lost.message_id, plan.address(lost.user));
    }
    let intervals = observer.recorder.finish(end);
    let record = RunRecord::new(meta, intervals, delivery.finish()?);
    let mut summary = Summary::compute(&record)?;
    match monitor {
        Some((Ok(report), origin)) => {
            // The monitor's origin and the engine's t0 differ by the few µs
            // between two clock reads; shift the steady window by that.
            let shift = observer.t0.map_or(0.0, |t0| signed_secs(t0, origin));
            let start = summary.steady.start_s + shift;
            let end = start + summary.steady.length_s;
            // A sample at t covers the second before t: the steady phase's
            // samples are those at start + 1 s ... end.
            let half = MONITOR_INTERVAL.as_secs_f64() / 2.0;
            let window = TimeWindow::new(start + half, end + half);
            let found = findings(&report.table, window, args.high_average_window);
            summary.bottleneck = Some(found.bottleneck);
            summary.resources = found.resources;
            summary.delivery.mail_queue_at_end = mail_queue_at_end(&report.table);
            eprintln!("{}", cost_line(&report));
        }
        Some((Err(e), _)) => eprintln!("warning: the server monitor failed: {e}"),
        None => {}
    }
    RunDir::new(&dir).write_results(&record, &summary)?;
    if let Err(e) = super::report::write_report(&dir) {
        eprintln!("warning: report.html was not written: {e:#}");
    }

    print!("{}", peakhour_report::render_terminal(&summary));
    if !outcome.reconciled {
        println!("deliveries were not reconciled (the run was interrupted)");
    }
    println!("results: {}", dir.display());
    Ok(if outcome.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if summary.verdict == Verdict::Fail {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn humantime(d: Duration) -> String {
    peakhour_workload::HumanDuration(d).to_string()
}

fn qos_thresholds(plan: &Plan, override_ms: Option<f64>) -> QosThresholds {
    let mut qos = QosThresholds::default();
    if let Some(ms) = override_ms {
        qos.default_p95_ms = ms;
        return qos;
    }
    for kind in plan.actions() {
        qos.p95_ms
            .insert(kind.name().to_owned(), plan.qos_p95_ms(kind));
    }
    qos
}

/// The resolved configuration, with every setting and no password.
fn run_config(
    plan: &Plan,
    args: &RunArgs,
    target: &peakhour_engine::Target,
) -> anyhow::Result<RunConfig> {
    let shape = &args.shape;
    Ok(RunConfig::new(
        RunSection {
            ramp_up: HumanDuration(shape.ramp_up),
            duration: HumanDuration(shape.duration),
            drain: HumanDuration(shape.drain),
            interval: HumanDuration(shape.interval),
            action_timeout: HumanDuration(shape.action_timeout),
        },
        TargetSection {
            imap: target.imap.to_string(),
            smtp: target.smtp.to_string(),
        },
        MonitorSection {
            interval: HumanDuration(MONITOR_INTERVAL),
            high_average_window: HumanDuration(args.high_average_window),
            baseline: HumanDuration(args.monitor_baseline),
        },
        plan,
    )?)
}

fn signed_secs(at: Instant, origin: Instant) -> f64 {
    if at >= origin {
        at.duration_since(origin).as_secs_f64()
    } else {
        -origin.duration_since(at).as_secs_f64()
    }
}

fn recorded_phase(phase: Phase) -> RecordedPhase {
    match phase {
        Phase::Logon => RecordedPhase::Logon,
        Phase::Steady => RecordedPhase::Steady,
        Phase::Drain => RecordedPhase::Drain,
    }
}

/// Feeds the recorder and draws the live line.
struct RunObserver {
    recorder: IntervalRecorder,
    delivery: DeliveryRecorder,
    logged_on: i64,
    refused: u64,
    last_offset: Duration,
    live: LiveLine,
    /// The engine's start, as the first callback shows it.
    t0: Option<Instant>,
    /// Users of a fixed-count profile that did all their actions, and when the
    /// last one did (since the steady phase started).
    finished_users: u32,
    last_finish: Duration,
}

impl RunObserver {
    fn new(interval: Duration, actions: Vec<ActionKind>) -> anyhow::Result<Self> {
        let recorder = IntervalRecorder::new(RecorderConfig {
            interval,
            late_start_threshold: LATE_AFTER,
        })?;
        Ok(RunObserver {
            recorder,
            delivery: DeliveryRecorder::new(),
            logged_on: 0,
            refused: 0,
            last_offset: Duration::ZERO,
            live: LiveLine::new(actions),
            t0: None,
            finished_users: 0,
            last_finish: Duration::ZERO,
        })
    }

    /// Moves the recorder into `phase` if time has reached it.
    fn sync(&mut self, clock: &RunClock, at: Instant) -> Duration {
        self.t0.get_or_insert(clock.t0);
        let offset = clock.offset(at);
        let phase = recorded_phase(clock.phase(at));
        if phase > self.recorder.phase() {
            self.recorder.enter_phase(phase, offset);
        }
        self.recorder.advance(offset);
        self.last_offset = self.last_offset.max(offset);
        offset
    }

    fn clear_live_line(&self) {
        self.live.clear();
    }
}

impl Observer for RunObserver {
    fn event(&mut self, clock: &RunClock, at: Instant, event: &Event) {
        let offset = self.sync(clock, at);
        match event {
            Event::Action {
                kind,
                intended,
                started,
                finished,
                outcome,
            } => {
                let timing = ActionTiming {
                    intended_start: clock.offset(*intended),
                    actual_start: clock.offset(*started),
                    end: clock.offset(*finished),
                };
                match outcome {
                    Outcome::Ok => {
                        self.recorder
                            .record_action(kind.name(), timing, Recorded::Ok);
                        self.live.action(*kind, timing.latency(), false);
                    }
                    Outcome::Error(error) => {
                        self.recorder
                            .record_action(kind.name(), timing, Recorded::Error(error));
                        self.live.action(*kind, timing.latency(), true);
                    }
                    Outcome::Skipped(why) => {
                        self.recorder.count(offset, &format!("skipped_{why}"), 1)
                    }
                }
            }
            Event::Command { name, elapsed } => {
                self.recorder.record_command(offset, name, *elapsed)
            }
            Event::Count { counter, by } => {
                if *counter == peakhour_engine::Counter::RecipientsRefused {
                    self.refused += by;
                }
                self.recorder.count(offset, counter.name(), *by);
            }
            Event::LoggedOn(change) => {
                self.logged_on = (self.logged_on + i64::from(*change)).max(0);
                self.recorder
                    .set_users_logged_on(offset, self.logged_on as u32);
            }
            Event::LogonFailed(kind) => self.recorder.error(offset, "logon", kind),
            Event::SessionError(kind) => self.recorder.error(offset, "session", kind),
            Event::Delivered(latency) => {
                self.delivery.delivered(*latency);
                self.recorder.count(offset, "recipients_delivered", 1);
            }
            Event::Finished => {
                self.finished_users += 1;
                self.last_finish = at.saturating_duration_since(clock.steady_start);
            }
        }
    }

    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration) {
        let offset = self.sync(clock, at);
        self.recorder.record_scheduling_lag(offset, lag);
    }

    fn tick(&mut self, clock: &RunClock, at: Instant, sample: SelfSample) {
        let offset = self.sync(clock, at);
        self.recorder.record_client_cpu(offset, sample.cpu_percent);
        self.live
            .draw(clock.phase(at), offset, self.logged_on, sample.cpu_percent);
    }

    fn reconciling(&mut self, progress: ReconcileProgress) {
        self.live.draw_reconciling(progress);
    }
}

/// The one-line view of a run in progress: phase, users, actions/s, p95 of
/// the last few seconds, errors, and the client's own CPU.
struct LiveLine {
    window: Vec<(Duration, bool)>,
    errors: u64,
    last_draw: Option<Instant>,
    terminal: bool,
    actions: BTreeMap<ActionKind, u64>,
}

impl LiveLine {
    fn new(actions: Vec<ActionKind>) -> Self {
        LiveLine {
            window: Vec::new(),
            errors: 0,
            last_draw: None,
            terminal: std::io::stderr().is_terminal(),
            actions: actions.into_iter().map(|k| (k, 0)).collect(),
        }
    }

    fn action(&mut self, kind: ActionKind, latency: Duration, error: bool) {
        self.window.push((latency, error));
        *self.actions.entry(kind).or_default() += 1;
        if error {
            self.errors += 1;
        }
    }

    /// Whether a line is due, and the time since the last one: on a
    /// terminal every second, in a log every 10 s.
    fn due(&mut self) -> Option<Duration> {
        let every = if self.terminal {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(10)
        };
        let now = Instant::now();
        let elapsed = self.last_draw.map_or(every, |last| now - last);
        if elapsed < every {
            return None;
        }
        self.last_draw = Some(now);
        Some(elapsed)
    }

    fn draw(&mut self, phase: Phase, offset: Duration, users: i64, cpu: f64) {
        let Some(elapsed) = self.due() else { return };
        let mut latencies: Vec<Duration> = self.window.iter().map(|(l, _)| *l).collect();
        latencies.sort_unstable();
        let p95 = latencies
            .get((latencies.len() * 95).div_ceil(100).saturating_sub(1))
            .map_or("-".to_owned(), |d| {
                format!("{:.0} ms", d.as_secs_f64() * 1000.0)
            });
        let rate = self.window.len() as f64 / elapsed.as_secs_f64();
        let phase = match phase {
            Phase::Logon => "logon",
            Phase::Steady => "steady",
            Phase::Drain => "drain",
        };
        let line = format!(
            "{:>6.0}s {phase:<6} users {users:>5}  actions/s {rate:>7.1}  p95 {p95:>8}  errors {}  client CPU {cpu:.0}%",
            offset.as_secs_f64(),
            self.errors
        );
        self.window.clear();
        self.write(&line);
    }

    fn draw_reconciling(&mut self, p: ReconcileProgress) {
        if self.due().is_none() {
            return;
        }
        let round = if p.round > 1 {
            format!(" (round {})", p.round)
        } else {
            String::new()
        };
        self.write(&format!(
            "reconciling deliveries: {} of {} waiting mailboxes searched{round}, {} of {} recipients seen",
            p.searched, p.mailboxes, p.delivered_recipients, p.submitted_recipients
        ));
    }

    fn write(&self, line: &str) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    fn clear(&self) {
        if self.terminal {
            eprint!("\r\x1b[2K");
        }
    }
}
