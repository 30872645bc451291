//! What the model needs of each response the server sent. Status responses
//! (tagged, `* OK [code]`, `+`) are read from their first line; data
//! responses (EXISTS, EXPUNGE, FLAGS, FETCH ...) are decoded by imap-codec.
//!
//! imap-codec is used without its CONDSTORE feature (turning it on would
//! change imap-types' enums under peakhour-imap, through feature
//! unification), so `MODSEQ (n)` is taken out of a FETCH before decoding,
//! and response codes are read from the status line.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use imap_codec::ResponseCodec;
use imap_codec::decode::Decoder;
use imap_codec::imap_types::fetch::MessageDataItem;
use imap_codec::imap_types::flag::FlagFetch;
use imap_codec::imap_types::response::{Data, Response};

use crate::command::NumberSet;
use crate::framing::Frame;

/// Response codes the model tracks, from any status response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Codes {
    pub(crate) uid_validity: Option<u32>,
    pub(crate) uid_next: Option<u32>,
    pub(crate) permanent_flags: Option<Vec<String>>,
    /// `[READ-ONLY]`.
    pub(crate) read_only: bool,
    /// `[COPYUID validity source destination]`: the source UIDs, which the
    /// server says it copied (or, for MOVE, moved).
    pub(crate) copied: Option<NumberSet>,
}

/// One message of a FETCH response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Fetched {
    pub(crate) seq: u32,
    pub(crate) uid: Option<u32>,
    pub(crate) flags: Option<Vec<String>>,
    pub(crate) modseq: Option<u64>,
    /// Items that never change for a message (RFC 3501 section 2.3),
    /// by name, in a canonical text (a body section as its length and hash).
    pub(crate) statics: Vec<(String, String)>,
}

/// A response as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Received {
    Continuation,
    Tagged {
        tag: String,
        ok: bool,
        codes: Codes,
    },
    /// `* OK`, `* NO`, `* BAD`, `* PREAUTH`, `* BYE` with their codes.
    Status(Codes),
    Exists(u32),
    Recent(u32),
    Expunge(u32),
    Flags(Vec<String>),
    Fetch(Fetched),
    /// `* SEARCH n ...`: sequence numbers or UIDs, as the command asked.
    Search(Vec<u32>),
    /// Data the checks do not use (LIST, STATUS ...).
    Other,
    /// Data imap-codec could not decode.
    Undecodable,
}

/// Reads one whole response.
pub(crate) fn read(frame: &Frame) -> Received {
    let line = frame.first_line();
    if line.first() == Some(&b'+') {
        return Received::Continuation;
    }
    let text = String::from_utf8_lossy(line);
    let mut words = text.splitn(3, ' ');
    let (tag, kind) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let rest = words.next().unwrap_or("");
    let kind_upper = kind.to_ascii_uppercase();
    let status = matches!(kind_upper.as_str(), "OK" | "NO" | "BAD" | "BYE" | "PREAUTH");
    if status && tag != "*" {
        return Received::Tagged {
            tag: tag.to_owned(),
            ok: kind_upper == "OK",
            codes: codes(rest),
        };
    }
    if status {
        return Received::Status(codes(rest));
    }
    let stripped = without_modseq(frame);
    let (bytes, modseq) = match &stripped {
        Some((bytes, modseq)) => (bytes.as_slice(), Some(*modseq)),
        None => (frame.bytes.as_slice(), None),
    };
    match ResponseCodec::default().decode(bytes) {
        Ok((_, Response::Data(data))) => from_data(data, modseq),
        Ok(_) => Received::Other,
        Err(_) => match (modseq, modseq_only(bytes)) {
            // `* 2 FETCH (MODSEQ (8))` (Dovecot's answer to a silent STORE
            // under CONDSTORE) leaves an empty list, which imap-codec refuses.
            (Some(modseq), Some(seq)) => Received::Fetch(Fetched {
                seq,
                modseq: Some(modseq),
                ..Fetched::default()
            }),
            _ => Received::Undecodable,
        },
    }
}

/// The sequence number of `* n FETCH ()`, the rest of a FETCH that held
/// only MODSEQ.
fn modseq_only(bytes: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(bytes).ok()?;
    let rest = text.strip_prefix("* ")?;
    let (seq, rest) = rest.split_once(' ')?;
    let rest = rest.trim_end();
    rest.eq_ignore_ascii_case("FETCH ()").then_some(())?;
    seq.parse().ok()
}

fn from_data(data: Data<'_>, modseq: Option<u64>) -> Received {
    match data {
        Data::Exists(n) => Received::Exists(n),
        Data::Recent(n) => Received::Recent(n),
        Data::Expunge(n) => Received::Expunge(n.get()),
        Data::Flags(flags) => Received::Flags(flags.iter().map(ToString::to_string).collect()),
        Data::Search(numbers, ..) => Received::Search(numbers.iter().map(|n| n.get()).collect()),
        Data::Fetch { seq, items } => {
            let mut fetched = Fetched {
                seq: seq.get(),
                modseq,
                ..Fetched::default()
            };
            for item in items.into_inner() {
                read_item(item, &mut fetched);
            }
            Received::Fetch(fetched)
        }
        _ => Received::Other,
    }
}

fn read_item(item: MessageDataItem<'_>, fetched: &mut Fetched) {
    let mut keep = |name: &str, value: String| fetched.statics.push((name.to_owned(), value));
    match item {
        MessageDataItem::Uid(uid) => fetched.uid = Some(uid.get()),
        MessageDataItem::Flags(flags) => {
            fetched.flags = Some(
                flags
                    .iter()
                    .map(|flag| match flag {
                        FlagFetch::Flag(flag) => flag.to_string(),
                        FlagFetch::Recent => "\\Recent".to_owned(),
                    })
                    .collect(),
            );
        }
        MessageDataItem::Envelope(envelope) => keep("ENVELOPE", format!("{envelope:?}")),
        MessageDataItem::BodyStructure(structure) => {
            keep("BODYSTRUCTURE", format!("{structure:?}"));
        }
        MessageDataItem::Body(structure) => keep("BODY", format!("{structure:?}")),
        MessageDataItem::Rfc822Size(size) => keep("RFC822.SIZE", size.to_string()),
        MessageDataItem::InternalDate(date) => keep("INTERNALDATE", format!("{date:?}")),
        // A partial fetch (`<origin>`) returns as many bytes as were asked
        // for, which the response does not say: not comparable.
        MessageDataItem::BodyExt {
            section,
            origin: None,
            data,
        } => {
            let name = match &section {
                None => "BODY[]".to_owned(),
                Some(section) => format!("BODY[{section:?}]"),
            };
            if let Some(bytes) = data.0.as_ref() {
                keep(&name, digest(bytes.as_ref()));
            }
        }
        // NIL for a body section is what a server may answer for a message
        // another session expunged and this one has not been told of yet
        // (RFC 2180 section 4.1.3; Dovecot does): not a change, not compared.
        MessageDataItem::Rfc822(data) => {
            if let Some(bytes) = data.0.as_ref() {
                keep("BODY[]", digest(bytes.as_ref()));
            }
        }
        MessageDataItem::Rfc822Header(data) => {
            if let Some(bytes) = data.0.as_ref() {
                keep("RFC822.HEADER", digest(bytes.as_ref()));
            }
        }
        MessageDataItem::Rfc822Text(data) => {
            if let Some(bytes) = data.0.as_ref() {
                keep("RFC822.TEXT", digest(bytes.as_ref()));
            }
        }
        _ => {}
    }
}

/// A body section's bytes as their length and a hash: enough to tell two
/// apart, without keeping every message body a session read.
fn digest(bytes: &[u8]) -> String {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("{} bytes, hash {:016x}", bytes.len(), hasher.finish())
}

/// The response with `MODSEQ (n)` taken out of its text parts, and `n`;
/// `None` (and no copy) when it holds none, as most responses do.
fn without_modseq(frame: &Frame) -> Option<(Vec<u8>, u64)> {
    let parts = frame.text_parts();
    let (at, (range, modseq)) = parts.iter().enumerate().find_map(|(i, part)| {
        peakhour_imap::modseq::find_modseq(&frame.bytes[part.clone()]).map(|found| (i, found))
    })?;
    let mut out = Vec::with_capacity(frame.bytes.len());
    for (i, part) in parts.iter().enumerate() {
        let text = &frame.bytes[part.clone()];
        if i == at {
            let (mut start, mut end) = (range.start, range.end);
            // Take one separating space with it, so the list stays valid.
            if text.get(end) == Some(&b' ') {
                end += 1;
            } else if start > 0 && text[start - 1] == b' ' {
                start -= 1;
            }
            out.extend_from_slice(&text[..start]);
            out.extend_from_slice(&text[end..]);
        } else {
            out.extend_from_slice(text);
        }
        if let Some(literal) = frame.literals.get(i) {
            out.extend_from_slice(&frame.bytes[literal.clone()]);
        }
    }
    Some((out, modseq))
}

/// The codes of a status response's text (`[UIDVALIDITY 7] ...`).
fn codes(text: &str) -> Codes {
    let mut codes = Codes::default();
    let Some(inner) = text
        .strip_prefix('[')
        .and_then(|t| t.split_once(']'))
        .map(|(inner, _)| inner)
    else {
        return codes;
    };
    let (name, args) = inner.split_once(' ').unwrap_or((inner, ""));
    match name.to_ascii_uppercase().as_str() {
        "UIDVALIDITY" => codes.uid_validity = args.trim().parse().ok(),
        "UIDNEXT" => codes.uid_next = args.trim().parse().ok(),
        "READ-ONLY" => codes.read_only = true,
        "COPYUID" => {
            codes.copied = args
                .split_ascii_whitespace()
                .nth(1)
                .and_then(NumberSet::parse)
        }
        "PERMANENTFLAGS" => {
            codes.permanent_flags = Some(
                args.trim_matches(|c| c == '(' || c == ')')
                    .split_ascii_whitespace()
                    .map(str::to_owned)
                    .collect(),
            );
        }
        _ => {}
    }
    codes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    fn frame(text: &str) -> Frame {
        Frame {
            bytes: text.as_bytes().to_vec(),
            literals: Vec::new(),
        }
    }

    #[test]
    fn modseq_is_taken_out_before_imap_codec_reads_the_fetch() {
        let Received::Fetch(fetched) = read(&frame(
            "* 3 FETCH (UID 9 MODSEQ (12) FLAGS (\\Seen $Work))\r\n",
        )) else {
            panic!()
        };
        assert_eq!(fetched.seq, 3);
        assert_eq!(fetched.uid, Some(9));
        assert_eq!(fetched.modseq, Some(12));
        assert_eq!(
            fetched.flags,
            Some(vec!["\\Seen".to_owned(), "$Work".to_owned()])
        );
        let Received::Fetch(last) = read(&frame("* 3 FETCH (UID 9 MODSEQ (12))\r\n")) else {
            panic!()
        };
        assert_eq!((last.uid, last.modseq), (Some(9), Some(12)));
        let Received::Fetch(only) = read(&frame("* 2 FETCH (MODSEQ (8))\r\n")) else {
            panic!()
        };
        assert_eq!((only.seq, only.modseq), (2, Some(8)));
    }

    #[test]
    fn status_codes_are_read_from_the_line() {
        let Received::Status(codes) = read(&frame("* OK [UIDVALIDITY 3857529045] UIDs valid\r\n"))
        else {
            panic!()
        };
        assert_eq!(codes.uid_validity, Some(3_857_529_045));
        let Received::Tagged { tag, ok, codes } = read(&frame("A3 NO [UIDNEXT 7] Nope\r\n")) else {
            panic!()
        };
        assert_eq!((tag.as_str(), ok), ("A3", false));
        assert_eq!(codes.uid_next, Some(7));
    }
}
