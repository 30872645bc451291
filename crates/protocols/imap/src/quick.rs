//! The responses every action gets, read without imap-codec.
//!
//! Every command ends with a tagged `OK`, every IDLE starts with `+ idling`,
//! every delivery, move and delete brings `* n EXISTS`, `* n RECENT` or
//! `* n EXPUNGE`, and every delivery to an idling user is followed by a
//! FETCH of the new message's UID, FLAGS and ENVELOPE ([`read_fetch`]).
//! imap-codec decodes each of these by trying its response grammar
//! alternative after alternative (nom): a few thousand instructions for a
//! line of twenty bytes, some 30 thousand for an envelope, with its
//! conversion. Here only the plainest spellings are read:
//! upper-case keywords, single spaces, numbers without leading zeros, a tag
//! of letters and digits, a text of printable ASCII that does not start with
//! `[` (no response code), and CRLF. Anything else, including every form
//! imap-codec would refuse, returns `None` and is decoded by imap-codec as
//! before; the tests check that whatever is read here is what imap-codec
//! reads (issue 16, docs/PERFORMANCE.md "Fourth round: mmb-medium per
//! command").

use std::borrow::Cow;
use std::num::NonZeroU32;

use crate::types::{EnvelopeSummary, FetchedMessage};

/// A response read here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quick<'a> {
    /// `+ text`: a continuation request (its text matters to no one).
    Continuation,
    /// `* n EXISTS`.
    Exists(u32),
    /// `* n RECENT`.
    Recent(u32),
    /// `* n EXPUNGE`.
    Expunge(NonZeroU32),
    /// `tag OK text`, with no response code.
    TaggedOk {
        /// The tag.
        tag: &'a str,
        /// The text after `OK `.
        text: &'a str,
    },
}

/// `bytes` (one framed message, CRLF included) read as a [`Quick`] response,
/// or `None` when imap-codec must decode it.
pub(crate) fn read(bytes: &[u8]) -> Option<Quick<'_>> {
    let line = bytes.strip_suffix(b"\r\n")?;
    match line.first()? {
        b'+' => {
            let text = line.strip_prefix(b"+ ")?;
            plain_text(text)?;
            Some(Quick::Continuation)
        }
        b'*' => {
            let rest = line.strip_prefix(b"* ")?;
            let space = rest.iter().position(|&b| b == b' ')?;
            let (number, keyword) = (&rest[..space], &rest[space + 1..]);
            let n = plain_number(number)?;
            match keyword {
                b"EXISTS" => Some(Quick::Exists(n)),
                b"RECENT" => Some(Quick::Recent(n)),
                b"EXPUNGE" => NonZeroU32::new(n).map(Quick::Expunge),
                _ => None,
            }
        }
        _ => {
            let space = line.iter().position(|&b| b == b' ')?;
            let (tag, rest) = (&line[..space], &line[space + 1..]);
            if tag.is_empty() || !tag.iter().all(u8::is_ascii_alphanumeric) {
                return None;
            }
            let text = plain_text(rest.strip_prefix(b"OK ")?)?;
            Some(Quick::TaggedOk {
                tag: std::str::from_utf8(tag).ok()?,
                text,
            })
        }
    }
}

/// `bytes` read as `* n FETCH (...)` with only the items UID, FLAGS and
/// ENVELOPE, each at most once: the answer to the engine's look at new mail
/// (`UID FETCH n:* (UID FLAGS ENVELOPE)`), which imap-codec decodes in about
/// 20 k instructions. Only plain spellings again: single spaces, no
/// literal (the message is one line), strings quoted with printable ASCII
/// and `\\`/`\"` escapes, `NIL` in upper case, address lists written
/// without spaces between addresses (as Dovecot writes them), system flags
/// in their canonical case and keywords of letters, digits, `$`, `_`, `-`
/// and `.`. `None` for anything else.
pub(crate) fn read_fetch(bytes: &[u8]) -> Option<FetchedMessage> {
    let line = bytes.strip_suffix(b"\r\n")?.strip_prefix(b"* ")?;
    let mut at = Cursor { line, at: 0 };
    let seq = NonZeroU32::new(at.number()?)?.get();
    at.expect(b" FETCH (")?;
    let mut message = FetchedMessage {
        seq,
        ..FetchedMessage::default()
    };
    loop {
        let name = at.take_while(|b| b.is_ascii_uppercase())?;
        at.expect(b" ")?;
        match name {
            b"UID" if message.uid.is_none() => {
                message.uid = Some(NonZeroU32::new(at.number()?)?.get());
            }
            b"FLAGS" if message.flags.is_none() => message.flags = Some(at.flags()?),
            b"ENVELOPE" if message.envelope.is_none() => message.envelope = Some(at.envelope()?),
            _ => return None,
        }
        match at.next()? {
            b')' => break,
            b' ' => {}
            _ => return None,
        }
    }
    (at.at == line.len()).then_some(message)
}

/// A position in a line being read.
struct Cursor<'a> {
    line: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn next(&mut self) -> Option<u8> {
        let byte = *self.line.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn peek(&self) -> Option<u8> {
        self.line.get(self.at).copied()
    }

    fn expect(&mut self, text: &[u8]) -> Option<()> {
        let rest = self.line.get(self.at..)?;
        rest.starts_with(text).then(|| self.at += text.len())
    }

    /// One or more bytes that `keep`; none is `None`.
    fn take_while(&mut self, keep: impl Fn(u8) -> bool) -> Option<&'a [u8]> {
        let start = self.at;
        while self.peek().is_some_and(&keep) {
            self.at += 1;
        }
        (self.at > start).then(|| &self.line[start..self.at])
    }

    fn number(&mut self) -> Option<u32> {
        plain_number(self.take_while(|b| b.is_ascii_digit())?)
    }

    /// `(flag flag ...)`, possibly empty.
    fn flags(&mut self) -> Option<Vec<String>> {
        self.expect(b"(")?;
        let mut flags = Vec::new();
        if self.expect(b")").is_some() {
            return Some(flags);
        }
        loop {
            let system = self.expect(b"\\").is_some();
            let name = self.take_while(|b| b.is_ascii_alphanumeric() || b"$_-.".contains(&b))?;
            let name = std::str::from_utf8(name).ok()?;
            if system {
                const CANONICAL: [&str; 6] =
                    ["Seen", "Answered", "Flagged", "Deleted", "Draft", "Recent"];
                if !CANONICAL.contains(&name) {
                    return None;
                }
                let mut flag = String::with_capacity(1 + name.len());
                flag.push('\\');
                flag.push_str(name);
                flags.push(flag);
            } else {
                flags.push(name.to_owned());
            }
            match self.next()? {
                b')' => return Some(flags),
                b' ' => {}
                _ => return None,
            }
        }
    }

    /// A quoted string or `NIL`, borrowed from the line unless it has escapes.
    fn nstring(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.expect(b"NIL").is_some() {
            return Some(None);
        }
        self.expect(b"\"")?;
        let rest = self.line.get(self.at..)?;
        let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
        let plain = &rest[..end];
        if !plain.iter().all(|b| (b' '..=b'~').contains(b)) {
            return None;
        }
        self.at += end;
        if rest[end] == b'"' {
            self.at += 1;
            return Some(Some(Cow::Borrowed(std::str::from_utf8(plain).ok()?)));
        }
        // Escapes: copied byte by byte from the first one on.
        let mut text = plain.to_vec();
        loop {
            match self.next()? {
                b'"' => return Some(Some(Cow::Owned(String::from_utf8(text).ok()?))),
                b'\\' => match self.next()? {
                    escaped @ (b'"' | b'\\') => text.push(escaped),
                    _ => return None,
                },
                byte @ b' '..=b'~' => text.push(byte),
                _ => return None,
            }
        }
    }

    /// `(address...)` or `NIL` (no addresses): `mailbox@host` of each into
    /// `out` when there is one, else only checked.
    fn addresses(&mut self, mut out: Option<&mut Vec<String>>) -> Option<()> {
        if self.expect(b"NIL").is_some() {
            return Some(());
        }
        self.expect(b"(")?;
        loop {
            self.expect(b"(")?;
            let _name = self.nstring()?;
            self.expect(b" ")?;
            let _route = self.nstring()?;
            self.expect(b" ")?;
            let mailbox = self.nstring()?;
            self.expect(b" ")?;
            let host = self.nstring()?;
            self.expect(b")")?;
            if let Some(out) = out.as_deref_mut() {
                // What `convert::address` makes of it.
                out.push(match (mailbox, host) {
                    (Some(mailbox), Some(host)) => {
                        let mut address = String::with_capacity(mailbox.len() + 1 + host.len());
                        address.push_str(&mailbox);
                        address.push('@');
                        address.push_str(&host);
                        address
                    }
                    (Some(mailbox), None) => mailbox.into_owned(),
                    (None, _) => String::new(),
                });
            }
            if self.expect(b")").is_some() {
                return Some(());
            }
        }
    }

    /// `(date subject from sender reply-to to cc bcc in-reply-to message-id)`.
    fn envelope(&mut self) -> Option<EnvelopeSummary> {
        let owned = |text: Option<Cow<'_, str>>| text.map(Cow::into_owned);
        self.expect(b"(")?;
        let date = owned(self.nstring()?);
        self.expect(b" ")?;
        let subject = owned(self.nstring()?);
        self.expect(b" ")?;
        let mut from = Vec::new();
        self.addresses(Some(&mut from))?;
        for _sender_reply_to in 0..2 {
            self.expect(b" ")?;
            self.addresses(None)?;
        }
        self.expect(b" ")?;
        let mut to = Vec::new();
        self.addresses(Some(&mut to))?;
        for _cc_bcc in 0..2 {
            self.expect(b" ")?;
            self.addresses(None)?;
        }
        self.expect(b" ")?;
        let in_reply_to = owned(self.nstring()?);
        self.expect(b" ")?;
        let message_id = owned(self.nstring()?);
        self.expect(b")")?;
        Some(EnvelopeSummary {
            date,
            subject,
            from,
            to,
            message_id,
            in_reply_to,
        })
    }
}

/// A text of one or more printable ASCII characters that does not start
/// with `[` (which would open a response code).
fn plain_text(text: &[u8]) -> Option<&str> {
    let first = *text.first()?;
    if first == b'[' || !text.iter().all(|b| (b' '..=b'~').contains(b)) {
        return None;
    }
    std::str::from_utf8(text).ok()
}

/// A number of at most nine digits (so it fits a `u32`) without a leading
/// zero, or `0` alone.
fn plain_number(digits: &[u8]) -> Option<u32> {
    if digits.is_empty()
        || digits.len() > 9
        || (digits.len() > 1 && digits[0] == b'0')
        || !digits.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    Some(digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use imap_codec::ResponseCodec;
    use imap_codec::decode::Decoder;
    use imap_codec::imap_types::response::{Data, Response, Status, StatusKind};

    /// What imap-codec makes of `bytes`, in this module's terms: `Some` when
    /// it is one of the responses read here, `None` for anything else, and
    /// an `Err` when imap-codec refuses it.
    fn codec(bytes: &[u8]) -> Result<Option<(String, Option<String>)>, ()> {
        match ResponseCodec::default().decode(bytes) {
            Ok(([], response)) => Ok(Some(match response {
                Response::CommandContinuationRequest(_) => ("continuation".into(), None),
                Response::Data(Data::Exists(n)) => (format!("exists {n}"), None),
                Response::Data(Data::Recent(n)) => (format!("recent {n}"), None),
                Response::Data(Data::Expunge(n)) => (format!("expunge {n}"), None),
                Response::Status(Status::Tagged(tagged))
                    if tagged.body.kind == StatusKind::Ok && tagged.body.code.is_none() =>
                {
                    (
                        format!("ok {}", tagged.tag.inner()),
                        Some(tagged.body.text.inner().to_owned()),
                    )
                }
                _ => return Ok(None),
            })),
            _ => Err(()),
        }
    }

    fn ours(bytes: &[u8]) -> Option<(String, Option<String>)> {
        read(bytes).map(|quick| match quick {
            Quick::Continuation => ("continuation".into(), None),
            Quick::Exists(n) => (format!("exists {n}"), None),
            Quick::Recent(n) => (format!("recent {n}"), None),
            Quick::Expunge(n) => (format!("expunge {n}"), None),
            Quick::TaggedOk { tag, text } => (format!("ok {tag}"), Some(text.to_owned())),
        })
    }

    /// Pushes `body` with each of its bytes replaced by, and preceded by, each
    /// of `withs`, every variant ended with CRLF.
    fn push_byte_mutations(body: &[u8], withs: &[&[u8]], near: &mut Vec<Vec<u8>>) {
        for at in 0..body.len() {
            for with in withs {
                let mut changed = body.to_vec();
                changed.splice(at..=at, with.iter().copied());
                near.push([changed.as_slice(), b"\r\n"].concat());
                let mut inserted = body.to_vec();
                inserted.splice(at..at, with.iter().copied());
                near.push([inserted.as_slice(), b"\r\n"].concat());
            }
        }
    }

    /// Lines from a server, and many near them: every line read here must be
    /// read by imap-codec the same way; the plain ones must be read here.
    #[test]
    fn issue_16_quick_responses_are_what_imap_codec_reads() {
        let plain: &[&[u8]] = &[
            b"+ idling\r\n",
            b"+ OK\r\n",
            b"+ Ready for literal data\r\n",
            b"* 0 EXISTS\r\n",
            b"* 7 EXISTS\r\n",
            b"* 123456789 EXISTS\r\n",
            b"* 0 RECENT\r\n",
            b"* 3 RECENT\r\n",
            b"* 1 EXPUNGE\r\n",
            b"* 42 EXPUNGE\r\n",
            b"A0001 OK Logged in\r\n",
            b"A0042 OK Fetch completed (0.001 + 0.000 secs).\r\n",
            b"A0007 OK Idle completed (0.002 + 0.001 + 0.001 secs).\r\n",
            b"A9999 OK Move completed (0.002 + 0.000 + 0.001 secs).\r\n",
            b"x OK y\r\n",
            b"a1 OK text with ] and ( and { and \" and \\ and ~\r\n",
        ];
        for line in plain {
            let text = String::from_utf8_lossy(line);
            assert!(read(line).is_some(), "not read here: {text:?}");
            assert_eq!(ours(line), codec(line).unwrap(), "{text:?}");
        }
        let mut near: Vec<Vec<u8>> = Vec::new();
        for line in plain {
            let body = line.strip_suffix(b"\r\n").unwrap();
            near.push(body.to_vec());
            near.push([body, b"\n"].concat());
            near.push([body, b" \r\n"].concat());
            near.push([body, b"\r\n\r\n"].concat());
            near.push(line.to_ascii_lowercase());
            near.push([b" ", *line].concat());
            push_byte_mutations(
                body,
                &[
                    b"",
                    b" ",
                    b"0",
                    b"[",
                    b"\t",
                    b"\x00",
                    b"\x7f",
                    b"\xc3\xa9",
                    b"+",
                ],
                &mut near,
            );
        }
        for extra in [
            b"* 01 EXISTS\r\n".as_slice(),
            b"* 0 EXPUNGE\r\n",
            b"* 4294967295 EXISTS\r\n",
            b"* 4294967296 EXISTS\r\n",
            b"* 1234567890 EXISTS\r\n",
            b"* 5 FETCH (FLAGS (\\Seen))\r\n",
            b"* OK [UIDVALIDITY 1] UIDs valid\r\n",
            b"A1 OK [READ-WRITE] Select completed\r\n",
            b"A1 NO Mailbox does not exist\r\n",
            b"A1 BAD Error in IMAP command\r\n",
            b"A1 OK\r\n",
            b"A1 OK \r\n",
            b"+\r\n",
            b"+ \r\n",
            b"+ [ALERT] text\r\n",
            b"+ aWRsaW5n\r\n",
            b"A+1 OK done\r\n",
            b"* BYE Server shutting down\r\n",
        ] {
            near.push(extra.to_vec());
        }
        let mut read_here = 0;
        for line in &near {
            let text = String::from_utf8_lossy(line);
            if let Some(quick) = ours(line) {
                read_here += 1;
                assert_eq!(Ok(Some(quick)), codec(line), "{text:?}");
            }
        }
        assert!(read_here > 100, "only {read_here} near lines read here");
    }

    /// What imap-codec and this crate's conversion make of a FETCH line;
    /// `Err` when imap-codec refuses it or it is no FETCH.
    fn codec_fetch(bytes: &[u8]) -> Result<FetchedMessage, ()> {
        match ResponseCodec::default().decode(bytes) {
            Ok(([], Response::Data(Data::Fetch { seq, items }))) => {
                Ok(crate::core::fetched_message(seq.get(), items, None))
            }
            _ => Err(()),
        }
    }

    /// FETCH lines of new mail as Dovecot writes them, and thousands near
    /// them: every line read here is read the same by imap-codec and the
    /// crate's conversion, and the plain ones are read here.
    #[test]
    fn issue_16_quick_fetch_is_what_imap_codec_reads() {
        let plain: &[&[u8]] = &[
            b"* 5 FETCH (UID 12 FLAGS (\\Recent) ENVELOPE (\"Mon, 23 Nov 2026 12:00:00 +0000\" \"Hello there\" ((\"User One\" NIL \"user1\" \"bench.test\")) ((\"User One\" NIL \"user1\" \"bench.test\")) ((\"User One\" NIL \"user1\" \"bench.test\")) ((NIL NIL \"user2\" \"bench.test\")(NIL NIL \"list3\" \"bench.test\")) NIL NIL NIL \"<r1.u1.7@peakhour>\"))\r\n",
            b"* 1 FETCH (UID 1 FLAGS () ENVELOPE (NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL))\r\n",
            b"* 99 FETCH (FLAGS (\\Seen \\Answered \\Flagged \\Deleted \\Draft $Forwarded Junk) UID 4242)\r\n",
            b"* 7 FETCH (ENVELOPE (\"d\" \"a \\\"quoted\\\" \\\\ subject\" ((NIL NIL \"undisclosed\" NIL)) NIL NIL ((\"\" NIL \"x\" \"y\")) ((NIL NIL NIL NIL)) NIL \"<in@reply>\" \"<m@id>\") UID 3)\r\n",
            b"* 2 FETCH (UID 8)\r\n",
            b"* 3 FETCH (FLAGS (\\Seen))\r\n",
        ];
        for line in plain {
            let text = String::from_utf8_lossy(line);
            let ours = read_fetch(line);
            assert!(ours.is_some(), "not read here: {text:?}");
            assert_eq!(Ok(ours.unwrap()), codec_fetch(line), "{text:?}");
        }
        let mut near: Vec<Vec<u8>> = Vec::new();
        for line in plain {
            let body = line.strip_suffix(b"\r\n").unwrap();
            near.push(body.to_vec());
            near.push([body, b"\n"].concat());
            near.push([body, b" \r\n"].concat());
            near.push(line.to_ascii_lowercase());
            push_byte_mutations(
                body,
                &[
                    b"",
                    b" ",
                    b"0",
                    b"(",
                    b")",
                    b"\"",
                    b"\\",
                    b"{3}\r\nabc",
                    b"\t",
                    b"\x00",
                    b"\xc3\xa9",
                    b"NIL",
                ],
                &mut near,
            );
        }
        let mut read_here = 0;
        for line in &near {
            if let Some(ours) = read_fetch(line) {
                read_here += 1;
                let text = String::from_utf8_lossy(line);
                assert_eq!(Ok(ours), codec_fetch(line), "{text:?}");
            }
        }
        assert!(read_here > 500, "only {read_here} near lines read here");
    }

    #[test]
    fn numbers_stop_before_they_could_overflow() {
        assert_eq!(plain_number(b"999999999"), Some(999_999_999));
        assert_eq!(plain_number(b"1000000000"), None);
        assert_eq!(plain_number(b"0"), Some(0));
        assert_eq!(plain_number(b"00"), None);
        assert_eq!(plain_number(b""), None);
    }
}
