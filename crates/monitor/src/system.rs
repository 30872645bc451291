//! Cumulative system counters, as any source reads them, and the pure
//! conversion of two reads into a [`SystemSample`] of rates and shares.
//!
//! Both sources fill [`SystemCounters`] in base units (seconds, bytes,
//! counts), so `/proc` and node_exporter share one rate computation and
//! agree by construction.

use crate::sample::{
    CpuSample, CpuShares, DiskSample, MemorySample, NetworkSample, PressureSample, SystemSample,
};

/// Cumulative CPU time by mode, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuCounters {
    /// `user` + `nice` (guest time is already inside user).
    pub user: f64,
    /// `system` + `irq` + `softirq`.
    pub system: f64,
    /// `iowait`.
    pub iowait: f64,
    /// `steal`.
    pub steal: f64,
    /// `idle`.
    pub idle: f64,
}

/// Cumulative stall time from `/proc/pressure`, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PressureCounters {
    /// cpu some.
    pub cpu_some: Option<f64>,
    /// io some.
    pub io_some: Option<f64>,
    /// io full.
    pub io_full: Option<f64>,
    /// memory some.
    pub memory_some: Option<f64>,
    /// memory full.
    pub memory_full: Option<f64>,
}

/// Memory gauges (KiB) and cumulative paging counters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MemoryCounters {
    /// `MemTotal`.
    pub total_kb: u64,
    /// `MemAvailable`.
    pub available_kb: u64,
    /// `Cached`.
    pub cached_kb: u64,
    /// `SwapTotal`.
    pub swap_total_kb: u64,
    /// `SwapFree`.
    pub swap_free_kb: u64,
    /// `pgmajfault`.
    pub major_faults: Option<f64>,
    /// `pswpin`.
    pub swap_in_pages: Option<f64>,
    /// `pswpout`.
    pub swap_out_pages: Option<f64>,
}

/// Cumulative counters of one block device.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiskCounters {
    /// Kernel name.
    pub device: String,
    /// Reads completed.
    pub reads: f64,
    /// Writes completed.
    pub writes: f64,
    /// Bytes read.
    pub read_bytes: f64,
    /// Bytes written.
    pub write_bytes: f64,
    /// Seconds spent on reads.
    pub read_time_s: f64,
    /// Seconds spent on writes.
    pub write_time_s: f64,
    /// Seconds with I/O in flight (`io_ticks`).
    pub io_time_s: f64,
    /// Weighted seconds of I/O (`time_in_queue`).
    pub weighted_io_time_s: f64,
}

/// Cumulative counters of one network interface.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NetCounters {
    /// Interface name.
    pub interface: String,
    /// Bytes received.
    pub rx_bytes: f64,
    /// Packets received.
    pub rx_packets: f64,
    /// Receive errors.
    pub rx_errors: f64,
    /// Receive drops.
    pub rx_drops: f64,
    /// Bytes sent.
    pub tx_bytes: f64,
    /// Packets sent.
    pub tx_packets: f64,
    /// Transmit errors.
    pub tx_errors: f64,
    /// Transmit drops.
    pub tx_drops: f64,
}

/// One read of every machine-wide counter.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemCounters {
    /// All cores.
    pub cpu_total: CpuCounters,
    /// Per core, in core order.
    pub cpu_cores: Vec<CpuCounters>,
    /// Runnable tasks now.
    pub procs_running: Option<f64>,
    /// One-minute load average now.
    pub load1: Option<f64>,
    /// Stall time.
    pub pressure: PressureCounters,
    /// Memory.
    pub memory: MemoryCounters,
    /// Block devices (already filtered), sorted by name.
    pub disks: Vec<DiskCounters>,
    /// Interfaces, sorted by name.
    pub nets: Vec<NetCounters>,
}

/// The change of a monotonic counter, or `None` when it went backwards
/// (reset, wrap, device replaced): one missing value beats a negative or
/// absurd one.
pub fn counter_delta(prev: f64, cur: f64) -> Option<f64> {
    (cur >= prev).then_some(cur - prev)
}

fn rate(prev: f64, cur: f64, elapsed_s: f64) -> Option<f64> {
    if elapsed_s <= 0.0 {
        return None;
    }
    counter_delta(prev, cur).map(|d| d / elapsed_s)
}

fn opt_rate(prev: Option<f64>, cur: Option<f64>, elapsed_s: f64) -> Option<f64> {
    rate(prev?, cur?, elapsed_s)
}

/// CPU shares between two reads; `None` if a counter went backwards or no
/// time passed.
pub fn cpu_shares(prev: &CpuCounters, cur: &CpuCounters) -> Option<CpuShares> {
    let user = counter_delta(prev.user, cur.user)?;
    let system = counter_delta(prev.system, cur.system)?;
    let iowait = counter_delta(prev.iowait, cur.iowait).unwrap_or(0.0);
    let steal = counter_delta(prev.steal, cur.steal)?;
    // The kernel's idle and iowait counters can step back by a tick on
    // NO_HZ systems; treat that as zero rather than dropping the sample.
    let idle = counter_delta(prev.idle, cur.idle).unwrap_or(0.0);
    let total = user + system + iowait + steal + idle;
    if total <= 0.0 {
        return None;
    }
    let pct = |v: f64| v / total * 100.0;
    Some(CpuShares {
        user_pct: pct(user),
        system_pct: pct(system),
        iowait_pct: pct(iowait),
        steal_pct: pct(steal),
        idle_pct: pct(idle),
    })
}

/// A source's previous reading, so that each new one becomes rates.
#[derive(Debug, Default)]
pub(crate) struct PreviousReading(Option<(std::time::Instant, SystemCounters)>);

impl PreviousReading {
    /// Rates between the previous reading and `counters`, read at `now`;
    /// `counters` becomes the previous reading. The first call has no rates.
    pub(crate) fn advance(
        &mut self,
        now: std::time::Instant,
        counters: SystemCounters,
    ) -> SystemSample {
        let previous = self.0.as_ref();
        let elapsed_s = previous.map_or(0.0, |(t, _)| now.duration_since(*t).as_secs_f64());
        let system = system_sample(previous.map(|(_, c)| c), &counters, elapsed_s);
        self.0 = Some((now, counters));
        system
    }
}

/// Turns a read (and the previous one, if any) into a [`SystemSample`].
/// `elapsed_s` is the wall time between the two reads.
pub fn system_sample(
    prev: Option<&SystemCounters>,
    cur: &SystemCounters,
    elapsed_s: f64,
) -> SystemSample {
    let cpu = prev.and_then(|p| {
        let total = cpu_shares(&p.cpu_total, &cur.cpu_total)?;
        // A core that went offline (or a changed core count) leaves its
        // per-core shares empty for one tick rather than misaligned.
        let per_core = if p.cpu_cores.len() == cur.cpu_cores.len() {
            p.cpu_cores
                .iter()
                .zip(&cur.cpu_cores)
                .map(|(a, b)| cpu_shares(a, b).unwrap_or_default())
                .collect()
        } else {
            Vec::new()
        };
        Some(CpuSample { total, per_core })
    });
    let pct_of = |p: Option<f64>, c: Option<f64>| {
        prev.and_then(|_| opt_rate(p, c, elapsed_s))
            .map(|r| (r * 100.0).min(100.0))
    };
    let pressure = match prev {
        Some(p) => PressureSample {
            cpu_some_pct: pct_of(p.pressure.cpu_some, cur.pressure.cpu_some),
            io_some_pct: pct_of(p.pressure.io_some, cur.pressure.io_some),
            io_full_pct: pct_of(p.pressure.io_full, cur.pressure.io_full),
            memory_some_pct: pct_of(p.pressure.memory_some, cur.pressure.memory_some),
            memory_full_pct: pct_of(p.pressure.memory_full, cur.pressure.memory_full),
        },
        None => PressureSample::default(),
    };
    let m = &cur.memory;
    let pm = prev.map(|p| &p.memory);
    let memory = MemorySample {
        total_kb: m.total_kb,
        available_kb: m.available_kb,
        cached_kb: m.cached_kb,
        swap_total_kb: m.swap_total_kb,
        swap_used_kb: m.swap_total_kb.saturating_sub(m.swap_free_kb),
        major_faults_per_s: pm.and_then(|p| opt_rate(p.major_faults, m.major_faults, elapsed_s)),
        swap_in_pages_per_s: pm.and_then(|p| opt_rate(p.swap_in_pages, m.swap_in_pages, elapsed_s)),
        swap_out_pages_per_s: pm
            .and_then(|p| opt_rate(p.swap_out_pages, m.swap_out_pages, elapsed_s)),
    };
    let disks = cur
        .disks
        .iter()
        .map(|d| {
            let p = prev.and_then(|p| p.disks.iter().find(|x| x.device == d.device));
            disk_sample(p, d, elapsed_s)
        })
        .collect();
    let networks = cur
        .nets
        .iter()
        .map(|n| {
            let p = prev.and_then(|p| p.nets.iter().find(|x| x.interface == n.interface));
            net_sample(p, n, elapsed_s)
        })
        .collect();
    SystemSample {
        cores: cur.cpu_cores.len(),
        cpu,
        run_queue: cur.procs_running,
        load1: cur.load1,
        pressure,
        memory,
        disks,
        networks,
    }
}

fn disk_sample(prev: Option<&DiskCounters>, cur: &DiskCounters, elapsed_s: f64) -> DiskSample {
    let Some(p) = prev else {
        return DiskSample {
            device: cur.device.clone(),
            ..DiskSample::default()
        };
    };
    let reads = counter_delta(p.reads, cur.reads);
    let writes = counter_delta(p.writes, cur.writes);
    let busy_time = counter_delta(p.read_time_s, cur.read_time_s)
        .zip(counter_delta(p.write_time_s, cur.write_time_s))
        .map(|(r, w)| r + w);
    let await_ms = match (reads, writes, busy_time) {
        (Some(r), Some(w), Some(t)) if r + w > 0.0 => Some(t / (r + w) * 1000.0),
        (Some(_), Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    DiskSample {
        device: cur.device.clone(),
        reads_per_s: rate(p.reads, cur.reads, elapsed_s),
        writes_per_s: rate(p.writes, cur.writes, elapsed_s),
        read_kb_per_s: rate(p.read_bytes, cur.read_bytes, elapsed_s).map(|b| b / 1024.0),
        write_kb_per_s: rate(p.write_bytes, cur.write_bytes, elapsed_s).map(|b| b / 1024.0),
        util_pct: rate(p.io_time_s, cur.io_time_s, elapsed_s).map(|r| (r * 100.0).min(100.0)),
        queue_len: rate(p.weighted_io_time_s, cur.weighted_io_time_s, elapsed_s),
        await_ms,
    }
}

fn net_sample(prev: Option<&NetCounters>, cur: &NetCounters, elapsed_s: f64) -> NetworkSample {
    let Some(p) = prev else {
        return NetworkSample {
            interface: cur.interface.clone(),
            ..NetworkSample::default()
        };
    };
    let sum = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a + b);
    NetworkSample {
        interface: cur.interface.clone(),
        rx_bytes_per_s: rate(p.rx_bytes, cur.rx_bytes, elapsed_s),
        tx_bytes_per_s: rate(p.tx_bytes, cur.tx_bytes, elapsed_s),
        rx_packets_per_s: rate(p.rx_packets, cur.rx_packets, elapsed_s),
        tx_packets_per_s: rate(p.tx_packets, cur.tx_packets, elapsed_s),
        errors_per_s: sum(
            rate(p.rx_errors, cur.rx_errors, elapsed_s),
            rate(p.tx_errors, cur.tx_errors, elapsed_s),
        ),
        drops_per_s: sum(
            rate(p.rx_drops, cur.rx_drops, elapsed_s),
            rate(p.tx_drops, cur.tx_drops, elapsed_s),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(user: f64, system: f64, iowait: f64, steal: f64, idle: f64) -> CpuCounters {
        CpuCounters {
            user,
            system,
            iowait,
            steal,
            idle,
        }
    }

    #[test]
    fn first_read_has_no_rates() {
        let cur = SystemCounters {
            cpu_cores: vec![CpuCounters::default()],
            nets: vec![NetCounters {
                interface: "lo".into(),
                rx_bytes: 5.0,
                ..Default::default()
            }],
            ..Default::default()
        };
        let s = system_sample(None, &cur, 1.0);
        assert!(s.cpu.is_none());
        assert_eq!(s.networks[0].rx_bytes_per_s, None);
        assert_eq!(s.cores, 1);
    }

    #[test]
    fn cpu_shares_from_deltas() {
        // deltas: user 3, system 1, iowait 0.5, steal 0.5, idle 5 -> total 10.
        let a = cpu(10.0, 10.0, 1.0, 0.0, 100.0);
        let b = cpu(13.0, 11.0, 1.5, 0.5, 105.0);
        let s = cpu_shares(&a, &b).unwrap();
        assert!((s.user_pct - 30.0).abs() < 1e-9);
        assert!((s.system_pct - 10.0).abs() < 1e-9);
        assert!((s.iowait_pct - 5.0).abs() < 1e-9);
        assert!((s.steal_pct - 5.0).abs() < 1e-9);
        assert!((s.idle_pct - 50.0).abs() < 1e-9);
        assert!((s.busy_pct() - 40.0).abs() < 1e-9);
    }

    #[test]
    fn counter_that_goes_backwards_gives_no_rate() {
        let prev = SystemCounters {
            nets: vec![NetCounters {
                interface: "eth0".into(),
                rx_bytes: 4_294_967_000.0,
                tx_bytes: 100.0,
                ..Default::default()
            }],
            disks: vec![DiskCounters {
                device: "vda".into(),
                reads: 50.0,
                ..Default::default()
            }],
            ..Default::default()
        };
        let cur = SystemCounters {
            nets: vec![NetCounters {
                interface: "eth0".into(),
                rx_bytes: 200.0, // wrapped or reset
                tx_bytes: 300.0,
                ..Default::default()
            }],
            disks: vec![DiskCounters {
                device: "vda".into(),
                reads: 10.0,
                ..Default::default()
            }],
            ..Default::default()
        };
        let s = system_sample(Some(&prev), &cur, 2.0);
        assert_eq!(s.networks[0].rx_bytes_per_s, None);
        assert_eq!(s.networks[0].tx_bytes_per_s, Some(100.0));
        assert_eq!(s.disks[0].reads_per_s, None);
        assert_eq!(s.disks[0].await_ms, None);
    }

    #[test]
    fn disk_rates_like_iostat() {
        let p = DiskCounters {
            device: "vda".into(),
            ..Default::default()
        };
        // Over 2 s: 100 reads + 100 writes, 1 MiB read, 2 MiB written,
        // 0.3 s reading + 0.5 s writing, 1.5 s busy, 4 s weighted.
        let c = DiskCounters {
            device: "vda".into(),
            reads: 100.0,
            writes: 100.0,
            read_bytes: 1_048_576.0,
            write_bytes: 2_097_152.0,
            read_time_s: 0.3,
            write_time_s: 0.5,
            io_time_s: 1.5,
            weighted_io_time_s: 4.0,
        };
        let d = disk_sample(Some(&p), &c, 2.0);
        assert_eq!(d.reads_per_s, Some(50.0));
        assert_eq!(d.read_kb_per_s, Some(512.0));
        assert_eq!(d.write_kb_per_s, Some(1024.0));
        assert_eq!(d.util_pct, Some(75.0));
        assert_eq!(d.queue_len, Some(2.0));
        // 0.8 s over 200 requests = 4 ms each.
        assert!((d.await_ms.unwrap() - 4.0).abs() < 1e-9);
    }

    #[test]
    fn pressure_is_share_of_elapsed_time() {
        let p = SystemCounters {
            pressure: PressureCounters {
                cpu_some: Some(10.0),
                ..Default::default()
            },
            ..Default::default()
        };
        let c = SystemCounters {
            pressure: PressureCounters {
                cpu_some: Some(10.25),
                ..Default::default()
            },
            ..Default::default()
        };
        let s = system_sample(Some(&p), &c, 1.0);
        assert_eq!(s.pressure.cpu_some_pct, Some(25.0));
        assert_eq!(s.pressure.io_some_pct, None);
    }
}
