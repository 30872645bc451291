//! # peakhour-net
//!
//! What peakhour's protocol drivers share, and nothing protocol-specific: the
//! [`Transport`] (plain TCP or rustls TLS, with STARTTLS upgrade), the
//! [`TlsSettings`] (verification on by default), the [`Timed`] value every
//! command returns, [`Secret`] for passwords, and the C:/S: [`transcript`]
//! format the protocol crates test their sans-I/O cores with.
//!
//! The protocol crates (`peakhour-smtp`, `peakhour-imap`, `peakhour-pop3`) each
//! hold a sans-I/O core — bytes in, typed replies and bytes-to-send out — and a
//! thin tokio driver built on this crate.
#![deny(missing_docs)]

mod secret;
mod timing;
mod tls;
pub mod transcript;
mod transport;

pub use secret::Secret;
pub use timing::{Stopwatch, Timed};
pub use tls::{TlsError, TlsSettings};
pub use transport::{Security, Transport, TransportError};
