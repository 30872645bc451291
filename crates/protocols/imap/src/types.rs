//! The values commands take and return. They are plain owned data, independent
//! of imap-types (still an alpha), so the engine does not depend on its API.

use std::time::SystemTime;

/// What the server says it can do, from the greeting, a CAPABILITY response or
/// a `[CAPABILITY ...]` response code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Upper-cased capability names (`IMAP4REV1`, `AUTH=PLAIN`, `LITERAL+`).
    names: Vec<String>,
    /// False until the server has listed them, and again after LOGIN or
    /// STARTTLS, when the list the server gave before no longer holds.
    known: bool,
}

impl Capabilities {
    pub(crate) fn from_names(names: impl IntoIterator<Item = String>) -> Self {
        Self {
            names: names.into_iter().map(|n| n.to_ascii_uppercase()).collect(),
            known: true,
        }
    }

    pub(crate) fn forget(&mut self) {
        self.names.clear();
        self.known = false;
    }

    /// True once the server has listed its capabilities for the current state.
    pub fn is_known(&self) -> bool {
        self.known
    }

    /// Whether the server advertises `name` (case-insensitive), e.g. `"MOVE"`,
    /// `"AUTH=PLAIN"`.
    pub fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }

    /// Whether any `SORT` or `SORT=...` capability is advertised.
    pub fn has_sort(&self) -> bool {
        self.names
            .iter()
            .any(|n| n == "SORT" || n.starts_with("SORT="))
    }

    /// The capability names, upper-cased.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }
}

/// The state of the selected mailbox, as the server last reported it.
///
/// Kept current from untagged data whenever it arrives, including during IDLE
/// and NOOP, so the engine sees new mail (a growing `exists`) without asking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailboxState {
    /// The mailbox name as given to SELECT/EXAMINE.
    pub name: String,
    /// Opened with EXAMINE or reported `[READ-ONLY]`.
    pub read_only: bool,
    /// Number of messages (`* n EXISTS`, minus each `* n EXPUNGE`).
    pub exists: u32,
    /// `* n RECENT`.
    pub recent: u32,
    /// `[UIDVALIDITY n]`.
    pub uid_validity: Option<u32>,
    /// `[UIDNEXT n]`.
    pub uid_next: Option<u32>,
    /// `[UNSEEN n]`: sequence number of the first unseen message.
    pub first_unseen: Option<u32>,
    /// `* FLAGS (...)`.
    pub flags: Vec<String>,
    /// `[PERMANENTFLAGS (...)]`.
    pub permanent_flags: Vec<String>,
}

/// A change to the selected mailbox the server reported on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailboxUpdate {
    /// `* n EXISTS`: the mailbox now holds `n` messages.
    Exists(u32),
    /// `* n RECENT`.
    Recent(u32),
    /// `* n EXPUNGE`: message `n` is gone and later ones moved down by one.
    Expunge(u32),
    /// `* n FETCH (FLAGS ...)` not asked for by a FETCH: flags changed.
    Flags {
        /// Sequence number.
        seq: u32,
        /// The UID, when the server included it.
        uid: Option<u32>,
        /// The message's flags now.
        flags: Vec<String>,
    },
}

/// One mailbox from LIST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    /// The mailbox name.
    pub name: String,
    /// The hierarchy delimiter, if the server uses one.
    pub delimiter: Option<char>,
    /// Attributes such as `\HasNoChildren`, `\Noselect`, `\Sent`.
    pub attributes: Vec<String>,
}

/// One namespace of a NAMESPACE reply (RFC 2342): the prefix every folder
/// in it starts with (`""`, `INBOX.`, `Other Users/`) and its hierarchy
/// separator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceEntry {
    /// The prefix, separator included (`INBOX.`), or empty.
    pub prefix: String,
    /// The hierarchy separator, if the server uses one.
    pub delimiter: Option<char>,
}

/// The NAMESPACE reply: the user's own (personal) namespaces, other users'
/// and the shared ones, each in the server's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Namespaces {
    /// Where the user's own folders live; the first one is the default.
    pub personal: Vec<NamespaceEntry>,
    /// Other users' folders.
    pub other: Vec<NamespaceEntry>,
    /// Shared folders.
    pub shared: Vec<NamespaceEntry>,
}

/// The data SELECT or EXAMINE returned (also kept as [`MailboxState`]).
pub type MailboxInfo = MailboxState;

/// An item STATUS can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusItem {
    /// MESSAGES.
    Messages,
    /// RECENT.
    Recent,
    /// UIDNEXT.
    UidNext,
    /// UIDVALIDITY.
    UidValidity,
    /// UNSEEN.
    Unseen,
}

/// The answer to STATUS; items not asked for are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusInfo {
    /// The mailbox the server answered for.
    pub mailbox: String,
    /// MESSAGES.
    pub messages: Option<u32>,
    /// RECENT.
    pub recent: Option<u32>,
    /// UIDNEXT.
    pub uid_next: Option<u32>,
    /// UIDVALIDITY.
    pub uid_validity: Option<u32>,
    /// UNSEEN.
    pub unseen: Option<u32>,
}

/// Which part of a message a `BODY[...]` fetch returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodySection {
    /// `BODY[]`: the whole message.
    Full,
    /// `BODY[HEADER]`.
    Header,
    /// `BODY[HEADER.FIELDS (name ...)]`.
    HeaderFields(Vec<String>),
    /// `BODY[TEXT]`.
    Text,
    /// `BODY[1]`, `BODY[1.2]`: one MIME part by its path.
    Part(Vec<u32>),
    /// A section the server returned that this client never asks for
    /// (`BODY[1.HEADER]` ...), described for debugging.
    Other(String),
}

/// What a FETCH asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchItem {
    /// UID.
    Uid,
    /// FLAGS.
    Flags,
    /// ENVELOPE.
    Envelope,
    /// BODYSTRUCTURE.
    BodyStructure,
    /// RFC822.SIZE.
    Size,
    /// INTERNALDATE.
    InternalDate,
    /// `BODY[section]`, or `BODY.PEEK[section]` (which leaves `\Seen` alone)
    /// when `peek` is true.
    Body {
        /// The section.
        section: BodySection,
        /// Use BODY.PEEK.
        peek: bool,
    },
}

/// The envelope fields the engine uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvelopeSummary {
    /// The Date header, unparsed.
    pub date: Option<String>,
    /// The Subject header (MIME-encoded words are left as they are).
    pub subject: Option<String>,
    /// `mailbox@host` of each From address.
    pub from: Vec<String>,
    /// `mailbox@host` of each To address.
    pub to: Vec<String>,
    /// The Message-ID header.
    pub message_id: Option<String>,
    /// The In-Reply-To header.
    pub in_reply_to: Option<String>,
}

/// One leaf MIME part from BODYSTRUCTURE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyPart {
    /// Its section path: `[1]` for a single-part message, `[2, 1]` for `BODY[2.1]`.
    pub path: Vec<u32>,
    /// `type/subtype`, lower-cased.
    pub media_type: String,
    /// Size in octets, as transferred.
    pub size: u32,
}

/// One message from a FETCH; items not asked for are `None` or empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchedMessage {
    /// Sequence number.
    pub seq: u32,
    /// UID.
    pub uid: Option<u32>,
    /// FLAGS.
    pub flags: Option<Vec<String>>,
    /// ENVELOPE.
    pub envelope: Option<EnvelopeSummary>,
    /// RFC822.SIZE.
    pub size: Option<u32>,
    /// INTERNALDATE.
    pub internal_date: Option<SystemTime>,
    /// BODYSTRUCTURE, flattened to its leaf parts.
    pub body_parts: Option<Vec<BodyPart>>,
    /// The `BODY[...]` sections returned, with their bytes (NIL gives empty).
    pub sections: Vec<(BodySection, Vec<u8>)>,
}

impl FetchedMessage {
    /// The bytes of `section`, if the server returned it.
    pub fn section(&self, section: &BodySection) -> Option<&[u8]> {
        self.sections
            .iter()
            .find(|(s, _)| s == section)
            .map(|(_, bytes)| bytes.as_slice())
    }
}

/// How STORE changes flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMode {
    /// `+FLAGS`: add.
    Add,
    /// `-FLAGS`: remove.
    Remove,
    /// `FLAGS`: replace.
    Replace,
}

/// `[APPENDUID validity uid]` (UIDPLUS): where an appended message landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendUid {
    /// The target mailbox's UIDVALIDITY.
    pub uid_validity: u32,
    /// The new message's UID.
    pub uid: u32,
}

/// `[COPYUID validity source destination]` (UIDPLUS), with the UID sets in
/// IMAP syntax (`4:6,9`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyUid {
    /// The target mailbox's UIDVALIDITY.
    pub uid_validity: u32,
    /// The source UIDs.
    pub source: String,
    /// Their UIDs in the target mailbox, in the same order.
    pub destination: String,
}

/// SEARCH criteria: the few the engine needs, and `And` to combine them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchKey {
    /// ALL.
    All,
    /// UNSEEN.
    Unseen,
    /// SEEN.
    Seen,
    /// FLAGGED.
    Flagged,
    /// DELETED.
    Deleted,
    /// UNDELETED.
    Undeleted,
    /// `HEADER name value`.
    Header(String, String),
    /// `SUBJECT text`.
    Subject(String),
    /// `FROM text`.
    From(String),
    /// `TEXT text` (headers and body).
    Text(String),
    /// `UID set`.
    Uid(String),
    /// A sequence set.
    Sequence(String),
    /// `NOT key`.
    Not(Box<SearchKey>),
    /// All of these (a parenthesised list).
    And(Vec<SearchKey>),
}

/// A SORT key (RFC 5256).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// ARRIVAL.
    Arrival,
    /// DATE.
    Date,
    /// FROM.
    From,
    /// SIZE.
    Size,
    /// SUBJECT.
    Subject,
    /// TO.
    To,
}

/// A SORT criterion: a key, possibly reversed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortCriterion {
    /// The key.
    pub key: SortKey,
    /// REVERSE.
    pub reverse: bool,
}

/// A THREAD algorithm (RFC 5256).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadAlgorithm {
    /// ORDEREDSUBJECT.
    OrderedSubject,
    /// REFERENCES.
    References,
}

/// One node of a THREAD response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadNode {
    /// The message (sequence number or UID); `None` for the placeholder
    /// parent of sibling threads whose common parent is missing.
    pub message: Option<u32>,
    /// Replies to this message.
    pub children: Vec<ThreadNode>,
}

/// How the server refused a command, as an event of the core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The command's name.
    pub command: &'static str,
    /// NO or BAD.
    pub refusal: crate::Refusal,
    /// The server's text.
    pub text: String,
}
