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
use super::target::{ResolvedTarget, check_population, load_profile, resolve_plan, resolve_target};
use crate::args::RunArgs;
use crate::config::{CONNECT_TIMEOUT, RunConfig as CheckedRunConfig, usage_exit};

/// The server monitor samples every second during a run.
const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

/// Exit code of a run stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: u8 = 130;

pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // Bounds first, then the profile, the target and the population: all
    // before any connection, and bad usage exits with code 2.
    let prepared = match CheckedRunConfig::check(&args)
        .map_err(anyhow::Error::from)
        .and_then(|config| Prepared::new(&args, config))
    {
        Ok(prepared) => prepared,
        Err(error) => return usage_exit(error),
    };
    // One thread for the users, the observer and the I/O driver. With a
    // worker per core, every event a user sends and every socket that became
    // ready woke another thread (2.3 futex calls and 2.6 context switches per
    // IMAP command); on one thread there are none, and CPU per command fell
    // by a quarter (docs/PERFORMANCE.md). One core of client is well above
    // what a lab on the same machine sustains; the monitor keeps its own thread.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime
        .block_on(peakhour_engine::preflight(
            &prepared.plan,
            &prepared.target,
            CONNECT_TIMEOUT,
        ))
        .context("the target failed its check before the load; nothing was run")?;
    prepared.announce();

    let (result, monitor) = prepared.execute(&runtime)?;
    let outcome = &result.outcome;
    let mut summary = Summary::compute(&result.record)?;
    if let Some(monitor) = monitor {
        monitor.add_findings(&mut summary, &result, prepared.config.high_average_window);
    }
    RunDir::new(&prepared.dir).write_results(&result.record, &summary)?;
    if let Err(e) = super::report::write_report(&prepared.dir) {
        eprintln!("warning: report.html was not written: {e:#}");
    }

    print!("{}", peakhour_report::render_terminal(&summary));
    if !outcome.reconciled {
        println!("deliveries were not reconciled (the run was interrupted)");
    }
    print_safety_notes(&summary);
    println!("results: {}", prepared.dir.display());
    Ok(if outcome.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if summary.verdict == Verdict::Fail {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// What the summary holds that the terminal table does not say: panics,
/// and lost copies that were never looked for.
fn print_safety_notes(summary: &Summary) {
    if summary.panics > 0 {
        println!(
            "FAILED: {} of peakhour's tasks panicked (a bug in peakhour); their work is missing \
             from the figures and counted as errors of kind `panic`",
            summary.panics
        );
    }
    let d = &summary.delivery;
    if d.lost_unsearched > 0 {
        println!(
            "{} of the {} lost copies are in mailboxes the reconciliation could not search \
             (the search failed, timed out or panicked): not seen, but not looked for either",
            d.lost_unsearched, d.lost
        );
    }
    if d.lost_not_listed > 0 {
        println!(
            "summary.json names the first {} lost copies; {} more are counted, not named",
            d.lost_recipients.len(),
            d.lost_not_listed
        );
    }
}

/// A run ready to start: its plan, target, directory (with `config.toml`
/// written) and engine settings.
struct Prepared {
    config: CheckedRunConfig,
    plan: Arc<Plan>,
    target: Arc<Target>,
    resolved: ResolvedTarget,
    dir: PathBuf,
    settings: RunSettings,
}

impl Prepared {
    fn new(args: &RunArgs, config: CheckedRunConfig) -> anyhow::Result<Self> {
        let profile = load_profile(&args.profile.profile)?;
        let resolved = resolve_target(&args.target)?;
        let shape = &config.shape;
        let overrides = Overrides {
            users: config.users,
            day: shape.day,
            speed: shape.speed,
            seed: shape.seed,
        };
        let plan = resolve_plan(&profile, overrides, &resolved)?;
        // Mail goes only to the test population, checked before any connection.
        check_population(&plan, &resolved, &config.allow_domains)?;
        let target = resolved.target.clone();
        if args.protocol == peakhour_engine::MailProtocol::Jmap && target.jmap.is_none() {
            bail!("--protocol jmap needs a JMAP server: a lab --mail-server cyrus, or --jmap URL");
        }

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
        RunDir::new(&dir).write_config(&run_config(&plan, &config, &target)?)?;

        let settings = RunSettings {
            run_id,
            ramp_up: shape.ramp_up,
            duration: shape.duration,
            drain: shape.drain,
            action_timeout: shape.action_timeout,
            connect_timeout: CONNECT_TIMEOUT,
            client_name: "client.peakhour.test".into(),
            interval: shape.interval,
            qos_p95_ms: shape.qos_p95_ms,
            protocol: args.protocol,
        };
        Ok(Prepared {
            config,
            plan,
            target,
            resolved,
            dir,
            settings,
        })
    }

    fn announce(&self) {
        let plan = &self.plan;
        let shape = &self.config.shape;
        eprintln!(
            "run {}: {} users of {}, day {} at speed {} (seed {}), ramp-up {:?}, steady {:?}, drain up to {:?}",
            self.settings.run_id,
            plan.users(),
            plan.name(),
            humantime(plan.day()),
            plan.speed(),
            plan.seed(),
            shape.ramp_up,
            shape.duration,
            shape.drain
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
    fn execute(&self, runtime: &Runtime) -> anyhow::Result<(RunResult, Option<MonitorRun>)> {
        let baseline = self.config.monitor_baseline;
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
            let origin = Instant::now() + baseline;
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
            if monitor.is_some() && !baseline.is_zero() {
                eprintln!(
                    "monitor: sampling the idle server for {} before the load",
                    humantime(baseline)
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

/// The resolved configuration, with every setting and no password; the
/// domains allowed outside the reserved test names are on record too
/// (`[population] allowed_domains`).
fn run_config(
    plan: &Plan,
    config: &CheckedRunConfig,
    target: &peakhour_engine::Target,
) -> anyhow::Result<RunConfig> {
    let shape = &config.shape;
    let mut recorded = RunConfig::new(
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
            high_average_window: HumanDuration(config.high_average_window),
            baseline: HumanDuration(config.monitor_baseline),
        },
        plan,
    )?;
    if !config.allow_domains.is_empty() {
        let domains = config
            .allow_domains
            .iter()
            .cloned()
            .map(toml::Value::String)
            .collect();
        let mut population = toml::Table::new();
        population.insert("allowed_domains".into(), toml::Value::Array(domains));
        recorded
            .plan
            .insert("population".into(), toml::Value::Table(population));
    }
    Ok(recorded)
}

fn signed_secs(at: Instant, origin: Instant) -> f64 {
    if at >= origin {
        at.duration_since(origin).as_secs_f64()
    } else {
        -origin.duration_since(at).as_secs_f64()
    }
}
