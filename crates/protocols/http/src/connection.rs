//! The thin tokio driver: one kept-alive connection per simulated user.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use peakhour_net::{Security, Stopwatch, Timed, Transport, TransportError};
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::auth::BasicAuth;
use crate::client::HttpClient;
use crate::decoder::{BodyEvent, Limits, ProtocolError};
use crate::request::{Request, RequestError};
use crate::response::{Response, ResponseHead};
use crate::{Progress, excerpt};

/// Everything that can go wrong with a request. A response with any status
/// code is not an error here: the protocol on top decides what a 404 means.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Connecting, the TLS handshake, reading or writing failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The server broke HTTP/1.1 or a size limit.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The request could not be sent.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The whole exchange (connect included) took longer than allowed. The
    /// connection is closed; the next request opens a new one.
    #[error("request timed out after {after:?}")]
    Timeout {
        /// The time allowed.
        after: Duration,
    },
}

impl HttpError {
    /// A stable label for counting errors by kind (`timeout`,
    /// `body-too-large`, ...; words joined with `-`).
    pub fn kind(&self) -> &'static str {
        match self {
            HttpError::Transport(TransportError::Connect { .. }) => "connect",
            HttpError::Transport(TransportError::ConnectTimeout { .. }) => "connect-timeout",
            HttpError::Transport(TransportError::Handshake { .. }) => "tls-handshake",
            HttpError::Transport(_) => "io",
            HttpError::Protocol(error) => error.kind(),
            HttpError::Request(_) => "bad-request",
            HttpError::Timeout { .. } => "timeout",
        }
    }

    /// Always false: after any of these the connection is closed (the next
    /// request opens a new one). A response with an error status is not an
    /// `HttpError`.
    pub fn is_recoverable(&self) -> bool {
        false
    }
}

/// Opens connections to one server. [`Endpoint`] is the real one; tests give
/// in-memory streams.
pub trait Dial {
    /// The stream a connection runs over.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug;
    /// Opens a new connection.
    fn dial(&self) -> impl Future<Output = Result<Self::Stream, TransportError>> + Send;
    /// The `Host` header value for this server.
    fn host_header(&self) -> String;
}

/// A server's address and how to reach it.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Host name or IP address (also the TLS server name).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Plain or TLS from the first byte (HTTP has no STARTTLS).
    pub security: Security,
    /// Needed for [`Security::ImplicitTls`]; build it once and share it.
    pub tls: Option<Arc<ClientConfig>>,
    /// Time allowed for TCP connect plus TLS handshake.
    pub connect_timeout: Duration,
    /// The local address to connect from; `None` leaves it to the kernel
    /// (see [`Transport::connect_from`]).
    pub source: Option<std::net::IpAddr>,
}

impl Dial for Endpoint {
    type Stream = Transport;

    fn dial(&self) -> impl Future<Output = Result<Transport, TransportError>> + Send {
        Transport::connect_from(
            self.source,
            &self.host,
            self.port,
            self.security,
            self.tls.clone(),
            self.connect_timeout,
        )
    }

    fn host_header(&self) -> String {
        let default_port = match self.security {
            Security::Plain => 80,
            Security::ImplicitTls => 443,
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host) // an IPv6 literal
        } else {
            self.host.clone()
        };
        if self.port == default_port {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// How a connection behaves.
#[derive(Debug, Clone)]
pub struct ConnectionOptions {
    /// Sent on every request, if given.
    pub auth: Option<BasicAuth>,
    /// Size limits on responses.
    pub limits: Limits,
    /// Time allowed for one whole exchange: connecting if needed, writing the
    /// request, reading the whole response.
    pub request_timeout: Duration,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            auth: None,
            limits: Limits::default(),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// How much the driver reads at a time.
const READ_CHUNK: usize = 16 * 1024;

/// One user's HTTP/1.1 connection to one server, kept alive between requests.
///
/// It connects on the first request and whenever the last response said the
/// connection ends (`Connection: close`, a close-delimited body) or an error
/// left it in an unknown state. When a kept-alive connection turns out to have
/// been closed by the server before any byte of the response came back (the
/// server's idle timeout raced our request), an idempotent request is sent
/// again, once, on a new connection; that is what browsers and hyper do.
///
/// Every request returns a [`Timed`] response, timed from the start of the
/// exchange (including the connect, when one was needed) to the last byte of
/// the body parsed.
#[derive(Debug)]
pub struct HttpConnection<D: Dial = Endpoint> {
    dialer: D,
    stream: Option<D::Stream>,
    core: HttpClient,
    read_buf: Vec<u8>,
    request_timeout: Duration,
    connects: u64,
}

impl<D: Dial> HttpConnection<D> {
    /// A connection that dials on first use.
    pub fn new(dialer: D, options: ConnectionOptions) -> Self {
        let core = HttpClient::new(dialer.host_header(), options.auth, options.limits);
        Self {
            dialer,
            stream: None,
            core,
            read_buf: Vec::with_capacity(READ_CHUNK),
            request_timeout: options.request_timeout,
            connects: 0,
        }
    }

    /// What this connection dials (to open a second connection to the same
    /// server, such as a push stream).
    pub fn dialer(&self) -> &D {
        &self.dialer
    }

    /// How many connections have been opened so far (1 for a user whose
    /// connection was kept alive throughout).
    pub fn connects(&self) -> u64 {
        self.connects
    }

    /// True if a connection is open now.
    pub fn is_connected(&self) -> bool {
        self.stream.is_some()
    }

    /// The credentials' user, if any.
    pub fn user(&self) -> Option<&str> {
        self.core.user()
    }

    /// Closes the connection now (the next request opens a new one).
    pub fn close(&mut self) {
        self.stream = None;
        self.core.reset();
    }

    /// Sends `request` and reads its whole response, within the request
    /// timeout. Not cancel-safe: dropping the future leaves the connection in
    /// an unknown state, so the next request reconnects.
    pub async fn request(&mut self, request: &Request) -> Result<Timed<Response>, HttpError> {
        let watch = Stopwatch::start();
        let after = self.request_timeout;
        if self.core.is_busy() || !self.core.pending_output().is_empty() {
            // An earlier request's future was dropped mid-exchange: what the
            // server has read and sent is unknown, so start afresh.
            self.close();
        }
        let result = match tokio::time::timeout(after, self.exchange_with_retry(request)).await {
            Ok(result) => result,
            Err(_elapsed) => Err(HttpError::Timeout { after }),
        };
        match result {
            Ok(response) => {
                if !response.head.keep_alive {
                    self.close();
                }
                Ok(watch.finish(response))
            }
            Err(error) => {
                self.close();
                Err(error)
            }
        }
    }

    async fn exchange_with_retry(&mut self, request: &Request) -> Result<Response, HttpError> {
        let reused = self.stream.is_some();
        match self.exchange(request).await {
            Err(error)
                if reused
                    && request.method().is_idempotent()
                    && !self.core.received_any()
                    && is_stale_connection(&error) =>
            {
                self.close();
                self.exchange(request).await
            }
            other => other,
        }
    }

    async fn exchange(&mut self, request: &Request) -> Result<Response, HttpError> {
        self.start(request, true).await?;
        loop {
            if let Progress::Event(response) = self.core.next_response()? {
                return Ok(response);
            }
            self.read_more().await?;
        }
    }

    /// Connects if needed, queues the request and writes it.
    async fn start(&mut self, request: &Request, collect: bool) -> Result<(), HttpError> {
        if self.stream.is_none() {
            self.core.reset();
            let stream = self.dialer.dial().await?;
            self.connects += 1;
            self.stream = Some(stream);
        }
        if collect {
            self.core.send(request)?;
        } else {
            self.core.send_streaming(request)?;
        }
        let stream = self.stream.as_mut().ok_or_else(unusable)?;
        stream
            .write_all(self.core.pending_output())
            .await
            .map_err(TransportError::Io)?;
        stream.flush().await.map_err(TransportError::Io)?;
        let written = self.core.pending_output().len();
        self.core.consume_output(written);
        Ok(())
    }

    /// Reads once from the stream into the core; at end of stream tells the
    /// core, which then completes or fails the response.
    async fn read_more(&mut self) -> Result<(), HttpError> {
        let stream = self.stream.as_mut().ok_or_else(unusable)?;
        self.read_buf.clear();
        let n = stream
            .read_buf(&mut self.read_buf)
            .await
            .map_err(TransportError::Io)?;
        if n == 0 {
            self.core.input_closed();
        } else {
            self.core.enqueue_input(&self.read_buf);
        }
        Ok(())
    }

    /// Sends `request` and returns as soon as its head has arrived; the body
    /// is then read piece by piece from the [`ResponseStream`], which owns the
    /// connection (an event stream never ends by itself). Only the time to
    /// the head is bounded by the request timeout.
    pub async fn stream(
        mut self,
        request: &Request,
    ) -> Result<Timed<ResponseStream<D>>, HttpError> {
        let watch = Stopwatch::start();
        let after = self.request_timeout;
        let head = async {
            self.start(request, false).await?;
            loop {
                match self.core.next_event()? {
                    Progress::Event(BodyEvent::Head(head)) => return Ok(head),
                    Progress::Event(_) => {
                        return Err(HttpError::Protocol(ProtocolError::Closed {
                            mid_response: true,
                        }));
                    }
                    Progress::NeedMoreInput => self.read_more().await?,
                }
            }
        };
        let head = match tokio::time::timeout(after, head).await {
            Ok(result) => result?,
            Err(_elapsed) => return Err(HttpError::Timeout { after }),
        };
        Ok(watch.finish(ResponseStream {
            connection: self,
            head,
            ended: false,
        }))
    }
}

fn unusable() -> HttpError {
    HttpError::Transport(TransportError::Io(std::io::Error::other(
        "no connection (client bug)",
    )))
}

/// True for the failures a server's idle close of a kept-alive connection
/// causes: EOF before the response, a reset, or a broken pipe on write.
fn is_stale_connection(error: &HttpError) -> bool {
    use std::io::ErrorKind;
    match error {
        HttpError::Protocol(ProtocolError::Closed {
            mid_response: false,
        }) => true,
        HttpError::Transport(TransportError::Io(io)) => matches!(
            io.kind(),
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionAborted
        ),
        _ => false,
    }
}

/// A response whose body is read as it arrives (for `text/event-stream`).
#[derive(Debug)]
pub struct ResponseStream<D: Dial = Endpoint> {
    connection: HttpConnection<D>,
    head: ResponseHead,
    ended: bool,
}

impl<D: Dial> ResponseStream<D> {
    /// The status line and headers.
    pub fn head(&self) -> &ResponseHead {
        &self.head
    }

    /// The next piece of the body, or `None` once it has ended. Cancel-safe:
    /// a dropped call loses no bytes, so it can run under a timeout or in a
    /// `select!`.
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, HttpError> {
        while !self.ended {
            match self.connection.core.next_event()? {
                Progress::Event(BodyEvent::Data(bytes)) => return Ok(Some(bytes)),
                Progress::Event(BodyEvent::End) => self.ended = true,
                Progress::Event(BodyEvent::Head(_)) => {
                    return Err(ProtocolError::MalformedHead {
                        reason: "a second head in one response".into(),
                        excerpt: excerpt(b""),
                    }
                    .into());
                }
                Progress::NeedMoreInput => self.connection.read_more().await?,
            }
        }
        Ok(None)
    }
}
