use std::time::{Duration, Instant};

/// A reply or outcome together with how long the command took.
///
/// `elapsed` runs from the moment the driver began writing the command to the
/// moment its final reply was parsed. Queueing before the write (for example a
/// user that started late) is the engine's business, not the driver's: the
/// engine adds it when it times an action from its intended start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed<T> {
    /// What the command returned.
    pub value: T,
    /// Wall time from first byte written to final reply parsed.
    pub elapsed: Duration,
}

impl<T> Timed<T> {
    /// Applies `f` to the value and keeps the timing.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Timed<U> {
        Timed {
            value: f(self.value),
            elapsed: self.elapsed,
        }
    }
}

/// Starts when created; [`Stopwatch::finish`] wraps a value with the time since.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch(Instant);

impl Stopwatch {
    /// Starts timing now.
    pub fn start() -> Self {
        Self(Instant::now())
    }

    /// Time since the stopwatch was started.
    pub fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }

    /// Wraps `value` with the time since the stopwatch was started.
    pub fn finish<T>(&self, value: T) -> Timed<T> {
        Timed {
            value,
            elapsed: self.0.elapsed(),
        }
    }
}
