//! Failure classification, once for every protocol: an action's error is
//! counted under a short stable kind (`imap:no`, `smtp:reply:550`,
//! `jmap:forbidden`, `caldav:...`, `pop3:...`), says whether the session
//! survived it, and keeps the server's own words for the error's example.

use peakhour_imap::ImapError;
use peakhour_jmap::JmapError;
use peakhour_smtp::SmtpError;

use crate::sessions::caldav::CalendarFailure;
use crate::sessions::pop3::Pop3Failure;

/// Why an action failed, and whether the session survived it.
pub(crate) struct Failure {
    pub(crate) kind: String,
    pub(crate) session_lost: bool,
    /// The error as the user would read it (the command and the server's
    /// own text), when there is more to say than the kind.
    pub(crate) detail: Option<String>,
}

impl Failure {
    /// A failure with nothing to say beyond its kind.
    pub(crate) fn bare(kind: impl Into<String>, session_lost: bool) -> Self {
        Failure {
            kind: kind.into(),
            session_lost,
            detail: None,
        }
    }
}

impl Failure {
    /// Names what the failed command was about (`folder "Sent"`,
    /// `recipient "a@b"`) unless the error's own text already does: a
    /// server's `NO` to SELECT or APPEND rarely says which folder it refused.
    pub(crate) fn about(mut self, what: &str, name: &str) -> Self {
        if let Some(detail) = &mut self.detail
            && !detail.contains(name)
        {
            detail.push_str(&format!(" ({what} {name:?})"));
        }
        self
    }
}

/// For `map_err`: an IMAP command on `folder` failed, the folder named.
pub(crate) fn on_folder(folder: &str) -> impl FnOnce(ImapError) -> Failure + '_ {
    move |error| Failure::from(error).about("folder", folder)
}

impl From<ImapError> for Failure {
    fn from(error: ImapError) -> Self {
        let session_lost = !matches!(error, ImapError::Rejected { .. } | ImapError::NotOffered(_));
        Failure {
            kind: format!("imap:{}", error.kind()),
            session_lost,
            detail: Some(error.to_string()),
        }
    }
}

impl From<SmtpError> for Failure {
    fn from(error: SmtpError) -> Self {
        // SMTP sessions are per send; the IMAP session is unaffected.
        Failure {
            kind: format!("smtp:{}", error.kind()),
            session_lost: false,
            detail: Some(error.to_string()),
        }
    }
}

impl From<JmapError> for Failure {
    fn from(error: JmapError) -> Self {
        Failure {
            kind: format!("jmap:{}", error.kind()),
            session_lost: !error.is_recoverable(),
            // The request and the server's own words, for the error's example.
            detail: Some(error.to_string()),
        }
    }
}

impl From<CalendarFailure> for Failure {
    fn from(failure: CalendarFailure) -> Self {
        // The HTTP connection reconnects by itself: the IMAP session, if
        // any, is not affected.
        Failure {
            kind: failure.kind,
            session_lost: false,
            detail: failure.detail,
        }
    }
}

impl From<Pop3Failure> for Failure {
    fn from(failure: Pop3Failure) -> Self {
        // Each POP3 check has its own connection.
        Failure {
            kind: failure.kind,
            session_lost: false,
            detail: failure.detail,
        }
    }
}

/// An action that needs the mail session, without one.
pub(crate) fn no_session() -> Failure {
    Failure::bare("no-session", true)
}
