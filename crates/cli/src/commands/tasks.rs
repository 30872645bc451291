//! `peakhour tasks`: seed 001's atomic-task profiling. Each task runs alone
//! at a steady rate while the monitor samples the server, after an idle
//! baseline that every task's cost is measured against.
//!
//! * A profile's **actions** each run as a `peakhour run` child with a
//!   one-action profile derived from the profile (the action's rate set so
//!   that each workstation starts `--rate` per second, speed 1), so that a
//!   task is measured exactly as `peakhour run` measures an action.
//! * The **session tasks** (`logon`, `deliver`, `search_unindexed`,
//!   `idle_session`) are not actions; they run here (`tasks/session.rs`)
//!   with the monitor sampling beside them.
//!
//! What a task costs is `peakhour_analysis::plan::derive_task_cost`'s; the
//! files are `peakhour_report::plan`'s. docs/planner.md says how.

mod session;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use peakhour_analysis::plan::{
    IdleBaseline, LatencyMeasurement, MemoryFit, MemoryPoint, TaskCost, TaskRun, TaskSet, TaskUnit,
    derive_task_cost, fit_memory,
};
use peakhour_lab::LabStatus;
use peakhour_monitor::analysis::TimeWindow;
use peakhour_monitor::{MetricTable, Monitor, MonitorConfig};
use peakhour_report::plan::{
    render_tasks_html, render_tasks_terminal, tasks_json, write_tasks_csv,
};
use peakhour_workload::{HumanDuration, Mode, Overrides, Profile};
use tokio::time::Instant;

use self::session::{HeldSessions, Population, Schedule, SessionTask, run_pool};
use super::monitor::{lab_probes, local_source};
use super::planner::{
    high_average_value, lab_capacity, load_average, measure_window, server_rss_bytes,
    steady_window, window_mean,
};
use super::sweep::child::{Children, run_child};
use super::target::{ResolvedTarget, load_profile, resolve_plan, resolve_target};
use crate::args::TargetArgs;
use crate::args::TasksArgs;

/// The monitor samples every second, as in `peakhour run`.
const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

/// The session tasks, in the order they run.
const SESSION_TASKS: [&str; 4] = ["logon", "idle_session", "deliver", "search_unindexed"];

/// Actions that take messages out of the Inbox; the Inbox is topped up before each.
const CONSUMING: [&str; 2] = ["move", "delete"];

/// One task to run.
#[derive(Clone, Debug, PartialEq)]
enum Task {
    /// An action of the profile, by name.
    Action(String),
    /// A session task run by a pool of workstations.
    Pool(SessionTask),
    /// Idle sessions held open.
    IdleSessions,
}

impl Task {
    fn name(&self) -> &str {
        match self {
            Task::Action(name) => name,
            Task::Pool(t) => t.name(),
            Task::IdleSessions => "idle_session",
        }
    }
}

/// Everything the tasks share.
struct Setup {
    profile: Profile,
    resolved: ResolvedTarget,
    dir: PathBuf,
    tasks: Vec<Task>,
    workstations: Vec<u32>,
    seed: u64,
    population: Population,
    server_cpus: f64,
    server_memory: Option<u64>,
}

pub(crate) fn run(args: TasksArgs) -> anyhow::Result<ExitCode> {
    let setup = Setup::new(&args)?;
    std::fs::create_dir_all(setup.dir.join("profiles"))
        .with_context(|| format!("cannot create {}", setup.dir.display()))?;
    let interrupt = Children::install("tasks")?;
    let names: Vec<&str> = setup.tasks.iter().map(Task::name).collect();
    eprintln!(
        "tasks {}: profile {}, tasks {}, workstations {:?} at {} task/s each, {} steady per task (after {} ramp-up), baseline {}; server {} CPUs",
        setup.dir.display(),
        setup.profile.name,
        names.join(", "),
        setup.workstations,
        args.rate,
        HumanDuration(args.duration),
        HumanDuration(args.ramp_up),
        HumanDuration(args.baseline),
        setup.server_cpus
    );
    if !args.no_init {
        setup.init(&args, None, &interrupt)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    eprintln!(
        "tasks: idle baseline, {} (load average {:.2})",
        HumanDuration(args.baseline),
        load_average().unwrap_or(f64::NAN)
    );
    let (baseline, baseline_memory) = runtime.block_on(setup.idle_baseline(args.baseline))?;
    let largest = setup.workstations.iter().copied().max().unwrap_or(1);
    let mut result = None;
    for &ws in &setup.workstations {
        let set = setup.run_all(&args, ws, &baseline, baseline_memory, &runtime, &interrupt)?;
        if interrupt.interrupted() {
            bail!(
                "interrupted; the tasks measured so far are in {}",
                setup.dir.display()
            );
        }
        if setup.workstations.len() > 1 {
            write(
                &setup.dir.join(format!("tasks-{ws}w.json")),
                tasks_json(&set)?,
            )?;
        }
        if ws == largest {
            result = Some(set);
        }
    }
    let set = result.context("no task was measured")?;
    write(&setup.dir.join("tasks.json"), tasks_json(&set)?)?;
    let mut csv = Vec::new();
    write_tasks_csv(&set, &mut csv)?;
    write(&setup.dir.join("tasks.csv"), csv)?;
    write(&setup.dir.join("tasks.html"), render_tasks_html(&set))?;
    print!("{}", render_tasks_terminal(&set));
    println!("results: {}", setup.dir.display());
    Ok(ExitCode::SUCCESS)
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// The tasks asked for, checked against the profile's actions.
fn choose_tasks(asked: &[String], actions: &[String]) -> anyhow::Result<Vec<Task>> {
    let session = |name: &str| match name {
        "logon" => Some(Task::Pool(SessionTask::Logon)),
        "deliver" => Some(Task::Pool(SessionTask::Deliver)),
        "search_unindexed" => Some(Task::Pool(SessionTask::SearchUnindexed)),
        "idle_session" => Some(Task::IdleSessions),
        _ => None,
    };
    let all: Vec<&str> = actions
        .iter()
        .map(String::as_str)
        .chain(SESSION_TASKS)
        .collect();
    let names: Vec<&str> = if asked.is_empty() {
        all.clone()
    } else {
        asked.iter().map(String::as_str).collect()
    };
    let mut tasks = Vec::new();
    for name in names {
        let task = if actions.iter().any(|a| a == name) {
            Task::Action(name.to_owned())
        } else {
            session(name).with_context(|| {
                format!(
                    "--tasks: no task {name:?}; this profile has {}",
                    all.join(", ")
                )
            })?
        };
        if !tasks.contains(&task) {
            tasks.push(task);
        }
    }
    // Actions that empty the Inbox run last, so the others see the profile's mailboxes.
    tasks.sort_by_key(|t| matches!(t, Task::Action(a) if CONSUMING.contains(&a.as_str())));
    Ok(tasks)
}

impl Setup {
    fn new(args: &TasksArgs) -> anyhow::Result<Self> {
        if !(args.rate > 0.0 && args.rate.is_finite()) {
            bail!("--rate must be a positive number of tasks per second");
        }
        if args.workstations.is_empty() || args.workstations.contains(&0) {
            bail!("--workstations must be one or more counts above 0");
        }
        if args.duration.is_zero() {
            bail!("--duration must be more than 0");
        }
        let profile = load_profile(&args.profile.profile)?;
        if profile.mode != Mode::Poisson {
            bail!("peakhour tasks needs a poisson-mode profile (rates per day)");
        }
        let resolved = resolve_target(&args.target)?;
        let mut workstations = args.workstations.clone();
        workstations.sort_unstable();
        workstations.dedup();
        let largest = workstations[workstations.len() - 1];
        let users = match &resolved.lab {
            Some(lab) => lab.users,
            None => largest.max(args.sessions),
        };
        if largest > users {
            bail!("--workstations {largest} needs that many users; the lab has {users}");
        }
        let plan = resolve_plan(
            &profile,
            Overrides {
                users: Some(users),
                ..Overrides::default()
            },
            &resolved,
        )?;
        let actions: Vec<String> = plan.actions().iter().map(|a| a.name().to_owned()).collect();
        let tasks = choose_tasks(&args.tasks, &actions)?;
        let addresses: Vec<String> = (0..users).map(|u| plan.address(u)).collect();
        let population = Population {
            target: resolved.target.clone(),
            addresses: Arc::new(addresses),
        };
        let (server_cpus, server_memory) = lab_capacity(resolved.lab.as_ref());
        let dir = args.out.clone().unwrap_or_else(|| {
            let name = peakhour_rundir::dir_name(
                std::time::SystemTime::now(),
                peakhour_rundir::DirKind::Sweep {
                    profile: &profile.name,
                },
            );
            PathBuf::from(peakhour_rundir::RUNS_DIR).join(name.replacen("-sweep-", "-tasks-", 1))
        });
        if dir.join("tasks.json").exists() {
            bail!(
                "{} already holds tasks; choose another --out",
                dir.display()
            );
        }
        Ok(Self {
            profile,
            resolved,
            dir,
            tasks,
            workstations,
            seed: args.seed.unwrap_or(peakhour_workload::DEFAULT_SEED),
            population,
            server_cpus,
            server_memory,
        })
    }

    fn lab(&self) -> Option<&LabStatus> {
        self.resolved.lab.as_ref()
    }

    /// `init` for the largest workstation count; with `inbox`, the Inbox
    /// topped up to that many messages first.
    fn init(
        &self,
        args: &TasksArgs,
        inbox: Option<u64>,
        interrupt: &Children,
    ) -> anyhow::Result<()> {
        let largest = self.workstations[self.workstations.len() - 1];
        let profile = derived_profile(&self.profile, None, inbox)?;
        let path = self.dir.join("profiles").join(match inbox {
            Some(n) => format!("init-inbox-{n}.toml"),
            None => "init.toml".to_owned(),
        });
        write(&path, profile)?;
        let mut child: Vec<OsString> = vec!["init".into(), "--profile".into(), path.into()];
        child.extend(target_args(&args.target));
        child.extend([
            "--users".into(),
            largest.to_string().into(),
            "--seed".into(),
            self.seed.to_string().into(),
        ]);
        eprintln!(
            "tasks: initializing {largest} mailboxes{}",
            inbox
                .map(|n| format!(" (Inbox topped up to {n})"))
                .unwrap_or_default()
        );
        let status = run_child(&child, "[init] ", interrupt)?;
        if !status.success() {
            bail!("init failed ({status}); see its output above");
        }
        Ok(())
    }

    /// A monitor on this runtime writing `dir/monitor.csv`, its time counted
    /// from `origin`.
    fn start_monitor(&self, dir: &Path, origin: Instant) -> anyhow::Result<Monitor> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let lab = self.lab();
        let source = local_source(&[], lab, lab.map(lab_probes).unwrap_or_default())?;
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

    /// The idle server over `length`, and its mean memory.
    async fn idle_baseline(&self, length: Duration) -> anyhow::Result<(IdleBaseline, Option<f64>)> {
        let origin = Instant::now();
        let monitor = self.start_monitor(&self.dir.join("baseline"), origin)?;
        tokio::time::sleep(length + MONITOR_INTERVAL / 2).await;
        let table = monitor.finish().await?.table;
        let window = seconds_window(0.0, length.as_secs_f64());
        let memory = window_mean(&table, &server_rss_bytes(&table), window);
        Ok((measure_window(&table, window), memory))
    }

    /// Every task at `ws` workstations, and the task set they make.
    fn run_all(
        &self,
        args: &TasksArgs,
        ws: u32,
        baseline: &IdleBaseline,
        baseline_memory: Option<f64>,
        runtime: &tokio::runtime::Runtime,
        interrupt: &Children,
    ) -> anyhow::Result<TaskSet> {
        let mut costs: Vec<TaskCost> = Vec::new();
        let mut memory: Option<MemoryFit> = None;
        let suffix = if self.workstations.len() > 1 {
            format!("-{ws}w")
        } else {
            String::new()
        };
        for task in &self.tasks {
            if interrupt.interrupted() {
                break;
            }
            let dir = self.dir.join(format!("task-{}{suffix}", task.name()));
            eprintln!(
                "tasks: {} at {ws} workstations -> {} (load average {:.2})",
                task.name(),
                dir.display(),
                load_average().unwrap_or(f64::NAN)
            );
            let run = match task {
                Task::Action(name) => self.run_action(args, name, ws, &dir, interrupt)?,
                Task::Pool(kind) => runtime.block_on(self.run_pool(args, *kind, ws, &dir))?,
                Task::IdleSessions => {
                    let (run, fit) =
                        runtime.block_on(self.run_idle(args, &dir, baseline_memory))?;
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
        args: &TasksArgs,
        name: &str,
        ws: u32,
        dir: &Path,
        interrupt: &Children,
    ) -> anyhow::Result<Option<TaskRun>> {
        let span = (args.ramp_up + args.duration + args.drain).as_secs_f64();
        if CONSUMING.contains(&name) && !args.no_init {
            // Each workstation takes rate × span messages out, with room to spare.
            let need = (args.rate * span * 1.5).ceil() as u64 + 5;
            self.init(args, Some(need), interrupt)?;
        }
        let day_s = self.profile.day().as_secs_f64();
        let profile = derived_profile(&self.profile, Some((name, args.rate * day_s)), None)?;
        let path = self.dir.join("profiles").join(format!("{name}.toml"));
        write(&path, profile)?;
        let mut child: Vec<OsString> = vec!["run".into(), "--profile".into(), path.into()];
        child.extend(target_args(&args.target));
        let d = |d: Duration| OsString::from(HumanDuration(d).to_string());
        child.extend([
            "--users".into(),
            ws.to_string().into(),
            "--seed".into(),
            self.seed.to_string().into(),
            "--duration".into(),
            d(args.duration),
            "--ramp-up".into(),
            d(args.ramp_up),
            "--drain".into(),
            d(args.drain),
            "--out".into(),
            dir.into(),
        ]);
        let status = run_child(&child, &format!("[{name}] "), interrupt)?;
        let run_dir = peakhour_rundir::RunDir::new(dir);
        if !dir.join("summary.json").exists() {
            bail!("the {name} task ended without results ({status}); see its output above");
        }
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
        Ok(Some(TaskRun {
            name: name.to_owned(),
            unit: TaskUnit::Task,
            workstations: ws,
            tasks_completed: action.count as f64,
            latency,
            measured: measure_window(&table, steady_window(&summary, MONITOR_INTERVAL)),
            memory_per_session_bytes: None,
        }))
    }

    /// A session task from a pool of workstations, with the monitor beside it.
    async fn run_pool(
        &self,
        args: &TasksArgs,
        kind: SessionTask,
        ws: u32,
        dir: &Path,
    ) -> anyhow::Result<Option<TaskRun>> {
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
        let window = seconds_window(steady, steady + args.duration.as_secs_f64());
        let latency = (!result.latency.is_empty()).then(|| LatencyMeasurement {
            p50_ms: result.latency.quantile_ms(0.5).unwrap_or(0.0),
            p95_ms: result.latency.quantile_ms(0.95).unwrap_or(0.0),
            samples: result.latency.len(),
        });
        Ok(Some(TaskRun {
            name: kind.name().to_owned(),
            unit: TaskUnit::Task,
            workstations: ws,
            tasks_completed: result.completed as f64,
            latency,
            measured: measure_window(&table, window),
            memory_per_session_bytes: None,
        }))
    }

    /// Idle sessions: half of `--sessions` held 5 s, then all of them for
    /// the window; memory at 0 (the baseline), half and all gives the fit.
    async fn run_idle(
        &self,
        args: &TasksArgs,
        dir: &Path,
        baseline_memory: Option<f64>,
    ) -> anyhow::Result<(Option<TaskRun>, Option<MemoryFit>)> {
        const HOLD: Duration = Duration::from_secs(5);
        let users = self.population.addresses.len() as u32;
        // Dovecot allows 10 connections per user and address by default.
        let wanted = args.sessions.min(users.saturating_mul(9)).max(2) as usize;
        let origin = Instant::now();
        let monitor = self.start_monitor(dir, origin)?;
        let since = |at: Instant| (at - origin).as_secs_f64();
        let mut held = HeldSessions::new();
        held.open_until(&self.population, wanted / 2).await;
        let half = held.len();
        let half_from = since(Instant::now());
        tokio::time::sleep(HOLD).await;
        let half_to = since(Instant::now());
        held.open_until(&self.population, wanted).await;
        let full = held.len();
        tokio::time::sleep(args.ramp_up).await;
        let steady_from = since(Instant::now());
        tokio::time::sleep(args.duration).await;
        let steady_to = since(Instant::now());
        tokio::time::sleep(MONITOR_INTERVAL).await;
        let table = monitor.finish().await?.table;
        let errors = (held.errors, held.last_error.clone());
        held.close().await;
        if errors.0 > 0 {
            eprintln!(
                "tasks: idle_session: {} sessions could not be opened (last: {})",
                errors.0,
                errors.1.as_deref().unwrap_or("?")
            );
        }
        if full == 0 {
            return Ok((None, None));
        }
        let window = seconds_window(steady_from, steady_to);
        let fit = memory_fit(
            &table,
            baseline_memory,
            (half, seconds_window(half_from, half_to)),
            (full, window),
        );
        let measured = measure_window(&table, window);
        let run = TaskRun {
            name: "idle_session".to_owned(),
            unit: TaskUnit::SessionHour,
            workstations: full as u32,
            tasks_completed: full as f64 * measured.window_s / 3600.0,
            latency: None,
            measured,
            memory_per_session_bytes: fit.as_ref().map(|f| f.per_session_bytes),
        };
        Ok((Some(run), fit))
    }
}

/// The samples of the seconds `[from, to]` after the monitor's origin (a
/// sample covers the second before its time).
fn seconds_window(from: f64, to: f64) -> TimeWindow {
    let half = MONITOR_INTERVAL.as_secs_f64() / 2.0;
    TimeWindow::new(from + half, to + half)
}

/// Memory against sessions held: the idle server, half and all sessions.
fn memory_fit(
    table: &MetricTable,
    baseline: Option<f64>,
    half: (usize, TimeWindow),
    full: (usize, TimeWindow),
) -> Option<MemoryFit> {
    let memory = server_rss_bytes(table);
    let mut points: Vec<MemoryPoint> = baseline
        .map(|bytes| MemoryPoint {
            sessions: 0.0,
            bytes,
        })
        .into_iter()
        .collect();
    for (sessions, window) in [half, full] {
        if let Some(bytes) = window_mean(table, &memory, window) {
            points.push(MemoryPoint {
                sessions: sessions as f64,
                bytes,
            });
        }
    }
    match fit_memory(&points) {
        Ok(fit) => Some(fit),
        Err(e) => {
            eprintln!("tasks: no memory model: {e}");
            None
        }
    }
}

/// The profile as TOML with only `action` left (at `per_day`, speed 1), or
/// with every action and the Inbox holding at least `inbox` messages.
fn derived_profile(
    profile: &Profile,
    action: Option<(&str, f64)>,
    inbox: Option<u64>,
) -> anyhow::Result<String> {
    let mut doc: toml::Table = toml::from_str(&profile.to_toml()?)?;
    if let Some((name, per_day)) = action {
        doc.insert(
            "name".into(),
            format!("{}-task-{name}", profile.name).into(),
        );
        doc.insert("speed".into(), 1.0.into());
        let actions = doc
            .get_mut("actions")
            .and_then(toml::Value::as_table_mut)
            .context("the profile has no [actions]")?;
        actions.retain(|k, _| k == name);
        let entry = actions
            .get_mut(name)
            .and_then(toml::Value::as_table_mut)
            .with_context(|| format!("the profile has no [actions.{name}]"))?;
        entry.insert("per_day".into(), per_day.into());
    }
    if let Some(messages) = inbox {
        let mailbox = doc
            .entry("mailbox")
            .or_insert_with(|| toml::Table::new().into())
            .as_table_mut()
            .context("[mailbox] is not a table")?;
        let folders = mailbox
            .entry("folders")
            .or_insert_with(|| toml::Value::Array(Vec::new()))
            .as_array_mut()
            .context("mailbox.folders is not a list")?;
        let inbox = folders.iter_mut().find_map(|f| {
            let t = f.as_table_mut()?;
            (t.get("name")?.as_str()? == "INBOX").then_some(t)
        });
        let messages = i64::try_from(messages).unwrap_or(i64::MAX);
        match inbox {
            Some(t) => {
                let had = t
                    .get("messages")
                    .and_then(toml::Value::as_integer)
                    .unwrap_or(0);
                t.insert("messages".into(), had.max(messages).into());
            }
            None => {
                let mut t = toml::Table::new();
                t.insert("name".into(), "INBOX".into());
                t.insert("messages".into(), messages.into());
                folders.push(t.into());
            }
        }
    }
    let text = toml::to_string(&doc)?;
    // Checked as `peakhour run` will read it.
    Profile::parse("derived profile", &text)?;
    Ok(text)
}

/// The target flags a child needs, from ours.
pub(crate) fn target_args(t: &TargetArgs) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![
        "--target".into(),
        t.target.clone().into(),
        "--lab-dir".into(),
        t.lab_dir.clone().into(),
        "--password-env".into(),
        t.password_env.clone().into(),
    ];
    let mut push = |flag: &str, value: Option<OsString>| {
        if let Some(value) = value {
            out.push(flag.into());
            out.push(value);
        }
    };
    push("--imap", t.imap.clone().map(Into::into));
    push("--smtp", t.smtp.clone().map(Into::into));
    push("--lmtp", t.lmtp.clone().map(Into::into));
    push("--users-file", t.users_file.clone().map(Into::into));
    push("--ca-file", t.ca_file.clone().map(Into::into));
    if t.insecure_skip_tls_verify {
        out.push("--insecure-skip-tls-verify".into());
    }
    out
}

/// Used by tests of the derived profiles.
#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn a_derived_profile_keeps_one_action_at_the_asked_rate() {
        let profile = load_profile("mmb-medium").unwrap();
        let text = derived_profile(&profile, Some(("read", 14_400.0)), None).unwrap();
        let derived = Profile::parse("x", &text).unwrap();
        let plan = peakhour_workload::Plan::resolve(&derived, &Overrides::default()).unwrap();
        let rates = plan.rates();
        assert_eq!(rates.len(), 1);
        assert_eq!(rates[0].kind.name(), "read");
        // 14,400 a day over an 8-hour day at speed 1: one every 2 s.
        assert!((rates[0].per_second - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_inbox_is_topped_up_and_nothing_else_changes() {
        let profile = load_profile("mmb-medium").unwrap();
        let text = derived_profile(&profile, None, Some(60)).unwrap();
        let derived = Profile::parse("x", &text).unwrap();
        let plan = peakhour_workload::Plan::resolve(&derived, &Overrides::default()).unwrap();
        assert_eq!(plan.rates().len(), 6);
        let inbox: BTreeMap<_, _> = plan
            .folders()
            .iter()
            .map(|f| (f.name.clone(), f.messages))
            .collect();
        assert_eq!(inbox.get("INBOX"), Some(&60));
    }

    #[test]
    fn consuming_actions_run_last_and_unknown_tasks_are_refused() {
        let actions: Vec<String> = ["check_inbox", "send", "read", "move", "delete"]
            .map(String::from)
            .to_vec();
        let tasks = choose_tasks(&[], &actions).unwrap();
        let names: Vec<&str> = tasks.iter().map(Task::name).collect();
        assert_eq!(
            names,
            [
                "check_inbox",
                "send",
                "read",
                "logon",
                "idle_session",
                "deliver",
                "search_unindexed",
                "move",
                "delete"
            ]
        );
        assert!(choose_tasks(&["fly".into()], &actions).is_err());
    }
}
