//! The measuring half of `peakhour tasks`: the idle baseline, and each
//! task run with the monitor beside it, read into the planner's terms by
//! `peakhour_monitor::server`.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};
use peakhour_analysis::plan::{
    IdleBaseline, LatencyMeasurement, MemoryFit, TaskRun, TaskSet, TaskUnit, derive_task_cost,
};
use peakhour_engine::session_tasks::{
    AtomicTask, IdleSteps, Schedule, SessionTask, hold_idle_sessions, run_pool,
};
use peakhour_monitor::server::{
    high_average_value, measure_window, memory_fit, seconds_window, server_rss_bytes,
    steady_window, task_run, window_mean,
};
use peakhour_monitor::{Monitor, MonitorConfig};
use peakhour_workload::HumanDuration;
use peakhour_workload::derive::one_action_profile;
use tokio::time::Instant;

use super::Setup;
use crate::commands::monitor::{Watching, lab_probes, local_source};
use crate::commands::planner::load_average;
use crate::commands::sweep::child::Children;

/// The monitor samples every second, as in `peakhour run`.
const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

impl Setup {
    /// A monitor on this runtime writing `dir/monitor.csv`, its time counted
    /// from `origin`.
    fn start_monitor(&self, dir: &Path, origin: Instant) -> anyhow::Result<Monitor> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let lab = self.resolved.lab.as_ref();
        let probes = lab.map(lab_probes).unwrap_or_default();
        let source = local_source(&[], lab, probes, Watching::MailServers)?;
        let path = dir.join("monitor.csv");
        let csv = std::fs::File::create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let config = MonitorConfig {
            interval: MONITOR_INTERVAL,
            origin: Some(origin),
            ..MonitorConfig::default()
        };
        Ok(Monitor::start(source, Some(csv), config)?)
    }

    /// The idle server over `--baseline`, and its mean resident memory.
    pub(super) async fn idle_baseline(&self) -> anyhow::Result<(IdleBaseline, Option<f64>)> {
        let length = self.args.baseline;
        let monitor = self.start_monitor(&self.dir.join("baseline"), Instant::now())?;
        tokio::time::sleep(length + MONITOR_INTERVAL / 2).await;
        let table = monitor.finish().await?.table;
        let window = seconds_window(0.0, length.as_secs_f64(), MONITOR_INTERVAL);
        let memory = window_mean(&table, &server_rss_bytes(&table), window);
        Ok((measure_window(&table, window), memory))
    }

    /// Every task at `ws` workstations, and the task set they make.
    pub(super) fn run_all(
        &self,
        ws: u32,
        baseline: &IdleBaseline,
        baseline_memory: Option<f64>,
        runtime: &tokio::runtime::Runtime,
        children: &Children,
    ) -> anyhow::Result<TaskSet> {
        let mut costs = Vec::new();
        let mut memory: Option<MemoryFit> = None;
        let several = self.workstations.len() > 1;
        for task in &self.tasks {
            if children.interrupted() {
                break;
            }
            let suffix = if several {
                format!("-{ws}w")
            } else {
                String::new()
            };
            let dir = self.dir.join(format!("task-{}{suffix}", task.name()));
            eprintln!(
                "tasks: {} at {ws} workstations -> {} (load average {:.2})",
                task.name(),
                dir.display(),
                load_average()
            );
            let run = match task {
                AtomicTask::Action(name) => self.run_action(name, ws, &dir, children)?,
                AtomicTask::Pool(kind) => runtime.block_on(self.run_pool(*kind, ws, &dir))?,
                AtomicTask::IdleSessions => {
                    let (run, fit) = runtime.block_on(self.run_idle(&dir, baseline_memory))?;
                    memory = fit;
                    run
                }
            };
            let Some(run) = run else { continue };
            match derive_task_cost(&run, baseline, self.server_cpus, &high_average_value) {
                Ok(cost) => costs.push(cost),
                Err(e) => eprintln!("tasks: {} left out: {e}", task.name()),
            }
        }
        Ok(TaskSet::build(
            &self.profile.name,
            costs,
            baseline,
            self.server_cpus,
            self.server_memory,
            memory,
        ))
    }

    /// One action alone, through a `peakhour run` child.
    fn run_action(
        &self,
        name: &str,
        ws: u32,
        dir: &Path,
        children: &Children,
    ) -> anyhow::Result<Option<TaskRun>> {
        let args = &self.args;
        let span = (args.ramp_up + args.duration + args.drain).as_secs_f64();
        if AtomicTask::Action(name.to_owned()).consumes_inbox() && !args.no_init {
            // Each workstation takes rate × span messages out, with room to spare.
            self.init(Some((args.rate * span * 1.5).ceil() as u64 + 5), children)?;
        }
        let per_day = args.rate * self.profile.day().as_secs_f64();
        let profile = one_action_profile(&self.profile, name, per_day)?;
        let d = |d: Duration| OsString::from(HumanDuration(d).to_string());
        let flags: Vec<OsString> = vec![
            "--users".into(),
            ws.to_string().into(),
            "--duration".into(),
            d(args.duration),
            "--ramp-up".into(),
            d(args.ramp_up),
            "--drain".into(),
            d(args.drain),
            "--out".into(),
            dir.into(),
        ];
        let status = self.child("run", &format!("{name}.toml"), profile, flags, children)?;
        if !dir.join("summary.json").exists() {
            bail!("the {name} task ended without results ({status}); see its output above");
        }
        let run_dir = peakhour_rundir::RunDir::new(dir);
        let summary = run_dir.read_summary()?;
        let table = run_dir
            .read_monitor()?
            .with_context(|| format!("{} has no monitor.csv", dir.display()))?;
        let Some(action) = summary.actions.get(name) else {
            eprintln!("tasks: {name}: the run recorded no {name} action");
            return Ok(None);
        };
        if action.errors > 0 {
            eprintln!(
                "tasks: {name}: {} of {} failed ({:?})",
                action.errors,
                action.errors + action.count,
                action.errors_by_kind
            );
        }
        let latency = action
            .p50_ms
            .zip(action.p95_ms)
            .map(|(p50, p95)| LatencyMeasurement {
                p50_ms: p50,
                p95_ms: p95,
                samples: action.count,
            });
        let window = steady_window(&summary, MONITOR_INTERVAL);
        Ok(Some(task_run(
            name,
            ws,
            action.count as f64,
            latency,
            &table,
            window,
        )))
    }

    /// A session task from a pool of workstations, with the monitor beside it.
    async fn run_pool(
        &self,
        kind: SessionTask,
        ws: u32,
        dir: &Path,
    ) -> anyhow::Result<Option<TaskRun>> {
        let args = &self.args;
        let load_start = Instant::now() + MONITOR_INTERVAL;
        let monitor = self.start_monitor(dir, load_start)?;
        let schedule = Schedule {
            load_start,
            steady_start: load_start + args.ramp_up,
            steady_end: load_start + args.ramp_up + args.duration,
            drain: args.drain,
        };
        let result = run_pool(kind, &self.population, ws, args.rate, schedule).await;
        let table = monitor.finish().await?.table;
        if result.errors > 0 {
            eprintln!(
                "tasks: {}: {} of {} failed (last: {})",
                kind.name(),
                result.errors,
                result.errors + result.completed,
                result.last_error.as_deref().unwrap_or("?")
            );
        }
        let steady = args.ramp_up.as_secs_f64();
        let window = seconds_window(
            steady,
            steady + args.duration.as_secs_f64(),
            MONITOR_INTERVAL,
        );
        let latency = LatencyMeasurement::from_histogram(&result.latency);
        let completed = result.completed as f64;
        Ok(Some(task_run(
            kind.name(),
            ws,
            completed,
            latency,
            &table,
            window,
        )))
    }

    /// Idle sessions: half of `--sessions` held 5 s, then all of them for
    /// the window; memory at 0 (the baseline), half and all gives the fit.
    async fn run_idle(
        &self,
        dir: &Path,
        baseline_memory: Option<f64>,
    ) -> anyhow::Result<(Option<TaskRun>, Option<MemoryFit>)> {
        let users = self.population.addresses.len() as u32;
        // Dovecot allows 10 connections per user and address by default.
        let wanted = self.args.sessions.min(users.saturating_mul(9)).max(2) as usize;
        let origin = Instant::now();
        let monitor = self.start_monitor(dir, origin)?;
        let steps = IdleSteps {
            half: Duration::from_secs(5),
            ramp_up: self.args.ramp_up,
            steady: self.args.duration,
            tail: MONITOR_INTERVAL,
        };
        let hold = hold_idle_sessions(&self.population, wanted, steps).await;
        let table = monitor.finish().await?.table;
        if hold.errors > 0 {
            let last = hold.last_error.unwrap_or_default();
            eprintln!(
                "tasks: idle_session: {} not opened (last: {last})",
                hold.errors
            );
        }
        if hold.full == 0 {
            return Ok((None, None));
        }
        let window = |(from, to): (Instant, Instant)| {
            let s = |at: Instant| (at - origin).as_secs_f64();
            seconds_window(s(from), s(to), MONITOR_INTERVAL)
        };
        let held = [
            (hold.half, window(hold.half_held)),
            (hold.full, window(hold.steady)),
        ];
        let fit = memory_fit(&table, baseline_memory, &held)
            .inspect_err(|e| eprintln!("tasks: no memory model: {e}"))
            .ok();
        let mut run = task_run(
            "idle_session",
            hold.full as u32,
            0.0,
            None,
            &table,
            held[1].1,
        );
        run.unit = TaskUnit::SessionHour;
        run.tasks_completed = hold.full as f64 * run.measured.window_s / 3600.0;
        run.memory_per_session_bytes = fit.as_ref().map(|f| f.per_session_bytes);
        Ok((Some(run), fit))
    }
}
