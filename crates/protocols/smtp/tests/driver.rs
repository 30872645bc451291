//! The tokio driver against servers scripted in the test: a loopback
//! TcpListener for `connect`, in-memory duplex pipes for the rest.

use std::time::Duration;

use peakhour_net::{Secret, Security, Transport};
use peakhour_smtp::{Flavor, SmtpConnection, SmtpError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::net::TcpListener;

const TIMEOUT: Duration = Duration::from_secs(5);

/// One exchange: the bytes the client must send (possibly none), then the
/// server's answer.
type ScriptStep = (&'static [u8], &'static [u8]);

/// Plays the server side of `script`, checking the client's bytes exactly.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, script: &[ScriptStep]) {
    let mut received = Vec::new();
    for (expected, answer) in script {
        while received.len() < expected.len() {
            let mut chunk = [0u8; 1024];
            let read = stream.read(&mut chunk).await.expect("server read");
            assert!(
                read > 0,
                "client closed; waiting for \"{}\"",
                expected.escape_ascii()
            );
            received.extend_from_slice(&chunk[..read]);
        }
        assert_eq!(
            received[..expected.len()].escape_ascii().to_string(),
            expected.escape_ascii().to_string()
        );
        received.drain(..expected.len());
        stream.write_all(answer).await.expect("server write");
    }
}

fn duplex_server(script: &'static [ScriptStep]) -> DuplexStream {
    let (client, server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { serve(server, script).await });
    client
}

#[tokio::test]
async fn connect_ehlo_auth_pipelined_send_and_quit_over_loopback() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        serve(
            stream,
            &[
                (b"", b"220 mx.test ESMTP\r\n"),
                (
                    b"EHLO client.test\r\n",
                    b"250-mx.test\r\n250-PIPELINING\r\n250-SIZE 1000\r\n250 AUTH LOGIN PLAIN\r\n",
                ),
                (b"AUTH PLAIN AHUxAHB3\r\n", b"235 2.7.0 ok\r\n"),
                (
                    b"MAIL FROM:<u1@test> SIZE=5\r\nRCPT TO:<u2@test>\r\nRCPT TO:<nobody@test>\r\nDATA\r\n",
                    b"250 ok\r\n250 ok\r\n550 5.1.1 unknown\r\n354 go\r\n",
                ),
                (b"..hi\r\n.\r\n", b"250 2.0.0 queued\r\n"),
                (b"QUIT\r\n", b"221 bye\r\n"),
            ],
        )
        .await;
    });

    let connected = SmtpConnection::connect(
        "127.0.0.1",
        port,
        Flavor::Smtp,
        Security::Plain,
        None,
        TIMEOUT,
    )
    .await
    .expect("connect");
    let mut smtp = connected.value;
    let extensions = smtp.ehlo("client.test").await.expect("ehlo").value;
    assert!(extensions.pipelining);
    assert_eq!(extensions.size, Some(1000));
    assert_eq!(smtp.extensions(), &extensions);

    let auth = smtp
        .authenticate("u1", &Secret::new("pw".to_owned()))
        .await
        .expect("auth");
    assert_eq!(auth.value.code().as_u16(), 235);

    let sent = smtp
        .send_mail("u1@test", &["u2@test".into(), "nobody@test".into()], b".hi")
        .await
        .expect("send");
    let outcome = &sent.value;
    assert!(outcome.pipelined);
    assert_eq!(outcome.accepted_count(), 1);
    assert_eq!(outcome.delivered_count(), 1);
    assert!(outcome.recipients[0].delivered());
    assert!(!outcome.recipients[1].accepted());
    // Arrival times grow through the transaction and end within its timing.
    let mut times = vec![outcome.mail.elapsed];
    times.extend(outcome.recipients.iter().map(|r| r.rcpt.elapsed));
    times.extend(outcome.data.iter().map(|d| d.elapsed));
    times.extend(outcome.message.iter().map(|m| m.elapsed));
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(times.last().is_some_and(|last| *last <= sent.elapsed));

    let quit = smtp.quit().await.expect("quit");
    assert_eq!(quit.value.code().as_u16(), 221);
    server.await.expect("server task");
}

#[tokio::test]
async fn lmtp_maps_each_final_reply_to_its_recipient() {
    let stream = duplex_server(&[
        (b"", b"220 lmtp ready\r\n"),
        (b"LHLO client.test\r\n", b"250-lmtp\r\n250 8BITMIME\r\n"),
        (b"MAIL FROM:<a@test>\r\n", b"250 ok\r\n"),
        (b"RCPT TO:<u1@test>\r\n", b"250 ok\r\n"),
        (b"RCPT TO:<ghost@test>\r\n", b"550 5.1.1 no such user\r\n"),
        (b"RCPT TO:<u3@test>\r\n", b"250 ok\r\n"),
        (b"DATA\r\n", b"354 go\r\n"),
        (
            b"hello\r\n.\r\n",
            b"250 2.0.0 <u1@test> saved\r\n452 4.2.2 <u3@test> over quota\r\n",
        ),
    ]);
    let mut lmtp = SmtpConnection::from_stream(stream, Flavor::Lmtp, TIMEOUT)
        .await
        .expect("greeting")
        .value;
    lmtp.ehlo("client.test").await.expect("lhlo");
    let rcpts = ["u1@test", "ghost@test", "u3@test"].map(String::from);
    let outcome = lmtp
        .send_mail("a@test", &rcpts, b"hello\n")
        .await
        .expect("send")
        .value;
    assert!(!outcome.pipelined);
    assert_eq!(outcome.message, None);
    let delivered: Vec<(bool, bool)> = outcome
        .recipients
        .iter()
        .map(|r| (r.accepted(), r.delivered()))
        .collect();
    assert_eq!(delivered, [(true, true), (false, false), (true, false)]);
    let failed = outcome.recipients[2].delivery.as_ref().expect("u3 reply");
    assert_eq!(failed.value.code().as_u16(), 452);
    assert_eq!(
        failed.value.enhanced().map(|e| e.to_string()),
        Some("4.2.2".into())
    );
}

#[tokio::test]
async fn no_accepted_recipient_means_rset_not_data() {
    let stream = duplex_server(&[
        (b"", b"220 mx\r\n"),
        (b"EHLO c\r\n", b"250 mx\r\n"),
        (b"MAIL FROM:<a@test>\r\n", b"250 ok\r\n"),
        (b"RCPT TO:<x@test>\r\n", b"550 no\r\n"),
        (b"RSET\r\n", b"250 ok\r\n"),
        (b"NOOP\r\n", b"250 ok\r\n"),
    ]);
    let mut smtp = SmtpConnection::from_stream(stream, Flavor::Smtp, TIMEOUT)
        .await
        .expect("greeting")
        .value;
    smtp.ehlo("c").await.expect("ehlo");
    let outcome = smtp
        .send_mail("a@test", &["x@test".into()], b"hi")
        .await
        .expect("send")
        .value;
    assert_eq!(outcome.data, None);
    assert!(outcome.reset.is_some());
    smtp.noop().await.expect("still usable");
}

#[tokio::test]
async fn auth_login_when_plain_is_not_offered() {
    let stream = duplex_server(&[
        (b"", b"220 mx\r\n"),
        (b"EHLO c\r\n", b"250-mx\r\n250 AUTH LOGIN\r\n"),
        (b"AUTH LOGIN\r\n", b"334 VXNlcm5hbWU6\r\n"),
        (b"dTE=\r\n", b"334 UGFzc3dvcmQ6\r\n"),
        (b"cHc=\r\n", b"235 ok\r\n"),
    ]);
    let mut smtp = SmtpConnection::from_stream(stream, Flavor::Smtp, TIMEOUT)
        .await
        .expect("greeting")
        .value;
    smtp.ehlo("c").await.expect("ehlo");
    smtp.authenticate("u1", &Secret::new("pw".to_owned()))
        .await
        .expect("auth login");
}

#[tokio::test]
async fn refused_mail_is_an_error_that_leaves_the_connection_usable() {
    let stream = duplex_server(&[
        (b"", b"220 mx\r\n"),
        (b"MAIL FROM:<a@test>\r\n", b"550 5.7.1 go away\r\n"),
        (b"RSET\r\n", b"250 ok\r\n"),
    ]);
    let mut smtp = SmtpConnection::from_stream(stream, Flavor::Smtp, TIMEOUT)
        .await
        .expect("greeting")
        .value;
    let error = smtp
        .send_mail("a@test", &["b@test".into()], b"hi")
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), "reply:550");
    assert!(error.is_recoverable());
    assert!(error.to_string().contains("go away"), "{error}");
    smtp.rset().await.expect("rset after refusal");
}

#[tokio::test]
async fn closed_mid_reply_is_reported_with_the_partial_bytes() {
    let (client, mut server) = tokio::io::duplex(1024);
    tokio::spawn(async move {
        server.write_all(b"220-mx.test\r\n220-still").await.ok();
        drop(server);
    });
    let error = SmtpConnection::from_stream(client, Flavor::Smtp, TIMEOUT)
        .await
        .expect_err("closed");
    match &error {
        SmtpError::ConnectionClosed { during, partial } => {
            assert_eq!(*during, "greeting");
            assert_eq!(partial, b"mx.test\r\n220-still");
        }
        other => panic!("expected ConnectionClosed, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_reply_is_an_error_and_poisons_the_connection() {
    let stream = duplex_server(&[(b"", b"220 mx\r\n"), (b"NOOP\r\n", b"250 \x00\r\n")]);
    let mut smtp = SmtpConnection::from_stream(stream, Flavor::Smtp, TIMEOUT)
        .await
        .expect("greeting")
        .value;
    let error = smtp.noop().await.expect_err("malformed");
    assert_eq!(error.kind(), "malformed:control-character");
    assert_eq!(
        smtp.noop().await.expect_err("poisoned").kind(),
        "invalid-state"
    );
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_times_out_on_a_paused_clock() {
    let (client, _server) = tokio::io::duplex(1024);
    let error = SmtpConnection::from_stream(client, Flavor::Smtp, Duration::from_secs(30))
        .await
        .expect_err("timeout");
    assert!(
        matches!(error, SmtpError::Timeout { during: "greeting", after } if after == Duration::from_secs(30)),
        "{error:?}"
    );
}

#[tokio::test]
async fn starttls_not_offered_is_refused_without_a_round_trip() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        serve(
            stream,
            &[(b"", b"220 mx\r\n"), (b"EHLO c\r\n", b"250 mx\r\n")],
        )
        .await;
    });
    let mut smtp = SmtpConnection::connect(
        "127.0.0.1",
        port,
        Flavor::Smtp,
        Security::Plain,
        None,
        TIMEOUT,
    )
    .await
    .expect("connect")
    .value;
    smtp.ehlo("c").await.expect("ehlo");
    let config = peakhour_net::TlsSettings::default()
        .client_config()
        .expect("tls config");
    let error = smtp.starttls("mx", config).await.expect_err("not offered");
    assert_eq!(error.kind(), "not-offered");
}

/// The engine spawns every simulated user as a task: futures must be `Send`.
#[allow(dead_code)]
fn futures_are_send(smtp: &mut SmtpConnection, duplex: &mut SmtpConnection<DuplexStream>) {
    fn assert_send<T: Send>(_: T) {}
    let password = Secret::new(String::new());
    assert_send(SmtpConnection::connect(
        "h",
        25,
        Flavor::Smtp,
        Security::Plain,
        None,
        TIMEOUT,
    ));
    assert_send(smtp.ehlo("c"));
    assert_send(smtp.authenticate("u", &password));
    assert_send(smtp.send_mail("a", &[], b""));
    assert_send(smtp.noop());
    assert_send(duplex.send_mail("a", &[], b""));
}

#[test]
fn an_idle_connection_is_small() {
    // Heap buffers are released between commands (see ReplyReader); this
    // bounds the inline part. The engine's budget is 16 KiB per idle user.
    let size = std::mem::size_of::<SmtpConnection<Transport>>();
    assert!(size <= 1024, "SmtpConnection is {size} bytes");
}
