//! The one error type of this crate.

use std::borrow::Cow;
use std::time::Duration;

use peakhour_net::{ErrorKind, TransportError};

use crate::reply::{EnhancedStatus, MalformedReply, Reply, ReplyCode};

/// Everything that can go wrong talking SMTP or LMTP.
///
/// A recipient refused at RCPT, or a message refused after the final dot, is
/// not an error: it is part of the [`TransactionOutcome`](crate::TransactionOutcome).
/// [`SmtpError::kind`] gives a stable label for counting errors by kind.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SmtpError {
    /// Connecting, the TLS handshake, reading or writing failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The server sent bytes that are not a valid reply.
    #[error(transparent)]
    Malformed(#[from] MalformedReply),
    /// The server answered a command with a reply that means it failed (for
    /// example `550` to MAIL FROM, `535` to AUTH, `554` as a greeting).
    #[error("{command} refused: {code} {text}")]
    UnexpectedReply {
        /// The command answered (`MAIL`, `AUTH`, `greeting` ...).
        command: &'static str,
        /// The reply code.
        code: ReplyCode,
        /// The enhanced status code, if the reply had one.
        enhanced: Option<EnhancedStatus>,
        /// The reply text, cut to [`MAX_ERROR_TEXT`] bytes.
        text: String,
    },
    /// The server closed the connection while a reply was awaited.
    #[error("connection closed by the server during {during} (partial reply: \"{}\")", partial.escape_ascii())]
    ConnectionClosed {
        /// What the client was waiting for.
        during: &'static str,
        /// The start of an unfinished reply, empty if none had begun.
        partial: Vec<u8>,
    },
    /// No complete reply arrived in time.
    #[error("{during} timed out after {after:?}")]
    Timeout {
        /// The command waited on.
        during: &'static str,
        /// The time allowed.
        after: Duration,
    },
    /// The server broke the protocol in a way that is not a malformed reply:
    /// bytes after the STARTTLS go-ahead (a command-injection attempt), an
    /// AUTH challenge that is not base64, a challenge where none belongs.
    #[error("protocol violation: {0}")]
    Protocol(&'static str),
    /// The caller asked for something the server did not announce (STARTTLS,
    /// an AUTH mechanism).
    #[error("the server does not offer {0}")]
    NotOffered(&'static str),
    /// An argument cannot be put on a command line (CR, LF or NUL in it, angle
    /// brackets in an address, no recipients).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The call does not fit the connection's state: another command is in
    /// progress, or an earlier error left the connection unusable.
    #[error("invalid state: {0}")]
    InvalidState(&'static str),
}

/// The most reply text kept in an [`SmtpError::UnexpectedReply`].
pub const MAX_ERROR_TEXT: usize = 256;

impl SmtpError {
    /// A short stable label for the kind of error, for counters and reports:
    /// `transport`, `malformed:<reason>`, `reply:<code>`, `closed`, `timeout`,
    /// `protocol`, `not-offered`, `invalid-argument`, `invalid-state`.
    pub fn kind(&self) -> String {
        match self {
            SmtpError::Transport(_) => "transport".into(),
            SmtpError::Malformed(m) => format!("malformed:{}", m.reason),
            SmtpError::UnexpectedReply { code, .. } => format!("reply:{code}"),
            SmtpError::ConnectionClosed { .. } => "closed".into(),
            SmtpError::Timeout { .. } => "timeout".into(),
            SmtpError::Protocol(_) => "protocol".into(),
            SmtpError::NotOffered(_) => "not-offered".into(),
            SmtpError::InvalidArgument(_) => "invalid-argument".into(),
            SmtpError::InvalidState(_) => "invalid-state".into(),
        }
    }

    /// True if the connection can still be used after this error: the server
    /// refused a command but the conversation is still in step.
    pub fn is_recoverable(&self) -> bool {
        match self {
            SmtpError::UnexpectedReply { code, .. } => *code != ReplyCode::SERVICE_NOT_AVAILABLE,
            SmtpError::NotOffered(_) | SmtpError::InvalidArgument(_) => true,
            _ => false,
        }
    }

    pub(crate) fn unexpected(command: &'static str, reply: &Reply) -> Self {
        let mut text = reply.text();
        if text.len() > MAX_ERROR_TEXT {
            let mut cut = MAX_ERROR_TEXT;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        SmtpError::UnexpectedReply {
            command,
            code: reply.code(),
            enhanced: reply.enhanced(),
            text,
        }
    }
}

impl ErrorKind for SmtpError {
    fn kind(&self) -> Cow<'static, str> {
        SmtpError::kind(self).into()
    }

    fn is_recoverable(&self) -> bool {
        SmtpError::is_recoverable(self)
    }
}
