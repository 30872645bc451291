//! The live line of a file run: what a person watching sees while the clients work.

use crate::files::FileEvent;
use crate::files::run::{FileObserver, FileProgress};
use crate::live::LiveSink;

/// The live line of a file run: [`FileProgress::live_text`] with the bytes
/// per second since the last line, drawn on a [`LiveSink`]; a client that
/// stops is noted on a line of its own.
pub struct FileLiveLine<S> {
    sink: S,
    /// The bytes moved at the last line.
    bytes: u64,
}

impl<S: LiveSink> FileLiveLine<S> {
    /// A live line drawn on `sink`.
    pub fn new(sink: S) -> Self {
        Self { sink, bytes: 0 }
    }

    /// The sink, to erase the line before the summary is printed.
    pub fn sink(&self) -> &S {
        &self.sink
    }
}

impl<S: LiveSink> FileObserver for FileLiveLine<S> {
    fn event(&mut self, event: &FileEvent) {
        if let FileEvent::Failed { client, error, .. } = event {
            self.sink.note(&format!("client {client} stopped: {error}"));
        }
    }

    fn tick(&mut self, p: &FileProgress) {
        let Some(since) = self.sink.due() else { return };
        let moved = p.bytes.saturating_sub(self.bytes);
        self.bytes = p.bytes;
        let rate = moved as f64 / since.as_secs_f64().max(0.001);
        self.sink.draw(&p.live_text(rate));
    }
}
