//! Per-group rates from the processes' cumulative counters, read one
//! sample after another (which processes are a group's is `groups.rs`).
//!
//! Counters are kept per process, keyed by PID *and* start time, so a reused
//! PID is a new process. A process's delta is never negative (a counter
//! that went backwards counts as 0). A process that started since the last
//! sample counts its whole life (it all happened in this interval); one
//! that was already running but is new to the group counts nothing this
//! interval. A process that exited since the last sample takes its last
//! partial interval with it: the kernel no longer shows it. Rates therefore
//! err low for very short-lived processes (Postfix's `smtpd` per
//! connection, Dovecot's `imap` per login), never high.

use std::collections::{HashMap, HashSet};

use crate::sample::GroupSample;

/// Cumulative counters of one process, as read at one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcessCounters {
    /// PID.
    pub pid: u32,
    /// Start time, clock ticks after boot.
    pub start_ticks: u64,
    /// `utime + stime`, clock ticks.
    pub cpu_ticks: u64,
    /// `cutime + cstime`, clock ticks: the children it has waited for.
    pub children_cpu_ticks: u64,
    /// Parent's PID.
    pub ppid: u32,
    /// Threads.
    pub threads: u32,
    /// Resident set, kB.
    pub rss_kb: u64,
    /// Storage bytes read.
    pub read_bytes: u64,
    /// Storage bytes written.
    pub write_bytes: u64,
    /// Voluntary + involuntary context switches.
    pub ctx_switches: u64,
}

/// Keeps the previous counters of every group member and turns the next
/// read into per-group rates (see the module docs for the rules).
#[derive(Debug, Default)]
pub struct GroupTracker {
    /// By group index, PID and start time.
    prev: HashMap<(usize, u32, u64), ProcessCounters>,
    prev_uptime_ticks: Option<u64>,
}

impl GroupTracker {
    /// A tracker with no history (its first update gives no rates).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sums the groups' members and computes rates against the last update.
    /// `members[g]` are group `g`'s processes now; `uptime_ticks` is the
    /// time of this read in clock ticks after boot; `elapsed_s` the wall
    /// time since the last update.
    pub fn update(
        &mut self,
        names: &[&str],
        members: &[Vec<ProcessCounters>],
        uptime_ticks: u64,
        ticks_per_s: f64,
        elapsed_s: f64,
    ) -> Vec<GroupSample> {
        let have_rates = self.prev_uptime_ticks.is_some() && elapsed_s > 0.0;
        let born_after = self.prev_uptime_ticks.unwrap_or(u64::MAX);
        let mut next = HashMap::with_capacity(self.prev.len());
        let samples = names
            .iter()
            .zip(members)
            .enumerate()
            .map(|(index, (name, procs))| {
                let mut g = GroupSample {
                    name: (*name).to_owned(),
                    ..GroupSample::default()
                };
                let (mut cpu, mut read, mut write, mut ctx) = (0u64, 0u64, 0u64, 0u64);
                for p in procs {
                    g.processes += 1;
                    g.threads = g.threads.saturating_add(p.threads);
                    g.rss_kb = g.rss_kb.saturating_add(p.rss_kb);
                    let key = (index, p.pid, p.start_ticks);
                    let base = match self.prev.get(&key) {
                        Some(prev) => Some(*prev),
                        // Born during the interval: everything it did is new.
                        None if p.start_ticks > born_after => Some(ProcessCounters::default()),
                        None => None,
                    };
                    if let Some(b) = base {
                        // Its own CPU and that of the children it reaped
                        // since: children that lived less than a sampling
                        // interval are seen only so (issue 26).
                        let total = p.cpu_ticks.saturating_add(p.children_cpu_ticks);
                        let before = b.cpu_ticks.saturating_add(b.children_cpu_ticks);
                        cpu = cpu.saturating_add(total.saturating_sub(before));
                        read = read.saturating_add(p.read_bytes.saturating_sub(b.read_bytes));
                        write = write.saturating_add(p.write_bytes.saturating_sub(b.write_bytes));
                        ctx = ctx.saturating_add(p.ctx_switches.saturating_sub(b.ctx_switches));
                    }
                    next.insert(key, *p);
                }
                // A member seen before and gone now was reaped by its parent:
                // if that parent is a member, its children's CPU now holds
                // the child's whole CPU, of which the part seen was counted
                // already.
                let now: HashSet<u32> = procs.iter().map(|p| p.pid).collect();
                let counted: u64 = self
                    .prev
                    .iter()
                    .filter(|((g, pid, start), gone)| {
                        *g == index
                            && now.contains(&gone.ppid)
                            && !procs
                                .iter()
                                .any(|p| p.pid == *pid && p.start_ticks == *start)
                    })
                    .map(|(_, gone)| gone.cpu_ticks.saturating_add(gone.children_cpu_ticks))
                    .sum();
                cpu = cpu.saturating_sub(counted);
                if have_rates {
                    g.cpu_pct = Some(cpu as f64 / ticks_per_s / elapsed_s * 100.0);
                    g.read_bytes_per_s = Some(read as f64 / elapsed_s);
                    g.write_bytes_per_s = Some(write as f64 / elapsed_s);
                    g.ctx_switches_per_s = Some(ctx as f64 / elapsed_s);
                }
                g
            })
            .collect();
        self.prev = next;
        self.prev_uptime_ticks = Some(uptime_ticks);
        samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_26_item_12_a_reaped_childs_cpu_counts_once_through_its_parent() {
        let parent = |children| ProcessCounters {
            pid: 1,
            start_ticks: 1,
            cpu_ticks: 100,
            children_cpu_ticks: children,
            ..Default::default()
        };
        let child = ProcessCounters {
            pid: 2,
            ppid: 1,
            start_ticks: 5,
            cpu_ticks: 30,
            ..Default::default()
        };
        let mut tracker = GroupTracker::new();
        tracker.update(&["g"], &[vec![parent(0), child]], 10, 100.0, 1.0);
        // The child ran 20 ticks more, exited and was reaped: the parent's
        // children count says 50, of which 30 were counted already.
        let s = tracker.update(&["g"], &[vec![parent(50)]], 110, 100.0, 1.0);
        assert_eq!(s[0].cpu_pct, Some(20.0));
        // A child that lived and died between two samples is counted whole.
        let s = tracker.update(&["g"], &[vec![parent(90)]], 210, 100.0, 1.0);
        assert_eq!(s[0].cpu_pct, Some(40.0));
    }

    fn pc(pid: u32, start: u64, cpu: u64, ctx: u64) -> ProcessCounters {
        ProcessCounters {
            pid,
            start_ticks: start,
            cpu_ticks: cpu,
            threads: 1,
            rss_kb: 1000,
            ctx_switches: ctx,
            ..Default::default()
        }
    }

    #[test]
    fn vanishing_new_and_reused_processes_never_give_negative_or_huge_rates() {
        let mut t = GroupTracker::new();
        // t=0 (uptime 1000 ticks): two processes; no rates yet.
        let first = t.update(
            &["g"],
            &[vec![pc(10, 500, 1_000, 50), pc(11, 600, 2_000, 70)]],
            1000,
            100.0,
            1.0,
        );
        assert_eq!(first[0].cpu_pct, None);
        assert_eq!(first[0].processes, 2);
        // t=1 s (uptime 1100): pid 11 exited; pid 10 used 50 ticks;
        // pid 12 started at tick 1050 and used 20 ticks;
        // pid 13 is old (start 400) but new to the group: counts nothing;
        // pid 10's counters can't go backwards, but if they did they'd count 0.
        let second = t.update(
            &["g"],
            &[vec![
                pc(10, 500, 1_050, 60),
                pc(12, 1050, 20, 5),
                pc(13, 400, 999_999, 1_000_000),
            ]],
            1100,
            100.0,
            1.0,
        );
        // (50 + 20) ticks / 100 Hz / 1 s = 70 %.
        assert!((second[0].cpu_pct.unwrap() - 70.0).abs() < 1e-9);
        assert_eq!(second[0].ctx_switches_per_s, Some(15.0));
        assert_eq!(second[0].processes, 3);
        // t=2 s: pid 10 reused by a new process (different start) with big counters
        // started before the last read is impossible; started after: counts whole life.
        let third = t.update(
            &["g"],
            &[vec![pc(10, 1150, 30, 3), pc(12, 1050, 10, 1)]],
            1200,
            100.0,
            1.0,
        );
        // new pid 10: 30 ticks; pid 12 went backwards: 0.
        assert!((third[0].cpu_pct.unwrap() - 30.0).abs() < 1e-9);
        assert_eq!(third[0].ctx_switches_per_s, Some(3.0));
    }

    #[test]
    fn issue_11_the_tracker_forgets_processes_that_are_gone() {
        // Short-lived processes (Postfix's smtpd and cleanup, Dovecot's
        // logins) come and go: an hour of them leaves only those alive.
        let mut t = GroupTracker::new();
        for second in 0..3_600_u32 {
            let uptime = 1_000 + u64::from(second) * 100;
            let alive: Vec<_> = (0..20)
                .map(|n| pc(second * 20 + n, uptime - 50, 10, 1))
                .collect();
            t.update(
                &["postfix", "dovecot"],
                &[alive, vec![pc(1, 5, 9, 9)]],
                uptime,
                100.0,
                1.0,
            );
            assert_eq!(t.prev.len(), 21, "second {second}");
        }
    }
}
