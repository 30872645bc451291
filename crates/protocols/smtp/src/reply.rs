//! The strict SMTP/LMTP reply parser (RFC 5321 §4.2, RFC 2034 enhanced codes).
//!
//! Two entry points share one line-by-line assembler:
//!
//! * [`decode_reply`] is stateless: give it bytes, get a reply and the rest,
//!   or [`DecodeError::Incomplete`] until a whole (possibly multi-line) reply
//!   has arrived;
//! * [`ReplyReader`] owns a buffer for the client core: bytes go in as they
//!   arrive, whole replies come out, and no byte is scanned twice.
//!
//! The parser is strict because the server is the thing under test and may be
//! hostile or broken: every line must end in CRLF, carry a code in 200..=559
//! followed by SP, `-` or nothing, and UTF-8 text without control characters;
//! lines and replies are capped ([`ReplyLimits`]) so a server cannot make the
//! client buffer without bound.
//!
//! Why not smtp-proto's `ResponseReceiver`: it caps a reply's total length
//! rather than its lines and line count, accepts a bare LF as a line end, and
//! does not report a code that changes mid-reply or text that is not UTF-8 —
//! all things a load tester facing a broken server wants as distinct errors.

use std::fmt;

/// How much of a reply the parser accepts before calling it hostile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimits {
    /// Longest line, CRLF included. RFC 5321 asks for 512; real servers stay
    /// well under the default 4 KiB.
    pub max_line_len: usize,
    /// Most lines in one reply. EHLO replies are the longest in practice,
    /// with a few dozen lines.
    pub max_lines: usize,
}

impl Default for ReplyLimits {
    fn default() -> Self {
        Self {
            max_line_len: 4096,
            max_lines: 1000,
        }
    }
}

/// A three-digit reply code, always within 200..=559 with a second digit 0..=5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplyCode(u16);

/// The meaning of a reply code's first digit (RFC 5321 §4.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyClass {
    /// 2yz: the command succeeded.
    PositiveCompletion,
    /// 3yz: go on (354 after DATA, 334 during AUTH).
    PositiveIntermediate,
    /// 4yz: failed for now; the same command may succeed later.
    TransientNegative,
    /// 5yz: failed for good.
    PermanentNegative,
}

impl ReplyCode {
    /// `220`, the greeting and the go-ahead for STARTTLS.
    pub const SERVICE_READY: ReplyCode = ReplyCode(220);
    /// `221`, the answer to QUIT.
    pub const CLOSING: ReplyCode = ReplyCode(221);
    /// `235`, authentication succeeded.
    pub const AUTH_SUCCEEDED: ReplyCode = ReplyCode(235);
    /// `250`, the usual success.
    pub const OK: ReplyCode = ReplyCode(250);
    /// `334`, an AUTH challenge.
    pub const AUTH_CHALLENGE: ReplyCode = ReplyCode(334);
    /// `354`, send the message body.
    pub const START_MAIL_INPUT: ReplyCode = ReplyCode(354);
    /// `421`, the server is closing the connection.
    pub const SERVICE_NOT_AVAILABLE: ReplyCode = ReplyCode(421);

    /// The code if `value` is a valid reply code.
    pub fn new(value: u16) -> Option<ReplyCode> {
        let valid = (200..=559).contains(&value) && (value / 10) % 10 <= 5;
        valid.then_some(ReplyCode(value))
    }

    /// The code as a number.
    pub fn as_u16(self) -> u16 {
        self.0
    }

    /// What the first digit says.
    pub fn class(self) -> ReplyClass {
        match self.0 / 100 {
            2 => ReplyClass::PositiveCompletion,
            3 => ReplyClass::PositiveIntermediate,
            4 => ReplyClass::TransientNegative,
            _ => ReplyClass::PermanentNegative,
        }
    }

    /// True for 2yz.
    pub fn is_positive_completion(self) -> bool {
        self.class() == ReplyClass::PositiveCompletion
    }
}

impl fmt::Display for ReplyCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An enhanced status code such as `2.1.0` (RFC 3463, announced by
/// ENHANCEDSTATUSCODES, RFC 2034).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EnhancedStatus {
    /// 2, 4 or 5; always the same as the reply code's first digit.
    pub class: u8,
    /// The subject (0..=999): 1 addressing, 2 mailbox, 3 mail system ...
    pub subject: u16,
    /// The detail (0..=999).
    pub detail: u16,
}

impl fmt::Display for EnhancedStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.class, self.subject, self.detail)
    }
}

/// One complete server reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    code: ReplyCode,
    enhanced: Option<EnhancedStatus>,
    lines: Vec<String>,
}

impl Reply {
    /// The reply code, the same on every line.
    pub fn code(&self) -> ReplyCode {
        self.code
    }

    /// The enhanced status code at the start of the first line's text, if the
    /// server sent one whose class agrees with the reply code.
    pub fn enhanced(&self) -> Option<EnhancedStatus> {
        self.enhanced
    }

    /// The text of each line after the code and its separator, enhanced status
    /// code included. Never empty: a one-line reply has one entry.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// All lines joined with a space, for messages and error reports.
    pub fn text(&self) -> String {
        self.lines.join(" ")
    }

    /// True for a 2yz reply.
    pub fn is_positive_completion(&self) -> bool {
        self.code.is_positive_completion()
    }
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.text())
    }
}

/// What is wrong with a malformed reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MalformedReason {
    /// A line is longer than [`ReplyLimits::max_line_len`] (or no line end came
    /// within that many bytes).
    LineTooLong,
    /// A reply has more than [`ReplyLimits::max_lines`] lines.
    TooManyLines,
    /// A line ends in LF without CR.
    BareLineFeed,
    /// A line does not start with three digits.
    NotACode,
    /// Three digits, but not a code RFC 5321 allows (for example 600 or 199).
    CodeOutOfRange,
    /// The code is followed by something other than SP, `-` or the line end.
    MissingSeparator,
    /// A continuation line carries a different code from the first line.
    CodeChanged,
    /// The text holds a control character (NUL, bare CR, DEL ...).
    ControlCharacter,
    /// The text is not UTF-8.
    InvalidUtf8,
}

impl MalformedReason {
    /// A short stable label, for counting errors by kind.
    pub fn label(self) -> &'static str {
        match self {
            MalformedReason::LineTooLong => "line-too-long",
            MalformedReason::TooManyLines => "too-many-lines",
            MalformedReason::BareLineFeed => "bare-line-feed",
            MalformedReason::NotACode => "not-a-code",
            MalformedReason::CodeOutOfRange => "code-out-of-range",
            MalformedReason::MissingSeparator => "missing-separator",
            MalformedReason::CodeChanged => "code-changed",
            MalformedReason::ControlCharacter => "control-character",
            MalformedReason::InvalidUtf8 => "invalid-utf8",
        }
    }
}

impl fmt::Display for MalformedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The most bytes of an offending line kept in a [`MalformedReply`]: enough to
/// recognise it in a log, too few to let a hostile server fill memory.
pub const EXCERPT_LEN: usize = 64;

/// A reply the parser refused, with the start of the offending line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed reply ({reason}): \"{}\"", excerpt.escape_ascii())]
pub struct MalformedReply {
    /// What is wrong.
    pub reason: MalformedReason,
    /// At most [`EXCERPT_LEN`] bytes of the offending line.
    pub excerpt: Vec<u8>,
}

impl MalformedReply {
    fn new(reason: MalformedReason, line: &[u8]) -> Self {
        Self {
            reason,
            excerpt: line[..line.len().min(EXCERPT_LEN)].to_vec(),
        }
    }
}

/// Why [`decode_reply`] returned no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The input ends before the reply does: read more and try again.
    #[error("the reply is incomplete")]
    Incomplete,
    /// The input can never become a valid reply.
    #[error(transparent)]
    Malformed(#[from] MalformedReply),
}

/// Decodes one reply from the start of `input` with the default limits.
///
/// Returns the bytes after the reply and the reply, or
/// [`DecodeError::Incomplete`] while the final line (the one whose code is
/// followed by SP or nothing) has not fully arrived.
pub fn decode_reply(input: &[u8]) -> Result<(&[u8], Reply), DecodeError> {
    decode_reply_with(input, ReplyLimits::default())
}

/// [`decode_reply`] with explicit limits.
pub fn decode_reply_with(input: &[u8], limits: ReplyLimits) -> Result<(&[u8], Reply), DecodeError> {
    let mut assembler = ReplyAssembler::default();
    let mut rest = input;
    loop {
        let Some((line, consumed)) = split_line(rest, 0, limits)? else {
            return Err(DecodeError::Incomplete);
        };
        let reply = assembler.push_line(line, limits)?;
        rest = &rest[consumed..];
        if let Some(reply) = reply {
            return Ok((rest, reply));
        }
    }
}

/// Finds the first line of `input`, searching for its LF from `search_from`
/// (bytes before it are known to hold none). Returns the line without CRLF and
/// the bytes it takes up, or `None` if it has not ended yet.
fn split_line(
    input: &[u8],
    search_from: usize,
    limits: ReplyLimits,
) -> Result<Option<(&[u8], usize)>, MalformedReply> {
    let searched = input.get(search_from..).unwrap_or_default();
    let Some(offset) = searched.iter().position(|&b| b == b'\n') else {
        // Waiting for the LF of an over-long line would let the server grow
        // the buffer without bound, so give up as soon as the cap is passed.
        if input.len() >= limits.max_line_len {
            return Err(MalformedReply::new(MalformedReason::LineTooLong, input));
        }
        return Ok(None);
    };
    let lf = search_from + offset;
    let consumed = lf + 1;
    if consumed > limits.max_line_len {
        return Err(MalformedReply::new(MalformedReason::LineTooLong, input));
    }
    let Some(line) = input[..lf].strip_suffix(b"\r") else {
        return Err(MalformedReply::new(
            MalformedReason::BareLineFeed,
            &input[..consumed],
        ));
    };
    Ok(Some((line, consumed)))
}

/// Builds a reply from its lines (CRLF already removed), checking each.
#[derive(Debug, Default)]
struct ReplyAssembler {
    code: Option<ReplyCode>,
    lines: Vec<String>,
}

impl ReplyAssembler {
    /// Adds one line; returns the reply when this was its last line.
    fn push_line(
        &mut self,
        line: &[u8],
        limits: ReplyLimits,
    ) -> Result<Option<Reply>, MalformedReply> {
        let malformed = |reason| MalformedReply::new(reason, line);
        let (code, is_last, text) = parse_line(line).map_err(malformed)?;
        if self.code.is_some_and(|first| first != code) {
            return Err(malformed(MalformedReason::CodeChanged));
        }
        if self.lines.len() >= limits.max_lines {
            return Err(malformed(MalformedReason::TooManyLines));
        }
        self.code = Some(code);
        self.lines.push(text.to_owned());
        if !is_last {
            return Ok(None);
        }
        let lines = std::mem::take(&mut self.lines);
        self.code = None;
        let enhanced = lines.first().and_then(|first| enhanced_status(code, first));
        Ok(Some(Reply {
            code,
            enhanced,
            lines,
        }))
    }
}

/// Splits one line into code, "is this the last line" and text.
fn parse_line(line: &[u8]) -> Result<(ReplyCode, bool, &str), MalformedReason> {
    let digits = match line {
        [a, b, c, ..] if [a, b, c].iter().all(|d| d.is_ascii_digit()) => [*a, *b, *c],
        _ => return Err(MalformedReason::NotACode),
    };
    let value = digits
        .iter()
        .fold(0u16, |acc, d| acc * 10 + u16::from(d - b'0'));
    let code = ReplyCode::new(value).ok_or(MalformedReason::CodeOutOfRange)?;
    let (is_last, text) = match line.get(3) {
        None => (true, &[][..]),
        Some(b' ') => (true, &line[4..]),
        Some(b'-') => (false, &line[4..]),
        Some(_) => return Err(MalformedReason::MissingSeparator),
    };
    let text = std::str::from_utf8(text).map_err(|_| MalformedReason::InvalidUtf8)?;
    // RFC 5321 textstring is HT and printable ASCII; RFC 6531 adds UTF-8.
    if text.chars().any(|c| c.is_control() && c != '\t') {
        return Err(MalformedReason::ControlCharacter);
    }
    Ok((code, is_last, text))
}

/// Reads `class.subject.detail` at the start of `text`, if it is there and
/// agrees with the reply code. Anything else is ordinary text, not an error:
/// servers without ENHANCEDSTATUSCODES write what they like.
fn enhanced_status(code: ReplyCode, text: &str) -> Option<EnhancedStatus> {
    let token = text.split([' ', '\t']).next()?;
    let mut parts = token.split('.');
    let (class, subject, detail) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let number = |part: &str, max_digits: usize| {
        let ok = (1..=max_digits).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit());
        ok.then(|| part.parse::<u16>().ok()).flatten()
    };
    let class = number(class, 1)?;
    if !matches!(class, 2 | 4 | 5) || class != code.as_u16() / 100 {
        return None;
    }
    Some(EnhancedStatus {
        class: u8::try_from(class).ok()?,
        subject: number(subject, 3)?,
        detail: number(detail, 3)?,
    })
}

/// A buffer of server bytes that yields whole replies, for the client core.
///
/// Bytes are appended with [`ReplyReader::push`]; [`ReplyReader::next_reply`]
/// takes out one reply at a time. Lines already checked are dropped from the
/// buffer as they complete, and the part of an unfinished line already
/// searched is remembered, so feeding one byte at a time stays linear.
#[derive(Debug, Default)]
pub struct ReplyReader {
    buffer: Vec<u8>,
    searched: usize,
    assembler: ReplyAssembler,
    limits: ReplyLimits,
}

/// Above this capacity an empty input buffer is released between replies: the
/// engine keeps thousands of idle connections and each should stay small.
const IDLE_BUFFER_CAPACITY: usize = 1024;

impl ReplyReader {
    /// An empty reader with the given limits.
    pub fn with_limits(limits: ReplyLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Appends bytes received from the server.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete reply, `Ok(None)` if more bytes are needed.
    ///
    /// After an error the reader's contents are meaningless: the connection
    /// has lost its framing and should be dropped.
    pub fn next_reply(&mut self) -> Result<Option<Reply>, MalformedReply> {
        let mut start = 0;
        let result = loop {
            let rest = &self.buffer[start..];
            match split_line(rest, self.searched, self.limits) {
                Err(error) => break Err(error),
                Ok(None) => {
                    self.searched = rest.len();
                    break Ok(None);
                }
                Ok(Some((line, consumed))) => {
                    self.searched = 0;
                    let pushed = self.assembler.push_line(line, self.limits);
                    start += consumed;
                    match pushed {
                        Err(error) => break Err(error),
                        Ok(Some(reply)) => break Ok(Some(reply)),
                        Ok(None) => {}
                    }
                }
            }
        };
        self.buffer.drain(..start);
        if self.buffer.is_empty() && self.buffer.capacity() > IDLE_BUFFER_CAPACITY {
            self.buffer = Vec::new();
        }
        result
    }

    /// True when no byte is waiting, not even part of a line.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty() && self.assembler.lines.is_empty()
    }

    /// The bytes of an unfinished reply, at most [`EXCERPT_LEN`], for the error
    /// raised when the server closes the connection mid-reply.
    pub fn pending_excerpt(&self) -> Vec<u8> {
        let mut excerpt = Vec::new();
        for line in &self.assembler.lines {
            excerpt.extend_from_slice(line.as_bytes());
            excerpt.extend_from_slice(b"\r\n");
        }
        excerpt.extend_from_slice(&self.buffer);
        excerpt.truncate(EXCERPT_LEN);
        excerpt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(input: &[u8]) -> MalformedReason {
        match decode_reply(input) {
            Err(DecodeError::Malformed(m)) => m.reason,
            other => panic!("expected malformed, got {other:?}"),
        }
    }

    #[test]
    fn single_line_with_enhanced_code() {
        let (rest, reply) = decode_reply(b"250 2.1.0 Ok\r\nextra").unwrap();
        assert_eq!(rest, b"extra");
        assert_eq!(reply.code(), ReplyCode::OK);
        assert_eq!(reply.lines(), ["2.1.0 Ok"]);
        assert_eq!(
            reply.enhanced().map(|e| e.to_string()),
            Some("2.1.0".into())
        );
    }

    #[test]
    fn multi_line_needs_the_final_line() {
        let input = b"250-mx.example\r\n250-PIPELINING\r\n250 SIZE 100\r\n";
        for cut in 0..input.len() {
            assert_eq!(decode_reply(&input[..cut]), Err(DecodeError::Incomplete));
        }
        let (rest, reply) = decode_reply(input).unwrap();
        assert!(rest.is_empty());
        assert_eq!(reply.lines().len(), 3);
        assert_eq!(reply.enhanced(), None);
    }

    #[test]
    fn code_without_text_is_a_final_line() {
        let (_, reply) = decode_reply(b"250\r\n").unwrap();
        assert_eq!(reply.lines(), [""]);
    }

    #[test]
    fn enhanced_code_must_agree_with_the_reply_class() {
        let (_, reply) = decode_reply(b"550 2.1.0 odd\r\n").unwrap();
        assert_eq!(reply.enhanced(), None);
        let (_, reply) = decode_reply(b"550 5.1.1234 odd\r\n").unwrap();
        assert_eq!(reply.enhanced(), None);
        let (_, reply) = decode_reply(b"452 4.2.2 Mailbox full\r\n").unwrap();
        assert_eq!(
            reply.enhanced(),
            Some(EnhancedStatus {
                class: 4,
                subject: 2,
                detail: 2
            })
        );
    }

    #[test]
    fn malformed_inputs_are_errors() {
        assert_eq!(reason(b"hello\r\n"), MalformedReason::NotACode);
        assert_eq!(reason(b"25\r\n"), MalformedReason::NotACode);
        assert_eq!(reason(b"600 x\r\n"), MalformedReason::CodeOutOfRange);
        assert_eq!(reason(b"199 x\r\n"), MalformedReason::CodeOutOfRange);
        assert_eq!(reason(b"260 x\r\n"), MalformedReason::CodeOutOfRange);
        assert_eq!(reason(b"250x\r\n"), MalformedReason::MissingSeparator);
        assert_eq!(reason(b"250-a\r\n251 b\r\n"), MalformedReason::CodeChanged);
        assert_eq!(reason(b"250 a\x00b\r\n"), MalformedReason::ControlCharacter);
        assert_eq!(reason(b"250 a\rb\r\n"), MalformedReason::ControlCharacter);
        assert_eq!(reason(b"250 a\xffb\r\n"), MalformedReason::InvalidUtf8);
        assert_eq!(reason(b"250 ok\n"), MalformedReason::BareLineFeed);
    }

    #[test]
    fn utf8_text_is_accepted() {
        let (_, reply) = decode_reply("250 café\r\n".as_bytes()).unwrap();
        assert_eq!(reply.lines(), ["café"]);
    }

    #[test]
    fn limits_bound_memory() {
        let limits = ReplyLimits {
            max_line_len: 16,
            max_lines: 3,
        };
        let long = b"250 0123456789abcdef";
        assert!(matches!(
            decode_reply_with(long, limits),
            Err(DecodeError::Malformed(MalformedReply {
                reason: MalformedReason::LineTooLong,
                ..
            }))
        ));
        let many = b"250-a\r\n250-b\r\n250-c\r\n250 d\r\n";
        assert!(matches!(
            decode_reply_with(many, limits),
            Err(DecodeError::Malformed(MalformedReply {
                reason: MalformedReason::TooManyLines,
                ..
            }))
        ));
        let exact = b"250-a\r\n250-b\r\n250 c\r\n";
        assert!(decode_reply_with(exact, limits).is_ok());
    }

    #[test]
    fn excerpt_is_truncated() {
        let mut line = b"999 ".to_vec();
        line.extend(std::iter::repeat_n(b'x', 500));
        line.extend_from_slice(b"\r\n");
        let Err(DecodeError::Malformed(m)) = decode_reply(&line) else {
            panic!("expected an error");
        };
        assert_eq!(m.excerpt.len(), EXCERPT_LEN);
    }

    #[test]
    fn reader_one_byte_at_a_time_matches_all_at_once() {
        let input = b"220 hi\r\n250-a\r\n250-b\r\n250 c\r\n354 go\r\n";
        let mut whole = ReplyReader::default();
        whole.push(input);
        let mut expected = Vec::new();
        while let Some(reply) = whole.next_reply().unwrap() {
            expected.push(reply);
        }
        assert_eq!(expected.len(), 3);
        let mut bytewise = ReplyReader::default();
        let mut got = Vec::new();
        for byte in input {
            bytewise.push(&[*byte]);
            while let Some(reply) = bytewise.next_reply().unwrap() {
                got.push(reply);
            }
        }
        assert_eq!(got, expected);
        assert!(bytewise.is_empty());
    }

    #[test]
    fn reader_releases_its_buffer_after_a_large_reply() {
        let mut reader = ReplyReader::default();
        let mut big = Vec::new();
        for _ in 0..500 {
            big.extend_from_slice(b"250-0123456789012345678901234567890123456789\r\n");
        }
        big.extend_from_slice(b"250 end\r\n");
        reader.push(&big);
        let reply = reader.next_reply().unwrap().unwrap();
        assert_eq!(reply.lines().len(), 501);
        assert_eq!(reader.buffer.capacity(), 0);
        assert_eq!(reader.assembler.lines.capacity(), 0);
    }

    #[test]
    fn reader_refuses_an_endless_line_early() {
        let mut reader = ReplyReader::default();
        for _ in 0..5000 {
            reader.push(b"x");
            if let Err(e) = reader.next_reply() {
                assert_eq!(e.reason, MalformedReason::LineTooLong);
                return;
            }
        }
        panic!("an endless line was buffered");
    }
}
