//! From imap-types' borrowed response values to this crate's owned ones.

use std::time::SystemTime;

use imap_codec::imap_types::body::{BodyStructure, SpecificFields};
use imap_codec::imap_types::core::{IString, NString};
use imap_codec::imap_types::datetime::DateTime;
use imap_codec::imap_types::envelope::{Address, Envelope};
use imap_codec::imap_types::extensions::namespace::Namespace;
use imap_codec::imap_types::extensions::thread::Thread;
use imap_codec::imap_types::extensions::uidplus::{UidElement, UidSet};
use imap_codec::imap_types::fetch::Section;
use imap_codec::imap_types::flag::{FlagFetch, FlagPerm};
use imap_codec::imap_types::mailbox::Mailbox;

use crate::types::{BodyPart, BodySection, EnvelopeSummary, NamespaceEntry, ThreadNode};

pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) fn nstring(value: &NString<'_>) -> Option<String> {
    value.0.as_ref().map(|s| lossy(s.as_ref()))
}

fn istring(value: &IString<'_>) -> String {
    lossy(value.as_ref())
}

/// A NAMESPACE reply's list of namespaces (NIL is an empty list).
pub(crate) fn namespaces(list: &[Namespace<'_>]) -> Vec<NamespaceEntry> {
    list.iter()
        .map(|namespace| NamespaceEntry {
            prefix: lossy(namespace.prefix.as_ref()),
            delimiter: namespace.delimiter.map(|d| d.inner()),
        })
        .collect()
}

pub(crate) fn mailbox_name(mailbox: &Mailbox<'_>) -> String {
    match mailbox {
        Mailbox::Inbox => "INBOX".to_owned(),
        Mailbox::Other(other) => lossy(other.as_ref()),
    }
}

pub(crate) fn fetched_flags(flags: &[FlagFetch<'_>]) -> Vec<String> {
    flags
        .iter()
        .map(|flag| match flag {
            FlagFetch::Flag(flag) => flag.to_string(),
            FlagFetch::Recent => "\\Recent".to_owned(),
        })
        .collect()
}

pub(crate) fn permanent_flags(flags: &[FlagPerm<'_>]) -> Vec<String> {
    flags
        .iter()
        .map(|flag| match flag {
            FlagPerm::Flag(flag) => flag.to_string(),
            FlagPerm::Asterisk => "\\*".to_owned(),
        })
        .collect()
}

fn address(address: &Address<'_>) -> String {
    match (nstring(&address.mailbox), nstring(&address.host)) {
        (Some(mailbox), Some(host)) => format!("{mailbox}@{host}"),
        (Some(mailbox), None) => mailbox,
        (None, _) => String::new(),
    }
}

pub(crate) fn envelope(envelope: &Envelope<'_>) -> EnvelopeSummary {
    EnvelopeSummary {
        date: nstring(&envelope.date),
        subject: nstring(&envelope.subject),
        from: envelope.from.iter().map(address).collect(),
        to: envelope.to.iter().map(address).collect(),
        message_id: nstring(&envelope.message_id),
        in_reply_to: nstring(&envelope.in_reply_to),
    }
}

pub(crate) fn date(date: &DateTime) -> SystemTime {
    SystemTime::from(*date.as_ref())
}

pub(crate) fn section(section: &Option<Section<'_>>) -> BodySection {
    match section {
        None => BodySection::Full,
        Some(Section::Header(None)) => BodySection::Header,
        Some(Section::Text(None)) => BodySection::Text,
        Some(Section::HeaderFields(None, names)) => {
            BodySection::HeaderFields(names.as_ref().iter().map(|n| lossy(n.as_ref())).collect())
        }
        Some(Section::Part(part)) => {
            BodySection::Part(part.0.as_ref().iter().map(|n| n.get()).collect())
        }
        Some(other) => BodySection::Other(format!("{other:?}")),
    }
}

/// Flattens BODYSTRUCTURE to its leaf parts with their section paths.
pub(crate) fn body_parts(structure: &BodyStructure<'_>) -> Vec<BodyPart> {
    let mut parts = Vec::new();
    match structure {
        // A single-part message's only part is `BODY[1]` (RFC 3501 6.4.5).
        BodyStructure::Single { .. } => collect_parts(structure, vec![1], &mut parts, 0),
        BodyStructure::Multi { .. } => collect_parts(structure, Vec::new(), &mut parts, 0),
    }
    parts
}

/// Deeper nesting than this is not a real message; stop instead of recursing
/// on whatever a hostile server made up (the parser bounds it too).
const MAX_PART_DEPTH: usize = 32;

fn collect_parts(
    structure: &BodyStructure<'_>,
    path: Vec<u32>,
    out: &mut Vec<BodyPart>,
    depth: usize,
) {
    if depth > MAX_PART_DEPTH {
        return;
    }
    match structure {
        BodyStructure::Single { body, .. } => {
            let media_type = match &body.specific {
                SpecificFields::Basic { r#type, subtype } => {
                    format!("{}/{}", istring(r#type), istring(subtype))
                }
                SpecificFields::Message { .. } => "message/rfc822".to_owned(),
                SpecificFields::Text { subtype, .. } => format!("text/{}", istring(subtype)),
            };
            out.push(BodyPart {
                path,
                media_type: media_type.to_ascii_lowercase(),
                size: body.basic.size,
            });
        }
        BodyStructure::Multi { bodies, .. } => {
            for (index, body) in bodies.as_ref().iter().enumerate() {
                let mut child = path.clone();
                child.push(u32::try_from(index + 1).unwrap_or(u32::MAX));
                collect_parts(body, child, out, depth + 1);
            }
        }
    }
}

pub(crate) fn uid_set(set: &UidSet) -> String {
    set.0
        .as_ref()
        .iter()
        .map(|element| match element {
            UidElement::Single(uid) => uid.to_string(),
            UidElement::Range(from, to) => format!("{from}:{to}"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

pub(crate) fn threads(threads: &[Thread]) -> Vec<ThreadNode> {
    threads.iter().map(|t| thread(t, 0)).collect()
}

fn thread(thread: &Thread, depth: usize) -> ThreadNode {
    let answers = |answers: &[Thread]| -> Vec<ThreadNode> {
        if depth > MAX_PART_DEPTH {
            return Vec::new();
        }
        answers.iter().map(|t| self::thread(t, depth + 1)).collect()
    };
    match thread {
        Thread::Members {
            prefix,
            answers: replies,
        } => {
            // `(1 2 3 (4)(5))`: 1 -> 2 -> 3, and 4 and 5 answer 3. Build the
            // chain from its end so each node owns the next.
            let mut children = replies
                .as_ref()
                .map(|r| answers(r.as_ref()))
                .unwrap_or_default();
            for message in prefix.as_ref().iter().rev() {
                children = vec![ThreadNode {
                    message: Some(message.get()),
                    children,
                }];
            }
            match children.len() {
                1 => children.pop().unwrap_or(ThreadNode {
                    message: None,
                    children: Vec::new(),
                }),
                _ => ThreadNode {
                    message: None,
                    children,
                },
            }
        }
        Thread::Nested { answers: replies } => ThreadNode {
            message: None,
            children: answers(replies.as_ref()),
        },
    }
}
