//! State checks of CalDAV sessions (issue 27 item 3): what a user's
//! calendar client wrote must be what it reads back. Each PUT, DELETE, GET
//! and REPORT of the user's own events goes to its `CalDavSessionModel`
//! (peakhour-state-check): an ETag a PUT returned is what the next read
//! shows, a deleted item stays gone, an `If-Match` on the current ETag is
//! not refused; a PUT that returns no ETag is allowed (RFC 4791 section
//! 5.3.4).
//!
//! Each user's calendar is its own (no other session writes it), but the
//! server writes some of it through scheduling (RFC 6638): an organizer's
//! copy changes when an attendee answers, an attendee's copy is the
//! server's. So events with attendees are not held to anything: the model
//! forgets them (`changed_elsewhere`). Schedule inbox items are the
//! server's too: only whether one the user deleted comes back is checked,
//! never their ETags.

use std::sync::Arc;

use peakhour_caldav::{CalendarObject, DeleteOutcome, PutOutcome};
use peakhour_state_check::{
    CalDavExchange, CalDavOptions, CalDavSessionModel, ReportEntry, Violation,
};

use super::StateCheckHub;

impl StateCheckHub {
    /// The checker of user `user`'s calendar client; `client` names it in
    /// violations.
    pub(crate) fn caldav_session(self: &Arc<Self>, client: String) -> CalDavChecker {
        CalDavChecker {
            // Each user's calendar is its own: see the module documentation.
            model: CalDavSessionModel::new(client, CalDavOptions { sole_writer: true }),
            hub: self.clone(),
        }
    }
}

/// The state checks of one user's calendar client. Dropping it adds its
/// counts to the run's.
#[derive(Debug)]
pub(crate) struct CalDavChecker {
    model: CalDavSessionModel,
    hub: Arc<StateCheckHub>,
}

fn status_of(put: &PutOutcome) -> u16 {
    match put {
        PutOutcome::Created { .. } => 201,
        PutOutcome::Updated { .. } => 204,
        PutOutcome::PreconditionFailed => 412,
    }
}

impl CalDavChecker {
    fn exchange(&mut self, exchange: CalDavExchange) {
        let found: Vec<Violation> = self.model.exchange(&exchange);
        self.hub.record(found);
    }

    /// A PUT of one of the user's own events (no attendees), with the
    /// `If-Match` it sent, and what it did.
    pub(crate) fn put(&mut self, href: &str, if_match: Option<&str>, put: &PutOutcome) {
        self.exchange(CalDavExchange {
            method: "PUT".into(),
            href: href.into(),
            if_match: if_match.map(str::to_owned),
            status: status_of(put),
            etag: put.etag().map(str::to_owned),
            report: Vec::new(),
        });
    }

    /// A GET of one of the user's own events (`[calendar] read_back`): its
    /// status and the ETag it told.
    pub(crate) fn get(&mut self, href: &str, status: u16, etag: Option<&str>) {
        self.exchange(CalDavExchange {
            method: "GET".into(),
            href: href.into(),
            if_match: None,
            status,
            etag: etag.map(str::to_owned),
            report: Vec::new(),
        });
    }

    /// A DELETE (of a schedule inbox item).
    pub(crate) fn delete(&mut self, href: &str, deleted: DeleteOutcome) {
        let status = match deleted {
            DeleteOutcome::Deleted => 204,
            DeleteOutcome::NotFound => 404,
            DeleteOutcome::PreconditionFailed => 412,
        };
        self.exchange(CalDavExchange {
            method: "DELETE".into(),
            href: href.into(),
            if_match: None,
            status,
            etag: None,
            report: Vec::new(),
        });
    }

    /// A REPORT of `calendar` that found `objects`: events with attendees
    /// are the server's to change (scheduling) and are forgotten, the
    /// others are held to what the user wrote and read before.
    pub(crate) fn report(&mut self, calendar: &str, objects: &[CalendarObject]) {
        let mut report = Vec::new();
        for object in objects {
            let scheduled = object
                .data
                .as_deref()
                .is_none_or(|data| peakhour_caldav::ical::property(data, "ATTENDEE").is_some());
            if scheduled {
                self.model.changed_elsewhere(&object.href);
            } else {
                report.push(ReportEntry {
                    href: object.href.clone(),
                    status: 200,
                    etag: object.etag.clone(),
                });
            }
        }
        self.exchange(CalDavExchange {
            method: "REPORT".into(),
            href: calendar.into(),
            if_match: None,
            status: 207,
            etag: None,
            report,
        });
    }

    /// A listing of the schedule inbox: the server's items, so only their
    /// presence is told to the model (an item the user deleted must not be
    /// among them).
    pub(crate) fn inbox_read(&mut self, collection: &str, hrefs: &[&str]) {
        let report = hrefs
            .iter()
            .map(|href| ReportEntry {
                href: (*href).to_owned(),
                status: 200,
                etag: None,
            })
            .collect();
        let found = self.model.listing(&CalDavExchange {
            method: "PROPFIND".into(),
            href: collection.into(),
            if_match: None,
            status: 207,
            etag: None,
            report,
        });
        self.hub.record(found);
    }
}

impl Drop for CalDavChecker {
    fn drop(&mut self) {
        self.hub.totals().checks.add(self.model.checks());
    }
}
