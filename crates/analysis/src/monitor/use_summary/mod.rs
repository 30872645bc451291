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
use super::stats::TimeWindow;

mod resources;

use resources::{Input, cpu_use, disk_use, mail_queue_use, memory_use, network_use};

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
