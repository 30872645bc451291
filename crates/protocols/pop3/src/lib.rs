//! # peakhour-pop3
//!
//! The POP3 client peakhour's simulated users read their mail with: RFC 1939,
//! plus CAPA (RFC 2449) and STLS (RFC 2595).
//!
//! Two layers, as in every peakhour protocol crate:
//!
//! * [`Pop3Client`], a sans-I/O core. It has no socket and no clock: it turns
//!   [`Command`]s into bytes to write, and server bytes into typed
//!   [`Response`]s. It remembers which commands are outstanding, because only
//!   the command says whether `+OK` starts a multi-line response (LIST and
//!   UIDL without argument, RETR, TOP, CAPA). Its [`Pop3Client::next`] hands
//!   out a [`Progress`] like every peakhour protocol core
//!   ([`peakhour_net::ProtocolCore`]): bytes to write, a [`Response`], or
//!   [`Progress::NeedMoreInput`] until a whole response has arrived. It removes
//!   dot-stuffing, and answers hostile input (garbage, truncation, overlong
//!   lines, control bytes, oversized responses) with a [`ProtocolError`],
//!   never a panic, within the memory [`Limits`] allow.
//! * [`Pop3Connection`], a thin tokio driver that runs the core over a
//!   [`Transport`](peakhour_net::Transport) (or any async stream) with the
//!   shared [`peakhour_net::Pump`]. Each command returns a
//!   [`Timed`](peakhour_net::Timed) result, timed from the start of its write
//!   to its final response parsed, within an optional deadline
//!   ([`Pop3Connection::set_command_timeout`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), peakhour_pop3::Pop3Error> {
//! use std::time::Duration;
//! use peakhour_net::{Secret, Security};
//! use peakhour_pop3::Pop3Connection;
//!
//! let mut pop = Pop3Connection::connect("127.0.0.1", 110, Security::Plain, None,
//!     Duration::from_secs(5)).await?.value;
//! pop.login("user1", &Secret::new("secret".to_owned())).await?;
//! let stat = pop.stat().await?;
//! if stat.value.count > 0 {
//!     let message = pop.retr(1).await?;
//!     println!("{} bytes in {:?}", message.value.len(), message.elapsed);
//! }
//! pop.quit().await?;
//! # Ok(()) }
//! ```
//!
//! The core is tested with C:/S: transcripts (`tests/transcripts/`) and fuzzed
//! (`fuzz/fuzz_targets/pop3_response.rs`).
#![deny(missing_docs)]

mod client;
mod command;
mod connection;
mod response;

pub use client::{Limits, Pop3Client, ProtocolError};
pub use command::{Command, CommandError, CommandKind};
pub use connection::{Pop3Connection, Pop3Error};
/// Re-exported because they appear in this crate's API ([`Command::Pass`] and
/// [`Pop3Connection::login`] take a `Secret`, [`Pop3Client::next`] returns a
/// `Progress`): callers and the fuzz target need not depend on `peakhour-net`.
pub use peakhour_net::{ErrorKind, Progress, Secret};
pub use response::{Capabilities, ErrReply, Greeting, ListEntry, Reply, Response, Stat, UidlEntry};
