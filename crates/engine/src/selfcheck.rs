//! The generator watching itself: its own CPU time and how late the tokio
//! scheduler wakes a timer. When either is high, the numbers describe the
//! client rather than the server, and the run is flagged client-bound.

use std::time::{Duration, Instant};

/// CPU time (user + system) this process has used so far, from `/proc/self/stat`.
pub fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
    // Fields 14 and 15 (utime, stime) are at indices 11 and 12 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // The kernel's USER_HZ is 100 on every Linux architecture peakhour runs on.
    Some(Duration::from_millis(ticks * 10))
}

/// CPU use between two readings, as a percentage of one core.
#[derive(Debug, Clone, Copy)]
pub struct CpuMeter {
    last_cpu: Duration,
    last_at: Instant,
}

impl CpuMeter {
    /// Starts measuring now.
    pub fn start() -> Self {
        CpuMeter {
            last_cpu: process_cpu_time().unwrap_or_default(),
            last_at: Instant::now(),
        }
    }

    /// Percent of one core used since the previous call (or the start).
    pub fn percent(&mut self) -> f64 {
        let cpu = process_cpu_time().unwrap_or(self.last_cpu);
        let now = Instant::now();
        let wall = now.duration_since(self.last_at).as_secs_f64();
        let used = cpu.saturating_sub(self.last_cpu).as_secs_f64();
        self.last_cpu = cpu;
        self.last_at = now;
        if wall > 0.0 { 100.0 * used / wall } else { 0.0 }
    }
}

/// How often the lag probe asks to be woken.
pub const LAG_PROBE_PERIOD: Duration = Duration::from_millis(10);

/// Sleeps one probe period and returns how much later than asked it woke.
pub(crate) async fn probe_lag() -> Duration {
    let asked = Instant::now() + LAG_PROBE_PERIOD;
    tokio::time::sleep_until(asked.into()).await;
    Instant::now().saturating_duration_since(asked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        let before = process_cpu_time().unwrap();
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(process_cpu_time().unwrap() > before);
    }
}
