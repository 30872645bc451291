//! Parsers of `/proc` text: pure functions from a file's content to
//! counters, tested against fixtures. Reading the files is the local
//! source's job.
//!
//! Field layouts follow `proc(5)` and the kernel's
//! `Documentation/admin-guide/iostats.rst`.

use crate::error::MonitorError;
use crate::system::{CpuCounters, DiskCounters, MemoryCounters, NetCounters};

fn num(what: &'static str, field: Option<&str>) -> Result<f64, MonitorError> {
    let field = field.ok_or_else(|| MonitorError::parse(what, "missing field"))?;
    field
        .parse::<f64>()
        .map_err(|e| MonitorError::parse(what, format!("{field:?}: {e}")))
}

fn int(what: &'static str, field: Option<&str>) -> Result<u64, MonitorError> {
    let field = field.ok_or_else(|| MonitorError::parse(what, "missing field"))?;
    field
        .parse::<u64>()
        .map_err(|e| MonitorError::parse(what, format!("{field:?}: {e}")))
}

/// What `/proc/stat` gives: CPU times (in seconds) and `procs_running`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Stat {
    pub(crate) total: CpuCounters,
    pub(crate) cores: Vec<CpuCounters>,
    pub(crate) procs_running: Option<f64>,
}

fn cpu_line<'a>(
    fields: impl Iterator<Item = &'a str>,
    ticks: f64,
) -> Result<CpuCounters, MonitorError> {
    const WHAT: &str = "/proc/stat";
    let v: Vec<f64> = fields
        .take(8)
        .map(|f| num(WHAT, Some(f)))
        .collect::<Result<_, _>>()?;
    if v.len() < 4 {
        return Err(MonitorError::parse(
            WHAT,
            "cpu line with fewer than 4 fields",
        ));
    }
    let at = |i: usize| v.get(i).copied().unwrap_or(0.0) / ticks;
    // user nice system idle iowait irq softirq steal
    Ok(CpuCounters {
        user: at(0) + at(1),
        system: at(2) + at(5) + at(6),
        idle: at(3),
        iowait: at(4),
        steal: at(7),
    })
}

/// Parses `/proc/stat`; `ticks_per_s` is `sysconf(_SC_CLK_TCK)` (USER_HZ).
pub(crate) fn parse_stat(text: &str, ticks_per_s: f64) -> Result<Stat, MonitorError> {
    let mut stat = Stat::default();
    let mut saw_total = false;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(key) = fields.next() else { continue };
        if key == "cpu" {
            stat.total = cpu_line(fields, ticks_per_s)?;
            saw_total = true;
        } else if let Some(index) = key.strip_prefix("cpu") {
            // Bounded like node_exporter's: `cpu4294967295` must not
            // allocate a slot for every core below it (issue 11).
            let index: usize = index
                .parse()
                .ok()
                .filter(|i| *i < crate::source::MAX_CPUS)
                .ok_or_else(|| MonitorError::parse("/proc/stat", format!("cpu key {key:?}")))?;
            let counters = cpu_line(fields, ticks_per_s)?;
            // Offline cores are absent; keep indices aligned with core numbers.
            if stat.cores.len() <= index {
                stat.cores.resize(index + 1, CpuCounters::default());
            }
            stat.cores[index] = counters;
        } else if key == "procs_running" {
            stat.procs_running = Some(num("/proc/stat", fields.next())?);
        }
    }
    if !saw_total {
        return Err(MonitorError::parse("/proc/stat", "no aggregate cpu line"));
    }
    Ok(stat)
}

/// First field of `/proc/loadavg`.
pub(crate) fn parse_loadavg(text: &str) -> Result<f64, MonitorError> {
    num("/proc/loadavg", text.split_ascii_whitespace().next())
}

/// First field of `/proc/uptime`, seconds since boot.
pub(crate) fn parse_uptime(text: &str) -> Result<f64, MonitorError> {
    num("/proc/uptime", text.split_ascii_whitespace().next())
}

/// `/proc/pressure/<resource>`: the `total=` (µs) of the `some` and `full`
/// lines, as seconds. `full` is absent for cpu on older kernels.
pub(crate) fn parse_pressure(text: &str) -> Result<(Option<f64>, Option<f64>), MonitorError> {
    let mut some = None;
    let mut full = None;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let slot = match fields.next() {
            Some("some") => &mut some,
            Some("full") => &mut full,
            _ => continue,
        };
        let total = fields
            .find_map(|f| f.strip_prefix("total="))
            .ok_or_else(|| MonitorError::parse("/proc/pressure", "no total="))?;
        *slot = Some(num("/proc/pressure", Some(total))? / 1e6);
    }
    Ok((some, full))
}

/// `/proc/meminfo` into the gauges of [`MemoryCounters`] (values in kB).
pub(crate) fn parse_meminfo(text: &str, mem: &mut MemoryCounters) -> Result<(), MonitorError> {
    let mut seen_total = false;
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let slot = match key {
            "MemTotal" => {
                seen_total = true;
                &mut mem.total_kb
            }
            "MemAvailable" => &mut mem.available_kb,
            "Cached" => &mut mem.cached_kb,
            "SwapTotal" => &mut mem.swap_total_kb,
            "SwapFree" => &mut mem.swap_free_kb,
            _ => continue,
        };
        *slot = int("/proc/meminfo", rest.split_ascii_whitespace().next())?;
    }
    if !seen_total {
        return Err(MonitorError::parse("/proc/meminfo", "no MemTotal"));
    }
    Ok(())
}

/// `/proc/vmstat`: `pgmajfault`, `pswpin`, `pswpout`.
pub(crate) fn parse_vmstat(text: &str, mem: &mut MemoryCounters) -> Result<(), MonitorError> {
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let slot = match fields.next() {
            Some("pgmajfault") => &mut mem.major_faults,
            Some("pswpin") => &mut mem.swap_in_pages,
            Some("pswpout") => &mut mem.swap_out_pages,
            _ => continue,
        };
        *slot = Some(num("/proc/vmstat", fields.next())?);
    }
    Ok(())
}

/// Devices never worth a column: loop, ram and floppy devices.
pub(crate) fn is_pseudo_disk(name: &str) -> bool {
    ["loop", "ram", "fd"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// A partition by name alone, for when `/sys/block` cannot be listed:
/// `sda1`, `vdb2`, `xvda1`, `nvme0n1p1`, `mmcblk0p1`. Same rule as
/// node_exporter's default device exclusion.
pub(crate) fn looks_like_partition(name: &str) -> bool {
    let trailing_digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if trailing_digits == 0 {
        return false;
    }
    let stem = &name[..name.len() - trailing_digits];
    let classic = ["sd", "hd", "vd", "xvd"].iter().any(|p| {
        stem.strip_prefix(p).is_some_and(|letters| {
            !letters.is_empty() && letters.bytes().all(|b| b.is_ascii_lowercase())
        })
    });
    let with_p = stem.strip_suffix('p').is_some_and(|base| {
        (base.starts_with("nvme") || base.starts_with("mmcblk"))
            && base.ends_with(|c: char| c.is_ascii_digit())
    });
    classic || with_p
}

/// `/proc/diskstats` for the devices `keep` accepts. Sectors are 512 bytes
/// whatever the device's block size; times are ms.
pub(crate) fn parse_diskstats(
    text: &str,
    mut keep: impl FnMut(&str) -> bool,
) -> Result<Vec<DiskCounters>, MonitorError> {
    const WHAT: &str = "/proc/diskstats";
    let mut disks = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.len() < 14 {
            continue;
        }
        let name = f[2];
        if is_pseudo_disk(name) || !keep(name) {
            continue;
        }
        let n = |i: usize| num(WHAT, f.get(i).copied());
        disks.push(DiskCounters {
            device: name.to_owned(),
            reads: n(3)?,
            read_bytes: n(5)? * 512.0,
            read_time_s: n(6)? / 1000.0,
            writes: n(7)?,
            write_bytes: n(9)? * 512.0,
            write_time_s: n(10)? / 1000.0,
            io_time_s: n(12)? / 1000.0,
            weighted_io_time_s: n(13)? / 1000.0,
        });
    }
    disks.sort_by(|a, b| a.device.cmp(&b.device));
    Ok(disks)
}

/// `/proc/net/dev`, every interface.
pub(crate) fn parse_net_dev(text: &str) -> Result<Vec<NetCounters>, MonitorError> {
    const WHAT: &str = "/proc/net/dev";
    let mut nets = Vec::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || name.contains('|') {
            continue;
        }
        let f: Vec<&str> = rest.split_ascii_whitespace().collect();
        let n = |i: usize| num(WHAT, f.get(i).copied());
        nets.push(NetCounters {
            interface: name.to_owned(),
            rx_bytes: n(0)?,
            rx_packets: n(1)?,
            rx_errors: n(2)?,
            rx_drops: n(3)?,
            tx_bytes: n(8)?,
            tx_packets: n(9)?,
            tx_errors: n(10)?,
            tx_drops: n(11)?,
        });
    }
    nets.sort_by(|a, b| a.interface.cmp(&b.interface));
    Ok(nets)
}

/// The fields of `/proc/PID/stat` the process groups need.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PidStat {
    /// Process ID.
    pub pid: u32,
    /// Command name (at most 15 bytes, as the kernel truncates it).
    pub comm: String,
    /// Parent's PID.
    pub ppid: u32,
    /// `utime + stime`, in clock ticks.
    pub cpu_ticks: u64,
    /// `cutime + cstime`, in clock ticks: the CPU of the children it has
    /// waited for, which a forking server's short-lived children leave
    /// behind when they exit between two samples (issue 26).
    pub children_cpu_ticks: u64,
    /// `num_threads`.
    pub threads: u32,
    /// `starttime`: clock ticks after boot; with the PID, identifies the
    /// process even when PIDs are reused.
    pub start_ticks: u64,
    /// The executable's path (`/proc/PID/exe`), read only when a group
    /// matches on it; `None` when not read or not readable.
    pub exe: Option<String>,
    /// The owner's uid (of `/proc/PID`), read only when a group matches on
    /// it.
    pub uid: Option<u32>,
}

/// Parses `/proc/PID/stat`. The command name may hold spaces and
/// parentheses, so it is taken up to the *last* `)`.
pub fn parse_pid_stat(text: &str) -> Result<PidStat, MonitorError> {
    const WHAT: &str = "/proc/PID/stat";
    let open = text
        .find('(')
        .ok_or_else(|| MonitorError::parse(WHAT, "no '('"))?;
    let close = text
        .rfind(')')
        .ok_or_else(|| MonitorError::parse(WHAT, "no ')'"))?;
    if close < open {
        return Err(MonitorError::parse(WHAT, "')' before '('"));
    }
    let pid = text[..open].trim();
    let pid: u32 = pid
        .parse()
        .map_err(|_| MonitorError::parse(WHAT, format!("pid {pid:?}")))?;
    let comm = text[open + 1..close].to_owned();
    // After ")": state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14) ...
    // num_threads(17) ... starttime(19)
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    let field = |i: usize| int(WHAT, rest.get(i).copied());
    Ok(PidStat {
        pid,
        comm,
        ppid: u32::try_from(field(1)?).map_err(|_| MonitorError::parse(WHAT, "ppid"))?,
        cpu_ticks: field(11)?.saturating_add(field(12)?),
        children_cpu_ticks: field(13)?.saturating_add(field(14)?),
        threads: u32::try_from(field(17)?).unwrap_or(u32::MAX),
        start_ticks: field(19)?,
        exe: None,
        uid: None,
    })
}

/// From `/proc/PID/status`: `VmRSS` (kB; absent for kernel threads → 0)
/// and voluntary + involuntary context switches.
pub(crate) fn parse_pid_status(text: &str) -> Result<(u64, u64), MonitorError> {
    const WHAT: &str = "/proc/PID/status";
    let mut rss = 0;
    let mut switches = 0u64;
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        match key {
            "VmRSS" => rss = int(WHAT, rest.split_ascii_whitespace().next())?,
            "voluntary_ctxt_switches" | "nonvoluntary_ctxt_switches" => {
                switches = switches.saturating_add(int(WHAT, Some(rest.trim()))?);
            }
            _ => {}
        }
    }
    Ok((rss, switches))
}

/// From `/proc/PID/io`: `read_bytes` and `write_bytes` (storage I/O, not
/// socket traffic).
pub(crate) fn parse_pid_io(text: &str) -> Result<(u64, u64), MonitorError> {
    const WHAT: &str = "/proc/PID/io";
    let mut read = 0;
    let mut write = 0;
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        match key {
            "read_bytes" => read = int(WHAT, Some(rest.trim()))?,
            "write_bytes" => write = int(WHAT, Some(rest.trim()))?,
            _ => {}
        }
    }
    Ok((read, write))
}

/// Counts ESTABLISHED sockets in `/proc/net/tcp` or `/proc/net/tcp6` whose
/// local port is one of `ports`.
pub(crate) fn count_established(text: &str, ports: &[u16]) -> u32 {
    const ESTABLISHED: &str = "01";
    let mut count = 0;
    for line in text.lines().skip(1) {
        let mut f = line.split_ascii_whitespace();
        let (Some(_sl), Some(local), Some(_remote), Some(state)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        if state != ESTABLISHED {
            continue;
        }
        let port = local
            .rsplit_once(':')
            .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
        if port.is_some_and(|p| ports.contains(&p)) {
            count += 1;
        }
    }
    count
}

/// Every parser of this module over one text, results dropped: the entry of
/// the fuzz target `proc_files` (a parser must return an error for any text,
/// never panic or allocate without bound).
#[doc(hidden)]
pub fn parse_every_proc_file(text: &str) {
    let _ = parse_stat(text, 100.0);
    let _ = parse_loadavg(text);
    let _ = parse_uptime(text);
    let _ = parse_pressure(text);
    let _ = parse_meminfo(text, &mut MemoryCounters::default());
    let _ = parse_vmstat(text, &mut MemoryCounters::default());
    let _ = parse_diskstats(text, |name| !looks_like_partition(name));
    let _ = parse_net_dev(text);
    let _ = parse_pid_stat(text);
    let _ = parse_pid_status(text);
    let _ = parse_pid_io(text);
    let _ = count_established(text, &[143, 993, 25]);
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  123906 10 19667 342056 1265 5 148 139 0 0
cpu0 46006 0 9358 187787 269 0 31 62 0 0
cpu1 77900 10 10309 154269 996 5 117 77 0 0
intr 1025935 0 0
ctxt 1530829
btime 1795258061
processes 46414
procs_running 3
procs_blocked 0
";

    #[test]
    fn issue_11_a_huge_cpu_number_in_proc_stat_is_an_error_not_an_allocation() {
        let text = "cpu 1 2 3 4\ncpu4294967295 1 2 3 4\n";
        assert!(parse_stat(text, 100.0).is_err());
    }

    #[test]
    fn stat_cpu_lines_in_seconds() {
        let s = parse_stat(STAT, 100.0).unwrap();
        assert_eq!(s.cores.len(), 2);
        assert!((s.total.user - 1239.16).abs() < 1e-9); // (123906 + 10) / 100
        assert!((s.total.system - 198.20).abs() < 1e-9); // (19667 + 5 + 148) / 100
        assert!((s.total.idle - 3420.56).abs() < 1e-9);
        assert!((s.total.iowait - 12.65).abs() < 1e-9);
        assert!((s.total.steal - 1.39).abs() < 1e-9);
        assert_eq!(s.procs_running, Some(3.0));
    }

    #[test]
    fn stat_without_aggregate_line_is_an_error() {
        assert!(parse_stat("cpu0 1 2 3 4\n", 100.0).is_err());
    }

    #[test]
    fn pressure_totals() {
        let text = "some avg10=7.52 avg60=1.65 avg300=1.41 total=102725785\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        let (some, full) = parse_pressure(text).unwrap();
        assert!((some.unwrap() - 102.725785).abs() < 1e-9);
        assert_eq!(full, Some(0.0));
        assert_eq!(
            parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n")
                .unwrap()
                .1,
            None
        );
    }

    #[test]
    fn partitions_and_pseudo_devices() {
        for p in ["sda1", "vda2", "xvda1", "nvme0n1p1", "mmcblk0p2", "hdb10"] {
            assert!(looks_like_partition(p), "{p}");
        }
        for d in [
            "sda", "vda", "nvme0n1", "mmcblk0", "dm-0", "md0", "zram0", "sr0",
        ] {
            assert!(!looks_like_partition(d), "{d}");
        }
        assert!(is_pseudo_disk("loop7") && is_pseudo_disk("ram0"));
        assert!(!is_pseudo_disk("loopy") && !is_pseudo_disk("zram0"));
    }

    #[test]
    fn pid_stat_with_awkward_comm() {
        let text = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 98765 1000000 200 18446744073709551615";
        let s = parse_pid_stat(text).unwrap();
        assert_eq!(s.pid, 4242);
        assert_eq!(s.comm, "a (weird) name");
        assert_eq!(s.ppid, 1);
        assert_eq!(s.cpu_ticks, 300);
        assert_eq!(s.threads, 3);
        assert_eq!(s.start_ticks, 98765);
    }

    #[test]
    fn pid_status_and_io() {
        let status = "Name:\timap\nVmRSS:\t    5120 kB\nThreads:\t1\nvoluntary_ctxt_switches:\t40\nnonvoluntary_ctxt_switches:\t2\n";
        assert_eq!(parse_pid_status(status).unwrap(), (5120, 42));
        let kernel_thread = "Name:\tkworker/0:1\nThreads:\t1\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t0\n";
        assert_eq!(parse_pid_status(kernel_thread).unwrap(), (0, 7));
        let io = "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_pid_io(io).unwrap(), (4096, 8192));
    }

    #[test]
    fn established_sockets_by_local_port() {
        // 0x008F = 143, 0x006E = 110; state 0A = LISTEN, 01 = ESTABLISHED.
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:008F 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:008F 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   2: 0100007F:C350 0100007F:008F 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1
   3: 0100007F:006E 0100007F:C351 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0 20 4 30 10 -1
";
        assert_eq!(count_established(tcp, &[143]), 1);
        assert_eq!(count_established(tcp, &[143, 110]), 2);
        assert_eq!(count_established(tcp, &[25]), 0);
    }
}
