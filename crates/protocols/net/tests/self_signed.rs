//! Issue 12: a server whose certificate is self-signed (`openssl req -x509`:
//! a CA that is also the server's own certificate) is trusted when that
//! certificate is given as `--ca-file`, as Python's ssl module trusts it;
//! any other CA file fails with a message that says what to do. The server
//! is tokio-rustls on loopback with a certificate the openssl command makes.
#![allow(clippy::unwrap_used)] // tests fail loudly

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use peakhour_net::{TlsSettings, Transport};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `openssl req -x509` as the usual instructions give it, for 127.0.0.1.
fn self_signed(dir: &Path, name: &str) -> std::path::PathBuf {
    let cert = dir.join(format!("{name}.pem"));
    let key = dir.join(format!("{name}.key"));
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    cert
}

/// A TLS server on loopback that says hello to each client; returns its port.
async fn serve(cert: &Path) -> u16 {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(cert.with_extension("key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        // Two clients at most: bounded.
        for _ in 0..2 {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            if let Ok(mut tls) = acceptor.accept(tcp).await {
                let _ = tls.write_all(b"hello\n").await;
                let _ = tls.shutdown().await;
            }
        }
    });
    port
}

fn settings(ca_file: &Path) -> Arc<rustls::ClientConfig> {
    TlsSettings {
        verify: true,
        extra_ca_file: Some(ca_file.to_owned()),
        use_system_roots: false,
    }
    .client_config()
    .unwrap()
}

#[tokio::test]
async fn issue_12_a_self_signed_certificate_given_as_ca_file_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let server = self_signed(dir.path(), "server");
    let other = self_signed(dir.path(), "other");
    let port = serve(&server).await;
    let timeout = Duration::from_secs(5);

    let mut tls = Transport::connect_tls("127.0.0.1", port, timeout, settings(&server))
        .await
        .unwrap();
    let mut hello = String::new();
    let _ = tls.read_to_string(&mut hello).await;
    assert_eq!(hello, "hello\n");

    let Err(refused) = Transport::connect_tls("127.0.0.1", port, timeout, settings(&other)).await
    else {
        panic!("another certificate is not trusted");
    };
    let message = refused.to_string();
    assert!(message.contains("--ca-file"), "{message}");
    assert!(
        message.contains("TLS handshake with 127.0.0.1 failed"),
        "{message}"
    );
    assert!(
        std::error::Error::source(&refused).is_none(),
        "the reason is in the message once, not again as a source: {message}"
    );
}
