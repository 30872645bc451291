//! `peakhour run`: simulate users, record, score, write the run directory.
//!
//! The engine runs the users and returns the run's record; this command wires
//! it to the target, the server monitor, the signals and the live line, then
//! computes the summary and writes the files.

mod live_line;
pub(super) mod monitored;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use peakhour_analysis::{Summary, Verdict};
use peakhour_engine::{Both, RunResult, RunSettings, Target};
use peakhour_monitor::LocalSource;
use peakhour_rundir::{DirKind, MonitorSection, RunConfig, RunDir, RunSection, TargetSection};
use peakhour_workload::{HumanDuration, Overrides, Plan};
use tokio::runtime::Runtime;

use self::live_line::LiveLine;
use self::monitored::{MonitorRun, run_monitored};
use super::monitor::{Watching, lab_probes, local_source};
use super::signals::EXIT_INTERRUPTED;
use super::target::{ResolvedTarget, check_population, load_profile, resolve_plan, resolve_target};
use crate::args::RunArgs;
use crate::config::{CONNECT_TIMEOUT, RunConfig as CheckedRunConfig, usage_exit};

/// The server monitor samples every second during a run.
pub(super) const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // Bounds first, then the profile, the target and the population: all
    // before any connection, and bad usage exits with code 2.
    let config = match CheckedRunConfig::check(&args) {
        Ok(config) => config,
        Err(error) => return usage_exit(error.into()),
    };
    let prepared = match super::run_files::file_profile(&args.profile.profile) {
        Ok(Some(choice)) => {
            return super::run_files::run(&args, config, choice).or_else(usage_exit);
        }
        Ok(None) => Prepared::new(&args, config),
        Err(error) => Err(error),
    };
    let prepared = match prepared {
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

    let (mut result, monitor) = prepared.execute(&runtime)?;
    result.record.meta.security_shortcuts = prepared.resolved.shortcuts.clone();
    let outcome = &result.outcome;
    let mut summary = Summary::compute(&result.record)?;
    summary.limits = super::planner::summary_limits(prepared.resolved.lab.as_ref());
    if let Some(monitor) = monitor {
        monitor.add_findings(
            &mut summary,
            result.outcome.clock.t0,
            prepared.config.high_average_window,
        );
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
        let mut recorded = run_config(&plan, &config, &target)?;
        recorded.target.security_shortcuts = resolved.shortcuts.clone();
        RunDir::new(&dir).write_config(&recorded)?;

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
        let probes = lab.map(lab_probes).unwrap_or_default();
        let source = local_source(&self.config.groups, lab, probes, Watching::OnlyPeakhour)?;
        Ok((source, RunDir::new(&self.dir).create_monitor_csv()?))
    }

    /// Runs the users with the monitor sampling beside them and every closed
    /// interval journaled to disk, until the run ends or a signal (SIGINT,
    /// SIGTERM, SIGHUP) stops it; a second signal exits at once.
    fn execute(&self, runtime: &Runtime) -> anyhow::Result<(RunResult, Option<MonitorRun>)> {
        let mut live = LiveLine::new(self.plan.actions());
        let mut journal = RunDir::new(&self.dir).journal()?;
        let observers = &mut Both(&mut live, &mut journal);
        let (result, monitor) = run_monitored(
            runtime,
            self.monitor_source(),
            self.config.monitor_baseline,
            "finishing in-flight actions (at most 2 s), then writing results",
            |stop| async move {
                peakhour_engine::run(
                    self.plan.clone(),
                    self.target.clone(),
                    self.settings.clone(),
                    stop,
                    observers,
                )
                .await
            },
        )?;
        live.clear();
        if let Err(e) = journal.finish() {
            eprintln!("warning: closed intervals were not all journaled as they closed: {e}");
        }
        Ok((result?, monitor))
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
            security_shortcuts: Vec::new(),
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
