//! Typed samples: what one tick of the monitor saw.
//!
//! Rates and percentages are `Option`s: they need two reads of a counter, so
//! the first sample of a source has none, and a counter that went backwards
//! (a reset, a 32-bit wrap, a device that came back) gives none for one tick
//! instead of a negative or huge number.

use crate::columns;

/// Shares of CPU time over one interval, in percent; they add up to 100.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuShares {
    /// User time, including nice and guest time.
    pub user_pct: f64,
    /// Kernel time, including hard and soft interrupts.
    pub system_pct: f64,
    /// Idle while I/O was outstanding.
    pub iowait_pct: f64,
    /// Time a hypervisor gave to another guest.
    pub steal_pct: f64,
    /// Idle.
    pub idle_pct: f64,
}

impl CpuShares {
    /// Busy share: user + system (steal and iowait excluded).
    pub fn busy_pct(&self) -> f64 {
        self.user_pct + self.system_pct
    }
}

/// CPU use over one interval, for the whole machine and per core.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuSample {
    /// All cores together (100 = every core busy).
    pub total: CpuShares,
    /// One entry per core, in core order (`cpu0`, `cpu1` ...).
    pub per_core: Vec<CpuShares>,
}

/// Pressure stall information over one interval, as % of wall time that
/// some (or all) tasks were stalled on the resource. `None` where the
/// kernel has no `/proc/pressure` (or node_exporter no pressure collector).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PressureSample {
    /// Some runnable task waited for a CPU.
    pub cpu_some_pct: Option<f64>,
    /// Some task waited for I/O.
    pub io_some_pct: Option<f64>,
    /// All non-idle tasks waited for I/O.
    pub io_full_pct: Option<f64>,
    /// Some task waited for memory (reclaim, swap-in, refault).
    pub memory_some_pct: Option<f64>,
    /// All non-idle tasks waited for memory.
    pub memory_full_pct: Option<f64>,
}

/// Memory at the moment of the sample, and paging rates over the interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MemorySample {
    /// `MemTotal`.
    pub total_kb: u64,
    /// `MemAvailable`: what new work could use without swapping.
    pub available_kb: u64,
    /// `Cached` (page cache).
    pub cached_kb: u64,
    /// `SwapTotal`.
    pub swap_total_kb: u64,
    /// `SwapTotal - SwapFree`.
    pub swap_used_kb: u64,
    /// Major page faults per second (`pgmajfault`).
    pub major_faults_per_s: Option<f64>,
    /// Pages swapped in per second (`pswpin`).
    pub swap_in_pages_per_s: Option<f64>,
    /// Pages swapped out per second (`pswpout`).
    pub swap_out_pages_per_s: Option<f64>,
}

/// One block device over one interval (iostat's `-x` view).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiskSample {
    /// Kernel name, e.g. `vda`, `nvme0n1`, `dm-0`.
    pub device: String,
    /// Completed reads per second.
    pub reads_per_s: Option<f64>,
    /// Completed writes per second.
    pub writes_per_s: Option<f64>,
    /// KiB read per second.
    pub read_kb_per_s: Option<f64>,
    /// KiB written per second.
    pub write_kb_per_s: Option<f64>,
    /// Share of the interval the device had I/O in flight (0..=100).
    pub util_pct: Option<f64>,
    /// Average number of requests in flight (weighted I/O time / elapsed).
    pub queue_len: Option<f64>,
    /// Average time per completed request, queueing included, in ms
    /// (0 when nothing completed).
    pub await_ms: Option<f64>,
}

/// One network interface over one interval.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NetworkSample {
    /// Interface name, e.g. `lo`, `eth0`.
    pub interface: String,
    /// Bytes received per second.
    pub rx_bytes_per_s: Option<f64>,
    /// Bytes sent per second.
    pub tx_bytes_per_s: Option<f64>,
    /// Packets received per second.
    pub rx_packets_per_s: Option<f64>,
    /// Packets sent per second.
    pub tx_packets_per_s: Option<f64>,
    /// Receive + transmit errors per second.
    pub errors_per_s: Option<f64>,
    /// Receive + transmit drops per second.
    pub drops_per_s: Option<f64>,
}

/// The machine-wide part of a sample: what both the local and the
/// node_exporter source can give.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemSample {
    /// Number of cores seen.
    pub cores: usize,
    /// CPU shares; `None` on a source's first read.
    pub cpu: Option<CpuSample>,
    /// Runnable tasks right now (`procs_running`; it counts the reader too).
    pub run_queue: Option<f64>,
    /// One-minute load average.
    pub load1: Option<f64>,
    /// Pressure stall information.
    pub pressure: PressureSample,
    /// Memory and paging.
    pub memory: MemorySample,
    /// Block devices, sorted by name (partitions, loop and ram devices skipped).
    pub disks: Vec<DiskSample>,
    /// Network interfaces, sorted by name (`lo` included).
    pub networks: Vec<NetworkSample>,
}

/// One process group (e.g. all of Dovecot's processes) over one interval.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupSample {
    /// The group's name, e.g. `dovecot`.
    pub name: String,
    /// Processes in the group now.
    pub processes: u32,
    /// Threads in those processes.
    pub threads: u32,
    /// Resident memory of those processes, summed (shared pages count once per process).
    pub rss_kb: u64,
    /// CPU used (user + system), 100 = one core.
    pub cpu_pct: Option<f64>,
    /// Bytes read from storage per second (`/proc/PID/io` `read_bytes`).
    pub read_bytes_per_s: Option<f64>,
    /// Bytes written to storage per second (`write_bytes`).
    pub write_bytes_per_s: Option<f64>,
    /// Voluntary + involuntary context switches per second.
    pub ctx_switches_per_s: Option<f64>,
}

/// Postfix queue sizes, in messages (files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueSizes {
    /// `incoming`: received, not yet seen by the queue manager.
    pub incoming: u64,
    /// `active`: being delivered.
    pub active: u64,
    /// `deferred`: delivery failed temporarily, will be retried.
    pub deferred: u64,
    /// `hold`: held by the administrator.
    pub hold: u64,
}

/// The mail-server probes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MailSample {
    /// Postfix's queues; `None` when no queue directory was given or it is missing.
    pub postfix_queue: Option<QueueSizes>,
    /// Processes in the Dovecot tree (the `dovecot` master and its children).
    pub dovecot_processes: Option<u32>,
    /// Client connections to Dovecot (see [`crate::MailProbes`] for how they are counted).
    pub dovecot_connections: Option<u32>,
}

/// Everything one tick of the monitor saw.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sample {
    /// Seconds since the monitor's origin (the run's start), at the read.
    pub time_s: f64,
    /// Machine-wide metrics.
    pub system: SystemSample,
    /// Process groups (local source only).
    pub groups: Vec<GroupSample>,
    /// Mail-server probes (local source only).
    pub mail: MailSample,
    /// CPU time the monitor spent producing this sample, in µs.
    pub monitor_cpu_us: Option<f64>,
}

impl Sample {
    /// The sample flattened into named metrics, in a stable order: the
    /// columns of `monitor.csv` (without `time_s`). The names are documented
    /// in `docs/metrics.md`; [`crate::columns`] builds them.
    pub fn metrics(&self) -> Vec<(String, Option<f64>)> {
        let mut out: Vec<(String, Option<f64>)> = Vec::with_capacity(64);
        let mut put = |name: String, value: Option<f64>| out.push((name, value));
        let sys = &self.system;
        let total = sys.cpu.as_ref().map(|c| c.total);
        put(columns::CPU_BUSY_PCT.into(), total.map(|t| t.busy_pct()));
        put(columns::CPU_USER_PCT.into(), total.map(|t| t.user_pct));
        put(columns::CPU_SYSTEM_PCT.into(), total.map(|t| t.system_pct));
        put(columns::CPU_IOWAIT_PCT.into(), total.map(|t| t.iowait_pct));
        put(columns::CPU_STEAL_PCT.into(), total.map(|t| t.steal_pct));
        put(columns::CPU_IDLE_PCT.into(), total.map(|t| t.idle_pct));
        for core in 0..sys.cores {
            let shares = sys.cpu.as_ref().and_then(|c| c.per_core.get(core)).copied();
            put(
                columns::core(core, "busy_pct"),
                shares.map(|s| s.busy_pct()),
            );
            put(columns::core(core, "user_pct"), shares.map(|s| s.user_pct));
            put(
                columns::core(core, "system_pct"),
                shares.map(|s| s.system_pct),
            );
            put(
                columns::core(core, "iowait_pct"),
                shares.map(|s| s.iowait_pct),
            );
            put(
                columns::core(core, "steal_pct"),
                shares.map(|s| s.steal_pct),
            );
            put(columns::core(core, "idle_pct"), shares.map(|s| s.idle_pct));
        }
        put(columns::CORES.into(), Some(sys.cores as f64));
        put(columns::RUN_QUEUE.into(), sys.run_queue);
        put(columns::LOAD1.into(), sys.load1);
        let p = &sys.pressure;
        put(columns::PSI_CPU_SOME_PCT.into(), p.cpu_some_pct);
        put(columns::PSI_IO_SOME_PCT.into(), p.io_some_pct);
        put(columns::PSI_IO_FULL_PCT.into(), p.io_full_pct);
        put(columns::PSI_MEMORY_SOME_PCT.into(), p.memory_some_pct);
        put(columns::PSI_MEMORY_FULL_PCT.into(), p.memory_full_pct);
        let m = &sys.memory;
        put(columns::MEM_TOTAL_KB.into(), Some(m.total_kb as f64));
        put(
            columns::MEM_AVAILABLE_KB.into(),
            Some(m.available_kb as f64),
        );
        put(columns::MEM_CACHED_KB.into(), Some(m.cached_kb as f64));
        put(columns::SWAP_TOTAL_KB.into(), Some(m.swap_total_kb as f64));
        put(columns::SWAP_USED_KB.into(), Some(m.swap_used_kb as f64));
        put(columns::MAJOR_FAULTS_PER_S.into(), m.major_faults_per_s);
        put(columns::SWAP_IN_PAGES_PER_S.into(), m.swap_in_pages_per_s);
        put(columns::SWAP_OUT_PAGES_PER_S.into(), m.swap_out_pages_per_s);
        for d in &sys.disks {
            put(columns::disk(&d.device, "reads_per_s"), d.reads_per_s);
            put(columns::disk(&d.device, "writes_per_s"), d.writes_per_s);
            put(columns::disk(&d.device, "read_kb_per_s"), d.read_kb_per_s);
            put(columns::disk(&d.device, "write_kb_per_s"), d.write_kb_per_s);
            put(columns::disk(&d.device, "util_pct"), d.util_pct);
            put(columns::disk(&d.device, "queue_len"), d.queue_len);
            put(columns::disk(&d.device, "await_ms"), d.await_ms);
        }
        for n in &sys.networks {
            put(
                columns::net(&n.interface, "rx_bytes_per_s"),
                n.rx_bytes_per_s,
            );
            put(
                columns::net(&n.interface, "tx_bytes_per_s"),
                n.tx_bytes_per_s,
            );
            put(
                columns::net(&n.interface, "rx_packets_per_s"),
                n.rx_packets_per_s,
            );
            put(
                columns::net(&n.interface, "tx_packets_per_s"),
                n.tx_packets_per_s,
            );
            put(columns::net(&n.interface, "errors_per_s"), n.errors_per_s);
            put(columns::net(&n.interface, "drops_per_s"), n.drops_per_s);
        }
        for g in &self.groups {
            put(columns::group(&g.name, "cpu_pct"), g.cpu_pct);
            put(columns::group(&g.name, "rss_kb"), Some(g.rss_kb as f64));
            put(
                columns::group(&g.name, "read_bytes_per_s"),
                g.read_bytes_per_s,
            );
            put(
                columns::group(&g.name, "write_bytes_per_s"),
                g.write_bytes_per_s,
            );
            put(
                columns::group(&g.name, "processes"),
                Some(f64::from(g.processes)),
            );
            put(
                columns::group(&g.name, "threads"),
                Some(f64::from(g.threads)),
            );
            put(
                columns::group(&g.name, "ctx_switches_per_s"),
                g.ctx_switches_per_s,
            );
        }
        let q = self.mail.postfix_queue;
        put(
            columns::POSTFIX_QUEUE_INCOMING.into(),
            q.map(|q| q.incoming as f64),
        );
        put(
            columns::POSTFIX_QUEUE_ACTIVE.into(),
            q.map(|q| q.active as f64),
        );
        put(
            columns::POSTFIX_QUEUE_DEFERRED.into(),
            q.map(|q| q.deferred as f64),
        );
        put(columns::POSTFIX_QUEUE_HOLD.into(), q.map(|q| q.hold as f64));
        put(
            columns::DOVECOT_PROCESSES.into(),
            self.mail.dovecot_processes.map(f64::from),
        );
        put(
            columns::DOVECOT_CONNECTIONS.into(),
            self.mail.dovecot_connections.map(f64::from),
        );
        put(columns::MONITOR_CPU_US.into(), self.monitor_cpu_us);
        out
    }
}
