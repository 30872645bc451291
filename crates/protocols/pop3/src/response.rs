//! Typed responses, and the parsers for the pieces of one line.
//!
//! Parsers here see one line without its CRLF and return a reason string on
//! failure; the client turns it into a [`ProtocolError`](crate::ProtocolError)
//! with the command and an excerpt.

use std::fmt;

use crate::command::CommandKind;

/// One complete response: the command it answers and what the server said.
///
/// A `-ERR` is a normal outcome here, not an error of the core: the session
/// goes on (a failed `PASS` may be retried, a `-ERR` to `CAPA` means "no CAPA").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The command answered ([`CommandKind::Greeting`] for the greeting).
    pub command: CommandKind,
    /// `+OK` with its typed content, or `-ERR`.
    pub outcome: Result<Reply, ErrReply>,
}

/// The typed content of a `+OK` response; which variant depends on the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The greeting.
    Greeting(Greeting),
    /// A `+OK` with nothing typed in it (USER, PASS, STLS, DELE, NOOP, RSET,
    /// QUIT): the server's text.
    Ok(String),
    /// CAPA.
    Capabilities(Capabilities),
    /// STAT.
    Stat(Stat),
    /// LIST without argument.
    List(Vec<ListEntry>),
    /// LIST n.
    ListOne(ListEntry),
    /// UIDL without argument.
    Uidl(Vec<UidlEntry>),
    /// UIDL n.
    UidlOne(UidlEntry),
    /// RETR and TOP: the message bytes as stored, dot-unstuffed, with CRLF line
    /// ends and without the terminating `.` line.
    Message(Vec<u8>),
}

/// The server's greeting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    /// The text after `+OK `.
    pub text: String,
    /// The `<...>` APOP timestamp, if the server offered one (RFC 1939 §7).
    pub apop_timestamp: Option<String>,
}

/// `-ERR`: the server refused the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrReply {
    /// The RFC 2449 response code without brackets (`IN-USE`, `LOGIN-DELAY`,
    /// `SYS/TEMP`, `AUTH`, ...), which tells a transient refusal from a
    /// permanent one.
    pub code: Option<String>,
    /// The human-readable text, lossily decoded as UTF-8.
    pub text: String,
}

impl fmt::Display for ErrReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.code {
            Some(code) => write!(f, "-ERR [{code}] {}", self.text),
            None => write!(f, "-ERR {}", self.text),
        }
    }
}

/// The answer to STAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Messages in the maildrop (not counting those marked deleted).
    pub count: u32,
    /// Their total size in octets.
    pub octets: u64,
}

/// One line of a LIST answer: a message and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListEntry {
    /// The message number.
    pub msg: u32,
    /// Its exact size in octets, as the server counts them (CRLF line ends).
    pub octets: u64,
}

/// One line of a UIDL answer: a message and its unique id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UidlEntry {
    /// The message number.
    pub msg: u32,
    /// The unique id: 1 to 70 printable ASCII characters (RFC 1939 §7).
    pub uid: String,
}

/// The capabilities a server listed in answer to CAPA (RFC 2449).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    lines: Vec<String>,
}

impl Capabilities {
    pub(crate) fn push(&mut self, line: String) {
        self.lines.push(line);
    }

    /// Every capability line as sent, in order (`"SASL PLAIN LOGIN"`).
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// True if the server listed capability `name` (case-insensitive).
    pub fn has(&self, name: &str) -> bool {
        self.arguments(name).is_some()
    }

    /// The arguments of capability `name` (case-insensitive), if it was listed:
    /// `arguments("SASL")` gives `["PLAIN", "LOGIN"]`.
    pub fn arguments(&self, name: &str) -> Option<Vec<&str>> {
        self.lines.iter().find_map(|line| {
            let mut words = line.split(' ').filter(|w| !w.is_empty());
            let tag = words.next()?;
            tag.eq_ignore_ascii_case(name).then(|| words.collect())
        })
    }
}

/// A status line split into its indicator and text.
pub(crate) enum Status<'a> {
    Ok(&'a [u8]),
    Err(&'a [u8]),
}

/// Splits `+OK text` / `-ERR text`. The indicators are upper case and followed
/// by a space or the line end (RFC 1939 §3); anything else is not POP3.
pub(crate) fn parse_status(line: &[u8]) -> Result<Status<'_>, &'static str> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix(b"+OK") {
        (true, rest)
    } else if let Some(rest) = line.strip_prefix(b"-ERR") {
        (false, rest)
    } else {
        return Err("not +OK or -ERR");
    };
    let text = match rest {
        [] => rest,
        [b' ', text @ ..] => text,
        _ => return Err("status indicator not followed by a space"),
    };
    // 8-bit text is tolerated (some servers localise their messages), but a
    // control byte in a status line is never legitimate.
    if text.iter().any(|&b| b != b'\t' && b.is_ascii_control()) {
        return Err("control byte in status line");
    }
    Ok(if ok {
        Status::Ok(text)
    } else {
        Status::Err(text)
    })
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) fn parse_greeting(text_bytes: &[u8]) -> Greeting {
    let text = text(text_bytes);
    let apop_timestamp = text.find('<').and_then(|start| {
        let end = start + text[start..].find('>')?;
        Some(text[start..=end].to_owned())
    });
    Greeting {
        text,
        apop_timestamp,
    }
}

pub(crate) fn parse_err(text_bytes: &[u8]) -> ErrReply {
    let full = text(text_bytes);
    if let Some(rest) = full.strip_prefix('[')
        && let Some((code, after)) = rest.split_once(']')
        && !code.is_empty()
        && !code.contains(' ')
    {
        return ErrReply {
            code: Some(code.to_owned()),
            text: after.trim_start().to_owned(),
        };
    }
    ErrReply {
        code: None,
        text: full,
    }
}

/// `count octets[ anything]`: RFC 1939 allows text after the size.
pub(crate) fn parse_stat(text: &[u8]) -> Result<Stat, &'static str> {
    let (count, octets) = two_numbers(text)?;
    Ok(Stat { count, octets })
}

/// `msg octets[ anything]`, for a LIST line or the `+OK` of `LIST n`.
pub(crate) fn parse_scan(text: &[u8]) -> Result<ListEntry, &'static str> {
    let (msg, octets) = two_numbers(text)?;
    if msg == 0 {
        return Err("message number 0");
    }
    Ok(ListEntry { msg, octets })
}

/// `msg uid`, for a UIDL line or the `+OK` of `UIDL n`.
pub(crate) fn parse_uid(text: &[u8]) -> Result<UidlEntry, &'static str> {
    let (msg, uid) = split_word(text).ok_or("expected `msg uid`")?;
    let msg = parse_u32(msg).ok_or("bad message number")?;
    if msg == 0 {
        return Err("message number 0");
    }
    // RFC 1939 §7: the uid is printable ASCII 0x21..=0x7E; a space would
    // mean more fields than the grammar has.
    if uid.is_empty() || !uid.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err("unique id empty or not printable ASCII");
    }
    Ok(UidlEntry {
        msg,
        uid: text_ascii(uid),
    })
}

/// A capability line: printable ASCII only (RFC 2449 §6).
pub(crate) fn parse_capability(line: &[u8]) -> Result<String, &'static str> {
    if !line.iter().all(|b| (0x20..=0x7e).contains(b)) {
        return Err("capability not printable ASCII");
    }
    Ok(text_ascii(line))
}

fn text_ascii(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

fn two_numbers(text: &[u8]) -> Result<(u32, u64), &'static str> {
    let (first, rest) = split_word(text).ok_or("expected two numbers")?;
    let second = match split_word(rest) {
        Some((second, _anything)) => second,
        None => rest,
    };
    let first = parse_u32(first).ok_or("bad first number")?;
    let second = parse_u64(second).ok_or("bad second number")?;
    Ok((first, second))
}

fn split_word(text: &[u8]) -> Option<(&[u8], &[u8])> {
    let space = text.iter().position(|&b| b == b' ')?;
    Some((&text[..space], &text[space + 1..]))
}

fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

fn parse_u32(digits: &[u8]) -> Option<u32> {
    parse_u64(digits).and_then(|n| u32::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        assert!(matches!(parse_status(b"+OK"), Ok(Status::Ok(b""))));
        assert!(matches!(
            parse_status(b"+OK hi there"),
            Ok(Status::Ok(b"hi there"))
        ));
        assert!(matches!(parse_status(b"-ERR no"), Ok(Status::Err(b"no"))));
        assert!(parse_status(b"+OKAY").is_err());
        assert!(parse_status(b"+ok").is_err());
        assert!(parse_status(b"").is_err());
        assert!(parse_status(b"+OK a\0b").is_err());
        assert!(matches!(
            parse_status(b"+OK caf\xc3\xa9"),
            Ok(Status::Ok(_))
        ));
    }

    #[test]
    fn err_reply_codes() {
        let err = parse_err(b"[IN-USE] maildrop locked");
        assert_eq!(err.code.as_deref(), Some("IN-USE"));
        assert_eq!(err.text, "maildrop locked");
        assert_eq!(err.to_string(), "-ERR [IN-USE] maildrop locked");
        assert_eq!(parse_err(b"[not a code] x").code, None);
        assert_eq!(parse_err(b"[unclosed").code, None);
    }

    #[test]
    fn numbers_and_entries() {
        assert_eq!(
            parse_stat(b"2 320"),
            Ok(Stat {
                count: 2,
                octets: 320
            })
        );
        assert_eq!(
            parse_stat(b"2 320 trailing text").map(|s| s.octets),
            Ok(320)
        );
        assert!(parse_stat(b"2").is_err());
        assert!(parse_stat(b"-2 3").is_err());
        assert!(parse_stat(b"4294967296 1").is_err());
        assert!(parse_stat(b"1 18446744073709551616").is_err());
        assert!(parse_scan(b"0 10").is_err());
        assert_eq!(
            parse_uid(b"1 whqtswO00WBw418f9t5JxYwZ").map(|u| u.uid),
            Ok("whqtswO00WBw418f9t5JxYwZ".into())
        );
        assert!(parse_uid(b"1 two words").is_err());
        assert!(parse_uid(b"1 caf\xc3\xa9").is_err());
        assert!(parse_uid(b"1 ").is_err());
    }

    #[test]
    fn greeting_timestamp_and_capabilities() {
        let g = parse_greeting(b"POP3 server ready <1896.697170952@dbc.mil>");
        assert_eq!(
            g.apop_timestamp.as_deref(),
            Some("<1896.697170952@dbc.mil>")
        );
        assert_eq!(parse_greeting(b"ready <unclosed").apop_timestamp, None);
        let mut caps = Capabilities::default();
        caps.push("SASL PLAIN LOGIN".into());
        caps.push("STLS".into());
        assert!(caps.has("stls"));
        assert_eq!(caps.arguments("sasl"), Some(vec!["PLAIN", "LOGIN"]));
        assert!(!caps.has("TOP"));
    }
}
