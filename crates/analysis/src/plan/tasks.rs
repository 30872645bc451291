//! Atomic-task costs, after seed 001's PALM profiling (chapter 3).
//!
//! A task run is one task (an action of a profile, or a session task such
//! as logon or an idle session held open) executed alone at a steady rate
//! while the monitor samples the server. [`derive_task_cost`] turns the
//! run's totals and sample series into a [`TaskCost`]; [`TaskSet::build`]
//! ranks the costs and singles out the stressful tasks.

use serde::{Deserialize, Serialize};

use super::{MemoryFit, PlanError, check};

/// Version of the `tasks.json` format.
pub const TASKS_FORMAT_VERSION: u32 = 1;

/// Seed 001: "sustained means more than 30 seconds of activity". The high
/// averages are taken over windows at least this long.
pub const MIN_HIGH_AVERAGE_WINDOW_S: f64 = 30.0;

/// A task is *stressful* when its CPU cost per task is at least this many
/// times the median cost of all per-task tasks. On seed 001's Table 3-2
/// (15 CPU high averages, median 13.2%) the rule picks exactly the four
/// tasks the seed singled out: view rebuild 99.9, index creation 75.4,
/// non-indexed search 68.6 and server-to-server write replication 38.3
/// (2.9 × the median); the next, read replication at 17.7, is 1.3 ×.
pub const DEFAULT_STRESSFUL_FACTOR: f64 = 2.5;

/// What one "task" of a run is, which fixes the unit of every per-task
/// figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskUnit {
    /// One execution of the task (an action, a logon, a delivery, a search).
    /// Its plan rate is executions per user per hour.
    Task,
    /// One session held open for one hour (the idle-session task). Its
    /// figures are per session-hour, and its plan rate is the number of
    /// sessions each user holds open (session-hours per user per hour).
    SessionHour,
}

impl TaskUnit {
    /// `task` or `session-hour`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskUnit::Task => "task",
            TaskUnit::SessionHour => "session-hour",
        }
    }
}

/// Where a task's network bytes were counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetSource {
    /// peakhour's own clients, at their sockets: exactly the load's bytes
    /// (monitor.csv's `client_net_*`).
    Client,
    /// The machine's interfaces: on a shared machine, everyone's traffic
    /// (what tasks.json files before issue 25 measured).
    #[default]
    Interfaces,
}

/// A sampled series: times in seconds and values, same length; NaN is "no
/// value". Only the samples inside the steady window belong in it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Sample times, seconds, ascending.
    pub times_s: Vec<f64>,
    /// Values at those times.
    pub values: Vec<f64>,
}

impl Series {
    /// A series from `(time, value)` pairs.
    pub fn from_pairs(pairs: &[(f64, f64)]) -> Self {
        Self {
            times_s: pairs.iter().map(|p| p.0).collect(),
            values: pairs.iter().map(|p| p.1).collect(),
        }
    }

    /// Mean and sample standard deviation (n − 1) of the finite values, and
    /// how many there are; `None` when there is none.
    pub fn mean_sd(&self) -> Option<(f64, f64, usize)> {
        let v: Vec<f64> = self
            .values
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .collect();
        let (mean, sd) = crate::describe::mean_sd(&v)?;
        Some((mean, sd, v.len()))
    }

    /// Standard error of the mean: sd / √n (0 with no or one value).
    ///
    /// This treats samples as independent. Successive monitor samples of a
    /// steady load are positively correlated, so the true error is somewhat
    /// larger; `docs/planner.md` says so.
    fn standard_error(&self) -> f64 {
        self.mean_sd().map_or(
            0.0,
            |(_, sd, n)| if n > 1 { sd / (n as f64).sqrt() } else { 0.0 },
        )
    }
}

/// Seed 001's high average as the monitor's statistics compute it
/// ([`crate::monitor::high_average`]), as plain numbers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HighAverageValue {
    /// Mean over the highest sustained window.
    pub mean: f64,
    /// Sample standard deviation of the values in it.
    pub std_dev: f64,
    /// Length of that window, seconds.
    pub window_s: f64,
    /// Samples in it.
    pub samples: usize,
    /// The whole series was shorter than the minimum window, so this is the
    /// mean of all of it (seed 001 did this for its 10-second indexed search).
    pub shorter_than_window: bool,
}

/// The high-average definition, passed in: `(times_s, values,
/// min_window_s)` → the high average. It was a parameter so that this crate
/// did not depend on the monitor; the definition now lives here
/// ([`crate::monitor::high_average`]), and the command line passes
/// `crate::monitor::server::high_average_value`, which maps its
/// `HighAverage` field by field (`window_s` = `end_s − start_s` + one
/// sample period).
pub type HighAverageFn<'a> = &'a dyn Fn(&[f64], &[f64], f64) -> Option<HighAverageValue>;

/// What the monitor measured on the server over one steady window.
///
/// Totals are counter deltas over the window; series are the per-sample
/// rates in the same window, used for the high averages and for the
/// uncertainty of the totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowMeasurement {
    /// Length of the window, seconds.
    pub window_s: f64,
    /// CPU seconds the server used in the window: the lab cgroup's
    /// `cpuacct.usage` delta, or the sum over the server's process groups of
    /// utime + stime.
    pub server_cpu_s: f64,
    /// KiB read from storage.
    pub disk_read_kib: f64,
    /// KiB written to storage.
    pub disk_write_kib: f64,
    /// Read requests completed.
    pub disk_read_ios: f64,
    /// Write requests completed.
    pub disk_write_ios: f64,
    /// KiB the server received plus sent.
    pub net_kib: f64,
    /// Where `net_kib` and `net_kib_per_s` were counted.
    #[serde(default)]
    pub net_source: NetSource,
    /// The server's CPU per sample, percent of one core (100 = one core, as
    /// the monitor's `group_*_cpu_pct`).
    pub cpu_pct: Series,
    /// Storage throughput per sample, KiB/s, read + write.
    pub disk_kib_per_s: Series,
    /// Network throughput per sample, KiB/s, in + out.
    pub net_kib_per_s: Series,
}

/// The idle server: the same measurement with no load, subtracted from
/// every task run so a task is charged only what it adds.
pub type IdleBaseline = WindowMeasurement;

/// Response times of the task's executions in the window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyMeasurement {
    /// Median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// Executions measured.
    pub samples: u64,
}

impl LatencyMeasurement {
    /// The median and p95 of a histogram of response times; `None` when it
    /// is empty.
    pub fn from_histogram(h: &crate::LatencyHistogram) -> Option<Self> {
        Some(Self {
            p50_ms: h.quantile_ms(0.5)?,
            p95_ms: h.quantile_ms(0.95)?,
            samples: h.len(),
        })
    }

    /// An action's median and p95 from a run's summary; `None` when the
    /// action completed nothing.
    pub fn from_action(a: &crate::ActionSummary) -> Option<Self> {
        Some(Self {
            p50_ms: a.p50_ms?,
            p95_ms: a.p95_ms?,
            samples: a.count,
        })
    }
}

/// One task run: the task executed alone at a steady rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRun {
    /// The task's name: the profile's action name (`read`, `send` …) or a
    /// session task (`logon`, `idle_session`, `deliver`, `search_unindexed`).
    pub name: String,
    /// What one task is.
    pub unit: TaskUnit,
    /// Simulated workstations (users) running it, as seed 001 ran 1 to 20.
    pub workstations: u32,
    /// Tasks completed in the window; for [`TaskUnit::SessionHour`] the
    /// session-hours held (sessions × window / 3600).
    pub tasks_completed: f64,
    /// Response times, when the task has any (a held session has none).
    pub latency: Option<LatencyMeasurement>,
    /// The server's measurements over the steady window.
    pub measured: WindowMeasurement,
    /// Memory per open session, bytes, for session tasks (from
    /// [`MemoryFit::per_session_bytes`]).
    pub memory_per_session_bytes: Option<f64>,
}

/// What one task costs the server, and how it loads each subsystem.
///
/// Per-task figures have the idle baseline subtracted; the high averages do
/// not (they are the utilization the server showed, as STAT.NLM reported
/// it for seed 001).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskCost {
    /// Task name.
    pub name: String,
    /// What "per task" means for this task.
    pub unit: TaskUnit,
    /// 1 = the most CPU per task. Per-task tasks are ranked first, then
    /// session-hour tasks among themselves (their units do not compare).
    pub rank: u32,
    /// Seed 001's "stressful" task: CPU per task at least
    /// [`TaskSet::stressful_factor`] × the median.
    pub stressful: bool,
    /// Workstations that ran it.
    pub workstations: u32,
    /// Tasks completed in the window.
    pub tasks_completed: f64,
    /// Length of the measured window, s.
    pub window_s: f64,
    /// Server CPU milliseconds per task, idle baseline subtracted.
    pub server_cpu_ms_per_task: f64,
    /// Standard error of `server_cpu_ms_per_task`.
    pub server_cpu_ms_per_task_sd: f64,
    /// High average of the server's CPU utilization, percent of the CPU
    /// available to it (`TaskSet::server_cpus`).
    pub cpu_high_average_pct: f64,
    /// Its standard deviation (how choppy the plateau was).
    pub cpu_high_average_sd: f64,
    /// High average of storage throughput, KiB/s.
    pub disk_high_average_kib_s: f64,
    /// Its standard deviation.
    pub disk_high_average_sd: f64,
    /// High average of network throughput, KiB/s.
    pub net_high_average_kib_s: f64,
    /// Its standard deviation.
    pub net_high_average_sd: f64,
    /// The longest of the three high-average windows, s.
    pub high_average_window_s: f64,
    /// A series was shorter than [`MIN_HIGH_AVERAGE_WINDOW_S`], so its high
    /// average is the mean of the whole series.
    pub high_average_short: bool,
    /// KiB read from storage per task.
    pub disk_read_kib_per_task: f64,
    /// KiB written to storage per task.
    pub disk_write_kib_per_task: f64,
    /// Read + written KiB per task.
    pub disk_kib_per_task: f64,
    /// Standard error of `disk_kib_per_task`.
    pub disk_kib_per_task_sd: f64,
    /// Storage requests (reads + writes) per task.
    pub disk_ios_per_task: f64,
    /// Network KiB (in + out) per task.
    pub net_kib_per_task: f64,
    /// Standard error of `net_kib_per_task`.
    pub net_kib_per_task_sd: f64,
    /// Where the network bytes were counted.
    #[serde(default)]
    pub net_source: NetSource,
    /// Memory per open session, bytes (session tasks).
    pub memory_per_session_bytes: Option<f64>,
    /// Median response time, ms.
    pub p50_ms: Option<f64>,
    /// 95th percentile response time, ms.
    pub p95_ms: Option<f64>,
    /// Executions with a response time.
    pub latency_samples: u64,
    /// Monitor samples of the CPU series in the window: the n behind the
    /// standard errors.
    pub cpu_samples: u64,
}

/// A per-task share of a window total, with its standard error, after the
/// baseline's rate is taken off: `(total − baseline_rate × window) / tasks`.
///
/// The error comes from the two series' standard errors of the mean rate
/// (run and baseline), in quadrature, times the window, over the tasks.
/// A negative share (the task measured below idle) is clamped to 0.
fn per_task(
    total: f64,
    baseline_total: f64,
    run: &WindowMeasurement,
    baseline: &WindowMeasurement,
    tasks: f64,
    run_se: f64,
    baseline_se: f64,
) -> (f64, f64) {
    let baseline_rate = if baseline.window_s > 0.0 {
        baseline_total / baseline.window_s
    } else {
        0.0
    };
    let net = (total - baseline_rate * run.window_s).max(0.0);
    let se = run_se.hypot(baseline_se) * run.window_s;
    (net / tasks, se / tasks)
}

/// The idle network to take off a run's: the baseline's, unless it was
/// counted elsewhere (the interfaces, when the run counted its own bytes),
/// which is not this run's idle, so nothing is taken off.
fn net_baseline(run: &WindowMeasurement, baseline: &IdleBaseline) -> WindowMeasurement {
    if baseline.net_source == run.net_source {
        baseline.clone()
    } else {
        WindowMeasurement {
            net_source: run.net_source,
            ..WindowMeasurement::default()
        }
    }
}

/// Derives a task's cost from its run, the idle baseline and the CPU
/// available to the server (`server_cpus`: the lab's cgroup limit, else the
/// host's cores).
///
/// * CPU ms per task = (server CPU s − baseline CPU rate × window) × 1000 /
///   tasks; its error is the standard error of the CPU series' mean (run
///   and baseline in quadrature) × window × 1000 / tasks.
/// * Disk and network KiB per task the same way from their totals and
///   series; I/Os per task from the I/O totals (no error: the counters are
///   exact, and a rate series of I/Os is not among the inputs).
/// * The high averages come from `high_average` over each series with a
///   [`MIN_HIGH_AVERAGE_WINDOW_S`] window; CPU is then expressed as a share
///   of `server_cpus`.
pub fn derive_task_cost(
    run: &TaskRun,
    baseline: &IdleBaseline,
    server_cpus: f64,
    high_average: HighAverageFn<'_>,
) -> Result<TaskCost, PlanError> {
    check("server_cpus", server_cpus, 0.0, true)?;
    check("window_s", run.measured.window_s, 0.0, true)?;
    check("baseline window_s", baseline.window_s, 0.0, false)?;
    let tasks = check("tasks_completed", run.tasks_completed, 0.0, false)?;
    if tasks == 0.0 {
        return Err(PlanError::NoTasks(run.name.clone()));
    }
    let m = &run.measured;
    // CPU series are percent of one core; the standard errors are in cores.
    let cpu_se = |w: &WindowMeasurement| w.cpu_pct.standard_error() / 100.0;
    let (cpu_s, cpu_s_sd) = per_task(
        m.server_cpu_s,
        baseline.server_cpu_s,
        m,
        baseline,
        tasks,
        cpu_se(m),
        cpu_se(baseline),
    );
    let disk_total = |w: &WindowMeasurement| w.disk_read_kib + w.disk_write_kib;
    let (disk_kib, disk_kib_sd) = per_task(
        disk_total(m),
        disk_total(baseline),
        m,
        baseline,
        tasks,
        m.disk_kib_per_s.standard_error(),
        baseline.disk_kib_per_s.standard_error(),
    );
    let zero_se = 0.0;
    let (read_kib, _) = per_task(
        m.disk_read_kib,
        baseline.disk_read_kib,
        m,
        baseline,
        tasks,
        zero_se,
        zero_se,
    );
    let (write_kib, _) = per_task(
        m.disk_write_kib,
        baseline.disk_write_kib,
        m,
        baseline,
        tasks,
        zero_se,
        zero_se,
    );
    let ios = |w: &WindowMeasurement| w.disk_read_ios + w.disk_write_ios;
    let (disk_ios, _) = per_task(ios(m), ios(baseline), m, baseline, tasks, zero_se, zero_se);
    let net_baseline = net_baseline(m, baseline);
    let (net_kib, net_kib_sd) = per_task(
        m.net_kib,
        net_baseline.net_kib,
        m,
        baseline,
        tasks,
        m.net_kib_per_s.standard_error(),
        net_baseline.net_kib_per_s.standard_error(),
    );
    let high = |s: &Series| high_average(&s.times_s, &s.values, MIN_HIGH_AVERAGE_WINDOW_S);
    let (cpu_ha, disk_ha, net_ha) = (
        high(&m.cpu_pct),
        high(&m.disk_kib_per_s),
        high(&m.net_kib_per_s),
    );
    let all = [cpu_ha, disk_ha, net_ha];
    let mean_sd = |h: Option<HighAverageValue>, scale: f64| {
        h.map_or((0.0, 0.0), |h| (h.mean * scale, h.std_dev * scale))
    };
    let (cpu_pct, cpu_sd) = mean_sd(cpu_ha, 1.0 / server_cpus);
    let (disk_mean, disk_sd) = mean_sd(disk_ha, 1.0);
    let (net_mean, net_sd) = mean_sd(net_ha, 1.0);
    Ok(TaskCost {
        name: run.name.clone(),
        unit: run.unit,
        rank: 0,
        stressful: false,
        workstations: run.workstations,
        tasks_completed: tasks,
        window_s: m.window_s,
        server_cpu_ms_per_task: cpu_s * 1000.0,
        server_cpu_ms_per_task_sd: cpu_s_sd * 1000.0,
        cpu_high_average_pct: cpu_pct,
        cpu_high_average_sd: cpu_sd,
        disk_high_average_kib_s: disk_mean,
        disk_high_average_sd: disk_sd,
        net_high_average_kib_s: net_mean,
        net_high_average_sd: net_sd,
        high_average_window_s: all.iter().flatten().map(|h| h.window_s).fold(0.0, f64::max),
        high_average_short: all.iter().flatten().any(|h| h.shorter_than_window),
        disk_read_kib_per_task: read_kib,
        disk_write_kib_per_task: write_kib,
        disk_kib_per_task: disk_kib,
        disk_kib_per_task_sd: disk_kib_sd,
        disk_ios_per_task: disk_ios,
        net_kib_per_task: net_kib,
        net_kib_per_task_sd: net_kib_sd,
        net_source: m.net_source,
        memory_per_session_bytes: run.memory_per_session_bytes,
        p50_ms: run.latency.map(|l| l.p50_ms),
        p95_ms: run.latency.map(|l| l.p95_ms),
        latency_samples: run.latency.map_or(0, |l| l.samples),
        cpu_samples: m.cpu_pct.mean_sd().map_or(0, |(_, _, n)| n as u64),
    })
}

/// The idle server, as the plan needs it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineSummary {
    /// CPU the idle server uses, cores.
    pub cpu_cores: f64,
    /// Standard error of `cpu_cores`.
    pub cpu_cores_sd: f64,
    /// Storage throughput of the idle server, KiB/s.
    pub disk_kib_per_s: f64,
    /// Storage requests per second of the idle server.
    pub disk_ios_per_s: f64,
    /// Network throughput of the idle server, KiB/s.
    pub net_kib_per_s: f64,
    /// Standard error of `disk_kib_per_s` (sd/√n of its series).
    #[serde(default)]
    pub disk_kib_per_s_sd: f64,
    /// Standard error of `net_kib_per_s`.
    #[serde(default)]
    pub net_kib_per_s_sd: f64,
    /// Where the idle network was counted.
    #[serde(default)]
    pub net_source: NetSource,
    /// Length of the idle window, s.
    pub window_s: f64,
}

impl BaselineSummary {
    /// Rates of an idle measurement.
    pub fn of(baseline: &IdleBaseline) -> Self {
        let per_s = |v: f64| {
            if baseline.window_s > 0.0 {
                v / baseline.window_s
            } else {
                0.0
            }
        };
        Self {
            cpu_cores: per_s(baseline.server_cpu_s),
            cpu_cores_sd: baseline.cpu_pct.standard_error() / 100.0,
            disk_kib_per_s: per_s(baseline.disk_read_kib + baseline.disk_write_kib),
            disk_ios_per_s: per_s(baseline.disk_read_ios + baseline.disk_write_ios),
            net_kib_per_s: per_s(baseline.net_kib),
            disk_kib_per_s_sd: baseline.disk_kib_per_s.standard_error(),
            net_kib_per_s_sd: baseline.net_kib_per_s.standard_error(),
            net_source: baseline.net_source,
            window_s: baseline.window_s,
        }
    }
}

/// Every task's cost, ranked: the content of `tasks.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskSet {
    /// [`TASKS_FORMAT_VERSION`].
    pub format_version: u32,
    /// The profile whose actions were profiled.
    pub profile: String,
    /// CPUs available to the server (cgroup limit or host cores).
    pub server_cpus: f64,
    /// Memory available to the server, bytes, when limited or known.
    pub server_memory_bytes: Option<u64>,
    /// The idle server.
    pub baseline: BaselineSummary,
    /// The tasks, in rank order.
    pub tasks: Vec<TaskCost>,
    /// Memory against open sessions, when measured.
    pub memory: Option<MemoryFit>,
    /// The factor of the stressful rule ([`DEFAULT_STRESSFUL_FACTOR`]).
    pub stressful_factor: f64,
    /// The minimum high-average window, s ([`MIN_HIGH_AVERAGE_WINDOW_S`]).
    pub high_average_min_window_s: f64,
    /// Things a reader should know (short windows, few samples …).
    pub warnings: Vec<String>,
}

impl TaskSet {
    /// Ranks `costs` by CPU per task (per-task tasks first, then
    /// session-hour tasks), flags the stressful ones and collects warnings.
    pub fn build(
        profile: &str,
        mut costs: Vec<TaskCost>,
        baseline: &IdleBaseline,
        server_cpus: f64,
        server_memory_bytes: Option<u64>,
        memory: Option<MemoryFit>,
    ) -> Self {
        costs.sort_by(|a, b| {
            (a.unit != TaskUnit::Task)
                .cmp(&(b.unit != TaskUnit::Task))
                .then(
                    b.server_cpu_ms_per_task
                        .total_cmp(&a.server_cpu_ms_per_task),
                )
                .then(a.name.cmp(&b.name))
        });
        let per_task: Vec<f64> = costs
            .iter()
            .filter(|c| c.unit == TaskUnit::Task)
            .map(|c| c.server_cpu_ms_per_task)
            .collect();
        let flags = stressful_flags(&per_task, DEFAULT_STRESSFUL_FACTOR);
        let mut warnings = Vec::new();
        let mut task_index = 0;
        for (i, c) in costs.iter_mut().enumerate() {
            c.rank = u32::try_from(i + 1).unwrap_or(u32::MAX);
            if c.unit == TaskUnit::Task {
                c.stressful = flags.get(task_index).copied().unwrap_or(false);
                task_index += 1;
            }
            if c.high_average_short {
                warnings.push(format!(
                    "{}: a series spans less than {MIN_HIGH_AVERAGE_WINDOW_S} s, so its high average is the mean of all of it",
                    c.name
                ));
            }
            if c.server_cpu_ms_per_task_sd > 0.25 * c.server_cpu_ms_per_task {
                warnings.push(format!(
                    "{}: CPU per task is uncertain ({:.3} ± {:.3} ms); run it longer or with more workstations",
                    c.name, c.server_cpu_ms_per_task, c.server_cpu_ms_per_task_sd
                ));
            }
        }
        Self {
            format_version: TASKS_FORMAT_VERSION,
            profile: profile.to_owned(),
            server_cpus,
            server_memory_bytes,
            baseline: BaselineSummary::of(baseline),
            tasks: costs,
            memory,
            stressful_factor: DEFAULT_STRESSFUL_FACTOR,
            high_average_min_window_s: MIN_HIGH_AVERAGE_WINDOW_S,
            warnings,
        }
    }

    /// The task called `name`.
    pub fn task(&self, name: &str) -> Option<&TaskCost> {
        self.tasks.iter().find(|t| t.name == name)
    }
}

/// For each value: is it at least `factor` × the median of all of them?
/// (The median of an even count is the mean of the middle two.) With fewer
/// than three values nothing is singled out: there is no crowd to stand out
/// from.
pub fn stressful_flags(values: &[f64], factor: f64) -> Vec<bool> {
    if values.len() < 3 {
        return vec![false; values.len()];
    }
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    let median = if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    };
    values
        .iter()
        .map(|v| median > 0.0 && *v >= factor * median)
        .collect()
}
