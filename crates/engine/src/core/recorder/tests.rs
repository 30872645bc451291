use super::*;

const SECOND: Duration = Duration::from_secs(1);

/// The steady intervals of a run with a 5 s ramp-up and a 40 s steady
/// phase, cut in 10 s intervals, whose events arrive once a second
/// shifted by `jitter` (as a shared machine delays them).
fn steady_intervals(jitter: Duration) -> Vec<(Duration, Duration)> {
    let t0 = Instant::now();
    let clock = RunClock {
        t0,
        steady_start: t0 + 5 * SECOND,
        steady_end: t0 + 45 * SECOND,
    };
    let mut recorder = RunRecorder::new(10 * SECOND).unwrap();
    let sample = SelfSample {
        cpu_percent: 1.0,
        max_lag: Duration::ZERO,
    };
    for second in 0..50 {
        recorder.tick(&clock, t0 + second * SECOND + jitter, sample);
    }
    recorder
        .closed_intervals()
        .iter()
        .filter(|i| i.phase == RecordedPhase::Steady)
        .map(|i| (i.start, i.length))
        .collect()
}

#[test]
fn issue_31_item_7_runs_of_the_same_length_have_the_same_intervals_whatever_the_jitter() {
    let grid: Vec<_> = (0..4)
        .map(|i| ((5 + 10 * i) * SECOND, 10 * SECOND))
        .collect();
    for jitter_us in [0, 1_859, 3_217, 250_000, 999_000] {
        assert_eq!(
            steady_intervals(Duration::from_micros(jitter_us)),
            grid,
            "events {jitter_us} us after each second"
        );
    }
}

use crate::files::OpEvent;

/// How the measured window is found, as a file run sets it up.
enum Window {
    Iterations {
        waiting: BTreeSet<u32>,
    },
    Clock {
        steady_start: Instant,
        steady_end: Instant,
    },
}

/// A recorder fed as a file run feeds it.
struct FileRec {
    r: RunRecorder,
    clock: RunClock,
}

trait AsEvent {
    fn as_event(&self) -> Event;
}
impl AsEvent for Event {
    fn as_event(&self) -> Event {
        self.clone()
    }
}
impl AsEvent for FileEvent {
    fn as_event(&self) -> Event {
        Event::File(Box::new(self.clone()))
    }
}

impl FileRec {
    fn new(t0: Instant, interval: Duration, window: Window) -> Result<Self, AnalysisError> {
        let mut r = RunRecorder::new(interval)?;
        let far = t0 + MAX_PHASE;
        let clock = match window {
            Window::Iterations { waiting } => {
                r.measured_by_clients(waiting);
                RunClock {
                    t0,
                    steady_start: far,
                    steady_end: far,
                }
            }
            Window::Clock {
                steady_start,
                steady_end,
            } => RunClock {
                t0,
                steady_start,
                steady_end,
            },
        };
        Ok(FileRec { r, clock })
    }
    fn event(&mut self, at: Instant, event: &impl AsEvent) {
        self.r.event(&self.clock, at, &event.as_event());
    }
    fn phase(&self) -> RecordedPhase {
        self.r.recorder.phase()
    }
    fn finish(
        mut self,
        at: Instant,
    ) -> Result<(Vec<IntervalRecord>, Duration, Duration), AnalysisError> {
        self.r.close_at(&self.clock, at);
        let (_, steady_at, drain_at) = self.r.phase_offsets();
        Ok((self.r.intervals()?, steady_at, drain_at))
    }
}

fn op(t0: Instant, client: u32, at_ms: u64, measured: bool, bytes: u64) -> Event {
    let at = t0 + Duration::from_millis(at_ms);
    Event::File(Box::new(FileEvent::Op(OpEvent {
        client,
        action: "file.read",
        measured,
        intended: at - Duration::from_millis(4),
        started: at - Duration::from_millis(3),
        finished: at,
        outcome: OpOutcome::Ok,
        bytes_read: bytes,
        bytes_written: 0,
    })))
}

fn steady_totals(intervals: &[IntervalRecord]) -> (u64, u64) {
    let steady = intervals
        .iter()
        .filter(|i| i.phase == RecordedPhase::Steady);
    steady.fold((0, 0), |(ops, bytes), i| {
        let n = i
            .actions
            .get("file.read")
            .map_or(0, |a| a.latency.decode().unwrap().len());
        (
            ops + n,
            bytes + i.counters.get(BYTES_READ).copied().unwrap_or(0),
        )
    })
}

/// The window opens when the last client starts measuring and closes when the first
/// stops; unmeasured operations are only counted, and measured ones outside the
/// window stay out of the steady intervals.
#[test]
fn the_measured_window_is_when_every_client_measures() {
    let t0 = Instant::now();
    let ms = |m: u64| t0 + Duration::from_millis(m);
    let window = Window::Iterations {
        waiting: [1, 2].into(),
    };
    let mut r = FileRec::new(t0, Duration::from_millis(500), window).unwrap();
    r.event(ms(100), &op(t0, 1, 100, false, 10));
    r.event(
        ms(1000),
        &FileEvent::Measuring {
            client: 1,
            at: ms(1000),
        },
    );
    r.event(ms(1500), &op(t0, 1, 1500, true, 100));
    assert_eq!(r.phase(), RecordedPhase::Logon);
    r.event(
        ms(2000),
        &FileEvent::Measuring {
            client: 2,
            at: ms(2000),
        },
    );
    assert_eq!(r.phase(), RecordedPhase::Steady);
    r.event(ms(2500), &op(t0, 2, 2500, true, 1000));
    r.event(ms(2600), &op(t0, 1, 2600, true, 1000));
    r.event(
        ms(3000),
        &FileEvent::DoneMeasuring {
            client: 1,
            at: ms(3000),
        },
    );
    assert_eq!(r.phase(), RecordedPhase::Drain);
    r.event(ms(3200), &op(t0, 2, 3200, true, 100));
    let (intervals, steady_at, drain_at) = r.finish(ms(4000)).unwrap();
    assert_eq!(
        (steady_at, drain_at),
        (Duration::from_secs(2), Duration::from_secs(3))
    );
    assert_eq!(steady_totals(&intervals), (2, 2000));
    let unmeasured: u64 = intervals
        .iter()
        .filter_map(|i| i.counters.get(UNMEASURED_OPERATIONS))
        .sum();
    assert_eq!(unmeasured, 1);
}

/// A client that fails before measuring does not hold the window shut.
#[test]
fn a_failed_client_does_not_hold_the_window_shut() {
    let t0 = Instant::now();
    let ms = |m: u64| t0 + Duration::from_millis(m);
    let window = Window::Iterations {
        waiting: [1, 2].into(),
    };
    let mut r = FileRec::new(t0, Duration::from_secs(1), window).unwrap();
    r.event(
        ms(500),
        &FileEvent::Measuring {
            client: 1,
            at: ms(500),
        },
    );
    let failed = FileEvent::Failed {
        client: 2,
        error: "no connection".into(),
        at: ms(700),
    };
    r.event(ms(700), &failed);
    assert_eq!(r.phase(), RecordedPhase::Steady);
}

/// A replay's window is the clock's.
#[test]
fn a_replay_window_follows_the_clock() {
    let t0 = Instant::now();
    let ms = |m: u64| t0 + Duration::from_millis(m);
    let window = Window::Clock {
        steady_start: ms(1000),
        steady_end: ms(3000),
    };
    let mut r = FileRec::new(t0, Duration::from_secs(1), window).unwrap();
    r.event(ms(500), &op(t0, 1, 500, true, 7));
    r.event(ms(1500), &op(t0, 1, 1500, true, 70));
    r.event(ms(3500), &op(t0, 1, 3500, true, 700));
    let (intervals, steady_at, drain_at) = r.finish(ms(4000)).unwrap();
    assert_eq!(
        (steady_at, drain_at),
        (Duration::from_secs(1), Duration::from_secs(3))
    );
    assert_eq!(steady_totals(&intervals), (1, 70));
}
