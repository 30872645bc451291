//! CalDAV scheduling (RFC 6638): whether a server schedules, where a user's
//! schedule inbox is, what is in it, and the iCalendar of an invitation and
//! of an attendee's answer. Sans-I/O, like [`crate::requests`] and
//! [`crate::outcome`].
//!
//! The flow peakhour drives, after Apple CalendarServer's load simulator
//! (its `Inviter` and `Accepter`):
//!
//! 1. `OPTIONS`: a server that schedules says `calendar-auto-schedule` in
//!    its `DAV` header ([`schedules`]).
//! 2. The organizer PUTs an event with `ORGANIZER` and `ATTENDEE`s
//!    ([`invitation_ics`]); the server delivers an iTIP `REQUEST` into each
//!    attendee's schedule inbox (and, on Cyrus, a copy into the attendee's
//!    default calendar).
//! 3. The attendee lists its inbox ([`requests::list_members`], then
//!    [`members`]), GETs what is new, reads its `METHOD` and `UID`
//!    ([`read_itip`]), finds its own copy by UID ([`requests::find_by_uid`]),
//!    PUTs it back with its `PARTSTAT` changed ([`answer_ics`]), which makes
//!    the server send the organizer a `REPLY`, and DELETEs the inbox item.

use peakhour_http::{Method, Request, Response};
use quick_xml::escape::escape;

use crate::ical::{property, unescape_text, unfold};
use crate::multistatus::XmlLimits;
use crate::outcome::{CalDavError, CalendarInfo, CalendarObject, multistatus};

/// The DAV compliance class of a server that schedules (RFC 6638 §2).
pub const AUTO_SCHEDULE: &str = "calendar-auto-schedule";

/// The CalDAV requests scheduling adds.
pub mod requests {
    use super::*;

    const XML_DECL: &str = r#"<?xml version="1.0" encoding="utf-8"?>"#;
    const XML_TYPE: &str = "application/xml; charset=utf-8";
    const NAMESPACES: &str = r#"xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav""#;

    /// `OPTIONS` on a path (the calendar home): the `DAV` header lists the
    /// server's compliance classes.
    pub fn options(path: &str) -> Request {
        Request::new(Method::Options, path)
    }

    /// PROPFIND Depth 0 on the principal for `schedule-inbox-URL` (RFC 6638
    /// §2.2.1).
    pub fn find_schedule_inbox(principal: &str) -> Request {
        let body = format!(
            r#"{XML_DECL}<D:propfind {NAMESPACES}><D:prop><C:schedule-inbox-URL/></D:prop></D:propfind>"#
        );
        Request::new(Method::Propfind, principal)
            .header("Depth", "0")
            .body(XML_TYPE, body.into_bytes())
    }

    /// PROPFIND Depth 0 on the schedule inbox for
    /// `schedule-default-calendar-URL` (RFC 6638 §9.2): where the server
    /// puts the copies of invitations.
    pub fn find_default_calendar(inbox: &str) -> Request {
        let body = format!(
            r#"{XML_DECL}<D:propfind {NAMESPACES}><D:prop><C:schedule-default-calendar-URL/></D:prop></D:propfind>"#
        );
        Request::new(Method::Propfind, inbox)
            .header("Depth", "0")
            .body(XML_TYPE, body.into_bytes())
    }

    /// PROPFIND Depth 1 on a collection (the schedule inbox): its members
    /// and their ETags.
    pub fn list_members(collection: &str) -> Request {
        let body = format!(
            r#"{XML_DECL}<D:propfind {NAMESPACES}><D:prop><D:getetag/></D:prop></D:propfind>"#
        );
        Request::new(Method::Propfind, collection)
            .header("Depth", "1")
            .body(XML_TYPE, body.into_bytes())
    }

    /// A `calendar-query` REPORT (RFC 4791 §7.8.6) for the VEVENT whose UID
    /// is `uid`, with its ETag and data.
    pub fn find_by_uid(calendar: &str, uid: &str) -> Request {
        let body = format!(
            r#"{XML_DECL}<C:calendar-query {NAMESPACES}><D:prop><D:getetag/><C:calendar-data/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"><C:prop-filter name="UID"><C:text-match collation="i;octet">{}</C:text-match></C:prop-filter></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"#,
            escape(uid)
        );
        Request::new(Method::Report, calendar)
            .header("Depth", "1")
            .body(XML_TYPE, body.into_bytes())
    }
}

/// True if an `OPTIONS` response says the server schedules: a 2xx whose
/// `DAV` header lines (a server may send several) hold [`AUTO_SCHEDULE`].
pub fn schedules(response: &Response) -> bool {
    response.head.is_success() && response.head.headers.has_token("dav", AUTO_SCHEDULE)
}

/// The DAV compliance classes of an `OPTIONS` response, in order, each
/// once: what the run records the server offers.
pub fn dav_classes(response: &Response) -> Vec<String> {
    let mut classes: Vec<String> = Vec::new();
    for class in response
        .head
        .headers
        .get_all("dav")
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        if !classes.iter().any(|c| c == class) && classes.len() < 64 {
            classes.push(class.chars().take(80).collect());
        }
    }
    classes
}

/// An `OPTIONS` response read: the DAV classes of a 2xx ([`dav_classes`]);
/// any other status is an error.
pub fn options(response: &Response) -> Result<Vec<String>, CalDavError> {
    if response.head.is_success() {
        Ok(dav_classes(response))
    } else {
        Err(crate::outcome::unexpected("OPTIONS", response))
    }
}

/// The schedule inbox's href from a [`requests::find_schedule_inbox`] response.
pub fn schedule_inbox(response: &Response, limits: &XmlLimits) -> Result<String, CalDavError> {
    multistatus("PROPFIND", response, limits)?
        .responses
        .iter()
        .find_map(|r| r.found()?.schedule_inbox.clone())
        .ok_or(CalDavError::MissingProperty {
            request: "PROPFIND",
            property: "schedule-inbox-URL",
        })
}

/// The default calendar's href from a [`requests::find_default_calendar`]
/// response.
pub fn default_calendar(response: &Response, limits: &XmlLimits) -> Result<String, CalDavError> {
    multistatus("PROPFIND", response, limits)?
        .responses
        .iter()
        .find_map(|r| r.found()?.schedule_default_calendar.clone())
        .ok_or(CalDavError::MissingProperty {
            request: "PROPFIND",
            property: "schedule-default-calendar-URL",
        })
}

/// The members of `collection` in a [`requests::list_members`] response:
/// every response but the collection itself, with its ETag (no data).
pub fn members(
    collection: &str,
    response: &Response,
    limits: &XmlLimits,
) -> Result<Vec<CalendarObject>, CalDavError> {
    let own = crate::requests::href_path(collection).trim_end_matches('/');
    Ok(multistatus("PROPFIND", response, limits)?
        .responses
        .into_iter()
        .filter(|r| crate::requests::href_path(&r.href).trim_end_matches('/') != own)
        .filter_map(|r| {
            let props = r.found()?;
            Some(CalendarObject {
                etag: props.etag.clone(),
                data: None,
                href: r.href,
            })
        })
        .collect())
}

/// A calendar home's collections, as a client polls them: its calendars
/// (as [`crate::outcome::calendars`] gives them) and the schedule inbox's
/// change tag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HomeListing {
    /// The calendar collections.
    pub calendars: Vec<CalendarInfo>,
    /// The schedule inbox's `getctag` (or `sync-token`), if the home lists
    /// an inbox with one.
    pub inbox_tag: Option<String>,
}

/// A [`crate::requests::list_calendars`] response as a [`HomeListing`].
pub fn home_listing(response: &Response, limits: &XmlLimits) -> Result<HomeListing, CalDavError> {
    let mut listing = HomeListing::default();
    for r in multistatus("PROPFIND", response, limits)?.responses {
        let Some(props) = r.found() else {
            continue;
        };
        if props.is_calendar() {
            listing.calendars.push(CalendarInfo {
                display_name: props.display_name.clone(),
                ctag: props.ctag.clone(),
                sync_token: props.sync_token.clone(),
                href: r.href,
            });
        } else if props.resource_types.iter().any(|t| t == "schedule-inbox") {
            listing.inbox_tag = props.ctag.clone().or_else(|| props.sync_token.clone());
        }
    }
    Ok(listing)
}

/// What an iTIP message (a schedule inbox item) is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItipMessage {
    /// `METHOD` (RFC 5546): `REQUEST`, `REPLY`, `CANCEL` ... upper-cased;
    /// empty if absent.
    pub method: String,
    /// The event's UID.
    pub uid: String,
}

/// Reads an inbox item: `None` if it has no UID (garbage, which a client
/// passes over). The text is the server's: hostile input.
pub fn read_itip(data: &str) -> Option<ItipMessage> {
    let uid = property(data, "UID")
        .map(|uid| unescape_text(&uid))
        .filter(|uid| !uid.is_empty())?;
    let method = property(data, "METHOD")
        .map(|m| m.trim().to_ascii_uppercase())
        .unwrap_or_default();
    Some(ItipMessage { method, uid })
}

/// An invitation: `event` (a VCALENDAR from [`crate::event_ics`]) with
/// `organizer` as ORGANIZER and as an accepted ATTENDEE, and each of
/// `attendees` as a required ATTENDEE who needs to act and is asked to
/// answer (RSVP), as the CalendarServer simulator's Inviter writes them.
/// Addresses are bare (`user2@bench.test`); `mailto:` is added.
pub fn invitation_ics(event: &str, organizer: &str, attendees: &[String]) -> String {
    let mut lines = vec![
        format!("ORGANIZER:mailto:{organizer}"),
        format!("ATTENDEE;CUTYPE=INDIVIDUAL;PARTSTAT=ACCEPTED;ROLE=CHAIR:mailto:{organizer}"),
    ];
    lines.extend(attendees.iter().map(|a| {
        format!(
            "ATTENDEE;CUTYPE=INDIVIDUAL;PARTSTAT=NEEDS-ACTION;ROLE=REQ-PARTICIPANT;RSVP=TRUE:mailto:{a}"
        )
    }));
    let mut added = String::new();
    for line in lines {
        crate::ical::fold_line(&line, &mut added);
    }
    match event.find("END:VEVENT") {
        Some(at) => format!("{}{added}{}", &event[..at], &event[at..]),
        None => event.to_owned(),
    }
}

/// An attendee's answer: the event `data` (its copy, as the server stored
/// it) with the ATTENDEE line of `address` given `PARTSTAT=partstat` and no
/// `RSVP`, everything else as it was. `None` if `address` is not an
/// attendee of it. Lines are unfolded, then written folded again.
pub fn answer_ics(data: &str, address: &str, partstat: &str) -> Option<String> {
    let target = format!("mailto:{address}");
    let mut found = false;
    let mut out = String::with_capacity(data.len() + 32);
    for line in unfold(data).lines() {
        let line = line.trim_end_matches('\r');
        let is_self = !found
            && line
                .get(..8)
                .is_some_and(|name| name.eq_ignore_ascii_case("ATTENDEE"))
            && attendee_value_colon(line)
                .is_some_and(|colon| line[colon + 1..].trim().eq_ignore_ascii_case(&target));
        if !is_self {
            crate::ical::fold_line(line, &mut out);
            continue;
        }
        found = true;
        let colon = attendee_value_colon(line)?;
        let (head, value) = line.split_at(colon);
        let params = head
            .split(';')
            .skip(1)
            .filter(|p| {
                let name = p.split('=').next().unwrap_or("");
                !name.eq_ignore_ascii_case("PARTSTAT")
                    && !name.eq_ignore_ascii_case("RSVP")
                    && !name.eq_ignore_ascii_case("SCHEDULE-STATUS")
            })
            .fold(String::new(), |acc, p| acc + ";" + p);
        crate::ical::fold_line(
            &format!("ATTENDEE{params};PARTSTAT={partstat}{value}"),
            &mut out,
        );
    }
    found.then_some(out)
}

/// Where an ATTENDEE line's value starts: the first `:` outside a quoted
/// parameter value (`CN="Doe: Jane"` holds one).
fn attendee_value_colon(line: &str) -> Option<usize> {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ':' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ical::{EventSpec, UtcDateTime, event_ics};

    fn event() -> String {
        let start = UtcDateTime::from_fields(2026, 1, 6, 9, 0, 0).unwrap();
        event_ics(&EventSpec {
            uid: "r1-u0-c1".into(),
            stamp: start,
            start,
            end: start.plus_seconds(3600),
            summary: "Budget".into(),
            location: None,
            description: None,
            sequence: 0,
        })
    }

    #[test]
    fn an_invitation_names_its_organizer_and_attendees_inside_the_event() {
        let ics = invitation_ics(
            &event(),
            "user1@bench.test",
            &["user2@bench.test".into(), "user3@bench.test".into()],
        );
        let unfolded = unfold(&ics);
        assert!(unfolded.contains("ORGANIZER:mailto:user1@bench.test\r\n"));
        assert!(unfolded.contains(
            "ATTENDEE;CUTYPE=INDIVIDUAL;PARTSTAT=NEEDS-ACTION;ROLE=REQ-PARTICIPANT;RSVP=TRUE:mailto:user3@bench.test\r\n"
        ));
        let attendees = unfolded.find("ATTENDEE").unwrap();
        assert!(attendees < unfolded.find("END:VEVENT").unwrap());
        assert!(ics.lines().all(|l| l.len() <= 76), "{ics}");
    }

    #[test]
    fn an_answer_changes_only_the_attendees_own_line() {
        let stored = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nORGANIZER:mailto:user1@bench.test\r\n\
            ATTENDEE;PARTSTAT=ACCEPTED;ROLE=CHAIR:mailto:user1@bench.test\r\n\
            ATTENDEE;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;RSVP=TRUE;\r\n PARTSTAT=NEEDS-ACTION;CN=\"Two: 2\":mailto:User2@bench.test\r\n\
            ATTENDEE;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:user3@bench.test\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        let answered = unfold(&answer_ics(stored, "user2@bench.test", "ACCEPTED").unwrap());
        assert!(answered.contains(
            "ATTENDEE;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;CN=\"Two: 2\";PARTSTAT=ACCEPTED:mailto:User2@bench.test\r\n"
        ), "{answered}");
        assert!(
            answered
                .contains("ATTENDEE;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:user3@bench.test\r\n")
        );
        assert!(
            answered.contains("ATTENDEE;PARTSTAT=ACCEPTED;ROLE=CHAIR:mailto:user1@bench.test\r\n")
        );
        assert!(answer_ics(stored, "user9@bench.test", "ACCEPTED").is_none());
    }

    #[test]
    fn a_line_with_a_wide_character_near_its_start_is_no_attendee() {
        let data = "ATTENDé:mailto:user2@bench.test\r\nATTENDEEé:mailto:user2@bench.test\r\n";
        assert!(answer_ics(data, "user2@bench.test", "ACCEPTED").is_some());
        // Byte 8 inside a character: no slicing panic.
        assert!(answer_ics("ATTENDEé:x\r\n", "x", "ACCEPTED").is_none());
    }

    #[test]
    fn itip_messages_are_read_for_their_method_and_uid() {
        let request = "BEGIN:VCALENDAR\r\nMETHOD:request\r\nBEGIN:VEVENT\r\nUID:a\\,b\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        assert_eq!(
            read_itip(request),
            Some(ItipMessage {
                method: "REQUEST".into(),
                uid: "a,b".into()
            })
        );
        assert_eq!(read_itip("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"), None);
        assert_eq!(read_itip("UID:x").unwrap().method, "");
    }

    #[test]
    fn a_uid_is_escaped_in_the_query() {
        let request = requests::find_by_uid("/c/", "a<b>&c");
        let body = String::from_utf8(request.body_bytes().to_vec()).unwrap();
        assert!(body.contains(">a&lt;b&gt;&amp;c</C:text-match>"), "{body}");
    }
}
