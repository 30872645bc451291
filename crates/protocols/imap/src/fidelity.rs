//! How close one IMAP session's traffic is to another's, per action (issue
//! 28 item 3): the Rust twin of `scripts/record/measure.py`, pure.
//!
//! A transcript is the fixtures' text format (`<seconds> c<N> C: line`,
//! `S: line`, `open`, `close`; literals elided as `{N}<N bytes>`).
//! [`measure`] cuts it at the action times (an action owns what the client
//! sent from its start to the next action's start) into the multiset of
//! commands (`UID FETCH`, `IDLE`, ...), the multiset of FETCH items with
//! section arguments dropped, connections opened, logins and bytes each
//! way. [`weighted_jaccard`] compares two multisets: the sum of the smaller
//! counts over the sum of the larger. [`wire_lines`] turns the bytes a
//! session recorded ([`crate::Wire`]) into transcript lines, literals elided
//! and credentials replaced, so that peakhour's own sessions are measured
//! the same way.

use std::collections::BTreeMap;

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Seconds since the transcript's start.
    pub at: f64,
    /// The connection (`c1`, `c2`, ...).
    pub connection: String,
    /// What happened.
    pub kind: LineKind,
}

/// What a transcript line records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    /// The connection opened.
    Open,
    /// The connection closed.
    Close,
    /// The client sent this line.
    Client(String),
    /// The server sent this line.
    Server(String),
}

/// An action's window in a transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionWindow {
    /// The action's name (`open_inbox`, `read`, `idle` ...).
    pub action: String,
    /// When it started, in transcript seconds.
    pub start: f64,
    /// When it ended (only the last action's end bounds its window).
    pub end: f64,
}

/// What the client sent in one action's window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActionMeasure {
    /// The action.
    pub action: String,
    /// The window's length in seconds.
    pub seconds: f64,
    /// Commands by name (`UID FETCH`, `SELECT` ...), with their counts.
    pub commands: BTreeMap<String, u64>,
    /// FETCH items (`BODY.PEEK[HEADER.FIELDS]`, `FLAGS` ...), with their counts.
    pub fetch_items: BTreeMap<String, u64>,
    /// Connections opened.
    pub connections: u64,
    /// Logins the server confirmed.
    pub logins: u64,
    /// Bytes the client sent (literals at their full size).
    pub bytes_from_client: u64,
    /// Bytes the server sent.
    pub bytes_from_server: u64,
}

impl ActionMeasure {
    /// Connections opened per hour of the window.
    pub fn connections_per_hour(&self) -> f64 {
        self.connections as f64 * 3600.0 / self.seconds.max(1e-9)
    }

    /// Logins per hour of the window.
    pub fn logins_per_hour(&self) -> f64 {
        self.logins as f64 * 3600.0 / self.seconds.max(1e-9)
    }

    /// Commands and FETCH items in one multiset (items prefixed `FETCH `),
    /// the set the similarity score compares.
    pub fn joint(&self) -> BTreeMap<String, u64> {
        let mut all = self.commands.clone();
        for (item, count) in &self.fetch_items {
            *all.entry(format!("item {item}")).or_default() += count;
        }
        all
    }

    /// The counts scaled to a window of `seconds` (rounded): two idle
    /// windows of different lengths compared as rates.
    pub fn over(&self, seconds: f64) -> ActionMeasure {
        let factor = seconds / self.seconds.max(1e-9);
        let scale = |m: &BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| (k.clone(), (*v as f64 * factor).round() as u64))
                .filter(|(_, v)| *v > 0)
                .collect()
        };
        ActionMeasure {
            action: self.action.clone(),
            seconds,
            commands: scale(&self.commands),
            fetch_items: scale(&self.fetch_items),
            connections: (self.connections as f64 * factor).round() as u64,
            logins: (self.logins as f64 * factor).round() as u64,
            bytes_from_client: (self.bytes_from_client as f64 * factor).round() as u64,
            bytes_from_server: (self.bytes_from_server as f64 * factor).round() as u64,
        }
    }

    /// The counts divided by `n` (rounded), for a window that holds `n`
    /// repetitions of one thing (the idle hour's syncs).
    pub fn per(&self, n: u64) -> ActionMeasure {
        let n = n.max(1);
        let div = |m: &BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| (k.clone(), (v + n / 2) / n))
                .filter(|(_, v)| *v > 0)
                .collect()
        };
        ActionMeasure {
            action: self.action.clone(),
            seconds: self.seconds / n as f64,
            commands: div(&self.commands),
            fetch_items: div(&self.fetch_items),
            connections: self.connections / n,
            logins: self.logins / n,
            bytes_from_client: self.bytes_from_client / n,
            bytes_from_server: self.bytes_from_server / n,
        }
    }
}

/// Why a transcript could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: not a transcript line: {text:?}")]
pub struct TranscriptError {
    /// The line's number, from 1.
    pub line: usize,
    /// Its start.
    pub text: String,
}

/// Reads a transcript; `#` lines and blank lines are skipped.
pub fn parse_transcript(text: &str) -> Result<Vec<Line>, TranscriptError> {
    let mut lines = Vec::new();
    for (number, raw) in text.lines().enumerate() {
        if raw.is_empty() || raw.starts_with('#') {
            continue;
        }
        let bad = || TranscriptError {
            line: number + 1,
            text: raw.chars().take(80).collect(),
        };
        let (at, rest) = raw.split_once(' ').ok_or_else(bad)?;
        let (connection, rest) = rest.split_once(' ').ok_or_else(bad)?;
        let at: f64 = at.parse().map_err(|_| bad())?;
        let kind = match rest {
            "open" => LineKind::Open,
            "close" => LineKind::Close,
            _ => match (rest.strip_prefix("C: "), rest.strip_prefix("S: ")) {
                (Some(text), _) => LineKind::Client(text.to_owned()),
                (_, Some(text)) => LineKind::Server(text.to_owned()),
                _ => return Err(bad()),
            },
        };
        lines.push(Line {
            at,
            connection: connection.to_owned(),
            kind,
        });
    }
    Ok(lines)
}

/// Bytes on the wire for one logical line: elided literals count their
/// full size, and every line its CRLF.
pub fn wire_bytes(text: &str) -> u64 {
    let mut size = text.len() as u64 + 2;
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('}') else { break };
        let number = rest[..close].trim_end_matches('+');
        let Ok(n) = number.parse::<u64>() else {
            continue;
        };
        let marker = format!("<{n} bytes>");
        if rest[close + 1..].starts_with(&marker) {
            size = size + n + 2 - marker.len() as u64;
        }
    }
    size
}

/// `(name, FETCH items)` of a tagged client command; `None` for what
/// is not one (DONE, SASL data, continuations).
pub fn command_of(text: &str) -> Option<(String, Vec<String>)> {
    let words: Vec<&str> = text.split(' ').collect();
    if words.len() < 2 || matches!(words[0], "DONE" | "<credentials>") || text.starts_with('+') {
        return None;
    }
    let mut name = words[1].to_ascii_uppercase();
    let mut rest = &words[2..];
    if name == "UID" && !rest.is_empty() {
        name = format!("UID {}", rest[0].to_ascii_uppercase());
        rest = &rest[1..];
    }
    let items = if name.ends_with("FETCH") && rest.len() >= 2 {
        fetch_items(&rest[1..].join(" "))
    } else {
        Vec::new()
    };
    Some((name, items))
}

/// Top-level FETCH items, section arguments dropped:
/// `BODY.PEEK[HEADER.FIELDS (A B)]` is `BODY.PEEK[HEADER.FIELDS]`.
pub fn fetch_items(spec: &str) -> Vec<String> {
    let spec = spec.trim();
    let spec = spec
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(spec);
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in spec.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            _ => {}
        }
        if c == ' ' && depth == 0 {
            if !current.is_empty() {
                items.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        items.push(current);
    }
    items
        .into_iter()
        .map(|item| normal_item(&item.to_ascii_uppercase()))
        .collect()
}

/// Drops a header list (` (A B)`) and turns `<0.100>` into `<PARTIAL>`.
fn normal_item(item: &str) -> String {
    let mut out = String::with_capacity(item.len());
    let mut chars = item.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' && chars.peek() == Some(&'(') {
            for skipped in chars.by_ref() {
                if skipped == ')' {
                    break;
                }
            }
            continue;
        }
        if c == '<' {
            out.push_str("<PARTIAL>");
            for skipped in chars.by_ref() {
                if skipped == '>' {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Cuts `lines` at the actions' starts and measures each window, as
/// `measure.py` does.
pub fn measure(lines: &[Line], actions: &[ActionWindow]) -> Vec<ActionMeasure> {
    let mut actions = actions.to_vec();
    actions.sort_by(|a, b| a.start.total_cmp(&b.start));
    let mut result = Vec::new();
    for (i, action) in actions.iter().enumerate() {
        let stop = actions
            .get(i + 1)
            .map_or(action.end + 5.0, |next| next.start);
        let mut m = ActionMeasure {
            action: action.action.clone(),
            seconds: (stop - action.start).max(1e-9),
            ..ActionMeasure::default()
        };
        for line in lines.iter().filter(|l| l.at >= action.start && l.at < stop) {
            match &line.kind {
                LineKind::Open => m.connections += 1,
                LineKind::Close => {}
                LineKind::Client(text) => {
                    m.bytes_from_client += wire_bytes(text);
                    if let Some((name, items)) = command_of(text) {
                        *m.commands.entry(name).or_default() += 1;
                        for item in items {
                            *m.fetch_items.entry(item).or_default() += 1;
                        }
                    }
                }
                LineKind::Server(text) => {
                    m.bytes_from_server += wire_bytes(text);
                    let words: Vec<&str> = text.split(' ').collect();
                    if words.len() > 2 && words[1] == "OK" && text.ends_with("Logged in") {
                        m.logins += 1;
                    }
                }
            }
        }
        result.push(m);
    }
    result
}

/// The sum of the smaller counts over the sum of the larger: 1.0 for equal
/// multisets (two empty ones included), 0.0 for disjoint ones.
pub fn weighted_jaccard(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>) -> f64 {
    let mut smaller = 0u64;
    let mut larger = 0u64;
    for key in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
        let (x, y) = (
            a.get(key).copied().unwrap_or(0),
            b.get(key).copied().unwrap_or(0),
        );
        smaller += x.min(y);
        larger += x.max(y);
    }
    if larger == 0 {
        1.0
    } else {
        smaller as f64 / larger as f64
    }
}

/// What differs between two multisets: `reference - candidate` per key.
pub fn differences(
    reference: &BTreeMap<String, u64>,
    candidate: &BTreeMap<String, u64>,
) -> BTreeMap<String, i64> {
    reference
        .keys()
        .chain(candidate.keys())
        .filter_map(|k| {
            let d = reference.get(k).copied().unwrap_or(0) as i64
                - candidate.get(k).copied().unwrap_or(0) as i64;
            (d != 0).then(|| (k.clone(), d))
        })
        .collect()
}

/// Splits bytes one side sent into transcript lines: CRLF-ended lines, a
/// literal `{N}` / `{N+}` elided as `{N}<N bytes>` with the line it ends
/// going on after it; `AUTHENTICATE` arguments and SASL data become
/// `<credentials>`, `LOGIN` passwords `<password>`. `pending` carries a
/// literal's unread size and an unfinished line from one chunk to the next.
pub fn wire_lines(bytes: &[u8], pending: &mut WireCursor) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if pending.literal > 0 {
            let take = pending.literal.min(bytes.len() - i);
            pending.literal -= take;
            i += take;
            continue;
        }
        let Some(end) = bytes[i..].windows(2).position(|w| w == b"\r\n") else {
            pending.line.extend_from_slice(&bytes[i..]);
            break;
        };
        pending.line.extend_from_slice(&bytes[i..i + end]);
        i += end + 2;
        let text = String::from_utf8_lossy(&pending.line).into_owned();
        pending.line.clear();
        if let Some(size) = literal_size(&text) {
            pending.line = format!("{text}<{size} bytes>").into_bytes();
            pending.literal = size;
            continue;
        }
        out.push(redact(&text, &mut pending.sasl));
    }
    out
}

/// What [`wire_lines`] carries between chunks of one side of one connection.
#[derive(Debug, Default, Clone)]
pub struct WireCursor {
    line: Vec<u8>,
    literal: usize,
    sasl: bool,
}

fn literal_size(text: &str) -> Option<usize> {
    let body = text.strip_suffix('}')?;
    let open = body.rfind('{')?;
    body[open + 1..].trim_end_matches('+').parse().ok()
}

fn redact(text: &str, sasl: &mut bool) -> String {
    if std::mem::take(sasl) {
        return "<credentials>".to_owned();
    }
    let words: Vec<&str> = text.splitn(4, ' ').collect();
    match words.get(1).map(|w| w.to_ascii_uppercase()).as_deref() {
        Some("AUTHENTICATE") if words.len() > 3 => {
            format!("{} {} {} <credentials>", words[0], words[1], words[2])
        }
        Some("AUTHENTICATE") => {
            *sasl = true;
            text.to_owned()
        }
        Some("LOGIN") if words.len() > 2 => {
            format!("{} {} {} <password>", words[0], words[1], words[2])
        }
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_drop_their_section_arguments() {
        assert_eq!(
            fetch_items("(UID FLAGS BODY.PEEK[HEADER.FIELDS (DATE FROM)] BODY[]<0.100>)"),
            [
                "UID",
                "FLAGS",
                "BODY.PEEK[HEADER.FIELDS]",
                "BODY[]<PARTIAL>"
            ]
        );
        assert_eq!(
            command_of("a1 UID fetch 1:* (FLAGS)"),
            Some(("UID FETCH".to_owned(), vec!["FLAGS".to_owned()]))
        );
        assert_eq!(command_of("DONE"), None);
    }

    #[test]
    fn jaccard_is_smaller_over_larger() {
        let m = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
        };
        assert_eq!(weighted_jaccard(&m(&[]), &m(&[])), 1.0);
        assert_eq!(
            weighted_jaccard(&m(&[("A", 2), ("B", 1)]), &m(&[("A", 1), ("C", 1)])),
            0.25
        );
    }

    #[test]
    fn issue_28_item_3_wire_lines_elide_literals_and_credentials_across_chunks() {
        let mut cursor = WireCursor::default();
        let mut lines = wire_lines(
            b"A1 AUTHENTICATE PLAIN AGEAYg==\r\nA2 APPEND Sent {5}\r\nab",
            &mut cursor,
        );
        lines.extend(wire_lines(b"cde\r\nA3 NOOP\r\n", &mut cursor));
        assert_eq!(
            lines,
            [
                "A1 AUTHENTICATE PLAIN <credentials>",
                "A2 APPEND Sent {5}<5 bytes>",
                "A3 NOOP"
            ]
        );
        assert_eq!(wire_bytes("A2 APPEND Sent {5}<5 bytes>"), 18 + 2 + 5 + 2);
    }
}
