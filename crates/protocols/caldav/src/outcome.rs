//! What CalDAV responses mean: status codes and multistatus bodies turned
//! into typed outcomes. Sans-I/O, like the builders in [`crate::requests`].

use std::borrow::Cow;

use peakhour_http::{HttpError, Response};

use crate::multistatus::{Multistatus, XmlError, XmlLimits, parse_multistatus};

/// Everything that can go wrong with a CalDAV request.
#[derive(Debug, thiserror::Error)]
pub enum CalDavError {
    /// The HTTP exchange failed (connect, TLS, timeout, hostile framing ...).
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A status the request does not expect (401, 403, 500, a 200 where a
    /// 207 was due ...).
    #[error("{request} answered {status}: {excerpt}")]
    Status {
        /// The request (its method).
        request: &'static str,
        /// The status code.
        status: u16,
        /// The start of the body, escaped.
        excerpt: String,
    },
    /// A multistatus body that does not parse.
    #[error("{request} response: {source}")]
    Xml {
        /// The request (its method).
        request: &'static str,
        /// Why.
        source: XmlError,
    },
    /// A multistatus without a property the request asked for.
    #[error("{request} response lacks {property}")]
    MissingProperty {
        /// The request (its method).
        request: &'static str,
        /// The property.
        property: &'static str,
    },
}

impl CalDavError {
    /// A stable label for counting errors by kind: the HTTP layer's kinds,
    /// `status:NNN`, `bad-xml` or `missing-property`.
    pub fn kind(&self) -> Cow<'static, str> {
        match self {
            CalDavError::Http(error) => Cow::Borrowed(error.kind()),
            CalDavError::Status { status, .. } => Cow::Owned(format!("status:{status}")),
            CalDavError::Xml { .. } => Cow::Borrowed("bad-xml"),
            CalDavError::MissingProperty { .. } => Cow::Borrowed("missing-property"),
        }
    }

    /// True if the connection is still in step after this error: the whole
    /// response was read, only its meaning was wrong.
    pub fn is_recoverable(&self) -> bool {
        !matches!(self, CalDavError::Http(_))
    }
}

/// A [`CalDavError::Status`] for a status `request` does not expect.
pub(crate) fn unexpected(request: &'static str, response: &Response) -> CalDavError {
    CalDavError::Status {
        request,
        status: response.status(),
        excerpt: response.body_excerpt(),
    }
}

/// A 207 response's multistatus.
pub fn multistatus(
    request: &'static str,
    response: &Response,
    limits: &XmlLimits,
) -> Result<Multistatus, CalDavError> {
    if response.status() != 207 {
        return Err(unexpected(request, response));
    }
    parse_multistatus(&response.body, limits).map_err(|source| CalDavError::Xml { request, source })
}

/// The principal's href from a [`crate::requests::find_principal`] response.
pub fn principal(response: &Response, limits: &XmlLimits) -> Result<String, CalDavError> {
    multistatus("PROPFIND", response, limits)?
        .responses
        .iter()
        .find_map(|r| r.found()?.current_user_principal.clone())
        .ok_or(CalDavError::MissingProperty {
            request: "PROPFIND",
            property: "current-user-principal",
        })
}

/// The calendar home's href from a [`crate::requests::find_calendar_home`] response.
pub fn calendar_home(response: &Response, limits: &XmlLimits) -> Result<String, CalDavError> {
    multistatus("PROPFIND", response, limits)?
        .responses
        .iter()
        .find_map(|r| r.found()?.calendar_home_set.clone())
        .ok_or(CalDavError::MissingProperty {
            request: "PROPFIND",
            property: "calendar-home-set",
        })
}

/// A calendar collection in the home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarInfo {
    /// Its href.
    pub href: String,
    /// `displayname`, if any.
    pub display_name: Option<String>,
    /// `getctag`, if the server has it (Radicale and CalendarServer do).
    pub ctag: Option<String>,
    /// `sync-token` (RFC 6578), if any.
    pub sync_token: Option<String>,
}

/// The calendars in a [`crate::requests::list_calendars`] response (other
/// collections, such as address books or the home itself, are left out).
pub fn calendars(
    response: &Response,
    limits: &XmlLimits,
) -> Result<Vec<CalendarInfo>, CalDavError> {
    Ok(multistatus("PROPFIND", response, limits)?
        .responses
        .into_iter()
        .filter_map(|r| {
            let props = r.found()?.clone();
            props.is_calendar().then_some(CalendarInfo {
                href: r.href,
                display_name: props.display_name,
                ctag: props.ctag,
                sync_token: props.sync_token,
            })
        })
        .collect())
}

/// What MKCALENDAR did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MakeCalendarOutcome {
    /// 201: created.
    Created,
    /// 405 (RFC 4918 §9.3.1, MKCOL's answer where a resource exists), 409
    /// (Radicale's answer when it does), or 403 with the
    /// `DAV:resource-must-be-null` precondition (RFC 4791 §5.3.1.2, Cyrus's).
    AlreadyExists,
}

/// Interprets a MKCALENDAR response.
pub fn make_calendar(response: &Response) -> Result<MakeCalendarOutcome, CalDavError> {
    match response.status() {
        200 | 201 => Ok(MakeCalendarOutcome::Created),
        405 | 409 => Ok(MakeCalendarOutcome::AlreadyExists),
        // A 403 for another reason (no right to create there, a location that
        // cannot hold a calendar) is an error: only this precondition says
        // that the calendar is there already.
        403 if response
            .body
            .windows(21)
            .any(|w| w == b"resource-must-be-null") =>
        {
            Ok(MakeCalendarOutcome::AlreadyExists)
        }
        _ => Err(unexpected("MKCALENDAR", response)),
    }
}

/// One calendar object from a REPORT or GET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarObject {
    /// Its href.
    pub href: String,
    /// Its ETag, which a later change must quote in `If-Match`.
    pub etag: Option<String>,
    /// Its iCalendar text, if it was asked for.
    pub data: Option<String>,
}

/// The objects in a [`crate::requests::query_events`] response. Responses
/// without found properties (a 404 for an object deleted meanwhile) are left out.
pub fn events(response: &Response, limits: &XmlLimits) -> Result<Vec<CalendarObject>, CalDavError> {
    Ok(multistatus("REPORT", response, limits)?
        .responses
        .into_iter()
        .filter_map(|r| {
            let props = r.found()?;
            Some(CalendarObject {
                etag: props.etag.clone(),
                data: props.calendar_data.clone(),
                href: r.href,
            })
        })
        .collect())
}

/// A [`crate::requests::get_event`] response: the object, with its ETag.
pub fn event(href: &str, response: &Response) -> Result<CalendarObject, CalDavError> {
    if response.status() != 200 {
        return Err(unexpected("GET", response));
    }
    Ok(CalendarObject {
        href: href.to_owned(),
        etag: response.header("etag").map(str::to_owned),
        data: Some(String::from_utf8_lossy(&response.body).into_owned()),
    })
}

/// What a PUT did, as the server's status code says. Servers differ on a
/// replacement: RFC 9110 §9.3.4 says 200 or 204, Radicale 3.1 says 201 for
/// every write, so `Created` after an `If-Match` PUT means "stored".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// 201: a new object. The ETag, if the server sent one (RFC 4791 §5.3.4
    /// lets it withhold it when it changed the data).
    Created {
        /// The new ETag.
        etag: Option<String>,
    },
    /// 200 or 204: an existing object replaced.
    Updated {
        /// The new ETag.
        etag: Option<String>,
    },
    /// 412: the precondition failed (created meanwhile, or changed since read).
    PreconditionFailed,
}

impl PutOutcome {
    /// True if the object was stored (created or replaced).
    pub fn is_stored(&self) -> bool {
        !matches!(self, PutOutcome::PreconditionFailed)
    }

    /// The new ETag, if the object was stored and the server sent one.
    pub fn etag(&self) -> Option<&str> {
        match self {
            PutOutcome::Created { etag } | PutOutcome::Updated { etag } => etag.as_deref(),
            PutOutcome::PreconditionFailed => None,
        }
    }
}

/// Interprets a PUT response.
pub fn put(response: &Response) -> Result<PutOutcome, CalDavError> {
    let etag = || response.header("etag").map(str::to_owned);
    match response.status() {
        201 => Ok(PutOutcome::Created { etag: etag() }),
        200 | 204 => Ok(PutOutcome::Updated { etag: etag() }),
        412 => Ok(PutOutcome::PreconditionFailed),
        _ => Err(unexpected("PUT", response)),
    }
}

/// What a DELETE did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// 200 or 204.
    Deleted,
    /// 404: already gone.
    NotFound,
    /// 412: changed since read.
    PreconditionFailed,
}

/// Interprets a DELETE response.
pub fn delete(response: &Response) -> Result<DeleteOutcome, CalDavError> {
    match response.status() {
        200 | 204 => Ok(DeleteOutcome::Deleted),
        404 => Ok(DeleteOutcome::NotFound),
        412 => Ok(DeleteOutcome::PreconditionFailed),
        _ => Err(unexpected("DELETE", response)),
    }
}
