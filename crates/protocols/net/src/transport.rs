use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::tls::{TlsError, server_name};

/// How a connection is secured when it is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Security {
    /// Plain TCP; the protocol may still upgrade with STARTTLS/STLS.
    #[default]
    Plain,
    /// TLS from the first byte (`imaps://`, `pop3s://`, `submissions://`).
    ImplicitTls,
}

/// A connection to a server: plain TCP, or TCP wrapped in TLS.
///
/// Drivers start plain and call [`Transport::upgrade`] after a successful
/// STARTTLS/STLS, or connect with TLS from the start for implicit-TLS ports.
#[derive(Debug)]
pub enum Transport {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP. Boxed: the TLS state is large and most connections are plain.
    Tls(Box<TlsStream<CountedTcp>>),
    /// Left behind for a moment while a plain stream is being upgraded.
    Upgrading,
}

/// Why a connection could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// TCP connect failed (refused, unreachable, ...).
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The address tried.
        addr: String,
        /// The operating system's reason.
        source: io::Error,
    },
    /// Connect did not finish within the time allowed.
    #[error("connecting to {addr} timed out after {after:?}")]
    ConnectTimeout {
        /// The address tried.
        addr: String,
        /// The time allowed.
        after: Duration,
    },
    /// The TLS configuration was unusable.
    #[error(transparent)]
    TlsConfig(#[from] TlsError),
    /// The TLS handshake failed (for example: certificate not trusted),
    /// with what to do about it when the reason says.
    #[error("TLS handshake with {host} failed: {reason}{}", handshake_hint(.reason))]
    Handshake {
        /// The server name used for verification.
        host: String,
        /// The reason rustls gave (not a `source`: it is in this message
        /// already, and a chain would print it twice).
        reason: io::Error,
    },
    /// The TLS handshake did not finish within the time left of the connect
    /// timeout (the TCP connect was quicker).
    #[error("the TLS handshake with {host} timed out after {after:?}")]
    HandshakeTimeout {
        /// The server name used for verification.
        host: String,
        /// The connect timeout, which the TCP connect and the handshake share.
        after: Duration,
    },
    /// Implicit TLS was asked for without a TLS configuration.
    #[error("TLS was requested but no TLS configuration was given")]
    NoTlsConfig,
    /// STARTTLS on a stream that is already TLS.
    #[error("the connection already uses TLS")]
    AlreadyTls,
    /// Reading or writing failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
}

impl Transport {
    /// Opens a plain TCP connection to `host:port` within `timeout`.
    pub async fn connect_plain(
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Self, TransportError> {
        Self::connect_plain_from(None, host, port, timeout).await
    }

    /// [`Transport::connect_plain`] from the local address `source` when
    /// given: one generator spreads its connections over several source
    /// addresses when one address has too few ephemeral ports for them all.
    pub async fn connect_plain_from(
        source: Option<IpAddr>,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Self, TransportError> {
        let addr = format!("{host}:{port}");
        let connecting = async {
            match source {
                None => TcpStream::connect(&addr).await,
                Some(source) => connect_bound(source, &addr).await,
            }
        };
        let stream = match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(source)) => return Err(TransportError::Connect { addr, source }),
            Err(_) => {
                return Err(TransportError::ConnectTimeout {
                    addr,
                    after: timeout,
                });
            }
        };
        // Commands are small and latency is what we measure: never wait for Nagle.
        stream.set_nodelay(true)?;
        Ok(Self::Plain(stream))
    }

    /// Opens a TCP connection and performs the TLS handshake at once (implicit TLS).
    pub async fn connect_tls(
        host: &str,
        port: u16,
        timeout: Duration,
        config: Arc<ClientConfig>,
    ) -> Result<Self, TransportError> {
        Self::connect_tls_from(None, host, port, timeout, config).await
    }

    /// [`Transport::connect_tls`] from the local address `source` when given.
    pub async fn connect_tls_from(
        source: Option<IpAddr>,
        host: &str,
        port: u16,
        timeout: Duration,
        config: Arc<ClientConfig>,
    ) -> Result<Self, TransportError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let plain = Self::connect_plain_from(source, host, port, timeout).await?;
        // A server that accepts and never answers the ClientHello is named
        // as such, not as a slow connect.
        tokio::time::timeout_at(deadline, plain.into_tls(host, config))
            .await
            .unwrap_or_else(|_| {
                Err(TransportError::HandshakeTimeout {
                    host: host.to_owned(),
                    after: timeout,
                })
            })
    }

    /// Opens a connection secured as `security` says. `tls` is needed only for
    /// [`Security::ImplicitTls`]; a missing config there is a configuration bug
    /// reported as an error, not a panic.
    pub async fn connect(
        host: &str,
        port: u16,
        security: Security,
        tls: Option<Arc<ClientConfig>>,
        timeout: Duration,
    ) -> Result<Self, TransportError> {
        Self::connect_from(None, host, port, security, tls, timeout).await
    }

    /// [`Transport::connect`] from the local address `source` when given.
    pub async fn connect_from(
        source: Option<IpAddr>,
        host: &str,
        port: u16,
        security: Security,
        tls: Option<Arc<ClientConfig>>,
        timeout: Duration,
    ) -> Result<Self, TransportError> {
        match (security, tls) {
            (Security::Plain, _) => Self::connect_plain_from(source, host, port, timeout).await,
            (Security::ImplicitTls, Some(config)) => {
                Self::connect_tls_from(source, host, port, timeout, config).await
            }
            (Security::ImplicitTls, None) => Err(TransportError::NoTlsConfig),
        }
    }

    /// Wraps this plain connection in TLS (after STARTTLS was accepted).
    pub async fn upgrade(
        &mut self,
        host: &str,
        config: Arc<ClientConfig>,
    ) -> Result<(), TransportError> {
        let plain = std::mem::replace(self, Transport::Upgrading);
        *self = plain.into_tls(host, config).await?;
        Ok(())
    }

    async fn into_tls(self, host: &str, config: Arc<ClientConfig>) -> Result<Self, TransportError> {
        let Transport::Plain(tcp) = self else {
            return Err(TransportError::AlreadyTls);
        };
        let name = server_name(host)?;
        let tls = TlsConnector::from(config)
            .connect(name, CountedTcp(tcp))
            .await
            .map_err(|reason| TransportError::Handshake {
                host: host.to_owned(),
                reason,
            })?;
        Ok(Transport::Tls(Box::new(tls)))
    }

    /// True once the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        matches!(self, Transport::Tls(_))
    }

    /// Reads whatever is available into `buf`, appending. Returns the number of
    /// bytes read; 0 means the server closed the connection.
    pub async fn read_some(&mut self, buf: &mut Vec<u8>) -> Result<usize, TransportError> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.read(&mut chunk).await?;
        buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Writes all of `bytes` and flushes.
    pub async fn send(&mut self, bytes: &[u8]) -> Result<(), TransportError> {
        self.write_all(bytes).await?;
        self.flush().await?;
        Ok(())
    }
}

/// Connects to `addr` from `source` (port chosen by the kernel): the first
/// of `addr`'s addresses in `source`'s family.
async fn connect_bound(source: IpAddr, addr: &str) -> io::Result<TcpStream> {
    let mut last = None;
    for remote in tokio::net::lookup_host(addr).await? {
        if remote.is_ipv4() != source.is_ipv4() {
            continue;
        }
        let socket = if remote.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.bind(SocketAddr::new(source, 0))?;
        match socket.connect(remote).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            format!("{addr} has no address in the family of the source address {source}"),
        )
    }))
}

fn upgrading_error() -> io::Error {
    io::Error::other("transport used while a TLS upgrade was in progress")
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => counted_read(Pin::new(s), cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Transport::Upgrading => Poll::Ready(Err(upgrading_error())),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(s) => counted_write(Pin::new(s), cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Transport::Upgrading => Poll::Ready(Err(upgrading_error())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Transport::Upgrading => Poll::Ready(Err(upgrading_error())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Transport::Upgrading => Poll::Ready(Ok(())),
        }
    }
}

/// A TCP stream under TLS whose bytes are counted ([`crate::wire_bytes`]),
/// so that a TLS connection counts what crosses the network, records and
/// handshake included.
#[derive(Debug)]
pub struct CountedTcp(TcpStream);

fn counted_read<S: AsyncRead>(
    stream: Pin<&mut S>,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    let before = buf.filled().len();
    let polled = stream.poll_read(cx, buf);
    if let Poll::Ready(Ok(())) = polled {
        crate::wire::count_received(buf.filled().len() - before);
    }
    polled
}

fn counted_write<S: AsyncWrite>(
    stream: Pin<&mut S>,
    cx: &mut Context<'_>,
    buf: &[u8],
) -> Poll<io::Result<usize>> {
    let polled = stream.poll_write(cx, buf);
    if let Poll::Ready(Ok(n)) = polled {
        crate::wire::count_sent(n);
    }
    polled
}

impl AsyncRead for CountedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        counted_read(Pin::new(&mut self.get_mut().0), cx, buf)
    }
}

impl AsyncWrite for CountedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        counted_write(Pin::new(&mut self.get_mut().0), cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

/// What a person can do about a failed handshake, by the reason rustls gave.
fn handshake_hint(reason: &io::Error) -> &'static str {
    let reason = reason.to_string();
    if reason.contains("CaUsedAsEndEntity") || reason.contains("UnknownIssuer") {
        "; the server's certificate is not signed by a CA this client trusts: give that CA \
         with --ca-file (a self-signed certificate may be given as its own CA), or \
         --insecure-skip-tls-verify for a test server you control"
    } else if reason.contains("NotValidForName") {
        "; the certificate is for another name: connect by the name it was issued for"
    } else if reason.contains("InvalidContentType") || reason.contains("corrupt message") {
        "; the server did not answer in TLS: the port may be plain text (imap://, \
         smtp://, submission://) or need STARTTLS first (a +starttls URL)"
    } else {
        ""
    }
}
