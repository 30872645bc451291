//! The thin tokio driver: the shared [`Pump`] moves bytes between a stream
//! and [`Pop3Client`]; this module times the commands.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use peakhour_net::{
    ErrorKind, Pump, PumpError, Secret, Security, Stopwatch, Timed, Transport, TransportError,
};
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::client::{Limits, Pop3Client, ProtocolError};
use crate::command::{Command, CommandError, CommandKind};
use crate::response::{
    Capabilities, ErrReply, Greeting, ListEntry, Reply, Response, Stat, UidlEntry,
};

/// Everything that can go wrong with a POP3 command.
#[derive(Debug, thiserror::Error)]
pub enum Pop3Error {
    /// Connecting, the TLS handshake, reading or writing failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The server broke the protocol: a malformed response (with an excerpt),
    /// a line or response over the limits, or the connection closed in the
    /// middle of a response.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The server answered `-ERR`.
    #[error("{command} refused: {reply}")]
    Server {
        /// The command refused ([`CommandKind::Greeting`] if the server
        /// refused the connection).
        command: CommandKind,
        /// The server's response code and text.
        reply: ErrReply,
    },
    /// The command could not be sent (bad argument, or not allowed now).
    #[error(transparent)]
    Command(#[from] CommandError),
    /// Connecting and reading the greeting took longer than allowed.
    #[error("connecting and reading the greeting timed out after {after:?}")]
    ConnectTimeout {
        /// The time allowed.
        after: Duration,
    },
    /// The response did not arrive within the time set with
    /// [`Pop3Connection::set_command_timeout`]. The connection is mid-command.
    #[error("{command} timed out after {after:?}")]
    Timeout {
        /// The command waited on.
        command: CommandKind,
        /// The time allowed.
        after: Duration,
    },
    /// An earlier command was cancelled or failed mid-way (its future dropped,
    /// or an I/O error), so it is unknown what the server has read and sent.
    /// Reconnect.
    #[error("the connection is unusable: an earlier command did not finish")]
    Unusable,
}

impl Pop3Error {
    /// A short stable label for counting errors by kind (see
    /// [`peakhour_net::ErrorKind`]): `transport`, `closed`, `protocol`, `err`,
    /// `command`, `connect-timeout`, `timeout`, `unusable`.
    pub fn kind(&self) -> &'static str {
        match self {
            Pop3Error::Transport(_) => "transport",
            // A server at its connection limit may close without a word
            // (issue 26): said as such, not as a broken protocol.
            Pop3Error::Protocol(ProtocolError::Closed { .. }) => "closed",
            Pop3Error::Protocol(_) => "protocol",
            Pop3Error::Server { .. } => "err",
            Pop3Error::Command(_) => "command",
            Pop3Error::ConnectTimeout { .. } => "connect-timeout",
            Pop3Error::Timeout { .. } => "timeout",
            Pop3Error::Unusable => "unusable",
        }
    }

    /// True if the session can take the next command: the server answered
    /// `-ERR`, or the command was refused before anything was sent.
    pub fn is_recoverable(&self) -> bool {
        match self {
            Pop3Error::Server { command, .. } => *command != CommandKind::Greeting,
            Pop3Error::Command(
                CommandError::InvalidArgument { .. } | CommandError::MessageNumberZero { .. },
            ) => true,
            _ => false,
        }
    }
}

impl ErrorKind for Pop3Error {
    fn kind(&self) -> Cow<'static, str> {
        Pop3Error::kind(self).into()
    }

    fn is_recoverable(&self) -> bool {
        Pop3Error::is_recoverable(self)
    }
}

/// How much the driver reads at a time; its buffer keeps this size for the
/// life of the connection and never grows.
const READ_CHUNK: usize = 16 * 1024;

/// A POP3 session over a stream: a [`Transport`] in production, any
/// `AsyncRead + AsyncWrite` (such as `tokio::io::duplex`) in tests.
///
/// Every command returns its [`Timed`] result, measured from the start of the
/// write to the final response parsed. A `-ERR` comes back as
/// [`Pop3Error::Server`] and leaves the session usable; any other error leaves
/// it [`Pop3Error::Unusable`] or failed, and the caller should reconnect.
///
/// Commands are not cancel-safe: if a command's future is dropped (a timeout
/// around it, for instance), the next command returns [`Pop3Error::Unusable`].
/// Commands wait as long as the server takes unless a deadline is set with
/// [`Pop3Connection::set_command_timeout`].
#[derive(Debug)]
pub struct Pop3Connection<S = Transport> {
    pump: Pump<S, Pop3Client>,
    greeting: Greeting,
    /// Set while a command runs; still set at the start of the next one means
    /// the last one never finished.
    in_flight: bool,
    command_timeout: Option<Duration>,
}

impl Pop3Connection<Transport> {
    /// Connects to `host:port`, secured as `security` says (`tls` is needed
    /// only for [`Security::ImplicitTls`]), and reads the greeting. `timeout`
    /// bounds the whole of it: TCP connect, TLS handshake and greeting.
    ///
    /// The timing runs from the start of the connect to the greeting parsed.
    pub async fn connect(
        host: &str,
        port: u16,
        security: Security,
        tls: Option<Arc<ClientConfig>>,
        timeout: Duration,
    ) -> Result<Timed<Self>, Pop3Error> {
        let watch = Stopwatch::start();
        let session = async {
            let transport = Transport::connect(host, port, security, tls, timeout).await?;
            Self::start(transport, Limits::default()).await
        };
        match tokio::time::timeout(timeout, session).await {
            Ok(Ok(connection)) => Ok(watch.finish(connection)),
            Ok(Err(error)) => Err(error),
            Err(_elapsed) => Err(Pop3Error::ConnectTimeout { after: timeout }),
        }
    }

    /// STLS (RFC 2595), then the TLS handshake with `host` as server name.
    /// The timing covers both. Capabilities may change after it: ask CAPA again.
    pub async fn stls(
        &mut self,
        host: &str,
        config: Arc<ClientConfig>,
    ) -> Result<Timed<()>, Pop3Error> {
        let watch = Stopwatch::start();
        self.execute(Command::Stls).await?;
        // Bytes that came with the +OK would be taken as if sent over TLS;
        // the core refuses them, and this call is where that surfaces.
        self.pump.core.next()?;
        self.in_flight = true;
        self.pump.stream.upgrade(host, config).await?;
        self.in_flight = false;
        self.pump.core.tls_established();
        Ok(watch.finish(()))
    }

    /// True once the connection is encrypted (implicit TLS or after STLS).
    pub fn is_tls(&self) -> bool {
        self.pump.stream.is_tls()
    }
}

impl<S> Pop3Connection<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    /// Starts a session over an open stream and reads the greeting. The timing
    /// covers the greeting only.
    pub async fn from_stream(stream: S, limits: Limits) -> Result<Timed<Self>, Pop3Error> {
        let watch = Stopwatch::start();
        let connection = Self::start(stream, limits).await?;
        Ok(watch.finish(connection))
    }

    async fn start(stream: S, limits: Limits) -> Result<Self, Pop3Error> {
        let mut connection = Self {
            pump: Pump::new(stream, Pop3Client::new(limits), READ_CHUNK),
            greeting: Greeting {
                text: String::new(),
                apop_timestamp: None,
            },
            in_flight: true,
            command_timeout: None,
        };
        let response = connection
            .next_response(&Stopwatch::start(), CommandKind::Greeting, None)
            .await?;
        connection.in_flight = false;
        match response.outcome {
            Ok(Reply::Greeting(greeting)) => connection.greeting = greeting,
            Ok(_) => return Err(mismatch(CommandKind::Greeting)),
            Err(reply) => {
                return Err(Pop3Error::Server {
                    command: CommandKind::Greeting,
                    reply,
                });
            }
        }
        Ok(connection)
    }

    /// The server's greeting.
    pub fn greeting(&self) -> &Greeting {
        &self.greeting
    }

    /// Bounds every later command, from its first write to its response.
    /// `None`, the default, waits as long as the server takes.
    pub fn set_command_timeout(&mut self, timeout: Option<Duration>) {
        self.command_timeout = timeout;
    }

    /// Sends any command and returns its typed reply; the typed methods below
    /// are wrappers around this one.
    pub async fn execute(&mut self, command: Command) -> Result<Timed<Reply>, Pop3Error> {
        if self.in_flight {
            return Err(Pop3Error::Unusable);
        }
        let kind = command.kind();
        self.pump.core.send(&command)?;
        self.in_flight = true;
        let watch = Stopwatch::start();
        let deadline = self.command_timeout.map(|after| Instant::now() + after);
        let response = self.next_response(&watch, kind, deadline).await?;
        let elapsed = watch.finish(());
        self.in_flight = false;
        match response.outcome {
            Ok(reply) => Ok(elapsed.map(|()| reply)),
            Err(reply) => Err(Pop3Error::Server {
                command: kind,
                reply,
            }),
        }
    }

    /// Writes the queued command and reads until its response is complete.
    async fn next_response(
        &mut self,
        watch: &Stopwatch,
        command: CommandKind,
        deadline: Option<Instant>,
    ) -> Result<Response, Pop3Error> {
        match self.pump.next_event(watch, deadline).await {
            Ok(response) => Ok(response),
            Err(PumpError::Core(error)) => Err(error.into()),
            Err(PumpError::Transport(error)) => Err(error.into()),
            Err(PumpError::DeadlineExceeded) => Err(Pop3Error::Timeout {
                command,
                after: self.command_timeout.unwrap_or_default(),
            }),
            // With the input closed the core completes the response or
            // reports it truncated; this is the case of nothing outstanding.
            Err(PumpError::Closed) => Err(ProtocolError::Closed {
                command: CommandKind::Greeting,
                mid_response: false,
            }
            .into()),
        }
    }

    /// CAPA (RFC 2449). A server without CAPA answers `-ERR`:
    /// [`Pop3Error::Server`].
    pub async fn capa(&mut self) -> Result<Timed<Capabilities>, Pop3Error> {
        typed(
            self.execute(Command::Capa).await?,
            CommandKind::Capa,
            |r| match r {
                Reply::Capabilities(caps) => Some(caps),
                _ => None,
            },
        )
    }

    /// USER then PASS; the timing covers both. A refusal names the command
    /// refused (some servers refuse an unknown user at USER, most at PASS).
    pub async fn login(
        &mut self,
        user: &str,
        password: &Secret<String>,
    ) -> Result<Timed<()>, Pop3Error> {
        let watch = Stopwatch::start();
        self.execute(Command::User(user.to_owned())).await?;
        self.execute(Command::Pass(password.clone())).await?;
        Ok(watch.finish(()))
    }

    /// STAT: message count and total size.
    pub async fn stat(&mut self) -> Result<Timed<Stat>, Pop3Error> {
        typed(
            self.execute(Command::Stat).await?,
            CommandKind::Stat,
            |r| match r {
                Reply::Stat(stat) => Some(stat),
                _ => None,
            },
        )
    }

    /// LIST: every message's number and size.
    pub async fn list(&mut self) -> Result<Timed<Vec<ListEntry>>, Pop3Error> {
        typed(
            self.execute(Command::List(None)).await?,
            CommandKind::List,
            |r| match r {
                Reply::List(entries) => Some(entries),
                _ => None,
            },
        )
    }

    /// LIST n: one message's size.
    pub async fn list_one(&mut self, msg: u32) -> Result<Timed<ListEntry>, Pop3Error> {
        typed(
            self.execute(Command::List(Some(msg))).await?,
            CommandKind::List,
            |r| match r {
                Reply::ListOne(entry) => Some(entry),
                _ => None,
            },
        )
    }

    /// UIDL: every message's number and unique id.
    pub async fn uidl(&mut self) -> Result<Timed<Vec<UidlEntry>>, Pop3Error> {
        typed(
            self.execute(Command::Uidl(None)).await?,
            CommandKind::Uidl,
            |r| match r {
                Reply::Uidl(entries) => Some(entries),
                _ => None,
            },
        )
    }

    /// UIDL n: one message's unique id.
    pub async fn uidl_one(&mut self, msg: u32) -> Result<Timed<UidlEntry>, Pop3Error> {
        typed(
            self.execute(Command::Uidl(Some(msg))).await?,
            CommandKind::Uidl,
            |r| match r {
                Reply::UidlOne(entry) => Some(entry),
                _ => None,
            },
        )
    }

    /// RETR n: the message as stored (unstuffed, CRLF line ends, no `.` line).
    pub async fn retr(&mut self, msg: u32) -> Result<Timed<Vec<u8>>, Pop3Error> {
        typed(
            self.execute(Command::Retr(msg)).await?,
            CommandKind::Retr,
            message,
        )
    }

    /// TOP n lines: the header, the blank line and the first `lines` body lines.
    pub async fn top(&mut self, msg: u32, lines: u32) -> Result<Timed<Vec<u8>>, Pop3Error> {
        typed(
            self.execute(Command::Top { msg, lines }).await?,
            CommandKind::Top,
            message,
        )
    }

    /// DELE n: mark message `n` deleted (removed at QUIT).
    pub async fn dele(&mut self, msg: u32) -> Result<Timed<()>, Pop3Error> {
        Ok(self.execute(Command::Dele(msg)).await?.map(drop))
    }

    /// NOOP.
    pub async fn noop(&mut self) -> Result<Timed<()>, Pop3Error> {
        Ok(self.execute(Command::Noop).await?.map(drop))
    }

    /// RSET: unmark every message marked deleted.
    pub async fn rset(&mut self) -> Result<Timed<()>, Pop3Error> {
        Ok(self.execute(Command::Rset).await?.map(drop))
    }

    /// QUIT: commits deletions, then closes our side of the connection.
    pub async fn quit(mut self) -> Result<Timed<()>, Pop3Error> {
        let timed = self.execute(Command::Quit).await?;
        // The session is over and committed; a server that has already closed
        // its side makes shutdown fail, which changes nothing.
        let _ = self.pump.stream.shutdown().await;
        Ok(timed.map(drop))
    }
}

fn message(reply: Reply) -> Option<Vec<u8>> {
    match reply {
        Reply::Message(bytes) => Some(bytes),
        _ => None,
    }
}

/// Extracts the reply variant a command gets. The core builds replies from the
/// command's shape, so a mismatch is a bug here, reported rather than panicked.
fn typed<T>(
    timed: Timed<Reply>,
    command: CommandKind,
    extract: impl FnOnce(Reply) -> Option<T>,
) -> Result<Timed<T>, Pop3Error> {
    let Timed { value, elapsed } = timed;
    match extract(value) {
        Some(value) => Ok(Timed { value, elapsed }),
        None => Err(mismatch(command)),
    }
}

fn mismatch(command: CommandKind) -> Pop3Error {
    ProtocolError::Malformed {
        command,
        reason: "reply of the wrong type for the command (client bug)",
        excerpt: String::new(),
    }
    .into()
}
