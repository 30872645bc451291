//! The measuring half of `peakhour tasks`: each task run with the monitor
//! beside it. A profile's actions run as `peakhour run` children; the
//! session tasks and the idle baseline are measured by
//! `peakhour_app::TaskMeter`, and what the monitor saw is
//! read into the planner's terms by `peakhour_analysis::monitor::server`.

use std::path::{Path, PathBuf};

use anyhow::bail;
use peakhour_analysis::monitor::server::high_average_value;
use peakhour_analysis::plan::{IdleBaseline, MemoryFit, TaskRun, TaskSet, derive_task_cost};
use peakhour_app::{ChildTarget, Measured, StepPhases, StepRequest, TaskMeter};
use peakhour_engine::session_tasks::AtomicTask;
use peakhour_workload::derive::one_action_profile;

use super::Setup;
use crate::commands::planner::load_average;
use crate::commands::sweep::child::Children;
use crate::config::MONITOR_INTERVAL;

impl Setup {
    /// The session tasks' meter, with the arguments' phases and rates.
    pub(super) fn meter(&self) -> TaskMeter<'_> {
        TaskMeter {
            population: &self.request.population,
            lab: self.request.resolved.lab.as_ref(),
            ramp_up: self.args.ramp_up,
            duration: self.args.duration,
            drain: self.args.drain,
            rate: self.args.rate,
            sessions: self.args.sessions,
            interval: MONITOR_INTERVAL,
        }
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
        let several = self.request.workstations.len() > 1;
        let meter = self.meter();
        for task in &self.request.tasks {
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
            let measured = match task {
                AtomicTask::Action(name) => Measured {
                    run: self.run_action(name, ws, &dir, children)?,
                    ..Measured::default()
                },
                AtomicTask::Pool(kind) => runtime.block_on(meter.pool(*kind, ws, &dir))?,
                AtomicTask::IdleSessions => {
                    runtime.block_on(meter.idle_sessions(&dir, baseline_memory))?
                }
            };
            for note in &measured.notes {
                eprintln!("tasks: {note}");
            }
            if matches!(task, AtomicTask::IdleSessions) {
                memory = measured.memory;
            }
            let Some(run) = measured.run else { continue };
            match derive_task_cost(
                &run,
                baseline,
                self.request.server_cpus,
                &high_average_value,
            ) {
                Ok(cost) => costs.push(cost),
                Err(e) => eprintln!("tasks: {} left out: {e}", task.name()),
            }
        }
        Ok(TaskSet::build(
            &self.request.profile.name,
            costs,
            baseline,
            self.request.server_cpus,
            self.request.server_memory,
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
        let per_day = args.rate * self.request.profile.day().as_secs_f64();
        let profile = one_action_profile(&self.request.profile, name, per_day)?;
        let phases = StepPhases::new(args.ramp_up, args.duration, args.drain);
        let step = |profile: PathBuf| {
            let target = ChildTarget::of(&args.target);
            StepRequest::new(profile, target, (ws, self.request.seed), phases, dir).args()
        };
        let status = self.child(&format!("{name}.toml"), profile, step, children)?;
        if !dir.join("summary.json").exists() {
            bail!("the {name} task ended without results ({status}); see its output above");
        }
        let task = peakhour_rundir::RunDir::new(dir).action_task(name, ws, MONITOR_INTERVAL)?;
        for note in &task.notes {
            eprintln!("tasks: {note}");
        }
        Ok(task.run)
    }
}
