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

pub(crate) mod init;
pub(crate) mod invite;

use std::fmt;
use std::time::Duration;

use peakhour_caldav::scheduling::invitation_ics;
use peakhour_caldav::{
    CalDavClient, CalDavError, CalendarObject, EventSpec, Precondition, PutOutcome, UtcDateTime,
    event_ics, read_event,
};
use peakhour_http::{BasicAuth, ConnectionOptions, Endpoint as HttpEndpoint, HttpConnection};
use peakhour_net::{Secret, Security, Timed};
use peakhour_workload::{ActionKind, EventSlot, Plan};

use crate::connector::Connector;
use crate::events::{Counter, EventSink, Outcome};
use crate::population::Population;
use crate::sessions::caldav::invite::Scheduling;
use crate::sessions::{Action, Actor, Failure, UserSession};
use crate::target::{Credentials, Endpoint, EndpointError, Target, TlsMode};

/// The events of the week a user remembers at most: a bound on memory,
/// far above what a week holds in any profile.
const MAX_KNOWN_EVENTS: usize = 2_000;

/// A CalDAV server: where its users' discovery starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalDavEndpoint {
    /// Host and port; TLS from the first byte for `https`.
    pub server: Endpoint,
    /// The path discovery starts at (`/` unless the URL names one).
    pub path: String,
    /// Users sign in with their whole address (`user1@bench.test`, as on
    /// the lab's Cyrus) rather than its local part (`user1`, as on
    /// Radicale), when the password is shared.
    pub login_with_domain: bool,
}

impl CalDavEndpoint {
    /// Parses `http://host[:port][/path]` or `https://...`.
    pub fn parse(url: &str) -> Result<CalDavEndpoint, EndpointError> {
        let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, "/"),
        };
        let server = Endpoint::parse(&format!("{scheme}://{authority}"), &["http", "https"])?;
        Ok(CalDavEndpoint {
            server,
            path: path.to_owned(),
            login_with_domain: false,
        })
    }

    pub(crate) fn http_endpoint(&self, tls: &Target, connect_timeout: Duration) -> HttpEndpoint {
        let implicit = self.server.tls == TlsMode::Implicit;
        HttpEndpoint {
            host: self.server.host.clone(),
            port: self.server.port,
            security: if implicit {
                Security::ImplicitTls
            } else {
                Security::Plain
            },
            tls: implicit.then(|| tls.tls.clone()),
            connect_timeout,
            source: None,
        }
    }
}

impl fmt::Display for CalDavEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.server.tls == TlsMode::Implicit {
            "https"
        } else {
            "http"
        };
        write!(
            f,
            "{scheme}://{}:{}{}",
            self.server.host, self.server.port, self.path
        )
    }
}

/// The CalDAV login of a user: with a shared password, the address's local
/// part (`user1`, as the lab's Radicale and most CalDAV servers name their
/// users), or the whole address for an endpoint that says so (the lab's
/// Cyrus); with a users file, its login as written there.
pub(crate) fn caldav_login(target: &Target, user: u32, address: &str) -> (String, Secret<String>) {
    let (login, password) = target.login(user, address);
    let whole = target.caldav.as_ref().is_some_and(|e| e.login_with_domain);
    let login = match &target.credentials {
        Credentials::Shared(_) if whole => login,
        Credentials::Shared(_) => login.split_once('@').map_or(login, |(local, _)| local),
        Credentials::PerUser(_) => login,
    };
    (login.to_owned(), password.clone())
}

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
        }
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
        if !stored.is_stored() {
            // Our UIDs carry the run id: a 412 here means the server is confused.
            return Ok(Outcome::Error("caldav:precondition-failed".into()));
        }
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
            .put_event(&event.href, &event_ics(&spec), &Precondition::IfMatch(etag))
            .await
            .map_err(on("event", &event.href))?;
        let stored = record(events, "caldav.PUT", put);
        let known = &mut self.events[index];
        match stored {
            PutOutcome::PreconditionFailed => {
                // Changed since we read it: forget the ETag, fetch again next time.
                known.etag = None;
                Ok(Outcome::Error("caldav:precondition-failed".into()))
            }
            stored => {
                known.etag = stored.etag().map(str::to_owned);
                known.sequence = sequence;
                events.count(Counter::EventsChanged, 1);
                Ok(Outcome::Ok)
            }
        }
    }
}

/// Whether user 0 finds its calendar: discovery, then the calendar among
/// the home's collections. An error says what to do about it. With
/// `ask_classes`, also the DAV classes its home offers (`OPTIONS`, over the
/// same discovery): whether the server schedules, for the record.
pub(crate) async fn check_calendar(
    plan: &Plan,
    target: &Target,
    endpoint: &CalDavEndpoint,
    address: &str,
    timeout: Duration,
    ask_classes: bool,
) -> Result<Option<Vec<String>>, String> {
    let (login, password) = caldav_login(target, 0, address);
    let options = ConnectionOptions {
        auth: Some(BasicAuth::new(login.clone(), &password)),
        request_timeout: timeout,
        ..ConnectionOptions::default()
    };
    let http = HttpConnection::new(endpoint.http_endpoint(target, timeout), options);
    let mut caldav = CalDavClient::new(http);
    let failed = |e: CalDavError| format!("{login}: {e}");
    let principal = caldav
        .find_principal(&endpoint.path)
        .await
        .map_err(failed)?
        .value;
    let home = caldav
        .find_calendar_home(&principal)
        .await
        .map_err(failed)?
        .value;
    let calendar = calendar_path(&home, &plan.calendar().name);
    let listed = caldav.list_calendars(&home).await.map_err(failed)?.value;
    if listed
        .iter()
        .any(|c| peakhour_caldav::requests::href_path(&c.href) == calendar)
    {
        if !ask_classes {
            return Ok(None);
        }
        // Not fatal: a server that will not say does not schedule.
        let classes = caldav.dav_classes(&home).await.map(|t| t.value);
        Ok(Some(classes.unwrap_or_default()))
    } else {
        Err(format!(
            "{login} has no calendar {calendar}: run `peakhour init` with this profile first"
        ))
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
mod tests {
    use super::*;

    #[test]
    fn caldav_urls_parse_with_and_without_a_path() {
        let plain = CalDavEndpoint::parse("http://127.0.0.1:5232/").unwrap();
        assert_eq!(plain.server.port, 5232);
        assert_eq!(plain.server.tls, TlsMode::None);
        assert_eq!(plain.path, "/");
        assert_eq!(plain.to_string(), "http://127.0.0.1:5232/");
        let tls = CalDavEndpoint::parse("https://cal.example/dav/").unwrap();
        assert_eq!((tls.server.port, tls.server.tls), (443, TlsMode::Implicit));
        assert_eq!(tls.path, "/dav/");
        assert_eq!(CalDavEndpoint::parse("http://h:80").unwrap().path, "/");
        assert!(CalDavEndpoint::parse("imap://h:143/").is_err());
        assert!(CalDavEndpoint::parse("127.0.0.1:5232").is_err());
    }

    #[test]
    fn paths_uids_and_dates() {
        assert_eq!(calendar_path("/user1/", "calendar"), "/user1/calendar/");
        assert_eq!(calendar_path("/user1", "calendar"), "/user1/calendar/");
        assert_eq!(
            href_safe("20260105-090000 mmb/medium:200u"),
            "20260105-090000-mmb-medium-200u"
        );
        let monday = UtcDateTime::from_fields(2026, 1, 5, 0, 0, 0).unwrap();
        let slot = EventSlot {
            weekday: 2,
            hour: 16,
            minute: 30,
        };
        assert_eq!(slot_start(monday, slot).to_string(), "20260107T163000Z");
    }

    #[test]
    fn a_reported_event_is_known_by_its_uid_start_and_revision() {
        let start = UtcDateTime::from_fields(2026, 1, 6, 9, 0, 0).unwrap();
        let spec = EventSpec {
            uid: "r1-u0-c3".into(),
            stamp: start,
            start,
            end: start.plus_seconds(3600),
            summary: "x".into(),
            location: None,
            description: Some("a very long description ".repeat(10)),
            sequence: 4,
        };
        let object = CalendarObject {
            href: "http://h/user1/calendar/r1-u0-c3.ics".into(),
            etag: Some("\"e1\"".into()),
            data: Some(event_ics(&spec)),
        };
        let known = known_event(&object).unwrap();
        assert_eq!(known.href, "/user1/calendar/r1-u0-c3.ics");
        assert_eq!(known.uid, "r1-u0-c3");
        assert_eq!(known.start, start);
        assert_eq!(known.sequence, 4);
        let without_data = CalendarObject {
            data: None,
            ..object
        };
        assert!(known_event(&without_data).is_none());
    }
}
