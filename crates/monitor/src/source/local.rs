//! The local source: this machine's `/proc`, parsed by hand.
//!
//! Hand-parsing (rather than the `procfs` crate) keeps the per-sample cost
//! to one `read` per file into a reused buffer, and the build free of
//! another dependency tree; the parsers are small and fixture-tested.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use super::{SampleFuture, Source};
use crate::cgroup::{CgroupFiles, CgroupReader};
use crate::client_net::{ClientBytesFn, ClientNetReader};
use crate::cost::cpu_timed;
use crate::error::MonitorError;
use crate::group_tracker::{GroupTracker, ProcessCounters};
use crate::groups::{GroupSpec, assign_groups};
use crate::kept_files::{KeptFiles, PidFile};
use crate::mail::{MailProbes, postfix_queue_sizes};
use crate::procfs::{self, PidStat};
use crate::sample::{GroupSample, MailSample, Sample};
use crate::sockets::ConnectionCounter;
use crate::system::{PressureCounters, PreviousReading, SystemCounters};

/// What the local source reads.
#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// Root of procfs; `/proc` except in tests.
    pub proc_root: PathBuf,
    /// Where whole block devices are listed; `/sys/block` except in tests.
    /// If it cannot be listed, partitions are recognised by name.
    pub sys_block: PathBuf,
    /// Process groups to watch (default: dovecot, postfix, peakhour).
    pub groups: Vec<GroupSpec>,
    /// Mail-server probes.
    pub mail: MailProbes,
    /// A shaped lab's cgroup, whose own accounting adds the `lab_*` columns.
    pub cgroup: Option<CgroupFiles>,
    /// Reads peakhour's own network bytes (`peakhour_net::wire_bytes`), for
    /// the `client_net_*` columns; `None` leaves them out (nothing of
    /// peakhour's load runs in this process).
    pub client_bytes: Option<ClientBytesFn>,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            proc_root: PathBuf::from("/proc"),
            sys_block: PathBuf::from("/sys/block"),
            groups: GroupSpec::defaults(),
            mail: MailProbes::default(),
            cgroup: None,
            client_bytes: None,
        }
    }
}

/// Samples this machine through `/proc`.
#[derive(Debug)]
pub struct LocalSource {
    config: LocalConfig,
    ticks_per_s: f64,
    own_pid: u32,
    prev: PreviousReading,
    tracker: GroupTracker,
    whole_disks: Option<HashSet<String>>,
    partitions: BTreeSet<String>,
    /// The text of the file just read (reused).
    bytes: Vec<u8>,
    /// `/proc` files kept open between samples.
    kept: KeptFiles,
    dovecot_probe: GroupSpec,
    /// The last per-process reading, reused while `skip` is above zero.
    processes: Option<ProcessReading>,
    skip: u32,
    /// When the processes were last read.
    processes_read_at: Option<Instant>,
    cgroup: Option<CgroupReader>,
    client_net: Option<ClientNetReader>,
    /// Counts Dovecot's connections when its ports are known.
    connections: ConnectionCounter,
    /// A group matches on executable paths or owners: read them for every process.
    needs_exe: bool,
    needs_user: bool,
}

/// The CPU one sample may spend reading every process's files before those
/// reads are spread over several samples. A Dovecot with one process per
/// connected user has hundreds of processes, and reading three files of each
/// every second cost 23 ms (2.3% of a core) at 200 users; spread out, the
/// monitor stays near its 1% budget and each group's rates cover the seconds
/// between two readings.
///
/// 2.5 ms since the fourth round of issue 16 (it was 5 ms): with the reads
/// cheaper (connections from `sock_diag`, files kept open) a 200-user lab's
/// reading costs 10-20 ms rather than 50-75, so at 2.5 ms it still comes
/// every 4-8 samples, more often than the 10 the 5 ms budget allowed before,
/// and the monitor's CPU, which settles at about the budget per sample,
/// halves: it is a fixed cost per second in every run's generator
/// (docs/PERFORMANCE.md, "Fourth round").
pub const PROCESS_READ_BUDGET: std::time::Duration = std::time::Duration::from_micros(2500);

/// Per-process findings, cached between readings.
#[derive(Debug, Clone)]
struct ProcessReading {
    groups: Vec<GroupSample>,
    dovecot_processes: u32,
    dovecot_connections: u32,
}

/// Why a per-process read failed: gone (skip it) or something worse.
fn process_gone(e: &std::io::Error) -> bool {
    // ESRCH surfaces as a raw OS error 3 when reading a dying process.
    matches!(e.kind(), std::io::ErrorKind::NotFound) || e.raw_os_error() == Some(3)
}

impl LocalSource {
    /// A source with the given configuration.
    pub fn new(config: LocalConfig) -> Result<Self, MonitorError> {
        let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .filter(|t| *t > 0)
            .unwrap_or(100);
        let mut source = Self {
            connections: ConnectionCounter::new(&config.proc_root),
            kept: KeptFiles::new(&config.proc_root),
            config,
            ticks_per_s: ticks as f64,
            own_pid: std::process::id(),
            prev: PreviousReading::default(),
            tracker: GroupTracker::new(),
            whole_disks: None,
            partitions: BTreeSet::new(),
            bytes: Vec::with_capacity(8192),
            dovecot_probe: GroupSpec::dovecot(),
            processes: None,
            skip: 0,
            processes_read_at: None,
            cgroup: None,
            client_net: None,
            needs_exe: false,
            needs_user: false,
        };
        source.needs_exe = source.config.groups.iter().any(GroupSpec::needs_exe);
        source.needs_user = source.config.groups.iter().any(GroupSpec::needs_user);
        source.cgroup = source.config.cgroup.clone().map(CgroupReader::new);
        source.client_net = source.config.client_bytes.map(ClientNetReader::new);
        // `dovecot_processes` follows the `dovecot` group (e.g. scoped to one lab).
        if let Some(dovecot) = source.config.groups.iter().find(|g| g.name == "dovecot") {
            source.dovecot_probe = dovecot.clone();
        }
        source.list_whole_disks();
        Ok(source)
    }

    fn list_whole_disks(&mut self) {
        self.whole_disks = std::fs::read_dir(&self.config.sys_block)
            .ok()
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    // /sys/block spells a '/' in a device name as '!' (cciss!c0d0).
                    .map(|e| e.file_name().to_string_lossy().replace('!', "/"))
                    .collect()
            });
    }

    fn read_proc(&mut self, rel: &'static str) -> Result<&str, MonitorError> {
        let root = &self.config.proc_root;
        self.kept
            .read_named(root, rel, &mut self.bytes)
            .map_err(|e| MonitorError::read(root.join(rel), e))
    }

    fn read_optional(&mut self, rel: &'static str) -> Option<&str> {
        self.kept
            .read_named(&self.config.proc_root, rel, &mut self.bytes)
            .ok()
    }

    fn read_pid(&mut self, pid: u32, which: PidFile) -> Result<&str, std::io::Error> {
        self.kept
            .read_pid(&self.config.proc_root, pid, which, &mut self.bytes)
    }

    fn keep_disk(&mut self, name: &str) -> bool {
        if self.partitions.contains(name) {
            return false;
        }
        let whole = match &self.whole_disks {
            Some(set) if set.contains(name) => true,
            // A device we have not seen listed: it may be new, so list again once.
            Some(_) => {
                self.list_whole_disks();
                self.whole_disks.as_ref().is_some_and(|s| s.contains(name))
            }
            None => !procfs::looks_like_partition(name),
        };
        if !whole {
            self.partitions.insert(name.to_owned());
        }
        whole
    }

    /// Reads every system counter once.
    pub fn read_system(&mut self) -> Result<SystemCounters, MonitorError> {
        let ticks = self.ticks_per_s;
        let stat = procfs::parse_stat(self.read_proc("stat")?, ticks)?;
        let load1 = self
            .read_optional("loadavg")
            .and_then(|t| procfs::parse_loadavg(t).ok());
        let mut pressure = PressureCounters::default();
        if let Some(t) = self.read_optional("pressure/cpu") {
            pressure.cpu_some = procfs::parse_pressure(t)?.0;
        }
        if let Some(t) = self.read_optional("pressure/io") {
            (pressure.io_some, pressure.io_full) = procfs::parse_pressure(t)?;
        }
        if let Some(t) = self.read_optional("pressure/memory") {
            (pressure.memory_some, pressure.memory_full) = procfs::parse_pressure(t)?;
        }
        let mut memory = Default::default();
        procfs::parse_meminfo(self.read_proc("meminfo")?, &mut memory)?;
        if let Some(t) = self.read_optional("vmstat") {
            procfs::parse_vmstat(t, &mut memory)?;
        }
        let disks = match self.read_optional("diskstats").map(str::to_owned) {
            Some(text) => procfs::parse_diskstats(&text, |name| self.keep_disk(name))?,
            None => Vec::new(),
        };
        let nets = match self.read_optional("net/dev") {
            Some(t) => procfs::parse_net_dev(t)?,
            None => Vec::new(),
        };
        Ok(SystemCounters {
            cpu_total: stat.total,
            cpu_cores: stat.cores,
            procs_running: stat.procs_running,
            load1,
            pressure,
            memory,
            disks,
            nets,
        })
    }

    fn all_processes(&mut self) -> Result<Vec<PidStat>, MonitorError> {
        let root = self.config.proc_root.clone();
        let entries = std::fs::read_dir(&root).map_err(|e| MonitorError::read(&root, e))?;
        let mut procs = Vec::with_capacity(256);
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            let Ok(number) = pid.parse::<u32>() else {
                continue;
            };
            match self.read_pid(number, PidFile::Stat) {
                Ok(text) => {
                    if let Ok(mut stat) = procfs::parse_pid_stat(text) {
                        // Only when a group matches on them: a readlink and a
                        // stat per process.
                        if self.needs_exe {
                            stat.exe = std::fs::read_link(root.join(pid).join("exe"))
                                .ok()
                                .map(|p| p.to_string_lossy().into_owned());
                        }
                        if self.needs_user {
                            use std::os::unix::fs::MetadataExt as _;
                            stat.uid = std::fs::metadata(root.join(pid)).ok().map(|m| m.uid());
                        }
                        procs.push(stat);
                    }
                }
                Err(e) if process_gone(&e) => {}
                Err(_) => {}
            }
        }
        procs.sort_by_key(|p| p.pid);
        Ok(procs)
    }

    fn process_counters(&mut self, p: &PidStat) -> Option<ProcessCounters> {
        let (rss_kb, ctx_switches) = match self.read_pid(p.pid, PidFile::Status) {
            Ok(t) => procfs::parse_pid_status(t).ok()?,
            Err(_) => return None, // exited since its stat was read
        };
        // /proc/PID/io needs ptrace rights over the process: without them
        // (not root, another user's process) I/O counts as zero.
        let (read_bytes, write_bytes) = match self.read_pid(p.pid, PidFile::Io) {
            Ok(t) => procfs::parse_pid_io(t).unwrap_or((0, 0)),
            Err(e) if process_gone(&e) => return None,
            Err(_) => (0, 0),
        };
        Some(ProcessCounters {
            pid: p.pid,
            start_ticks: p.start_ticks,
            cpu_ticks: p.cpu_ticks,
            children_cpu_ticks: p.children_cpu_ticks,
            ppid: p.ppid,
            threads: p.threads,
            rss_kb,
            read_bytes,
            write_bytes,
            ctx_switches,
        })
    }

    /// Reads the counters now and turns them into a sample (synchronous:
    /// `/proc` reads do not block on devices).
    pub fn sample_now(&mut self) -> Result<Sample, MonitorError> {
        self.sample_at(Instant::now())
    }

    /// Like [`LocalSource::sample_now`], with rates computed as if the read
    /// happened at `now` (for tests over a fake `/proc`).
    pub fn sample_at(&mut self, now: Instant) -> Result<Sample, MonitorError> {
        // The cgroup first: its rates are taken over the time between two
        // `now`s, which must be the time between its two reads (the process
        // reads after it can take long on a loaded machine).
        let cgroup = self.cgroup.as_mut().map(|c| c.sample_at(now));
        let client_net = self.client_net.as_mut().map(|c| c.sample_at(now));
        let counters = self.read_system()?;
        let system = self.prev.advance(now, counters);

        let reading = match (&self.processes, self.skip) {
            (Some(cached), skip) if skip > 0 => {
                self.skip -= 1;
                cached.clone()
            }
            _ => {
                // The first reading has no rates yet (nothing to take a delta
                // from), so the next sample reads again whatever it costs.
                let first = self.processes_read_at.is_none();
                let (reading, cost) = cpu_timed(|| self.read_processes(now));
                let reading = reading?;
                // Spread the next readings out so that they average to the budget.
                let samples_per_reading =
                    (cost.as_secs_f64() / PROCESS_READ_BUDGET.as_secs_f64()).ceil();
                self.skip = if first {
                    0
                } else {
                    (samples_per_reading as u32).clamp(1, 10) - 1
                };
                self.processes = Some(reading.clone());
                reading
            }
        };
        let mail = self.mail_sample(&reading)?;
        Ok(Sample {
            time_s: 0.0,
            system,
            groups: reading.groups,
            mail,
            monitor_cpu_us: None,
            cgroup,
            client_net,
        })
    }

    /// Reads every process's stat, then the group members' status and io.
    fn read_processes(&mut self, now: Instant) -> Result<ProcessReading, MonitorError> {
        let uptime_s = procfs::parse_uptime(self.read_proc("uptime")?)?;
        self.kept.begin_reading();
        let procs = self.all_processes()?;
        let mut specs = self.config.groups.clone();
        specs.push(self.dovecot_probe.clone());
        let mut assigned = assign_groups(&specs, &procs, self.own_pid);
        let dovecot_tree = assigned.pop().unwrap_or_default();
        let members: Vec<Vec<ProcessCounters>> = assigned
            .iter()
            .map(|idx| {
                idx.iter()
                    .filter_map(|&i| self.process_counters(&procs[i]))
                    .collect()
            })
            .collect();
        // The processes not listed this time have exited: close their files.
        self.kept.end_reading();
        let names: Vec<&str> = self.config.groups.iter().map(|g| g.name.as_str()).collect();
        let now_ticks = (uptime_s * self.ticks_per_s) as u64;
        // Rates cover the time since the previous reading, however many samples ago.
        let elapsed_s = self
            .processes_read_at
            .map_or(0.0, |t| now.duration_since(t).as_secs_f64());
        self.processes_read_at = Some(now);
        let groups = self
            .tracker
            .update(&names, &members, now_ticks, self.ticks_per_s, elapsed_s);
        // Connections: established sockets on Dovecot's ports when they are
        // known (exact whatever its client_limit), else its imap and pop3
        // processes. Counted with the process reads, and spread out with them:
        // from /proc/net/tcp (where netlink is not permitted) it costs as much.
        let dovecot_connections = if self.config.mail.dovecot_ports.is_empty() {
            dovecot_tree
                .iter()
                .filter(|&&i| matches!(procs[i].comm.as_str(), "imap" | "pop3"))
                .count() as u32
        } else {
            self.connections.count(&self.config.mail.dovecot_ports)?
        };
        Ok(ProcessReading {
            groups,
            dovecot_processes: u32::try_from(dovecot_tree.len()).unwrap_or(u32::MAX),
            dovecot_connections,
        })
    }

    fn mail_sample(&mut self, reading: &ProcessReading) -> Result<MailSample, MonitorError> {
        let postfix_queue = match &self.config.mail.postfix_queue_dir {
            Some(dir) => postfix_queue_sizes(dir)?,
            None => None,
        };
        let dovecot = !self.config.mail.not_dovecot;
        Ok(MailSample {
            postfix_queue,
            dovecot_processes: dovecot.then_some(reading.dovecot_processes),
            dovecot_connections: dovecot.then_some(reading.dovecot_connections),
        })
    }
}

impl Source for LocalSource {
    fn name(&self) -> &str {
        "local"
    }

    fn sample(&mut self) -> SampleFuture<'_> {
        Box::pin(async move { self.sample_now() })
    }
}
