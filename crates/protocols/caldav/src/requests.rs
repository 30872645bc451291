//! CalDAV requests (RFC 4791, RFC 4918) as plain [`Request`] values.
//!
//! Bodies are single-line XML so that a C:/S: transcript shows a request as
//! it goes on the wire.

use peakhour_http::{Method, Request};
use quick_xml::escape::escape;

use crate::ical::UtcDateTime;

const XML_DECL: &str = r#"<?xml version="1.0" encoding="utf-8"?>"#;
const XML_TYPE: &str = "application/xml; charset=utf-8";
/// The namespaces every body declares.
const NAMESPACES: &str = r#"xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav" xmlns:CS="http://calendarserver.org/ns/""#;

/// A precondition on a PUT or DELETE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// None: overwrite whatever is there.
    None,
    /// `If-None-Match: *`: create, and fail with 412 if the resource exists.
    CreateOnly,
    /// `If-Match: <etag>`: change only the version we read; 412 if someone
    /// else changed it since.
    IfMatch(String),
}

impl Precondition {
    fn apply(&self, request: Request) -> Request {
        match self {
            Precondition::None => request,
            Precondition::CreateOnly => request.header("If-None-Match", "*"),
            Precondition::IfMatch(etag) => request.header("If-Match", etag.clone()),
        }
    }
}

fn propfind(path: &str, depth: u8, props: &str) -> Request {
    let body =
        format!(r#"{XML_DECL}<D:propfind {NAMESPACES}><D:prop>{props}</D:prop></D:propfind>"#);
    Request::new(Method::Propfind, path)
        .header("Depth", depth.to_string())
        .body(XML_TYPE, body.into_bytes())
}

/// PROPFIND `current-user-principal` (RFC 5397) on a path, usually `/`.
pub fn find_principal(path: &str) -> Request {
    propfind(path, 0, "<D:current-user-principal/>")
}

/// PROPFIND `calendar-home-set` (RFC 4791 §6.2.1) on the principal.
pub fn find_calendar_home(principal: &str) -> Request {
    propfind(principal, 0, "<C:calendar-home-set/>")
}

/// PROPFIND, Depth 1, on the calendar home: each collection's type, name and
/// change tag (what a client polls to see whether anything changed).
pub fn list_calendars(home: &str) -> Request {
    propfind(
        home,
        1,
        "<D:resourcetype/><D:displayname/><CS:getctag/><D:sync-token/>",
    )
}

/// MKCALENDAR (RFC 4791 §5.3.1) for VEVENTs, named `display_name`.
pub fn make_calendar(path: &str, display_name: &str) -> Request {
    let body = format!(
        r#"{XML_DECL}<C:mkcalendar {NAMESPACES}><D:set><D:prop><D:displayname>{}</D:displayname><C:supported-calendar-component-set><C:comp name="VEVENT"/></C:supported-calendar-component-set></D:prop></D:set></C:mkcalendar>"#,
        escape(display_name)
    );
    Request::new(Method::Mkcalendar, path).body(XML_TYPE, body.into_bytes())
}

/// A `calendar-query` REPORT (RFC 4791 §7.8) for the VEVENTs that overlap
/// `[start, end)`, with their ETags and, if `with_data`, their iCalendar text.
pub fn query_events(
    calendar: &str,
    start: UtcDateTime,
    end: UtcDateTime,
    with_data: bool,
) -> Request {
    let data = if with_data { "<C:calendar-data/>" } else { "" };
    let body = format!(
        r#"{XML_DECL}<C:calendar-query {NAMESPACES}><D:prop><D:getetag/>{data}</D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"><C:time-range start="{start}" end="{end}"/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"#
    );
    Request::new(Method::Report, calendar)
        .header("Depth", "1")
        .body(XML_TYPE, body.into_bytes())
}

/// PUT of an iCalendar object.
pub fn put_event(href: &str, ics: &str, precondition: &Precondition) -> Request {
    let request = Request::new(Method::Put, href);
    precondition
        .apply(request)
        .body("text/calendar; charset=utf-8", ics.as_bytes().to_vec())
}

/// GET of one calendar object.
pub fn get_event(href: &str) -> Request {
    Request::new(Method::Get, href)
}

/// DELETE of a calendar object (or a whole calendar).
pub fn delete(href: &str, precondition: &Precondition) -> Request {
    precondition.apply(Request::new(Method::Delete, href))
}

/// The path of an href: `http://host:port/a/b` → `/a/b`; a path stays as it is.
pub fn href_path(href: &str) -> &str {
    match href.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |slash| &rest[slash..]),
        None => href,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_become_paths() {
        assert_eq!(href_path("http://h:5232/u/c/e.ics"), "/u/c/e.ics");
        assert_eq!(href_path("https://h"), "/");
        assert_eq!(href_path("/u/c/"), "/u/c/");
    }

    #[test]
    fn preconditions_become_headers() {
        let create = put_event("/c/e.ics", "X", &Precondition::CreateOnly);
        assert!(
            create
                .headers()
                .contains(&("If-None-Match".into(), "*".into()))
        );
        let change = put_event("/c/e.ics", "X", &Precondition::IfMatch("\"7\"".into()));
        assert!(
            change
                .headers()
                .contains(&("If-Match".into(), "\"7\"".into()))
        );
        assert!(delete("/c/e.ics", &Precondition::None).headers().is_empty());
    }

    #[test]
    fn display_names_are_escaped() {
        let request = make_calendar("/u/c/", "R&D <team>");
        let body = String::from_utf8(request.body_bytes().to_vec()).unwrap();
        assert!(body.contains("<D:displayname>R&amp;D &lt;team&gt;</D:displayname>"));
    }
}
