//! HTTP requests for JMAP and what their responses mean. Sans-I/O: the
//! driver and the transcript tests both go through these functions.

use std::borrow::Cow;

use peakhour_http::{HttpError, Method, Request, Response};
use serde::de::DeserializeOwned;

use crate::envelope::{JmapRequest, JmapResponse, MethodError, ProblemDetails, Upload};
use crate::session::Session;

/// Everything that can go wrong with a JMAP request.
#[derive(Debug, thiserror::Error)]
pub enum JmapError {
    /// The HTTP exchange failed (connect, TLS, timeout, hostile framing ...).
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A status the request does not expect, with the problem details
    /// (RFC 7807) if the body had them.
    #[error("{request} answered {status}{}: {excerpt}", problem.as_ref().map(|p| format!(" ({})", p.kind)).unwrap_or_default())]
    Status {
        /// What was asked (`session`, `api`, `upload`, `eventsource`).
        request: &'static str,
        /// The status code.
        status: u16,
        /// The problem details, if the body was one.
        problem: Option<ProblemDetails>,
        /// The start of the body, escaped.
        excerpt: String,
    },
    /// A body that is not the JSON expected.
    #[error("{what}: bad JSON: {reason}")]
    Json {
        /// What was being read.
        what: String,
        /// serde_json's reason (with line and column).
        reason: String,
    },
    /// A method answered `error` (RFC 8620 §3.6.2).
    #[error("{method} failed: {}{}", error.kind, error.description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Method {
        /// The method called.
        method: &'static str,
        /// The error.
        error: MethodError,
    },
    /// No response for a call id, or a response of another method.
    #[error("no {method} response for call {call_id}")]
    MissingResponse {
        /// The method expected.
        method: &'static str,
        /// The call id.
        call_id: String,
    },
    /// The session lacks what peakhour needs (an account for mail ...).
    #[error("unusable session: {0}")]
    Session(String),
    /// Too many redirects finding the session.
    #[error("more than {0} redirects finding the JMAP session")]
    Redirects(usize),
    /// The event stream broke a bound.
    #[error(transparent)]
    Stream(#[from] crate::eventsource::StreamError),
}

impl JmapError {
    /// A stable label for counting errors by kind: the HTTP layer's kinds,
    /// `status:NNN`, `bad-json`, `method:<type>`, `missing-response` ...
    pub fn kind(&self) -> Cow<'static, str> {
        match self {
            JmapError::Http(error) => Cow::Borrowed(error.kind()),
            JmapError::Status { status, .. } => Cow::Owned(format!("status:{status}")),
            JmapError::Json { .. } => Cow::Borrowed("bad-json"),
            JmapError::Method { error, .. } => Cow::Owned(format!("method:{}", error.kind)),
            JmapError::MissingResponse { .. } => Cow::Borrowed("missing-response"),
            JmapError::Session(_) => Cow::Borrowed("bad-session"),
            JmapError::Redirects(_) => Cow::Borrowed("redirects"),
            JmapError::Stream(_) => Cow::Borrowed("bad-event-stream"),
        }
    }

    /// True if the connection is still in step: the response was read whole.
    pub fn is_recoverable(&self) -> bool {
        !matches!(self, JmapError::Http(_) | JmapError::Stream(_))
    }
}

/// The well-known session path (RFC 8620 §2.2).
pub const WELL_KNOWN: &str = "/.well-known/jmap";

/// GET of the session resource (or of where a redirect points).
pub fn session_request(path: &str) -> Request {
    Request::new(Method::Get, path).header("Accept", "application/json")
}

/// What a session response says: the session, or where to look instead.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionStep {
    /// The session.
    Session(Box<Session>),
    /// A redirect to this path.
    Redirect(String),
}

/// Interprets a session response: 200 with the session, or a redirect.
pub fn session(response: &Response) -> Result<SessionStep, JmapError> {
    match response.status() {
        200 => {
            json::<Session>("session", &response.body).map(|s| SessionStep::Session(Box::new(s)))
        }
        301 | 302 | 303 | 307 | 308 => match response.header("location") {
            Some(location) => Ok(SessionStep::Redirect(
                crate::session::url_path(location).to_owned(),
            )),
            None => Err(status("session", response)),
        },
        _ => Err(status("session", response)),
    }
}

/// POST of method calls to the API path.
pub fn api_request(api_path: &str, request: &JmapRequest) -> Request {
    Request::new(Method::Post, api_path)
        .header("Accept", "application/json")
        .body("application/json", request.to_json().into_bytes())
}

/// Interprets an API response envelope.
pub fn api_response(response: &Response) -> Result<JmapResponse, JmapError> {
    if response.status() != 200 {
        return Err(status("api", response));
    }
    json("api response", &response.body)
}

/// One call's result from an envelope: `method`'s arguments for `call_id`,
/// or its method error.
pub fn method_result<T: DeserializeOwned>(
    envelope: &JmapResponse,
    method: &'static str,
    call_id: &str,
) -> Result<T, JmapError> {
    let missing = || JmapError::MissingResponse {
        method,
        call_id: call_id.to_owned(),
    };
    let (name, arguments, _) = envelope
        .method_responses
        .iter()
        .find(|(_, _, id)| id == call_id)
        .ok_or_else(missing)?;
    if name == "error" {
        let error = serde_json::from_value(arguments.clone()).map_err(|e| JmapError::Json {
            what: format!("{method} error"),
            reason: e.to_string(),
        })?;
        return Err(JmapError::Method { method, error });
    }
    if name != method {
        return Err(missing());
    }
    serde_json::from_value(arguments.clone()).map_err(|e| JmapError::Json {
        what: format!("{method} response"),
        reason: e.to_string(),
    })
}

/// POST of a blob to the upload path.
pub fn upload_request(upload_path: &str, media_type: &str, bytes: Vec<u8>) -> Request {
    Request::new(Method::Post, upload_path)
        .header("Accept", "application/json")
        .body(media_type, bytes)
}

/// Interprets an upload response (200 or 201).
pub fn upload(response: &Response) -> Result<Upload, JmapError> {
    if !matches!(response.status(), 200 | 201) {
        return Err(status("upload", response));
    }
    json("upload response", &response.body)
}

/// GET of the event source.
pub fn event_source_request(path: &str) -> Request {
    Request::new(Method::Get, path)
        .header("Accept", "text/event-stream")
        .header("Cache-Control", "no-cache")
}

fn json<T: DeserializeOwned>(what: &str, body: &[u8]) -> Result<T, JmapError> {
    serde_json::from_slice(body).map_err(|e| JmapError::Json {
        what: what.to_owned(),
        reason: e.to_string(),
    })
}

/// A status error, with the body read as problem details when it is one.
pub(crate) fn status(request: &'static str, response: &Response) -> JmapError {
    JmapError::Status {
        request,
        status: response.status(),
        problem: serde_json::from_slice::<ProblemDetails>(&response.body)
            .ok()
            .filter(|p| !p.kind.is_empty()),
        excerpt: response.body_excerpt(),
    }
}
