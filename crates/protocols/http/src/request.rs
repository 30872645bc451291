//! Requests: what a caller asks for, checked before a byte is written.

use std::fmt;

/// The request methods CalDAV (RFC 4791, RFC 4918) and JMAP (RFC 8620) use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// GET.
    Get,
    /// HEAD: the response has a head and never a body.
    Head,
    /// POST (JMAP API calls, blob uploads).
    Post,
    /// PUT (a calendar object).
    Put,
    /// DELETE.
    Delete,
    /// OPTIONS (which DAV classes a server offers).
    Options,
    /// PROPFIND (RFC 4918 §9.1).
    Propfind,
    /// PROPPATCH (RFC 4918 §9.2).
    Proppatch,
    /// REPORT (RFC 3253 §3.6; CalDAV's calendar-query and calendar-multiget).
    Report,
    /// MKCALENDAR (RFC 4791 §5.3.1).
    Mkcalendar,
    /// MKCOL (RFC 4918 §9.3).
    Mkcol,
}

impl Method {
    /// The method as written on the request line.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Propfind => "PROPFIND",
            Method::Proppatch => "PROPPATCH",
            Method::Report => "REPORT",
            Method::Mkcalendar => "MKCALENDAR",
            Method::Mkcol => "MKCOL",
        }
    }

    /// The method named `text` (exact, upper case), if it is one of these.
    pub fn parse(text: &str) -> Option<Method> {
        const ALL: [Method; 11] = [
            Method::Get,
            Method::Head,
            Method::Post,
            Method::Put,
            Method::Delete,
            Method::Options,
            Method::Propfind,
            Method::Proppatch,
            Method::Report,
            Method::Mkcalendar,
            Method::Mkcol,
        ];
        ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// True if sending the request twice has the effect of sending it once
    /// (RFC 9110 §9.2.2, plus PROPFIND and REPORT, which are safe). Only such
    /// a request is sent again on a fresh connection when a kept-alive one
    /// turns out to have been closed by the server.
    pub fn is_idempotent(self) -> bool {
        !matches!(self, Method::Post | Method::Mkcalendar | Method::Mkcol)
    }

    /// True if the method carries a body by definition, so an empty one is
    /// still announced with `Content-Length: 0` (some servers wait for it).
    fn always_has_body(self) -> bool {
        matches!(self, Method::Post | Method::Put)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request the caller builds; the client adds `Host`, `User-Agent`,
/// `Authorization` and `Content-Length` when it encodes it.
///
/// ```
/// use peakhour_http::{Method, Request};
/// let put = Request::new(Method::Put, "/dav/user1/calendar/e1.ics")
///     .header("If-None-Match", "*")
///     .body("text/calendar; charset=utf-8", b"BEGIN:VCALENDAR\r\n...".to_vec());
/// assert_eq!(put.method(), Method::Put);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    method: Method,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Why a request cannot be sent. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The target is not an origin-form path (`/...`) of visible ASCII.
    #[error("request target {0:?} is not a path of visible ASCII starting with /")]
    BadTarget(String),
    /// A header name that is not an RFC 9110 token.
    #[error("header name {0:?} is not a token")]
    BadHeaderName(String),
    /// A header value with CR, LF or NUL: it would inject headers.
    #[error("the value of header {0} contains CR, LF or NUL")]
    BadHeaderValue(String),
    /// A header the client sets itself (framing, host, credentials), or
    /// `Expect`, which makes servers such as Radicale wait a second per request.
    #[error("header {0} is set by the client and cannot be given")]
    ReservedHeader(String),
    /// A request was sent while the previous one's response is still awaited.
    #[error("a request is already in flight on this connection")]
    Busy,
    /// Bytes came from the server before this request was written: they would
    /// be taken as its response.
    #[error("the server sent data no request asked for: {excerpt}")]
    Unsolicited {
        /// The start of those bytes, escaped.
        excerpt: String,
    },
}

/// Headers the client writes itself; a caller giving one would break framing
/// or duplicate credentials.
const RESERVED: [&str; 6] = [
    "host",
    "content-length",
    "transfer-encoding",
    "authorization",
    "expect",
    "user-agent",
];

impl Request {
    /// A request with no headers and no body.
    pub fn new(method: Method, target: impl Into<String>) -> Request {
        Request {
            method,
            target: target.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header (kept in the order given).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body and its `Content-Type`.
    pub fn body(mut self, content_type: &str, body: Vec<u8>) -> Request {
        self.headers
            .push(("Content-Type".to_owned(), content_type.to_owned()));
        self.body = body;
        self
    }

    /// Sets the body alone; the caller gives `Content-Type` as a header.
    pub fn raw_body(mut self, body: Vec<u8>) -> Request {
        self.body = body;
        self
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The request target (path and query).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The caller's headers, in order.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The body.
    pub fn body_bytes(&self) -> &[u8] {
        &self.body
    }

    /// Checks the target and the headers; [`crate::HttpClient::send`] calls it.
    pub fn validate(&self) -> Result<(), RequestError> {
        let target_ok =
            self.target.starts_with('/') && self.target.bytes().all(|b| b.is_ascii_graphic());
        if !target_ok {
            return Err(RequestError::BadTarget(self.target.clone()));
        }
        for (name, value) in &self.headers {
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(RequestError::BadHeaderName(name.clone()));
            }
            if RESERVED.iter().any(|r| name.eq_ignore_ascii_case(r)) {
                return Err(RequestError::ReservedHeader(name.clone()));
            }
            if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                return Err(RequestError::BadHeaderValue(name.clone()));
            }
        }
        Ok(())
    }

    /// Appends the encoded request to `out`. `host` and `authorization` are
    /// the connection's; the request must have passed [`Request::validate`].
    pub(crate) fn encode_into(&self, host: &str, authorization: Option<&str>, out: &mut Vec<u8>) {
        out.reserve(256 + self.body.len());
        push_all(
            out,
            &[self.method.as_str(), " ", &self.target, " HTTP/1.1\r\n"],
        );
        push_all(out, &["Host: ", host, "\r\nUser-Agent: peakhour\r\n"]);
        if let Some(credentials) = authorization {
            push_all(out, &["Authorization: ", credentials, "\r\n"]);
        }
        for (name, value) in &self.headers {
            push_all(out, &[name, ": ", value, "\r\n"]);
        }
        if !self.body.is_empty() || self.method.always_has_body() {
            push_all(
                out,
                &["Content-Length: ", &self.body.len().to_string(), "\r\n"],
            );
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
    }
}

fn push_all(out: &mut Vec<u8>, parts: &[&str]) {
    for part in parts {
        out.extend_from_slice(part.as_bytes());
    }
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_host_agent_credentials_headers_and_length_in_that_order() {
        let request = Request::new(Method::Put, "/a.ics")
            .header("If-Match", "\"1\"")
            .body("text/calendar", b"X".to_vec());
        request.validate().unwrap();
        let mut out = Vec::new();
        request.encode_into("h:1", Some("Basic dTpw"), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "PUT /a.ics HTTP/1.1\r\nHost: h:1\r\nUser-Agent: peakhour\r\n\
             Authorization: Basic dTpw\r\nIf-Match: \"1\"\r\nContent-Type: text/calendar\r\n\
             Content-Length: 1\r\n\r\nX"
        );
    }

    #[test]
    fn an_empty_post_still_says_content_length_zero_and_a_get_does_not() {
        let mut out = Vec::new();
        Request::new(Method::Post, "/x").encode_into("h", None, &mut out);
        assert!(out.ends_with(b"Content-Length: 0\r\n\r\n"));
        out.clear();
        Request::new(Method::Get, "/x").encode_into("h", None, &mut out);
        assert!(out.ends_with(b"User-Agent: peakhour\r\n\r\n"));
    }

    #[test]
    fn refuses_injection_reserved_headers_and_bad_targets() {
        let bad_value = Request::new(Method::Get, "/").header("X", "a\r\nEvil: 1");
        assert_eq!(
            bad_value.validate(),
            Err(RequestError::BadHeaderValue("X".into()))
        );
        let reserved = Request::new(Method::Get, "/").header("content-length", "5");
        assert!(matches!(
            reserved.validate(),
            Err(RequestError::ReservedHeader(_))
        ));
        let expect = Request::new(Method::Put, "/").header("Expect", "100-continue");
        assert!(matches!(
            expect.validate(),
            Err(RequestError::ReservedHeader(_))
        ));
        for target in ["", "a", "/a b", "/a\r\n", "http://x/"] {
            assert!(
                Request::new(Method::Get, target).validate().is_err(),
                "{target:?}"
            );
        }
        assert!(
            Request::new(Method::Get, "/")
                .header("Bad Name", "v")
                .validate()
                .is_err()
        );
    }

    #[test]
    fn method_names_round_trip_and_post_is_not_retried() {
        for name in ["GET", "PROPFIND", "REPORT", "MKCALENDAR", "DELETE"] {
            assert_eq!(Method::parse(name).unwrap().as_str(), name);
        }
        assert!(!Method::Post.is_idempotent());
        assert!(Method::Put.is_idempotent());
        assert_eq!(Method::parse("get"), None);
    }
}
