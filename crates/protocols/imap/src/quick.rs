//! The few one-line responses every action gets, read without imap-codec.
//!
//! Every command ends with a tagged `OK`, every IDLE starts with `+ idling`,
//! and every delivery, move and delete brings `* n EXISTS`, `* n RECENT` or
//! `* n EXPUNGE`. imap-codec decodes each of these by trying its response
//! grammar alternative after alternative (nom), a few thousand instructions
//! for a line of twenty bytes. Here only the plainest spellings are read:
//! upper-case keywords, single spaces, numbers without leading zeros, a tag
//! of letters and digits, a text of printable ASCII that does not start with
//! `[` (no response code), and CRLF. Anything else, including every form
//! imap-codec would refuse, returns `None` and is decoded by imap-codec as
//! before; the tests check that whatever is read here is what imap-codec
//! reads (issue 16, docs/PERFORMANCE.md "Fourth round: mmb-medium per
//! command").

use std::num::NonZeroU32;

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
            for at in 0..body.len() {
                for with in [
                    b"",
                    b" ".as_slice(),
                    b"0",
                    b"[",
                    b"\t",
                    b"\x00",
                    b"\x7f",
                    b"\xc3\xa9",
                    b"+",
                ] {
                    let mut changed = body.to_vec();
                    changed.splice(at..=at, with.iter().copied());
                    near.push([changed.as_slice(), b"\r\n"].concat());
                    let mut inserted = body.to_vec();
                    inserted.splice(at..at, with.iter().copied());
                    near.push([inserted.as_slice(), b"\r\n"].concat());
                }
            }
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

    #[test]
    fn numbers_stop_before_they_could_overflow() {
        assert_eq!(plain_number(b"999999999"), Some(999_999_999));
        assert_eq!(plain_number(b"1000000000"), None);
        assert_eq!(plain_number(b"0"), Some(0));
        assert_eq!(plain_number(b"00"), None);
        assert_eq!(plain_number(b""), None);
    }
}
