//! What a check found: a typed value naming the session, the mailbox, the
//! message and both values, with a one-line text for logs and errors.csv.

use std::fmt;

/// Every check the crate makes, continuous (in one session) or at a
/// checkpoint (across the sessions of one mailbox).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CheckKind {
    /// A FETCH or EXPUNGE named a sequence number beyond the message count
    /// the session was told (EXISTS, minus EXPUNGEs): RFC 3501 section 7.4.2
    /// and 7.4.1 number messages the client knows of.
    SequenceNotAnnounced,
    /// `* n EXISTS` announced fewer messages than the session holds, with no
    /// EXPUNGE for the difference (only EXPUNGE decreases the count: RFC
    /// 9051 section 7.4.1).
    ExistsShrank,
    /// A sequence number's UID changed with no EXPUNGE in between.
    UidChanged,
    /// UIDs out of order: not ascending with the sequence number, or a new
    /// message's UID not above every UID the session knew of (reuse within a
    /// UIDVALIDITY; RFC 3501 section 2.3.1.1).
    UidOrder,
    /// A FETCH returned a message the server had already reported expunged
    /// to this session.
    ExpungedMessageReturned,
    /// ENVELOPE, BODYSTRUCTURE, BODY, RFC822.SIZE, INTERNALDATE or a body
    /// section of a message changed (they are immutable: RFC 3501 section 2.3).
    StaticChanged,
    /// A FETCH showed a keyword that the mailbox's last FLAGS response did
    /// not list (RFC 3501 section 7.2.6).
    KeywordNotInFlags,
    /// A message's MODSEQ, or the mailbox's HIGHESTMODSEQ, went down
    /// (RFC 7162 section 3.1.1 and 3.1.2).
    ModseqBackwards,
    /// EXPUNGE sent during FETCH, STORE or SEARCH by sequence number, or with
    /// no command in progress (RFC 3501 section 7.4.1).
    ExpungeNotAllowed,
    /// The session is the account's only writer, and its own STORE is not
    /// in the flags its answer or a later FETCH shows.
    OwnStoreLost,
    /// The session's MOVE completed but a message its `[COPYUID]` says was
    /// moved was not reported expunged from the source (RFC 6851 section 3.3).
    MoveNotExpunged,
    /// A SEARCH left out a message the session knew, that matched criteria
    /// the model can evaluate, and that was still there (not reported
    /// expunged) when the session's next NOOP or CHECK completed (RFC 3501
    /// section 6.4.4; imaptest's SEARCH check).
    SearchMissing,
    /// Checkpoint: sessions of one mailbox count different numbers of messages.
    CheckpointCount,
    /// Checkpoint: sessions disagree on UIDVALIDITY or on a sequence
    /// number's UID.
    CheckpointUid,
    /// Checkpoint: sessions disagree on a message's system flags.
    CheckpointFlags,
    /// Checkpoint: sessions disagree on a message's keywords.
    CheckpointKeywords,
    /// Checkpoint: sessions disagree on a message's MODSEQ.
    CheckpointModseq,
    /// Checkpoint: more than one session sees a message as `\Recent`
    /// (RFC 3501 section 2.3.2).
    CheckpointRecent,
    /// JMAP: a `/set` or `/import` that changed something answered a
    /// `newState` equal to a state from before the change, or a later answer
    /// went back to such a state (RFC 8620 section 5.1: the state MUST
    /// change when the data changes).
    JmapStateUnchanged,
    /// JMAP: a `/changes` answer from a state before the session's own
    /// change left that change out (RFC 8620 section 5.2).
    JmapChangesMissing,
    /// JMAP: an id the session created, and nobody destroyed, came back in
    /// an `Email/get`'s `notFound`.
    JmapCreatedNotFound,
    /// Audit after a run: a message is not in exactly one mailbox (peakhour's
    /// profiles move messages, never copy them).
    AuditMailboxCount,
    /// Audit after a run: a message is not in the mailbox a session last
    /// moved it to (or created it in).
    AuditWrongMailbox,
    /// Audit after a run: a message a session created or moved, and no
    /// session destroyed, is gone.
    AuditMissing,
    /// Audit after a run: a message a session destroyed, or any message
    /// after the clean-up, is still there.
    AuditLeftBehind,
    /// CalDAV: a GET or REPORT showed another ETag than the one the session's
    /// own PUT returned or it last saw, with nobody else writing.
    CaldavEtagMismatch,
    /// CalDAV: an event the session put and did not delete answered 404.
    CaldavEventLost,
    /// CalDAV: an event the session deleted came back in a GET or REPORT.
    CaldavDeletedReturned,
    /// CalDAV: a PUT or DELETE with `If-Match` naming the current ETag (the
    /// session is the only writer) was refused with 412 (RFC 7232 section 3.1).
    CaldavIfMatchRefused,
    /// Delivery: one submitted message found more than once in a
    /// recipient's mailbox.
    DeliveryDuplicated,
    /// Delivery: a delivered copy's Message-ID, Subject, `X-Peakhour-Run`
    /// or `X-Peakhour-Id` differs from what was submitted.
    DeliveryHeaderChanged,
    /// Delivery: a delivered copy's size is not the submitted size plus the
    /// header fields the MTA may add (Received, Return-Path, Delivered-To,
    /// DKIM-Signature, ...).
    DeliverySizeMismatch,
}

/// The protocol a check belongs to (reports group kinds by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// IMAP sessions and checkpoints.
    Imap,
    /// JMAP sessions and the audit after a run.
    Jmap,
    /// CalDAV sessions.
    CalDav,
    /// Delivered copies against their submission.
    Delivery,
}

impl Protocol {
    /// The protocol's name in reports (`caldav`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Imap => "imap",
            Protocol::Jmap => "jmap",
            Protocol::CalDav => "caldav",
            Protocol::Delivery => "delivery",
        }
    }
}

impl CheckKind {
    /// Every kind, in a stable order (for counters and reports).
    pub const ALL: [CheckKind; 32] = [
        CheckKind::SequenceNotAnnounced,
        CheckKind::ExistsShrank,
        CheckKind::UidChanged,
        CheckKind::UidOrder,
        CheckKind::ExpungedMessageReturned,
        CheckKind::StaticChanged,
        CheckKind::KeywordNotInFlags,
        CheckKind::ModseqBackwards,
        CheckKind::ExpungeNotAllowed,
        CheckKind::OwnStoreLost,
        CheckKind::MoveNotExpunged,
        CheckKind::SearchMissing,
        CheckKind::CheckpointCount,
        CheckKind::CheckpointUid,
        CheckKind::CheckpointFlags,
        CheckKind::CheckpointKeywords,
        CheckKind::CheckpointModseq,
        CheckKind::CheckpointRecent,
        CheckKind::JmapStateUnchanged,
        CheckKind::JmapChangesMissing,
        CheckKind::JmapCreatedNotFound,
        CheckKind::AuditMailboxCount,
        CheckKind::AuditWrongMailbox,
        CheckKind::AuditMissing,
        CheckKind::AuditLeftBehind,
        CheckKind::CaldavEtagMismatch,
        CheckKind::CaldavEventLost,
        CheckKind::CaldavDeletedReturned,
        CheckKind::CaldavIfMatchRefused,
        CheckKind::DeliveryDuplicated,
        CheckKind::DeliveryHeaderChanged,
        CheckKind::DeliverySizeMismatch,
    ];

    /// The kind's name in reports and JSON (`uid_order`).
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::SequenceNotAnnounced => "sequence_not_announced",
            CheckKind::ExistsShrank => "exists_shrank",
            CheckKind::UidChanged => "uid_changed",
            CheckKind::UidOrder => "uid_order",
            CheckKind::ExpungedMessageReturned => "expunged_message_returned",
            CheckKind::StaticChanged => "static_changed",
            CheckKind::KeywordNotInFlags => "keyword_not_in_flags",
            CheckKind::ModseqBackwards => "modseq_backwards",
            CheckKind::ExpungeNotAllowed => "expunge_not_allowed",
            CheckKind::OwnStoreLost => "own_store_lost",
            CheckKind::MoveNotExpunged => "move_not_expunged",
            CheckKind::SearchMissing => "search_missing",
            CheckKind::CheckpointCount => "checkpoint_count",
            CheckKind::CheckpointUid => "checkpoint_uid",
            CheckKind::CheckpointFlags => "checkpoint_flags",
            CheckKind::CheckpointKeywords => "checkpoint_keywords",
            CheckKind::CheckpointModseq => "checkpoint_modseq",
            CheckKind::CheckpointRecent => "checkpoint_recent",
            CheckKind::JmapStateUnchanged => "jmap_state_unchanged",
            CheckKind::JmapChangesMissing => "jmap_changes_missing",
            CheckKind::JmapCreatedNotFound => "jmap_created_not_found",
            CheckKind::AuditMailboxCount => "audit_mailbox_count",
            CheckKind::AuditWrongMailbox => "audit_wrong_mailbox",
            CheckKind::AuditMissing => "audit_missing",
            CheckKind::AuditLeftBehind => "audit_left_behind",
            CheckKind::CaldavEtagMismatch => "caldav_etag_mismatch",
            CheckKind::CaldavEventLost => "caldav_event_lost",
            CheckKind::CaldavDeletedReturned => "caldav_deleted_returned",
            CheckKind::CaldavIfMatchRefused => "caldav_if_match_refused",
            CheckKind::DeliveryDuplicated => "delivery_duplicated",
            CheckKind::DeliveryHeaderChanged => "delivery_header_changed",
            CheckKind::DeliverySizeMismatch => "delivery_size_mismatch",
        }
    }

    /// The protocol the check belongs to.
    pub fn protocol(self) -> Protocol {
        use CheckKind::*;
        match self {
            JmapStateUnchanged | JmapChangesMissing | JmapCreatedNotFound | AuditMailboxCount
            | AuditWrongMailbox | AuditMissing | AuditLeftBehind => Protocol::Jmap,
            CaldavEtagMismatch | CaldavEventLost | CaldavDeletedReturned | CaldavIfMatchRefused => {
                Protocol::CalDav
            }
            DeliveryDuplicated | DeliveryHeaderChanged | DeliverySizeMismatch => Protocol::Delivery,
            _ => Protocol::Imap,
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|&k| k == self).unwrap_or(0)
    }
}

impl fmt::Display for CheckKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How many times each check was made: the denominator of the violations
/// ("thousands of checks, zero violations").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckCounts([u64; CheckKind::ALL.len()]);

impl CheckCounts {
    /// One more check of `kind`.
    pub fn count(&mut self, kind: CheckKind) {
        self.0[kind.index()] += 1;
    }

    /// Checks of `kind` made so far.
    pub fn get(&self, kind: CheckKind) -> u64 {
        self.0[kind.index()]
    }

    /// All checks made so far.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds `other`'s counts (a run sums its sessions').
    pub fn add(&mut self, other: &CheckCounts) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }
}

/// One contradiction in what the server told a session, or told two sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which check.
    pub kind: CheckKind,
    /// The session that was told the contradicting value (its client id).
    pub client: String,
    /// The mailbox (IMAP, delivery), or the object the check is about for
    /// JMAP (`Email M1a2`, `Email state`) and CalDAV (the event's href).
    pub mailbox: String,
    /// The message's sequence number in that session, when one applies.
    pub seq: Option<u32>,
    /// The message's UID, when known.
    pub uid: Option<u32>,
    /// What the earlier answer (or the other session) implies.
    pub expected: String,
    /// What the server said instead.
    pub seen: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let number = |n: Option<u32>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
        if matches!(self.kind.protocol(), Protocol::Jmap | Protocol::CalDav) {
            // No mailbox, sequence number or UID: the object says it all.
            return write!(
                f,
                "{}: client {}, {}: expected {}, seen {}",
                self.kind, self.client, self.mailbox, self.expected, self.seen
            );
        }
        write!(
            f,
            "{}: client {}, mailbox {:?}, seq {}, UID {}: expected {}, seen {}",
            self.kind,
            self.client,
            self.mailbox,
            number(self.seq),
            number(self.uid),
            self.expected,
            self.seen
        )
    }
}
