//! The USE summary: utilization, saturation and errors per resource, and
//! the most likely bottleneck in one line.
//!
//! Every indicator is a steady-state mean over the window, divided by its
//! threshold in [`Thresholds`]; a resource's severity is its largest ratio,
//! and it counts as saturated at 1 or more. The bottleneck is the most
//! severe saturated resource (ties go to the earlier one in CPU, memory,
//! disk, network, mail-queue order). Network utilization cannot be judged
//! without a link speed (loopback has none), so only drops saturate it.

use std::fmt::Write as _;

use super::Columns;
use super::columns as col;
use super::metric_key::{DiskField, Field, GroupField, MetricKey, NetField};
use super::stats::{TimeWindow, window_median, window_stats};

/// The limits above which an indicator counts as saturated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// CPU busy (user + system) share of all cores, %.
    pub cpu_busy_pct: f64,
    /// Runnable tasks per core (`procs_running / cores`).
    pub run_queue_per_core: f64,
    /// Any PSI "some" share (cpu, memory, io), %.
    pub psi_some_pct: f64,
    /// Memory in use (`100 − available / total`), %.
    pub memory_used_pct: f64,
    /// Pages swapped in + out per second.
    pub swap_pages_per_s: f64,
    /// Major page faults per second.
    pub major_faults_per_s: f64,
    /// Busiest disk's utilization, %.
    pub disk_util_pct: f64,
    /// Busiest disk's average queue length.
    pub disk_queue_len: f64,
    /// Network drops per second, all interfaces.
    pub net_drops_per_s: f64,
    /// Growth of Postfix's queues (incoming + active + deferred), messages/s.
    pub mail_queue_growth_per_s: f64,
    /// A process group using at least this share of all cores is named in the CPU evidence, %.
    pub group_mention_pct: f64,
}

impl Thresholds {
    /// The documented defaults (see `docs/metrics.md`).
    pub const DEFAULT: Self = Self {
        cpu_busy_pct: 85.0,
        run_queue_per_core: 1.5,
        psi_some_pct: 20.0,
        memory_used_pct: 90.0,
        swap_pages_per_s: 100.0,
        major_faults_per_s: 100.0,
        disk_util_pct: 80.0,
        disk_queue_len: 2.0,
        net_drops_per_s: 1.0,
        mail_queue_growth_per_s: 1.0,
        group_mention_pct: 5.0,
    };
}

impl Default for Thresholds {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A resource of the USE method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Resource {
    /// Processors.
    Cpu,
    /// Memory and swap.
    Memory,
    /// Block devices.
    Disk,
    /// Network interfaces.
    Network,
    /// Postfix's queues.
    MailQueue,
}

impl Resource {
    /// Display name: `CPU`, `memory`, `disk`, `network`, `mail queue`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "CPU",
            Self::Memory => "memory",
            Self::Disk => "disk",
            Self::Network => "network",
            Self::MailQueue => "mail queue",
        }
    }

    /// Verdict when this resource is the bottleneck.
    pub fn verdict(self) -> &'static str {
        match self {
            Self::Cpu => "CPU-bound",
            Self::Memory => "memory-bound",
            Self::Disk => "disk-bound",
            Self::Network => "network-bound",
            Self::MailQueue => "mail queue growing: delivery cannot keep up",
        }
    }
}

/// The USE view of one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceUse {
    /// Which resource.
    pub resource: Resource,
    /// Utilization, % where it has one (CPU busy, memory used, busiest
    /// disk's utilization); for network, bytes/s; for the mail queue, the
    /// mean number of queued messages.
    pub utilization: Option<f64>,
    /// Saturation indicators, as text, e.g. `run queue 3.1 per core`.
    pub saturation: Vec<String>,
    /// Errors, as text, e.g. `2.0 errors/s`; empty when none.
    pub errors: Vec<String>,
    /// Largest indicator / threshold ratio; ≥ 1 = saturated.
    pub severity: f64,
    /// Evidence for the one-line verdict, most telling first.
    pub evidence: Vec<String>,
}

impl ResourceUse {
    /// Severity at or above 1.
    pub fn saturated(&self) -> bool {
        self.severity >= 1.0
    }
}

/// Every resource's USE view and the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct UseSummary {
    /// CPU, memory, disk, network, mail queue (those with data).
    pub resources: Vec<ResourceUse>,
    /// The most likely bottleneck, `None` when nothing is saturated.
    pub bottleneck: Option<Resource>,
    /// One line for people, e.g. `CPU: 94% busy, run queue 3.1 per core,
    /// dovecot processes 71% of CPU — CPU-bound`, or `no resource
    /// saturated (busiest: CPU 35% busy)`.
    pub line: String,
}

struct Input<'a> {
    cols: &'a dyn Columns,
    window: TimeWindow,
}

impl Input<'_> {
    fn mean(&self, name: &str) -> Option<f64> {
        let v = self.cols.values(name)?;
        window_stats(self.cols.times(), &v, self.window).map(|s| s.mean)
    }

    /// Median over the window: for point-in-time counts, where one burst
    /// (a fork storm at a wave of logons) would drag the mean up.
    fn median(&self, name: &str) -> Option<f64> {
        let v = self.cols.values(name)?;
        window_median(self.cols.times(), &v, self.window)
    }

    /// Means of every instance's column for `field`, with the instance.
    fn means_of(&self, field: Field) -> Vec<(String, f64)> {
        self.cols
            .names()
            .into_iter()
            .filter_map(|n| {
                let key = MetricKey::parse(n).filter(|k| k.field() == field)?;
                Some((key.instance()?.to_owned(), self.mean(n)?))
            })
            .collect()
    }

    /// Least-squares slope of a sum of columns over the window, per second.
    fn slope_of_sum(&self, names: &[&str]) -> Option<f64> {
        let times = self.cols.times();
        let columns: Vec<Vec<f64>> = names.iter().filter_map(|n| self.cols.values(n)).collect();
        if columns.is_empty() {
            return None;
        }
        let pts: Vec<(f64, f64)> = (0..times.len())
            .filter(|&i| self.window.start_s <= times[i] && times[i] < self.window.end_s)
            .filter_map(|i| {
                let y: f64 = columns.iter().map(|c| c[i]).sum();
                y.is_finite().then_some((times[i], y))
            })
            .collect();
        if pts.len() < 2 {
            return None;
        }
        let n = pts.len() as f64;
        let mt = pts.iter().map(|p| p.0).sum::<f64>() / n;
        let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = pts.iter().map(|p| (p.0 - mt).powi(2)).sum();
        let sxy: f64 = pts.iter().map(|p| (p.0 - mt) * (p.1 - my)).sum();
        (sxx > 0.0).then(|| sxy / sxx)
    }
}

fn ratio(value: Option<f64>, threshold: f64) -> f64 {
    value.map_or(0.0, |v| if threshold > 0.0 { v / threshold } else { 0.0 })
}

fn cpu_use(inp: &Input<'_>, th: &Thresholds) -> Option<ResourceUse> {
    let busy = inp.mean(col::CPU_BUSY_PCT)?;
    let cores = inp.mean(col::CORES).filter(|c| *c > 0.0).unwrap_or(1.0);
    // `procs_running` is read by a running thread, so it always counts the
    // sampler itself: take that one off. It is a snapshot, so the median
    // stands for the window, not the mean (one sample of 120 runnable tasks
    // during a wave of logons moved a 200-user run's mean from 1.1 to 1.6
    // per core while the CPU was 16% busy).
    let rq = inp
        .median(col::RUN_QUEUE)
        .map(|r| (r - 1.0).max(0.0) / cores);
    let psi = inp.mean(col::PSI_CPU_SOME_PCT);
    let steal = inp.mean(col::CPU_STEAL_PCT);
    let mut saturation = Vec::new();
    if let Some(rq) = rq {
        saturation.push(format!("run queue {rq:.1} per core"));
    }
    if let Some(psi) = psi {
        saturation.push(format!("CPU pressure {psi:.0}%"));
    }
    let mut evidence = vec![format!("{busy:.0}% busy")];
    if rq.is_some_and(|r| r >= th.run_queue_per_core * 0.5) {
        evidence.push(saturation[0].clone());
    }
    if psi.is_some_and(|p| p >= th.psi_some_pct) {
        evidence.push(format!("CPU pressure {:.0}%", psi.unwrap_or_default()));
    }
    if steal.is_some_and(|s| s >= 5.0) {
        evidence.push(format!(
            "{:.0}% stolen by the hypervisor",
            steal.unwrap_or_default()
        ));
    }
    // Which process group uses the CPU, as a share of all cores.
    let mut groups = inp.means_of(Field::Group(GroupField::CpuPct));
    groups.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top_share = groups.first().map_or(0.0, |(_, pct)| pct / cores);
    if let Some((name, pct)) = groups.first() {
        let share = pct / cores;
        if share >= th.group_mention_pct {
            evidence.push(format!("{name} processes {share:.0}% of CPU"));
            if name == "peakhour" {
                evidence.push("the load generator itself may be the bottleneck".into());
            }
        }
    }
    // CPU the groups do not explain: the kernel, or another workload on the
    // host (a build during a sweep step drove a 25-user lab to 94% busy
    // with the groups at 8%). Then the numbers describe that, not the server.
    if !groups.is_empty() {
        let outside = busy - groups.iter().map(|(_, pct)| pct).sum::<f64>() / cores;
        if outside >= th.group_mention_pct && outside > top_share {
            evidence.push(format!(
                "{outside:.0}% of CPU outside the monitored process groups (the kernel or another workload)"
            ));
        }
    }
    // As with a disk's queue: runnable tasks on CPUs that are mostly idle
    // (counting the time the hypervisor takes) are bursts, not saturation.
    let busy_enough = busy + steal.unwrap_or(0.0) >= th.cpu_busy_pct / 2.0;
    let queue_severity = if busy_enough {
        ratio(rq, th.run_queue_per_core)
    } else {
        0.0
    };
    let severity = ratio(Some(busy), th.cpu_busy_pct)
        .max(queue_severity)
        .max(ratio(psi, th.psi_some_pct));
    Some(ResourceUse {
        resource: Resource::Cpu,
        utilization: Some(busy),
        saturation,
        errors: Vec::new(),
        severity,
        evidence,
    })
}

fn memory_use(inp: &Input<'_>, th: &Thresholds) -> Option<ResourceUse> {
    let total = inp.mean(col::MEM_TOTAL_KB).filter(|t| *t > 0.0)?;
    let avail = inp.mean(col::MEM_AVAILABLE_KB)?;
    let used = 100.0 - avail / total * 100.0;
    let swap = match (
        inp.mean(col::SWAP_IN_PAGES_PER_S),
        inp.mean(col::SWAP_OUT_PAGES_PER_S),
    ) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    let faults = inp.mean(col::MAJOR_FAULTS_PER_S);
    let psi = inp.mean(col::PSI_MEMORY_SOME_PCT);
    let mut saturation = Vec::new();
    let mut evidence = vec![format!("{used:.0}% used")];
    if let Some(s) = swap {
        saturation.push(format!("swapping {s:.0} pages/s"));
        if s >= th.swap_pages_per_s {
            evidence.push(format!("swapping {s:.0} pages/s"));
        }
    }
    if let Some(f) = faults {
        saturation.push(format!("{f:.0} major faults/s"));
        if f >= th.major_faults_per_s {
            evidence.push(format!("{f:.0} major faults/s"));
        }
    }
    if let Some(p) = psi {
        saturation.push(format!("memory pressure {p:.0}%"));
        if p >= th.psi_some_pct {
            evidence.push(format!("memory pressure {p:.0}%"));
        }
    }
    let severity = ratio(Some(used), th.memory_used_pct)
        .max(ratio(swap, th.swap_pages_per_s))
        .max(ratio(faults, th.major_faults_per_s))
        .max(ratio(psi, th.psi_some_pct));
    Some(ResourceUse {
        resource: Resource::Memory,
        utilization: Some(used),
        saturation,
        errors: Vec::new(),
        severity,
        evidence,
    })
}

fn disk_use(inp: &Input<'_>, th: &Thresholds) -> Option<ResourceUse> {
    let utils = inp.means_of(Field::Disk(DiskField::UtilPct));
    let psi = inp.mean(col::PSI_IO_SOME_PCT);
    if utils.is_empty() && psi.is_none() {
        return None;
    }
    let busiest = utils.iter().max_by(|a, b| a.1.total_cmp(&b.1)).cloned();
    let queue = busiest
        .as_ref()
        .and_then(|(d, _)| inp.mean(&MetricKey::disk(d, DiskField::QueueLen).column()));
    let await_ms = busiest
        .as_ref()
        .and_then(|(d, _)| inp.mean(&MetricKey::disk(d, DiskField::AwaitMs).column()));
    let iowait = inp.mean(col::CPU_IOWAIT_PCT);
    let mut saturation = Vec::new();
    let mut evidence = Vec::new();
    if let Some((d, u)) = &busiest {
        evidence.push(format!("{d} {u:.0}% busy"));
    }
    if let Some(q) = queue {
        saturation.push(format!("queue length {q:.1}"));
        evidence.push(format!("queue length {q:.1}"));
    }
    if let Some(a) = await_ms.filter(|a| *a > 0.0) {
        evidence.push(format!("{a:.1} ms per I/O"));
    }
    if let Some(p) = psi {
        saturation.push(format!("I/O pressure {p:.0}%"));
        if p >= th.psi_some_pct {
            evidence.push(format!("I/O pressure {p:.0}%"));
        }
    }
    if let Some(w) = iowait.filter(|w| *w >= 10.0) {
        evidence.push(format!("CPU {w:.0}% in iowait"));
    }
    // A queue on a disk that is mostly idle is bursts of writes (fsync after
    // each delivery) served quickly, not saturation: count the queue only
    // once the disk is at least half as busy as the utilization threshold.
    let busy_enough = busiest
        .as_ref()
        .is_some_and(|b| b.1 >= th.disk_util_pct / 2.0);
    let queue_severity = if busy_enough {
        ratio(queue, th.disk_queue_len)
    } else {
        0.0
    };
    let severity = ratio(busiest.as_ref().map(|b| b.1), th.disk_util_pct)
        .max(queue_severity)
        .max(ratio(psi, th.psi_some_pct));
    Some(ResourceUse {
        resource: Resource::Disk,
        utilization: busiest.map(|b| b.1),
        saturation,
        errors: Vec::new(),
        severity,
        evidence,
    })
}

fn network_use(inp: &Input<'_>, th: &Thresholds) -> Option<ResourceUse> {
    let rx = inp.means_of(Field::Network(NetField::RxBytesPerS));
    if rx.is_empty() {
        return None;
    }
    let tx = inp.means_of(Field::Network(NetField::TxBytesPerS));
    let bytes: f64 = rx.iter().chain(&tx).map(|(_, v)| v).sum();
    let drops: f64 = inp
        .means_of(Field::Network(NetField::DropsPerS))
        .iter()
        .map(|(_, v)| v)
        .sum();
    let errors: f64 = inp
        .means_of(Field::Network(NetField::ErrorsPerS))
        .iter()
        .map(|(_, v)| v)
        .sum();
    let mut err_text = Vec::new();
    if errors > 0.0 {
        err_text.push(format!("{errors:.1} errors/s"));
    }
    if drops > 0.0 {
        err_text.push(format!("{drops:.1} drops/s"));
    }
    let mut evidence = vec![format!("{:.1} MB/s", bytes / 1e6)];
    evidence.extend(err_text.iter().cloned());
    Some(ResourceUse {
        resource: Resource::Network,
        utilization: Some(bytes),
        saturation: vec![format!("{drops:.1} drops/s")],
        errors: err_text,
        severity: ratio(Some(drops), th.net_drops_per_s),
        evidence,
    })
}

fn mail_queue_use(inp: &Input<'_>, th: &Thresholds) -> Option<ResourceUse> {
    let names = [
        col::POSTFIX_QUEUE_INCOMING,
        col::POSTFIX_QUEUE_ACTIVE,
        col::POSTFIX_QUEUE_DEFERRED,
    ];
    let sizes: Vec<f64> = names.iter().filter_map(|n| inp.mean(n)).collect();
    if sizes.is_empty() {
        return None;
    }
    let mean_size: f64 = sizes.iter().sum();
    let growth = inp.slope_of_sum(&names);
    let deferred = inp.mean(col::POSTFIX_QUEUE_DEFERRED).unwrap_or(0.0);
    let mut evidence = vec![format!("{mean_size:.0} messages queued on average")];
    if let Some(g) = growth.filter(|g| *g > 0.0) {
        evidence.push(format!("growing {g:.1} messages/s"));
    }
    let errors = if deferred > 0.0 {
        vec![format!("{deferred:.0} deferred")]
    } else {
        Vec::new()
    };
    evidence.extend(errors.iter().cloned());
    Some(ResourceUse {
        resource: Resource::MailQueue,
        utilization: Some(mean_size),
        saturation: growth
            .map(|g| format!("growth {g:.2} messages/s"))
            .into_iter()
            .collect(),
        errors,
        severity: ratio(growth.map(|g| g.max(0.0)), th.mail_queue_growth_per_s),
        evidence,
    })
}

/// The USE summary over `window` of the columns of `monitor.csv`.
pub fn use_summary(cols: &dyn Columns, window: TimeWindow, thresholds: &Thresholds) -> UseSummary {
    let inp = Input { cols, window };
    let resources: Vec<ResourceUse> = [
        cpu_use(&inp, thresholds),
        memory_use(&inp, thresholds),
        disk_use(&inp, thresholds),
        network_use(&inp, thresholds),
        mail_queue_use(&inp, thresholds),
    ]
    .into_iter()
    .flatten()
    .collect();
    let worst = resources
        .iter()
        .filter(|r| r.saturated())
        .fold(None::<&ResourceUse>, |best, r| match best {
            Some(b) if b.severity >= r.severity => Some(b),
            _ => Some(r),
        });
    let line = match worst {
        Some(r) => {
            let mut line = format!("{}: {}", r.resource.name(), r.evidence.join(", "));
            let _ = write!(line, " — {}", r.resource.verdict());
            line
        }
        None => {
            // Name the busiest resource with a percentage utilization, for context.
            let busiest = resources
                .iter()
                .filter(|r| {
                    matches!(
                        r.resource,
                        Resource::Cpu | Resource::Memory | Resource::Disk
                    )
                })
                .max_by(|a, b| a.severity.total_cmp(&b.severity));
            match busiest {
                Some(r) => format!(
                    "no resource saturated (busiest: {} {})",
                    r.resource.name(),
                    r.evidence.first().map_or("", String::as_str)
                ),
                None => "no resource saturated".to_owned(),
            }
        }
    };
    UseSummary {
        bottleneck: worst.map(|r| r.resource),
        resources,
        line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A synthetic run: constant columns over 60 samples.
    struct Synthetic {
        times: Vec<f64>,
        cols: BTreeMap<String, Vec<f64>>,
    }

    impl Synthetic {
        fn new(constants: &[(&str, f64)]) -> Self {
            let times: Vec<f64> = (0..60).map(f64::from).collect();
            let cols = constants
                .iter()
                .map(|(n, v)| ((*n).to_owned(), vec![*v; 60]))
                .collect();
            Self { times, cols }
        }

        fn with(mut self, name: &str, f: impl Fn(f64) -> f64) -> Self {
            let v = self.times.iter().map(|t| f(*t)).collect();
            self.cols.insert(name.to_owned(), v);
            self
        }
    }

    impl Columns for Synthetic {
        fn times(&self) -> &[f64] {
            &self.times
        }
        fn names(&self) -> Vec<&str> {
            self.cols.keys().map(String::as_str).collect()
        }
        fn values(&self, name: &str) -> Option<Vec<f64>> {
            self.cols.get(name).cloned()
        }
    }

    const QUIET: &[(&str, f64)] = &[
        ("cores", 2.0),
        ("cpu_busy_pct", 35.0),
        ("cpu_iowait_pct", 1.0),
        ("run_queue", 1.0),
        ("psi_cpu_some_pct", 2.0),
        ("mem_total_kb", 24_000_000.0),
        ("mem_available_kb", 20_000_000.0),
        ("swap_in_pages_per_s", 0.0),
        ("swap_out_pages_per_s", 0.0),
        ("major_faults_per_s", 0.0),
        ("disk_vda_util_pct", 5.0),
        ("disk_vda_queue_len", 0.1),
        ("disk_vda_await_ms", 0.5),
        ("net_lo_rx_bytes_per_s", 2e6),
        ("net_lo_tx_bytes_per_s", 2e6),
        ("net_lo_drops_per_s", 0.0),
        ("net_lo_errors_per_s", 0.0),
        ("postfix_queue_incoming", 0.0),
        ("postfix_queue_active", 3.0),
        ("postfix_queue_deferred", 0.0),
        ("group_dovecot_cpu_pct", 40.0),
        ("group_peakhour_cpu_pct", 20.0),
    ];

    fn summary(s: &Synthetic) -> UseSummary {
        use_summary(s, TimeWindow::ALL, &Thresholds::DEFAULT)
    }

    #[test]
    fn nothing_saturated_says_so() {
        let s = summary(&Synthetic::new(QUIET));
        assert_eq!(s.bottleneck, None);
        assert_eq!(s.line, "no resource saturated (busiest: CPU 35% busy)");
        assert_eq!(s.resources.len(), 5);
        assert!(s.resources.iter().all(|r| !r.saturated()));
    }

    #[test]
    fn cpu_bound_names_the_group() {
        // 94% busy on 2 cores, 7.2 runnable less the sampler (3.1 per core), dovecot 142% = 71% of 2 cores.
        let s = Synthetic::new(QUIET)
            .with("cpu_busy_pct", |_| 94.0)
            .with("run_queue", |_| 7.2)
            .with("group_dovecot_cpu_pct", |_| 142.0);
        let s = summary(&s);
        assert_eq!(s.bottleneck, Some(Resource::Cpu));
        assert_eq!(
            s.line,
            "CPU: 94% busy, run queue 3.1 per core, dovecot processes 71% of CPU — CPU-bound"
        );
    }

    #[test]
    fn client_bound_is_flagged() {
        let s = Synthetic::new(QUIET)
            .with("cpu_busy_pct", |_| 97.0)
            .with("group_dovecot_cpu_pct", |_| 30.0)
            .with("group_peakhour_cpu_pct", |_| 150.0);
        let s = summary(&s);
        assert_eq!(s.bottleneck, Some(Resource::Cpu));
        assert!(
            s.line.contains(
                "peakhour processes 75% of CPU, the load generator itself may be the bottleneck"
            ),
            "{}",
            s.line
        );
    }

    #[test]
    fn disk_bound() {
        let s = Synthetic::new(QUIET)
            .with("disk_vda_util_pct", |_| 98.0)
            .with("disk_vda_queue_len", |_| 7.5)
            .with("disk_vda_await_ms", |_| 32.0)
            .with("cpu_iowait_pct", |_| 40.0)
            .with("psi_io_some_pct", |_| 60.0);
        let s = summary(&s);
        assert_eq!(s.bottleneck, Some(Resource::Disk));
        assert_eq!(
            s.line,
            "disk: vda 98% busy, queue length 7.5, 32.0 ms per I/O, I/O pressure 60%, CPU 40% in iowait — disk-bound"
        );
    }

    #[test]
    fn a_queue_on_a_mostly_idle_disk_is_not_a_bottleneck() {
        // Seen on the lab: fsync bursts after each delivery, served in 0.8 ms.
        let s = Synthetic::new(QUIET)
            .with("disk_vda_util_pct", |_| 6.0)
            .with("disk_vda_queue_len", |_| 2.9)
            .with("disk_vda_await_ms", |_| 0.8);
        let s = summary(&s);
        assert_ne!(s.bottleneck, Some(Resource::Disk), "{}", s.line);
    }

    #[test]
    fn runnable_bursts_on_a_mostly_idle_cpu_are_not_a_bottleneck() {
        // Seen on the lab at 200 users: 16% busy, 14% stolen, a median of 2
        // runnable (the sampler and one more) and one sample of 120.
        let s = Synthetic::new(QUIET)
            .with("cpu_busy_pct", |_| 16.0)
            .with("cpu_steal_pct", |_| 14.0)
            .with("run_queue", |t| if t < 1.0 { 120.0 } else { 2.0 });
        let s = summary(&s);
        assert_eq!(s.bottleneck, None, "{}", s.line);
        let cpu = &s.resources[0];
        assert_eq!(cpu.saturation[0], "run queue 0.5 per core");
    }

    #[test]
    fn a_sustained_run_queue_saturates_a_busy_cpu() {
        let s = Synthetic::new(QUIET)
            .with("cpu_busy_pct", |_| 60.0)
            .with("run_queue", |_| 5.0);
        let s = summary(&s);
        assert_eq!(s.bottleneck, Some(Resource::Cpu), "{}", s.line);
        assert!(s.line.contains("run queue 2.0 per core"), "{}", s.line);
    }

    #[test]
    fn cpu_busy_outside_the_groups_is_named() {
        // Seen in a sweep step while a build ran: 94% busy, groups 16% of a core.
        let s = Synthetic::new(QUIET)
            .with("cpu_busy_pct", |_| 94.0)
            .with("run_queue", |_| 5.0)
            .with("group_dovecot_cpu_pct", |_| 10.0)
            .with("group_postfix_cpu_pct", |_| 2.0)
            .with("group_peakhour_cpu_pct", |_| 4.0);
        let s = summary(&s);
        assert_eq!(s.bottleneck, Some(Resource::Cpu));
        assert_eq!(
            s.line,
            "CPU: 94% busy, run queue 2.0 per core, dovecot processes 5% of CPU, 86% of CPU \
             outside the monitored process groups (the kernel or another workload) — CPU-bound"
        );
    }

    #[test]
    fn growing_mail_queue() {
        // active grows 2 messages per second.
        let s = Synthetic::new(QUIET).with("postfix_queue_active", |t| 2.0 * t);
        let s = summary(&s);
        assert_eq!(s.bottleneck, Some(Resource::MailQueue));
        assert!(
            s.line
                .starts_with("mail queue: 59 messages queued on average, growing 2.0 messages/s"),
            "{}",
            s.line
        );
    }

    #[test]
    fn memory_swapping() {
        let s = Synthetic::new(QUIET)
            .with("mem_available_kb", |_| 960_000.0) // 96% used
            .with("swap_out_pages_per_s", |_| 400.0);
        let s = summary(&s);
        assert_eq!(s.bottleneck, Some(Resource::Memory));
        assert_eq!(
            s.line,
            "memory: 96% used, swapping 400 pages/s — memory-bound"
        );
    }

    #[test]
    fn network_errors_reported_without_saturating() {
        let s = Synthetic::new(QUIET).with("net_lo_errors_per_s", |_| 0.5);
        let s = summary(&s);
        let net = s
            .resources
            .iter()
            .find(|r| r.resource == Resource::Network)
            .unwrap();
        assert_eq!(net.errors, vec!["0.5 errors/s".to_owned()]);
        assert_eq!(s.bottleneck, None);
    }
}
