//! The plan: task costs × per-user rates × users → resources, what runs out
//! first, the QoS capacity, a sizing table and price/performance.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::qos::{QosInputs, model_users};
use super::{
    EXTRAPOLATION_FACTOR, Extrapolation, MaxUsersAtQos, MemoryFit, NetSource, PlanError, Price,
    PricePerformance, QosMethod, QosModel, Significance, Significances, TaskSet, TaskUnit, check,
    memory_fit_verdict, price_performance,
};

/// Version of the `plan.json` format. 2 (issue 25): every figure carries its
/// significance, `first_exhausted` only names a significant resource, and
/// the plan opens with a `headline`.
pub const PLAN_FORMAT_VERSION: u32 = 2;

/// The share of a resource's capacity a plan may use: 0.7 leaves 30% for
/// bursts above the average peak hour, the way seed 001 warns that "at
/// high levels of CPU utilization, any additional stress can adversely
/// impact" the server ("around 60%" is fine, "80 to 90%" is not).
pub const DEFAULT_HEADROOM: f64 = 0.7;

const MS_PER_HOUR: f64 = 3_600_000.0;
const S_PER_HOUR: f64 = 3600.0;

/// A resource of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    /// CPU, cores.
    Cpu,
    /// Memory, bytes.
    Memory,
    /// Storage requests per second.
    DiskIops,
    /// Storage throughput, KiB/s.
    DiskBandwidth,
    /// Network throughput, KiB/s.
    Network,
}

impl Resource {
    /// Every resource, in display order.
    pub const ALL: [Resource; 5] = [
        Resource::Cpu,
        Resource::Memory,
        Resource::DiskIops,
        Resource::DiskBandwidth,
        Resource::Network,
    ];

    /// The name used in JSON: `cpu`, `memory`, `disk_iops` …
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
            Resource::DiskIops => "disk_iops",
            Resource::DiskBandwidth => "disk_bandwidth",
            Resource::Network => "network",
        }
    }

    /// The unit its amounts are in.
    pub fn unit(self) -> &'static str {
        match self {
            Resource::Cpu => "cores",
            Resource::Memory => "bytes",
            Resource::DiskIops => "I/O/s",
            Resource::DiskBandwidth | Resource::Network => "KiB/s",
        }
    }
}

/// What the host offers. Disk and network capacities are optional: without
/// one, that resource is planned but cannot run out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostCapacity {
    /// A name for the host, e.g. `lab --cpus 0.5 --memory 1G`.
    pub label: String,
    /// CPUs (fractional for a cgroup quota).
    pub cores: f64,
    /// Memory, bytes.
    pub memory_bytes: f64,
    /// Storage requests per second the disks sustain.
    pub disk_iops: Option<f64>,
    /// Storage throughput the disks sustain, KiB/s.
    pub disk_kib_per_s: Option<f64>,
    /// Network throughput the NIC sustains (in + out), KiB/s.
    pub net_kib_per_s: Option<f64>,
}

impl HostCapacity {
    fn capacity(&self, r: Resource) -> Option<f64> {
        match r {
            Resource::Cpu => Some(self.cores),
            Resource::Memory => Some(self.memory_bytes),
            Resource::DiskIops => self.disk_iops,
            Resource::DiskBandwidth => self.disk_kib_per_s,
            Resource::Network => self.net_kib_per_s,
        }
    }
}

/// What to plan for.
///
/// **Rates.** `rates_per_user_hour` maps a task name (as in `tasks.json`)
/// to how often one user does it per hour at the peak. The command line
/// fills it from the profile's resolved plan: for every action,
/// `ActionRate::per_day` divided by the profile's `day` in hours (the rate
/// at `speed` 1, i.e. in real time: 81.3 reads over an 8-hour MMB day are
/// 10.16 per hour), keyed by the action's name; plus the session tasks:
/// `deliver` = `send` rate × the profile's average recipients (one copy per
/// recipient), `logon` = logons per user per hour (1 / day hours for one
/// logon a day), and `idle_session` = the number of sessions each user
/// holds open (1 for one IMAP connection), because that task's unit is a
/// session-hour. A rate with no task of that name is reported and left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanRequest {
    /// The profile the rates come from.
    pub profile: String,
    /// Task name → per user per hour (see above).
    pub rates_per_user_hour: BTreeMap<String, f64>,
    /// Sessions each user holds open, for memory (1 for one IMAP
    /// connection per user).
    pub sessions_per_user: f64,
    /// User counts to size for.
    pub users: Vec<u64>,
    /// The share of each resource the plan may use ([`DEFAULT_HEADROOM`]).
    pub headroom: f64,
    /// The host to check against, when given.
    pub host: Option<HostCapacity>,
    /// The QoS limit and, optionally, a measured sweep.
    pub qos: QosModel,
    /// A price, for price/performance.
    pub price: Option<Price>,
}

/// How one rate entered the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateUse {
    /// Task name.
    pub task: String,
    /// Per user per hour.
    pub per_user_hour: f64,
    /// The task's unit, `None` when no task has this name.
    pub unit: Option<TaskUnit>,
    /// Share of the per-user CPU this task accounts for, percent.
    pub cpu_share_pct: f64,
}

/// Resource use, either per user or the constant part (the idle server).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerUserDemand {
    /// CPU, cores.
    pub cpu_cores: f64,
    /// Its standard error.
    pub cpu_cores_sd: f64,
    /// Memory, bytes (`None` without a memory model).
    pub memory_bytes: Option<f64>,
    /// Its standard error.
    pub memory_sd_bytes: Option<f64>,
    /// Storage requests per second.
    pub disk_iops: f64,
    /// Storage throughput, KiB/s.
    pub disk_kib_per_s: f64,
    /// Its standard error.
    pub disk_kib_per_s_sd: f64,
    /// Network, KiB/s.
    pub net_kib_per_s: f64,
    /// Its standard error.
    pub net_kib_per_s_sd: f64,
    /// Actions (per-task tasks) per second.
    pub actions_per_s: f64,
    /// Which of these figures stand above their uncertainty.
    pub significance: Significances,
}

impl PerUserDemand {
    /// Judges each figure against its standard error; memory is not
    /// significant when its model is not used (`memory_used` false).
    fn judged(mut self, memory_used: bool) -> Self {
        self.significance = Significances::judge(
            (self.cpu_cores, self.cpu_cores_sd),
            (self.memory_bytes).map(|m| (m, self.memory_sd_bytes.unwrap_or(0.0))),
            memory_used,
            self.disk_iops,
            (self.disk_kib_per_s, self.disk_kib_per_s_sd),
            (self.net_kib_per_s, self.net_kib_per_s_sd),
        );
        self
    }

    /// The significance of resource `r`'s figure.
    pub fn significance_of(&self, r: Resource) -> Significance {
        let s = &self.significance;
        match r {
            Resource::Cpu => s.cpu_cores,
            Resource::Memory => s.memory_bytes.unwrap_or_default(),
            Resource::DiskIops => s.disk_iops,
            Resource::DiskBandwidth => s.disk_kib_per_s,
            Resource::Network => s.net_kib_per_s,
        }
    }

    fn amount(&self, r: Resource) -> Option<(f64, f64)> {
        match r {
            Resource::Cpu => Some((self.cpu_cores, self.cpu_cores_sd)),
            Resource::Memory => Some((self.memory_bytes?, self.memory_sd_bytes.unwrap_or(0.0))),
            Resource::DiskIops => Some((self.disk_iops, 0.0)),
            Resource::DiskBandwidth => Some((self.disk_kib_per_s, self.disk_kib_per_s_sd)),
            Resource::Network => Some((self.net_kib_per_s, self.net_kib_per_s_sd)),
        }
    }
}

/// One row of the sizing table: everything at one user count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanRow {
    /// Users.
    pub users: u64,
    /// Open sessions (users × sessions per user).
    pub sessions: f64,
    /// Actions per second the users make.
    pub actions_per_s: f64,
    /// CPU busy, cores.
    pub cpu_cores: f64,
    /// Its standard error.
    pub cpu_cores_sd: f64,
    /// `cpu_cores / headroom`.
    pub cpu_cores_needed: f64,
    /// Whole cores to install: `⌈cpu_cores_needed⌉`, at least 1.
    pub cores_to_install: u64,
    /// Memory used at the peak, bytes (seed 000's "actual server memory
    /// used during peak time").
    pub memory_peak_bytes: Option<f64>,
    /// Its standard error.
    pub memory_peak_sd_bytes: Option<f64>,
    /// Memory to install ([`memory_to_install`]; seed 000's "recommended
    /// memory configuration").
    pub memory_to_install_bytes: Option<u64>,
    /// Storage requests per second.
    pub disk_iops: f64,
    /// Storage throughput, KiB/s.
    pub disk_kib_per_s: f64,
    /// Its standard error.
    pub disk_kib_per_s_sd: f64,
    /// Network, KiB/s.
    pub net_kib_per_s: f64,
    /// Its standard error.
    pub net_kib_per_s_sd: f64,
    /// Use of each host resource, percent of its capacity (host given).
    pub host_utilization_pct: BTreeMap<String, f64>,
    /// Every host resource stays within the headroom (host given).
    pub fits_host: Option<bool>,
    /// Which figures of the row stand above their uncertainty; cores and
    /// memory to install follow CPU and memory.
    pub significance: Significances,
}

/// When one host resource runs out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exhaustion {
    /// The resource.
    pub resource: Resource,
    /// Its unit.
    pub unit: String,
    /// The host's capacity.
    pub capacity: f64,
    /// Use with no user (the idle server).
    pub base: f64,
    /// Use per user.
    pub per_user: f64,
    /// Its standard error.
    pub per_user_sd: f64,
    /// Users at which use reaches headroom × capacity: the plan's limit.
    pub users: u64,
    /// The same with the per-user use one standard error higher.
    pub users_low: u64,
    /// The same with it one standard error lower (`None` if that is ≤ 0).
    pub users_high: Option<u64>,
    /// Users at which use reaches the whole capacity.
    pub users_at_capacity: u64,
    /// Whether the per-user use stands above its uncertainty: only a
    /// significant resource can be named the first to run out.
    pub significance: Significance,
}

/// The plan: the content of `plan.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// [`PLAN_FORMAT_VERSION`].
    pub format_version: u32,
    /// The profile the rates came from.
    pub profile: String,
    /// The profile the tasks were measured with.
    pub tasks_profile: String,
    /// CPUs of the server the tasks were measured on.
    pub measured_on_cpus: f64,
    /// The headroom used.
    pub headroom: f64,
    /// Sessions per user.
    pub sessions_per_user: f64,
    /// The host, when given.
    pub host: Option<HostCapacity>,
    /// How each rate entered.
    pub rates: Vec<RateUse>,
    /// Measured tasks no rate refers to.
    pub unused_tasks: Vec<String>,
    /// The idle server (use with no user).
    pub base: PerUserDemand,
    /// Use per user.
    pub per_user: PerUserDemand,
    /// The memory model used.
    pub memory_model: Option<MemoryFit>,
    /// The sizing table, one row per requested user count.
    pub rows: Vec<PlanRow>,
    /// Every host resource that can run out, first to last.
    pub exhaustion: Vec<Exhaustion>,
    /// The first of them whose per-user use is significant; `None` when
    /// none is (the headline then says so instead of naming one).
    pub first_exhausted: Option<Exhaustion>,
    /// What a reader must see first, in sentences: what runs out first (or
    /// that nothing measured can say), an extrapolation beyond
    /// [`EXTRAPOLATION_FACTOR`] × the largest measured point, a memory model
    /// not used, a model and a measurement that disagree.
    pub headline: Vec<String>,
    /// How far the plan reaches beyond the sessions measured, when beyond
    /// [`EXTRAPOLATION_FACTOR`] ×.
    pub extrapolation: Option<Extrapolation>,
    /// Whether the memory model sizes memory (R² and the slope's
    /// significance, [`memory_fit_verdict`]).
    pub memory_model_used: bool,
    /// The QoS capacity on the host.
    pub max_users_at_qos: Option<MaxUsersAtQos>,
    /// Seed 004's price/performance.
    pub price_performance: Option<PricePerformance>,
    /// The model's assumptions, in sentences.
    pub assumptions: Vec<String>,
    /// Things a reader should know.
    pub warnings: Vec<String>,
}

/// Seed 000 recommends more memory than it measured (42 MB used → 128 MB,
/// 137 MB → 512 MB) without saying by which rule. peakhour's rule: the
/// peak divided by the headroom, rounded up to the next power of two bytes,
/// the sizes memory is sold in.
pub fn memory_to_install(peak_bytes: f64, headroom: f64) -> u64 {
    let need = (peak_bytes.max(0.0) / headroom).ceil();
    if need >= 2f64.powi(63) {
        return u64::MAX;
    }
    (need as u64).max(1).next_power_of_two()
}

/// Per-user demand and how each rate entered it.
fn per_user_demand(
    tasks: &TaskSet,
    req: &PlanRequest,
    warnings: &mut Vec<String>,
) -> (PerUserDemand, Vec<RateUse>) {
    let mut d = PerUserDemand::default();
    let (mut cpu_var, mut disk_var, mut net_var) = (0.0, 0.0, 0.0);
    let mut rates = Vec::new();
    for (name, &rate) in &req.rates_per_user_hour {
        let Some(t) = tasks.task(name) else {
            warnings.push(format!(
                "no measured task {name:?} for the rate {rate} per user per hour; it is left out"
            ));
            rates.push(RateUse {
                task: name.clone(),
                per_user_hour: rate,
                unit: None,
                cpu_share_pct: 0.0,
            });
            continue;
        };
        d.cpu_cores += rate * t.server_cpu_ms_per_task / MS_PER_HOUR;
        cpu_var += (rate * t.server_cpu_ms_per_task_sd / MS_PER_HOUR).powi(2);
        d.disk_iops += rate * t.disk_ios_per_task / S_PER_HOUR;
        d.disk_kib_per_s += rate * t.disk_kib_per_task / S_PER_HOUR;
        disk_var += (rate * t.disk_kib_per_task_sd / S_PER_HOUR).powi(2);
        d.net_kib_per_s += rate * t.net_kib_per_task / S_PER_HOUR;
        net_var += (rate * t.net_kib_per_task_sd / S_PER_HOUR).powi(2);
        if t.unit == TaskUnit::Task {
            d.actions_per_s += rate / S_PER_HOUR;
        }
        rates.push(RateUse {
            task: name.clone(),
            per_user_hour: rate,
            unit: Some(t.unit),
            cpu_share_pct: rate * t.server_cpu_ms_per_task / MS_PER_HOUR,
        });
    }
    for r in &mut rates {
        r.cpu_share_pct = if d.cpu_cores > 0.0 {
            100.0 * r.cpu_share_pct / d.cpu_cores
        } else {
            0.0
        };
    }
    d.cpu_cores_sd = cpu_var.sqrt();
    d.disk_kib_per_s_sd = disk_var.sqrt();
    d.net_kib_per_s_sd = net_var.sqrt();
    if let Some(fit) = &tasks.memory {
        d.memory_bytes = Some(req.sessions_per_user * fit.per_session_bytes);
        d.memory_sd_bytes = Some(req.sessions_per_user * fit.per_session_sd_bytes);
    }
    (d, rates)
}

/// The idle server's use.
fn base_demand(tasks: &TaskSet) -> PerUserDemand {
    let b = &tasks.baseline;
    PerUserDemand {
        cpu_cores: b.cpu_cores,
        cpu_cores_sd: b.cpu_cores_sd,
        memory_bytes: tasks.memory.as_ref().map(|m| m.base_bytes),
        memory_sd_bytes: tasks.memory.as_ref().map(|m| m.base_sd_bytes),
        disk_iops: b.disk_ios_per_s,
        disk_kib_per_s: b.disk_kib_per_s,
        disk_kib_per_s_sd: b.disk_kib_per_s_sd,
        net_kib_per_s: b.net_kib_per_s,
        net_kib_per_s_sd: b.net_kib_per_s_sd,
        actions_per_s: 0.0,
        significance: Significances::default(),
    }
}

/// Whole users at or below `v`; the 1e-6 keeps float error in a quotient
/// like 1.38 / 3e-5 (45,999.999…) from costing a user.
fn floor_users(v: f64) -> u64 {
    if v.is_finite() {
        (v.max(0.0) + 1e-6).floor() as u64
    } else {
        u64::MAX
    }
}

/// When each host resource runs out, first to last.
fn exhaustion(
    host: &HostCapacity,
    base: &PerUserDemand,
    per_user: &PerUserDemand,
    headroom: f64,
) -> Vec<Exhaustion> {
    let mut out: Vec<Exhaustion> = Resource::ALL
        .iter()
        .filter_map(|&r| {
            let capacity = host.capacity(r)?;
            let (b, _) = base.amount(r)?;
            let (u, sd) = per_user.amount(r)?;
            if u <= 0.0 {
                return None;
            }
            let at = |limit: f64, per: f64| floor_users((limit - b) / per);
            Some(Exhaustion {
                resource: r,
                unit: r.unit().to_owned(),
                capacity,
                base: b,
                per_user: u,
                per_user_sd: sd,
                users: at(headroom * capacity, u),
                users_low: at(headroom * capacity, u + sd),
                users_high: (u - sd > 0.0).then(|| at(headroom * capacity, u - sd)),
                users_at_capacity: at(capacity, u),
                significance: per_user.significance_of(r),
            })
        })
        .collect();
    out.sort_by_key(|e| (e.users, e.resource));
    out
}

/// One row of the sizing table.
fn row(
    users: u64,
    base: &PerUserDemand,
    per_user: &PerUserDemand,
    req: &PlanRequest,
    fit: Option<&MemoryFit>,
    memory_used: bool,
) -> PlanRow {
    let n = users as f64;
    let sessions = n * req.sessions_per_user;
    let lin = |b: f64, u: f64| b + n * u;
    let sd = |b: f64, u: f64| b.hypot(n * u);
    let cpu = lin(base.cpu_cores, per_user.cpu_cores);
    let memory = fit.map(|f| f.at(sessions));
    let mut r = PlanRow {
        users,
        sessions,
        actions_per_s: n * per_user.actions_per_s,
        cpu_cores: cpu,
        cpu_cores_sd: sd(base.cpu_cores_sd, per_user.cpu_cores_sd),
        cpu_cores_needed: cpu / req.headroom,
        cores_to_install: ((cpu / req.headroom).ceil() as u64).max(1),
        memory_peak_bytes: memory.map(|m| m.0),
        memory_peak_sd_bytes: memory.map(|m| m.1),
        memory_to_install_bytes: memory
            .filter(|_| memory_used)
            .map(|m| memory_to_install(m.0, req.headroom)),
        disk_iops: lin(base.disk_iops, per_user.disk_iops),
        disk_kib_per_s: lin(base.disk_kib_per_s, per_user.disk_kib_per_s),
        disk_kib_per_s_sd: sd(base.disk_kib_per_s_sd, per_user.disk_kib_per_s_sd),
        net_kib_per_s: lin(base.net_kib_per_s, per_user.net_kib_per_s),
        net_kib_per_s_sd: sd(base.net_kib_per_s_sd, per_user.net_kib_per_s_sd),
        host_utilization_pct: BTreeMap::new(),
        fits_host: None,
        significance: Significances::default(),
    };
    r.significance = Significances::judge(
        (r.cpu_cores, r.cpu_cores_sd),
        (r.memory_peak_bytes).map(|m| (m, r.memory_peak_sd_bytes.unwrap_or(0.0))),
        memory_used,
        r.disk_iops,
        (r.disk_kib_per_s, r.disk_kib_per_s_sd),
        (r.net_kib_per_s, r.net_kib_per_s_sd),
    );
    if let Some(host) = &req.host {
        let mut fits = true;
        for res in Resource::ALL {
            let (Some(cap), Some((b, u))) =
                (host.capacity(res), per_user_amount(base, per_user, res))
            else {
                continue;
            };
            let used = b + n * u;
            let pct = if cap > 0.0 {
                100.0 * used / cap
            } else {
                f64::INFINITY
            };
            fits &= pct <= 100.0 * req.headroom + 1e-9;
            if pct.is_finite() {
                r.host_utilization_pct.insert(res.as_str().to_owned(), pct);
            }
        }
        r.fits_host = Some(fits);
    }
    r
}

fn per_user_amount(
    base: &PerUserDemand,
    per_user: &PerUserDemand,
    r: Resource,
) -> Option<(f64, f64)> {
    Some((base.amount(r)?.0, per_user.amount(r)?.0))
}

/// The QoS capacity on the host (model, capped by the other resources), or
/// the sweep's when one is given.
fn max_users_at_qos(
    tasks: &TaskSet,
    req: &PlanRequest,
    base: &PerUserDemand,
    per_user: &PerUserDemand,
    exhaustion: &[Exhaustion],
) -> Option<MaxUsersAtQos> {
    let limit = req.qos.p95_limit_ms;
    // Weighted p95 alone and the mean CPU per action, over per-task tasks.
    let (mut w, mut wp95, mut w_all, mut cpu_ms) = (0.0, 0.0, 0.0, 0.0);
    for (name, &rate) in &req.rates_per_user_hour {
        let Some(t) = tasks.task(name).filter(|t| t.unit == TaskUnit::Task) else {
            continue;
        };
        w_all += rate;
        cpu_ms += rate * t.server_cpu_ms_per_task;
        if let Some(p95) = t.p95_ms {
            w += rate;
            wp95 += rate * p95;
        }
    }
    let weighted_alone = (w > 0.0).then(|| wp95 / w);
    // A CPU per user within its own noise would model any number of users.
    let cpu_significant = per_user.significance.cpu_cores.is_significant();
    let model = req.host.as_ref().filter(|_| cpu_significant).map(|host| {
        let q = QosInputs {
            host_cores: host.cores,
            base_cores: base.cpu_cores,
            cores_per_user: per_user.cpu_cores,
            service_ms: if w_all > 0.0 { cpu_ms / w_all } else { 0.0 },
            weighted_p95_alone_ms: weighted_alone.unwrap_or(0.0),
        };
        let cpu_users = model_users(&q, limit);
        let mut best = (
            cpu_users,
            if q.weighted_p95_alone_ms > limit {
                "response time alone".to_owned()
            } else {
                "cpu queueing".to_owned()
            },
        );
        let caps = exhaustion
            .iter()
            .filter(|e| e.resource != Resource::Cpu && e.significance.is_significant());
        for e in caps {
            if (e.users_at_capacity as f64) < best.0 {
                best = (e.users_at_capacity as f64, e.resource.as_str().to_owned());
            }
        }
        (floor_users(best.0), best.1)
    });
    let statement = "M/M/c: each action's p95 measured alone plus the 95th percentile of the wait for a CPU, with Poisson arrivals, the mix's mean CPU per action as exponential service, c CPUs as ⌊c⌋ servers (at least 1) sharing their speed, capped where another resource reaches its capacity".to_owned();
    let sweep = req.qos.sweep.as_ref();
    let (users, method, limited_by) = match (sweep, &model) {
        (Some(s), _) => (
            floor_users(s.users),
            QosMethod::Sweep,
            format!("sweep ({})", s.source),
        ),
        (None, Some((u, why))) => (*u, QosMethod::Model, why.clone()),
        (None, None) => return None,
    };
    let model_users = model.as_ref().map(|m| m.0);
    let model_vs_sweep_pct = match (model_users, sweep) {
        (Some(m), Some(s)) if s.users > 0.0 && m != u64::MAX => {
            Some(100.0 * (m as f64 - s.users) / s.users)
        }
        _ => None,
    };
    Some(MaxUsersAtQos {
        users,
        method,
        limited_by,
        model_users,
        sweep_users: sweep.map(|s| s.users),
        model_vs_sweep_pct,
        trust: match (model_users, sweep, model_vs_sweep_pct) {
            (Some(m), Some(s), Some(pct)) => super::qos::which_to_trust(m, s, pct),
            _ => None,
        },
        weighted_p95_alone_ms: weighted_alone,
        p95_limit_ms: limit,
        method_statement: statement,
    })
}

impl Plan {
    /// Computes the plan for `req` from the measured `tasks`.
    pub fn compute(tasks: &TaskSet, req: &PlanRequest) -> Result<Plan, PlanError> {
        validate(req)?;
        let mut warnings = Vec::new();
        let mut headline = Vec::new();
        let fit = tasks.memory.as_ref();
        let memory_verdict = fit.map(memory_fit_verdict);
        let memory_model_used = matches!(memory_verdict, Some(Ok(())));
        match &memory_verdict {
            None => warnings.push(
                "no memory model in the tasks (no idle-session points): memory is not planned"
                    .to_owned(),
            ),
            Some(Err(why)) => headline.push(why.clone()),
            Some(Ok(())) => {}
        }
        let (per_user, rates) = per_user_demand(tasks, req, &mut warnings);
        let per_user = per_user.judged(memory_model_used);
        let base = base_demand(tasks).judged(memory_model_used);
        if tasks
            .tasks
            .iter()
            .any(|t| t.net_source == NetSource::Interfaces)
        {
            warnings.push("network was counted on the machine's interfaces for some tasks (a tasks.json from before issue 25): on a shared machine they carry other traffic too; run peakhour tasks again to count peakhour's own bytes".to_owned());
        }
        let mut users = req.users.clone();
        users.sort_unstable();
        users.dedup();
        let rows: Vec<PlanRow> = users
            .iter()
            .map(|&n| row(n, &base, &per_user, req, fit, memory_model_used))
            .collect();
        let exhaustion = req
            .host
            .as_ref()
            .map(|h| exhaustion(h, &base, &per_user, req.headroom))
            .unwrap_or_default();
        let max_users = max_users_at_qos(tasks, req, &base, &per_user, &exhaustion);
        let price_performance = match (&req.price, &max_users) {
            (Some(price), Some(m)) if m.users != u64::MAX => Some(price_performance(
                price,
                m.users as f64,
                m.users as f64 * per_user.actions_per_s,
                "actions/s",
                &format!("max_users_at_qos ({})", method_name(m.method)),
            )?),
            (Some(_), _) => {
                warnings
                    .push("price/performance needs a QoS capacity (a host or a sweep)".to_owned());
                None
            }
            _ => None,
        };
        let extrapolation = extrapolation(tasks, req, users.last().copied());
        if let Some(e) = &extrapolation {
            headline.push(format!(
                "extrapolated: the plan reaches {:.0} sessions, {:.0} × the {:.0} the tasks held at once; beyond {EXTRAPOLATION_FACTOR} × what was measured the figures rest on the straight-line model, not on measurement",
                e.planned_sessions, e.factor, e.largest_measured_sessions
            ));
        }
        let first_exhausted = exhaustion
            .iter()
            .find(|e| e.significance.is_significant())
            .cloned();
        match (&req.host, &first_exhausted) {
            (Some(_), Some(e)) => headline.insert(
                0,
                format!(
                    "first to run out: {} at {} users",
                    e.resource.as_str(),
                    e.users
                ),
            ),
            (Some(_), None) => headline.insert(
                0,
                "nothing measured can say what runs out first: no resource's use per user stands above its uncertainty (measure the tasks longer, with more workstations, or on a quieter machine)".to_owned(),
            ),
            _ => {}
        }
        if !per_user.significance.cpu_cores.is_significant() && req.qos.sweep.is_none() {
            warnings.push("max users at QoS is not modelled: the CPU per user is within its uncertainty of zero".to_owned());
        }
        if let Some(trust) = max_users.as_ref().and_then(|m| m.trust.clone()) {
            headline.push(trust);
        }
        let unused_tasks = tasks
            .tasks
            .iter()
            .filter(|t| !req.rates_per_user_hour.contains_key(&t.name))
            .map(|t| t.name.clone())
            .collect();
        Ok(Plan {
            format_version: PLAN_FORMAT_VERSION,
            profile: req.profile.clone(),
            tasks_profile: tasks.profile.clone(),
            measured_on_cpus: tasks.server_cpus,
            headroom: req.headroom,
            sessions_per_user: req.sessions_per_user,
            host: req.host.clone(),
            rates,
            unused_tasks,
            base,
            per_user,
            memory_model: tasks.memory.clone(),
            rows,
            first_exhausted,
            exhaustion,
            headline,
            extrapolation,
            memory_model_used,
            max_users_at_qos: max_users,
            price_performance,
            assumptions: assumptions(tasks, req),
            warnings,
        })
    }
}

/// How far the plan's largest user count reaches beyond the most sessions
/// the tasks held at once; `None` within [`EXTRAPOLATION_FACTOR`] ×.
fn extrapolation(
    tasks: &TaskSet,
    req: &PlanRequest,
    largest: Option<u64>,
) -> Option<Extrapolation> {
    let measured = tasks
        .memory
        .as_ref()
        .map(|f| f.points.iter().map(|p| p.sessions).fold(0.0, f64::max))
        .or_else(|| {
            tasks
                .tasks
                .iter()
                .map(|t| f64::from(t.workstations))
                .reduce(f64::max)
        })?;
    let planned = largest? as f64 * req.sessions_per_user;
    let factor = planned / measured.max(1.0);
    (factor > EXTRAPOLATION_FACTOR).then_some(Extrapolation {
        largest_measured_sessions: measured,
        planned_sessions: planned,
        factor,
    })
}

fn method_name(m: QosMethod) -> &'static str {
    match m {
        QosMethod::Model => "model",
        QosMethod::Sweep => "sweep",
    }
}

fn validate(req: &PlanRequest) -> Result<(), PlanError> {
    if req.users.is_empty() {
        return Err(PlanError::NoUserCounts);
    }
    check("headroom", req.headroom, 0.0, true)?;
    if req.headroom > 1.0 {
        return Err(PlanError::OutOfRange {
            what: "headroom".to_owned(),
            range: "above 0 and at most 1",
            value: req.headroom,
        });
    }
    check("sessions per user", req.sessions_per_user, 0.0, false)?;
    check("QoS p95 limit", req.qos.p95_limit_ms, 0.0, true)?;
    for (name, rate) in &req.rates_per_user_hour {
        check(&format!("rate of {name}"), *rate, 0.0, false)?;
    }
    if let Some(h) = &req.host {
        check("host cores", h.cores, 0.0, true)?;
        check("host memory", h.memory_bytes, 0.0, true)?;
        for (what, v) in [
            ("host disk IOPS", h.disk_iops),
            ("host disk KiB/s", h.disk_kib_per_s),
            ("host network KiB/s", h.net_kib_per_s),
        ] {
            if let Some(v) = v {
                check(what, v, 0.0, true)?;
            }
        }
    }
    Ok(())
}

/// The model's assumptions, in the words the report prints.
fn assumptions(tasks: &TaskSet, req: &PlanRequest) -> Vec<String> {
    let pct = (req.headroom * 100.0).round();
    let mut a = vec![
        "Each task costs at N users what it cost measured alone (seed 001's atomic tasks add up linearly): no cache, lock or contention effect is modelled.".to_owned(),
        format!("CPU was measured on {} CPUs; other hosts are taken to be as fast per core.", tasks.server_cpus),
        "Rates are per user per hour at the peak (the profile's actions per day over its working day); a peak hour busier than the day's average needs higher rates.".to_owned(),
        format!("Headroom {}: a resource is exhausted when its use reaches {pct}% of the host's capacity; cores and memory to install are sized so use stays at or under {pct}%.", req.headroom),
        "Memory is seed 000's base + n × per-connection + n × per-thread, fitted as base + sessions × per-session by least squares; memory to install is the peak over the headroom rounded up to a power of two.".to_owned(),
        "Uncertainty is ±1 standard error: each task's from its monitor series (sd/√n, run and idle baseline in quadrature), tasks added in quadrature, the memory line's from its fit.".to_owned(),
    ];
    if req.qos.sweep.is_some() {
        a.push("max_users_at_qos is the measured sweep's QoS capacity; the queueing model's answer is shown beside it.".to_owned());
    } else {
        a.push(format!(
            "max_users_at_qos is modelled (M/M/c CPU queueing on the measured p95s, limit {} ms); a sweep on the host measures it.",
            req.qos.p95_limit_ms
        ));
    }
    a
}
