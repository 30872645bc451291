//! The live line of a mail run: an [`Observer`] that keeps the last few
//! seconds' actions and draws one line on a [`LiveSink`] (the binary's status
//! line on stderr) whenever the sink says one is due.

use std::time::Duration;

use peakhour_analysis::quantile::quantile_sorted;

use crate::core::{Observer, Phase, RunClock, SelfSample};
use crate::events::{Event, Outcome};
use crate::files::{FileEvent, OpOutcome};
use crate::reconcile::ReconcileProgress;

/// Where a live line goes: redrawn in place on a terminal, appended in a log.
pub trait LiveSink: Send {
    /// Whether a line is due, and the time since the last one. Real time,
    /// not the run's: the line is for a person watching.
    fn due(&mut self) -> Option<Duration>;
    /// Draws `line`.
    fn draw(&mut self, line: &str);
    /// Prints `line` on a line of its own, below the live line.
    fn note(&mut self, line: &str);
}

/// The one-line view of a run in progress: phase, users, actions/s, p95 of
/// the actions since the last line, errors, and the client's own CPU.
pub struct LiveLine<S> {
    sink: S,
    /// Latencies since the last line.
    window: Vec<Duration>,
    errors: u64,
    logged_on: u32,
}

impl<S: LiveSink> LiveLine<S> {
    /// A live line drawn on `sink`.
    pub fn new(sink: S) -> Self {
        LiveLine {
            sink,
            window: Vec::new(),
            errors: 0,
            logged_on: 0,
        }
    }

    /// The sink, to erase the line before the summary is printed.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The line for the actions since the last one, `elapsed` ago, and
    /// empties the window.
    fn text(&mut self, phase: Phase, offset: Duration, cpu: f64, elapsed: Duration) -> String {
        self.window.sort_unstable();
        let p95 = quantile_sorted(&self.window, 0.95).map_or("-".to_owned(), |d| {
            format!("{:.0} ms", d.as_secs_f64() * 1000.0)
        });
        let rate = self.window.len() as f64 / elapsed.as_secs_f64();
        let phase = phase_name(phase);
        self.window.clear();
        format!(
            "{:>6.0}s {phase:<6} users {:>5}  actions/s {rate:>7.1}  p95 {p95:>8}  errors {}  client CPU {cpu:.0}%",
            offset.as_secs_f64(),
            self.logged_on,
            self.errors
        )
    }
}

/// `logon`, `steady` or `drain`.
fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Logon => "logon",
        Phase::Steady => "steady",
        Phase::Drain => "drain",
    }
}

/// The reconciliation's progress, as the live line shows it.
pub fn reconciling_text(p: &ReconcileProgress) -> String {
    let round = if p.round > 1 {
        format!(" (round {})", p.round)
    } else {
        String::new()
    };
    format!(
        "reconciling deliveries: {} of {} waiting mailboxes searched{round}, {} of {} recipients seen",
        p.searched, p.mailboxes, p.delivered_recipients, p.submitted_recipients
    )
}

impl<S: LiveSink> Observer for LiveLine<S> {
    fn event(&mut self, _clock: &RunClock, _at: tokio::time::Instant, event: &Event) {
        match event {
            Event::Action {
                intended,
                finished,
                outcome,
                ..
            } => {
                let latency = finished.saturating_duration_since(*intended);
                match outcome {
                    Outcome::Ok => self.window.push(latency),
                    Outcome::Error(_) => {
                        self.window.push(latency);
                        self.errors += 1;
                    }
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
        let Some(elapsed) = self.sink.due() else {
            return;
        };
        let line = self.text(
            clock.phase(at),
            clock.offset(at),
            sample.cpu_percent,
            elapsed,
        );
        self.sink.draw(&line);
    }

    fn reconciling(&mut self, p: ReconcileProgress) {
        if self.sink.due().is_some() {
            self.sink.draw(&reconciling_text(&p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that is always due, a second after the last line.
    #[derive(Default)]
    struct Lines(Vec<String>);

    impl LiveSink for Lines {
        fn due(&mut self) -> Option<Duration> {
            Some(Duration::from_secs(1))
        }
        fn draw(&mut self, line: &str) {
            self.0.push(line.to_owned());
        }
        fn note(&mut self, line: &str) {
            self.0.push(line.to_owned());
        }
    }

    #[test]
    fn the_line_shows_the_rate_the_nearest_rank_p95_and_the_errors() {
        let mut live = LiveLine::new(Lines::default());
        live.logged_on = 3;
        live.errors = 1;
        live.window = (1..=20).map(Duration::from_millis).collect();
        let text = live.text(
            Phase::Steady,
            Duration::from_secs(42),
            12.4,
            Duration::from_secs(2),
        );
        assert_eq!(
            text,
            "    42s steady users     3  actions/s    10.0  p95    19 ms  errors 1  client CPU 12%"
        );
        assert!(live.window.is_empty(), "each line starts a new window");
        let idle = live.text(Phase::Drain, Duration::ZERO, 0.0, Duration::from_secs(1));
        assert!(idle.contains("p95        -"), "{idle}");
    }

    #[test]
    fn a_later_round_of_the_reconciliation_is_named() {
        let mut p = ReconcileProgress {
            round: 1,
            searched: 3,
            mailboxes: 10,
            delivered_recipients: 7,
            submitted_recipients: 9,
        };
        assert_eq!(
            reconciling_text(&p),
            "reconciling deliveries: 3 of 10 waiting mailboxes searched, 7 of 9 recipients seen"
        );
        p.round = 2;
        assert!(reconciling_text(&p).contains("searched (round 2), 7"));
    }
}

/// Once a second while a file run goes on: for a live line.
#[derive(Debug, Clone, Default)]
pub struct FileProgress {
    /// Since the run started.
    pub elapsed: Duration,
    /// `logon`, `steady` or `drain`: before, inside and after the measured window.
    pub phase: &'static str,
    /// Clients still running.
    pub clients_running: u32,
    /// Clients that failed.
    pub clients_failed: u32,
    /// Operations answered so far, and how many got another answer than expected.
    pub operations: u64,
    /// Of them, failed.
    pub errors: u64,
    /// Bytes moved in measured operations so far.
    pub bytes: u64,
    /// peakhour's CPU over the last second, % of one core.
    pub cpu_percent: f64,
}

/// The live line of a file run: [`FileProgress::live_text`] with the bytes
/// per second since the last line, drawn on a [`LiveSink`]; a client that
/// stops is noted on a line of its own.
pub struct FileLiveLine<S> {
    sink: S,
    progress: FileProgress,
    /// The bytes moved at the last line.
    bytes: u64,
}

impl<S: LiveSink> FileLiveLine<S> {
    /// A live line drawn on `sink`.
    pub fn new(sink: S) -> Self {
        Self {
            sink,
            progress: FileProgress::default(),
            bytes: 0,
        }
    }

    /// The sink, to erase the line before the summary is printed.
    pub fn sink(&self) -> &S {
        &self.sink
    }
}

impl<S: LiveSink> Observer for FileLiveLine<S> {
    fn started(&mut self, meta: &peakhour_analysis::RunMeta) {
        self.progress.clients_running = meta.users;
    }

    fn event(&mut self, _clock: &RunClock, _at: tokio::time::Instant, event: &Event) {
        let Event::File(event) = event else { return };
        let p = &mut self.progress;
        match &**event {
            FileEvent::Op(op) => {
                p.operations += 1;
                if op.outcome != OpOutcome::Ok {
                    p.errors += 1;
                }
                if op.measured {
                    p.bytes += op.bytes_read + op.bytes_written;
                }
            }
            FileEvent::Failed { client, error, .. } => {
                p.clients_failed += 1;
                self.sink.note(&format!("client {client} stopped: {error}"));
            }
            FileEvent::Ended { .. } => p.clients_running = p.clients_running.saturating_sub(1),
            _ => {}
        }
    }

    fn lag(&mut self, _clock: &RunClock, _at: tokio::time::Instant, _lag: Duration) {}

    fn tick(&mut self, clock: &RunClock, at: tokio::time::Instant, sample: SelfSample) {
        let p = &mut self.progress;
        p.elapsed = clock.offset(at);
        p.phase = phase_name(clock.phase(at));
        p.cpu_percent = sample.cpu_percent;
        let Some(since) = self.sink.due() else { return };
        let moved = p.bytes.saturating_sub(self.bytes);
        self.bytes = p.bytes;
        let rate = moved as f64 / since.as_secs_f64().max(0.001);
        self.sink.draw(&p.live_text(rate));
    }
}
