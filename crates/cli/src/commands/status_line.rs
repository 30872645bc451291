//! The live status line on stderr, for `peakhour run` and `peakhour monitor`:
//! redrawn in place every second on a terminal, appended every 10 s in a log.
//! Real time, not the run's: the line is for a person watching.

use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

/// One status line and when it was last drawn.
pub(crate) struct StatusLine {
    terminal: bool,
    last_draw: Option<Instant>,
}

impl StatusLine {
    pub(crate) fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            last_draw: None,
        }
    }

    /// Whether a line is due, and the time since the last one (a full period
    /// for the first). A line 10 ms early still counts as due, so that a
    /// source ticking at the same period is not skipped every other time.
    pub(crate) fn due(&mut self) -> Option<Duration> {
        let every = Duration::from_secs(if self.terminal { 1 } else { 10 });
        let now = Instant::now();
        let elapsed = self.last_draw.map_or(every, |last| now - last);
        if elapsed + Duration::from_millis(10) < every {
            return None;
        }
        self.last_draw = Some(now);
        Some(elapsed)
    }

    /// Draws `line`: in place on a terminal, as a new line in a log.
    pub(crate) fn write(&self, line: &str) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Erases the line before the command's own output.
    pub(crate) fn clear(&self) {
        if self.terminal {
            eprint!("\r\x1b[2K");
        }
    }
}

/// The live line of a mail run draws on the status line.
impl peakhour_engine::LiveSink for StatusLine {
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
