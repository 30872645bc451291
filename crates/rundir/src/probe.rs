//! The one bounded reader every post-run server probe reads through
//! (issue 26, item 1).
//!
//! A probe asks a server who it is after a run (its greeting, IMAP ID).
//! The server may be hostile or broken: an endless literal, a greeting
//! dripped one byte a second, an endless run of `220-` lines. So a probe
//! has one deadline for all of its work (connecting, writing and every
//! read together, not per read), a cap on the bytes of a line and of a
//! reply, a cap on a reply's lines, and never reads an IMAP literal: it
//! stops where one is announced. Memory stays within the caps whatever
//! the server sends, and the probe ends by its deadline.

use std::io::{Read as _, Write as _};
use std::net::{TcpStream, ToSocketAddrs as _};
use std::time::{Duration, Instant};

/// Longest line kept, in bytes: a greeting or an ID answer is one short line.
pub const MAX_LINE_BYTES: usize = 1024;
/// Most bytes of one reply (a greeting with its continuation lines, the
/// untagged answers to one command).
pub const MAX_REPLY_BYTES: usize = 8 * 1024;
/// Most lines of one reply: `220-` continuation lines, untagged answers.
pub const MAX_REPLY_LINES: usize = 32;

/// Why a probe stopped reading before the server finished.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeStop {
    /// The probe's deadline passed.
    #[error("the probe's deadline passed")]
    Deadline,
    /// The server closed the connection.
    #[error("the server closed the connection")]
    Closed,
    /// A line longer than [`MAX_LINE_BYTES`].
    #[error("a line longer than {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    /// A reply longer than [`MAX_REPLY_BYTES`] or [`MAX_REPLY_LINES`].
    #[error("a reply longer than {MAX_REPLY_BYTES} bytes or {MAX_REPLY_LINES} lines")]
    ReplyTooLong,
    /// Connecting, reading or writing failed.
    #[error("{0}")]
    Io(String),
}

/// A point in time every step of a probe must finish by.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(Instant);

impl Deadline {
    /// `limit` from now.
    pub fn after(limit: Duration) -> Self {
        Self(Instant::now() + limit)
    }

    /// The time left, or [`ProbeStop::Deadline`] when none is.
    fn left(self) -> Result<Duration, ProbeStop> {
        let left = self.0.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(ProbeStop::Deadline)
        } else {
            Ok(left)
        }
    }
}

/// A connection to a server under a [`Deadline`], read line by line within
/// the caps.
pub struct BoundedConnection {
    stream: TcpStream,
    deadline: Deadline,
    /// Bytes read and not yet handed out as a line (at most a line's cap
    /// plus one read).
    pending: Vec<u8>,
    reply_bytes: usize,
    reply_lines: usize,
}

/// Bytes asked for by one read.
const READ_CHUNK: usize = 512;

impl BoundedConnection {
    /// Connects to `addr` (`host:port`) within what is left of `deadline`.
    pub fn connect(addr: &str, deadline: Deadline) -> Result<Self, ProbeStop> {
        let io = |e: std::io::Error| ProbeStop::Io(format!("{addr}: {e}"));
        let sock = addr
            .to_socket_addrs()
            .map_err(io)?
            .next()
            .ok_or_else(|| ProbeStop::Io(format!("{addr}: no address")))?;
        let stream = TcpStream::connect_timeout(&sock, deadline.left()?).map_err(io)?;
        Ok(Self {
            stream,
            deadline,
            pending: Vec::with_capacity(MAX_LINE_BYTES + READ_CHUNK),
            reply_bytes: 0,
            reply_lines: 0,
        })
    }

    /// Starts counting a new reply against [`MAX_REPLY_BYTES`] and
    /// [`MAX_REPLY_LINES`].
    pub fn start_reply(&mut self) {
        self.reply_bytes = 0;
        self.reply_lines = 0;
    }

    /// Writes `bytes` within the deadline.
    pub fn send(&mut self, bytes: &[u8]) -> Result<(), ProbeStop> {
        self.stream
            .set_write_timeout(Some(self.deadline.left()?))
            .and_then(|()| self.stream.write_all(bytes))
            .map_err(|e| self.stopped(&e))
    }

    /// The next line, without its line break, within the deadline and the
    /// caps. Control characters are kept (the caller cleans the text).
    pub fn line(&mut self) -> Result<String, ProbeStop> {
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                self.count(line.len())?;
                if line.len() > MAX_LINE_BYTES {
                    return Err(ProbeStop::LineTooLong);
                }
                let text = String::from_utf8_lossy(&line);
                return Ok(text.trim_end_matches(['\r', '\n']).to_owned());
            }
            if self.pending.len() > MAX_LINE_BYTES {
                return Err(ProbeStop::LineTooLong);
            }
            let mut chunk = [0u8; READ_CHUNK];
            let left = self.deadline.left()?;
            let read = self
                .stream
                .set_read_timeout(Some(left))
                .and_then(|()| self.stream.read(&mut chunk))
                .map_err(|e| self.stopped(&e))?;
            if read == 0 {
                return Err(ProbeStop::Closed);
            }
            self.pending.extend_from_slice(&chunk[..read]);
        }
    }

    fn count(&mut self, bytes: usize) -> Result<(), ProbeStop> {
        self.reply_bytes += bytes;
        self.reply_lines += 1;
        if self.reply_bytes > MAX_REPLY_BYTES || self.reply_lines > MAX_REPLY_LINES {
            return Err(ProbeStop::ReplyTooLong);
        }
        Ok(())
    }

    /// A timed-out read or write is the deadline passing.
    fn stopped(&self, error: &std::io::Error) -> ProbeStop {
        match error.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ProbeStop::Deadline,
            _ if self.deadline.left().is_err() => ProbeStop::Deadline,
            _ => ProbeStop::Io(error.to_string()),
        }
    }
}

/// Whether an IMAP line announces a literal (`... {123}` or `{123+}`):
/// the bytes after it are not lines, and a probe reads no further.
pub fn announces_literal(line: &str) -> bool {
    let Some(open) = line.strip_suffix('}').and_then(|l| l.rfind('{')) else {
        return false;
    };
    let count = line[open + 1..line.len() - 1].trim_end_matches('+');
    !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::net::TcpListener;

    /// A server that writes `bytes` on its first connection, then holds it open.
    fn serving(bytes: &'static [u8]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let _ = stream.write_all(bytes);
            std::thread::sleep(Duration::from_secs(30));
        });
        addr
    }

    #[test]
    fn literals_are_recognised() {
        assert!(announces_literal("* ID (\"name\" {5}"));
        assert!(announces_literal("* ID {99999999999+}"));
        assert!(!announces_literal("* ID (\"name\" \"x\")"));
        assert!(!announces_literal("{}"));
        assert!(!announces_literal("a {b}"));
    }

    #[test]
    fn lines_past_their_cap_stop_the_probe_and_short_ones_read() {
        let addr = serving(b"220-one\r\n220 two\r\n");
        let mut c =
            BoundedConnection::connect(&addr, Deadline::after(Duration::from_secs(60))).unwrap();
        assert_eq!(c.line().unwrap(), "220-one");
        assert_eq!(c.line().unwrap(), "220 two");

        let long: &'static [u8] = Box::leak(vec![b'x'; MAX_LINE_BYTES * 3].into_boxed_slice());
        let addr = serving(long);
        let mut c =
            BoundedConnection::connect(&addr, Deadline::after(Duration::from_secs(60))).unwrap();
        assert_eq!(c.line(), Err(ProbeStop::LineTooLong));
    }

    #[test]
    fn a_silent_server_ends_the_probe_at_its_deadline() {
        let addr = serving(b"");
        let mut c =
            BoundedConnection::connect(&addr, Deadline::after(Duration::from_millis(200))).unwrap();
        assert_eq!(c.line(), Err(ProbeStop::Deadline));
    }
}
