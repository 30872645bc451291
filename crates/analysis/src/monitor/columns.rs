//! The stable column names of `monitor.csv` (documented in `docs/metrics.md`).
//!
//! Names are `snake_case` with the unit as suffix (`_pct`, `_kb`, `_per_s`,
//! `_ms`, `_us`). Per-core, per-device, per-interface and per-group columns
//! embed the instance (after [`sanitize`]): [`super::MetricKey`] builds and
//! parses every name, these constants are the machine-wide ones.

/// Time of the sample in seconds since the run's start.
pub const TIME_S: &str = "time_s";
/// User + system share of all cores.
pub const CPU_BUSY_PCT: &str = "cpu_busy_pct";
/// User share (incl. nice) of all cores.
pub const CPU_USER_PCT: &str = "cpu_user_pct";
/// System share (incl. irq, softirq) of all cores.
pub const CPU_SYSTEM_PCT: &str = "cpu_system_pct";
/// I/O-wait share of all cores.
pub const CPU_IOWAIT_PCT: &str = "cpu_iowait_pct";
/// Steal share of all cores.
pub const CPU_STEAL_PCT: &str = "cpu_steal_pct";
/// Idle share of all cores.
pub const CPU_IDLE_PCT: &str = "cpu_idle_pct";
/// Number of cores.
pub const CORES: &str = "cores";
/// Runnable tasks (`procs_running`).
pub const RUN_QUEUE: &str = "run_queue";
/// One-minute load average.
pub const LOAD1: &str = "load1";
/// PSI: % of time some task waited for CPU.
pub const PSI_CPU_SOME_PCT: &str = "psi_cpu_some_pct";
/// PSI: % of time some task waited for I/O.
pub const PSI_IO_SOME_PCT: &str = "psi_io_some_pct";
/// PSI: % of time all tasks waited for I/O.
pub const PSI_IO_FULL_PCT: &str = "psi_io_full_pct";
/// PSI: % of time some task waited for memory.
pub const PSI_MEMORY_SOME_PCT: &str = "psi_memory_some_pct";
/// PSI: % of time all tasks waited for memory.
pub const PSI_MEMORY_FULL_PCT: &str = "psi_memory_full_pct";
/// `MemTotal`.
pub const MEM_TOTAL_KB: &str = "mem_total_kb";
/// `MemAvailable`.
pub const MEM_AVAILABLE_KB: &str = "mem_available_kb";
/// `Cached`.
pub const MEM_CACHED_KB: &str = "mem_cached_kb";
/// `SwapTotal`.
pub const SWAP_TOTAL_KB: &str = "swap_total_kb";
/// Swap in use.
pub const SWAP_USED_KB: &str = "swap_used_kb";
/// Major page faults per second.
pub const MAJOR_FAULTS_PER_S: &str = "major_faults_per_s";
/// Pages swapped in per second.
pub const SWAP_IN_PAGES_PER_S: &str = "swap_in_pages_per_s";
/// Pages swapped out per second.
pub const SWAP_OUT_PAGES_PER_S: &str = "swap_out_pages_per_s";
/// Files in Postfix's `incoming` queue.
pub const POSTFIX_QUEUE_INCOMING: &str = "postfix_queue_incoming";
/// Files in Postfix's `active` queue.
pub const POSTFIX_QUEUE_ACTIVE: &str = "postfix_queue_active";
/// Files in Postfix's `deferred` queue.
pub const POSTFIX_QUEUE_DEFERRED: &str = "postfix_queue_deferred";
/// Files in Postfix's `hold` queue.
pub const POSTFIX_QUEUE_HOLD: &str = "postfix_queue_hold";
/// Processes in the Dovecot tree.
pub const DOVECOT_PROCESSES: &str = "dovecot_processes";
/// Client connections to Dovecot.
pub const DOVECOT_CONNECTIONS: &str = "dovecot_connections";
/// CPU time the monitor spent on this sample, µs.
pub const MONITOR_CPU_US: &str = "monitor_cpu_us";
/// CPU used by a shaped lab's cgroup, 100 = one core (`peakhour_monitor::CgroupFiles`).
pub const LAB_CPU_PCT: &str = "lab_cpu_pct";
/// Share of wall time the lab's cgroup was throttled by its CPU quota.
pub const LAB_CPU_THROTTLED_PCT: &str = "lab_cpu_throttled_pct";
/// Memory charged to the lab's cgroup (page cache included), KiB.
pub const LAB_MEMORY_KB: &str = "lab_memory_kb";
/// Memory charged to the lab's cgroup without its page cache (what its
/// processes and the kernel hold for them: anonymous memory, page tables,
/// socket buffers), KiB: what sessions cost, which the page cache of the
/// mail hides in `lab_memory_kb`.
pub const LAB_MEMORY_NO_CACHE_KB: &str = "lab_memory_no_cache_kb";
/// Bytes peakhour's own clients wrote to servers per second (`peakhour_monitor::ClientNetSample`).
pub const CLIENT_NET_SENT_BYTES_PER_S: &str = "client_net_sent_bytes_per_s";
/// Bytes peakhour's own clients read from servers per second.
pub const CLIENT_NET_RECEIVED_BYTES_PER_S: &str = "client_net_received_bytes_per_s";

/// Makes a kernel or user name safe inside a column name: ASCII letters and
/// digits are kept (lowercased), everything else becomes `_`.
/// `dm-0` → `dm_0`, `br-lan.10` → `br_lan_10`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized() {
        assert_eq!(sanitize("dm-0"), "dm_0");
        assert_eq!(sanitize("br-lan.10"), "br_lan_10");
        assert_eq!(sanitize("Dovecot"), "dovecot");
    }
}
