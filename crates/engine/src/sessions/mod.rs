//! One session shape per protocol: what a simulated user does over IMAP,
//! SMTP, JMAP, POP3 and CalDAV, and what a file client does over a
//! directory or SMB, each in a module of its own here, each a
//! [`UserSession`]. The run core (`crate::core`) knows no protocol; a
//! session knows no phase: the user's day (`user`) keeps to its schedule and
//! asks the routing table ([`route`]) which session performs each action.
//!
//! | module | session | actions |
//! |---|---|---|
//! | `imap` | `ImapSession` (kept all day, IDLE between actions) | check_inbox, read, move, delete, update_calendar without CalDAV, the copy of a sent message |
//! | `smtp` | `Submission` (one connection per send) | send |
//! | `jmap` | `JmapSession` (`run --protocol jmap`, push or polling) | every mail action, send included |
//! | `pop3` | `Pop3Mailbox` (one connection per check) | download_mail |
//! | `caldav` | `CalendarUser` (one HTTP connection) | poll_calendar, create_event, change_event, update_calendar with CalDAV |
//! | `files` | `Client` (one SMB or directory connection) | the disk mix's operations; a replay's lines |
//!
//! What every protocol shares is here once: [`Failure`] and its
//! classification (`failure`), message picking ([`Actor::pick_message`]),
//! the move target ([`Actor::move_folder`]), error examples, command timing
//! ([`Actor::command`]).
//!
//! The state checks (`run --check-state`, `crate::state_checks`) ride on
//! the sessions: the IMAP session records its wire, the JMAP session its
//! requests and responses, and each hands them to its model after every
//! action and on every turn of a wait; the calendar client hands each PUT,
//! REPORT and inbox DELETE to its own (the lines marked `// state checks`
//! here, in `user`, `jmap` and `caldav`). A **client personality** (issue
//! 28, `run --client`, a profile's `[clients]`) is asked at the IMAP
//! session's seam: the session of a user who imitates a recorded client
//! (`imap::client`) lets the client's model (`peakhour_imap::clients`)
//! choose each action's commands and connections in [`UserSession::act`],
//! and the user's day lets it wait between actions as that client does
//! (`user`'s `wait_until`).

pub(crate) mod caldav;
mod failure;
pub(crate) mod files;
pub(crate) mod groupware;
pub(crate) mod imap;
pub(crate) mod jmap;
pub(crate) mod pop3;
pub(crate) mod raced;
pub(crate) mod smtp;
mod user;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use peakhour_net::Timed;
use peakhour_workload::{ActionKind, ActionParams, MessageGenerator, Plan};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connector::Connector;
use crate::core::{Halt, ScheduleProgress};
use crate::delivery::DeliveryTracker;
use crate::events::{Event, EventSink};
use crate::population::Population;
use crate::run::MailProtocol;
use crate::target::Target;

pub(crate) use failure::{Failure, no_session, on_folder};
pub(crate) use smtp::{header, rfc5322};
pub(crate) use user::User;

/// An action that starts this much after its intended time counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(10);

/// One protocol's session: the one shape IMAP, SMTP, JMAP, POP3, CalDAV and
/// file clients share. `Who` is the user (or client) it acts for.
pub(crate) trait UserSession<Who: Sync> {
    /// What it is asked to do: a mail user's scheduled [`Action`], a file
    /// client's operation.
    type Action: Sync;
    /// How an action ends (a mail action's outcome or failure; a file
    /// operation's answer, or why the client must stop).
    type Done;
    /// Performs `action` for `who`, every command timed and recorded.
    fn act(&mut self, who: &Who, action: &Self::Action) -> impl Future<Output = Self::Done> + Send;
}

/// One scheduled action of a mail user: `seq` picks what it acts on, `nth`
/// numbers it among the user's actions of its kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Action {
    pub(crate) kind: ActionKind,
    pub(crate) seq: u64,
    pub(crate) nth: u64,
}

/// The protocol that performs an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Imap,
    Smtp,
    Jmap,
    Pop3,
    CalDav,
}

impl Protocol {
    /// The name the record gives it (`meta.protocols`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Protocol::Imap => "imap",
            Protocol::Smtp => "smtp",
            Protocol::Jmap => "jmap",
            Protocol::Pop3 => "pop3",
            Protocol::CalDav => "caldav",
        }
    }
}

/// The routing table: which protocol performs `kind` for a user whose mail
/// session is JMAP (`over_jmap`) or IMAP, with or without a calendar over
/// CalDAV (`caldav`). `update_calendar` is CalDAV with a CalDAV server and
/// an item in the mail session's calendar folder otherwise; over JMAP every
/// mail action, sending included, is JMAP's.
pub(crate) fn route(kind: ActionKind, over_jmap: bool, caldav: bool) -> Protocol {
    let mail = if over_jmap {
        Protocol::Jmap
    } else {
        Protocol::Imap
    };
    match kind {
        ActionKind::CheckInbox | ActionKind::Read | ActionKind::Move | ActionKind::Delete => mail,
        ActionKind::Send if over_jmap => Protocol::Jmap,
        ActionKind::Send => Protocol::Smtp,
        ActionKind::UpdateCalendar if !caldav => mail,
        ActionKind::UpdateCalendar
        | ActionKind::PollCalendar
        | ActionKind::CreateEvent
        | ActionKind::ChangeEvent => Protocol::CalDav,
        ActionKind::DownloadMail => Protocol::Pop3,
    }
}

/// True if a user of `plan` needs an IMAP session: it reads,
/// files or checks mail over IMAP, keeps a copy of what it sends, receives
/// mail it notices only over IMAP (a profile that sends but does not
/// download over POP3: recipients notice arrivals by IDLE), or keeps its
/// calendar in an IMAP folder for want of a CalDAV server (`has_caldav`).
pub(crate) fn needs_imap(plan: &Plan, has_caldav: bool) -> bool {
    let downloads = plan.actions().contains(&ActionKind::DownloadMail);
    plan.actions().iter().any(|kind| match kind {
        ActionKind::CheckInbox | ActionKind::Read | ActionKind::Move | ActionKind::Delete => true,
        ActionKind::Send => plan.params().save_copy || !downloads,
        ActionKind::UpdateCalendar => !has_caldav,
        ActionKind::PollCalendar
        | ActionKind::CreateEvent
        | ActionKind::ChangeEvent
        | ActionKind::DownloadMail => false,
    })
}

/// The protocol each action of `plan` speaks on `target`, by action name:
/// what the summary and the report say was used (`update_calendar` is
/// `caldav` with a CalDAV server and `imap` without one). In a run over
/// JMAP every action a mail session does (including sending) is `jmap`.
/// The same table ([`route`]) as the users' own.
pub(crate) fn action_protocols(
    plan: &Plan,
    target: &Target,
    mail: MailProtocol,
) -> BTreeMap<String, String> {
    let over_jmap = mail == MailProtocol::Jmap && needs_imap(plan, target.caldav.is_some());
    plan.actions()
        .into_iter()
        .map(|kind| {
            let protocol = match route(kind, over_jmap, target.caldav.is_some()) {
                Protocol::Smtp if plan.params().save_copy => "smtp+imap",
                protocol => protocol.as_str(),
            };
            (kind.name().to_owned(), protocol.to_owned())
        })
        .collect()
}

/// What every user of a run shares.
#[derive(Debug)]
pub(crate) struct Shared<C> {
    pub(crate) connector: Arc<C>,
    pub(crate) plan: Arc<Plan>,
    pub(crate) target: Arc<Target>,
    /// The only addresses mail may go to.
    pub(crate) population: Arc<Population>,
    pub(crate) events: EventSink,
    pub(crate) delivery: Arc<DeliveryTracker>,
    pub(crate) generator: MessageGenerator,
    pub(crate) run_id: String,
    pub(crate) action_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) client_name: String,
    /// Raised, with the error, when a recipient outside the population
    /// reaches the SMTP stage.
    pub(crate) halt: Arc<Halt>,
    /// Where each user is in its schedule.
    pub(crate) progress: Arc<ScheduleProgress>,
    /// IMAP or JMAP for the users' mail sessions.
    pub(crate) protocol: MailProtocol,
    /// state checks: the run's coordinator, when `--check-state` is on.
    pub(crate) state_checks: Option<Arc<crate::state_checks::StateCheckHub>>,
    /// The messages the sessions of shared accounts moved: their races (`raced`).
    pub(crate) moves: Arc<raced::AccountMoves>,
}

/// The user's phase timeline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeline {
    pub(crate) logon_at: Instant,
    pub(crate) steady_start: Instant,
    pub(crate) steady_end: Instant,
    /// Until when the user stays on to notice deliveries it is still waiting for.
    pub(crate) drain_end: Instant,
}

/// The user a session acts for: who it is, and what every user of the run
/// shares. Every session reaches the run through it (see the module
/// documentation for the seams it leaves).
pub(crate) struct Actor<'a, C> {
    pub(crate) shared: &'a Shared<C>,
    pub(crate) index: u32,
    pub(crate) address: &'a str,
    /// The (action, error kind) pairs this user has sent an example of.
    pub(crate) examples_sent: &'a Mutex<Vec<(String, String)>>,
}

impl<C: Connector> Actor<'_, C> {
    pub(crate) fn command<T>(&self, name: &'static str, timed: Timed<T>) -> T {
        self.shared.events.command(name, timed.elapsed);
        timed.value
    }

    /// Sends what `failure` looked like, the first time this user meets
    /// its kind in `action`: the login sent, then the error's own text
    /// (the command and the server's words, once).
    pub(crate) fn example(&self, action: &str, failure: &Failure) {
        let Some(detail) = &failure.detail else {
            return;
        };
        let key = (action.to_owned(), failure.kind.clone());
        {
            let mut sent = self
                .examples_sent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if sent.contains(&key) || sent.len() >= 16 {
                return;
            }
            sent.push(key);
        }
        let (login, _) = self.shared.target.login(self.index, self.address);
        self.shared.events.send(Event::ErrorExample {
            action: action.to_owned(),
            kind: failure.kind.clone(),
            example: format!("as {login}: {detail}"),
        });
    }

    /// Whether this user's session shares its account with other users'.
    pub(crate) fn account_shared(&self) -> bool {
        let plan = &self.shared.plan;
        plan.sessions_on(plan.account_of(self.index)) > 1
    }

    /// This user's session is about to move `message` away (`raced`); kept
    /// only when its account is shared.
    pub(crate) fn moving(&self, message: String) {
        if self.account_shared() {
            let account = self.shared.plan.account_of(self.index);
            self.shared.moves.moving(account, self.index, message);
        }
    }

    /// Whether `message` being gone is the workload's race (`raced`): the
    /// account is shared and another of its sessions moved it.
    pub(crate) fn raced(&self, message: &str) -> bool {
        let account = self.shared.plan.account_of(self.index);
        self.account_shared()
            && self
                .shared
                .moves
                .moved_by_other(account, self.index, message)
    }

    /// Picks a message of an Inbox whose messages are `seen` or not: unread
    /// ones first when the profile says so; the same choice over IMAP and JMAP.
    pub(crate) fn pick_message(
        &self,
        seen: impl ExactSizeIterator<Item = bool>,
        seq: u64,
        unread_first: bool,
    ) -> Option<usize> {
        let len = seen.len();
        let unread: Vec<usize> = seen
            .enumerate()
            .filter(|(_, seen)| !seen)
            .map(|(i, _)| i)
            .collect();
        let candidates: Vec<usize> = if unread_first && !unread.is_empty() {
            unread
        } else {
            (0..len).collect()
        };
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[self.shared.plan.pick(self.index, seq, candidates.len())])
    }

    /// Where a move or delete takes its message: Trash for a delete, else
    /// the plan's move target for this action ([`Plan::move_target`]) by its
    /// name in `params`, which the server's namespace may have prefixed;
    /// `None` when the profile has no move targets.
    pub(crate) fn move_folder(
        &self,
        params: &ActionParams,
        seq: u64,
        delete: bool,
    ) -> Option<String> {
        if delete {
            return Some(params.trash.clone());
        }
        let at = self.shared.plan.move_target(self.index, seq)?;
        params.move_targets.get(at).cloned()
    }
}

/// Sleeps until `deadline`; false if `stop` was raised first.
pub(crate) async fn sleep_until(deadline: Instant, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return false;
    }
    tokio::select! {
        _ = tokio::time::sleep_until(deadline) => true,
        _ = stop.changed() => false,
    }
}

/// A calendar item as a client that stores calendars in IMAP writes it.
pub(crate) fn calendar_item(run_id: &str, user: u32, nth: u64, address: &str) -> Vec<u8> {
    let date = rfc5322(chrono::Utc::now());
    let uid = format!("{run_id}-u{user}-e{}", nth / 2);
    format!(
        "From: {address}\r\nTo: {address}\r\nSubject: Meeting {nth}\r\nDate: {date}\r\n\
         Message-ID: <cal.{uid}.{nth}@peakhour.invalid>\r\nX-Peakhour-Run: {run_id}\r\n\
         MIME-Version: 1.0\r\nContent-Type: text/calendar; charset=utf-8; method=REQUEST\r\n\r\n\
         BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//peakhour//EN\r\nBEGIN:VEVENT\r\n\
         UID:{uid}\r\nSEQUENCE:{seq}\r\nDTSTAMP:20260101T090000Z\r\nDTSTART:20260102T{hour:02}0000Z\r\n\
         DTEND:20260102T{end:02}0000Z\r\nSUMMARY:Meeting {nth}\r\nORGANIZER:mailto:{address}\r\n\
         END:VEVENT\r\nEND:VCALENDAR\r\n",
        seq = nth % 2,
        hour = 8 + nth % 8,
        end = 9 + nth % 8,
    )
    .into_bytes()
}
