//! # peakhour-imap
//!
//! The IMAP client peakhour's simulated users speak: a sans-I/O core and a
//! thin tokio driver over it.
//!
//! * [`ClientCore`] is the protocol: feed it server bytes
//!   ([`ClientCore::enqueue_input`]), start commands ([`ClientCore::send`]) and
//!   call [`ClientCore::next`], which returns a [`Progress`]: bytes to write,
//!   an [`Event`], or "need more input" (the vocabulary every peakhour
//!   protocol core shares, [`peakhour_net::ProtocolCore`]). It has no socket
//!   and no clock, so transcripts and the fuzzer drive it directly. It frames responses itself (enforcing
//!   [`Limits`] while bytes arrive) and decodes them with imap-codec, except
//!   the commonest ones in their plainest spellings, which it reads itself
//!   (tagged OK, `+ idling`, EXISTS, RECENT, EXPUNGE, the FETCH of new mail).
//! * [`ImapConnection`] runs the core over a [`peakhour_net::Transport`] with
//!   the shared [`peakhour_net::Pump`]; every command returns a
//!   [`peakhour_net::Timed`] value or one [`ImapError`], and is bounded by a
//!   deadline when one is set ([`ImapConnection::set_command_timeout`]).
//!
//! The client speaks IMAP4rev1. A server that also offers IMAP4rev2 keeps
//! rev1 semantics unless the client ENABLEs rev2, which this client does not:
//! rev2 replaces SEARCH responses with ESEARCH, which the parser lacks.
//!
//! Untagged EXISTS, RECENT, EXPUNGE and FETCH (flag changes) update the
//! selected [`MailboxState`] whenever they arrive, including during IDLE and
//! NOOP, so the engine can see new mail without asking.
//!
//! * [`clients`] holds the client personalities (issue 28): what Thunderbird,
//!   mbsync, neomutt and Roundcube send per action, as pure functions of the
//!   session's mailbox state; [`fidelity`] measures a transcript per action
//!   and scores it against a recording (weighted Jaccard).
#![deny(missing_docs)]

pub mod clients;
mod connection;
mod convert;
mod core;
mod direct;
mod error;
pub mod fidelity;
mod framer;
pub mod modseq;
mod quick;
mod request;
mod types;

pub use crate::connection::{Idle, ImapConnection};
pub use crate::core::{ClientCore, Event, Reply, Wire};
pub use crate::error::{ImapError, Refusal};
pub use crate::framer::Limits;
pub use crate::request::Request;
pub use crate::types::{
    AppendUid, BodyPart, BodySection, Capabilities, CopyUid, EnvelopeSummary, FetchItem,
    FetchedMessage, ListEntry, MailboxInfo, MailboxState, MailboxUpdate, NamespaceEntry,
    Namespaces, Rejection, SearchKey, SortCriterion, SortKey, StatusInfo, StatusItem, StoreMode,
    ThreadAlgorithm, ThreadNode,
};
/// Re-exported because [`ClientCore::next`] returns it: callers (and the fuzz
/// target) need not depend on `peakhour-net` for it.
pub use peakhour_net::{ErrorKind, Progress};
