//! Commands as the engine asks for them, and their encoding to wire bytes
//! through imap-codec (which picks atom, quoted string or literal for us).

use std::borrow::Cow;
use std::num::NonZeroU32;
use std::time::SystemTime;

use imap_codec::encode::{Encoder, Fragment};
use imap_codec::imap_types::auth::{AuthMechanism, AuthenticateData};
use imap_codec::imap_types::command::{Command, CommandBody};
use imap_codec::imap_types::core::{
    AString, Charset, IString, Literal, LiteralMode, NString, Vec1,
};
use imap_codec::imap_types::datetime::DateTime;
use imap_codec::imap_types::extensions::binary::LiteralOrLiteral8;
use imap_codec::imap_types::extensions::enable::CapabilityEnable;
use imap_codec::imap_types::extensions::sort::{
    SortCriterion as CodecSortCriterion, SortKey as CodecSortKey,
};
use imap_codec::imap_types::extensions::thread::ThreadingAlgorithm;
use imap_codec::imap_types::fetch::{
    MacroOrMessageDataItemNames, MessageDataItemName, Part, Section,
};
use imap_codec::imap_types::flag::{Flag, StoreResponse, StoreType};
use imap_codec::imap_types::mailbox::{ListMailbox, Mailbox};
use imap_codec::imap_types::search::SearchKey as CodecSearchKey;
use imap_codec::imap_types::secret::Secret as CodecSecret;
use imap_codec::imap_types::sequence::SequenceSet;
use imap_codec::imap_types::status::StatusDataItemName;
use imap_codec::{AuthenticateDataCodec, CommandCodec};
use peakhour_net::Secret;

use crate::error::ImapError;
use crate::types::{
    BodySection, Capabilities, FetchItem, SearchKey, SortCriterion, SortKey, StatusItem, StoreMode,
    ThreadAlgorithm,
};

/// LITERAL- (RFC 7888) allows non-synchronizing literals up to this size.
const LITERAL_MINUS_MAX: usize = 4096;

/// One IMAP command, with owned arguments so it can wait in a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// CAPABILITY.
    Capability,
    /// NOOP: also how a client polls for new mail without IDLE.
    Noop,
    /// LOGOUT.
    Logout,
    /// STARTTLS; the driver upgrades the transport after the OK.
    StartTls,
    /// ID (RFC 2971) with the client's field/value pairs.
    Id(Vec<(String, String)>),
    /// LOGIN.
    Login {
        /// User name.
        username: String,
        /// Password.
        password: Secret<String>,
    },
    /// AUTHENTICATE PLAIN, with SASL-IR when offered, else after a continuation.
    AuthenticatePlain {
        /// User name (authentication and authorization identity).
        username: String,
        /// Password.
        password: Secret<String>,
    },
    /// LIST reference pattern.
    List {
        /// Reference name, usually empty.
        reference: String,
        /// Mailbox pattern with `*` / `%` wildcards.
        pattern: String,
    },
    /// CREATE.
    Create(String),
    /// SELECT.
    Select(String),
    /// EXAMINE (SELECT read-only).
    Examine(String),
    /// STATUS.
    Status {
        /// The mailbox.
        mailbox: String,
        /// What to ask for.
        items: Vec<StatusItem>,
    },
    /// FETCH / UID FETCH.
    Fetch {
        /// Sequence set (`1:5,7`, `*`), or UID set when `uid`.
        set: String,
        /// What to fetch.
        items: Vec<FetchItem>,
        /// UID FETCH.
        uid: bool,
    },
    /// STORE / UID STORE.
    Store {
        /// Sequence or UID set.
        set: String,
        /// Add, remove or replace.
        mode: StoreMode,
        /// Flags such as `\Seen`, `\Deleted`, `$Forwarded`.
        flags: Vec<String>,
        /// `.SILENT`: no FETCH responses with the new flags.
        silent: bool,
        /// UID STORE.
        uid: bool,
    },
    /// COPY / UID COPY.
    Copy {
        /// Sequence or UID set.
        set: String,
        /// Target mailbox.
        mailbox: String,
        /// UID COPY.
        uid: bool,
    },
    /// MOVE / UID MOVE (RFC 6851); see [`Request::move_messages`] for the fallback.
    Move {
        /// Sequence or UID set.
        set: String,
        /// Target mailbox.
        mailbox: String,
        /// UID MOVE.
        uid: bool,
    },
    /// EXPUNGE.
    Expunge,
    /// UID EXPUNGE (UIDPLUS): expunges only these UIDs.
    UidExpunge(String),
    /// APPEND.
    Append {
        /// Target mailbox.
        mailbox: String,
        /// Flags to set on the new message.
        flags: Vec<String>,
        /// Internal date; the server's clock when `None`.
        internal_date: Option<SystemTime>,
        /// The RFC 5322 message.
        message: Vec<u8>,
    },
    /// APPEND of several messages to one mailbox in one command (RFC 3502
    /// MULTIAPPEND): the server stores all of them or none, in one transaction.
    MultiAppend {
        /// Target mailbox.
        mailbox: String,
        /// Flags set on every message.
        flags: Vec<String>,
        /// The RFC 5322 messages, in order; at least one.
        messages: Vec<Vec<u8>>,
    },
    /// SEARCH / UID SEARCH.
    Search {
        /// Criteria; several are ANDed.
        criteria: SearchKey,
        /// UID SEARCH.
        uid: bool,
    },
    /// SORT / UID SORT (RFC 5256), with UTF-8 as charset.
    Sort {
        /// Sort keys, most significant first.
        by: Vec<SortCriterion>,
        /// Which messages.
        criteria: SearchKey,
        /// UID SORT.
        uid: bool,
    },
    /// THREAD / UID THREAD (RFC 5256), with UTF-8 as charset.
    Thread {
        /// The algorithm.
        algorithm: ThreadAlgorithm,
        /// Which messages.
        criteria: SearchKey,
        /// UID THREAD.
        uid: bool,
    },
    /// IDLE (RFC 2177); ended with `ClientCore::idle_done`.
    Idle,
    /// NAMESPACE (RFC 2342): where the user's own folders live, and their
    /// hierarchy separator.
    Namespace,
    /// CLOSE: leaves the selected mailbox, expunging what is `\Deleted` (as
    /// mbsync and neomutt leave a folder).
    Close,
    /// CHECK: a checkpoint of the selected mailbox (mbsync after its
    /// changes, Thunderbird's periodic check).
    Check,
    /// LSUB reference pattern: the subscribed folders, as Roundcube asks.
    Lsub {
        /// Reference name, usually empty.
        reference: String,
        /// Mailbox pattern with `*` / `%` wildcards.
        pattern: String,
    },
    /// ENABLE (RFC 5161) of these capabilities (neomutt's `UTF8=ACCEPT`).
    Enable(Vec<String>),
}

impl Request {
    /// The command's name, for errors and per-command statistics.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Capability => "CAPABILITY",
            Request::Noop => "NOOP",
            Request::Logout => "LOGOUT",
            Request::StartTls => "STARTTLS",
            Request::Id(_) => "ID",
            Request::Login { .. } => "LOGIN",
            Request::AuthenticatePlain { .. } => "AUTHENTICATE",
            Request::List { .. } => "LIST",
            Request::Create(_) => "CREATE",
            Request::Select(_) => "SELECT",
            Request::Examine(_) => "EXAMINE",
            Request::Status { .. } => "STATUS",
            Request::Fetch { uid: false, .. } => "FETCH",
            Request::Fetch { uid: true, .. } => "UID FETCH",
            Request::Store { uid: false, .. } => "STORE",
            Request::Store { uid: true, .. } => "UID STORE",
            Request::Copy { uid: false, .. } => "COPY",
            Request::Copy { uid: true, .. } => "UID COPY",
            Request::Move { uid: false, .. } => "MOVE",
            Request::Move { uid: true, .. } => "UID MOVE",
            Request::Expunge => "EXPUNGE",
            Request::UidExpunge(_) => "UID EXPUNGE",
            Request::Append { .. } | Request::MultiAppend { .. } => "APPEND",
            Request::Search { uid: false, .. } => "SEARCH",
            Request::Search { uid: true, .. } => "UID SEARCH",
            Request::Sort { uid: false, .. } => "SORT",
            Request::Sort { uid: true, .. } => "UID SORT",
            Request::Thread { uid: false, .. } => "THREAD",
            Request::Thread { uid: true, .. } => "UID THREAD",
            Request::Idle => "IDLE",
            Request::Namespace => "NAMESPACE",
            Request::Close => "CLOSE",
            Request::Check => "CHECK",
            Request::Lsub { .. } => "LSUB",
            Request::Enable(_) => "ENABLE",
        }
    }

    /// Whether the command can go out in the same write as the DONE that
    /// ends an IDLE, before IDLE's completion has arrived.
    ///
    /// Not when it names messages by sequence number: the server may still
    /// report expunges as it ends IDLE, and those renumber the messages
    /// (RFC 3501, section 5.5). STARTTLS and the logins change what the
    /// connection is, and are never sent while idling anyway.
    pub fn can_follow_idle(&self) -> bool {
        match self {
            Request::Fetch { uid, .. }
            | Request::Store { uid, .. }
            | Request::Copy { uid, .. }
            | Request::Move { uid, .. } => *uid,
            Request::Search { .. } | Request::Sort { .. } | Request::Thread { .. } => false,
            Request::StartTls | Request::Login { .. } | Request::AuthenticatePlain { .. } => false,
            Request::Capability
            | Request::Noop
            | Request::Logout
            | Request::Id(_)
            | Request::List { .. }
            | Request::Create(_)
            | Request::Select(_)
            | Request::Examine(_)
            | Request::Status { .. }
            | Request::Expunge
            | Request::UidExpunge(_)
            | Request::Append { .. }
            | Request::MultiAppend { .. }
            | Request::Namespace
            | Request::Close
            | Request::Check
            | Request::Lsub { .. }
            | Request::Enable(_)
            | Request::Idle => true,
        }
    }

    /// The commands that move `set` to `mailbox`: MOVE when the server offers
    /// it, otherwise COPY, STORE +FLAGS.SILENT \Deleted and an expunge.
    ///
    /// The fallback expunges with UID EXPUNGE when it can (UIDPLUS and a UID
    /// set), so only the moved messages go; a plain EXPUNGE also removes any
    /// other message already marked `\Deleted` in the mailbox.
    pub fn move_messages(
        capabilities: &Capabilities,
        set: &str,
        mailbox: &str,
        uid: bool,
    ) -> Vec<Request> {
        if capabilities.has("MOVE") {
            return vec![Request::Move {
                set: set.to_owned(),
                mailbox: mailbox.to_owned(),
                uid,
            }];
        }
        let expunge = if uid && capabilities.has("UIDPLUS") {
            Request::UidExpunge(set.to_owned())
        } else {
            Request::Expunge
        };
        vec![
            Request::Copy {
                set: set.to_owned(),
                mailbox: mailbox.to_owned(),
                uid,
            },
            Request::Store {
                set: set.to_owned(),
                mode: StoreMode::Add,
                flags: vec!["\\Deleted".to_owned()],
                silent: true,
                uid,
            },
            expunge,
        ]
    }

    /// Refuses a command the server has not advertised, before anything is sent.
    pub(crate) fn check_offered(&self, caps: &Capabilities) -> Result<(), ImapError> {
        let needed = match self {
            Request::StartTls => Some("STARTTLS"),
            Request::Id(_) => Some("ID"),
            Request::AuthenticatePlain { .. } => Some("AUTH=PLAIN"),
            Request::Move { .. } => Some("MOVE"),
            Request::MultiAppend { .. } => Some("MULTIAPPEND"),
            Request::UidExpunge(_) => Some("UIDPLUS"),
            Request::Idle => Some("IDLE"),
            Request::Namespace => Some("NAMESPACE"),
            Request::Enable(_) => Some("ENABLE"),
            Request::Thread { algorithm, .. } => Some(match algorithm {
                ThreadAlgorithm::OrderedSubject => "THREAD=ORDEREDSUBJECT",
                ThreadAlgorithm::References => "THREAD=REFERENCES",
            }),
            Request::Sort { .. } => {
                return if caps.has_sort() {
                    Ok(())
                } else {
                    Err(ImapError::NotOffered("SORT"))
                };
            }
            Request::Login { .. } if caps.has("LOGINDISABLED") => {
                return Err(ImapError::NotOffered(
                    "LOGIN (the server says LOGINDISABLED)",
                ));
            }
            _ => None,
        };
        match needed {
            Some(name) if !caps.has(name) => Err(ImapError::NotOffered(name)),
            _ => Ok(()),
        }
    }

    /// Encodes the command with `tag` into what the core writes, in order:
    /// the commonest commands directly ([`crate::direct`]), the others with
    /// imap-codec.
    pub(crate) fn encode(
        &self,
        tag: &str,
        caps: &Capabilities,
    ) -> Result<Vec<Outgoing>, ImapError> {
        match crate::direct::encode(self, tag) {
            Some(line) => Ok(vec![Outgoing::Bytes(line)]),
            None => self.encode_with_codec(tag, caps),
        }
    }

    /// Encodes the command with imap-codec.
    pub(crate) fn encode_with_codec(
        &self,
        tag: &str,
        caps: &Capabilities,
    ) -> Result<Vec<Outgoing>, ImapError> {
        let tag = imap_codec::imap_types::core::Tag::try_from(tag)
            .map_err(|e| ImapError::invalid("tag", e))?;
        let mut tail = Vec::new();
        let body = match self {
            Request::AuthenticatePlain { username, password } => {
                let plain = sasl_plain(username, password);
                if caps.has("SASL-IR") {
                    CommandBody::Authenticate {
                        mechanism: AuthMechanism::Plain,
                        initial_response: Some(CodecSecret::new(Cow::Owned(plain))),
                    }
                } else {
                    // The credentials go after the server's `+`.
                    let data = AuthenticateData::Continue(CodecSecret::new(Cow::Owned(plain)));
                    tail.push(Outgoing::AwaitContinuation);
                    tail.push(Outgoing::Bytes(
                        AuthenticateDataCodec::default().encode(&data).dump(),
                    ));
                    CommandBody::Authenticate {
                        mechanism: AuthMechanism::Plain,
                        initial_response: None,
                    }
                }
            }
            Request::MultiAppend {
                mailbox,
                flags: names,
                messages,
            } => return multi_append(tag, mailbox, names, messages, caps),
            other => other.body(caps)?,
        };
        let mut out = outgoing(&Command { tag, body });
        out.extend(tail);
        Ok(out)
    }

    // Kept whole although it is over 120 lines, because it is a table: one arm
    // per request, each turning our arguments into imap-codec's. Splitting it
    // would only scatter it.
    fn body<'a>(&'a self, caps: &Capabilities) -> Result<CommandBody<'a>, ImapError> {
        Ok(match self {
            Request::Capability => CommandBody::Capability,
            Request::Noop => CommandBody::Noop,
            Request::Logout => CommandBody::Logout,
            Request::StartTls => CommandBody::StartTLS,
            Request::Idle => CommandBody::Idle,
            Request::Namespace => CommandBody::Namespace,
            Request::Expunge => CommandBody::Expunge,
            Request::Close => CommandBody::Close,
            Request::Check => CommandBody::Check,
            Request::Lsub { reference, pattern } => CommandBody::Lsub {
                reference: mailbox(reference)?,
                mailbox_wildcard: ListMailbox::try_from(pattern.as_str())
                    .map_err(|e| ImapError::invalid("LSUB pattern", e))?,
            },
            Request::Enable(names) => {
                let mut capabilities = Vec::with_capacity(names.len());
                for name in names {
                    capabilities.push(
                        CapabilityEnable::try_from(name.as_str())
                            .map_err(|e| ImapError::invalid("ENABLE capability", e))?,
                    );
                }
                CommandBody::Enable {
                    capabilities: Vec1::try_from(capabilities)
                        .map_err(|e| ImapError::invalid("ENABLE capabilities", e))?,
                }
            }
            Request::Id(fields) => {
                let mut parameters = Vec::with_capacity(fields.len());
                for (key, value) in fields {
                    let key = IString::try_from(key.as_str())
                        .map_err(|e| ImapError::invalid("ID field", e))?;
                    let value = IString::try_from(value.as_str())
                        .map_err(|e| ImapError::invalid("ID value", e))?;
                    parameters.push((key, NString(Some(value))));
                }
                CommandBody::Id {
                    parameters: (!parameters.is_empty()).then_some(parameters),
                }
            }
            Request::Login { username, password } => CommandBody::Login {
                username: astring("user name", username)?,
                password: CodecSecret::new(astring("password", password.expose())?),
            },
            // Handled in `encode`, which needs to add the continuation data.
            Request::AuthenticatePlain { .. } => CommandBody::Authenticate {
                mechanism: AuthMechanism::Plain,
                initial_response: None,
            },
            // Handled in `encode`: imap-codec has no MULTIAPPEND.
            Request::MultiAppend { .. } => {
                return Err(ImapError::invalid(
                    "MULTIAPPEND",
                    "encoded by Request::encode only",
                ));
            }
            Request::List { reference, pattern } => CommandBody::List {
                reference: mailbox(reference)?,
                mailbox_wildcard: ListMailbox::try_from(pattern.as_str())
                    .map_err(|e| ImapError::invalid("LIST pattern", e))?,
            },
            Request::Create(name) => CommandBody::Create {
                mailbox: mailbox(name)?,
            },
            Request::Select(name) => CommandBody::Select {
                mailbox: mailbox(name)?,
            },
            Request::Examine(name) => CommandBody::Examine {
                mailbox: mailbox(name)?,
            },
            Request::Status {
                mailbox: name,
                items,
            } => CommandBody::Status {
                mailbox: mailbox(name)?,
                item_names: Cow::Owned(items.iter().map(status_item).collect()),
            },
            Request::Fetch { set, items, uid } => CommandBody::Fetch {
                sequence_set: sequence_set(set)?,
                macro_or_item_names: MacroOrMessageDataItemNames::MessageDataItemNames(
                    items.iter().map(fetch_item).collect::<Result<_, _>>()?,
                ),
                uid: *uid,
            },
            Request::Store {
                set,
                mode,
                flags: names,
                silent,
                uid,
            } => CommandBody::Store {
                sequence_set: sequence_set(set)?,
                kind: match mode {
                    StoreMode::Add => StoreType::Add,
                    StoreMode::Remove => StoreType::Remove,
                    StoreMode::Replace => StoreType::Replace,
                },
                response: if *silent {
                    StoreResponse::Silent
                } else {
                    StoreResponse::Answer
                },
                flags: flags(names)?,
                uid: *uid,
            },
            Request::Copy {
                set,
                mailbox: name,
                uid,
            } => CommandBody::Copy {
                sequence_set: sequence_set(set)?,
                mailbox: mailbox(name)?,
                uid: *uid,
            },
            Request::Move {
                set,
                mailbox: name,
                uid,
            } => CommandBody::Move {
                sequence_set: sequence_set(set)?,
                mailbox: mailbox(name)?,
                uid: *uid,
            },
            Request::UidExpunge(set) => CommandBody::ExpungeUid {
                sequence_set: sequence_set(set)?,
            },
            Request::Append {
                mailbox: name,
                flags: names,
                internal_date,
                message,
            } => {
                let mut literal = Literal::try_from(message.as_slice())
                    .map_err(|e| ImapError::invalid("message", e))?;
                // A non-synchronizing literal saves a round trip per APPEND.
                if non_sync_literal(caps, message.len()) {
                    literal = literal.into_non_sync();
                }
                CommandBody::Append {
                    mailbox: mailbox(name)?,
                    flags: flags(names)?,
                    date: internal_date.map(imap_date).transpose()?,
                    message: LiteralOrLiteral8::Literal(literal),
                }
            }
            Request::Search { criteria, uid } => CommandBody::Search {
                charset: None,
                criteria: search_criteria(criteria)?,
                uid: *uid,
            },
            Request::Sort { by, criteria, uid } => CommandBody::Sort {
                sort_criteria: Vec1::try_from(by.iter().map(sort_criterion).collect::<Vec<_>>())
                    .map_err(|_| ImapError::invalid("SORT", "no sort key"))?,
                charset: utf8()?,
                search_criteria: search_criteria(criteria)?,
                uid: *uid,
            },
            Request::Thread {
                algorithm,
                criteria,
                uid,
            } => CommandBody::Thread {
                algorithm: match algorithm {
                    ThreadAlgorithm::OrderedSubject => ThreadingAlgorithm::OrderedSubject,
                    ThreadAlgorithm::References => ThreadingAlgorithm::References,
                },
                charset: utf8()?,
                search_criteria: search_criteria(criteria)?,
                uid: *uid,
            },
        })
    }
}

/// A piece of a command in the order it goes out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outgoing {
    /// Bytes that can be written now.
    Bytes(Vec<u8>),
    /// Stop until the server sends a `+` continuation request.
    AwaitContinuation,
}

fn sasl_plain(username: &str, password: &Secret<String>) -> Vec<u8> {
    // authzid NUL authcid NUL passwd, with an empty authzid (act as oneself).
    let mut plain = Vec::with_capacity(username.len() + password.expose().len() + 2);
    plain.push(0);
    plain.extend_from_slice(username.as_bytes());
    plain.push(0);
    plain.extend_from_slice(password.expose().as_bytes());
    plain
}

fn astring<'a>(what: &'static str, value: &'a str) -> Result<AString<'a>, ImapError> {
    // Never echo a password back in an error message.
    AString::try_from(value).map_err(|_| ImapError::invalid(what, "not sendable as an IMAP string"))
}

fn mailbox(name: &str) -> Result<Mailbox<'_>, ImapError> {
    Mailbox::try_from(name).map_err(|e| ImapError::invalid("mailbox name", e))
}

fn sequence_set(set: &str) -> Result<SequenceSet, ImapError> {
    SequenceSet::try_from(set)
        .map_err(|e| ImapError::invalid("sequence set", format!("{set:?}: {e:?}")))
}

/// The command's bytes, with a pause for the server's `+` before each
/// synchronizing literal.
fn outgoing(command: &Command<'_>) -> Vec<Outgoing> {
    let mut out = Vec::new();
    for fragment in CommandCodec::default().encode(command) {
        match fragment {
            Fragment::Line { data } => out.push(Outgoing::Bytes(data)),
            Fragment::Literal { data, mode } => {
                if mode == LiteralMode::Sync {
                    out.push(Outgoing::AwaitContinuation);
                }
                out.push(Outgoing::Bytes(data));
            }
        }
    }
    out
}

/// Whether a literal of `len` bytes may go without waiting for the server's `+`.
fn non_sync_literal(caps: &Capabilities, len: usize) -> bool {
    caps.has("LITERAL+") || (caps.has("LITERAL-") && len <= LITERAL_MINUS_MAX)
}

/// MULTIAPPEND (RFC 3502): `APPEND mailbox (flags) {n}msg (flags) {n}msg ...`.
/// imap-codec encodes APPEND of one message; the command for the first
/// message comes from it (so the mailbox name is quoted or sent as a literal
/// correctly), and each further message is added before the final CRLF.
fn multi_append(
    tag: imap_codec::imap_types::core::Tag<'_>,
    mailbox_name: &str,
    names: &[String],
    messages: &[Vec<u8>],
    caps: &Capabilities,
) -> Result<Vec<Outgoing>, ImapError> {
    let (first, rest) = messages
        .split_first()
        .ok_or_else(|| ImapError::invalid("MULTIAPPEND", "no message to append"))?;
    let mut literal =
        Literal::try_from(first.as_slice()).map_err(|e| ImapError::invalid("message", e))?;
    if non_sync_literal(caps, first.len()) {
        literal = literal.into_non_sync();
    }
    let body = CommandBody::Append {
        mailbox: mailbox(mailbox_name)?,
        flags: flags(names)?,
        date: None,
        message: LiteralOrLiteral8::Literal(literal),
    };
    let mut out = outgoing(&Command { tag, body });
    // The command ends with the CRLF after the first message's literal.
    match out.pop() {
        Some(Outgoing::Bytes(end)) if end == b"\r\n" => {}
        _ => {
            return Err(ImapError::invalid(
                "MULTIAPPEND",
                "unexpected APPEND encoding",
            ));
        }
    }
    // Flags were checked by `flags` above: atoms and system flags print as they are.
    let flag_list = if names.is_empty() {
        String::new()
    } else {
        format!(" ({})", names.join(" "))
    };
    for message in rest {
        // A message must be a valid literal (no NUL) just like the first.
        Literal::try_from(message.as_slice()).map_err(|e| ImapError::invalid("message", e))?;
        let non_sync = non_sync_literal(caps, message.len());
        let plus = if non_sync { "+" } else { "" };
        out.push(Outgoing::Bytes(
            format!("{flag_list} {{{}{plus}}}\r\n", message.len()).into_bytes(),
        ));
        if !non_sync {
            out.push(Outgoing::AwaitContinuation);
        }
        out.push(Outgoing::Bytes(message.clone()));
    }
    out.push(Outgoing::Bytes(b"\r\n".to_vec()));
    Ok(out)
}

fn flags(names: &[String]) -> Result<Vec<Flag<'_>>, ImapError> {
    names
        .iter()
        .map(|name| {
            Flag::try_from(name.as_str())
                .map_err(|e| ImapError::invalid("flag", format!("{name:?}: {e:?}")))
        })
        .collect()
}

fn utf8() -> Result<Charset<'static>, ImapError> {
    Charset::try_from("UTF-8").map_err(|e| ImapError::invalid("charset", e))
}

fn imap_date(time: SystemTime) -> Result<DateTime, ImapError> {
    let utc: chrono::DateTime<chrono::Utc> = time.into();
    DateTime::try_from(utc.fixed_offset())
        .map_err(|e| ImapError::invalid("internal date", format!("{e:?}")))
}

fn status_item(item: &StatusItem) -> StatusDataItemName {
    match item {
        StatusItem::Messages => StatusDataItemName::Messages,
        StatusItem::Recent => StatusDataItemName::Recent,
        StatusItem::UidNext => StatusDataItemName::UidNext,
        StatusItem::UidValidity => StatusDataItemName::UidValidity,
        StatusItem::Unseen => StatusDataItemName::Unseen,
    }
}

fn fetch_item(item: &FetchItem) -> Result<MessageDataItemName<'_>, ImapError> {
    Ok(match item {
        FetchItem::Uid => MessageDataItemName::Uid,
        FetchItem::Flags => MessageDataItemName::Flags,
        FetchItem::Envelope => MessageDataItemName::Envelope,
        FetchItem::BodyStructure => MessageDataItemName::BodyStructure,
        FetchItem::Size => MessageDataItemName::Rfc822Size,
        FetchItem::InternalDate => MessageDataItemName::InternalDate,
        FetchItem::Body { section, peek } => MessageDataItemName::BodyExt {
            section: body_section(section)?,
            partial: None,
            peek: *peek,
        },
    })
}

fn body_section(section: &BodySection) -> Result<Option<Section<'_>>, ImapError> {
    Ok(match section {
        BodySection::Full => None,
        BodySection::Header => Some(Section::Header(None)),
        BodySection::Text => Some(Section::Text(None)),
        BodySection::HeaderFields(names) => {
            let names = names
                .iter()
                .map(|n| astring("header field name", n))
                .collect::<Result<Vec<_>, _>>()?;
            let names = Vec1::try_from(names)
                .map_err(|_| ImapError::invalid("HEADER.FIELDS", "no field name"))?;
            Some(Section::HeaderFields(None, names))
        }
        BodySection::Part(path) => Some(Section::Part(part(path)?)),
        BodySection::Other(text) => {
            return Err(ImapError::invalid(
                "body section",
                format!("cannot request {text}"),
            ));
        }
    })
}

fn part(path: &[u32]) -> Result<Part, ImapError> {
    let numbers = path
        .iter()
        .map(|&n| NonZeroU32::new(n).ok_or_else(|| ImapError::invalid("part number", "0")))
        .collect::<Result<Vec<_>, _>>()?;
    Vec1::try_from(numbers)
        .map(Part)
        .map_err(|_| ImapError::invalid("part", "empty part path"))
}

fn search_criteria(key: &SearchKey) -> Result<Vec1<CodecSearchKey<'_>>, ImapError> {
    // A top-level AND is written as the plain list IMAP ANDs implicitly.
    match key {
        SearchKey::And(keys) => {
            Vec1::try_from(keys.iter().map(search_key).collect::<Result<Vec<_>, _>>()?)
                .map_err(|_| ImapError::invalid("search", "empty criteria"))
        }
        other => Ok(Vec1::from(search_key(other)?)),
    }
}

fn search_key(key: &SearchKey) -> Result<CodecSearchKey<'_>, ImapError> {
    Ok(match key {
        SearchKey::All => CodecSearchKey::All,
        SearchKey::Unseen => CodecSearchKey::Unseen,
        SearchKey::Seen => CodecSearchKey::Seen,
        SearchKey::Flagged => CodecSearchKey::Flagged,
        SearchKey::Deleted => CodecSearchKey::Deleted,
        SearchKey::Undeleted => CodecSearchKey::Undeleted,
        SearchKey::Header(name, value) => CodecSearchKey::Header(
            astring("header name", name)?,
            astring("header value", value)?,
        ),
        SearchKey::Subject(text) => CodecSearchKey::Subject(astring("search text", text)?),
        SearchKey::From(text) => CodecSearchKey::From(astring("search text", text)?),
        SearchKey::Text(text) => CodecSearchKey::Text(astring("search text", text)?),
        SearchKey::Uid(set) => CodecSearchKey::Uid(sequence_set(set)?),
        SearchKey::Sequence(set) => CodecSearchKey::SequenceSet(sequence_set(set)?),
        SearchKey::Not(inner) => CodecSearchKey::Not(Box::new(search_key(inner)?)),
        SearchKey::And(keys) => CodecSearchKey::And(
            Vec1::try_from(keys.iter().map(search_key).collect::<Result<Vec<_>, _>>()?)
                .map_err(|_| ImapError::invalid("search", "empty AND"))?,
        ),
    })
}

fn sort_criterion(criterion: &SortCriterion) -> CodecSortCriterion {
    CodecSortCriterion {
        reverse: criterion.reverse,
        key: match criterion.key {
            SortKey::Arrival => CodecSortKey::Arrival,
            SortKey::Date => CodecSortKey::Date,
            SortKey::From => CodecSortKey::From,
            SortKey::Size => CodecSortKey::Size,
            SortKey::Subject => CodecSortKey::Subject,
            SortKey::To => CodecSortKey::To,
        },
    }
}
