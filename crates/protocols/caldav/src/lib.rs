//! # peakhour-caldav
//!
//! The CalDAV client (RFC 4791 over RFC 4918 WebDAV) peakhour's simulated
//! users keep their calendars with.
//!
//! * [`requests`] builds the requests as plain [`peakhour_http::Request`]
//!   values: PROPFIND for discovery and the calendar home, MKCALENDAR, the
//!   `calendar-query` REPORT for a time range, PUT with `If-None-Match: *` or
//!   `If-Match: <etag>`, GET and DELETE.
//! * [`multistatus`] parses `207 Multi-Status` bodies with quick-xml,
//!   namespaces resolved, into hrefs, statuses, ETags and calendar data,
//!   within bounds on depth and response count, refusing DTDs and unknown
//!   entities.
//! * [`outcome`] turns responses into typed outcomes ([`PutOutcome`],
//!   [`DeleteOutcome`] ...) or a [`CalDavError`]. A 412 on a conditional
//!   write is an outcome: concurrent editors cause it.
//! * [`ical`] writes iCalendar events deterministically from an
//!   [`EventSpec`] (RFC 5545 line folding and escaping), and reads back
//!   what a client needs to change one ([`read_event`]).
//! * [`scheduling`] is RFC 6638: whether a server schedules (`OPTIONS`),
//!   the schedule inbox and its iTIP messages, and the iCalendar of an
//!   invitation and of an attendee's answer.
//! * [`CalDavClient`] is the thin driver: the calls above over one user's
//!   kept-alive [`peakhour_http::HttpConnection`], each returning a
//!   [`peakhour_net::Timed`] outcome.
//!
//! All but the driver are sans-I/O: the transcript tests feed a C:/S:
//! exchange through the builders, `peakhour-http`'s core and the outcome
//! functions, `fuzz/fuzz_targets/caldav_multistatus.rs` fuzzes the parser and
//! `fuzz/fuzz_targets/caldav_calendar_data.rs` the reading of calendar data.
//! `tests/radicale.rs` runs the client against a real Radicale.
#![deny(missing_docs)]

mod client;
pub mod ical;
pub mod multistatus;
pub mod outcome;
pub mod requests;
pub mod scheduling;

pub use client::CalDavClient;
pub use ical::{EventHead, EventSpec, UtcDateTime, event_ics, read_event};
pub use multistatus::{DavResponse, Multistatus, XmlError, XmlLimits, parse_multistatus};
pub use outcome::{
    CalDavError, CalendarInfo, CalendarObject, DeleteOutcome, MakeCalendarOutcome, PutOutcome,
};
pub use requests::Precondition;
