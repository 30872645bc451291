//! The monitor's own cost: CPU time spent producing each sample.
//!
//! Measured with the calling thread's CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID`) around every poll of the sampling future, so
//! an async scrape that moves between runtime threads is still charged
//! correctly, and time spent waiting (for the network, for the next tick)
//! costs nothing, as it should.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use nix::time::{ClockId, clock_gettime};

/// CPU time consumed so far by the calling thread.
pub fn thread_cpu_time() -> Duration {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

/// CPU time consumed so far by the whole process (all threads).
pub fn process_cpu_time() -> Duration {
    clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

/// Runs `f` and returns its result with the thread CPU time it took.
pub fn cpu_timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = thread_cpu_time();
    let out = f();
    (out, thread_cpu_time().saturating_sub(start))
}

/// A future that adds up the thread CPU time of each of its polls.
#[derive(Debug)]
pub(crate) struct CpuTimed<F> {
    inner: F,
    spent: Duration,
}

impl<F> CpuTimed<F> {
    pub(crate) fn new(inner: F) -> Self {
        Self {
            inner,
            spent: Duration::ZERO,
        }
    }
}

impl<F: Future + Unpin> Future for CpuTimed<F> {
    type Output = (F::Output, Duration);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let start = thread_cpu_time();
        let poll = Pin::new(&mut self.inner).poll(cx);
        let spent = thread_cpu_time().saturating_sub(start);
        self.spent += spent;
        poll.map(|out| (out, self.spent))
    }
}
