//! The tokio driver over an in-memory duplex stream with a scripted server.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::time::Duration;

use peakhour_imap::{
    BodySection, FetchItem, Idle, ImapConnection, ImapError, Limits, MailboxUpdate, SearchKey,
};
use peakhour_net::Secret;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// Plays the server: for each `(expected client line, reply)`, reads one line,
/// checks it, and writes the reply.
async fn server(stream: DuplexStream, greeting: &str, script: Vec<(&'static str, &'static str)>) {
    let (read, mut write) = tokio::io::split(stream);
    let mut read = BufReader::new(read);
    write.write_all(greeting.as_bytes()).await.unwrap();
    for (expected, reply) in script {
        let mut line = String::new();
        read.read_line(&mut line).await.unwrap();
        assert_eq!(line, expected);
        write.write_all(reply.as_bytes()).await.unwrap();
    }
}

#[tokio::test]
async fn login_select_fetch_search_and_logout() {
    let (client, server_end) = tokio::io::duplex(4096);
    let script = vec![
        (
            "A0001 LOGIN alice secret\r\n",
            "A0001 OK [CAPABILITY IMAP4rev1 IDLE UIDPLUS] ok\r\n",
        ),
        (
            "A0002 SELECT INBOX\r\n",
            "* 2 EXISTS\r\n* OK [UIDVALIDITY 7] v\r\nA0002 OK [READ-WRITE] done\r\n",
        ),
        (
            "A0003 UID FETCH 1:* (UID BODY.PEEK[])\r\n",
            "* 1 FETCH (UID 10 BODY[] {5}\r\nhello)\r\nA0003 OK done\r\n",
        ),
        ("A0004 SEARCH ALL\r\n", "* SEARCH 1 2\r\nA0004 OK done\r\n"),
        ("A0005 LOGOUT\r\n", "* BYE bye\r\nA0005 OK done\r\n"),
    ];
    let server = tokio::spawn(server(
        server_end,
        "* OK [CAPABILITY IMAP4rev1] hi\r\n",
        script,
    ));
    let mut imap = ImapConnection::from_stream(client, Limits::default())
        .await
        .unwrap()
        .value;
    assert!(imap.capabilities().has("imap4rev1"));
    imap.login("alice", &Secret::new("secret".into()))
        .await
        .unwrap();
    let info = imap.select("INBOX").await.unwrap().value;
    assert_eq!((info.exists, info.uid_validity), (2, Some(7)));
    let items = [
        FetchItem::Uid,
        FetchItem::Body {
            section: BodySection::Full,
            peek: true,
        },
    ];
    let messages = imap.fetch("1:*", &items, true).await.unwrap().value;
    assert_eq!(messages[0].uid, Some(10));
    assert_eq!(messages[0].section(&BodySection::Full), Some(&b"hello"[..]));
    assert_eq!(
        imap.search(&SearchKey::All, false).await.unwrap().value,
        vec![1, 2]
    );
    imap.logout().await.unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn rejected_commands_keep_the_connection_usable() {
    let (client, server_end) = tokio::io::duplex(4096);
    let script = vec![
        ("A0001 SELECT Nope\r\n", "A0001 NO no such mailbox\r\n"),
        ("A0002 NOOP\r\n", "A0002 OK fine\r\n"),
    ];
    let server = tokio::spawn(server(
        server_end,
        "* OK [CAPABILITY IMAP4rev1] hi\r\n",
        script,
    ));
    let mut imap = ImapConnection::from_stream(client, Limits::default())
        .await
        .unwrap()
        .value;
    let error = imap.select("Nope").await.unwrap_err();
    assert!(
        matches!(
            error,
            ImapError::Rejected {
                command: "SELECT",
                ..
            }
        ),
        "{error}"
    );
    // IDLE is checked against the capabilities before anything is sent.
    assert!(matches!(
        imap.idle_start().await.unwrap_err(),
        ImapError::NotOffered("IDLE")
    ));
    imap.noop().await.unwrap();
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn idle_wait_is_cancel_safe_and_reports_new_mail() {
    let (client, server_end) = tokio::io::duplex(4096);
    let (read, mut write) = tokio::io::split(server_end);
    let mut read = BufReader::new(read);
    write
        .write_all(b"* OK [CAPABILITY IMAP4rev1 IDLE] hi\r\n")
        .await
        .unwrap();
    let mut imap = ImapConnection::from_stream(client, Limits::default())
        .await
        .unwrap()
        .value;

    let select = tokio::spawn(async move {
        imap.select("INBOX").await.unwrap();
        imap
    });
    let mut line = String::new();
    read.read_line(&mut line).await.unwrap();
    write
        .write_all(b"* 1 EXISTS\r\nA0001 OK done\r\n")
        .await
        .unwrap();
    let mut imap = select.await.unwrap();

    let idle = tokio::spawn(async move {
        imap.idle_start().await.unwrap();
        imap
    });
    line.clear();
    read.read_line(&mut line).await.unwrap();
    assert_eq!(line, "A0002 IDLE\r\n");
    write.write_all(b"+ idling\r\n").await.unwrap();
    let mut imap = idle.await.unwrap();

    // Nothing happens: the wait times out (on the paused clock).
    assert_eq!(
        imap.idle_wait(Duration::from_secs(60)).await.unwrap(),
        Idle::TimedOut
    );

    // A wait cancelled by select! loses nothing: the update sent meanwhile
    // comes out of the next wait.
    tokio::select! {
        biased;
        _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        _ = imap.idle_wait(Duration::from_secs(60)) => panic!("nothing was sent yet"),
    }
    write.write_all(b"* 2 EXISTS\r\n").await.unwrap();
    assert_eq!(
        imap.idle_wait(Duration::from_secs(60)).await.unwrap(),
        Idle::Updates(vec![MailboxUpdate::Exists(2)])
    );
    assert_eq!(imap.mailbox().map(|m| m.exists), Some(2));

    let done = tokio::spawn(async move {
        imap.idle_done().await.unwrap();
        imap
    });
    line.clear();
    read.read_line(&mut line).await.unwrap();
    assert_eq!(line, "DONE\r\n");
    write.write_all(b"A0002 OK idle done\r\n").await.unwrap();
    done.await.unwrap();
}

/// A command made while idling ends IDLE with DONE in the same write: the
/// server below reads the UID FETCH before it answers DONE, which would
/// never happen if the client waited for that answer. IDLE can ride behind a
/// command the same way. A command naming messages by sequence number still
/// waits for IDLE's completion.
#[tokio::test(start_paused = true)]
async fn done_and_idle_share_a_write_with_the_next_command() {
    let (client, server_end) = tokio::io::duplex(4096);
    let (read, mut write) = tokio::io::split(server_end);
    let mut read = BufReader::new(read);
    write
        .write_all(b"* OK [CAPABILITY IMAP4rev1 IDLE] hi\r\n")
        .await
        .unwrap();
    let mut imap = ImapConnection::from_stream(client, Limits::default())
        .await
        .unwrap()
        .value;
    let client = tokio::spawn(async move {
        let items = [FetchItem::Uid];
        imap.idle_start().await.unwrap();
        assert!(imap.take_idle_start_time().is_some());
        let fetched = imap.fetch("7", &items, true).await.unwrap().value;
        assert_eq!(fetched[0].uid, Some(7));
        assert!(imap.take_idle_done_time().is_some());
        assert!(imap.take_idle_done_time().is_none(), "taken once");
        imap.idle_after_next_command();
        imap.fetch("8", &items, true).await.unwrap();
        assert!(imap.idle_in_progress());
        imap.idle_start().await.unwrap();
        assert!(imap.take_idle_start_time().is_some());
        // Already idling: nothing is sent.
        imap.idle_start().await.unwrap();
        assert!(imap.take_idle_start_time().is_none());
        imap.fetch("1", &items, false).await.unwrap();
        assert!(imap.take_idle_done_time().is_some());
        assert!(!imap.idle_in_progress());
    });
    expect(&mut read, "A0001 IDLE\r\n").await;
    write.write_all(b"+ idling\r\n").await.unwrap();
    expect(&mut read, "DONE\r\n").await;
    expect(&mut read, "A0002 UID FETCH 7 UID\r\n").await;
    write
        .write_all(b"A0001 OK idle done\r\n* 1 FETCH (UID 7)\r\nA0002 OK done\r\n")
        .await
        .unwrap();
    expect(&mut read, "A0003 UID FETCH 8 UID\r\n").await;
    expect(&mut read, "A0004 IDLE\r\n").await;
    write
        .write_all(b"* 2 FETCH (UID 8)\r\nA0003 OK done\r\n+ idling\r\n")
        .await
        .unwrap();
    expect(&mut read, "DONE\r\n").await;
    // Nothing more comes until IDLE has completed: the read below would
    // hang (the paused clock ends the wait at once).
    let mut early = String::new();
    let waited = tokio::time::timeout(Duration::from_secs(5), read.read_line(&mut early)).await;
    assert!(waited.is_err(), "sent before IDLE completed: {early:?}");
    write.write_all(b"A0004 OK idle done\r\n").await.unwrap();
    expect(&mut read, "A0005 FETCH 1 UID\r\n").await;
    write
        .write_all(b"* 1 FETCH (UID 7)\r\nA0005 OK done\r\n")
        .await
        .unwrap();
    client.await.unwrap();
}

/// Reads one line from the client and checks it.
async fn expect(read: &mut BufReader<tokio::io::ReadHalf<DuplexStream>>, want: &str) {
    let mut line = String::new();
    read.read_line(&mut line).await.unwrap();
    assert_eq!(line, want);
}

#[test]
fn command_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let connection: Option<ImapConnection> = None;
    if let Some(mut imap) = connection {
        assert_send(&imap.fetch("1", &[], false));
        assert_send(&imap.idle_wait(Duration::from_secs(1)));
        assert_send(&imap.move_messages("1", "x", true));
        assert_send(&imap.append("x", &[], None, b""));
    }
    assert_send(&ImapConnection::connect(
        "localhost",
        143,
        peakhour_net::Security::Plain,
        None,
        Duration::from_secs(1),
    ));
}

/// With a command timeout set, a server that never answers ends the command
/// at the deadline instead of hanging the user. Paused clock: no real wait.
#[tokio::test(start_paused = true)]
async fn a_silent_server_times_out_when_a_command_timeout_is_set() {
    let (client, server_end) = tokio::io::duplex(4096);
    // Greets, reads NOOP, never answers (keeps its end open).
    let server = tokio::spawn(async move {
        let (read, mut write) = tokio::io::split(server_end);
        let mut read = BufReader::new(read);
        write.write_all(b"* OK hi\r\n").await.unwrap();
        let mut line = String::new();
        read.read_line(&mut line).await.unwrap();
        assert_eq!(line, "A0001 NOOP\r\n");
        tokio::time::sleep(Duration::from_secs(3600)).await;
    });
    let mut imap = ImapConnection::from_stream(client, Limits::default())
        .await
        .unwrap()
        .value;
    imap.set_command_timeout(Some(Duration::from_secs(30)));
    let started = tokio::time::Instant::now();
    let error = imap.noop().await.unwrap_err();
    assert!(
        matches!(error, ImapError::Timeout { during: "NOOP", after } if after == Duration::from_secs(30)),
        "{error:?}"
    );
    assert_eq!(error.kind(), "timeout");
    assert!(!error.is_recoverable());
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    server.abort();
}
