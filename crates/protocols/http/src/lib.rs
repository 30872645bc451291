//! # peakhour-http
//!
//! The HTTP/1.1 layer under peakhour's CalDAV and JMAP clients.
//!
//! Two layers, as in every peakhour protocol crate:
//!
//! * [`HttpClient`], a sans-I/O core. It has no socket and no clock: it turns
//!   a [`Request`] into bytes to write (adding `Host`, `User-Agent`, Basic
//!   credentials and `Content-Length`), and server bytes into a [`Response`].
//!   It says [`Progress::NeedMoreInput`] until the response is complete. The
//!   head is parsed by `httparse`; the body framing (RFC 9112 §6.3: no body
//!   after HEAD, 1xx, 204, 304; chunked; `Content-Length`; until close) and
//!   the chunked decoding are its own, so that every size a server announces
//!   is checked against the [`Limits`] before its bytes are buffered: header
//!   count and size, body size, chunk sizes (overflow-safe) and trailers.
//!   Hostile input is a [`ProtocolError`], never a panic.
//! * [`HttpConnection`], a thin tokio driver: one kept-alive connection per
//!   simulated user over a [`peakhour_net::Transport`] (TCP or rustls TLS),
//!   reconnecting only when the server ends the connection, with a deadline
//!   on every exchange. Each request returns a [`Timed`] response. A body
//!   that never ends (an EventSource stream) is read piece by piece from a
//!   [`ResponseStream`].
//!
//! A response with any status code is a response: what a 404 or a 412 means
//! is for the protocol on top (`peakhour-caldav`, `peakhour-jmap`) to say.
//!
//! ```no_run
//! # async fn demo() -> Result<(), peakhour_http::HttpError> {
//! use std::time::Duration;
//! use peakhour_http::{BasicAuth, ConnectionOptions, Endpoint, HttpConnection, Method, Request};
//! use peakhour_net::{Secret, Security};
//!
//! let endpoint = Endpoint {
//!     host: "127.0.0.1".into(),
//!     port: 5232,
//!     security: Security::Plain,
//!     tls: None,
//!     connect_timeout: Duration::from_secs(5),
//!     source: None,
//! };
//! let options = ConnectionOptions {
//!     auth: Some(BasicAuth::new("user1", &Secret::new("pw".to_owned()))),
//!     ..ConnectionOptions::default()
//! };
//! let mut http = HttpConnection::new(endpoint, options);
//! let response = http.request(&Request::new(Method::Get, "/")).await?;
//! println!("{} in {:?}", response.value.status(), response.elapsed);
//! # Ok(()) }
//! ```
//!
//! The core is tested with C:/S: transcripts (`tests/transcripts/`) and fuzzed
//! (`fuzz/fuzz_targets/http_response.rs`).
#![deny(missing_docs)]

mod auth;
mod client;
mod connection;
mod decoder;
mod request;
mod response;

pub use auth::BasicAuth;
pub use client::HttpClient;
pub use connection::{
    ConnectionOptions, Dial, Endpoint, HttpConnection, HttpError, ResponseStream,
};
pub use decoder::{BodyEvent, Limits, ProtocolError};
/// Re-exported because this crate's API uses them.
pub use peakhour_net::{Secret, Security, Timed};
pub use request::{Method, Request, RequestError};
pub use response::{Headers, Response, ResponseHead};

/// What a sans-I/O step produced. The names follow the vocabulary the
/// other cores share (`Event`, `NeedMoreInput`); the HTTP core hands its
/// output out through [`HttpClient::pending_output`] instead of an `Output`
/// step, because a request is written whole before its response is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress<T> {
    /// A complete item.
    Event(T),
    /// Not enough input yet: read more from the server and enqueue it (or
    /// close the input at end of stream), then ask again.
    NeedMoreInput,
}

/// How long an excerpt in an error may be.
pub(crate) const EXCERPT_LEN: usize = 64;

/// The start of `bytes`, escaped and quoted, for error messages.
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(EXCERPT_LEN)];
    let mut text = format!("\"{}\"", head.escape_ascii());
    if bytes.len() > EXCERPT_LEN {
        text.push_str("...");
    }
    text
}
