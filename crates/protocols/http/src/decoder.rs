//! The response decoder: server bytes in, a head, body pieces and an end out.
//!
//! It frames a response the way RFC 9112 §6.3 says a client must: no body
//! after HEAD, 1xx, 204 and 304; chunked if `Transfer-Encoding` says so;
//! else `Content-Length`; else everything until the server closes. Every
//! size the server announces is checked against [`Limits`] before the bytes
//! behind it are buffered.

use crate::response::{Headers, ResponseHead};
use crate::{Progress, excerpt};

/// How much a server may send before the client calls it hostile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes in a status line plus headers (and, separately, in a
    /// chunked body's trailer section).
    pub max_head: usize,
    /// Most header lines in one response.
    pub max_headers: usize,
    /// Most body bytes in a response collected whole
    /// ([`crate::HttpClient::next_response`]). A `Content-Length` or chunk size
    /// above it is refused when announced, before its bytes arrive. A streamed
    /// body ([`crate::HttpClient::next_event`]) is not capped here: its
    /// reader bounds what it keeps.
    pub max_body: usize,
    /// Longest chunk-size line, extensions included.
    pub max_chunk_line: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_head: 64 * 1024,
            max_headers: 100,
            max_body: 16 * 1024 * 1024,
            max_chunk_line: 4 * 1024,
        }
    }
}

/// The server broke HTTP/1.1 or a limit. The connection cannot be used again:
/// once the core has returned one, it returns the same error until reset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The status line or a header does not parse.
    #[error("malformed response head ({reason}): {excerpt}")]
    MalformedHead {
        /// What httparse (or the framing rules) objected to.
        reason: String,
        /// The start of the head, escaped.
        excerpt: String,
    },
    /// No end of head within [`Limits::max_head`] bytes.
    #[error("response head longer than {limit} bytes")]
    HeadTooLarge {
        /// The limit.
        limit: usize,
    },
    /// More header lines than [`Limits::max_headers`].
    #[error("response has more than {limit} header lines")]
    TooManyHeaders {
        /// The limit.
        limit: usize,
    },
    /// `Content-Length` is not a number, or two of them disagree.
    #[error("bad Content-Length: {excerpt}")]
    BadContentLength {
        /// The value(s), escaped.
        excerpt: String,
    },
    /// A transfer coding other than `chunked`: the client never asks for one.
    #[error("unsupported Transfer-Encoding {0:?}")]
    UnsupportedTransferEncoding(String),
    /// The body is, or is announced to be, larger than [`Limits::max_body`].
    #[error("response body larger than {limit} bytes")]
    BodyTooLarge {
        /// The limit.
        limit: usize,
    },
    /// A chunked body that does not follow RFC 9112 §7.1.
    #[error("bad chunked encoding ({reason}): {excerpt}")]
    BadChunk {
        /// What is wrong.
        reason: &'static str,
        /// The offending bytes, escaped.
        excerpt: String,
    },
    /// A chunk size that does not fit in 64 bits.
    #[error("chunk size overflows: {excerpt}")]
    ChunkSizeOverflow {
        /// The size line, escaped.
        excerpt: String,
    },
    /// `101 Switching Protocols`: the client never asks to switch.
    #[error("server switched protocols unasked (101)")]
    SwitchingProtocols,
    /// The server closed the connection before the response was complete.
    #[error("server closed the connection {}the response", if *.mid_response { "in the middle of " } else { "before " })]
    Closed {
        /// True if part of the response had arrived.
        mid_response: bool,
    },
}

impl ProtocolError {
    /// A stable label for counting errors by kind (words joined with `-`).
    pub fn kind(&self) -> &'static str {
        match self {
            ProtocolError::MalformedHead { .. } => "malformed-head",
            ProtocolError::HeadTooLarge { .. } => "head-too-large",
            ProtocolError::TooManyHeaders { .. } => "too-many-headers",
            ProtocolError::BadContentLength { .. } => "bad-content-length",
            ProtocolError::UnsupportedTransferEncoding(_) => "unsupported-transfer-encoding",
            ProtocolError::BodyTooLarge { .. } => "body-too-large",
            ProtocolError::BadChunk { .. } => "bad-chunk",
            ProtocolError::ChunkSizeOverflow { .. } => "chunk-size-overflow",
            ProtocolError::SwitchingProtocols => "switching-protocols",
            ProtocolError::Closed { .. } => "closed",
        }
    }
}

/// What the decoder found next in a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyEvent {
    /// The status line and headers (interim 1xx responses are skipped).
    Head(ResponseHead),
    /// Decoded body bytes (chunk framing removed); never empty.
    Data(Vec<u8>),
    /// The response is complete.
    End,
}

/// One step of decoding, inside the crate: body bytes go to the caller's sink.
#[derive(Debug)]
pub(crate) enum Decoded {
    Head(ResponseHead),
    /// Bytes were appended to the sink.
    Data,
    End,
}

/// What the next response is for, which the bytes alone cannot say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expectation {
    /// A HEAD request: the response has no body whatever its headers say.
    pub(crate) head_request: bool,
    /// The body is collected whole, so [`Limits::max_body`] applies.
    pub(crate) collect: bool,
}

#[derive(Debug, Clone, Copy)]
enum Framing {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

#[derive(Debug, Clone, Copy)]
enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailer { bytes: usize },
}

#[derive(Debug)]
enum State {
    Idle,
    Head(Expectation),
    Body {
        framing: Framing,
        collect: bool,
        /// Body bytes decoded so far.
        seen: u64,
    },
    Failed(ProtocolError),
}

/// Input buffers above this are given back after a response, so one large
/// body does not pin its buffer for the rest of a user's session.
const SHRINK_ABOVE: usize = 64 * 1024;

/// The sans-I/O response decoder behind [`crate::HttpClient`].
#[derive(Debug)]
pub(crate) struct ResponseDecoder {
    limits: Limits,
    input: Vec<u8>,
    /// Bytes of `input` consumed.
    pos: usize,
    /// Where the search for the end of a head resumes.
    scan: usize,
    closed: bool,
    /// Some byte of the current response has arrived.
    received: bool,
    state: State,
}

impl ResponseDecoder {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            limits,
            input: Vec::new(),
            pos: 0,
            scan: 0,
            closed: false,
            received: false,
            state: State::Idle,
        }
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Starts waiting for the response to a request just sent.
    pub(crate) fn expect(&mut self, expectation: Expectation) {
        self.state = State::Head(expectation);
        self.received = self.pos < self.input.len();
    }

    /// True while a response is awaited or being read.
    pub(crate) fn is_busy(&self) -> bool {
        matches!(self.state, State::Head(_) | State::Body { .. })
    }

    /// True once any byte of the awaited response has arrived.
    pub(crate) fn received_any(&self) -> bool {
        self.received
    }

    /// Bytes received but not consumed by any response.
    pub(crate) fn unread(&self) -> &[u8] {
        &self.input[self.pos..]
    }

    /// Forgets everything: a new connection starts.
    pub(crate) fn reset(&mut self) {
        *self = Self::new(self.limits);
    }

    pub(crate) fn enqueue_input(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        // Consumed bytes are dropped first, so a large body streams through a
        // buffer the size of one read instead of accumulating.
        if self.pos > 0 {
            self.input.drain(..self.pos);
            self.scan = self.scan.saturating_sub(self.pos);
            self.pos = 0;
        }
        self.input.extend_from_slice(bytes);
        if self.is_busy() {
            self.received = true;
        }
    }

    pub(crate) fn input_closed(&mut self) {
        self.closed = true;
    }

    /// Decodes the next step, appending body bytes to `sink`. Returns
    /// [`Progress::NeedMoreInput`] when the bytes so far are not enough, and
    /// also when no response is awaited.
    pub(crate) fn next_event(
        &mut self,
        sink: &mut Vec<u8>,
    ) -> Result<Progress<Decoded>, ProtocolError> {
        if let State::Failed(error) = &self.state {
            return Err(error.clone());
        }
        match self.step(sink) {
            Ok(progress) => Ok(progress),
            Err(error) => {
                self.state = State::Failed(error.clone());
                Err(error)
            }
        }
    }

    fn step(&mut self, sink: &mut Vec<u8>) -> Result<Progress<Decoded>, ProtocolError> {
        loop {
            match self.state {
                State::Idle | State::Failed(_) => return Ok(Progress::NeedMoreInput),
                State::Head(expectation) => match self.parse_head(expectation)? {
                    HeadStep::NeedMore => return Ok(Progress::NeedMoreInput),
                    HeadStep::Interim => continue,
                    HeadStep::Head(head) => return Ok(Progress::Event(Decoded::Head(head))),
                },
                State::Body {
                    framing,
                    collect,
                    seen,
                } => {
                    let before = sink.len();
                    let next = self.body_step(framing, sink)?;
                    let added = (sink.len() - before) as u64;
                    let seen = seen + added;
                    // A chunk is refused when its size is announced, not
                    // once max_body of its bytes have been buffered.
                    let announced = match next {
                        BodyStep::Continue(Framing::Chunked(Chunk::Data(left))) => left,
                        _ => 0,
                    };
                    if collect && seen.saturating_add(announced) > self.limits.max_body as u64 {
                        return Err(ProtocolError::BodyTooLarge {
                            limit: self.limits.max_body,
                        });
                    }
                    match next {
                        BodyStep::NeedMore => {
                            self.state = State::Body {
                                framing,
                                collect,
                                seen,
                            };
                            return Ok(Progress::NeedMoreInput);
                        }
                        BodyStep::Continue(framing) => {
                            self.state = State::Body {
                                framing,
                                collect,
                                seen,
                            };
                            if added > 0 {
                                return Ok(Progress::Event(Decoded::Data));
                            }
                        }
                        BodyStep::End => {
                            self.finish();
                            return Ok(Progress::Event(Decoded::End));
                        }
                    }
                }
            }
        }
    }

    fn finish(&mut self) {
        self.state = State::Idle;
        self.input.drain(..self.pos);
        self.pos = 0;
        self.scan = 0;
        if self.input.capacity() > SHRINK_ABOVE {
            self.input.shrink_to(SHRINK_ABOVE.max(self.input.len()));
        }
    }

    fn parse_head(&mut self, expectation: Expectation) -> Result<HeadStep, ProtocolError> {
        // RFC 9112 §2.2: a client should ignore empty lines before a status line.
        while self.input[self.pos..].starts_with(b"\r\n")
            || self.input[self.pos..].starts_with(b"\n")
        {
            self.pos += if self.input[self.pos] == b'\r' { 2 } else { 1 };
        }
        let start = self.scan.saturating_sub(2).max(self.pos);
        let Some(end) = find_head_end(&self.input[start..]).map(|n| start + n) else {
            self.scan = self.input.len();
            let pending = self.input.len() - self.pos;
            if pending > self.limits.max_head {
                return Err(ProtocolError::HeadTooLarge {
                    limit: self.limits.max_head,
                });
            }
            if self.closed {
                return Err(ProtocolError::Closed {
                    mid_response: pending > 0 || self.received,
                });
            }
            return Ok(HeadStep::NeedMore);
        };
        if end - self.pos > self.limits.max_head {
            return Err(ProtocolError::HeadTooLarge {
                limit: self.limits.max_head,
            });
        }
        let raw = &self.input[self.pos..end];
        let (head, framing) = self.frame(raw, expectation)?;
        self.pos = end;
        self.scan = end;
        let Some(head) = head else {
            return Ok(HeadStep::Interim);
        };
        self.state = State::Body {
            framing,
            collect: expectation.collect,
            seen: 0,
        };
        Ok(HeadStep::Head(head))
    }

    /// Parses a complete head and decides how its body is framed. `None` for
    /// an interim (1xx) response, which is skipped.
    fn frame(
        &self,
        raw: &[u8],
        expectation: Expectation,
    ) -> Result<(Option<ResponseHead>, Framing), ProtocolError> {
        let mut slots = vec![httparse::EMPTY_HEADER; self.limits.max_headers];
        let mut parsed = httparse::Response::new(&mut slots);
        match parsed.parse(raw) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => {
                return Err(malformed("incomplete head", raw));
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(ProtocolError::TooManyHeaders {
                    limit: self.limits.max_headers,
                });
            }
            Err(error) => return Err(malformed(&error.to_string(), raw)),
        }
        let (Some(status), Some(minor_version)) = (parsed.code, parsed.version) else {
            return Err(malformed("no status", raw));
        };
        if status == 101 {
            return Err(ProtocolError::SwitchingProtocols);
        }
        if status < 200 {
            return Ok((None, Framing::Length(0)));
        }
        let mut headers = Headers::default();
        for header in parsed.headers.iter() {
            headers.push(header.name, header.value);
        }
        let mut keep_alive = if minor_version >= 1 {
            !headers.has_token("connection", "close")
        } else {
            headers.has_token("connection", "keep-alive")
        };
        let no_body = expectation.head_request || status == 204 || status == 304;
        let framing = if no_body {
            Framing::Length(0)
        } else if headers.get("transfer-encoding").is_some() {
            let codings: Vec<&str> = headers
                .get_all("transfer-encoding")
                .flat_map(|v| v.split(','))
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            if codings.is_empty() || !codings.iter().all(|c| c.eq_ignore_ascii_case("chunked")) {
                return Err(ProtocolError::UnsupportedTransferEncoding(
                    codings.join(", "),
                ));
            }
            // RFC 9112 §6.1: both headers may mean request smuggling; the
            // connection must not be reused.
            if headers.get("content-length").is_some() {
                keep_alive = false;
            }
            Framing::Chunked(Chunk::Size)
        } else if let Some(length) = content_length(&headers)? {
            if expectation.collect && length > self.limits.max_body as u64 {
                return Err(ProtocolError::BodyTooLarge {
                    limit: self.limits.max_body,
                });
            }
            Framing::Length(length)
        } else {
            keep_alive = false;
            Framing::UntilClose
        };
        let head = ResponseHead {
            status,
            reason: parsed.reason.unwrap_or("").to_owned(),
            minor_version,
            headers,
            keep_alive,
        };
        Ok((Some(head), framing))
    }

    fn body_step(
        &mut self,
        framing: Framing,
        sink: &mut Vec<u8>,
    ) -> Result<BodyStep, ProtocolError> {
        let available = self.input.len() - self.pos;
        match framing {
            Framing::Length(0) => Ok(BodyStep::End),
            Framing::Length(remaining) => {
                if available == 0 {
                    return self.need_more_in_body();
                }
                let take = self.take(remaining, sink);
                Ok(BodyStep::Continue(Framing::Length(remaining - take)))
            }
            Framing::UntilClose => {
                if available > 0 {
                    self.take(available as u64, sink);
                    Ok(BodyStep::Continue(Framing::UntilClose))
                } else if self.closed {
                    Ok(BodyStep::End)
                } else {
                    Ok(BodyStep::NeedMore)
                }
            }
            Framing::Chunked(chunk) => self.chunk_step(chunk, sink),
        }
    }

    /// Moves up to `wanted` bytes of input into `sink`; returns how many.
    fn take(&mut self, wanted: u64, sink: &mut Vec<u8>) -> u64 {
        let available = self.input.len() - self.pos;
        let n = usize::try_from(wanted).map_or(available, |w| w.min(available));
        sink.extend_from_slice(&self.input[self.pos..self.pos + n]);
        self.pos += n;
        n as u64
    }

    fn need_more_in_body(&self) -> Result<BodyStep, ProtocolError> {
        if self.closed {
            Err(ProtocolError::Closed { mid_response: true })
        } else {
            Ok(BodyStep::NeedMore)
        }
    }

    fn chunk_step(&mut self, chunk: Chunk, sink: &mut Vec<u8>) -> Result<BodyStep, ProtocolError> {
        let chunked = |c| Ok(BodyStep::Continue(Framing::Chunked(c)));
        match chunk {
            Chunk::Size => {
                let Some(line) =
                    self.line(self.limits.max_chunk_line, "chunk-size line too long")?
                else {
                    return self.need_more_in_body();
                };
                match parse_chunk_size(&line)? {
                    0 => chunked(Chunk::Trailer { bytes: 0 }),
                    size => chunked(Chunk::Data(size)),
                }
            }
            Chunk::Data(remaining) => {
                if self.input.len() == self.pos {
                    return self.need_more_in_body();
                }
                let take = self.take(remaining, sink);
                match remaining - take {
                    0 => chunked(Chunk::DataEnd),
                    left => chunked(Chunk::Data(left)),
                }
            }
            Chunk::DataEnd => {
                let rest = &self.input[self.pos..];
                match rest {
                    [b'\n', ..] => self.pos += 1,
                    [b'\r', b'\n', ..] => self.pos += 2,
                    [] | [b'\r'] => return self.need_more_in_body(),
                    _ => {
                        // Only the bytes looked at, so that the error does
                        // not depend on how much else has arrived.
                        let seen = if rest[0] == b'\r' { 2 } else { 1 };
                        return Err(ProtocolError::BadChunk {
                            reason: "chunk data not followed by CRLF",
                            excerpt: excerpt(&rest[..seen]),
                        });
                    }
                }
                chunked(Chunk::Size)
            }
            Chunk::Trailer { bytes } => {
                let room = self.limits.max_head.saturating_sub(bytes);
                let Some(line) = self.line(room, "trailer section too large")? else {
                    return self.need_more_in_body();
                };
                if line.is_empty() {
                    Ok(BodyStep::End)
                } else {
                    chunked(Chunk::Trailer {
                        bytes: bytes + line.len() + 2,
                    })
                }
            }
        }
    }

    /// The next line (without CR LF), consumed; `None` if it has not all
    /// arrived. A line longer than `limit` is an error.
    fn line(
        &mut self,
        limit: usize,
        too_long: &'static str,
    ) -> Result<Option<Vec<u8>>, ProtocolError> {
        let rest = &self.input[self.pos..];
        let window = &rest[..rest.len().min(limit + 2)];
        let Some(lf) = window.iter().position(|&b| b == b'\n') else {
            if rest.len() > limit + 1 {
                return Err(ProtocolError::BadChunk {
                    reason: too_long,
                    excerpt: excerpt(&rest[..limit + 2]),
                });
            }
            return Ok(None);
        };
        let line = rest[..lf]
            .strip_suffix(b"\r")
            .unwrap_or(&rest[..lf])
            .to_vec();
        self.pos += lf + 1;
        Ok(Some(line))
    }
}

enum HeadStep {
    NeedMore,
    Interim,
    Head(ResponseHead),
}

enum BodyStep {
    NeedMore,
    Continue(Framing),
    End,
}

fn malformed(reason: &str, raw: &[u8]) -> ProtocolError {
    ProtocolError::MalformedHead {
        reason: reason.to_owned(),
        excerpt: excerpt(raw),
    }
}

/// The index just past the blank line that ends a head (`\n\r\n` or `\n\n`).
fn find_head_end(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(lf) = bytes[from..].iter().position(|&b| b == b'\n') {
        let at = from + lf;
        match &bytes[at + 1..] {
            [b'\n', ..] => return Some(at + 2),
            [b'\r', b'\n', ..] => return Some(at + 3),
            _ => from = at + 1,
        }
    }
    None
}

/// `Content-Length`, checked: digits only, and every copy the same
/// (RFC 9112 §6.3 point 5 says to treat disagreement as unrecoverable).
fn content_length(headers: &Headers) -> Result<Option<u64>, ProtocolError> {
    let mut length = None;
    for value in headers.get_all("content-length").flat_map(|v| v.split(',')) {
        let value = value.trim();
        let parsed =
            (!value.is_empty() && value.len() <= 19 && value.bytes().all(|b| b.is_ascii_digit()))
                .then(|| value.parse::<u64>().ok())
                .flatten();
        match (parsed, length) {
            (Some(n), None) => length = Some(n),
            (Some(n), Some(m)) if n == m => {}
            _ => {
                let all: Vec<&str> = headers.get_all("content-length").collect();
                return Err(ProtocolError::BadContentLength {
                    excerpt: excerpt(all.join(", ").as_bytes()),
                });
            }
        }
    }
    Ok(length)
}

/// `chunk-size [ chunk-ext ]` (RFC 9112 §7.1): hex digits, then optional
/// whitespace and `;extensions`, which are ignored.
fn parse_chunk_size(line: &[u8]) -> Result<u64, ProtocolError> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = &line[digits..];
    let rest_ok = rest
        .iter()
        .position(|&b| b == b';')
        .map_or(rest, |semi| &rest[..semi]);
    if digits == 0 || !rest_ok.iter().all(|&b| b == b' ' || b == b'\t') {
        return Err(ProtocolError::BadChunk {
            reason: "chunk size is not hexadecimal",
            excerpt: excerpt(line),
        });
    }
    let mut size: u64 = 0;
    for &b in &line[..digits] {
        let digit = u64::from(char::from(b).to_digit(16).unwrap_or(0));
        size = size
            .checked_mul(16)
            .and_then(|s| s.checked_add(digit))
            .ok_or_else(|| ProtocolError::ChunkSizeOverflow {
                excerpt: excerpt(line),
            })?;
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_parse_with_extensions_and_refuse_overflow() {
        assert_eq!(parse_chunk_size(b"1a"), Ok(26));
        assert_eq!(parse_chunk_size(b"0000000000000000010"), Ok(16));
        assert_eq!(parse_chunk_size(b"A ; name=value"), Ok(10));
        assert_eq!(parse_chunk_size(b"ffffffffffffffff"), Ok(u64::MAX));
        assert!(matches!(
            parse_chunk_size(b"10000000000000000"),
            Err(ProtocolError::ChunkSizeOverflow { .. })
        ));
        for bad in [&b""[..], b"x", b"-1", b"1 2", b"+5"] {
            assert!(
                matches!(parse_chunk_size(bad), Err(ProtocolError::BadChunk { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn head_end_is_found_with_crlf_or_bare_lf() {
        assert_eq!(find_head_end(b"HTTP/1.1 200 OK\r\n\r\nbody"), Some(19));
        assert_eq!(find_head_end(b"HTTP/1.1 200 OK\n\nbody"), Some(17));
        assert_eq!(find_head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n"), None);
    }
}
