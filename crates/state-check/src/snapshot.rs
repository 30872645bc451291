//! Checkpoints: every session that has a mailbox open must have been told
//! the same mailbox.

use std::collections::{BTreeSet, HashMap};

use crate::command::normalize_mailbox;
use crate::violation::{CheckCounts, CheckKind, Violation};

/// What one session knows of its selected mailbox at a checkpoint
/// ([`crate::SessionModel::snapshot`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The session's client id.
    pub client: String,
    /// The selected mailbox.
    pub mailbox: String,
    /// Opened with EXAMINE (or reported `[READ-ONLY]`): such a session
    /// sees `\Recent` without taking it from the others.
    pub read_only: bool,
    /// Its UIDVALIDITY, if the server gave one.
    pub uid_validity: Option<u32>,
    /// Its messages in sequence order (sequence number = index + 1).
    pub messages: Vec<MessageView>,
    /// The highest UID the session was ever told of in this mailbox since
    /// it selected it, expunged messages included (0 if none): a message
    /// above it is one it has not been told of yet.
    pub highest_uid: u32,
}

/// One message as a session knows it; `None` where it was never told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageView {
    /// The UID.
    pub uid: Option<u32>,
    /// The flags and keywords, as the server spelt them.
    pub flags: Option<BTreeSet<String>>,
    /// The MODSEQ (CONDSTORE).
    pub modseq: Option<u64>,
}

/// Why a session has no snapshot to give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// No mailbox is selected, or its SELECT has not completed.
    #[error("no mailbox is selected")]
    NothingSelected,
    /// A command is in progress (its tag): the session's view is moving.
    #[error("command {0} is still in progress")]
    CommandInProgress(String),
    /// The model stopped checking this session (why).
    #[error("the model lost track of the session: {0}")]
    LostTrack(String),
}

/// What a checkpoint found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointOutcome {
    /// The comparisons made, by kind.
    pub checks: CheckCounts,
    /// The disagreements.
    pub violations: Vec<Violation>,
}

/// Compares what the sessions in `snapshots` that have `mailbox` selected
/// were told: message count, UIDVALIDITY and sequence-to-UID map, each
/// message's flags, keywords and MODSEQ where both sessions know them, and
/// `\Recent` on a message in at most one session.
///
/// Take the snapshots once every session has completed all it sent and a
/// NOOP or CHECK after it (imaptest's checkpoint), so that each was told of
/// every change. Each disagreement names the second session and gives the
/// first one's value (and name) as the expected value.
pub fn checkpoint(mailbox: &str, snapshots: &[Snapshot]) -> CheckpointOutcome {
    let mailbox = normalize_mailbox(mailbox);
    let views: Vec<&Snapshot> = snapshots
        .iter()
        .filter(|s| normalize_mailbox(&s.mailbox) == mailbox)
        .collect();
    let mut outcome = CheckpointOutcome::default();
    if let Some((reference, others)) = views.split_first() {
        for other in others {
            compare(&mailbox, reference, other, &mut outcome);
        }
    }
    check_recent(&mailbox, &views, &mut outcome);
    outcome
}

fn compare(mailbox: &str, reference: &Snapshot, other: &Snapshot, outcome: &mut CheckpointOutcome) {
    let told = |value: String| format!("{value} (as {} was told)", reference.client);
    let mut report = |kind, seq, uid, expected, seen| {
        outcome.violations.push(Violation {
            kind,
            client: other.client.clone(),
            mailbox: mailbox.to_owned(),
            seq,
            uid,
            expected,
            seen,
        });
    };
    outcome.checks.count(CheckKind::CheckpointCount);
    if reference.messages.len() != other.messages.len() && !arrived_between(reference, other) {
        report(
            CheckKind::CheckpointCount,
            None,
            None,
            told(format!("{} messages", reference.messages.len())),
            format!("{} messages", other.messages.len()),
        );
    }
    outcome.checks.count(CheckKind::CheckpointUid);
    if let (Some(a), Some(b)) = (reference.uid_validity, other.uid_validity)
        && a != b
    {
        report(
            CheckKind::CheckpointUid,
            None,
            None,
            told(format!("UIDVALIDITY {a}")),
            format!("UIDVALIDITY {b}"),
        );
        return;
    }
    for (seq, (a, b)) in (1..).zip(reference.messages.iter().zip(&other.messages)) {
        if let (Some(a), Some(b)) = (a.uid, b.uid) {
            outcome.checks.count(CheckKind::CheckpointUid);
            if a != b {
                report(
                    CheckKind::CheckpointUid,
                    Some(seq),
                    Some(b),
                    told(format!("UID {a}")),
                    format!("UID {b}"),
                );
            }
        }
    }
    let by_uid: HashMap<u32, &MessageView> = reference
        .messages
        .iter()
        .filter_map(|m| m.uid.map(|uid| (uid, m)))
        .collect();
    for (seq, message) in (1..).zip(&other.messages) {
        let Some(uid) = message.uid else { continue };
        let Some(theirs) = by_uid.get(&uid) else {
            continue;
        };
        if let (Some(a), Some(b)) = (&theirs.flags, &message.flags) {
            for (kind, system) in [
                (CheckKind::CheckpointFlags, true),
                (CheckKind::CheckpointKeywords, false),
            ] {
                outcome.checks.count(kind);
                let (a, b) = (flag_part(a, system), flag_part(b, system));
                if a != b {
                    report(
                        kind,
                        Some(seq),
                        Some(uid),
                        told(format!("({a})")),
                        format!("({b})"),
                    );
                }
            }
        }
        if let (Some(a), Some(b)) = (theirs.modseq, message.modseq) {
            outcome.checks.count(CheckKind::CheckpointModseq);
            if a != b {
                report(
                    CheckKind::CheckpointModseq,
                    Some(seq),
                    Some(uid),
                    told(format!("MODSEQ {a}")),
                    format!("MODSEQ {b}"),
                );
            }
        }
    }
}

/// True if the longer of the two views differs from the shorter only by
/// messages at its end whose UIDs (where known) are above every UID the
/// shorter was ever told of: mail delivered between the two sessions'
/// NOOPs. A checkpoint
/// holds the sessions, not the mail system, and a server announces a new
/// message to each session at its next command (RFC 3501 section 7.3.1),
/// so one may be told of it and the other not yet. Their common messages
/// are still compared one by one.
fn arrived_between(a: &Snapshot, b: &Snapshot) -> bool {
    let (shorter, longer) = if a.messages.len() <= b.messages.len() {
        (a, b)
    } else {
        (b, a)
    };
    longer.messages[shorter.messages.len()..]
        .iter()
        .all(|m| m.uid.is_none_or(|uid| uid > shorter.highest_uid))
}

/// The system flags (without `\Recent`, which is per session) or the
/// keywords of a set, folded and sorted, as one text.
fn flag_part(flags: &BTreeSet<String>, system: bool) -> String {
    let part: BTreeSet<String> = flags
        .iter()
        .filter(|f| f.starts_with('\\') == system)
        .map(|f| f.to_ascii_lowercase())
        .filter(|f| f != "\\recent")
        .collect();
    part.into_iter().collect::<Vec<_>>().join(" ")
}

/// `\Recent` is given to one read-write session only (RFC 3501 section
/// 2.3.2; a read-only session sees it without taking it); under IMAP4rev2
/// to none, which passes too.
fn check_recent(mailbox: &str, views: &[&Snapshot], outcome: &mut CheckpointOutcome) {
    let mut holders: HashMap<u32, Vec<(&str, u32)>> = HashMap::new();
    for view in views.iter().filter(|v| !v.read_only) {
        for (seq, message) in (1..).zip(&view.messages) {
            let (Some(uid), Some(flags)) = (message.uid, &message.flags) else {
                continue;
            };
            outcome.checks.count(CheckKind::CheckpointRecent);
            if flags.iter().any(|f| f.eq_ignore_ascii_case("\\Recent")) {
                holders.entry(uid).or_default().push((&view.client, seq));
            }
        }
    }
    let mut uids: Vec<_> = holders.into_iter().filter(|(_, h)| h.len() > 1).collect();
    uids.sort_unstable();
    for (uid, holders) in uids {
        let (client, seq) = holders[1];
        let names: Vec<&str> = holders.iter().map(|(c, _)| *c).collect();
        outcome.violations.push(Violation {
            kind: CheckKind::CheckpointRecent,
            client: client.to_owned(),
            mailbox: mailbox.to_owned(),
            seq: Some(seq),
            uid: Some(uid),
            expected: format!("\\Recent in at most one session ({} has it)", holders[0].0),
            seen: format!("\\Recent in {}", names.join(", ")),
        });
    }
}
