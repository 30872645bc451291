//! Issue 26 item 15: a connect that times out names the step that did
//! ("CONNECT timed out after 10s" covered the greeting and the TLS handshake
//! too, and blamed the wrong one). The servers are loopback listeners that
//! accept and then say nothing; the timeouts are short, and no duration is
//! asserted.
#![allow(clippy::unwrap_used)] // tests fail loudly

use std::time::Duration;

use peakhour_imap::{ImapConnection, ImapError};
use peakhour_net::{Security, TlsSettings};
use tokio::net::TcpListener;

/// A listener that accepts connections and keeps them open, silent.
async fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        // Bounded: the tests below connect once each.
        for _ in 0..4 {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            held.push(stream);
        }
    });
    port
}

const TIMEOUT: Duration = Duration::from_millis(300);

#[tokio::test]
async fn issue_26_item_15_a_server_that_never_greets_is_named_as_the_greeting_timing_out() {
    let port = silent_server().await;
    let error = ImapConnection::connect("127.0.0.1", port, Security::Plain, None, TIMEOUT)
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(error, ImapError::Timeout { .. }), "{error:?}");
    let said = error.to_string();
    assert!(said.contains("greeting"), "{said}");
    assert!(
        !said.contains("CONNECT") && !said.contains("connecting"),
        "{said}"
    );
}

#[tokio::test]
async fn issue_26_item_15_a_server_that_never_answers_the_tls_handshake_is_named_so() {
    let port = silent_server().await;
    let tls = TlsSettings {
        verify: false,
        extra_ca_file: None,
        use_system_roots: false,
    }
    .client_config()
    .unwrap();
    let error =
        ImapConnection::connect("127.0.0.1", port, Security::ImplicitTls, Some(tls), TIMEOUT)
            .await
            .map(|_| ())
            .unwrap_err();
    let said = error.to_string();
    assert!(said.contains("TLS handshake"), "{said}");
    assert!(said.contains("timed out"), "{said}");
    assert!(!said.contains("connecting to"), "{said}");
}
