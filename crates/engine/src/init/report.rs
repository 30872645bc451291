//! What an init did ([`InitReport`], with the clone's part in
//! [`CloneSummary`]) and why it failed ([`InitError`]). The words a person
//! reads about them are `peakhour-app`'s.

use std::time::Duration;

use peakhour_imap::ImapError;
use peakhour_smtp::SmtpError;

use crate::population::PopulationError;

/// What an init did.
#[derive(Debug, Clone, Default)]
pub struct InitReport {
    /// Users whose mailboxes were checked.
    pub users: u32,
    /// Messages the profile asks for, over all users.
    pub wanted: u64,
    /// Messages that were already there.
    pub already_there: u64,
    /// Messages added now.
    pub added: u64,
    /// Bytes added.
    pub bytes: u64,
    /// Wall time (of the mailboxes; the calendars keep their own).
    pub elapsed: Duration,
    /// The calendars made over CalDAV, when the profile keeps a calendar
    /// and the target has a CalDAV server.
    pub calendars: Option<crate::CalendarInitReport>,
    /// What the clone on disk did, for [`Via::Clone`](super::Via::Clone).
    pub cloned: Option<CloneSummary>,
}

impl InitReport {
    /// Messages added per second.
    pub fn messages_per_second(&self) -> f64 {
        self.added as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Why an init failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// An IMAP step failed for a user. The error carries the command and
    /// the server's text; `login` is the login actually sent, and `folder`
    /// the folder the command was about (as the server names it).
    #[error("{login}: {error}{}", folder_suffix(.folder))]
    Imap {
        /// The login sent (from the users file, or the address).
        login: String,
        /// The folder the failing command named, if any.
        folder: Option<String>,
        /// The error (not a `source`: its text is already in this one's,
        /// and a chain would print it twice).
        error: ImapError,
    },
    /// An LMTP step failed for a user.
    #[error("{user}: LMTP: {error}")]
    Lmtp {
        /// The user's address (LMTP delivers to addresses).
        user: String,
        /// The error.
        error: SmtpError,
    },
    /// LMTP refused a message.
    #[error("{user}: LMTP refused the message for {folder}: {reply}")]
    Refused {
        /// The user.
        user: String,
        /// The folder.
        folder: String,
        /// The server's reply.
        reply: String,
    },
    /// A user's task panicked (a bug in peakhour).
    #[error("{user}: the task initializing this mailbox panicked (a bug in peakhour)")]
    Panicked {
        /// The user.
        user: String,
    },
    /// The population is unusable (see [`Population::new`](crate::Population::new)).
    #[error(transparent)]
    Population(#[from] PopulationError),
    /// LMTP was asked for but the target has no LMTP endpoint.
    #[error(
        "LMTP delivery needs an LMTP endpoint (the lab has one); use IMAP APPEND for other servers"
    )]
    NoLmtp,
    /// The calendars could not be made (see [`crate::init_calendars`]).
    #[error(transparent)]
    Calendar(#[from] crate::CalendarInitError),
    /// The clone on disk failed (see [`Via::Clone`](super::Via::Clone)): the lab's error,
    /// boxed, since the engine does not know the lab.
    #[error("cloning the first mailbox on disk: {0}")]
    Clone(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A step failed and what the server said held a password of the run
    /// (a refusal quoting the command): the error's text with the
    /// passwords taken out by the run's redaction (issue 26).
    #[error("{0}")]
    Redacted(String),
}

impl InitError {
    /// This error, or its text redacted when the text holds a password.
    pub(super) fn redacted(self, redactor: &peakhour_analysis::Redactor) -> Self {
        let text = self.to_string();
        let clean = redactor.redact(&text);
        if clean == text {
            self
        } else {
            Self::Redacted(clean)
        }
    }
}

fn folder_suffix(folder: &Option<String>) -> String {
    folder
        .as_ref()
        .map(|f| format!(" (folder {f:?})"))
        .unwrap_or_default()
}

/// What the clone on disk did (the IMAP part is in [`InitReport`]).
#[derive(Debug, Clone, Default)]
pub struct CloneSummary {
    /// The user whose home was copied.
    pub source: String,
    /// Users filled by the copy now.
    pub cloned: u32,
    /// Users that held this clone already.
    pub already_cloned: u32,
    /// Users holding other mail (the source of an earlier clone, users
    /// filled over IMAP or by a run), checked and completed over IMAP.
    pub completed_over_imap: u32,
    /// Temporary trees of an interrupted clone, removed and redone.
    pub redone: u32,
    /// Files and bytes copied (messages and Dovecot's indexes).
    pub files: u64,
    /// See `files`.
    pub bytes: u64,
    /// Seconds the copy took.
    pub seconds: f64,
}

impl CloneSummary {
    /// Users copied per second.
    pub fn users_per_second(&self) -> f64 {
        f64::from(self.cloned) / self.seconds.max(1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_26_item_3_an_init_error_quoting_a_password_is_redacted() {
        let redactor = peakhour_analysis::Redactor::new(["hunter2"]);
        let quoting = InitError::Refused {
            user: "u@bench.test".into(),
            folder: "INBOX".into(),
            reply: "550 not for u@bench.test hunter2".into(),
        };
        assert_eq!(
            quoting.redacted(&redactor).to_string(),
            "u@bench.test: LMTP refused the message for INBOX: 550 not for u@bench.test <redacted>"
        );
        let plain = InitError::NoLmtp.redacted(&redactor);
        assert!(matches!(plain, InitError::NoLmtp));
    }
}
