//! The vocabulary every sans-I/O protocol core speaks, after imap-next.
//!
//! A core is a state machine with no socket and no clock. Its caller starts a
//! command (each protocol has its own way: `send(&Request)`, `send(&Command)`,
//! `ehlo(domain)` ...), then asks [`ProtocolCore::next`] what to do until an
//! event comes out:
//!
//! * [`Progress::Output`]: write these bytes to the peer, then ask again;
//! * [`Progress::NeedMoreInput`]: read from the peer, hand the bytes to
//!   [`ProtocolCore::enqueue_input`] (or, at end of stream, call
//!   [`ProtocolCore::input_closed`]), then ask again;
//! * [`Progress::Event`]: something happened (a reply, a completed command, a
//!   mailbox update);
//! * `Err(_)`: the peer broke the protocol, or the connection ended; see
//!   [`ErrorKind`] for how errors are classified.
//!
//! [`Pump`](crate::Pump) is the one loop that does this over a tokio stream.

use std::borrow::Cow;
use std::time::Duration;

/// What a protocol core asks its caller to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress<E> {
    /// Write these bytes to the peer (in one write: pipelined commands stay
    /// together), then ask again.
    Output(Vec<u8>),
    /// Something happened; what depends on the protocol.
    Event(E),
    /// Nothing more until more bytes arrive: read, pass them to
    /// [`ProtocolCore::enqueue_input`] (or call [`ProtocolCore::input_closed`]
    /// at end of stream), then ask again. Also the answer when no command is
    /// running and nothing is buffered.
    NeedMoreInput,
}

/// A sans-I/O protocol core, as [`Pump`](crate::Pump) drives it.
///
/// The cores implement these as inherent methods too, so that tests and the
/// fuzz targets call them without importing this trait.
pub trait ProtocolCore {
    /// What [`ProtocolCore::next`] reports besides bytes to write.
    type Event;
    /// Why the core cannot go on; see [`ErrorKind`].
    type Error;

    /// Adds bytes received from the peer.
    fn enqueue_input(&mut self, bytes: &[u8]);

    /// The peer closed the connection (a read returned 0 bytes). The next
    /// [`ProtocolCore::next`] reports a response cut short, or that the
    /// connection closed while one was awaited.
    fn input_closed(&mut self);

    /// What to do next. An `Err` ends the command; [`ErrorKind::is_recoverable`]
    /// says whether the core takes another one.
    fn next(&mut self) -> Result<Progress<Self::Event>, Self::Error>;

    /// The driver's clock when the next input arrived, as time since the
    /// current command's first write. The core never reads a clock itself; a
    /// core that times replies one by one (SMTP's pipelined MAIL, RCPT and
    /// DATA replies) keeps this, and the others ignore it. The pump calls it
    /// before every [`ProtocolCore::enqueue_input`].
    fn set_clock(&mut self, elapsed: Duration) {
        let _ = elapsed;
    }
}

/// How every protocol error is classified, for counting errors by kind.
///
/// The engine keeps counts of errors, never lists of them, keyed by
/// `protocol:kind` (`smtp:timeout`, `imap:no`). So `kind` is a short, stable,
/// lowercase label with no server text, address or number that varies from
/// one error to the next, except where the variation is the point (an SMTP
/// reply code: `reply:550`). A detail goes after a colon (`malformed:bare-lf`).
/// Words are joined with `-` (`not-offered`); the IMAP labels joined with `_`
/// predate this rule and stay, because results already count them.
pub trait ErrorKind {
    /// The label errors are counted under.
    fn kind(&self) -> Cow<'static, str>;

    /// True if the connection can take the next command after this error: the
    /// peer refused a command but the conversation is still in step. After
    /// any other error (timeout, transport, malformed data, connection closed)
    /// the connection must be dropped.
    fn is_recoverable(&self) -> bool;
}
