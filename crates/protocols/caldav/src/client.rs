//! The CalDAV client over one kept-alive HTTP connection.

use peakhour_http::{Dial, Endpoint, HttpConnection, Request, Response};
use peakhour_net::{Stopwatch, Timed};

use crate::ical::UtcDateTime;
use crate::multistatus::XmlLimits;
use crate::outcome::{
    self, CalDavError, CalendarInfo, CalendarObject, DeleteOutcome, MakeCalendarOutcome, PutOutcome,
};
use crate::requests::{self, Precondition, href_path};
use crate::scheduling;

/// One user's CalDAV client: typed calls over an [`HttpConnection`].
///
/// Each call is one request (discovery is two) and returns a [`Timed`]
/// outcome; the metric name for a call is `caldav.` and its method
/// (`caldav.PUT`, `caldav.REPORT`, ...). A status the call does not expect is
/// a [`CalDavError::Status`]; a 412 on a conditional PUT or DELETE is an
/// outcome, not an error, because it is what concurrent editors cause.
#[derive(Debug)]
pub struct CalDavClient<D: Dial = Endpoint> {
    http: HttpConnection<D>,
    xml: XmlLimits,
}

impl<D: Dial> CalDavClient<D> {
    /// A client over `http` (which carries the user's credentials).
    pub fn new(http: HttpConnection<D>) -> Self {
        Self {
            http,
            xml: XmlLimits::default(),
        }
    }

    /// The HTTP connection, for its counters.
    pub fn http(&self) -> &HttpConnection<D> {
        &self.http
    }

    async fn send(&mut self, request: &Request) -> Result<Timed<Response>, CalDavError> {
        Ok(self.http.request(request).await?)
    }

    /// The calendar home: `current-user-principal` on `/`, then
    /// `calendar-home-set` on the principal (RFC 6764 §6). Timed over both.
    pub async fn discover_home(&mut self) -> Result<Timed<String>, CalDavError> {
        let watch = Stopwatch::start();
        let response = self.send(&requests::find_principal("/")).await?.value;
        let principal = outcome::principal(&response, &self.xml)?;
        let request = requests::find_calendar_home(href_path(&principal));
        let response = self.send(&request).await?.value;
        let home = outcome::calendar_home(&response, &self.xml)?;
        Ok(watch.finish(href_path(&home).to_owned()))
    }

    /// The first step of [`CalDavClient::discover_home`] on its own (one
    /// PROPFIND, timed alone): the principal's path, from
    /// `current-user-principal` on `path` (usually `/`).
    pub async fn find_principal(&mut self, path: &str) -> Result<Timed<String>, CalDavError> {
        let timed = self.send(&requests::find_principal(path)).await?;
        let xml = self.xml;
        try_map(timed, |r| {
            outcome::principal(&r, &xml).map(|href| href_path(&href).to_owned())
        })
    }

    /// The second step of [`CalDavClient::discover_home`] on its own (one
    /// PROPFIND, timed alone): the calendar home's path, from
    /// `calendar-home-set` on the principal.
    pub async fn find_calendar_home(
        &mut self,
        principal: &str,
    ) -> Result<Timed<String>, CalDavError> {
        let timed = self.send(&requests::find_calendar_home(principal)).await?;
        let xml = self.xml;
        try_map(timed, |r| {
            outcome::calendar_home(&r, &xml).map(|href| href_path(&href).to_owned())
        })
    }

    /// The calendars in `home`, with their change tags.
    pub async fn list_calendars(
        &mut self,
        home: &str,
    ) -> Result<Timed<Vec<CalendarInfo>>, CalDavError> {
        let timed = self.send(&requests::list_calendars(home)).await?;
        let xml = self.xml;
        try_map(timed, |r| outcome::calendars(&r, &xml))
    }

    /// The calendars in `home` and its schedule inbox's change tag: the same
    /// request as [`CalDavClient::list_calendars`], read for both.
    pub async fn list_home(
        &mut self,
        home: &str,
    ) -> Result<Timed<scheduling::HomeListing>, CalDavError> {
        let timed = self.send(&requests::list_calendars(home)).await?;
        let xml = self.xml;
        try_map(timed, |r| scheduling::home_listing(&r, &xml))
    }

    /// MKCALENDAR at `path`.
    pub async fn make_calendar(
        &mut self,
        path: &str,
        display_name: &str,
    ) -> Result<Timed<MakeCalendarOutcome>, CalDavError> {
        let timed = self
            .send(&requests::make_calendar(path, display_name))
            .await?;
        try_map(timed, |r| outcome::make_calendar(&r))
    }

    /// The VEVENTs overlapping `[start, end)` in `calendar`, with ETags and,
    /// if `with_data`, their text.
    pub async fn query_events(
        &mut self,
        calendar: &str,
        start: UtcDateTime,
        end: UtcDateTime,
        with_data: bool,
    ) -> Result<Timed<Vec<CalendarObject>>, CalDavError> {
        let request = requests::query_events(calendar, start, end, with_data);
        let timed = self.send(&request).await?;
        let xml = self.xml;
        try_map(timed, |r| outcome::events(&r, &xml))
    }

    /// GET one object.
    pub async fn get_event(&mut self, href: &str) -> Result<Timed<CalendarObject>, CalDavError> {
        let timed = self.send(&requests::get_event(href)).await?;
        try_map(timed, |r| outcome::event(href, &r))
    }

    /// PUT an iCalendar object at `href`.
    pub async fn put_event(
        &mut self,
        href: &str,
        ics: &str,
        precondition: &Precondition,
    ) -> Result<Timed<PutOutcome>, CalDavError> {
        let timed = self
            .send(&requests::put_event(href, ics, precondition))
            .await?;
        try_map(timed, |r| outcome::put(&r))
    }

    /// OPTIONS on `path`: the server's DAV compliance classes (RFC 6638's
    /// `calendar-auto-schedule` among them if it schedules). A status other
    /// than 2xx is an error.
    pub async fn dav_classes(&mut self, path: &str) -> Result<Timed<Vec<String>>, CalDavError> {
        let timed = self.send(&scheduling::requests::options(path)).await?;
        try_map(timed, |r| scheduling::options(&r))
    }

    /// The principal's schedule inbox (RFC 6638 §2.2.1).
    pub async fn find_schedule_inbox(
        &mut self,
        principal: &str,
    ) -> Result<Timed<String>, CalDavError> {
        let request = scheduling::requests::find_schedule_inbox(principal);
        let timed = self.send(&request).await?;
        let xml = self.xml;
        try_map(timed, |r| {
            scheduling::schedule_inbox(&r, &xml).map(|href| href_path(&href).to_owned())
        })
    }

    /// Where the server puts invitations' copies (RFC 6638 §9.2).
    pub async fn find_default_calendar(
        &mut self,
        inbox: &str,
    ) -> Result<Timed<String>, CalDavError> {
        let request = scheduling::requests::find_default_calendar(inbox);
        let timed = self.send(&request).await?;
        let xml = self.xml;
        try_map(timed, |r| {
            scheduling::default_calendar(&r, &xml).map(|href| href_path(&href).to_owned())
        })
    }

    /// The members of a collection (the schedule inbox), with ETags.
    pub async fn list_members(
        &mut self,
        collection: &str,
    ) -> Result<Timed<Vec<CalendarObject>>, CalDavError> {
        let timed = self
            .send(&scheduling::requests::list_members(collection))
            .await?;
        let xml = self.xml;
        try_map(timed, |r| scheduling::members(collection, &r, &xml))
    }

    /// The VEVENT with `uid` in `calendar`, with its ETag and data.
    pub async fn find_by_uid(
        &mut self,
        calendar: &str,
        uid: &str,
    ) -> Result<Timed<Vec<CalendarObject>>, CalDavError> {
        let timed = self
            .send(&scheduling::requests::find_by_uid(calendar, uid))
            .await?;
        let xml = self.xml;
        try_map(timed, |r| outcome::events(&r, &xml))
    }

    /// DELETE `href`.
    pub async fn delete(
        &mut self,
        href: &str,
        precondition: &Precondition,
    ) -> Result<Timed<DeleteOutcome>, CalDavError> {
        let timed = self.send(&requests::delete(href, precondition)).await?;
        try_map(timed, |r| outcome::delete(&r))
    }
}

fn try_map<T>(
    timed: Timed<Response>,
    f: impl FnOnce(Response) -> Result<T, CalDavError>,
) -> Result<Timed<T>, CalDavError> {
    Ok(Timed {
        value: f(timed.value)?,
        elapsed: timed.elapsed,
    })
}
