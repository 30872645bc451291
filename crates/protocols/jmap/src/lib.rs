//! # peakhour-jmap
//!
//! The JMAP client (RFC 8620 core, RFC 8621 mail and submission) peakhour's
//! simulated users read and send mail with when a run uses `--protocol jmap`.
//!
//! * [`session`]: the Session resource from `/.well-known/jmap`, the primary
//!   mail account, and the upload and EventSource URL templates.
//! * [`envelope`]: request and response envelopes with serde, and the method
//!   calls peakhour makes — `Mailbox/get`, `Email/query`, `Email/get`,
//!   `Email/set` (keywords, moves, destroy), `Email/import`,
//!   `EmailSubmission/set`, `Identity/get` — as typed arguments and results.
//!   Requests serialise in a fixed key order, so a transcript can show them.
//! * [`calls`]: those calls as ready [`JmapRequest`]s.
//! * [`exchange`]: the HTTP requests and what their responses mean (status,
//!   problem details, method errors, bad JSON) as a [`JmapError`]. Sans-I/O.
//! * [`eventsource`]: a bounded, sans-I/O `text/event-stream` parser and
//!   JMAP's push events (StateChange) on top of it.
//! * [`JmapClient`] and [`PushStream`]: the thin driver over one kept-alive
//!   [`peakhour_http::HttpConnection`] (and a second one for push), each call
//!   returning a [`peakhour_net::Timed`] result.
//!
//! Bodies are capped by the HTTP layer's limits before serde sees them, and
//! serde_json's recursion limit bounds nesting. Tests: C:/S: transcripts in
//! `tests/transcripts/`; fuzz targets `jmap_response` and `jmap_eventsource`.
#![deny(missing_docs)]

pub mod calls;
mod client;
pub mod envelope;
pub mod eventsource;
pub mod exchange;
pub mod session;

pub use client::{EXCHANGES_KEPT, JmapClient, PushStream};
pub use envelope::{JmapRequest, JmapResponse, MethodError, ProblemDetails};
pub use eventsource::{EventStreamParser, PushEvent, ServerEvent, StateChange, StreamLimits};
pub use exchange::JmapError;
pub use session::Session;
