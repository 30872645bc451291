//! Cuts one direction of an IMAP connection into whole messages (a command
//! with its literals, or a response with its literals), whatever the chunks
//! the bytes arrived in. The model must see whole messages to decode them,
//! and must not trust the chunking of a socket read or of a write.

use std::ops::Range;

/// One whole message, its literals' data marked so that scans for words in
/// the message skip the bytes of a message body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) bytes: Vec<u8>,
    /// Where each literal's data lies in `bytes`.
    pub(crate) literals: Vec<Range<usize>>,
}

impl Frame {
    /// The parts of the message outside its literals' data, in order.
    pub(crate) fn text_parts(&self) -> Vec<Range<usize>> {
        let mut parts = Vec::with_capacity(self.literals.len() + 1);
        let mut start = 0;
        for literal in &self.literals {
            parts.push(start..literal.start);
            start = literal.end;
        }
        parts.push(start..self.bytes.len());
        parts
    }

    /// The first line, CRLF removed (up to the first literal's data).
    pub(crate) fn first_line(&self) -> &[u8] {
        let end = self
            .bytes
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(self.bytes.len());
        let line = &self.bytes[..end];
        line.strip_suffix(b"\r").unwrap_or(line)
    }
}

/// Why the splitter stopped: the stream broke a bound the client also
/// enforces, so the connection is lost anyway and the model stops checking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Overflow(pub(crate) String);

/// The splitter of one direction.
#[derive(Debug, Default)]
pub(crate) struct Splitter {
    buf: Vec<u8>,
    /// Where the message being framed starts in `buf`: bytes before it were
    /// handed out, and are dropped at the next `push` (not after each
    /// message, which would move the rest of a big read once per response).
    start: usize,
    /// Where the search for the next line end resumes.
    scan: usize,
    /// Literals found so far in the message being framed.
    literals: Vec<Range<usize>>,
    max_line: usize,
    max_literal: u64,
}

impl Splitter {
    pub(crate) fn new(max_line: usize, max_literal: u64) -> Self {
        Self {
            max_line,
            max_literal,
            ..Self::default()
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scan -= self.start;
            for literal in &mut self.literals {
                *literal = literal.start - self.start..literal.end - self.start;
            }
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message, if one has arrived.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Frame>, Overflow> {
        loop {
            if let Some(literal) = self.literals.last()
                && self.scan < literal.end
            {
                if self.buf.len() < literal.end {
                    return Ok(None);
                }
                self.scan = literal.end;
            }
            if self.start == self.buf.len() {
                self.release();
                return Ok(None);
            }
            let line_start = self.scan;
            let Some(lf) = self.buf[line_start..].iter().position(|&b| b == b'\n') else {
                if self.buf.len() - line_start > self.max_line {
                    return Err(Overflow(format!(
                        "a line longer than {} bytes",
                        self.max_line
                    )));
                }
                return Ok(None);
            };
            let line_end = line_start + lf + 1;
            match literal_length(&self.buf[line_start..line_end]) {
                Some(length) if length > self.max_literal => {
                    return Err(Overflow(format!(
                        "a literal of {length} bytes (limit {})",
                        self.max_literal
                    )));
                }
                Some(length) => {
                    let end = line_end + usize::try_from(length).unwrap_or(usize::MAX);
                    self.literals.push(line_end..end);
                    self.scan = line_end;
                }
                None => {
                    let start = self.start;
                    let bytes = self.buf[start..line_end].to_vec();
                    let literals = self
                        .literals
                        .drain(..)
                        .map(|l| l.start - start..l.end - start)
                        .collect();
                    self.start = line_end;
                    self.scan = line_end;
                    return Ok(Some(Frame { bytes, literals }));
                }
            }
        }
    }
}

impl Splitter {
    /// Everything was handed out: empty the buffer, and give its memory back
    /// if a big response grew it (a model lives beside every connection,
    /// most of them idle).
    fn release(&mut self) {
        self.buf.clear();
        if self.buf.capacity() > RETAINED_MAX {
            self.buf = Vec::new();
        }
        self.start = 0;
        self.scan = 0;
    }
}

/// The largest buffer a splitter keeps once it has handed everything out.
const RETAINED_MAX: usize = 16 * 1024;

/// The length a line announces at its end (`{12}`, `{12+}`, `~{12}`), if any.
fn literal_length(line: &[u8]) -> Option<u64> {
    let line = line.strip_suffix(b"\n")?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let inner = line.strip_suffix(b"}")?;
    let open = inner.iter().rposition(|&b| b == b'{')?;
    let digits = &inner[open + 1..];
    let digits = digits.strip_suffix(b"+").unwrap_or(digits);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn a_message_with_literals_is_one_frame_whatever_the_chunks() {
        let input = b"* 1 FETCH (BODY[] {5}\r\nhello UID 3)\r\nA1 OK done\r\n* 2 FETCH (BODY[] {2}\r\nhi)\r\n";
        for chunk in [1, 3, input.len()] {
            let mut splitter = Splitter::new(1000, 1000);
            let mut frames = Vec::new();
            for piece in input.chunks(chunk) {
                splitter.push(piece);
                while let Some(frame) = splitter.next_frame().unwrap() {
                    frames.push(frame);
                }
            }
            assert_eq!(frames.len(), 3, "chunks of {chunk}");
            assert_eq!(frames[0].literals, vec![23..28]);
            assert_eq!(&frames[0].bytes[23..28], b"hello");
            assert_eq!(frames[1].first_line(), b"A1 OK done");
            assert_eq!(frames[2].literals, vec![23..25]);
            assert_eq!(&frames[2].bytes[23..25], b"hi");
        }
    }

    #[test]
    fn an_absurd_literal_stops_the_splitter() {
        let mut splitter = Splitter::new(1000, 1000);
        splitter.push(b"* 1 FETCH (BODY[] {99999}\r\n");
        assert!(splitter.next_frame().is_err());
    }
}
