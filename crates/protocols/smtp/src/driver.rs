//! The tokio driver: a [`Session`] over a stream, one `async fn` per command.
//!
//! All protocol decisions live in the session; this module only moves bytes,
//! reads the clock and enforces the timeout.

use std::sync::Arc;
use std::time::Duration;

use peakhour_net::{Secret, Security, Stopwatch, Timed, Transport, TransportError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::SmtpError;
use crate::extensions::Extensions;
use crate::outcome::TransactionOutcome;
use crate::reply::Reply;
use crate::session::{Completion, Event, Flavor, Session};

/// Bytes asked of each read. The buffer lives only while a command runs, so
/// an idle connection holds none of it.
const READ_CHUNK: usize = 4096;

/// An SMTP or LMTP connection driven by tokio.
///
/// `S` is [`Transport`] for real servers (which adds [`SmtpConnection::connect`]
/// and [`SmtpConnection::starttls`]); any `AsyncRead + AsyncWrite` stream works
/// for the rest, which is how the tests run over in-memory pipes.
///
/// Every command returns a [`Timed`] running from the start of its first write
/// to its final reply, and is bounded by the timeout given at connect. After a
/// timeout, a transport error, a malformed reply or a closed connection the
/// connection is unusable (see [`SmtpError::is_recoverable`]): drop it.
#[derive(Debug)]
pub struct SmtpConnection<S = Transport> {
    stream: S,
    session: Session,
    timeout: Duration,
}

impl SmtpConnection<Transport> {
    /// Connects to `host:port` and reads the 220 greeting. The timing covers
    /// the TCP connect, the TLS handshake for [`Security::ImplicitTls`] (which
    /// needs `tls`), and the greeting; `timeout` bounds the connect and then
    /// each command.
    pub async fn connect(
        host: &str,
        port: u16,
        flavor: Flavor,
        security: Security,
        tls: Option<Arc<rustls::ClientConfig>>,
        timeout: Duration,
    ) -> Result<Timed<Self>, SmtpError> {
        let stopwatch = Stopwatch::start();
        let transport = Transport::connect(host, port, security, tls, timeout).await?;
        let mut connection = Self::new(transport, flavor, timeout);
        connection.greeting(stopwatch).await?;
        Ok(stopwatch.finish(connection))
    }

    /// STARTTLS and the TLS handshake (both in the timing).
    ///
    /// The session forgets the extensions, as RFC 3207 requires: call
    /// [`SmtpConnection::ehlo`] next. That is left to the caller so that the
    /// handshake and the second EHLO are timed apart.
    pub async fn starttls(
        &mut self,
        host: &str,
        config: Arc<rustls::ClientConfig>,
    ) -> Result<Timed<()>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.session.starttls()?;
        match self.run(stopwatch).await? {
            Completion::StartTls => {}
            _ => return Err(mismatch()),
        }
        let upgrade = tokio::time::timeout(self.timeout, self.stream.upgrade(host, config)).await;
        let upgraded = match upgrade {
            Ok(result) => result.map_err(SmtpError::from),
            Err(_) => Err(SmtpError::Timeout {
                during: "TLS handshake",
                after: self.timeout,
            }),
        };
        if let Err(error) = upgraded {
            self.session.poison();
            return Err(error);
        }
        self.session.tls_established()?;
        Ok(stopwatch.finish(()))
    }
}

impl<S> SmtpConnection<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    /// Reads the greeting from an already open stream.
    pub async fn from_stream(
        stream: S,
        flavor: Flavor,
        timeout: Duration,
    ) -> Result<Timed<Self>, SmtpError> {
        let stopwatch = Stopwatch::start();
        let mut connection = Self::new(stream, flavor, timeout);
        connection.greeting(stopwatch).await?;
        Ok(stopwatch.finish(connection))
    }

    fn new(stream: S, flavor: Flavor, timeout: Duration) -> Self {
        Self {
            stream,
            session: Session::new(flavor),
            timeout,
        }
    }

    async fn greeting(&mut self, stopwatch: Stopwatch) -> Result<Reply, SmtpError> {
        match self.run(stopwatch).await? {
            Completion::Greeting(reply) => Ok(reply),
            _ => Err(mismatch()),
        }
    }

    /// SMTP or LMTP.
    pub fn flavor(&self) -> Flavor {
        self.session.flavor()
    }

    /// What the latest EHLO/LHLO announced (empty before it and after STARTTLS).
    pub fn extensions(&self) -> &Extensions {
        self.session.extensions()
    }

    /// EHLO, or LHLO in LMTP.
    pub async fn ehlo(&mut self, domain: &str) -> Result<Timed<Extensions>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.session.ehlo(domain)?;
        self.hello(stopwatch).await
    }

    /// HELO, for servers that refuse EHLO (SMTP only).
    pub async fn helo(&mut self, domain: &str) -> Result<Timed<Extensions>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.session.helo(domain)?;
        self.hello(stopwatch).await
    }

    async fn hello(&mut self, stopwatch: Stopwatch) -> Result<Timed<Extensions>, SmtpError> {
        match self.run(stopwatch).await? {
            Completion::Hello(extensions) => Ok(stopwatch.finish(extensions)),
            _ => Err(mismatch()),
        }
    }

    /// AUTH PLAIN with an initial response.
    pub async fn auth_plain(
        &mut self,
        user: &str,
        password: &Secret<String>,
    ) -> Result<Timed<Reply>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.session.auth_plain(user, password)?;
        self.authenticated(stopwatch).await
    }

    /// AUTH LOGIN (two 334 challenges).
    pub async fn auth_login(
        &mut self,
        user: &str,
        password: &Secret<String>,
    ) -> Result<Timed<Reply>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.session.auth_login(user, password)?;
        self.authenticated(stopwatch).await
    }

    /// AUTH PLAIN if the server offers it, else AUTH LOGIN, else
    /// [`SmtpError::NotOffered`].
    pub async fn authenticate(
        &mut self,
        user: &str,
        password: &Secret<String>,
    ) -> Result<Timed<Reply>, SmtpError> {
        let extensions = self.session.extensions();
        if extensions.offers_auth("PLAIN") {
            self.auth_plain(user, password).await
        } else if extensions.offers_auth("LOGIN") {
            self.auth_login(user, password).await
        } else {
            Err(SmtpError::NotOffered("AUTH PLAIN or LOGIN"))
        }
    }

    async fn authenticated(&mut self, stopwatch: Stopwatch) -> Result<Timed<Reply>, SmtpError> {
        match self.run(stopwatch).await? {
            Completion::Authenticated(reply) => Ok(stopwatch.finish(reply)),
            _ => Err(mismatch()),
        }
    }

    /// One mail transaction; see [`Session::send_mail`] for what is sent and
    /// [`TransactionOutcome`] for what comes back. A refusal of MAIL or DATA is
    /// an error; refused or undelivered recipients are in the outcome. With no
    /// recipient accepted, DATA is not sent (or, pipelined, is answered with
    /// an empty message) and RSET ends the transaction.
    pub async fn send_mail(
        &mut self,
        from: &str,
        recipients: &[String],
        message: &[u8],
    ) -> Result<Timed<TransactionOutcome>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.session.send_mail(from, recipients, message)?;
        match self.run(stopwatch).await? {
            Completion::Transaction(outcome) => Ok(stopwatch.finish(*outcome)),
            _ => Err(mismatch()),
        }
    }

    /// RSET.
    pub async fn rset(&mut self) -> Result<Timed<Reply>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.session.rset()?;
        self.simple(stopwatch).await
    }

    /// NOOP.
    pub async fn noop(&mut self) -> Result<Timed<Reply>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.session.noop()?;
        self.simple(stopwatch).await
    }

    async fn simple(&mut self, stopwatch: Stopwatch) -> Result<Timed<Reply>, SmtpError> {
        match self.run(stopwatch).await? {
            Completion::Reply(reply) => Ok(stopwatch.finish(reply)),
            _ => Err(mismatch()),
        }
    }

    /// QUIT, then shuts the stream down. Consumes the connection: nothing may
    /// follow.
    pub async fn quit(mut self) -> Result<Timed<Reply>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.session.quit()?;
        let reply = match self.run(stopwatch).await? {
            Completion::Quit(reply) => reply,
            _ => return Err(mismatch()),
        };
        let timed = stopwatch.finish(reply);
        // The server closes too; a failed shutdown changes nothing measured.
        let _ = tokio::time::timeout(self.timeout, self.stream.shutdown()).await;
        Ok(timed)
    }

    /// Runs the session's current operation to its end, within the timeout.
    async fn run(&mut self, stopwatch: Stopwatch) -> Result<Completion, SmtpError> {
        let exchange = exchange(&mut self.stream, &mut self.session, stopwatch);
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(completion)) => Ok(completion),
            Ok(Err(error)) => {
                // The session poisons itself on protocol errors; transport
                // errors happen outside it.
                if !error.is_recoverable() {
                    self.session.poison();
                }
                Err(error)
            }
            Err(_elapsed) => {
                let during = self.session.current_command();
                self.session.poison();
                Err(SmtpError::Timeout {
                    during,
                    after: self.timeout,
                })
            }
        }
    }
}

/// Moves bytes between the stream and the session until the operation ends.
async fn exchange<S>(
    stream: &mut S,
    session: &mut Session,
    stopwatch: Stopwatch,
) -> Result<Completion, SmtpError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let mut read_buffer = Vec::new();
    loop {
        match session.next_event()? {
            Event::Send(bytes) => {
                stream.write_all(&bytes).await.map_err(io_error)?;
                stream.flush().await.map_err(io_error)?;
            }
            Event::NeedsInput => {
                read_buffer.clear();
                read_buffer.reserve(READ_CHUNK);
                let read = stream.read_buf(&mut read_buffer).await.map_err(io_error)?;
                if read == 0 {
                    session.input_closed();
                } else {
                    session.enqueue_input(&read_buffer, stopwatch.elapsed());
                }
            }
            Event::Done(completion) => return Ok(completion),
            Event::Idle => return Err(mismatch()),
        }
    }
}

fn io_error(error: std::io::Error) -> SmtpError {
    SmtpError::Transport(TransportError::Io(error))
}

/// The session ended an operation other than the one the driver started:
/// a bug here, reported rather than panicked on.
fn mismatch() -> SmtpError {
    SmtpError::InvalidState("the session finished a different operation than the one started")
}
