use std::borrow::Cow;
use std::time::Duration;

use peakhour_net::{ErrorKind, TransportError};

/// How many bytes of offending server data an error keeps: enough to recognise
/// the reply in a log, small enough that thousands of errors stay cheap.
const EXCERPT_LEN: usize = 80;

/// The server's refusal of a command: `NO` (could not do it) or `BAD` (did not
/// understand it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `NO`: the command was understood and failed (wrong password, no such mailbox).
    No,
    /// `BAD`: the server considers the command a protocol error.
    Bad,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::No => "NO",
            Refusal::Bad => "BAD",
        })
    }
}

/// Everything that can go wrong talking IMAP.
///
/// Only [`ImapError::Rejected`], [`ImapError::NotOffered`] and
/// [`ImapError::InvalidArgument`] leave the connection usable; after any other
/// error the connection should be dropped.
#[derive(Debug, thiserror::Error)]
pub enum ImapError {
    /// The socket or TLS layer failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The server sent bytes that are not IMAP, or that break a limit.
    #[error("malformed server data ({reason}): {excerpt}")]
    Malformed {
        /// What was wrong.
        reason: &'static str,
        /// The start of the offending data, escaped for printing.
        excerpt: String,
    },
    /// The server answered the command with `NO` or `BAD`.
    #[error("{command} refused: {refusal} {text}")]
    Rejected {
        /// The command's name (`LOGIN`, `SELECT`, ...).
        command: &'static str,
        /// `NO` or `BAD`.
        refusal: Refusal,
        /// The server's human-readable text.
        text: String,
    },
    /// The server closed the connection, with `BYE` or at EOF.
    #[error("connection closed by the server{}", bye_suffix(.bye))]
    Closed {
        /// The text of the `BYE`, when the server said goodbye.
        bye: Option<String>,
    },
    /// The command needs a capability the server does not advertise.
    #[error("the server does not offer {0}")]
    NotOffered(&'static str),
    /// A caller-supplied value cannot be sent (bad sequence set, NUL in a name ...).
    #[error("invalid {what}: {reason}")]
    InvalidArgument {
        /// Which argument.
        what: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// A command was started while another one is still in progress.
    #[error("cannot start {command}: another command is still in progress")]
    Busy {
        /// The command that could not start.
        command: &'static str,
    },
    /// The command's answer did not arrive within the time set with
    /// [`ImapConnection::set_command_timeout`](crate::ImapConnection::set_command_timeout).
    #[error("{during} timed out after {after:?}")]
    Timeout {
        /// The command waited on.
        during: &'static str,
        /// The time allowed.
        after: Duration,
    },
}

fn bye_suffix(bye: &Option<String>) -> String {
    bye.as_ref()
        .map(|text| format!(": BYE {text}"))
        .unwrap_or_default()
}

impl ImapError {
    /// A short stable name for counting errors by kind (the engine keeps
    /// counts, never lists of errors).
    pub fn kind(&self) -> &'static str {
        match self {
            ImapError::Transport(_) => "transport",
            ImapError::Malformed { .. } => "malformed",
            ImapError::Rejected {
                refusal: Refusal::No,
                ..
            } => "no",
            ImapError::Rejected {
                refusal: Refusal::Bad,
                ..
            } => "bad",
            ImapError::Closed { .. } => "closed",
            ImapError::NotOffered(_) => "not_offered",
            ImapError::InvalidArgument { .. } => "invalid_argument",
            ImapError::Busy { .. } => "busy",
            ImapError::Timeout { .. } => "timeout",
        }
    }

    /// True if the connection can take the next command: the server refused
    /// this one (`NO`, `BAD`), or it was refused before anything was sent.
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            ImapError::Rejected { .. }
                | ImapError::NotOffered(_)
                | ImapError::InvalidArgument { .. }
        )
    }

    pub(crate) fn malformed(reason: &'static str, data: &[u8]) -> Self {
        ImapError::Malformed {
            reason,
            excerpt: excerpt(data),
        }
    }

    pub(crate) fn invalid(what: &'static str, reason: impl ToString) -> Self {
        ImapError::InvalidArgument {
            what,
            reason: reason.to_string(),
        }
    }
}

impl ErrorKind for ImapError {
    fn kind(&self) -> Cow<'static, str> {
        ImapError::kind(self).into()
    }

    fn is_recoverable(&self) -> bool {
        ImapError::is_recoverable(self)
    }
}

/// The first bytes of `data`, escaped so control bytes and NULs print safely.
pub(crate) fn excerpt(data: &[u8]) -> String {
    let shown = &data[..data.len().min(EXCERPT_LEN)];
    let mut text = shown.escape_ascii().to_string();
    if data.len() > EXCERPT_LEN {
        text.push_str("...");
    }
    text
}
