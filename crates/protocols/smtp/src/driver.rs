//! The tokio driver: a [`Session`] over a stream, one `async fn` per command.
//!
//! All protocol decisions live in the session; the shared
//! [`Pump`] moves the bytes, and this module reads the clock and enforces the
//! timeout.

use std::sync::Arc;
use std::time::Duration;

use peakhour_net::{Pump, PumpError, Secret, Security, Stopwatch, Timed, Transport};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use crate::error::SmtpError;
use crate::extensions::Extensions;
use crate::outcome::TransactionOutcome;
use crate::reply::Reply;
use crate::session::{Completion, Flavor, Session};

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
    pump: Pump<S, Session>,
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
        Self::connect_from(None, host, port, flavor, security, tls, timeout).await
    }

    /// [`SmtpConnection::connect`] from the local address `source` when
    /// given (see [`Transport::connect_from`]).
    pub async fn connect_from(
        source: Option<std::net::IpAddr>,
        host: &str,
        port: u16,
        flavor: Flavor,
        security: Security,
        tls: Option<Arc<rustls::ClientConfig>>,
        timeout: Duration,
    ) -> Result<Timed<Self>, SmtpError> {
        let stopwatch = Stopwatch::start();
        let transport = Transport::connect_from(source, host, port, security, tls, timeout).await?;
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
        self.pump.core.starttls()?;
        match self.run(stopwatch).await? {
            Completion::StartTls => {}
            _ => return Err(mismatch()),
        }
        let upgrade =
            tokio::time::timeout(self.timeout, self.pump.stream.upgrade(host, config)).await;
        let upgraded = match upgrade {
            Ok(result) => result.map_err(SmtpError::from),
            Err(_) => Err(SmtpError::Timeout {
                during: "TLS handshake",
                after: self.timeout,
            }),
        };
        if let Err(error) = upgraded {
            self.pump.core.poison();
            return Err(error);
        }
        self.pump.core.tls_established()?;
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
            pump: Pump::new(stream, Session::new(flavor), READ_CHUNK),
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
        self.pump.core.flavor()
    }

    /// What the latest EHLO/LHLO announced (empty before it and after STARTTLS).
    pub fn extensions(&self) -> &Extensions {
        self.pump.core.extensions()
    }

    /// EHLO, or LHLO in LMTP.
    pub async fn ehlo(&mut self, domain: &str) -> Result<Timed<Extensions>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.pump.core.ehlo(domain)?;
        self.hello(stopwatch).await
    }

    /// HELO, for servers that refuse EHLO (SMTP only).
    pub async fn helo(&mut self, domain: &str) -> Result<Timed<Extensions>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.pump.core.helo(domain)?;
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
        self.pump.core.auth_plain(user, password)?;
        self.authenticated(stopwatch).await
    }

    /// AUTH LOGIN (two 334 challenges).
    pub async fn auth_login(
        &mut self,
        user: &str,
        password: &Secret<String>,
    ) -> Result<Timed<Reply>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.pump.core.auth_login(user, password)?;
        self.authenticated(stopwatch).await
    }

    /// AUTH PLAIN if the server offers it, else AUTH LOGIN, else
    /// [`SmtpError::NotOffered`].
    pub async fn authenticate(
        &mut self,
        user: &str,
        password: &Secret<String>,
    ) -> Result<Timed<Reply>, SmtpError> {
        let extensions = self.pump.core.extensions();
        if extensions.offers_auth("PLAIN") {
            self.auth_plain(user, password).await
        } else if extensions.offers_auth("LOGIN") {
            self.auth_login(user, password).await
        } else {
            Err(SmtpError::NotOffered("AUTH PLAIN or LOGIN"))
        }
    }

    /// AUTH as `policy` says ([`Extensions::auth_step`]): `None` when no
    /// AUTH was sent. `tls` says whether the connection is encrypted.
    pub async fn authenticate_as(
        &mut self,
        policy: crate::AuthPolicy,
        tls: bool,
        user: &str,
        password: &Secret<String>,
    ) -> Result<Option<Timed<Reply>>, SmtpError> {
        match self.pump.core.extensions().auth_step(policy, tls)? {
            crate::AuthStep::Skip => Ok(None),
            crate::AuthStep::Plain => self.auth_plain(user, password).await.map(Some),
            crate::AuthStep::Login => self.auth_login(user, password).await.map(Some),
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
        self.pump.core.send_mail(from, recipients, message)?;
        match self.run(stopwatch).await? {
            Completion::Transaction(outcome) => Ok(stopwatch.finish(*outcome)),
            _ => Err(mismatch()),
        }
    }

    /// RSET.
    pub async fn rset(&mut self) -> Result<Timed<Reply>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.pump.core.rset()?;
        self.simple(stopwatch).await
    }

    /// NOOP.
    pub async fn noop(&mut self) -> Result<Timed<Reply>, SmtpError> {
        let stopwatch = Stopwatch::start();
        self.pump.core.noop()?;
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
        self.pump.core.quit()?;
        let reply = match self.run(stopwatch).await? {
            Completion::Quit(reply) => reply,
            _ => return Err(mismatch()),
        };
        let timed = stopwatch.finish(reply);
        // The server closes too; a failed shutdown changes nothing measured.
        let _ = tokio::time::timeout(self.timeout, self.pump.stream.shutdown()).await;
        Ok(timed)
    }

    /// Runs the session's current operation to its end, within the timeout.
    async fn run(&mut self, stopwatch: Stopwatch) -> Result<Completion, SmtpError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let completion = self.pump.next_event(&stopwatch, Some(deadline)).await;
        self.pump.release_read_buffer();
        let error = match completion {
            Ok(completion) => return Ok(completion),
            // The session poisons itself on protocol errors; the others
            // happen outside it.
            Err(PumpError::Core(error)) => error,
            Err(PumpError::Transport(error)) => SmtpError::Transport(error),
            Err(PumpError::DeadlineExceeded) => SmtpError::Timeout {
                during: self.pump.core.current_command(),
                after: self.timeout,
            },
            Err(PumpError::Closed) => SmtpError::ConnectionClosed {
                during: self.pump.core.current_command(),
                partial: Vec::new(),
            },
        };
        if !error.is_recoverable() {
            self.pump.core.poison();
        }
        Err(error)
    }
}

/// The session ended an operation other than the one the driver started:
/// a bug here, reported rather than panicked on.
fn mismatch() -> SmtpError {
    SmtpError::InvalidState("the session finished a different operation than the one started")
}
