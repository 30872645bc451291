use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// How a driver sets up TLS, for implicit TLS (`imaps://`, `submissions://`)
/// and for STARTTLS alike.
///
/// Certificates are verified by default, against the system's trust store plus
/// any `extra_ca_file` (the lab writes its own CA there). Turning verification
/// off takes an explicit `verify: false`, which the command line exposes only as
/// a flag named for what it does (`--insecure-skip-tls-verify`).
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// Verify the server's certificate chain and name. On by default.
    pub verify: bool,
    /// A PEM file of extra trusted CA certificates.
    pub extra_ca_file: Option<PathBuf>,
    /// Load the operating system's trust store as well (default true).
    pub use_system_roots: bool,
}

impl Default for TlsSettings {
    fn default() -> Self {
        Self {
            verify: true,
            extra_ca_file: None,
            use_system_roots: true,
        }
    }
}

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The CA file could not be read or held no certificate.
    #[error("cannot read CA certificates from {path}: {reason}")]
    CaFile {
        /// The file named in the settings.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// rustls refused a certificate.
    #[error("invalid CA certificate: {0}")]
    Certificate(#[from] rustls::Error),
    /// The host name is not a valid TLS server name.
    #[error("{0:?} is not a valid TLS server name")]
    ServerName(String),
}

impl TlsSettings {
    /// Builds the rustls client configuration these settings describe.
    ///
    /// Build it once and share the `Arc` between connections: loading the
    /// system trust store costs milliseconds.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Certificate)?;
        let config = if self.verify {
            let mut roots = RootCertStore::empty();
            let mut pinned = Vec::new();
            if self.use_system_roots {
                // A system store with a few unreadable entries is still useful.
                let loaded = rustls_native_certs::load_native_certs();
                let (_added, _ignored) = roots.add_parsable_certificates(loaded.certs);
            }
            if let Some(path) = &self.extra_ca_file {
                let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                    .and_then(|iter| iter.collect::<Result<_, _>>())
                    .map_err(|e| TlsError::CaFile {
                        path: path.clone(),
                        reason: e.to_string(),
                    })?;
                if certs.is_empty() {
                    return Err(TlsError::CaFile {
                        path: path.clone(),
                        reason: "no PEM certificate in the file".into(),
                    });
                }
                for cert in &certs {
                    roots.add(cert.clone())?;
                }
                pinned = certs;
            }
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| TlsError::CaFile {
                    path: self.extra_ca_file.clone().unwrap_or_default(),
                    reason: e.to_string(),
                })?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinnedOrWebPki { webpki, pinned }))
                .with_no_client_auth()
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
                .with_no_client_auth()
        };
        Ok(Arc::new(config))
    }
}

/// Parses a host name or IP address into a rustls server name.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(host.to_owned()).map_err(|_| TlsError::ServerName(host.to_owned()))
}

/// The verifier behind `verify: true`: the usual chain and name checks
/// (webpki), except that a server presenting exactly a certificate of the
/// `--ca-file` is trusted as that server. `openssl req -x509` makes such a
/// certificate, a CA that is also the server's own; webpki refuses it as
/// `CaUsedAsEndEntity`, while OpenSSL (and so Python) accepts it. The
/// comparison is of the whole certificate, byte for byte.
#[derive(Debug)]
struct PinnedOrWebPki {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for PinnedOrWebPki {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => Ok(verified),
            Err(_)
                if self
                    .pinned
                    .iter()
                    .any(|p| p.as_ref() == end_entity.as_ref()) =>
            {
                Ok(ServerCertVerified::assertion())
            }
            Err(error) => Err(error),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The verifier behind `verify: false`: it still checks that the handshake
/// signatures are valid, but accepts any certificate chain and name.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
