//! `peakhour run`: simulate users, record, score, write the run directory.
//!
//! The engine runs the users and returns the run's record; this command wires
//! it to the target, the server monitor, the signals and the live line, then
//! computes the summary and writes the files.

pub(super) mod monitored;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use peakhour_analysis::{Summary, Verdict};
use peakhour_app::RunRequest;
use peakhour_app::setup::ResolvedTarget;
use peakhour_engine::{Both, LiveLine, Observer, RunResult, RunSettings, StartNotice, Target};
use peakhour_monitor::{NodeExporterSource, Source};
use peakhour_report::render_run_end;
use peakhour_rundir::RunDir;
use peakhour_workload::{HumanDuration, Plan};
use tokio::runtime::Runtime;

use self::monitored::{add_findings, run_monitored};
use super::monitor::{Watching, local_source};
use super::signals::EXIT_INTERRUPTED;
use crate::args::RunArgs;
use crate::config::{
    CONNECT_TIMEOUT, MONITOR_INTERVAL, RunConfig as CheckedRunConfig, UsageError, usage_exit,
};
use peakhour_app::StatusLine;
use peakhour_lab::LabStatus;
use peakhour_monitor::MonitorRun;

pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // Bounds first, then the profile, the target and the population: all
    // before any connection, and bad usage exits with code 2.
    let config = match CheckedRunConfig::check(&args) {
        Ok(config) => config,
        Err(error) => return usage_exit(error.into()),
    };
    let prepared = match super::run_files::file_profile(&args.profile.profile) {
        Ok(Some(_)) if args.metrics.metrics_listen.is_some() => {
            return usage_exit(UsageError("--metrics-listen serves mail runs only".into()).into());
        }
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
    let (listen, linger) = (args.metrics.metrics_listen, args.metrics.metrics_linger);
    let metrics = peakhour_metrics::Exporter::start(listen, linger)?;
    // One thread for the users, the observer and the I/O driver. With a
    // worker per core, every event a user sends and every socket that became
    // ready woke another thread (2.3 futex calls and 2.6 context switches per
    // IMAP command); on one thread there are none, and CPU per command fell
    // by a quarter (docs/PERFORMANCE.md). One core of client is well above
    // what a lab on the same machine sustains; the monitor keeps its own thread.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let offered = runtime
        .block_on(peakhour_engine::preflight(
            &prepared.plan,
            &prepared.target,
            CONNECT_TIMEOUT,
        ))
        .context("the target failed its check before the load; nothing was run")?;
    prepared.announce();
    if let Some(address) = metrics.address() {
        eprintln!("live metrics at http://{address}/metrics, until {linger:?} after the run");
    }

    // The lab's Postfix log, read from here after the run for the MTA's own delivery times.
    let mta_log = prepared.resolved.lab.as_ref().map(|lab| {
        peakhour_monitor::LogMark::here(&peakhour_lab::Layout::new(&lab.dir).postfix_log())
    });
    let (mut result, monitor) = prepared.execute(&runtime, &mut metrics.observer())?;
    result.record.meta.security_shortcuts = prepared.resolved.shortcuts.clone();
    result.record.server.capabilities = offered;
    result.record.server.mta_delivery = mta_log.and_then(|mark| {
        let delays = mark.delays_since().ok()?;
        let source = format!("Postfix log, delay=: {}", mark.path().display());
        Some(peakhour_analysis::MtaDelivery::of(source, &delays))
    });
    let outcome = &result.outcome;
    let mut summary = Summary::compute(&result.record)?;
    let lab = prepared.resolved.lab.as_ref();
    summary.limits = lab.and_then(|lab| lab.limits.server_limits());
    if let Some(monitor) = monitor {
        let window = prepared.config.high_average_window;
        add_findings(monitor, &mut summary, result.outcome.clock.t0, window);
    }
    // The results, then (only then) the servers' software, then report.html.
    let redactor = prepared.target.redactor();
    let written = prepared.dir.finish_run(&result.record, &summary, &redactor);
    let not_written = written.as_ref().err().map(ToString::to_string);
    let dir = prepared.dir.path();
    let end = render_run_end(&summary, outcome.reconciled, dir, not_written.as_deref());
    print!("{end}");
    if let Some(e) = written? {
        eprintln!("warning: host.json or report.html was not written: {e}");
    }
    metrics.finish();
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
    config: CheckedRunConfig,
    plan: Arc<Plan>,
    target: Arc<Target>,
    resolved: ResolvedTarget,
    dir: RunDir,
    settings: RunSettings,
}

impl Prepared {
    fn new(args: &RunArgs, config: CheckedRunConfig) -> anyhow::Result<Self> {
        let say = &mut |line: String| eprintln!("{line}");
        let request = RunRequest::resolve(args, config, say)?;
        let (run_id, name) = request.names(std::time::SystemTime::now());
        let dir = RunDir::start(request.out.as_deref(), &name)?;
        dir.write_config(&request.recorded_config()?)?;
        let settings = request.settings(run_id);
        let RunRequest {
            config,
            mail,
            target,
            ..
        } = request;
        Ok(Prepared {
            config,
            plan: mail.plan,
            target,
            resolved: mail.resolved,
            dir,
            settings,
        })
    }

    fn announce(&self) {
        let plan = &self.plan;
        let shape = &self.config.shape;
        let (ramp_up, steady) = plan.window_phases(shape.ramp_up, shape.duration);
        eprintln!(
            "run {}: {} users of {}, day {} at speed {} (seed {}), window {}, ramp-up {:?}, steady {:?}, drain up to {:?}",
            self.settings.run_id,
            plan.users(),
            plan.name(),
            HumanDuration(plan.day()),
            plan.speed(),
            plan.seed(),
            plan.window(),
            ramp_up,
            steady,
            shape.drain
        );
    }

    /// The server monitor's source (this machine's /proc, the lab's queue and
    /// Dovecot ports) and its CSV file.
    fn monitor_source(&self) -> anyhow::Result<(Box<dyn Source>, std::fs::File)> {
        let lab = self.resolved.lab.as_ref();
        let source: Box<dyn Source> = match &self.config.node_exporter {
            Some(url) => Box::new(NodeExporterSource::new(url, MONITOR_INTERVAL)?),
            None => {
                let probes = lab.map(LabStatus::mail_probes).unwrap_or_default();
                let groups = &self.config.groups;
                Box::new(local_source(groups, lab, probes, Watching::OnlyPeakhour)?)
            }
        };
        Ok((source, self.dir.create_monitor_csv()?))
    }

    /// Runs the users with the monitor sampling beside them and every closed
    /// interval journaled to disk, until the run ends or a signal (SIGINT,
    /// SIGTERM, SIGHUP) stops it; a second signal exits at once.
    fn execute(
        &self,
        runtime: &Runtime,
        metrics: &mut dyn Observer,
    ) -> anyhow::Result<(RunResult, Option<MonitorRun>)> {
        let mut live = LiveLine::new(StatusLine::new());
        let mut journal = self.dir.journal()?;
        let observers = &mut Both(&mut live, &mut Both(&mut journal, metrics));
        let (result, monitor) = run_monitored(
            runtime,
            self.monitor_source(),
            self.config.monitor_baseline,
            "finishing in-flight actions (at most 2 s), then writing results",
            |stop| async move {
                // The live metrics say `waiting` before the line does.
                let notice = &mut StartNotice::new(|text| eprintln!("{text}"));
                let observers = &mut Both(observers, notice);
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
        live.sink().clear();
        if let Err(e) = journal.finish() {
            eprintln!("warning: closed intervals were not all journaled as they closed: {e}");
        }
        Ok((result?, monitor))
    }
}
