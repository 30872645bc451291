//! Splits the server's byte stream into whole responses before anything is
//! parsed, so the parser only ever sees complete messages and every size limit
//! is enforced while the bytes arrive, not after they were buffered.
//!
//! imap-codec ships a `Fragmentizer` that does much the same; this one exists
//! because a load generator talks to servers it does not trust with thousands
//! of idle connections: it must refuse a 4 GB literal the moment it is
//! announced, stop a line that never ends at a fixed length, and give memory
//! back after a big response, which the `Fragmentizer` does not offer.

use std::cell::RefCell;

use crate::error::ImapError;

/// Emptied response buffers kept for the next response on this thread, and
/// the largest one kept. A connection gives its buffer back as soon as it
/// has framed everything in it (an idle connection holds none, see
/// [`Framer::return_buffer`]); taking the next one from here instead of
/// `malloc` saves an allocation, a free and, for buffers over a few KiB,
/// often a `malloc_consolidate` per response. The spares are bounded:
/// at most 16 x 128 KiB per thread, whatever the number of connections.
const SPARE_BUFFERS: usize = 16;
const SPARE_BUFFER_MAX: usize = 128 * 1024;

thread_local! {
    static SPARES: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer, a spare one if this thread has one.
fn spare_buffer() -> Vec<u8> {
    SPARES.with_borrow_mut(Vec::pop).unwrap_or_default()
}

/// Keeps `buffer` for the next response on this thread, if it is worth
/// keeping and there is room.
fn keep_spare(mut buffer: Vec<u8>) {
    if buffer.capacity() == 0 || buffer.capacity() > SPARE_BUFFER_MAX {
        return;
    }
    buffer.clear();
    SPARES.with_borrow_mut(|spares| {
        if spares.len() < SPARE_BUFFERS {
            spares.push(buffer);
        }
    });
}

/// Size limits that protect the client from a broken or hostile server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest line, CRLF included (a long SEARCH result is one line).
    pub max_line: usize,
    /// Largest literal a server may announce (one message body in a FETCH).
    pub max_literal: u64,
    /// Largest whole response: all its lines and literals together.
    pub max_response: u64,
    /// Most bytes of untagged data one command may collect before its
    /// completion (every response the server sends while it is in flight),
    /// so that a server sending endless `* n FETCH` responses cannot grow one
    /// command's answer without bound.
    pub max_collected_bytes: u64,
    /// Most untagged responses one command may collect: small responses
    /// cost more memory than their bytes once parsed.
    pub max_collected_responses: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_line: 1024 * 1024,
            max_literal: 64 * 1024 * 1024,
            max_response: 80 * 1024 * 1024,
            max_collected_bytes: 256 * 1024 * 1024,
            max_collected_responses: 1_000_000,
        }
    }
}

/// Where the only literal of a framed message lies in the buffer
/// [`Framer::take_buffer`] lends: from its announcement's `{` to the end of
/// its data. The core decodes such a message with the literal's data left
/// out (see `ClientCore::process`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LiteralSpan {
    /// The announcement's `{`.
    pub(crate) open: usize,
    /// The first byte of the data, after the announcement's CRLF.
    pub(crate) data_start: usize,
    /// One past the last byte of the data.
    pub(crate) data_end: usize,
}

/// A complete message found by [`Framer::next_message`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Framed {
    /// Its bytes in the buffer [`Framer::take_buffer`] lends.
    pub(crate) range: std::ops::Range<usize>,
    /// Its literal, when it holds exactly one.
    pub(crate) only_literal: Option<LiteralSpan>,
}

#[derive(Debug, Default)]
pub(crate) struct Framer {
    buf: Vec<u8>,
    /// Where the message being framed starts in `buf`.
    message_start: usize,
    /// Where the current line starts.
    line_start: usize,
    /// How far the current line has been searched for LF already, so that
    /// byte-at-a-time input is not rescanned from the line start each time.
    scanned: usize,
    /// Set while the bytes up to this position belong to a literal.
    literal_end: Option<usize>,
    /// Literals announced so far in the message being framed, and the last
    /// of them.
    literals: u32,
    last_literal: Option<LiteralSpan>,
    limits: Limits,
}

impl Framer {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    pub(crate) fn enqueue(&mut self, bytes: &[u8]) {
        if self.message_start > 0 && self.message_start * 2 >= self.buf.len() {
            // Drop what earlier messages used before growing the buffer.
            self.buf.drain(..self.message_start);
            self.line_start -= self.message_start;
            self.scanned -= self.message_start;
            self.literal_end = self.literal_end.map(|end| end - self.message_start);
            let shift = self.message_start;
            self.last_literal = self.last_literal.map(|span| LiteralSpan {
                open: span.open - shift,
                data_start: span.data_start - shift,
                data_end: span.data_end - shift,
            });
            self.message_start = 0;
        }
        if self.buf.capacity() == 0 {
            self.buf = spare_buffer();
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes received but not yet returned as part of a whole message.
    pub(crate) fn buffered(&self) -> &[u8] {
        &self.buf[self.message_start..]
    }

    /// Forgets everything buffered and shrinks the buffer.
    pub(crate) fn clear(&mut self) {
        *self = Self::new(self.limits);
    }

    /// Finds the next complete response and returns where it is in the
    /// buffer [`Framer::take_buffer`] lends; `None` means more input is needed.
    pub(crate) fn next_message(&mut self) -> Result<Option<Framed>, ImapError> {
        loop {
            if let Some(end) = self.literal_end {
                if self.buf.len() < end {
                    return Ok(None);
                }
                self.literal_end = None;
                self.line_start = end;
                self.scanned = end;
            }
            let Some(offset) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buf.len();
                if self.buf.len() - self.line_start > self.limits.max_line {
                    return Err(self.limit_error("line too long"));
                }
                return Ok(None);
            };
            let line_end = self.scanned + offset + 1;
            if line_end - self.line_start > self.limits.max_line {
                return Err(self.limit_error("line too long"));
            }
            match literal_announcement(&self.buf[self.line_start..line_end]) {
                Some((length, open)) => {
                    if length > self.limits.max_literal {
                        return Err(self.limit_error("literal larger than the limit"));
                    }
                    let end = line_end as u64 + length;
                    if end - self.message_start as u64 > self.limits.max_response {
                        return Err(self.limit_error("response larger than the limit"));
                    }
                    // Fits in usize: bounded by max_response above.
                    let end = end as usize;
                    self.literal_end = Some(end);
                    self.literals = self.literals.saturating_add(1);
                    self.last_literal = Some(LiteralSpan {
                        open: self.line_start + open,
                        data_start: line_end,
                        data_end: end,
                    });
                }
                None => {
                    let message = Framed {
                        range: self.message_start..line_end,
                        only_literal: self.last_literal.take().filter(|_| self.literals == 1),
                    };
                    self.literals = 0;
                    self.message_start = line_end;
                    self.line_start = line_end;
                    self.scanned = line_end;
                    return Ok(Some(message));
                }
            }
        }
    }

    /// Lends the buffer holding the message `next_message` returned, so the
    /// decoded response can borrow it while the caller updates its own state.
    pub(crate) fn take_buffer(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Takes the buffer back, and frees it if nothing else is waiting.
    ///
    /// An idle connection holds no buffer at all (an emptied one goes back
    /// to the thread's few spares). Shrinking it to a few KiB
    /// instead was a high-water mark: every connection that had once read a
    /// response of that size kept it, so a soak's memory grew for an hour as
    /// more of its thousands of users met one (issue 11). One allocation per
    /// response costs less than that.
    pub(crate) fn return_buffer(&mut self, buf: Vec<u8>) {
        self.buf = buf;
        if self.message_start == self.buf.len() {
            keep_spare(std::mem::take(&mut self.buf));
            self.message_start = 0;
            self.line_start = 0;
            self.scanned = 0;
        }
    }

    fn limit_error(&self, reason: &'static str) -> ImapError {
        ImapError::malformed(reason, &self.buf[self.line_start..])
    }
}

/// The length of the literal a line announces (`... {123}\r\n`), if any,
/// and where in the line its `{` is.
///
/// Servers only send synchronizing literals, but `{123+}` is accepted too: the
/// bytes that follow are a literal either way and must not be read as lines.
fn literal_announcement(line: &[u8]) -> Option<(u64, usize)> {
    let line = line.strip_suffix(b"\n")?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let inner = line.strip_suffix(b"}")?;
    let open = inner.iter().rposition(|&b| b == b'{')?;
    let digits = &inner[open + 1..];
    let digits = digits.strip_suffix(b"+").unwrap_or(digits);
    // Twenty digits overflow u64; anything longer is absurd anyway and is
    // reported as too large rather than silently wrapped.
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits.len() > 19 {
        return Some((u64::MAX, open));
    }
    let length = digits.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })?;
    Some((length, open))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    fn frame_all(framer: &mut Framer) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(framed) = framer.next_message().unwrap() {
            let buf = framer.take_buffer();
            out.push(buf[framed.range].to_vec());
            framer.return_buffer(buf);
        }
        out
    }

    #[test]
    fn splits_lines_and_keeps_literals_whole() {
        let mut framer = Framer::new(Limits::default());
        framer.enqueue(b"* 1 EXISTS\r\n* 1 FETCH (BODY[] {5}\r\na\r\nb\n)\r\n* 2 EX");
        assert_eq!(
            frame_all(&mut framer),
            vec![
                b"* 1 EXISTS\r\n".to_vec(),
                b"* 1 FETCH (BODY[] {5}\r\na\r\nb\n)\r\n".to_vec()
            ]
        );
        framer.enqueue(b"ISTS\r\n");
        assert_eq!(frame_all(&mut framer), vec![b"* 2 EXISTS\r\n".to_vec()]);
    }

    #[test]
    fn tells_where_the_only_literal_of_a_message_is() {
        let mut framer = Framer::new(Limits::default());
        // The first message is framed and dropped from the buffer while the
        // second still arrives: the span follows the bytes.
        framer.enqueue(b"* OK [UIDVALIDITY 1234567890] UIDs valid, a long line\r\n* 2 FETCH (UID 7 BODY[] {5}\r\nab");
        let first = framer.next_message().unwrap().unwrap();
        assert_eq!(first.only_literal, None);
        assert!(framer.next_message().unwrap().is_none());
        framer.enqueue(b"cde)\r\n* 3 FETCH (BODY[1] {1}\r\nx BODY[2] {2}\r\nyz)\r\n");
        let second = framer.next_message().unwrap().unwrap();
        let span = second.only_literal.unwrap();
        let buf = framer.take_buffer();
        assert_eq!(
            &buf[second.range.start..span.open],
            b"* 2 FETCH (UID 7 BODY[] "
        );
        assert_eq!(&buf[span.open..span.data_start], b"{5}\r\n");
        assert_eq!(&buf[span.data_start..span.data_end], b"abcde");
        assert_eq!(&buf[span.data_end..second.range.end], b")\r\n");
        framer.return_buffer(buf);
        let third = framer.next_message().unwrap().unwrap();
        assert_eq!(third.only_literal, None, "two literals");
    }

    #[test]
    fn refuses_an_absurd_literal_as_soon_as_it_is_announced() {
        let mut framer = Framer::new(Limits::default());
        framer.enqueue(b"* 1 FETCH (BODY[] {4294967296}\r\n");
        assert!(framer.next_message().is_err());
        let mut framer = Framer::new(Limits::default());
        framer.enqueue(b"* 1 FETCH (BODY[] {99999999999999999999999999}\r\n");
        assert!(framer.next_message().is_err());
    }

    #[test]
    fn refuses_a_line_that_never_ends() {
        let limits = Limits {
            max_line: 16,
            ..Limits::default()
        };
        let mut framer = Framer::new(limits);
        framer.enqueue(b"* OK ");
        assert!(framer.next_message().unwrap().is_none());
        framer.enqueue(&[b'x'; 32]);
        assert!(framer.next_message().is_err());
    }

    #[test]
    fn frees_its_buffer_after_a_big_response() {
        let mut framer = Framer::new(Limits::default());
        framer.enqueue(b"* 1 FETCH (BODY[] {100000}\r\n");
        framer.enqueue(&vec![b'a'; 100_000]);
        framer.enqueue(b")\r\n");
        assert_eq!(frame_all(&mut framer).len(), 1);
        assert_eq!(framer.buf.capacity(), 0);
    }

    /// Issue 11's soak: no response, large or small, leaves memory behind once
    /// it is consumed, so idle connections do not grow to a high-water mark.
    #[test]
    fn an_idle_connection_holds_no_buffer_whatever_it_read_before() {
        let mut framer = Framer::new(Limits::default());
        for size in [10_usize, 3_000, 5_000, 40_000, 200] {
            framer.enqueue(format!("* 1 FETCH (BODY[] {{{size}}}\r\n").as_bytes());
            framer.enqueue(&vec![b'a'; size]);
            framer.enqueue(b")\r\nA1 OK done\r\n");
            assert_eq!(frame_all(&mut framer).len(), 2, "{size}");
            assert_eq!(framer.buf.capacity(), 0, "after a {size}-byte literal");
        }
        // A response still arriving keeps its bytes.
        framer.enqueue(b"* 2 EXISTS\r\n* 3 EXI");
        assert_eq!(frame_all(&mut framer).len(), 1);
        assert_eq!(framer.buffered(), b"* 3 EXI");
        framer.enqueue(b"STS\r\n");
        assert_eq!(frame_all(&mut framer), vec![b"* 3 EXISTS\r\n".to_vec()]);
        assert_eq!(framer.buf.capacity(), 0);
    }
}
