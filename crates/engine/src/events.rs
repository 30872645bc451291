//! What simulated users report while they run. Users never touch the
//! recorder directly: they send events over a channel, so recording costs a
//! user one channel send and never a lock.

use std::time::Duration;

use peakhour_workload::ActionKind;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::files::FileEvent;

/// The error kind of a scheduled action that was never started: its user
/// could not go on (its task panicked, or it was stuck when the run had to
/// end), or it fell so far behind that the action could not start within
/// the action timeout of its intended time.
pub const NOT_ATTEMPTED: &str = "not-attempted";

/// The error kind of a task that panicked: a bug in peakhour.
pub const PANIC: &str = peakhour_analysis::PANIC_ERROR_KIND;

/// How an action ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It did what it should.
    Ok,
    /// It failed; the kind is a short stable name (`timeout`, `imap:rejected`, `smtp:reply:550` ...).
    Error(String),
    /// There was nothing to act on (e.g. read with an empty Inbox); not timed.
    Skipped(&'static str),
}

/// Counters the summary reports in seed 002's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// A message accepted for submission.
    MessagesSubmitted,
    /// Recipients of accepted submissions.
    RecipientsSubmitted,
    /// Recipients refused at submission (reported failures).
    RecipientsRefused,
    /// A message body opened.
    MessageOpens,
    /// A folder opened: a SELECT, or Check Inbox on the Inbox the session
    /// has open already (it asks for the newest page without a SELECT).
    FolderOpens,
    /// A dropped connection that was re-established.
    Reconnects,
    /// A calendar event created over CalDAV (a PUT that stored a new one).
    EventsCreated,
    /// A calendar event changed over CalDAV (a PUT with `If-Match` that stored).
    EventsChanged,
    /// An invitation stored over CalDAV scheduling (a PUT of an event with
    /// attendees, which the server delivers to their schedule inboxes).
    InvitationsSent,
    /// An invitation an attendee accepted (its answer PUT stored).
    InvitationsAnswered,
    /// A message downloaded over POP3 (RETR).
    MessagesDownloaded,
    /// A copy another shard submitted, seen here: counted among the
    /// recipients delivered, its latency added by `peakhour merge`.
    RecipientsDeliveredFromOtherShard,
    /// Milliseconds the reconciliation after the drain took, counted once
    /// at its end (in the run's last interval, so in `record.json`, not in
    /// the steady phase's summary).
    ReconcileMs,
}

impl Counter {
    /// The name used in results.
    pub fn name(self) -> &'static str {
        match self {
            Counter::MessagesSubmitted => "messages_submitted",
            Counter::RecipientsSubmitted => "recipients_submitted",
            Counter::RecipientsRefused => "recipients_refused",
            Counter::MessageOpens => "message_opens",
            Counter::FolderOpens => "folder_opens",
            Counter::Reconnects => "reconnects",
            Counter::EventsCreated => "events_created",
            Counter::EventsChanged => "events_changed",
            Counter::InvitationsSent => "invitations_sent",
            Counter::InvitationsAnswered => "invitations_answered",
            Counter::MessagesDownloaded => "messages_downloaded",
            Counter::RecipientsDeliveredFromOtherShard => "recipients_delivered",
            Counter::ReconcileMs => "reconcile_ms",
        }
    }
}

/// One thing that happened.
#[derive(Debug, Clone)]
pub enum Event {
    /// A user action, timed from its intended start.
    Action {
        /// Which action.
        kind: ActionKind,
        /// When the schedule said it should start.
        intended: Instant,
        /// When it actually started.
        started: Instant,
        /// When it finished.
        finished: Instant,
        /// How it ended.
        outcome: Outcome,
    },
    /// One protocol command, e.g. `imap.SELECT`, timed by its driver.
    Command {
        /// `protocol.COMMAND`.
        name: &'static str,
        /// Write-to-final-reply time.
        elapsed: Duration,
    },
    /// A counter went up.
    Count {
        /// Which.
        counter: Counter,
        /// By how much.
        by: u64,
    },
    /// The number of users logged on changed by this much.
    LoggedOn(i32),
    /// A user's first logon of a measured morning (`--window morning`),
    /// timed from its logon slot: recorded as the action `logon`.
    Logon {
        /// The user's logon slot.
        intended: Instant,
        /// When the session was ready, or the user gave up.
        finished: Instant,
        /// Whether it logged on.
        ok: bool,
    },
    /// A logon (connect, login, folder check, select) failed; the user retries with backoff.
    LogonFailed(String),
    /// A logon succeeded: recorded as an attempt of `logon` beside the
    /// failed ones, so that its error ratio counts both (issue 26).
    LogonSucceeded {
        /// When the attempt began.
        started: Instant,
        /// When the session was ready.
        finished: Instant,
    },
    /// A user of a fixed-count (closed-loop) profile did all its actions.
    Finished,
    /// A session failed outside any action (while idling or fetching new mail).
    SessionError(String),
    /// A recipient saw a tracked message this long after it was submitted.
    Delivered(Duration),
    /// A task of the run panicked (a bug in peakhour): `user` for a
    /// simulated user, `reconcile` for a reconciliation search. Counted as
    /// an error of kind [`PANIC`]; the verdict fails.
    Panicked {
        /// Which kind of task.
        role: &'static str,
    },
    /// A reconciliation search of one mailbox failed (error or timeout);
    /// its copies stay unconfirmed.
    SearchFailed(String),
    /// What an error of `kind` in `action` looked like, sent by a user the
    /// first time it meets that kind there (the recorder keeps the first of
    /// the run): the command, the login sent and the server's own text.
    ErrorExample {
        /// The action, or `logon` / `session`.
        action: String,
        /// The error kind, as counted.
        kind: String,
        /// The example, for people.
        example: String,
    },
    /// What a file client reported (boxed: a file operation carries more
    /// than a mail action, and every mail event would pay for its size).
    File(Box<FileEvent>),
}

/// The sending side users hold.
#[derive(Debug, Clone)]
pub struct EventSink(mpsc::UnboundedSender<Event>);

impl EventSink {
    /// A sink and the receiver the recorder drains.
    pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (EventSink(tx), rx)
    }

    /// Sends an event; if the recorder is gone the run is over and it is dropped.
    pub fn send(&self, event: Event) {
        let _ = self.0.send(event);
    }

    /// Sends what a file client reports.
    pub(crate) fn file(&self, event: FileEvent) {
        self.send(Event::File(Box::new(event)));
    }

    /// Records one protocol command.
    pub fn command(&self, name: &'static str, elapsed: Duration) {
        self.send(Event::Command { name, elapsed });
    }

    /// Counts.
    pub fn count(&self, counter: Counter, by: u64) {
        self.send(Event::Count { counter, by });
    }

    /// A recipient noticed a copy: a delivery with its latency, or one
    /// from another shard (counted; the merge adds its latency).
    pub fn noticed(&self, noticed: crate::delivery::Noticed) {
        match noticed {
            crate::delivery::Noticed::Delivered(latency) => self.send(Event::Delivered(latency)),
            crate::delivery::Noticed::FromOtherShard => {
                self.count(Counter::RecipientsDeliveredFromOtherShard, 1);
            }
            crate::delivery::Noticed::Nothing => {}
        }
    }
}
