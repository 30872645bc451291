//! How the engine opens its IMAP and SMTP connections.
//!
//! A run reaches its servers through a [`Connector`]: [`NetConnector`] opens
//! TCP (and TLS) connections to the target's endpoints, and a test can plug
//! in one that hands out in-memory streams (`tokio::io::duplex`) to a fake
//! server in the same process, so that a whole run can be driven on tokio's
//! paused clock. The protocol drivers are generic over the stream, so
//! everything above the connector is the same code either way.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use peakhour_imap::{ImapConnection, ImapError};
use peakhour_net::{Timed, Transport};
use peakhour_smtp::{Flavor, SmtpConnection, SmtpError};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::target::{Endpoint, Target, TlsMode, imap_connect_deadline};

/// Opens the connections of a run: the IMAP session of each user, one SMTP
/// session per send, and the reconciliation's searches.
///
/// Every method returns once the server's greeting has been read; the
/// engine says EHLO, logs in and times each step itself. The engine puts its
/// own deadline around every call (a connect, its TLS handshake and the
/// greeting within the connect timeout; STARTTLS too), so a connector need
/// not be trusted to honour `timeout`.
pub trait Connector: Send + Sync + 'static {
    /// The byte stream the drivers run over.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static;

    /// Connects to `endpoint` and reads the IMAP greeting.
    fn connect_imap(
        &self,
        endpoint: &Endpoint,
        tls: &Arc<rustls::ClientConfig>,
        timeout: Duration,
    ) -> impl Future<Output = Result<Timed<ImapConnection<Self::Stream>>, ImapError>> + Send;

    /// STARTTLS on an IMAP connection, for an endpoint that asks for it.
    fn starttls_imap(
        &self,
        imap: &mut ImapConnection<Self::Stream>,
        endpoint: &Endpoint,
        tls: &Arc<rustls::ClientConfig>,
    ) -> impl Future<Output = Result<Timed<()>, ImapError>> + Send;

    /// Connects to `endpoint` and reads the SMTP (or LMTP) greeting.
    fn connect_smtp(
        &self,
        endpoint: &Endpoint,
        flavor: Flavor,
        tls: &Arc<rustls::ClientConfig>,
        timeout: Duration,
    ) -> impl Future<Output = Result<Timed<SmtpConnection<Self::Stream>>, SmtpError>> + Send;

    /// STARTTLS on an SMTP connection, for an endpoint that asks for it.
    fn starttls_smtp(
        &self,
        smtp: &mut SmtpConnection<Self::Stream>,
        endpoint: &Endpoint,
        tls: &Arc<rustls::ClientConfig>,
    ) -> impl Future<Output = Result<Timed<()>, SmtpError>> + Send;
}

/// The real connector: TCP to the endpoint's host and port (from its source
/// address when it names one), TLS from the first byte or after STARTTLS as
/// the endpoint's URL says.
#[derive(Debug, Clone, Copy, Default)]
pub struct NetConnector;

impl Connector for NetConnector {
    type Stream = Transport;

    async fn connect_imap(
        &self,
        endpoint: &Endpoint,
        tls: &Arc<rustls::ClientConfig>,
        timeout: Duration,
    ) -> Result<Timed<ImapConnection>, ImapError> {
        ImapConnection::connect_from(
            endpoint.source,
            &endpoint.host,
            endpoint.port,
            endpoint.security(),
            Some(tls.clone()),
            timeout,
        )
        .await
    }

    async fn starttls_imap(
        &self,
        imap: &mut ImapConnection,
        endpoint: &Endpoint,
        tls: &Arc<rustls::ClientConfig>,
    ) -> Result<Timed<()>, ImapError> {
        imap.starttls(&endpoint.host, tls.clone()).await
    }

    async fn connect_smtp(
        &self,
        endpoint: &Endpoint,
        flavor: Flavor,
        tls: &Arc<rustls::ClientConfig>,
        timeout: Duration,
    ) -> Result<Timed<SmtpConnection>, SmtpError> {
        SmtpConnection::connect_from(
            endpoint.source,
            &endpoint.host,
            endpoint.port,
            flavor,
            endpoint.security(),
            Some(tls.clone()),
            timeout,
        )
        .await
    }

    async fn starttls_smtp(
        &self,
        smtp: &mut SmtpConnection,
        endpoint: &Endpoint,
        tls: &Arc<rustls::ClientConfig>,
    ) -> Result<Timed<()>, SmtpError> {
        smtp.starttls(&endpoint.host, tls.clone()).await
    }
}

/// Connects to the target's IMAP endpoint, with STARTTLS when its URL asks
/// for it; for sessions whose steps are not timed one by one (preflight,
/// reconciliation). Connecting, the TLS handshake, the greeting and
/// STARTTLS must together take less than `timeout` (a connector is not
/// trusted to bound them itself), and every later command gets
/// `command_timeout`.
pub(crate) async fn open_imap<C: Connector>(
    connector: &C,
    target: &Target,
    timeout: Duration,
    command_timeout: Duration,
) -> Result<ImapConnection<C::Stream>, ImapError> {
    let endpoint = &target.imap;
    let connect = async {
        let mut imap = connector
            .connect_imap(endpoint, &target.tls, timeout)
            .await?
            .value;
        imap.set_command_timeout(Some(command_timeout));
        if endpoint.tls == TlsMode::StartTls {
            connector
                .starttls_imap(&mut imap, endpoint, &target.tls)
                .await?;
        }
        Ok(imap)
    };
    imap_connect_deadline(timeout, connect).await
}
