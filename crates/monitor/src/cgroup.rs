//! A shaped lab's own accounting: the cgroup that caps the lab's servers
//! also counts their CPU time and memory, exactly and for every process they
//! ever forked, which the per-process reads can only approximate (a process
//! that lived between two samples is missed, shared pages count once per
//! process).
//!
//! The monitor does not know about labs; it is given the files to read
//! ([`CgroupFiles`], filled from `peakhour lab status`'s
//! `limits.cgroup`) and adds four columns to `monitor.csv`
//! (`docs/metrics.md`):
//!
//! | column | from (v1) | from (v2) |
//! |---|---|---|
//! | `lab_cpu_pct` | `cpuacct.usage` (ns) delta | `cpu.stat` `usage_usec` delta |
//! | `lab_cpu_throttled_pct` | `cpu.stat` `throttled_time` (ns) delta | `cpu.stat` `throttled_usec` delta |
//! | `lab_memory_kb` | `memory.usage_in_bytes` | `memory.current` |
//! | `lab_memory_no_cache_kb` | that − `memory.stat` `total_cache` | that − `memory.stat` `file` |
//!
//! `lab_cpu_pct` is in percent of one core like `group_*_cpu_pct`, so a lab
//! held to `--cpus 0.5` stays at or under 50. `lab_cpu_throttled_pct` is the
//! time the group's runnable tasks spent throttled by its quota, as a share
//! of wall time; the kernel sums it over the CPUs the group ran on, so it
//! can pass 100 on a multi-core host. Above zero, the cap is what holds the
//! servers back.

use std::path::PathBuf;
use std::time::Instant;

use crate::system::counter_delta;
use peakhour_analysis::monitor::{MetricKey, SystemField};

/// The cgroup layout, which decides how the files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupLayout {
    /// cgroup v1: `cpuacct.usage` in ns, `cpu.stat` `throttled_time` in ns.
    V1,
    /// cgroup v2: `cpu.stat` `usage_usec` and `throttled_usec` in µs.
    V2,
}

/// The files of one cgroup that the monitor reads each sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupFiles {
    /// v1 or v2.
    pub layout: CgroupLayout,
    /// `cpuacct.usage` (v1) or `cpu.stat` (v2).
    pub cpu_usage: PathBuf,
    /// `memory.usage_in_bytes` (v1) or `memory.current` (v2).
    pub memory_usage: PathBuf,
    /// `cpu.stat`, for the throttled time.
    pub cpu_stat: PathBuf,
}

/// What one read of the files gave: cumulative CPU and throttled time in
/// ns, and memory in bytes. A file that could not be read gives `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CgroupCounters {
    /// CPU time used by the group's processes, ns.
    pub cpu_ns: Option<u64>,
    /// Time the group was throttled by its CPU quota, ns.
    pub throttled_ns: Option<u64>,
    /// Memory charged to the group now (page cache included), bytes.
    pub memory_bytes: Option<u64>,
    /// The group's page cache now (`memory.stat`), bytes.
    pub cache_bytes: Option<u64>,
}

/// The group over one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CgroupSample {
    /// CPU used by the group, 100 = one core; `None` on the first read.
    pub cpu_pct: Option<f64>,
    /// Share of wall time the group was throttled, percent.
    pub throttled_pct: Option<f64>,
    /// Memory charged to the group, KiB.
    pub memory_kb: Option<f64>,
    /// The same without its page cache, KiB.
    pub memory_no_cache_kb: Option<f64>,
}

impl CgroupSample {
    /// The sample's columns, in `monitor.csv` order.
    pub(crate) fn metrics(&self, out: &mut Vec<(MetricKey, Option<f64>)>) {
        let fields = [
            (SystemField::LabCpuPct, self.cpu_pct),
            (SystemField::LabCpuThrottledPct, self.throttled_pct),
            (SystemField::LabMemoryKb, self.memory_kb),
            (SystemField::LabMemoryNoCacheKb, self.memory_no_cache_kb),
        ];
        out.extend(fields.map(|(f, v)| (MetricKey::system(f), v)));
    }
}

/// The value of `key` in a flat-keyed file (`key value` per line).
fn stat_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
}

/// Parses one read of the four files (their contents; `None` for a file
/// that could not be read): CPU usage, memory usage, `cpu.stat` and
/// `memory.stat`.
pub fn parse_cgroup_counters(
    layout: CgroupLayout,
    cpu_usage: Option<&str>,
    memory_usage: Option<&str>,
    (cpu_stat, memory_stat): (Option<&str>, Option<&str>),
) -> CgroupCounters {
    let (cpu_ns, throttled_ns) = match layout {
        CgroupLayout::V1 => (
            cpu_usage.and_then(|t| t.trim().parse().ok()),
            cpu_stat.and_then(|t| stat_field(t, "throttled_time")),
        ),
        CgroupLayout::V2 => (
            cpu_usage
                .and_then(|t| stat_field(t, "usage_usec"))
                .map(|us| us.saturating_mul(1000)),
            cpu_stat
                .and_then(|t| stat_field(t, "throttled_usec"))
                .map(|us| us.saturating_mul(1000)),
        ),
    };
    // v1's `total_cache` counts the hierarchy below the group too, as
    // `memory.usage_in_bytes` does; v2's `file` is always hierarchical.
    let cache_key = match layout {
        CgroupLayout::V1 => "total_cache",
        CgroupLayout::V2 => "file",
    };
    CgroupCounters {
        cpu_ns,
        throttled_ns,
        memory_bytes: memory_usage.and_then(|t| t.trim().parse().ok()),
        cache_bytes: memory_stat.and_then(|t| stat_field(t, cache_key)),
    }
}

/// Turns two reads `elapsed_s` apart into a sample (rates need both).
pub fn cgroup_sample(
    prev: Option<&CgroupCounters>,
    cur: &CgroupCounters,
    elapsed_s: f64,
) -> CgroupSample {
    let rate_pct = |pick: fn(&CgroupCounters) -> Option<u64>| {
        let (p, c) = (pick(prev?)?, pick(cur)?);
        if elapsed_s <= 0.0 {
            return None;
        }
        Some(counter_delta(p as f64, c as f64)? / 1e9 / elapsed_s * 100.0)
    };
    CgroupSample {
        cpu_pct: rate_pct(|c| c.cpu_ns),
        throttled_pct: rate_pct(|c| c.throttled_ns),
        memory_kb: cur.memory_bytes.map(|b| b as f64 / 1024.0),
        memory_no_cache_kb: cur
            .memory_bytes
            .zip(cur.cache_bytes)
            .map(|(used, cache)| used.saturating_sub(cache) as f64 / 1024.0),
    }
}

/// Reads a cgroup's files each sample and keeps the previous read.
#[derive(Debug)]
pub(crate) struct CgroupReader {
    files: CgroupFiles,
    prev: Option<(Instant, CgroupCounters)>,
}

impl CgroupReader {
    pub(crate) fn new(files: CgroupFiles) -> Self {
        Self { files, prev: None }
    }

    /// Reads the files now (as if at `now`) and returns the interval since
    /// the last read. A group that disappeared (the lab went down) gives
    /// `None`s, not an error: the rest of the sample still counts.
    pub(crate) fn sample_at(&mut self, now: Instant) -> CgroupSample {
        let read = |p: &PathBuf| std::fs::read_to_string(p).ok();
        let f = &self.files;
        // `memory.stat` sits beside the usage file in both layouts.
        let memory_stat = f.memory_usage.with_file_name("memory.stat");
        let counters = parse_cgroup_counters(
            f.layout,
            read(&f.cpu_usage).as_deref(),
            read(&f.memory_usage).as_deref(),
            (read(&f.cpu_stat).as_deref(), read(&memory_stat).as_deref()),
        );
        let prev = self.prev.as_ref();
        let elapsed_s = prev.map_or(0.0, |(t, _)| now.duration_since(*t).as_secs_f64());
        let sample = cgroup_sample(prev.map(|(_, c)| c), &counters, elapsed_s);
        self.prev = Some((now, counters));
        sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_files_give_cpu_throttling_and_memory() {
        let stat = "nr_periods 20\nnr_throttled 7\nthrottled_time 250000000\n";
        let prev = parse_cgroup_counters(
            CgroupLayout::V1,
            Some("1000000000\n"),
            Some("1048576\n"),
            (
                Some("nr_periods 10\nnr_throttled 2\nthrottled_time 50000000\n"),
                None,
            ),
        );
        let cur = parse_cgroup_counters(
            CgroupLayout::V1,
            Some("1500000000\n"),
            Some("2097152\n"),
            (
                Some(stat),
                Some("cache 1\ntotal_cache 524288\ntotal_rss 100\n"),
            ),
        );
        let s = cgroup_sample(Some(&prev), &cur, 1.0);
        // 0.5 s of CPU in 1 s: half a core.
        assert_eq!(s.cpu_pct, Some(50.0));
        assert_eq!(s.throttled_pct, Some(20.0));
        assert_eq!(s.memory_kb, Some(2048.0));
        // The hierarchy's page cache (total_cache), not the group's own (cache).
        assert_eq!(s.memory_no_cache_kb, Some(1536.0));
        assert_eq!(cgroup_sample(None, &prev, 1.0).memory_no_cache_kb, None);
    }

    #[test]
    fn v2_files_are_in_microseconds() {
        let prev = parse_cgroup_counters(
            CgroupLayout::V2,
            Some("usage_usec 1000000\nuser_usec 600000\nsystem_usec 400000\n"),
            Some("4096\n"),
            (
                Some("usage_usec 1000000\nnr_throttled 0\nthrottled_usec 0\n"),
                None,
            ),
        );
        let cur = parse_cgroup_counters(
            CgroupLayout::V2,
            Some("usage_usec 3000000\n"),
            Some("8192\n"),
            (
                Some("usage_usec 3000000\nnr_throttled 5\nthrottled_usec 500000\n"),
                Some("anon 2048\nfile 6144\n"),
            ),
        );
        let s = cgroup_sample(Some(&prev), &cur, 2.0);
        assert_eq!(s.cpu_pct, Some(100.0));
        assert_eq!(s.throttled_pct, Some(25.0));
        assert_eq!(s.memory_kb, Some(8.0));
        assert_eq!(s.memory_no_cache_kb, Some(2.0));
    }

    #[test]
    fn the_first_read_and_missing_files_give_no_rates() {
        let cur = parse_cgroup_counters(CgroupLayout::V1, None, Some("1024"), (None, None));
        let s = cgroup_sample(None, &cur, 1.0);
        assert_eq!(s.cpu_pct, None);
        assert_eq!(s.memory_kb, Some(1.0));
        let s = cgroup_sample(Some(&cur), &cur, 1.0);
        assert_eq!(s.cpu_pct, None);
    }
}
