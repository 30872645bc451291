use super::*;
use crate::target::TlsMode;

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
