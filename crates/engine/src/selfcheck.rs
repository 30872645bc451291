//! The generator watching itself: its own CPU time and how long the tokio
//! scheduler keeps a woken task waiting. When either is high, the numbers describe the
//! client rather than the server, and the run is flagged client-bound.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

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

/// How often the lag probe takes a reading.
///
/// 10 ms is the `client_bound` limit on the lag's p99, so any one stall long
/// enough to pass it alone is seen. Each reading wakes the clock thread and
/// the runtime: on an idle runtime about 65 µs of CPU (6-7 ms a second, most
/// of it the runtime's own wake from `epoll_wait`), on a runtime already
/// awake for its users next to nothing. A timerfd in the runtime's poller
/// instead of the thread saved only a fifth and put the timer interrupt's
/// latency in every reading; a longer period would miss short stalls
/// (docs/PERFORMANCE.md, "Fourth round": kept as it is).
pub const LAG_PROBE_PERIOD: Duration = Duration::from_millis(10);

/// Scheduling lag: how long a task of the runtime, once woken, waits before
/// it runs.
///
/// A plain thread, which load on the runtime cannot hold up, reads the clock
/// every [`LAG_PROBE_PERIOD`] and wakes the probe's task with that reading;
/// the task records how long after it that it ran. That is the delay every
/// woken user task sees: runtime threads busy with other tasks, or kept off
/// the CPU by other processes. It leaves out the timer wheel's resolution: a
/// tokio sleep ends on a whole millisecond tick, 0-2 ms after its deadline
/// (1.2 ms at the median) even on an idle machine, however lightly the
/// runtime is loaded. Users' actions are timed from their intended start, so
/// that granularity is in their latencies anyway, and late starts are counted.
pub(crate) struct LagProbe {
    readings: mpsc::Receiver<Instant>,
}

impl LagProbe {
    /// Starts the clock thread; it ends by itself once the probe is dropped.
    /// If no thread can be started, the probe never yields a reading.
    pub(crate) fn start() -> Self {
        // A few readings queue up while the probe's task is held up; the
        // oldest one then shows the whole delay.
        let (sender, readings) = mpsc::channel(16);
        let clock = move || {
            loop {
                std::thread::sleep(LAG_PROBE_PERIOD);
                if let Err(TrySendError::Closed(_)) = sender.try_send(Instant::now()) {
                    return;
                }
            }
        };
        let _ = std::thread::Builder::new()
            .name("peakhour-lag-clock".into())
            .spawn(clock);
        LagProbe { readings }
    }

    /// Waits for the next reading and returns how late this task ran after
    /// it; `None` when there is no clock thread. Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<Duration> {
        let reading = self.readings.recv().await?;
        Some(reading.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_lag_probe_gets_readings_from_its_clock_thread() {
        let mut probe = LagProbe::start();
        assert!(probe.next().await.is_some());
        assert!(probe.next().await.is_some());
    }

    #[tokio::test]
    async fn a_held_up_task_reports_at_least_the_time_it_was_held_up() {
        let (sender, readings) = mpsc::channel(16);
        let mut probe = LagProbe { readings };
        sender.try_send(Instant::now()).unwrap();
        // The runtime (single-threaded here) is blocked after the reading.
        std::thread::sleep(Duration::from_millis(20));
        assert!(probe.next().await.unwrap() >= Duration::from_millis(20));
        drop(sender);
        assert_eq!(probe.next().await, None, "no clock, no reading");
    }

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
