//! The sans-I/O state machine: commands in, bytes to write out; server bytes
//! in, typed responses out.

use std::collections::VecDeque;
use std::ops::Range;

use peakhour_net::{Progress, ProtocolCore};

use crate::command::{Command, CommandError, CommandKind, Shape};
use crate::response::{
    self, Capabilities, ErrReply, ListEntry, Reply, Response, Status, UidlEntry,
};

/// How much a server may send before the client calls it hostile.
///
/// Every buffer the core keeps is bounded by these, whatever the server sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest status line, CAPA, LIST or UIDL line, without CRLF. RFC 2449
    /// allows 512 octets with CRLF; the default leaves room for chatty servers.
    pub max_line: usize,
    /// Longest line inside a RETR or TOP message, without CRLF. RFC 5322 says
    /// 998, real mail breaks that, so the default is 1 MiB.
    pub max_message_line: usize,
    /// Most bytes in the body of one multi-line response (after the `+OK`
    /// line, counted as received, CRLFs included).
    pub max_response: usize,
    /// Most entries in one LIST, UIDL or CAPA answer: a parsed entry takes
    /// more memory than its line, so `max_response` alone would not bound it.
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_line: 8 * 1024,
            max_message_line: 1024 * 1024,
            max_response: 64 * 1024 * 1024,
            max_entries: 1_000_000,
        }
    }
}

/// The server broke the protocol. The session cannot go on: once the core has
/// returned one, every later [`Pop3Client::next`] returns it again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// A line that does not fit the grammar of the response expected.
    #[error("malformed {command} response ({reason}): {excerpt}")]
    Malformed {
        /// The command whose response it was.
        command: CommandKind,
        /// What is wrong.
        reason: &'static str,
        /// The start of the offending line, escaped and truncated.
        excerpt: String,
    },
    /// A line longer than the limit (no CRLF within it).
    #[error("{command} response line longer than {limit} bytes: {excerpt}")]
    LineTooLong {
        /// The command whose response it was.
        command: CommandKind,
        /// The limit that applied.
        limit: usize,
        /// The start of the line, escaped and truncated.
        excerpt: String,
    },
    /// A multi-line response larger than [`Limits::max_response`].
    #[error("{command} response larger than {limit} bytes")]
    ResponseTooLarge {
        /// The command.
        command: CommandKind,
        /// The limit.
        limit: usize,
    },
    /// A LIST, UIDL or CAPA answer with more than [`Limits::max_entries`] lines.
    #[error("{command} response has more than {limit} entries")]
    TooManyEntries {
        /// The command.
        command: CommandKind,
        /// The limit.
        limit: usize,
    },
    /// The server closed the connection before the response was complete.
    #[error("server closed the connection {}the {command} response", if *.mid_response { "in the middle of " } else { "before " })]
    Closed {
        /// The command waiting for its response.
        command: CommandKind,
        /// True if part of the response had arrived (a truncated response,
        /// such as a RETR without its `.` terminator).
        mid_response: bool,
    },
    /// The server sent a line when no command was waiting for one.
    #[error("server sent data no command asked for: {excerpt}")]
    Unsolicited {
        /// The start of what it sent, escaped and truncated.
        excerpt: String,
    },
    /// Bytes arrived after `+OK` to STLS and before the TLS handshake. They
    /// would be read as if they came over TLS (the STARTTLS command injection
    /// of CVE-2011-0411), so the session is abandoned.
    #[error("server sent data after accepting STLS, before the TLS handshake")]
    DataAfterStls,
}

/// How long an excerpt in an error may be; enough to recognise an HTTP server
/// or a banner, short enough for a log line.
const EXCERPT_LEN: usize = 64;

/// Input buffers above this are given back once a response completes, so a
/// large RETR does not pin its buffer for the rest of the session.
const SHRINK_ABOVE: usize = 64 * 1024;

fn excerpt(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(EXCERPT_LEN)];
    let mut text = format!("\"{}\"", head.escape_ascii());
    if bytes.len() > EXCERPT_LEN {
        text.push_str("...");
    }
    text
}

/// How strictly a line end is recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineMode {
    /// Status and listing lines: a bare LF is a protocol error.
    Strict,
    /// Message lines: a bare LF is message content; only CRLF ends a line.
    Message,
}

/// A multi-line response being collected.
#[derive(Debug)]
struct InProgress {
    body: Body,
    /// Body bytes received so far, CRLFs included, for [`Limits::max_response`].
    received: usize,
}

#[derive(Debug)]
enum Body {
    Capa(Capabilities),
    List(Vec<ListEntry>),
    Uidl(Vec<UidlEntry>),
    Message(Vec<u8>),
}

impl Body {
    fn entries(&self) -> usize {
        match self {
            Body::Capa(caps) => caps.lines().len(),
            Body::List(entries) => entries.len(),
            Body::Uidl(entries) => entries.len(),
            Body::Message(_) => 0,
        }
    }

    fn into_reply(self) -> Reply {
        match self {
            Body::Capa(caps) => Reply::Capabilities(caps),
            Body::List(entries) => Reply::List(entries),
            Body::Uidl(entries) => Reply::Uidl(entries),
            Body::Message(bytes) => Reply::Message(bytes),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Expected {
    kind: CommandKind,
    shape: Shape,
}

/// A POP3 client session without I/O.
///
/// The caller moves bytes, as with every peakhour protocol core
/// ([`ProtocolCore`]): it queues commands with [`Pop3Client::send`] and calls
/// [`Pop3Client::next`], which hands out the bytes to write
/// ([`Progress::Output`]), each complete [`Response`] ([`Progress::Event`]),
/// or [`Progress::NeedMoreInput`]; what the server sends goes to
/// [`Pop3Client::enqueue_input`].
/// The client remembers which commands are outstanding, in order, because
/// only the command tells whether `+OK` starts a multi-line response. That
/// also makes pipelining (RFC 2449 `PIPELINING`) work: send several commands,
/// then read their responses in order.
///
/// The result never depends on how the input was split: one byte at a time or
/// everything at once gives the same responses and the same errors.
#[derive(Debug)]
pub struct Pop3Client {
    limits: Limits,
    input: Vec<u8>,
    /// Bytes of `input` already consumed.
    pos: usize,
    /// Bytes after `pos` already searched for a line end, so a long line fed
    /// in small pieces is scanned once, not once per piece.
    scanned: usize,
    closed: bool,
    outstanding: VecDeque<Expected>,
    in_progress: Option<InProgress>,
    output: Vec<u8>,
    failed: Option<ProtocolError>,
    /// STLS was accepted; nothing may arrive until the handshake is done.
    awaiting_tls: bool,
    quit_sent: bool,
}

impl Default for Pop3Client {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl Pop3Client {
    /// A session at its very start, waiting for the server's greeting.
    pub fn new(limits: Limits) -> Self {
        let mut outstanding = VecDeque::new();
        outstanding.push_back(Expected {
            kind: CommandKind::Greeting,
            shape: Shape::Greeting,
        });
        Self {
            limits,
            input: Vec::new(),
            pos: 0,
            scanned: 0,
            closed: false,
            outstanding,
            in_progress: None,
            output: Vec::new(),
            failed: None,
            awaiting_tls: false,
            quit_sent: false,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Queues `command` for sending and remembers it as outstanding. Nothing
    /// is queued when it returns an error.
    pub fn send(&mut self, command: &Command) -> Result<(), CommandError> {
        let kind = command.kind();
        if self.failed.is_some() {
            return Err(CommandError::SessionFailed { command: kind });
        }
        if self.quit_sent {
            return Err(CommandError::AfterQuit { command: kind });
        }
        if self.awaiting_tls || self.outstanding.iter().any(|e| e.kind == CommandKind::Stls) {
            return Err(CommandError::AfterStls);
        }
        command.encode(&mut self.output)?;
        // A partial line scanned while idle was scanned under other rules
        // (idle input is only looked at to be reported); scan it afresh.
        self.scanned = 0;
        self.outstanding.push_back(Expected {
            kind,
            shape: command.shape(),
        });
        self.quit_sent = kind == CommandKind::Quit;
        Ok(())
    }

    /// Hands over bytes received from the server.
    pub fn enqueue_input(&mut self, bytes: &[u8]) {
        // After a failure nothing will be parsed, so there is no reason to hold
        // whatever the server keeps sending.
        if self.failed.is_none() {
            self.input.extend_from_slice(bytes);
        }
    }

    /// Reports that the server closed the connection (read returned 0). A
    /// response still incomplete then is an error: [`ProtocolError::Closed`].
    pub fn input_closed(&mut self) {
        self.closed = true;
    }

    /// Commands sent whose responses have not been returned yet (the greeting
    /// counts as one until it has arrived).
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// Received bytes not yet consumed by a returned response.
    pub fn buffered_input(&self) -> usize {
        self.input.len() - self.pos
    }

    /// Tells the core the TLS handshake after STLS has completed: bytes may
    /// arrive again, and commands may be sent.
    pub fn tls_established(&mut self) {
        self.awaiting_tls = false;
    }

    /// What to do next: write the queued commands (all of them in one
    /// [`Progress::Output`], so pipelined commands go together), take the
    /// next complete response, or wait for more input. With nothing
    /// outstanding and nothing buffered it needs input.
    #[expect(
        clippy::should_implement_trait,
        reason = "the `next` of every peakhour protocol core; it never ends, so it is no iterator"
    )]
    pub fn next(&mut self) -> Result<Progress<Response>, ProtocolError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        if !self.output.is_empty() {
            return Ok(Progress::Output(std::mem::take(&mut self.output)));
        }
        let result = self.step();
        // Consumed bytes are dropped on every return, so the buffer holds at
        // most one partial line plus what the caller fed since.
        if self.pos > 0 {
            self.input.drain(..self.pos);
            self.pos = 0;
        }
        match &result {
            Err(error) => {
                self.failed = Some(error.clone());
                self.input = Vec::new();
                self.in_progress = None;
                self.outstanding.clear();
            }
            Ok(Progress::Event(_)) => {
                if self.input.capacity() > SHRINK_ABOVE {
                    self.input.shrink_to(self.input.len().max(16 * 1024));
                }
            }
            Ok(Progress::Output(_) | Progress::NeedMoreInput) => {}
        }
        result
    }

    fn step(&mut self) -> Result<Progress<Response>, ProtocolError> {
        if self.awaiting_tls && self.buffered_input() > 0 {
            return Err(ProtocolError::DataAfterStls);
        }
        let Some(&expected) = self.outstanding.front() else {
            return self.unsolicited();
        };
        let kind = expected.kind;
        if self.in_progress.is_none() {
            let Some(range) = self.take_line(kind, self.limits.max_line, LineMode::Strict)? else {
                return self.incomplete(kind);
            };
            let line = &self.input[range];
            let malformed = |reason| ProtocolError::Malformed {
                command: kind,
                reason,
                excerpt: excerpt(line),
            };
            let text = match response::parse_status(line).map_err(malformed)? {
                Status::Err(text) => {
                    return Ok(self.complete(kind, Err(response::parse_err(text))));
                }
                Status::Ok(text) => text,
            };
            let reply = match expected.shape {
                Shape::Greeting => Reply::Greeting(response::parse_greeting(text)),
                Shape::Status => Reply::Ok(response::text(text)),
                Shape::Stat => Reply::Stat(response::parse_stat(text).map_err(malformed)?),
                Shape::ScanOne => Reply::ListOne(response::parse_scan(text).map_err(malformed)?),
                Shape::UidOne => Reply::UidlOne(response::parse_uid(text).map_err(malformed)?),
                Shape::ScanAll | Shape::UidAll | Shape::Capa | Shape::Message => {
                    let body = match expected.shape {
                        Shape::ScanAll => Body::List(Vec::new()),
                        Shape::UidAll => Body::Uidl(Vec::new()),
                        Shape::Capa => Body::Capa(Capabilities::default()),
                        _ => Body::Message(Vec::new()),
                    };
                    self.in_progress = Some(InProgress { body, received: 0 });
                    return self.collect(expected);
                }
            };
            debug_assert!(!expected.shape.is_multiline());
            if kind == CommandKind::Stls {
                self.awaiting_tls = true;
            }
            return Ok(self.complete(kind, Ok(reply)));
        }
        self.collect(expected)
    }

    /// Reads the lines of a multi-line response until its `.` terminator.
    fn collect(&mut self, expected: Expected) -> Result<Progress<Response>, ProtocolError> {
        let kind = expected.kind;
        let (limit, mode) = match expected.shape {
            Shape::Message => (self.limits.max_message_line, LineMode::Message),
            _ => (self.limits.max_line, LineMode::Strict),
        };
        loop {
            let Some(range) = self.take_line(kind, limit, mode)? else {
                return self.incomplete(kind);
            };
            let line = &self.input[range];
            if line == b"." {
                let Some(done) = self.in_progress.take() else {
                    // collect() runs only with a response in progress.
                    return self.incomplete(kind);
                };
                return Ok(self.complete(kind, Ok(done.body.into_reply())));
            }
            let Some(progress) = self.in_progress.as_mut() else {
                return self.incomplete(kind);
            };
            progress.received = progress.received.saturating_add(line.len() + 2);
            if progress.received > self.limits.max_response {
                return Err(ProtocolError::ResponseTooLarge {
                    command: kind,
                    limit: self.limits.max_response,
                });
            }
            if progress.body.entries() >= self.limits.max_entries {
                return Err(ProtocolError::TooManyEntries {
                    command: kind,
                    limit: self.limits.max_entries,
                });
            }
            // RFC 1939 §3: a line starting with "." had one more "." put in
            // front of it by the server.
            let unstuffed = line.strip_prefix(b".").unwrap_or(line);
            let malformed = |reason| ProtocolError::Malformed {
                command: kind,
                reason,
                excerpt: excerpt(line),
            };
            match &mut progress.body {
                Body::Message(bytes) => {
                    bytes.extend_from_slice(unstuffed);
                    bytes.extend_from_slice(b"\r\n");
                }
                Body::List(entries) => {
                    entries.push(response::parse_scan(unstuffed).map_err(malformed)?);
                }
                Body::Uidl(entries) => {
                    entries.push(response::parse_uid(unstuffed).map_err(malformed)?);
                }
                Body::Capa(caps) => {
                    // An empty line says nothing; skipping it is harmless.
                    if !unstuffed.is_empty() {
                        caps.push(response::parse_capability(unstuffed).map_err(malformed)?);
                    }
                }
            }
        }
    }

    fn complete(
        &mut self,
        kind: CommandKind,
        outcome: Result<Reply, ErrReply>,
    ) -> Progress<Response> {
        self.outstanding.pop_front();
        Progress::Event(Response {
            command: kind,
            outcome,
        })
    }

    /// No complete response in the buffer: wait, or fail if the server is gone.
    fn incomplete(&self, kind: CommandKind) -> Result<Progress<Response>, ProtocolError> {
        if self.closed {
            return Err(ProtocolError::Closed {
                command: kind,
                mid_response: self.in_progress.is_some() || self.buffered_input() > 0,
            });
        }
        Ok(Progress::NeedMoreInput)
    }

    /// Nothing is outstanding. A POP3 server speaks only when spoken to, so
    /// any line now means client and server disagree about the session. The
    /// error waits for a whole line (or EOF) so that the excerpt, like every
    /// other result, does not depend on how the input was split.
    fn unsolicited(&mut self) -> Result<Progress<Response>, ProtocolError> {
        if self.buffered_input() == 0 {
            return Ok(Progress::NeedMoreInput);
        }
        let range = match self.take_line(
            CommandKind::Greeting,
            self.limits.max_line,
            LineMode::Message,
        ) {
            Ok(Some(range)) => range,
            Ok(None) if !self.closed => return Ok(Progress::NeedMoreInput),
            // The excerpt stops at the line limit, where a split input would
            // have stopped too.
            Ok(None) | Err(_) => {
                let window = self
                    .buffered_input()
                    .min(self.limits.max_line.saturating_add(2));
                self.pos..self.pos + window
            }
        };
        Err(ProtocolError::Unsolicited {
            excerpt: excerpt(&self.input[range]),
        })
    }

    /// Takes the next CRLF-terminated line (without its CRLF) if it has fully
    /// arrived. Only the first `limit + 2` bytes are ever searched, so a
    /// hostile server cannot make one call scan, or the buffer hold, more.
    fn take_line(
        &mut self,
        kind: CommandKind,
        limit: usize,
        mode: LineMode,
    ) -> Result<Option<Range<usize>>, ProtocolError> {
        let available = &self.input[self.pos..];
        let window = available.len().min(limit.saturating_add(2));
        let mut from = self.scanned.min(window);
        while let Some(offset) = available[from..window].iter().position(|&b| b == b'\n') {
            let lf = from + offset;
            if lf > 0 && available[lf - 1] == b'\r' {
                let range = self.pos..self.pos + lf - 1;
                self.pos += lf + 1;
                self.scanned = 0;
                return Ok(Some(range));
            }
            if mode == LineMode::Strict {
                return Err(ProtocolError::Malformed {
                    command: kind,
                    reason: "line ends in a bare LF",
                    excerpt: excerpt(&available[..lf]),
                });
            }
            from = lf + 1;
        }
        if available.len() >= limit.saturating_add(2) {
            return Err(ProtocolError::LineTooLong {
                command: kind,
                limit,
                // Only the window: what lies beyond it depends on how the
                // input was split.
                excerpt: excerpt(&available[..window]),
            });
        }
        self.scanned = window;
        Ok(None)
    }
}

impl ProtocolCore for Pop3Client {
    type Event = Response;
    type Error = ProtocolError;

    fn enqueue_input(&mut self, bytes: &[u8]) {
        Pop3Client::enqueue_input(self, bytes);
    }

    fn input_closed(&mut self) {
        Pop3Client::input_closed(self);
    }

    fn next(&mut self) -> Result<Progress<Response>, ProtocolError> {
        Pop3Client::next(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready() -> Pop3Client {
        let mut client = Pop3Client::default();
        client.enqueue_input(b"+OK hi\r\n");
        assert!(matches!(client.next(), Ok(Progress::Event(_))));
        client
    }

    /// The bytes the client asks to write next.
    fn output(client: &mut Pop3Client) -> Vec<u8> {
        match client.next() {
            Ok(Progress::Output(bytes)) => bytes,
            other => panic!("expected output, got {other:?}"),
        }
    }

    /// The next response's outcome, past any output still to write.
    fn outcome(client: &mut Pop3Client) -> Result<Reply, ErrReply> {
        match client.next() {
            Ok(Progress::Output(_)) => outcome(client),
            Ok(Progress::Event(r)) => r.outcome,
            other => panic!("expected a response, got {other:?}"),
        }
    }

    #[test]
    fn pipelined_commands_get_their_own_shapes() {
        let mut client = ready();
        client.send(&Command::List(None)).unwrap();
        client.send(&Command::List(Some(1))).unwrap();
        client.send(&Command::Stat).unwrap();
        assert_eq!(output(&mut client), b"LIST\r\nLIST 1\r\nSTAT\r\n");
        client.enqueue_input(b"+OK\r\n1 10\r\n.\r\n+OK 1 10\r\n+OK 1 10\r\n");
        assert_eq!(
            outcome(&mut client),
            Ok(Reply::List(vec![ListEntry { msg: 1, octets: 10 }]))
        );
        assert_eq!(
            outcome(&mut client),
            Ok(Reply::ListOne(ListEntry { msg: 1, octets: 10 }))
        );
        assert!(matches!(outcome(&mut client), Ok(Reply::Stat(_))));
        assert_eq!(client.next(), Ok(Progress::NeedMoreInput));
        assert_eq!(client.outstanding(), 0);
    }

    #[test]
    fn err_to_a_multiline_command_is_one_line() {
        let mut client = ready();
        client.send(&Command::Retr(9)).unwrap();
        client.send(&Command::Noop).unwrap();
        client.enqueue_input(b"-ERR no such message\r\n+OK\r\n");
        assert!(outcome(&mut client).is_err());
        assert_eq!(outcome(&mut client), Ok(Reply::Ok(String::new())));
    }

    #[test]
    fn no_command_after_stls_until_the_handshake() {
        let mut client = ready();
        client.send(&Command::Stls).unwrap();
        assert_eq!(client.send(&Command::Capa), Err(CommandError::AfterStls));
        client.enqueue_input(b"+OK begin TLS\r\n");
        assert!(outcome(&mut client).is_ok());
        assert_eq!(client.send(&Command::Capa), Err(CommandError::AfterStls));
        client.tls_established();
        client.send(&Command::Capa).unwrap();
    }

    #[test]
    fn errors_are_sticky_and_release_the_buffer() {
        let mut client = Pop3Client::default();
        client.enqueue_input(b"HTTP/1.1 400 Bad Request\r\n");
        let first = client.next().unwrap_err();
        assert!(matches!(first, ProtocolError::Malformed { .. }));
        client.enqueue_input(b"+OK\r\n");
        assert_eq!(client.next(), Err(first));
        assert_eq!(client.buffered_input(), 0);
        assert!(matches!(
            client.send(&Command::Noop),
            Err(CommandError::SessionFailed { .. })
        ));
    }

    #[test]
    fn large_retr_gives_its_buffer_back() {
        let mut client = ready();
        client.send(&Command::Retr(1)).unwrap();
        let line = vec![b'a'; 998];
        let mut wire = b"+OK\r\n".to_vec();
        for _ in 0..1000 {
            wire.extend_from_slice(&line);
            wire.extend_from_slice(b"\r\n");
        }
        wire.extend_from_slice(b".\r\n");
        client.enqueue_input(&wire);
        match outcome(&mut client) {
            Ok(Reply::Message(bytes)) => assert_eq!(bytes.len(), 1000 * 1000),
            other => panic!("{other:?}"),
        }
        assert!(
            client.input.capacity() <= SHRINK_ABOVE,
            "{}",
            client.input.capacity()
        );
    }
}
