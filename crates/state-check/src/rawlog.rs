//! A bounded raw log of one session: the last lines it wrote (`C:`) and
//! read (`S:`), kept so that a violation can be shown with the exchange
//! around it (imaptest keeps a raw log per connection; issue 27 item 5).
//!
//! Memory stays bounded however long the session lives: at most
//! [`RAW_LOG_BYTES`] of text, each line cut at [`RAW_LOG_LINE`] bytes, and a
//! literal (a message body, a password sent as a literal) is never kept,
//! only its size. LOGIN and AUTHENTICATE arguments after the user name are
//! replaced by `<redacted>`: credentials must never reach a run's files.

use std::collections::VecDeque;

/// Text a session's raw log keeps at most: its last lines fit in it.
pub const RAW_LOG_BYTES: usize = 3 * 1024;

/// Bytes of one line kept at most; the rest is cut (`...`).
pub const RAW_LOG_LINE: usize = 160;

/// One direction of the stream, cut into lines.
#[derive(Debug, Default)]
struct Direction {
    /// The start of the line not yet complete (at most [`RAW_LOG_LINE`] bytes).
    partial: Vec<u8>,
    /// Bytes of the partial line beyond what is kept.
    cut: usize,
    /// Bytes of a literal still to come (not kept).
    literal: u64,
}

/// The last lines of one session, `C: ...` and `S: ...`.
#[derive(Debug, Default)]
pub struct RawLog {
    lines: VecDeque<String>,
    bytes: usize,
    client: Direction,
    server: Direction,
    /// The client is inside an AUTHENTICATE exchange: its lines are secrets.
    authenticating: bool,
}

impl RawLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes the session wrote, in any chunks.
    pub fn sent(&mut self, bytes: &[u8]) {
        self.feed(true, bytes);
    }

    /// Bytes the session read, in any chunks.
    pub fn received(&mut self, bytes: &[u8]) {
        self.feed(false, bytes);
    }

    /// A line of peakhour's own, such as the violation found here (`!! ...`).
    pub fn mark(&mut self, text: &str) {
        self.push(format!("!! {text}"));
    }

    /// The lines kept, oldest first, one per line.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.bytes + self.lines.len());
        for line in &self.lines {
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    fn feed(&mut self, from_client: bool, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let direction = if from_client {
                &mut self.client
            } else {
                &mut self.server
            };
            if direction.literal > 0 {
                let skip = usize::try_from(direction.literal)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                direction.literal -= skip as u64;
                bytes = &bytes[skip..];
                continue;
            }
            let (line, rest, complete) = match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => (&bytes[..=at], &bytes[at + 1..], true),
                None => (bytes, &[][..], false),
            };
            bytes = rest;
            let room = RAW_LOG_LINE.saturating_sub(direction.partial.len());
            let kept = line.len().min(room);
            direction.partial.extend_from_slice(&line[..kept]);
            direction.cut += line.len() - kept;
            if complete {
                let raw = std::mem::take(&mut direction.partial);
                let cut = std::mem::take(&mut direction.cut);
                let literal = literal_size(&raw, cut);
                direction.literal = literal.unwrap_or(0);
                self.line(from_client, &raw, cut, literal);
            }
        }
    }

    fn line(&mut self, from_client: bool, raw: &[u8], cut: usize, literal: Option<u64>) {
        let text = String::from_utf8_lossy(raw);
        let mut text = text.trim_end_matches(['\r', '\n']).to_owned();
        if from_client {
            text = self.redact(text);
        } else if text.starts_with(|c: char| c != '*' && c != '+') {
            // A tagged response ends any AUTHENTICATE exchange.
            self.authenticating = false;
        }
        if cut > 0 {
            text.push_str("...");
        }
        if let Some(size) = literal {
            text.push_str(&format!(" <{size} bytes of literal not kept>"));
        }
        let side = if from_client { "C" } else { "S" };
        self.push(format!("{side}: {text}"));
    }

    /// The line without credentials: LOGIN keeps its user name, AUTHENTICATE
    /// its mechanism, and every line of an AUTHENTICATE exchange is hidden.
    fn redact(&mut self, line: String) -> String {
        if self.authenticating {
            return "<redacted>".to_owned();
        }
        let words: Vec<&str> = line.splitn(4, ' ').collect();
        let command = words.get(1).map(|w| w.to_ascii_uppercase());
        match command.as_deref() {
            Some("LOGIN") if words.len() > 3 => {
                format!("{} LOGIN {} <redacted>", words[0], words[2])
            }
            Some("AUTHENTICATE") => {
                self.authenticating = true;
                let mechanism = words.get(2).copied().unwrap_or("");
                format!("{} AUTHENTICATE {mechanism} <redacted>", words[0])
            }
            _ => line,
        }
    }

    fn push(&mut self, line: String) {
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.bytes > RAW_LOG_BYTES {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }
}

/// The size of the literal a line announces at its end (`{42}`, `{42+}`),
/// if it does; a line cut short announces none that can be read.
fn literal_size(line: &[u8], cut: usize) -> Option<u64> {
    if cut > 0 {
        return None;
    }
    let text = std::str::from_utf8(line)
        .ok()?
        .trim_end_matches(['\r', '\n']);
    let inner = text.strip_suffix('}')?;
    let open = inner.rfind('{')?;
    inner[open + 1..].trim_end_matches('+').parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_27_item_5_the_raw_log_keeps_the_last_lines_without_literals_or_passwords() {
        let mut log = RawLog::new();
        log.sent(b"A1 LOGIN user1@bench.test s3cret\r\n");
        log.received(b"A1 OK done\r\nA2");
        log.received(b" OK more\r\n* 1 FETCH (UID 4 BODY[] {11}\r\nhello");
        log.received(b" world)\r\n");
        log.sent(b"A3 AUTHENTICATE PLAIN\r\nAHVzZXIAczNjcmV0\r\n");
        log.mark("uid_order: ...");
        let text = log.text();
        assert!(!text.contains("s3cret") && !text.contains("AHVz"), "{text}");
        assert!(!text.contains("hello"), "{text}");
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "C: A1 LOGIN user1@bench.test <redacted>",
                "S: A1 OK done",
                "S: A2 OK more",
                "S: * 1 FETCH (UID 4 BODY[] {11} <11 bytes of literal not kept>",
                "S: )",
                "C: A3 AUTHENTICATE PLAIN <redacted>",
                "C: <redacted>",
                "!! uid_order: ...",
            ]
        );
    }

    #[test]
    fn issue_27_item_5_the_raw_log_stays_within_its_bounds() {
        let mut log = RawLog::new();
        let long = format!("* 1 FETCH ({})\r\n", "x".repeat(10_000));
        for n in 0..1000 {
            log.received(format!("* {n} EXISTS\r\n").as_bytes());
            log.received(long.as_bytes());
        }
        let text = log.text();
        assert!(
            text.len() <= RAW_LOG_BYTES + log.lines.len(),
            "{}",
            text.len()
        );
        assert!(text.lines().all(|l| l.len() <= RAW_LOG_LINE + 8), "{text}");
        assert!(text.contains("* 999 EXISTS"), "the newest lines stay");
        assert!(!text.contains("* 1 EXISTS\n"), "the oldest go");
    }
}
