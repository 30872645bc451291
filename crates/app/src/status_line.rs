//! The live status line on stderr, for `peakhour run` and `peakhour monitor`:
//! redrawn in place every second on a terminal, appended every 10 s in a log.
//! Real time, not the run's: the line is for a person watching. It is the
//! [`LiveSink`] the engine's [`LiveLine`](peakhour_engine::LiveLine) draws on.

use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use tokio::time::Instant;

use peakhour_engine::LiveSink;

/// How early a line may come and still count as due, so that a source ticking
/// at the same period as the line is not skipped every other time.
const EARLY: Duration = Duration::from_millis(10);

/// One status line on stderr and when it was last drawn.
#[derive(Debug)]
pub struct StatusLine {
    terminal: bool,
    last_draw: Option<Instant>,
}

impl Default for StatusLine {
    fn default() -> Self {
        Self::new()
    }
}

impl StatusLine {
    /// A line on stderr, redrawn in place if stderr is a terminal.
    pub fn new() -> Self {
        Self::with_terminal(std::io::stderr().is_terminal())
    }

    /// A line that is drawn in place (`terminal`) or appended as log lines.
    pub fn with_terminal(terminal: bool) -> Self {
        Self {
            terminal,
            last_draw: None,
        }
    }

    /// How often a line is drawn: every second on a terminal, every 10 s in a log.
    pub fn period(&self) -> Duration {
        Duration::from_secs(if self.terminal { 1 } else { 10 })
    }

    /// Whether a line is due, and the time since the last one (a full period
    /// for the first). A line 10 ms early still counts as due.
    pub fn due(&mut self) -> Option<Duration> {
        let every = self.period();
        let now = Instant::now();
        let elapsed = self.last_draw.map_or(every, |last| now - last);
        if elapsed + EARLY < every {
            return None;
        }
        self.last_draw = Some(now);
        Some(elapsed)
    }

    /// Draws `line`: in place on a terminal, as a new line in a log.
    pub fn write(&self, line: &str) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Erases the line before the command's own output.
    pub fn clear(&self) {
        if self.terminal {
            eprint!("\r\x1b[2K");
        }
    }
}

/// The live line of a run draws on the status line.
impl LiveSink for StatusLine {
    fn due(&mut self) -> Option<Duration> {
        StatusLine::due(self)
    }

    fn draw(&mut self, line: &str) {
        self.write(line);
    }

    fn note(&mut self, line: &str) {
        self.clear();
        eprintln!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_first_line_is_due_at_once_with_a_full_period() {
        let mut line = StatusLine::with_terminal(true);
        assert_eq!(line.due(), Some(Duration::from_secs(1)));
        // Drawn just now: not again before the period is over.
        assert_eq!(line.due(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_terminal_line_comes_every_second_and_a_log_line_every_ten() {
        let mut terminal = StatusLine::with_terminal(true);
        let mut log = StatusLine::with_terminal(false);
        terminal.due();
        log.due();
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(terminal.due(), Some(Duration::from_millis(1500)));
        assert_eq!(log.due(), None);
        tokio::time::advance(Duration::from_millis(8500)).await;
        assert_eq!(log.due(), Some(Duration::from_secs(10)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_line_a_little_early_still_counts_so_a_source_at_the_same_period_is_never_skipped() {
        let mut line = StatusLine::with_terminal(true);
        line.due();
        tokio::time::advance(Duration::from_millis(995)).await;
        assert_eq!(line.due(), Some(Duration::from_millis(995)));
        tokio::time::advance(Duration::from_millis(980)).await;
        assert_eq!(line.due(), None, "20 ms early is too early");
    }
}
