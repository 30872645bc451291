//! The live line of `peakhour run`: an [`Observer`] the binary plugs into
//! the engine, drawing one line on stderr while the run goes on.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use peakhour_engine::{Event, Observer, Outcome, Phase, ReconcileProgress, RunClock, SelfSample};
use peakhour_workload::ActionKind;

/// The one-line view of a run in progress: phase, users, actions/s, p95 of
/// the last few seconds, errors, and the client's own CPU.
pub(super) struct LiveLine {
    window: Vec<(Duration, bool)>,
    errors: u64,
    logged_on: u32,
    last_draw: Option<Instant>,
    terminal: bool,
    actions: BTreeMap<ActionKind, u64>,
}

impl LiveLine {
    pub(super) fn new(actions: Vec<ActionKind>) -> Self {
        LiveLine {
            window: Vec::new(),
            errors: 0,
            logged_on: 0,
            last_draw: None,
            terminal: std::io::stderr().is_terminal(),
            actions: actions.into_iter().map(|k| (k, 0)).collect(),
        }
    }

    fn action(&mut self, kind: ActionKind, latency: Duration, error: bool) {
        self.window.push((latency, error));
        *self.actions.entry(kind).or_default() += 1;
        if error {
            self.errors += 1;
        }
    }

    /// Whether a line is due, and the time since the last one: on a
    /// terminal every second, in a log every 10 s. Real time, not the run's:
    /// the line is for a person watching.
    fn due(&mut self) -> Option<Duration> {
        let every = if self.terminal {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(10)
        };
        let now = Instant::now();
        let elapsed = self.last_draw.map_or(every, |last| now - last);
        if elapsed < every {
            return None;
        }
        self.last_draw = Some(now);
        Some(elapsed)
    }

    fn draw(&mut self, phase: Phase, offset: Duration, cpu: f64) {
        let Some(elapsed) = self.due() else { return };
        let mut latencies: Vec<Duration> = self.window.iter().map(|(l, _)| *l).collect();
        latencies.sort_unstable();
        let p95 = latencies
            .get((latencies.len() * 95).div_ceil(100).saturating_sub(1))
            .map_or("-".to_owned(), |d| {
                format!("{:.0} ms", d.as_secs_f64() * 1000.0)
            });
        let rate = self.window.len() as f64 / elapsed.as_secs_f64();
        let phase = match phase {
            Phase::Logon => "logon",
            Phase::Steady => "steady",
            Phase::Drain => "drain",
        };
        let line = format!(
            "{:>6.0}s {phase:<6} users {:>5}  actions/s {rate:>7.1}  p95 {p95:>8}  errors {}  client CPU {cpu:.0}%",
            offset.as_secs_f64(),
            self.logged_on,
            self.errors
        );
        self.window.clear();
        self.write(&line);
    }

    fn write(&self, line: &str) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Erases the line before the summary is printed.
    pub(super) fn clear(&self) {
        if self.terminal {
            eprint!("\r\x1b[2K");
        }
    }
}

impl Observer for LiveLine {
    fn event(&mut self, _clock: &RunClock, _at: tokio::time::Instant, event: &Event) {
        match event {
            Event::Action {
                kind,
                intended,
                finished,
                outcome,
                ..
            } => {
                let latency = finished.saturating_duration_since(*intended);
                match outcome {
                    Outcome::Ok => self.action(*kind, latency, false),
                    Outcome::Error(_) => self.action(*kind, latency, true),
                    Outcome::Skipped(_) => {}
                }
            }
            Event::LoggedOn(change) => {
                self.logged_on = self.logged_on.saturating_add_signed(*change);
            }
            _ => {}
        }
    }

    fn lag(&mut self, _clock: &RunClock, _at: tokio::time::Instant, _lag: Duration) {}

    fn tick(&mut self, clock: &RunClock, at: tokio::time::Instant, sample: SelfSample) {
        self.draw(clock.phase(at), clock.offset(at), sample.cpu_percent);
    }

    fn reconciling(&mut self, p: ReconcileProgress) {
        if self.due().is_none() {
            return;
        }
        let round = if p.round > 1 {
            format!(" (round {})", p.round)
        } else {
            String::new()
        };
        self.write(&format!(
            "reconciling deliveries: {} of {} waiting mailboxes searched{round}, {} of {} recipients seen",
            p.searched, p.mailboxes, p.delivered_recipients, p.submitted_recipients
        ));
    }
}
