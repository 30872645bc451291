//! The tokio driver against scripted servers: transcripts played over
//! `tokio::io::duplex`, and a loopback `TcpListener` for the real connect path.

use std::path::Path;
use std::time::Duration;

use peakhour_net::transcript::{Side, Step, Transcript};
use peakhour_net::{Secret, Security};
use peakhour_pop3::{
    CommandKind, Limits, ListEntry, Pop3Connection, Pop3Error, ProtocolError, Stat, UidlEntry,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Plays the server side of a transcript: writes its `S:` bytes, and checks
/// that what the client writes is exactly its `C:` bytes. Hangs up at the end.
fn scripted_server(text: &str) -> (DuplexStream, JoinHandle<()>) {
    let transcript = Transcript::parse(Path::new("inline.txt"), text).expect("transcript");
    let (client, mut server) = tokio::io::duplex(4096);
    let task = tokio::spawn(async move {
        for step in transcript.steps {
            match step {
                Step::Bytes {
                    side: Side::Server,
                    bytes,
                    ..
                } => server.write_all(&bytes).await.expect("server write"),
                Step::Bytes {
                    side: Side::Client,
                    bytes,
                    line,
                } => {
                    let mut got = vec![0; bytes.len()];
                    server.read_exact(&mut got).await.expect("server read");
                    assert_eq!(
                        got.escape_ascii().to_string(),
                        bytes.escape_ascii().to_string(),
                        "line {line}"
                    );
                }
                Step::Directive { .. } => {}
            }
        }
    });
    (client, task)
}

fn transcript_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/transcripts")
        .join(name);
    std::fs::read_to_string(path).expect("transcript file")
}

#[tokio::test]
async fn rfc1939_example_session_through_the_driver() {
    let (stream, server) = scripted_server(&transcript_file("rfc1939_example_session.txt"));
    let connected = Pop3Connection::from_stream(stream, Limits::default())
        .await
        .unwrap();
    let mut pop = connected.value;
    assert_eq!(
        pop.greeting().apop_timestamp.as_deref(),
        Some("<1896.697170952@dbc.mil>")
    );
    pop.login("mrose", &Secret::new("tanstaaf".to_owned()))
        .await
        .unwrap();
    assert_eq!(
        pop.stat().await.unwrap().value,
        Stat {
            count: 2,
            octets: 320
        }
    );
    let list = pop.list().await.unwrap().value;
    assert_eq!(
        list,
        vec![
            ListEntry {
                msg: 1,
                octets: 120
            },
            ListEntry {
                msg: 2,
                octets: 200
            }
        ]
    );
    for entry in list {
        let message = pop.retr(entry.msg).await.unwrap().value;
        // The transcript's messages are exactly the size LIST announced, so
        // this checks unstuffing and CRLF handling byte for byte.
        assert_eq!(message.len() as u64, entry.octets);
        pop.dele(entry.msg).await.unwrap();
    }
    pop.quit().await.unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn err_is_reported_with_command_and_code_and_the_session_goes_on() {
    let (stream, server) = scripted_server(&transcript_file("pass_refused.txt"));
    let mut pop = Pop3Connection::from_stream(stream, Limits::default())
        .await
        .unwrap()
        .value;
    let password = Secret::new("wrong".to_owned());
    match pop.login("alice", &password).await {
        Err(Pop3Error::Server { command, reply }) => {
            assert_eq!(command, CommandKind::Pass);
            assert_eq!(reply.code.as_deref(), Some("AUTH"));
            assert_eq!(reply.text, "Authentication failed.");
        }
        other => panic!("{other:?}"),
    }
    let err = pop
        .login("alice", &Secret::new("right".to_owned()))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "PASS refused: -ERR [IN-USE] Mailbox is locked by another POP3 session."
    );
    pop.quit().await.unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn uidl_top_and_single_entries() {
    let (stream, server) = scripted_server(&transcript_file("uidl_top_dele_rset.txt"));
    let mut pop = Pop3Connection::from_stream(stream, Limits::default())
        .await
        .unwrap()
        .value;
    pop.login("mrose", &Secret::new("tanstaaf".to_owned()))
        .await
        .unwrap();
    assert_eq!(pop.uidl().await.unwrap().value.len(), 2);
    assert_eq!(
        pop.uidl_one(2).await.unwrap().value,
        UidlEntry {
            msg: 2,
            uid: "QhdPYR:00WBw1Ph7x7".into()
        }
    );
    assert!(matches!(
        pop.uidl_one(3).await,
        Err(Pop3Error::Server {
            command: CommandKind::Uidl,
            ..
        })
    ));
    assert_eq!(pop.list_one(2).await.unwrap().value.octets, 200);
    let top = pop.top(1, 0).await.unwrap().value;
    assert!(top.ends_with(b"\r\n\r\n"));
    assert_eq!(
        pop.top(2, 2).await.unwrap().value,
        b"Subject: second\r\n\r\n.\r\n.x\r\n"
    );
    pop.dele(1).await.unwrap();
    assert!(pop.dele(1).await.is_err());
    pop.rset().await.unwrap();
    pop.noop().await.unwrap();
    pop.quit().await.unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn hang_up_mid_retr_is_an_error_and_the_connection_is_then_unusable() {
    let (stream, server) = scripted_server(&transcript_file("hostile_truncated_retr_at_eof.txt"));
    let mut pop = Pop3Connection::from_stream(stream, Limits::default())
        .await
        .unwrap()
        .value;
    match pop.retr(1).await {
        Err(Pop3Error::Protocol(ProtocolError::Closed {
            command: CommandKind::Retr,
            mid_response: true,
        })) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(pop.noop().await, Err(Pop3Error::Unusable)));
    server.await.unwrap();
}

#[tokio::test]
async fn refused_greeting_is_a_server_error() {
    let (stream, server) = scripted_server(&transcript_file("greeting_refused.txt"));
    match Pop3Connection::from_stream(stream, Limits::default()).await {
        Err(Pop3Error::Server { command, reply }) => {
            assert_eq!(command, CommandKind::Greeting);
            assert_eq!(reply.code.as_deref(), Some("SYS/TEMP"));
        }
        other => panic!("{other:?}"),
    }
    server.await.unwrap();
}

#[tokio::test]
async fn malformed_reply_carries_an_excerpt() {
    let (stream, server) = scripted_server(&transcript_file("hostile_garbage_stat.txt"));
    let mut pop = Pop3Connection::from_stream(stream, Limits::default())
        .await
        .unwrap()
        .value;
    let err = pop.stat().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"malformed STAT response (bad first number): "+OK two 320""#
    );
    server.await.unwrap();
}

#[tokio::test]
async fn invalid_argument_is_refused_before_anything_is_written() {
    let (stream, server) = scripted_server("S: +OK\nC: QUIT\nS: +OK\n");
    let mut pop = Pop3Connection::from_stream(stream, Limits::default())
        .await
        .unwrap()
        .value;
    assert!(matches!(pop.retr(0).await, Err(Pop3Error::Command(_))));
    assert!(matches!(
        pop.login("a\r\nDELE 1", &Secret::new("x".into())).await,
        Err(Pop3Error::Command(_))
    ));
    // Nothing reached the server: its script expects QUIT next and gets it.
    pop.quit().await.unwrap();
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_command_leaves_the_connection_unusable() {
    // The server greets and then never answers; it stays connected.
    let (stream, mut server) = tokio::io::duplex(4096);
    server.write_all(b"+OK\r\n").await.unwrap();
    let mut pop = Pop3Connection::from_stream(stream, Limits::default())
        .await
        .unwrap()
        .value;
    let timed_out = tokio::time::timeout(Duration::from_secs(30), pop.noop()).await;
    assert!(timed_out.is_err());
    assert!(matches!(pop.noop().await, Err(Pop3Error::Unusable)));
    drop(server);
}

#[tokio::test]
async fn connect_over_loopback_tcp() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        socket.write_all(b"+OK loopback ready\r\n").await.unwrap();
        let mut buf = [0u8; 6];
        socket.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"CAPA\r\n");
        socket
            .write_all(b"+OK\r\nUSER\r\nUIDL\r\n.\r\n")
            .await
            .unwrap();
        socket.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"QUIT\r\n");
        socket.write_all(b"+OK bye\r\n").await.unwrap();
    });
    let connected = Pop3Connection::connect(
        "127.0.0.1",
        port,
        Security::Plain,
        None,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    let mut pop = connected.value;
    assert_eq!(pop.greeting().text, "loopback ready");
    assert!(!pop.is_tls());
    let caps = pop.capa().await.unwrap().value;
    assert!(caps.has("uidl") && !caps.has("STLS"));
    pop.quit().await.unwrap();
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_times_out_at_connect() {
    // The kernel completes the handshake from the backlog; nobody ever greets.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let result = Pop3Connection::connect(
        "127.0.0.1",
        port,
        Security::Plain,
        None,
        Duration::from_secs(5),
    )
    .await;
    assert!(
        matches!(result, Err(Pop3Error::ConnectTimeout { .. })),
        "{result:?}"
    );
    drop(listener);
}

#[test]
fn command_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (stream, _other) = tokio::io::duplex(64);
    assert_send(&Pop3Connection::from_stream(stream, Limits::default()));
    assert_send(&Pop3Connection::connect(
        "h",
        1,
        Security::Plain,
        None,
        Duration::ZERO,
    ));
    #[allow(dead_code)]
    async fn all(mut pop: Pop3Connection, host: &str) {
        let password = Secret::new(String::new());
        let _ = pop.stls(host, unreachable_config()).await;
        let _ = pop.login("u", &password).await;
        let _ = pop.retr(1).await;
        let _ = pop.quit().await;
    }
    #[allow(dead_code)]
    fn unreachable_config() -> std::sync::Arc<rustls::ClientConfig> {
        unimplemented!()
    }
    fn check(pop: Pop3Connection) {
        assert_send(&all(pop, "h"));
    }
    let _ = check;
}

/// With a command timeout set, a server that reads a command and never
/// answers ends it at the deadline; the session is then unusable. Paused
/// clock: no real wait.
#[tokio::test(start_paused = true)]
async fn a_silent_server_times_out_when_a_command_timeout_is_set() {
    let (client, mut server) = tokio::io::duplex(4096);
    let silent = tokio::spawn(async move {
        server.write_all(b"+OK hi\r\n").await.unwrap();
        let mut stat = [0u8; 6];
        server.read_exact(&mut stat).await.unwrap();
        assert_eq!(&stat, b"STAT\r\n");
        tokio::time::sleep(Duration::from_secs(3600)).await;
    });
    let mut pop = Pop3Connection::from_stream(client, Limits::default())
        .await
        .unwrap()
        .value;
    pop.set_command_timeout(Some(Duration::from_secs(20)));
    let started = tokio::time::Instant::now();
    let error = pop.stat().await.unwrap_err();
    assert!(
        matches!(error, Pop3Error::Timeout { command: CommandKind::Stat, after } if after == Duration::from_secs(20)),
        "{error:?}"
    );
    assert_eq!((error.kind(), error.is_recoverable()), ("timeout", false));
    assert_eq!(started.elapsed(), Duration::from_secs(20));
    assert!(matches!(pop.noop().await, Err(Pop3Error::Unusable)));
    silent.abort();
}
