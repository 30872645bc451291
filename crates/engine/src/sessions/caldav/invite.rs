//! Invitations over CalDAV scheduling (RFC 6638), after the CalendarServer
//! simulator's `Inviter` and `Accepter` (`caldav-office` in
//! docs/profiles.md).
//!
//! A user learns once, on its first invitation or inbox check, whether the
//! server schedules: `OPTIONS` on its calendar home, `calendar-auto-schedule`
//! in the `DAV` header. Where it does, it finds its schedule inbox (on the
//! principal) and the calendar the server puts invitations' copies in (on
//! the inbox). Where it does not, invitations are skipped
//! (`skipped_no_scheduling`, not an error) and the inbox is never asked for.
//!
//! The organizer's side is a PUT of an event with ORGANIZER and ATTENDEEs
//! (`caldav.PUT invite`). The attendee's side runs in its calendar poll:
//! when the inbox's change tag moved it lists the inbox (`caldav.PROPFIND
//! inbox`) and GETs what is new (`caldav.GET inbox`); a request is answered
//! after the Accepter's delay, a reply or cancel is deleted at once
//! (`caldav.DELETE inbox`). Answering is finding its copy by UID
//! (`caldav.REPORT invitation`), PUTting it back with `PARTSTAT=ACCEPTED`
//! (`caldav.PUT reply`), which makes the server send the organizer a REPLY,
//! and deleting the inbox item.

use std::collections::{HashSet, VecDeque};

use peakhour_caldav::requests::href_path;
use peakhour_caldav::scheduling::{AUTO_SCHEDULE, answer_ics, read_itip};
use peakhour_caldav::{CalDavClient, Precondition, PutOutcome};
use peakhour_net::Timed;
use peakhour_workload::Plan;
use tokio::time::Instant;

use crate::events::{Counter, EventSink, Outcome};
use crate::sessions::caldav::CalendarFailure;
use crate::state_checks::CalDavChecker;

/// Inbox items a user remembers having seen, and answers it holds, at
/// most: bounds on memory far above what a run leaves in an inbox.
const MAX_SEEN: usize = 20_000;
const MAX_PENDING: usize = 2_000;

/// What the user knows of the server's scheduling.
#[derive(Debug, Default)]
enum Support {
    /// Not asked yet.
    #[default]
    Unknown,
    /// The server does not schedule.
    No,
    /// It does: where the inbox and the copies are.
    Yes {
        inbox: String,
        copies: Option<String>,
        inbox_tag: Option<String>,
    },
}

/// An invitation seen in the inbox, to be answered at `due`.
#[derive(Debug)]
struct Pending {
    inbox_item: String,
    uid: String,
    due: Instant,
}

/// One user's scheduling state. See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Scheduling {
    support: Support,
    seen: HashSet<String>,
    pending: VecDeque<Pending>,
    answers_seen: u64,
}

/// Records a request's time under `name` and hands its value on.
fn record<T>(events: &EventSink, name: &'static str, timed: Timed<T>) -> T {
    events.command(name, timed.elapsed);
    timed.value
}

impl Scheduling {
    /// True if the server schedules, asking it once (`OPTIONS` on `home`,
    /// then the inbox on `principal` and the copies' calendar on the inbox).
    pub(crate) async fn supported(
        &mut self,
        caldav: &mut CalDavClient,
        home: &str,
        principal: &str,
        events: &EventSink,
    ) -> Result<bool, CalendarFailure> {
        if matches!(self.support, Support::Unknown) {
            // A server that refuses OPTIONS (a status, not a broken
            // connection) does not schedule for us either.
            let classes = match caldav.dav_classes(home).await {
                Ok(classes) => record(events, "caldav.OPTIONS", classes),
                Err(error) if error.is_recoverable() => Vec::new(),
                Err(error) => return Err(error.into()),
            };
            self.support = if classes.iter().any(|c| c == AUTO_SCHEDULE) {
                let inbox = caldav.find_schedule_inbox(principal).await?;
                let inbox = record(events, "caldav.PROPFIND schedule", inbox);
                // A server need not say where copies go (RFC 6638 §9.2 is
                // optional): the attendee then files its answer itself.
                let copies = match caldav.find_default_calendar(&inbox).await {
                    Ok(copies) => Some(record(events, "caldav.PROPFIND schedule", copies)),
                    Err(error) if error.is_recoverable() => None,
                    Err(error) => return Err(error.into()),
                };
                Support::Yes {
                    inbox,
                    copies,
                    inbox_tag: None,
                }
            } else {
                Support::No
            };
        }
        Ok(matches!(self.support, Support::Yes { .. }))
    }

    /// The attendee's side of a poll: the inbox again if its tag moved
    /// (`tag`, from the home's listing; `None` when the server gives none),
    /// then the answers that are due. `calendar` is the user's own, where
    /// an answer goes when the server keeps no copy.
    #[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
    pub(crate) async fn poll_inbox(
        &mut self,
        caldav: &mut CalDavClient,
        tag: Option<String>,
        plan: &Plan,
        user: u32,
        address: &str,
        calendar: &str,
        events: &EventSink,
        mut state: Option<&mut CalDavChecker>,
    ) -> Result<(), CalendarFailure> {
        let Support::Yes {
            inbox, inbox_tag, ..
        } = &mut self.support
        else {
            return Ok(());
        };
        if tag.is_none() || tag != *inbox_tag {
            *inbox_tag = tag;
            let inbox = inbox.clone();
            self.read_inbox(caldav, &inbox, plan, user, events, state.as_deref_mut())
                .await?;
        }
        self.answer_due(caldav, address, calendar, events, state)
            .await
    }

    async fn read_inbox(
        &mut self,
        caldav: &mut CalDavClient,
        inbox: &str,
        plan: &Plan,
        user: u32,
        events: &EventSink,
        mut state: Option<&mut CalDavChecker>,
    ) -> Result<(), CalendarFailure> {
        let members = record(
            events,
            "caldav.PROPFIND inbox",
            caldav.list_members(inbox).await?,
        );
        if let Some(state) = state.as_deref_mut() {
            let hrefs: Vec<&str> = members.iter().map(|m| m.href.as_str()).collect();
            state.inbox_read(inbox, &hrefs); // state checks
        }
        for member in members {
            let href = href_path(&member.href).to_owned();
            if self.seen.contains(&href) || self.seen.len() >= MAX_SEEN {
                continue;
            }
            let item = record(events, "caldav.GET inbox", caldav.get_event(&href).await?);
            self.seen.insert(href.clone());
            let message = item.data.as_deref().and_then(read_itip);
            match message {
                Some(message)
                    if message.method == "REQUEST" && self.pending.len() < MAX_PENDING =>
                {
                    let delay = plan.answer_delay(user, self.answers_seen);
                    self.answers_seen += 1;
                    self.pending.push_back(Pending {
                        inbox_item: href,
                        uid: message.uid,
                        due: Instant::now() + delay,
                    });
                }
                // Replies, cancels and what cannot be read are removed at
                // once, as the Accepter removes replies.
                _ => {
                    let deleted = caldav.delete(&href, &Precondition::None).await?;
                    let deleted = record(events, "caldav.DELETE inbox", deleted);
                    if let Some(state) = state.as_deref_mut() {
                        state.delete(&href, deleted); // state checks
                    }
                }
            }
        }
        Ok(())
    }

    /// Answers every invitation whose delay is over.
    async fn answer_due(
        &mut self,
        caldav: &mut CalDavClient,
        address: &str,
        calendar: &str,
        events: &EventSink,
        mut state: Option<&mut CalDavChecker>,
    ) -> Result<(), CalendarFailure> {
        let copies = match &self.support {
            Support::Yes { copies, .. } => copies.clone(),
            _ => None,
        };
        let now = Instant::now();
        while self.pending.front().is_some_and(|p| p.due <= now) {
            let Some(pending) = self.pending.pop_front() else {
                break;
            };
            let answered = answer(
                caldav,
                &pending,
                copies.as_deref(),
                address,
                calendar,
                events,
            )
            .await?;
            let deleted = caldav
                .delete(&pending.inbox_item, &Precondition::None)
                .await?;
            let deleted = record(events, "caldav.DELETE inbox", deleted);
            if let Some(state) = state.as_deref_mut() {
                state.delete(&pending.inbox_item, deleted); // state checks
            }
            if answered == Outcome::Ok {
                events.count(Counter::InvitationsAnswered, 1);
            }
        }
        Ok(())
    }
}

/// Accepts one invitation: its copy found by UID and PUT back with the
/// user's `PARTSTAT=ACCEPTED` (`If-Match` on its ETag); without a copy, the
/// inbox item itself, answered, into the user's calendar.
async fn answer(
    caldav: &mut CalDavClient,
    pending: &Pending,
    copies: Option<&str>,
    address: &str,
    calendar: &str,
    events: &EventSink,
) -> Result<Outcome, CalendarFailure> {
    if let Some(copies) = copies {
        let found = caldav.find_by_uid(copies, &pending.uid).await?;
        let found = record(events, "caldav.REPORT invitation", found);
        if let Some(copy) = found.into_iter().next() {
            let (Some(data), Some(etag)) = (copy.data, copy.etag) else {
                return Ok(Outcome::Skipped("no_invitation_copy"));
            };
            let Some(answered) = answer_ics(&data, address, "ACCEPTED") else {
                return Ok(Outcome::Skipped("not_an_attendee"));
            };
            let put = caldav
                .put_event(
                    href_path(&copy.href),
                    &answered,
                    &Precondition::IfMatch(etag),
                )
                .await?;
            return Ok(stored(record(events, "caldav.PUT reply", put)));
        }
    }
    let item = caldav.get_event(&pending.inbox_item).await?;
    let item = record(events, "caldav.GET inbox", item);
    let Some(answered) = item
        .data
        .as_deref()
        .and_then(|data| answer_ics(&without_method(data), address, "ACCEPTED"))
    else {
        return Ok(Outcome::Skipped("not_an_attendee"));
    };
    let href = format!(
        "{calendar}{}.ics",
        crate::sessions::caldav::href_safe(&pending.uid)
    );
    let put = caldav
        .put_event(&href, &answered, &Precondition::CreateOnly)
        .await?;
    Ok(stored(record(events, "caldav.PUT reply", put)))
}

fn stored(put: PutOutcome) -> Outcome {
    match put {
        PutOutcome::PreconditionFailed => Outcome::Error("caldav:precondition-failed".into()),
        _ => Outcome::Ok,
    }
}

/// An iTIP message as a calendar object: without its `METHOD` line (RFC
/// 4791 §4.1 forbids one in a calendar collection).
fn without_method(data: &str) -> String {
    data.split_inclusive('\n')
        .filter(|line| !line.to_ascii_uppercase().starts_with("METHOD:"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_itip_message_loses_its_method_as_a_calendar_object() {
        let data = "BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nUID:x\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        assert_eq!(
            without_method(data),
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        );
    }
}
