//! The commands of every action, written straight into one buffer.
//!
//! NOOP, IDLE and a FETCH of the items the workloads ask for are most of
//! what a run sends. imap-codec encodes a command by building its typed
//! form (a sequence set parsed from text and normalized, a list of item
//! names) and then a list of fragments, each its own allocation: 3.5% of the
//! generator's CPU at 1,000 actions/s (issue 16). These few shapes are
//! written here instead, byte for byte as imap-codec writes them (the tests
//! compare the two over every item and many sets); anything else, or any
//! argument outside the plain forms below, is left to imap-codec.

use crate::request::Request;
use crate::types::{BodySection, FetchItem};

/// The whole command line for `request` under `tag`, or `None` when
/// imap-codec must encode it.
pub(crate) fn encode(request: &Request, tag: &str) -> Option<Vec<u8>> {
    if tag.is_empty() || !tag.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let mut line = Vec::with_capacity(tag.len() + 64);
    line.extend_from_slice(tag.as_bytes());
    line.push(b' ');
    match request {
        Request::Noop => line.extend_from_slice(b"NOOP"),
        Request::Idle => line.extend_from_slice(b"IDLE"),
        Request::Fetch { set, items, uid } => {
            if !plain_set(set) || items.is_empty() {
                return None;
            }
            if *uid {
                line.extend_from_slice(b"UID ");
            }
            line.extend_from_slice(b"FETCH ");
            line.extend_from_slice(set.as_bytes());
            line.push(b' ');
            let many = items.len() > 1;
            if many {
                line.push(b'(');
            }
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    line.push(b' ');
                }
                line.extend_from_slice(item_name(item)?.as_bytes());
            }
            if many {
                line.push(b')');
            }
        }
        _ => return None,
    }
    line.extend_from_slice(b"\r\n");
    Some(line)
}

/// A sequence set imap-codec would write back unchanged: one number, `n:*`,
/// or `a:b` with `a < b`. imap-codec normalizes sets (it merges and sorts
/// them, turns `b:a` round, writes `n:n` as `n`, and a range ending at
/// 2^32 - 1 as `n:*`), so anything else goes through it. Numbers have no
/// leading zero, are not 0, and have at most nine digits, far below where
/// normalization would touch them.
fn plain_set(set: &str) -> bool {
    match set.split_once(':') {
        None => plain_number(set).is_some(),
        Some((from, "*")) => plain_number(from).is_some(),
        Some((from, to)) => match (plain_number(from), plain_number(to)) {
            (Some(from), Some(to)) => from < to,
            _ => false,
        },
    }
}

fn plain_number(text: &str) -> Option<u32> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > 9 || bytes[0] == b'0' {
        return None;
    }
    if !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    text.parse().ok()
}

fn item_name(item: &FetchItem) -> Option<&'static str> {
    Some(match item {
        FetchItem::Uid => "UID",
        FetchItem::Flags => "FLAGS",
        FetchItem::Envelope => "ENVELOPE",
        FetchItem::BodyStructure => "BODYSTRUCTURE",
        FetchItem::Size => "RFC822.SIZE",
        FetchItem::InternalDate => "INTERNALDATE",
        FetchItem::Body { section, peek } => match (section, peek) {
            (BodySection::Full, false) => "BODY[]",
            (BodySection::Full, true) => "BODY.PEEK[]",
            (BodySection::Header, false) => "BODY[HEADER]",
            (BodySection::Header, true) => "BODY.PEEK[HEADER]",
            (BodySection::Text, false) => "BODY[TEXT]",
            (BodySection::Text, true) => "BODY.PEEK[TEXT]",
            _ => return None,
        },
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use crate::request::Outgoing;
    use crate::types::Capabilities;

    /// What imap-codec writes for `request`, as one line.
    fn codec(request: &Request, tag: &str) -> Option<Vec<u8>> {
        let pieces = request
            .encode_with_codec(tag, &Capabilities::default())
            .ok()?;
        let mut line = Vec::new();
        for piece in pieces {
            match piece {
                Outgoing::Bytes(bytes) => line.extend_from_slice(&bytes),
                Outgoing::AwaitContinuation => return None,
            }
        }
        Some(line)
    }

    fn all_items() -> Vec<FetchItem> {
        let mut items = vec![
            FetchItem::Uid,
            FetchItem::Flags,
            FetchItem::Envelope,
            FetchItem::BodyStructure,
            FetchItem::Size,
            FetchItem::InternalDate,
        ];
        for section in [BodySection::Full, BodySection::Header, BodySection::Text] {
            for peek in [false, true] {
                items.push(FetchItem::Body {
                    section: section.clone(),
                    peek,
                });
            }
        }
        items
    }

    fn sets() -> Vec<String> {
        let mut sets: Vec<String> = [
            "1",
            "7",
            "10",
            "999999999",
            "1000000000",
            "4294967295",
            "4294967294",
            "0",
            "01",
            "1:*",
            "12:*",
            "999999999:*",
            "4294967295:*",
            "*",
            "*:5",
            "1:2",
            "2:1",
            "3:3",
            "5:9",
            "1:999999999",
            "1:4294967294",
            "1:4294967295",
            "1,2",
            "1:3,5",
            "5,1",
            "1:2:3",
            ":",
            "1:",
            ":5",
            "",
            " 1",
            "1 ",
            "+1",
            "-1",
            "1a",
            "١",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        // The sets the engine makes: a UID, `first:exists`, `uid+1:*`.
        for n in [1u32, 2, 9, 10, 11, 99, 100, 101, 12_345, 987_654_321] {
            sets.push(n.to_string());
            sets.push(format!("{n}:*"));
            sets.push(format!("{}:{}", n, n + 49));
            sets.push(format!("{}:{}", n.saturating_sub(49).max(1), n));
        }
        sets
    }

    /// Every request written here is byte for byte what imap-codec writes,
    /// and every request left to imap-codec is one it writes differently or
    /// refuses, or that this encoder does not know.
    #[test]
    fn issue_16_direct_encoding_is_what_imap_codec_writes() {
        let items = all_items();
        let mut item_lists: Vec<Vec<FetchItem>> = items.iter().map(|i| vec![i.clone()]).collect();
        item_lists.push(vec![FetchItem::Uid, FetchItem::Flags, FetchItem::Envelope]);
        item_lists.push(items.clone());
        item_lists.push(items.iter().rev().cloned().collect());
        item_lists.push(vec![FetchItem::Body {
            section: BodySection::Part(vec![1, 2]),
            peek: true,
        }]);
        item_lists.push(Vec::new());
        let mut direct = 0;
        for tag in ["A0001", "A9999", "A12345", "x", "", "A 1", "A+1"] {
            for request in [Request::Noop, Request::Idle, Request::Capability] {
                let ours = encode(&request, tag);
                if let Some(ours) = &ours {
                    direct += 1;
                    assert_eq!(
                        Some(ours.clone()),
                        codec(&request, tag),
                        "{request:?} {tag}"
                    );
                }
            }
            for set in sets() {
                for items in &item_lists {
                    for uid in [false, true] {
                        let request = Request::Fetch {
                            set: set.clone(),
                            items: items.clone(),
                            uid,
                        };
                        if let Some(ours) = encode(&request, tag) {
                            direct += 1;
                            assert_eq!(
                                Some(String::from_utf8(ours).unwrap()),
                                codec(&request, tag).map(|b| String::from_utf8(b).unwrap()),
                                "{request:?} {tag}"
                            );
                        }
                    }
                }
            }
        }
        assert!(direct > 1000, "only {direct} requests written directly");
        // The engine's own requests all take this path.
        let read = Request::Fetch {
            set: "4711".into(),
            items: vec![FetchItem::Body {
                section: BodySection::Full,
                peek: false,
            }],
            uid: true,
        };
        assert_eq!(
            encode(&read, "A0042").unwrap(),
            b"A0042 UID FETCH 4711 BODY[]\r\n"
        );
        let check = Request::Fetch {
            set: "12:*".into(),
            items: vec![FetchItem::Uid, FetchItem::Flags, FetchItem::Envelope],
            uid: true,
        };
        assert_eq!(
            encode(&check, "A0043").unwrap(),
            b"A0043 UID FETCH 12:* (UID FLAGS ENVELOPE)\r\n"
        );
    }
}
