//! A sans-I/O `text/event-stream` parser (the WHATWG HTML standard's
//! "event stream interpretation"), and JMAP's push events on top of it
//! (RFC 8620 §7.3).
//!
//! Lines end with CRLF, LF or CR; a CR at the very end of the input so far
//! waits for the next byte, so the result does not depend on how the stream
//! is split. Line length and event size are bounded.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Bounds on an event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Longest line.
    pub max_line: usize,
    /// Most data bytes in one event.
    pub max_event: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_line: 64 * 1024,
            max_event: 1024 * 1024,
        }
    }
}

/// The stream broke a bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// A line longer than [`StreamLimits::max_line`].
    #[error("event stream line longer than {limit} bytes")]
    LineTooLong {
        /// The limit.
        limit: usize,
    },
    /// An event's data larger than [`StreamLimits::max_event`].
    #[error("event larger than {limit} bytes")]
    EventTooLarge {
        /// The limit.
        limit: usize,
    },
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEvent {
    /// The `event:` field, `message` if none.
    pub event: String,
    /// The `data:` lines joined with LF.
    pub data: String,
    /// The last `id:` seen, if any.
    pub id: Option<String>,
}

/// Parses an event stream fed in pieces.
#[derive(Debug)]
pub struct EventStreamParser {
    limits: StreamLimits,
    buffer: Vec<u8>,
    /// Bytes of `buffer` consumed.
    pos: usize,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    retry: Option<u64>,
}

impl EventStreamParser {
    /// A parser at the start of a stream.
    pub fn new(limits: StreamLimits) -> Self {
        Self {
            limits,
            buffer: Vec::new(),
            pos: 0,
            started: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            last_id: None,
            retry: None,
        }
    }

    /// Adds bytes of the stream.
    pub fn enqueue_input(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            self.buffer.drain(..self.pos);
            self.pos = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The reconnection time the server asked for (`retry:`), in ms.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry
    }

    /// The next complete event, or `None` until more input arrives.
    pub fn next_event(&mut self) -> Result<Option<ServerEvent>, StreamError> {
        while let Some(line) = self.next_line()? {
            if let Some(event) = self.process(&line)? {
                return Ok(Some(event));
            }
        }
        Ok(None)
    }

    fn next_line(&mut self) -> Result<Option<Vec<u8>>, StreamError> {
        if !self.started {
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let rest = &self.buffer[self.pos..];
            if rest.len() < BOM.len() && BOM.starts_with(rest) {
                return Ok(None);
            }
            if rest.starts_with(BOM) {
                self.pos += BOM.len();
            }
            self.started = true;
        }
        let rest = &self.buffer[self.pos..];
        let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
            if rest.len() > self.limits.max_line {
                return Err(StreamError::LineTooLong {
                    limit: self.limits.max_line,
                });
            }
            return Ok(None);
        };
        if end > self.limits.max_line {
            return Err(StreamError::LineTooLong {
                limit: self.limits.max_line,
            });
        }
        let terminator = match (rest[end], rest.get(end + 1)) {
            (b'\r', Some(b'\n')) => 2,
            // A CR last in the buffer may be the first half of a CRLF.
            (b'\r', None) => return Ok(None),
            _ => 1,
        };
        let line = rest[..end].to_vec();
        self.pos += end + terminator;
        Ok(Some(line))
    }

    fn process(&mut self, line: &[u8]) -> Result<Option<ServerEvent>, StreamError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line[0] == b':' {
            return Ok(None); // a comment (servers ping with them)
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.data.len() + value.len() + 1 > self.limits.max_event {
                    return Err(StreamError::EventTooLarge {
                        limit: self.limits.max_event,
                    });
                }
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<ServerEvent> {
        let event = std::mem::take(&mut self.event);
        let mut data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        data.pop(); // the last LF
        Some(ServerEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
            id: self.last_id.clone(),
        })
    }
}

/// A JMAP push event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushEvent {
    /// Some types changed state in some accounts.
    StateChange(StateChange),
    /// A keep-alive ping.
    Ping,
    /// Any other event type, by name.
    Other(String),
}

/// RFC 8620 §7.1: `changed` maps account id → type name → new state.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StateChange {
    /// The changes.
    pub changed: BTreeMap<String, BTreeMap<String, String>>,
}

impl StateChange {
    /// True if `type_name` (such as `Email`) changed in `account`.
    pub fn changed(&self, account: &str, type_name: &str) -> bool {
        self.changed
            .get(account)
            .is_some_and(|types| types.contains_key(type_name))
    }
}

/// Reads a server event as a JMAP push event. A `state` event's data must be
/// a StateChange object; its `@type` is checked when present.
pub fn push_event(event: &ServerEvent) -> Result<PushEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct Typed {
        #[serde(rename = "@type", default)]
        kind: Option<String>,
        #[serde(flatten)]
        change: StateChange,
    }
    match event.event.as_str() {
        "state" => {
            let typed: Typed = serde_json::from_str(&event.data)?;
            match typed.kind.as_deref() {
                None | Some("StateChange") => Ok(PushEvent::StateChange(typed.change)),
                Some(other) => Err(serde::de::Error::custom(format!(
                    "a state event of @type {other:?}"
                ))),
            }
        }
        "ping" => Ok(PushEvent::Ping),
        other => Ok(PushEvent::Other(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_events(pieces: &[&[u8]], limits: StreamLimits) -> Result<Vec<ServerEvent>, StreamError> {
        let mut parser = EventStreamParser::new(limits);
        let mut events = Vec::new();
        for piece in pieces {
            parser.enqueue_input(piece);
            while let Some(event) = parser.next_event()? {
                events.push(event);
            }
        }
        Ok(events)
    }

    const STREAM: &[u8] = b"\xEF\xBB\xBF: hello\r\nretry: 5000\r\nevent: state\r\nid: 1\r\ndata: {\"@type\":\"StateChange\",\r\ndata: \"changed\":{\"u1\":{\"Email\":\"s9\"}}}\r\n\r\nevent: ping\rdata: {\"interval\":30}\r\rdata:x\n\ndata\n\nevent: lonely\n\n";

    #[test]
    fn parses_fields_line_ends_and_comments_however_split() {
        let whole = all_events(&[STREAM], StreamLimits::default()).unwrap();
        assert_eq!(whole.len(), 4);
        assert_eq!(whole[0].event, "state");
        assert_eq!(whole[0].id.as_deref(), Some("1"));
        assert_eq!(
            whole[0].data,
            "{\"@type\":\"StateChange\",\n\"changed\":{\"u1\":{\"Email\":\"s9\"}}}"
        );
        assert_eq!(whole[1].event, "ping");
        assert_eq!(
            (whole[2].event.as_str(), whole[2].data.as_str()),
            ("message", "x")
        );
        assert_eq!(whole[3].data, "", "`data` alone is an empty data line");
        let bytes: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(all_events(&bytes, StreamLimits::default()).unwrap(), whole);
        for at in 0..STREAM.len() {
            let (a, b) = STREAM.split_at(at);
            assert_eq!(
                all_events(&[a, b], StreamLimits::default()).unwrap(),
                whole,
                "{at}"
            );
        }
        match push_event(&whole[0]).unwrap() {
            PushEvent::StateChange(change) => assert!(change.changed("u1", "Email")),
            other => panic!("{other:?}"),
        }
        assert_eq!(push_event(&whole[1]).unwrap(), PushEvent::Ping);
        let mut parser = EventStreamParser::new(StreamLimits::default());
        parser.enqueue_input(STREAM);
        while parser.next_event().unwrap().is_some() {}
        assert_eq!(parser.retry_ms(), Some(5000));
    }

    #[test]
    fn bounds_lines_and_events() {
        let limits = StreamLimits {
            max_line: 16,
            max_event: 24,
        };
        let long_line = [b'x'; 40];
        assert_eq!(
            all_events(&[&long_line], limits),
            Err(StreamError::LineTooLong { limit: 16 })
        );
        let big = b"data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\n";
        assert_eq!(
            all_events(&[big], limits),
            Err(StreamError::EventTooLarge { limit: 24 })
        );
    }

    #[test]
    fn a_state_event_with_bad_json_is_an_error() {
        let event = ServerEvent {
            event: "state".into(),
            data: "{not json".into(),
            id: None,
        };
        assert!(push_event(&event).is_err());
        let wrong = ServerEvent {
            event: "state".into(),
            data: r#"{"@type":"Other","changed":{}}"#.into(),
            id: None,
        };
        assert!(push_event(&wrong).is_err());
    }
}
