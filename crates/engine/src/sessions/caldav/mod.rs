//! A simulated user's calendar over CalDAV (RFC 4791).
//!
//! Each user holds one [`CalendarUser`]: its own CalDAV client over one
//! HTTP connection, kept alive between requests where the server allows it
//! (Radicale 3.1 does not: it speaks HTTP/1.0 and closes after each
//! response, so every request opens a connection there). Every request is
//! timed by the driver and recorded under `caldav.<METHOD>` (`caldav.PUT`,
//! `caldav.REPORT` ...), as IMAP and SMTP commands are under their names;
//! the action around them is timed from its intended start by the user's
//! loop. Every request has a deadline: the run's action timeout for the
//! exchange, its connect timeout for the connection.
//!
//! What the user does, after Apple's CalendarServer simulator (see
//! `caldav-office` in docs/profiles.md):
//!
//! * it finds its calendar once, on first use: `current-user-principal`,
//!   then `calendar-home-set` (two PROPFINDs, RFC 6764 §6);
//! * `update_calendar` (MMB) fetches the current week with a
//!   `calendar-query` REPORT, then changes one of its events (PUT with
//!   `If-Match` on its ETag) every other time, and creates one otherwise
//!   (PUT with `If-None-Match: *`);
//! * `poll_calendar` asks the calendar home for its collections' change tags
//!   (PROPFIND Depth 1) and fetches the week again when the calendar's tag
//!   moved;
//! * `create_event` creates an event in working hours this week, or, as
//!   often as the profile's `invitations` share says, an invitation to
//!   other users of the run where the server schedules (RFC 6638; see
//!   `invite.rs`), and `poll_calendar` then also reads the
//!   schedule inbox and accepts what is due;
//! * `change_event` changes an event of the week it knows, with `If-Match`.
//!
//! A replacing PUT that Radicale answers with 201 counts as stored, as a 200
//! or 204 does. A 412 (the ETag no longer matches) fails the action.

mod endpoint;
pub(crate) mod init;
pub(crate) mod invite;
mod read_back;

pub use endpoint::CalDavEndpoint;
pub(crate) use endpoint::{caldav_login, check_calendar};

use std::time::Duration;

use peakhour_caldav::scheduling::invitation_ics;
use peakhour_caldav::{
    CalDavClient, CalDavError, CalendarObject, EventSpec, Precondition, PutOutcome, UtcDateTime,
    event_ics, read_event,
};
use peakhour_http::{BasicAuth, ConnectionOptions, HttpConnection};
use peakhour_net::Timed;
use peakhour_workload::{ActionKind, EventSlot, Plan};

use crate::connector::Connector;
use crate::events::{Counter, EventSink, Outcome};
use crate::population::Population;
use crate::sessions::caldav::invite::Scheduling;
use crate::sessions::{Action, Actor, Failure, UserSession};
use crate::state_checks::CalDavChecker;
use crate::target::Target;

/// The events of the week a user remembers at most: a bound on memory,
/// far above what a week holds in any profile.
const MAX_KNOWN_EVENTS: usize = 2_000;

/// Why a calendar action failed.
#[derive(Debug)]
pub(crate) struct CalendarFailure {
    /// `caldav:<kind>`, counted in the run's errors.
    pub(crate) kind: String,
    /// The error as the user would read it: the request, the server's
    /// answer and what it was about (the calendar or the event's href).
    pub(crate) detail: Option<String>,
}

impl From<CalDavError> for CalendarFailure {
    fn from(error: CalDavError) -> Self {
        CalendarFailure {
            kind: format!("caldav:{}", error.kind()),
            detail: Some(error.to_string()),
        }
    }
}

/// For `map_err`: a request on `href` failed, `href` named (as `what`)
/// unless the error's own text already does.
fn on<'a>(what: &'static str, href: &'a str) -> impl FnOnce(CalDavError) -> CalendarFailure + 'a {
    move |error| {
        let mut failure = CalendarFailure::from(error);
        if let Some(detail) = &mut failure.detail
            && !detail.contains(href)
        {
            detail.push_str(&format!(" ({what} {href:?})"));
        }
        failure
    }
}

/// An event of the week, as the user last saw it.
#[derive(Debug, Clone)]
struct KnownEvent {
    href: String,
    etag: Option<String>,
    uid: String,
    start: UtcDateTime,
    sequence: u32,
    /// It has attendees: an invitation, which a change written from our
    /// own template would strip of them (and the server would cancel).
    invitation: bool,
}

/// Where the calendar is and what the user knows of it.
#[derive(Debug, Default)]
struct Found {
    principal: String,
    home: String,
    calendar: String,
}

/// One simulated user's calendar client. See the module documentation.
#[derive(Debug)]
pub(crate) struct CalendarUser {
    caldav: CalDavClient,
    discovery_path: String,
    found: Option<Found>,
    /// The calendar's change tag at the last poll.
    ctag: Option<String>,
    /// The week the events below belong to (its Monday), and the events.
    week: Option<UtcDateTime>,
    events: Vec<KnownEvent>,
    index: u32,
    run_tag: String,
    address: String,
    scheduling: Scheduling,
    /// state checks: what the user wrote must be what it reads back.
    state: Option<CalDavChecker>,
}

impl CalendarUser {
    /// A client for user `index` (0-based) of `target`'s CalDAV server.
    pub(crate) fn new(
        target: &Target,
        endpoint: &CalDavEndpoint,
        index: u32,
        address: &str,
        run_id: &str,
        request_timeout: Duration,
        connect_timeout: Duration,
    ) -> CalendarUser {
        let (login, password) = caldav_login(target, index, address);
        let options = ConnectionOptions {
            auth: Some(BasicAuth::new(login, &password)),
            request_timeout,
            ..ConnectionOptions::default()
        };
        let http = HttpConnection::new(endpoint.http_endpoint(target, connect_timeout), options);
        CalendarUser {
            caldav: CalDavClient::new(http),
            discovery_path: endpoint.path.clone(),
            found: None,
            ctag: None,
            week: None,
            events: Vec::new(),
            index,
            run_tag: href_safe(run_id),
            address: address.to_owned(),
            scheduling: Scheduling::default(),
            state: None,
        }
    }

    /// state checks: this client's checker, when `--check-state` is on.
    pub(crate) fn checked_by(mut self, state: Option<CalDavChecker>) -> CalendarUser {
        self.state = state;
        self
    }

    /// The calendar's path, found on first use (two PROPFINDs).
    async fn calendar(
        &mut self,
        plan: &Plan,
        events: &EventSink,
    ) -> Result<String, CalendarFailure> {
        if let Some(found) = &self.found {
            return Ok(found.calendar.clone());
        }
        let principal = self
            .caldav
            .find_principal(&self.discovery_path)
            .await
            .map_err(on("principal", &self.discovery_path))?;
        let principal = record(events, "caldav.PROPFIND", principal);
        let home = self
            .caldav
            .find_calendar_home(&principal)
            .await
            .map_err(on("principal", &principal))?;
        let home = record(events, "caldav.PROPFIND", home);
        let calendar = calendar_path(&home, &plan.calendar().name);
        self.found = Some(Found {
            principal,
            home,
            calendar: calendar.clone(),
        });
        Ok(calendar)
    }

    /// MMB's `update_calendar`: the week's REPORT, then every other time a
    /// change of one of its events, otherwise a new event.
    pub(crate) async fn update(
        &mut self,
        plan: &Plan,
        events: &EventSink,
        nth: u64,
    ) -> Result<Outcome, CalendarFailure> {
        let calendar = self.calendar(plan, events).await?;
        self.fetch_week(&calendar, events).await?;
        let own: Vec<usize> = (0..self.events.len())
            .filter(|&i| !self.events[i].invitation)
            .collect();
        if nth % 2 == 1 && !own.is_empty() {
            let pick = own[plan.pick(self.index, nth ^ (1 << 62), own.len())];
            return self.change(pick, plan, events).await;
        }
        self.create(&calendar, plan, events, "u", nth).await
    }

    /// `poll_calendar`: the home's change tags, and the week again when the
    /// calendar's tag moved (or was never seen).
    pub(crate) async fn poll(
        &mut self,
        plan: &Plan,
        events: &EventSink,
    ) -> Result<Outcome, CalendarFailure> {
        let calendar = self.calendar(plan, events).await?;
        let home = self
            .found
            .as_ref()
            .map(|f| f.home.clone())
            .unwrap_or_default();
        let listed = self
            .caldav
            .list_home(&home)
            .await
            .map_err(on("calendar home", &home))?;
        let listed = record(events, "caldav.PROPFIND", listed);
        let ctag = listed
            .calendars
            .iter()
            .find(|c| peakhour_caldav::requests::href_path(&c.href) == calendar)
            .and_then(|c| c.ctag.clone().or_else(|| c.sync_token.clone()));
        if ctag.is_none() || ctag != self.ctag || self.week != Some(this_week()) {
            self.ctag = ctag;
            self.fetch_week(&calendar, events).await?;
        }
        if plan.invitations().share > 0.0 && self.schedules(events).await? {
            self.scheduling
                .poll_inbox(
                    &mut self.caldav,
                    listed.inbox_tag,
                    plan,
                    self.index,
                    &self.address,
                    &calendar,
                    events,
                    self.state.as_mut(), // state checks
                )
                .await?;
        }
        Ok(Outcome::Ok)
    }

    /// True if the server schedules (asked once; see [`Scheduling`]).
    async fn schedules(&mut self, events: &EventSink) -> Result<bool, CalendarFailure> {
        let Some(found) = &self.found else {
            return Ok(false);
        };
        self.scheduling
            .supported(&mut self.caldav, &found.home, &found.principal, events)
            .await
    }

    /// `create_event`: a new event in working hours this week; an
    /// invitation to other users of `population` when the plan draws one
    /// (skipped where the server does not schedule).
    pub(crate) async fn create_event(
        &mut self,
        plan: &Plan,
        events: &EventSink,
        nth: u64,
        population: &Population,
    ) -> Result<Outcome, CalendarFailure> {
        let calendar = self.calendar(plan, events).await?;
        let invitees = plan.invitees(self.index, nth, population.users());
        if invitees.is_empty() {
            return self.create(&calendar, plan, events, "c", nth).await;
        }
        if !self.schedules(events).await? {
            return Ok(Outcome::Skipped("no_scheduling"));
        }
        // Only the run's own users: an address outside it is never written.
        let attendees: Vec<String> = invitees
            .iter()
            .filter_map(|&user| population.address(user).ok())
            .collect();
        self.invite(&calendar, plan, events, nth, &attendees).await
    }

    /// PUT of an invitation (`caldav.PUT invite`), which the server
    /// delivers to the attendees' schedule inboxes.
    async fn invite(
        &mut self,
        calendar: &str,
        plan: &Plan,
        events: &EventSink,
        nth: u64,
        attendees: &[String],
    ) -> Result<Outcome, CalendarFailure> {
        let uid = format!("{}-u{}-i{nth}", self.run_tag, self.index);
        let start = slot_start(this_week(), plan.event_slot(self.index, nth));
        let spec = event_spec(plan, &uid, start, 0, &self.address);
        let ics = invitation_ics(&event_ics(&spec), &self.address, attendees);
        let href = format!("{calendar}{uid}.ics");
        let put = self
            .caldav
            .put_event(&href, &ics, &Precondition::CreateOnly)
            .await?;
        if !record(events, "caldav.PUT invite", put).is_stored() {
            return Ok(Outcome::Error("caldav:precondition-failed".into()));
        }
        events.count(Counter::EventsCreated, 1);
        events.count(Counter::InvitationsSent, 1);
        Ok(Outcome::Ok)
    }

    /// `change_event`: an event of the week, changed with `If-Match` on the
    /// ETag the user holds (fetching the week first if it holds none).
    pub(crate) async fn change_event(
        &mut self,
        plan: &Plan,
        events: &EventSink,
        seq: u64,
    ) -> Result<Outcome, CalendarFailure> {
        let calendar = self.calendar(plan, events).await?;
        if self.week != Some(this_week()) || self.events.iter().all(|e| e.etag.is_none()) {
            self.fetch_week(&calendar, events).await?;
        }
        let changeable: Vec<usize> = (0..self.events.len())
            .filter(|&i| self.events[i].etag.is_some() && !self.events[i].invitation)
            .collect();
        if changeable.is_empty() {
            return Ok(Outcome::Skipped("no_events"));
        }
        let pick = changeable[plan.pick(self.index, seq, changeable.len())];
        self.change(pick, plan, events).await
    }

    /// REPORT of the current week, with the events' data; replaces what
    /// the user knew of the week.
    async fn fetch_week(
        &mut self,
        calendar: &str,
        events: &EventSink,
    ) -> Result<(), CalendarFailure> {
        let monday = this_week();
        let report = self
            .caldav
            .query_events(calendar, monday, monday.plus_seconds(7 * 86_400), true)
            .await
            .map_err(on("calendar", calendar))?;
        let objects = record(events, "caldav.REPORT", report);
        if let Some(state) = self.state.as_mut() {
            state.report(calendar, &objects); // state checks
        }
        self.week = Some(monday);
        self.events = objects
            .iter()
            .filter_map(known_event)
            .take(MAX_KNOWN_EVENTS)
            .collect();
        Ok(())
    }

    async fn create(
        &mut self,
        calendar: &str,
        plan: &Plan,
        events: &EventSink,
        kind: &str,
        nth: u64,
    ) -> Result<Outcome, CalendarFailure> {
        let uid = format!("{}-u{}-{kind}{nth}", self.run_tag, self.index);
        let start = slot_start(this_week(), plan.event_slot(self.index, nth));
        let href = format!("{calendar}{uid}.ics");
        let spec = event_spec(plan, &uid, start, 0, &self.address);
        let put = self
            .caldav
            .put_event(&href, &event_ics(&spec), &Precondition::CreateOnly)
            .await
            .map_err(on("event", &href))?;
        let stored = record(events, "caldav.PUT", put);
        if let Some(state) = self.state.as_mut() {
            state.put(&href, None, &stored); // state checks
        }
        if !stored.is_stored() {
            // Our UIDs carry the run id: a 412 here means the server is confused.
            return Ok(Outcome::Error("caldav:precondition-failed".into()));
        }
        let stored = self.read_back(plan, events, &href, stored).await?;
        events.count(Counter::EventsCreated, 1);
        if self.week == Some(this_week()) && self.events.len() < MAX_KNOWN_EVENTS {
            self.events.push(KnownEvent {
                href,
                etag: stored.etag().map(str::to_owned),
                uid,
                start,
                sequence: 0,
                invitation: false,
            });
        }
        Ok(Outcome::Ok)
    }

    async fn change(
        &mut self,
        index: usize,
        plan: &Plan,
        events: &EventSink,
    ) -> Result<Outcome, CalendarFailure> {
        let event = self.events[index].clone();
        let Some(etag) = event.etag.clone() else {
            return Ok(Outcome::Skipped("no_events"));
        };
        // A server's SEQUENCE is its to choose: no overflow at u32::MAX.
        let sequence = event.sequence.saturating_add(1);
        let spec = event_spec(plan, &event.uid, event.start, sequence, &self.address);
        let put = self
            .caldav
            .put_event(
                &event.href,
                &event_ics(&spec),
                &Precondition::IfMatch(etag.clone()),
            )
            .await
            .map_err(on("event", &event.href))?;
        let stored = record(events, "caldav.PUT", put);
        if let Some(state) = self.state.as_mut() {
            state.put(&event.href, Some(&etag), &stored); // state checks
        }
        let known = &mut self.events[index];
        match stored {
            PutOutcome::PreconditionFailed => {
                // Changed since we read it: forget the ETag, fetch again next time.
                known.etag = None;
                Ok(Outcome::Error("caldav:precondition-failed".into()))
            }
            stored => {
                let stored = self.read_back(plan, events, &event.href, stored).await?;
                let known = &mut self.events[index];
                known.etag = stored.etag().map(str::to_owned);
                known.sequence = sequence;
                events.count(Counter::EventsChanged, 1);
                Ok(Outcome::Ok)
            }
        }
    }
}

/// Records a request's time under `name` and hands its value on.
fn record<T>(events: &EventSink, name: &'static str, timed: Timed<T>) -> T {
    events.command(name, timed.elapsed);
    timed.value
}

/// `{home}{name}/`, with exactly one slash between.
pub(crate) fn calendar_path(home: &str, name: &str) -> String {
    format!("{}/{name}/", home.trim_end_matches('/'))
}

/// Monday 00:00 UTC of the current week, by the wall clock (events are
/// dated in the world's calendar, not the run's).
pub(crate) fn this_week() -> UtcDateTime {
    UtcDateTime::from_unix(chrono::Utc::now().timestamp()).start_of_week()
}

/// When an event of `slot` starts in the week of `monday`.
pub(crate) fn slot_start(monday: UtcDateTime, slot: EventSlot) -> UtcDateTime {
    monday.plus_seconds(slot.offset_in_week())
}

/// The event peakhour writes: its text follows from its UID, start and
/// revision; the DTSTAMP is the wall clock's.
pub(crate) fn event_spec(
    plan: &Plan,
    uid: &str,
    start: UtcDateTime,
    sequence: u32,
    organizer: &str,
) -> EventSpec {
    let length = plan.calendar().event_length.0.as_secs() as i64;
    EventSpec {
        uid: uid.to_owned(),
        stamp: UtcDateTime::from_unix(chrono::Utc::now().timestamp()),
        start,
        end: start.plus_seconds(length.max(60)),
        summary: if sequence == 0 {
            format!("Meeting {uid}")
        } else {
            format!("Meeting {uid} (revision {sequence})")
        },
        location: Some("Room 4".into()),
        description: Some(format!("Organizer: {organizer}\nAgenda: numbers, plans.")),
        sequence,
    }
}

/// An event of a REPORT the user can change: its UID, start and revision
/// read from its data (hostile input: see [`peakhour_caldav::read_event`]).
fn known_event(object: &CalendarObject) -> Option<KnownEvent> {
    let data = object.data.as_deref()?;
    let head = read_event(data)?;
    Some(KnownEvent {
        invitation: peakhour_caldav::ical::property(data, "ATTENDEE").is_some(),
        href: peakhour_caldav::requests::href_path(&object.href).to_owned(),
        etag: object.etag.clone(),
        uid: head.uid,
        start: head.start,
        sequence: head.sequence,
    })
}

/// A run id as it may appear in an href and a UID: letters, digits, `-`
/// and `.` kept, anything else made `-`.
pub(crate) fn href_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl<'a, C: Connector> UserSession<Actor<'a, C>> for CalendarUser {
    type Action = Action;
    type Done = Result<Outcome, Failure>;

    async fn act(&mut self, actor: &Actor<'a, C>, action: &Action) -> Self::Done {
        let (plan, events) = (&actor.shared.plan, &actor.shared.events);
        let done = match action.kind {
            ActionKind::UpdateCalendar => self.update(plan, events, action.nth).await,
            ActionKind::PollCalendar => self.poll(plan, events).await,
            ActionKind::CreateEvent => {
                self.create_event(plan, events, action.nth, &actor.shared.population)
                    .await
            }
            ActionKind::ChangeEvent => self.change_event(plan, events, action.seq).await,
            // Routed to the mail sessions (`crate::sessions::route`).
            ActionKind::CheckInbox
            | ActionKind::Read
            | ActionKind::Move
            | ActionKind::Delete
            | ActionKind::Send
            | ActionKind::DownloadMail => return Ok(Outcome::Skipped("not_routed")),
        };
        done.map_err(Failure::from)
    }
}

#[cfg(test)]
mod tests;
