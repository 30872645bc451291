//! # peakhour-state-check
//!
//! Correct under load: what every IMAP session was told about its mailbox
//! must stay consistent, and every session that has a mailbox open must be
//! told the same mailbox. The checks Dovecot's imaptest makes, rebuilt as
//! pure code (no socket, no clock) that the engine runs beside each session.
//!
//! * [`SessionModel`] models one session. Feed it every byte the session
//!   wrote ([`SessionModel::sent`]) and read ([`SessionModel::received`]),
//!   in wire order and in chunks of any size; it frames the commands and
//!   responses itself, decodes responses with imap-codec, tracks the
//!   selected mailbox (count, sequence-to-UID map, UIDVALIDITY, flags and
//!   keywords, MODSEQ, static items of fetched messages, the session's own
//!   STOREs and MOVEs) and returns each [`Violation`] a response reveals.
//!   peakhour-imap records the bytes in that order
//!   (`ImapConnection::record_wire`, `take_wire`). [`SessionOptions`] says
//!   whether the session is its account's only writer, which decides what
//!   its own STOREs let the model expect.
//! * [`checkpoint`] compares the [`Snapshot`]s of the sessions that have one
//!   mailbox open, taken when each is quiet ([`SessionModel::snapshot`]).
//! * Every check has a [`CheckKind`], and [`CheckCounts`] counts how often
//!   each was made, so a run can say "so many checks, no violation".
//!
//! Every check follows the latitude the RFCs give servers: no EXPUNGE is
//! expected during FETCH, STORE or SEARCH by sequence number (RFC 3501
//! section 7.4.1), flag changes from other sessions may arrive at any time,
//! and nothing expects `\Recent` (IMAP4rev2 dropped it). A check that cannot
//! tell a server bug from allowed behaviour is left out; README.md names
//! them.
//!
//! Beside IMAP, the same [`Violation`] and [`CheckKind`] serve JMAP
//! ([`JmapSessionModel`], fed each request and response as JSON, and the
//! after-run [`audit()`]), CalDAV ([`CalDavSessionModel`], fed each
//! [`CalDavExchange`]) and delivery ([`check_delivery`], a submission
//! against the copies the reconciliation found).
//!
//! [`RawLog`] keeps a session's last lines, bounded and without
//! credentials, to show a violation with the exchange around it.
#![deny(missing_docs)]

mod audit;
mod caldav;
mod command;
mod delivery;
mod framing;
mod jmap;
mod rawlog;
mod response;
mod selected;
mod session;
mod snapshot;
mod violation;

pub use crate::audit::{AuditOutcome, audit, audit_cleanup};
pub use crate::caldav::{CalDavExchange, CalDavOptions, CalDavSessionModel, ReportEntry};
pub use crate::delivery::{
    ADDED_BY_MAIL_SYSTEM, DeliveryOptions, DeliveryOutcome, FoundCopy, SubmittedMessage,
    TRACKED_FIELDS, check_delivery, check_delivery_as,
};
pub use crate::jmap::{JmapExpectations, JmapOptions, JmapSessionModel};
pub use crate::rawlog::{RAW_LOG_BYTES, RAW_LOG_LINE, RawLog};
pub use crate::session::{SessionModel, SessionOptions};
pub use crate::snapshot::{CheckpointOutcome, MessageView, Snapshot, SnapshotError, checkpoint};
pub use crate::violation::{CheckCounts, CheckKind, Protocol, Violation};
