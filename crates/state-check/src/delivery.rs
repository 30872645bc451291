//! Delivery: a delivered copy is the message that was submitted. Found once
//! in the recipient's mailbox, with the submitted Message-ID, Subject and
//! peakhour's tracking headers (`X-Peakhour-Run`, `X-Peakhour-Id`), and the
//! submitted size plus only the header fields a mail system adds on the way
//! (trace fields of RFC 5321 section 4.4, `Delivered-To`, `X-Original-To`,
//! signatures and authentication results).
//!
//! The engine's reconciliation finds each copy by `X-Peakhour-Run` and reads
//! its Message-ID; for these checks it also needs each copy's RFC822.SIZE
//! and header section (`BODY.PEEK[HEADER]`), and the submission's header
//! section and size.

use crate::violation::{CheckCounts, CheckKind, Violation};

/// Header fields a mail system may add between submission and the mailbox
/// (lower case). Anything else added, or anything submitted that is gone,
/// shows as a size that does not add up.
pub const ADDED_BY_MAIL_SYSTEM: &[&str] = &[
    "received",
    "return-path",
    "delivered-to",
    "x-original-to",
    "dkim-signature",
    "arc-seal",
    "arc-message-signature",
    "arc-authentication-results",
    "authentication-results",
    "received-spf",
    // Cyrus's lmtpd marks each delivery with these two.
    "x-cyrus-session-id",
    "x-sieve",
];

/// Header fields whose value must arrive as submitted (lower case).
pub const TRACKED_FIELDS: &[&str] = &["message-id", "subject", "x-peakhour-run", "x-peakhour-id"];

/// One header field: its lower-case name and its raw bytes (name, value,
/// folded lines and the closing CRLF).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    name: String,
    raw: Vec<u8>,
}

impl Field {
    /// The value unfolded and trimmed.
    fn value(&self) -> String {
        let text = String::from_utf8_lossy(&self.raw);
        let value = text.split_once(':').map_or("", |(_, v)| v);
        value
            .split("\r\n")
            .flat_map(|line| line.split('\n'))
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The header section of `message` (up to the first empty line), as fields.
fn fields(message: &[u8]) -> Vec<Field> {
    let mut out: Vec<Field> = Vec::new();
    let mut rest = message;
    while !rest.is_empty() {
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |at| at + 1);
        let (line, tail) = rest.split_at(end);
        rest = tail;
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        match (line.first(), out.last_mut()) {
            (Some(b' ' | b'\t'), Some(field)) => field.raw.extend_from_slice(line),
            _ => {
                let name = line
                    .iter()
                    .position(|&b| b == b':')
                    .map_or(&line[..0], |at| &line[..at]);
                out.push(Field {
                    name: String::from_utf8_lossy(name).trim().to_ascii_lowercase(),
                    raw: line.to_vec(),
                });
            }
        }
    }
    out
}

/// What was submitted: the header section and the size, in bytes, of the
/// message as the submission sent it (CRLF line ends, no dot-stuffing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmittedMessage {
    fields: Vec<Field>,
    size: u64,
}

impl SubmittedMessage {
    /// From the whole message as submitted.
    pub fn from_message(message: &[u8]) -> Self {
        Self::from_header(message, message.len() as u64)
    }

    /// From its header section (anything after the empty line is ignored)
    /// and its whole size: what a ledger keeps instead of the message.
    pub fn from_header(header: &[u8], size: u64) -> Self {
        SubmittedMessage {
            fields: fields(header),
            size,
        }
    }

    /// The Message-ID as submitted (with its angle brackets), if any.
    pub fn message_id(&self) -> Option<String> {
        self.fields
            .iter()
            .find(|f| f.name == "message-id")
            .map(Field::value)
    }
}

/// One copy of the message found in the recipient's mailbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundCopy {
    /// The folder it was found in.
    pub folder: String,
    /// Its UID there, if found over IMAP.
    pub uid: Option<u32>,
    /// Its size as the server reports it (RFC822.SIZE, JMAP `size`).
    pub size: u64,
    /// Its header section as the server returns it (`BODY.PEEK[HEADER]`).
    pub header: Vec<u8>,
}

/// What checking one recipient's copies found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryOutcome {
    /// Every violation.
    pub violations: Vec<Violation>,
    /// Checks made, by kind.
    pub checks: CheckCounts,
}

fn violation(
    kind: CheckKind,
    recipient: &str,
    copy: &FoundCopy,
    expected: String,
    seen: String,
) -> Violation {
    Violation {
        kind,
        client: recipient.to_owned(),
        mailbox: copy.folder.clone(),
        seq: None,
        uid: copy.uid,
        expected,
        seen,
    }
}

/// How the recipient's mailbox was used, which decides what a second copy
/// means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryOptions {
    /// At most one session at a time moved messages in the mailbox. When
    /// several did (a profile's shared accounts), two of them moving one
    /// message at once can each leave a copy in its target (the lab's
    /// Dovecot does, under load): then only copies in the Inbox, where
    /// delivery puts them and no move does, count as duplicates.
    pub sole_mover: bool,
}

/// Checks the copies of `submitted` found in `recipient`'s mailbox (every
/// folder searched, Sent left out as the reconciliation does), the mailbox
/// used by one session at a time. No copy is not checked here: the
/// reconciliation reports it lost.
pub fn check_delivery(
    recipient: &str,
    submitted: &SubmittedMessage,
    found: &[FoundCopy],
) -> DeliveryOutcome {
    check_delivery_as(
        recipient,
        submitted,
        found,
        DeliveryOptions { sole_mover: true },
    )
}

/// [`check_delivery`], for a mailbox used as `options` says.
pub fn check_delivery_as(
    recipient: &str,
    submitted: &SubmittedMessage,
    found: &[FoundCopy],
    options: DeliveryOptions,
) -> DeliveryOutcome {
    let mut outcome = DeliveryOutcome::default();
    if found.is_empty() {
        return outcome;
    }
    outcome.checks.count(CheckKind::DeliveryDuplicated);
    let delivered: Vec<&FoundCopy> = found
        .iter()
        .filter(|c| options.sole_mover || c.folder.eq_ignore_ascii_case("INBOX"))
        .collect();
    if let [_, second, ..] = delivered.as_slice() {
        let places: Vec<String> = delivered
            .iter()
            .map(|c| match c.uid {
                Some(uid) => format!("{} UID {uid}", c.folder),
                None => c.folder.clone(),
            })
            .collect();
        outcome.violations.push(violation(
            CheckKind::DeliveryDuplicated,
            recipient,
            second,
            "1 copy".to_owned(),
            format!("{} copies: {}", delivered.len(), places.join(", ")),
        ));
    }
    for copy in found {
        check_copy(recipient, submitted, copy, &mut outcome);
    }
    outcome
}

fn check_copy(
    recipient: &str,
    submitted: &SubmittedMessage,
    copy: &FoundCopy,
    outcome: &mut DeliveryOutcome,
) {
    let arrived = fields(&copy.header);
    for name in TRACKED_FIELDS {
        let Some(sent) = submitted.fields.iter().find(|f| f.name == *name) else {
            continue;
        };
        outcome.checks.count(CheckKind::DeliveryHeaderChanged);
        let values: Vec<String> = arrived
            .iter()
            .filter(|f| f.name == *name)
            .map(Field::value)
            .collect();
        if values != [sent.value()] {
            let seen = match values.as_slice() {
                [] => "no such field".to_owned(),
                many => many.join(" / "),
            };
            outcome.violations.push(violation(
                CheckKind::DeliveryHeaderChanged,
                recipient,
                copy,
                format!("{name}: {}", sent.value()),
                format!("{name}: {seen}"),
            ));
        }
    }
    // The fields that arrived and were not submitted (each submitted field
    // matches one arrived field with the same bytes).
    let mut unmatched: Vec<&Field> = arrived.iter().collect();
    let mut gone = Vec::new();
    for field in &submitted.fields {
        match unmatched.iter().position(|f| f.raw == field.raw) {
            Some(at) => {
                unmatched.remove(at);
            }
            None => gone.push(field.name.as_str()),
        }
    }
    let (added, unexplained): (Vec<&Field>, Vec<&Field>) = unmatched
        .into_iter()
        .partition(|f| ADDED_BY_MAIL_SYSTEM.contains(&f.name.as_str()));
    let added_bytes: u64 = added.iter().map(|f| f.raw.len() as u64).sum();
    let expected = submitted.size + added_bytes;
    outcome.checks.count(CheckKind::DeliverySizeMismatch);
    if copy.size != expected {
        let mut seen = format!("{} bytes", copy.size);
        if !unexplained.is_empty() {
            let names: Vec<&str> = unexplained.iter().map(|f| f.name.as_str()).collect();
            seen.push_str(&format!("; fields not submitted: {}", names.join(", ")));
        }
        if !gone.is_empty() {
            seen.push_str(&format!(
                "; submitted fields changed or gone: {}",
                gone.join(", ")
            ));
        }
        outcome.violations.push(violation(
            CheckKind::DeliverySizeMismatch,
            recipient,
            copy,
            format!(
                "{expected} bytes ({} submitted + {added_bytes} of {} added trace fields)",
                submitted.size,
                added.len()
            ),
            seen,
        ));
    }
}
