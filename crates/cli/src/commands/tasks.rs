//! `peakhour tasks`: seed 001's atomic-task profiling. Each task runs alone
//! at a steady rate while the monitor samples the server, after an idle
//! baseline that every task's cost is measured against.
//!
//! * A profile's **actions** each run as a `peakhour run` child with a
//!   one-action profile (`peakhour_workload::derive`; the action's rate set
//!   so that each workstation starts `--rate` per second, speed 1), so that
//!   a task is measured exactly as `peakhour run` measures an action.
//! * The **session tasks** (`logon`, `deliver`, `search_unindexed`,
//!   `idle_session`) are not actions; `peakhour_engine::session_tasks` runs
//!   them here with the monitor sampling beside them.
//!
//! What the monitor saw is read by `peakhour_analysis::monitor::server`, a task's cost
//! is `peakhour_analysis::plan::derive_task_cost`'s, and the files are
//! `peakhour_report::plan`'s. This file sequences them (docs/planner.md);
//! `tasks/measure.rs` measures.

mod measure;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use peakhour_engine::session_tasks::AtomicTask;
use peakhour_report::plan::{render_tasks_terminal, tasks_json, write_tasks_files};
use peakhour_workload::HumanDuration;
use peakhour_workload::derive::inbox_topped_up;

use super::planner::{load_average, output_dir, write};
use super::sweep::child::{Children, run_child};
use crate::args::TasksArgs;
use peakhour_app::{ChildTarget, InitRequest, TasksRequest};

/// Everything the tasks share.
struct Setup {
    args: TasksArgs,
    dir: PathBuf,
    /// The profile, target, tasks, workstations, seed, population and server.
    request: TasksRequest,
}

pub(crate) fn run(args: TasksArgs) -> anyhow::Result<ExitCode> {
    let setup = Setup::new(args)?;
    let args = &setup.args;
    std::fs::create_dir_all(setup.dir.join("profiles"))
        .with_context(|| format!("cannot create {}", setup.dir.display()))?;
    let children = Children::install("tasks")?;
    let names: Vec<&str> = setup.request.tasks.iter().map(AtomicTask::name).collect();
    eprintln!(
        "tasks {}: profile {}, tasks {}, workstations {:?} at {} task/s each, {} steady per task (after {} ramp-up), baseline {}; server {} CPUs",
        setup.dir.display(),
        setup.request.profile.name,
        names.join(", "),
        setup.request.workstations,
        args.rate,
        HumanDuration(args.duration),
        HumanDuration(args.ramp_up),
        HumanDuration(args.baseline),
        setup.request.server_cpus
    );
    if !args.no_init {
        setup.init(None, &children)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    eprintln!(
        "tasks: idle baseline, {} (load average {:.2})",
        HumanDuration(args.baseline),
        load_average()
    );
    let baseline_dir = setup.dir.join("baseline");
    let meter = setup.meter();
    let idle = meter.idle_baseline(&baseline_dir, args.baseline);
    let (baseline, baseline_memory) = runtime.block_on(idle)?;
    let mut result = None;
    for &ws in &setup.request.workstations {
        let set = setup.run_all(ws, &baseline, baseline_memory, &runtime, &children)?;
        if children.interrupted() {
            bail!(
                "interrupted; the tasks measured so far are in {}",
                setup.dir.display()
            );
        }
        if setup.request.workstations.len() > 1 {
            write(
                &setup.dir.join(format!("tasks-{ws}w.json")),
                tasks_json(&set)?,
            )?;
        }
        result = Some(set);
    }
    let set = result.context("no task was measured")?;
    write_tasks_files(&setup.dir, &set)
        .with_context(|| format!("cannot write into {}", setup.dir.display()))?;
    print!("{}", render_tasks_terminal(&set));
    println!("results: {}", setup.dir.display());
    Ok(ExitCode::SUCCESS)
}

impl Setup {
    fn new(args: TasksArgs) -> anyhow::Result<Self> {
        let say = &mut |line: String| eprintln!("{line}");
        let request = TasksRequest::resolve(&args, say)?;
        let name = &request.profile.name;
        let dir = output_dir(args.out.as_deref(), "tasks", name, "tasks.json")?;
        Ok(Self { args, dir, request })
    }

    /// Runs a child `peakhour` with `args` (made by `args` from the path of
    /// `profile`, written to `profiles/FILE`), its output prefixed with FILE.
    fn child(
        &self,
        file: &str,
        profile: String,
        args: impl FnOnce(PathBuf) -> Vec<OsString>,
        children: &Children,
    ) -> anyhow::Result<std::process::ExitStatus> {
        let path = self.dir.join("profiles").join(file);
        write(&path, profile)?;
        let prefix = format!("[{}] ", file.trim_end_matches(".toml"));
        run_child(&args(path), &prefix, children)
    }

    /// `init` for the largest workstation count; with `inbox`, the Inbox
    /// topped up to that many messages first.
    fn init(&self, inbox: Option<u64>, children: &Children) -> anyhow::Result<()> {
        let largest = self.request.workstations[self.request.workstations.len() - 1];
        let (file, profile) = match inbox {
            Some(n) => (
                format!("init-inbox-{n}.toml"),
                inbox_topped_up(&self.request.profile, n)?,
            ),
            None => ("init.toml".to_owned(), self.request.profile.to_toml()?),
        };
        eprintln!("tasks: initializing {largest} mailboxes ({file})");
        let init = |profile: PathBuf| {
            let target = ChildTarget::of(&self.args.target);
            let (users, seed) = (largest, self.request.seed);
            InitRequest {
                profile: profile.into(),
                target,
                users,
                seed,
            }
            .args()
        };
        let status = self.child(&file, profile, init, children)?;
        if !status.success() {
            bail!("init failed ({status}); see its output above");
        }
        Ok(())
    }
}
