//! # peakhour-smtp
//!
//! The SMTP and LMTP client peakhour's simulated users send mail with.
//!
//! Two layers, as in the rest of peakhour's protocol crates:
//!
//! * a **sans-I/O core** that never touches a socket or a clock:
//!   [`decode_reply`] / [`ReplyReader`], a strict reply parser that says
//!   "incomplete" until a whole multi-line reply is there and refuses hostile
//!   input with a [`MalformedReply`] instead of buffering or panicking; and
//!   [`Session`], the client state machine — start a command, feed it server
//!   bytes, ask [`Session::next`] for a [`Progress`] (bytes to send, "need
//!   more input", a [`Completion`]), the vocabulary every peakhour protocol
//!   core shares ([`peakhour_net::ProtocolCore`]).
//!   It pipelines MAIL/RCPT/DATA when the server offers PIPELINING, counts
//!   LMTP's one reply per accepted recipient (RFC 2033), and dot-stuffs
//!   bodies ([`dot_stuff`]);
//! * a thin **tokio driver**, [`SmtpConnection`], which runs the session over
//!   a [`peakhour_net::Transport`] with the shared [`peakhour_net::Pump`],
//!   times every command from its first write to its final reply
//!   ([`peakhour_net::Timed`]) and enforces a timeout.
//!
//! A refused recipient is part of a [`TransactionOutcome`], not an error;
//! everything else that goes wrong is one [`SmtpError`], whose
//! [`SmtpError::kind`] is a stable label for counting errors by kind.
//!
//! ```no_run
//! # async fn demo() -> Result<(), peakhour_smtp::SmtpError> {
//! use std::time::Duration;
//! use peakhour_net::{Secret, Security};
//! use peakhour_smtp::{Flavor, SmtpConnection};
//!
//! let timeout = Duration::from_secs(30);
//! let mut smtp = SmtpConnection::connect("127.0.0.1", 2525, Flavor::Smtp, Security::Plain, None, timeout)
//!     .await?
//!     .value;
//! smtp.ehlo("client.test").await?;
//! smtp.authenticate("user1", &Secret::new("pw".to_owned())).await?;
//! let sent = smtp
//!     .send_mail("user1@test", &["user2@test".to_owned()], b"Subject: hi\r\n\r\nhello\r\n")
//!     .await?;
//! println!("{} delivered in {:?}", sent.value.delivered_count(), sent.elapsed);
//! smtp.quit().await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod dot_stuff;
mod driver;
mod error;
mod extensions;
mod outcome;
mod reply;
mod session;

/// Re-exported because they appear in this crate's API: callers (and the fuzz
/// target) need not depend on `peakhour-net` for them.
pub use peakhour_net::{ErrorKind, Progress, Secret, Security, Timed};

pub use dot_stuff::dot_stuff;
pub use driver::SmtpConnection;
pub use error::{MAX_ERROR_TEXT, SmtpError};
pub use extensions::{AuthPolicy, AuthStep, Extensions};
pub use outcome::{RecipientOutcome, TransactionOutcome};
pub use reply::{
    DecodeError, EXCERPT_LEN, EnhancedStatus, MalformedReason, MalformedReply, Reply, ReplyClass,
    ReplyCode, ReplyLimits, ReplyReader, decode_reply, decode_reply_with,
};
pub use session::{Completion, Flavor, Session};
