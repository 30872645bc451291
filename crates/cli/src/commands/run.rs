//! `peakhour run`: simulate users, record, score, write the run directory.
//!
//! The engine runs the users and returns the run's record; this command wires
//! it to the target, the server monitor, the signals and the live line, then
//! computes the summary and writes the files.

mod live_line;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use peakhour_analysis::{Summary, Verdict};
use peakhour_engine::{RunResult, RunSettings, Target};
use peakhour_monitor::analysis::{TimeWindow, mail_queue_at_end};
use peakhour_monitor::{LocalSource, Monitor, MonitorConfig, MonitorReport};
use peakhour_rundir::{DirKind, MonitorSection, RunConfig, RunDir, RunSection, TargetSection};
use peakhour_workload::{HumanDuration, Overrides, Plan};
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio::time::Instant;

use self::live_line::LiveLine;
use super::monitor::{cost_line, findings, lab_probes, local_source, wait_for_signal};
use super::target::{ResolvedTarget, load_profile, resolve_plan, resolve_target};
use crate::args::RunArgs;

/// The server monitor samples every second during a run.
const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

/// Exit code of a run stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: u8 = 130;

pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let prepared = Prepared::new(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime
        .block_on(peakhour_engine::preflight(
            &prepared.plan,
            &prepared.target,
            Duration::from_secs(10),
        ))
        .context("the target failed its check before the load; nothing was run")?;
    runtime
        .block_on(peakhour_engine::groupware_preflight(
            &prepared.plan,
            &prepared.target,
            Duration::from_secs(10),
        ))
        .context("the target failed its check before the load; nothing was run")?;
    prepared.announce(&args);

    let (mut result, monitor) = prepared.execute(&args, &runtime)?;
    // Which protocol each action spoke (update_calendar: CalDAV or IMAP).
    result.record.meta.protocols =
        peakhour_engine::action_protocols(&prepared.plan, &prepared.target);
    let outcome = &result.outcome;
    let mut summary = Summary::compute(&result.record)?;
    if let Some(monitor) = monitor {
        monitor.add_findings(&mut summary, &result, args.high_average_window);
    }
    RunDir::new(&prepared.dir).write_results(&result.record, &summary)?;
    if let Err(e) = super::report::write_report(&prepared.dir) {
        eprintln!("warning: report.html was not written: {e:#}");
    }

    print!("{}", peakhour_report::render_terminal(&summary));
    if !outcome.reconciled {
        println!("deliveries were not reconciled (the run was interrupted)");
    }
    println!("results: {}", prepared.dir.display());
    Ok(if outcome.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if summary.verdict == Verdict::Fail {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// A run ready to start: its plan, target, directory (with `config.toml`
/// written) and engine settings.
struct Prepared {
    plan: Arc<Plan>,
    target: Arc<Target>,
    resolved: ResolvedTarget,
    dir: PathBuf,
    settings: RunSettings,
}

impl Prepared {
    fn new(args: &RunArgs) -> anyhow::Result<Self> {
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

        let run_id = peakhour_rundir::dir_name(
            std::time::SystemTime::now(),
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
        RunDir::new(&dir).write_config(&run_config(&plan, args, &target)?)?;

        let settings = RunSettings {
            run_id,
            ramp_up: args.shape.ramp_up,
            duration: args.shape.duration,
            drain: args.shape.drain,
            action_timeout: args.shape.action_timeout,
            connect_timeout: Duration::from_secs(10),
            client_name: "client.peakhour.test".into(),
            interval: args.shape.interval,
            qos_p95_ms: args.shape.qos_p95_ms,
        };
        Ok(Prepared {
            plan,
            target,
            resolved,
            dir,
            settings,
        })
    }

    fn announce(&self, args: &RunArgs) {
        let plan = &self.plan;
        eprintln!(
            "run {}: {} users of {}, day {} at speed {} (seed {}), ramp-up {:?}, steady {:?}, drain up to {:?}",
            self.settings.run_id,
            plan.users(),
            plan.name(),
            humantime(plan.day()),
            plan.speed(),
            plan.seed(),
            args.shape.ramp_up,
            args.shape.duration,
            args.shape.drain
        );
    }

    /// The server monitor's source (this machine's /proc, the lab's queue and
    /// Dovecot ports) and its CSV file.
    fn monitor_source(&self) -> anyhow::Result<(LocalSource, std::fs::File)> {
        let lab = self.resolved.lab.as_ref();
        let source = local_source(&[], lab, lab.map(lab_probes).unwrap_or_default())?;
        let path = self.dir.join("monitor.csv");
        let csv = std::fs::File::create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok((source, csv))
    }

    /// Runs the users with the monitor sampling beside them, until the run
    /// ends or SIGINT/SIGTERM stops it.
    fn execute(
        &self,
        args: &RunArgs,
        runtime: &Runtime,
    ) -> anyhow::Result<(RunResult, Option<MonitorRun>)> {
        let monitor_source = self.monitor_source();
        // The monitor samples on a runtime (and thread) of its own: a sample reads
        // /proc for every process, and must not delay the simulated users' timers.
        let monitor_runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("peakhour-monitor")
            .enable_all()
            .build()?;
        let mut live = LiveLine::new(self.plan.actions());
        let (stop_tx, stop_rx) = watch::channel(false);
        let (result, monitor) = runtime.block_on(async {
            tokio::spawn(async move {
                wait_for_signal().await;
                eprintln!(
                    "\nstopping: finishing in-flight actions (at most 2 s), then writing results"
                );
                let _ = stop_tx.send(true);
            });
            // The monitor's time_s counts from the run's start; a baseline samples the
            // idle server before it (negative time_s).
            let origin = Instant::now() + args.monitor_baseline;
            let monitor = monitor_source.and_then(|(source, csv)| {
                let config = MonitorConfig {
                    interval: MONITOR_INTERVAL,
                    origin: Some(origin),
                    ..MonitorConfig::default()
                };
                let _on_monitor_runtime = monitor_runtime.enter();
                Monitor::start(source, Some(csv), config).map_err(anyhow::Error::from)
            });
            let monitor = match monitor {
                Ok(monitor) => Some(monitor),
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
            let result = peakhour_engine::run(
                self.plan.clone(),
                self.target.clone(),
                self.settings.clone(),
                stop_rx,
                &mut live,
            )
            .await;
            let monitor = match monitor {
                Some(m) => Some(MonitorRun {
                    report: m.finish().await,
                    origin,
                }),
                None => None,
            };
            (result, monitor)
        });
        live.clear();
        Ok((result?, monitor))
    }
}

/// What the server monitor recorded during the run, and the instant its
/// `time_s` counts from.
struct MonitorRun {
    report: Result<MonitorReport, peakhour_monitor::MonitorError>,
    origin: Instant,
}

impl MonitorRun {
    /// Adds the monitor's findings over the steady phase (high averages,
    /// bottleneck, the mail queue at the end) to `summary`.
    fn add_findings(self, summary: &mut Summary, result: &RunResult, min_window: Duration) {
        let report = match self.report {
            Ok(report) => report,
            Err(e) => {
                eprintln!("warning: the server monitor failed: {e}");
                return;
            }
        };
        // The monitor's origin and the engine's t0 differ by the few µs
        // between two clock reads; shift the steady window by that.
        let shift = signed_secs(result.outcome.clock.t0, self.origin);
        let start = summary.steady.start_s + shift;
        let end = start + summary.steady.length_s;
        // A sample at t covers the second before t: the steady phase's
        // samples are those at start + 1 s ... end.
        let half = MONITOR_INTERVAL.as_secs_f64() / 2.0;
        let window = TimeWindow::new(start + half, end + half);
        let found = findings(&report.table, window, min_window);
        summary.bottleneck = Some(found.bottleneck);
        summary.resources = found.resources;
        summary.delivery.mail_queue_at_end = mail_queue_at_end(&report.table);
        eprintln!("{}", cost_line(&report));
    }
}

fn humantime(d: Duration) -> String {
    peakhour_workload::HumanDuration(d).to_string()
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
