//! # peakhour-net
//!
//! What peakhour's protocol drivers share, and nothing protocol-specific:
//!
//! * the vocabulary of a sans-I/O core ([`ProtocolCore`]: `enqueue_input`,
//!   `input_closed`, `next` returning a [`Progress`]) and how its errors are
//!   counted ([`ErrorKind`]);
//! * [`Pump`], the one loop that runs a core over a stream with a deadline;
//! * the [`Transport`] (plain TCP or rustls TLS, with STARTTLS upgrade) and the
//!   [`TlsSettings`] (verification on by default), counting every byte it
//!   moves ([`wire_bytes`]);
//! * the [`Timed`] value every command returns, [`Secret`] for passwords, and
//!   the C:/S: [`transcript`] format the protocol crates test their cores with.
//!
//! The protocol crates (`peakhour-smtp`, `peakhour-imap`, `peakhour-pop3`) each
//! hold a sans-I/O core and a thin tokio driver built on this crate.
#![deny(missing_docs)]

mod pump;
mod sans_io;
mod secret;
mod timing;
mod tls;
pub mod transcript;
mod transport;
mod wire;

pub use pump::{MAX_READ, Pump, PumpError};
pub use sans_io::{ErrorKind, Progress, ProtocolCore};
pub use secret::Secret;
pub use timing::{Stopwatch, Timed};
pub use tls::{TlsError, TlsSettings};
pub use transport::{CountedTcp, Security, Transport, TransportError};
pub use wire::{WireBytes, wire_bytes};
