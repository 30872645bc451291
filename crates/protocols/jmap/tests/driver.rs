//! The driver against a small loopback server: discovery through a redirect,
//! a method call on the same kept-alive connection, and push on a second one.

use std::time::Duration;

use peakhour_http::{BasicAuth, ConnectionOptions, Endpoint, HttpConnection};
use peakhour_jmap::{JmapClient, JmapError, PushEvent};
use peakhour_net::{Secret, Security};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads one request (head and Content-Length body); returns its request line.
async fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).ok()?;
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .map_or(0, |n| n.parse().unwrap_or(0));
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.ok()?;
    head.lines().next().map(str::to_owned)
}

fn reply(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

const SESSION: &str = r#"{"capabilities":{"urn:ietf:params:jmap:core":{},"urn:ietf:params:jmap:mail":{}},"accounts":{"u1":{"name":"u1"}},"primaryAccounts":{"urn:ietf:params:jmap:mail":"u1"},"username":"u1","apiUrl":"/jmap/","uploadUrl":"/jmap/upload/{accountId}/","eventSourceUrl":"/jmap/es/?types={types}&closeafter={closeafter}&ping={ping}","state":"1"}"#;

#[tokio::test]
async fn discovers_calls_and_receives_a_push_on_a_second_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        // First connection: redirect, session, one API call, one failing call.
        let (mut api, _) = listener.accept().await.unwrap();
        let mut lines = Vec::new();
        for response in [
            reply("302 Found", "Location: /jmap/session\r\n", ""),
            reply("200 OK", "", SESSION),
            reply(
                "200 OK",
                "",
                r#"{"methodResponses":[["Mailbox/get",{"state":"s","list":[{"id":"i","name":"Inbox","role":"inbox"}]},"0"]],"sessionState":"1"}"#,
            ),
            reply(
                "200 OK",
                "",
                r#"{"methodResponses":[["error",{"type":"stateMismatch"},"0"]],"sessionState":"1"}"#,
            ),
        ] {
            lines.push(read_request(&mut api).await.unwrap());
            api.write_all(response.as_bytes()).await.unwrap();
        }
        // Second connection: the event stream.
        let (mut push, _) = listener.accept().await.unwrap();
        lines.push(read_request(&mut push).await.unwrap());
        push.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n: hi\r\n\r\nevent: state\r\ndata: {\"changed\":{\"u1\":{\"Email\":\"s2\"}}}\r\n\r\n",
        )
        .await
        .unwrap();
        // Keep the stream open until the client has read.
        let mut rest = Vec::new();
        let _ = push.read_to_end(&mut rest).await;
        lines
    });
    let endpoint = Endpoint {
        host: "127.0.0.1".into(),
        port,
        security: Security::Plain,
        tls: None,
        connect_timeout: Duration::from_secs(5),
        source: None,
    };
    let options = ConnectionOptions {
        auth: Some(BasicAuth::new("u1", &Secret::new("pw".to_owned()))),
        ..ConnectionOptions::default()
    };
    let mut jmap = JmapClient::new(HttpConnection::new(endpoint, options.clone()));
    jmap.discover().await.unwrap();
    assert_eq!(jmap.account(), "u1");
    let mailboxes = jmap.mailboxes().await.unwrap().value;
    assert_eq!(mailboxes.list[0].role.as_deref(), Some("inbox"));
    let error = jmap.set_keyword("e1", "$seen", true).await.unwrap_err();
    assert!(matches!(&error, JmapError::Method { .. }), "{error}");
    assert_eq!(error.kind(), "method:stateMismatch");
    assert!(error.is_recoverable());
    assert_eq!(
        jmap.http().connects(),
        1,
        "one kept-alive connection for all four"
    );

    let mut push = jmap.event_stream(options, "*", 30).await.unwrap().value;
    let event = tokio::time::timeout(Duration::from_secs(5), push.next())
        .await
        .expect("a push within 5 s")
        .unwrap();
    match event {
        Some(PushEvent::StateChange(change)) => assert!(change.changed("u1", "Email")),
        other => panic!("{other:?}"),
    }
    drop(push);
    let lines = server.await.unwrap();
    assert_eq!(
        lines,
        [
            "GET /.well-known/jmap HTTP/1.1",
            "GET /jmap/session HTTP/1.1",
            "POST /jmap/ HTTP/1.1",
            "POST /jmap/ HTTP/1.1",
            "GET /jmap/es/?types=*&closeafter=no&ping=30 HTTP/1.1",
        ]
    );
}
