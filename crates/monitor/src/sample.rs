//! Typed samples: what one tick of the monitor saw.
//!
//! Rates and percentages are `Option`s: they need two reads of a counter, so
//! the first sample of a source has none, and a counter that went backwards
//! (a reset, a 32-bit wrap, a device that came back) gives none for one tick
//! instead of a negative or huge number.

use crate::cgroup::CgroupSample;
use crate::client_net::ClientNetSample;
use peakhour_analysis::monitor::{
    CoreField, DiskField, GroupField, MetricKey, NetField, SystemField,
};

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
    /// A shaped lab's cgroup, when the source was given one (its columns
    /// follow `monitor_cpu_us`; without a cgroup they are absent).
    pub cgroup: Option<CgroupSample>,
    /// peakhour's own network bytes, when the source was given a way to
    /// read them (their columns come last; without it they are absent).
    pub client_net: Option<ClientNetSample>,
}

impl Sample {
    /// The sample flattened into named metrics, in a stable order: the
    /// columns of `monitor.csv` (without `time_s`). The names are documented
    /// in `docs/metrics.md`; [`MetricKey`] builds them.
    pub fn metrics(&self) -> Vec<(String, Option<f64>)> {
        self.keyed_metrics()
            .into_iter()
            .map(|(key, value)| (key.column(), value))
            .collect()
    }

    /// [`Sample::metrics`] with typed keys.
    pub fn keyed_metrics(&self) -> Vec<(MetricKey, Option<f64>)> {
        let mut out = Vec::with_capacity(64);
        self.system.cpu_metrics(&mut out);
        self.system.memory_metrics(&mut out);
        self.system.device_metrics(&mut out);
        for g in &self.groups {
            let fields = [
                (GroupField::CpuPct, g.cpu_pct),
                (GroupField::RssKb, Some(g.rss_kb as f64)),
                (GroupField::ReadBytesPerS, g.read_bytes_per_s),
                (GroupField::WriteBytesPerS, g.write_bytes_per_s),
                (GroupField::Processes, Some(f64::from(g.processes))),
                (GroupField::Threads, Some(f64::from(g.threads))),
                (GroupField::CtxSwitchesPerS, g.ctx_switches_per_s),
            ];
            out.extend(fields.map(|(f, v)| (MetricKey::group(&g.name, f), v)));
        }
        let q = self.mail.postfix_queue;
        let mail = [
            (
                SystemField::PostfixQueueIncoming,
                q.map(|q| q.incoming as f64),
            ),
            (SystemField::PostfixQueueActive, q.map(|q| q.active as f64)),
            (
                SystemField::PostfixQueueDeferred,
                q.map(|q| q.deferred as f64),
            ),
            (SystemField::PostfixQueueHold, q.map(|q| q.hold as f64)),
            (
                SystemField::DovecotProcesses,
                self.mail.dovecot_processes.map(f64::from),
            ),
            (
                SystemField::DovecotConnections,
                self.mail.dovecot_connections.map(f64::from),
            ),
            (SystemField::MonitorCpuUs, self.monitor_cpu_us),
        ];
        out.extend(mail.map(|(f, v)| (MetricKey::system(f), v)));
        if let Some(cgroup) = &self.cgroup {
            cgroup.metrics(&mut out);
        }
        if let Some(client) = &self.client_net {
            client.metrics(&mut out);
        }
        out
    }
}

/// The shares of one core, or of all of them, as core fields.
fn shares(s: Option<CpuShares>) -> [(CoreField, Option<f64>); 6] {
    [
        (CoreField::BusyPct, s.map(|s| s.busy_pct())),
        (CoreField::UserPct, s.map(|s| s.user_pct)),
        (CoreField::SystemPct, s.map(|s| s.system_pct)),
        (CoreField::IowaitPct, s.map(|s| s.iowait_pct)),
        (CoreField::StealPct, s.map(|s| s.steal_pct)),
        (CoreField::IdlePct, s.map(|s| s.idle_pct)),
    ]
}

impl SystemSample {
    /// CPU shares of the machine and of each core, the run queue, load and
    /// pressure, in column order.
    fn cpu_metrics(&self, out: &mut Vec<(MetricKey, Option<f64>)>) {
        // The machine's shares are the system fields of the same names.
        let machine = [
            SystemField::CpuBusyPct,
            SystemField::CpuUserPct,
            SystemField::CpuSystemPct,
            SystemField::CpuIowaitPct,
            SystemField::CpuStealPct,
            SystemField::CpuIdlePct,
        ];
        let total = self.cpu.as_ref().map(|c| c.total);
        for (field, (_, value)) in machine.into_iter().zip(shares(total)) {
            out.push((MetricKey::system(field), value));
        }
        for core in 0..self.cores {
            let per_core = self
                .cpu
                .as_ref()
                .and_then(|c| c.per_core.get(core))
                .copied();
            for (field, value) in shares(per_core) {
                out.push((MetricKey::core(core, field), value));
            }
        }
        let p = &self.pressure;
        let fields = [
            (SystemField::Cores, Some(self.cores as f64)),
            (SystemField::RunQueue, self.run_queue),
            (SystemField::Load1, self.load1),
            (SystemField::PsiCpuSomePct, p.cpu_some_pct),
            (SystemField::PsiIoSomePct, p.io_some_pct),
            (SystemField::PsiIoFullPct, p.io_full_pct),
            (SystemField::PsiMemorySomePct, p.memory_some_pct),
            (SystemField::PsiMemoryFullPct, p.memory_full_pct),
        ];
        out.extend(fields.map(|(f, v)| (MetricKey::system(f), v)));
    }

    fn memory_metrics(&self, out: &mut Vec<(MetricKey, Option<f64>)>) {
        let m = &self.memory;
        let fields = [
            (SystemField::MemTotalKb, Some(m.total_kb as f64)),
            (SystemField::MemAvailableKb, Some(m.available_kb as f64)),
            (SystemField::MemCachedKb, Some(m.cached_kb as f64)),
            (SystemField::SwapTotalKb, Some(m.swap_total_kb as f64)),
            (SystemField::SwapUsedKb, Some(m.swap_used_kb as f64)),
            (SystemField::MajorFaultsPerS, m.major_faults_per_s),
            (SystemField::SwapInPagesPerS, m.swap_in_pages_per_s),
            (SystemField::SwapOutPagesPerS, m.swap_out_pages_per_s),
        ];
        out.extend(fields.map(|(f, v)| (MetricKey::system(f), v)));
    }

    /// Every disk's columns, then every interface's.
    fn device_metrics(&self, out: &mut Vec<(MetricKey, Option<f64>)>) {
        for d in &self.disks {
            let fields = [
                (DiskField::ReadsPerS, d.reads_per_s),
                (DiskField::WritesPerS, d.writes_per_s),
                (DiskField::ReadKbPerS, d.read_kb_per_s),
                (DiskField::WriteKbPerS, d.write_kb_per_s),
                (DiskField::UtilPct, d.util_pct),
                (DiskField::QueueLen, d.queue_len),
                (DiskField::AwaitMs, d.await_ms),
            ];
            out.extend(fields.map(|(f, v)| (MetricKey::disk(&d.device, f), v)));
        }
        for n in &self.networks {
            let fields = [
                (NetField::RxBytesPerS, n.rx_bytes_per_s),
                (NetField::TxBytesPerS, n.tx_bytes_per_s),
                (NetField::RxPacketsPerS, n.rx_packets_per_s),
                (NetField::TxPacketsPerS, n.tx_packets_per_s),
                (NetField::ErrorsPerS, n.errors_per_s),
                (NetField::DropsPerS, n.drops_per_s),
            ];
            out.extend(fields.map(|(f, v)| (MetricKey::network(&n.interface, f), v)));
        }
    }
}
