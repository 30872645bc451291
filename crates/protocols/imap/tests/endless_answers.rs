//! A hostile server that answers one FETCH with untagged responses that
//! never end: the client stops at its collection limit with a clear error,
//! having held at most that much (issue 11, point 5).
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use peakhour_imap::{FetchItem, ImapConnection, ImapError, Limits};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// Greets, then answers the first command with `* n FETCH (BODY[] {1024}...)`
/// forever, counting the bytes it manages to write.
async fn endless_server(stream: tokio::io::DuplexStream, written: Arc<AtomicU64>) {
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = BufReader::new(read).lines();
    write
        .write_all(b"* OK [CAPABILITY IMAP4rev1] hostile\r\n")
        .await
        .unwrap();
    let Ok(Some(_command)) = lines.next_line().await else {
        return;
    };
    let body = vec![b'x'; 1024];
    for n in 1_u64.. {
        let mut response = format!("* {n} FETCH (UID {n} BODY[] {{1024}}\r\n").into_bytes();
        response.extend_from_slice(&body);
        response.extend_from_slice(b")\r\n");
        if write.write_all(&response).await.is_err() {
            return; // the client gave up and closed
        }
        written.fetch_add(response.len() as u64, Ordering::Relaxed);
    }
}

#[tokio::test]
async fn issue_11_endless_untagged_fetch_literals_stop_at_the_collection_limit() {
    const CAP: u64 = 1 << 20;
    let (client, server) = tokio::io::duplex(16 * 1024);
    let written = Arc::new(AtomicU64::new(0));
    let serving = tokio::spawn(endless_server(server, written.clone()));
    let limits = Limits {
        max_collected_bytes: CAP,
        ..Limits::default()
    };
    let mut imap = ImapConnection::from_stream(client, limits)
        .await
        .unwrap()
        .value;
    let error = imap
        .fetch("1:*", &[FetchItem::Uid], false)
        .await
        .unwrap_err();
    match &error {
        ImapError::Malformed { reason, .. } => {
            assert!(reason.contains("exceeded the client's limit"), "{error}");
        }
        other => panic!("expected the collection limit, got {other}"),
    }
    assert_eq!(error.kind(), "malformed");
    assert!(!error.is_recoverable(), "the connection must be dropped");
    drop(imap);
    serving.await.unwrap();
    // What the server got through is the limit plus what was in flight (the
    // pipe's buffer, one read, one response): memory stayed bounded.
    let sent = written.load(Ordering::Relaxed);
    assert!(sent > CAP, "{sent}");
    assert!(sent < CAP + 64 * 1024, "{sent}");
}

#[tokio::test]
async fn issue_11_endless_small_responses_stop_at_the_response_count_limit() {
    let (client, server) = tokio::io::duplex(16 * 1024);
    let serving = tokio::spawn(async move {
        let (read, mut write) = tokio::io::split(server);
        let mut lines = BufReader::new(read).lines();
        write.write_all(b"* OK hostile\r\n").await.unwrap();
        let _ = lines.next_line().await;
        // Tiny SEARCH results, never a completion.
        while write.write_all(b"* SEARCH 1\r\n").await.is_ok() {}
    });
    let limits = Limits {
        max_collected_responses: 10_000,
        ..Limits::default()
    };
    let mut imap = ImapConnection::from_stream(client, limits)
        .await
        .unwrap()
        .value;
    let error = imap
        .search(&peakhour_imap::SearchKey::All, false)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("exceeded the client's limit"),
        "{error}"
    );
    drop(imap);
    serving.await.unwrap();
}
