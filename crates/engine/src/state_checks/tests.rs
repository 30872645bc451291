//! The coordinator on tokio's paused clock, with sessions of one account
//! talking to scripted servers over in-memory streams.

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::time::Duration;

use peakhour_imap::{FetchItem, ImapConnection, Limits};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use super::{StateCheckHub, hold};

/// A scripted IMAP server for one session of a two-message INBOX whose
/// second message has UID `second_uid`, which its UID SEARCH answers
/// unless `search_misses_it`.
async fn serve(stream: DuplexStream, second_uid: u32, search_misses_it: bool) {
    let searched = if search_misses_it {
        String::new()
    } else {
        format!(" {second_uid}")
    };
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = BufReader::new(read).lines();
    write
        .write_all(b"* OK [CAPABILITY IMAP4rev1 IDLE] ready\r\n")
        .await
        .unwrap();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut words = line.split(' ');
        let (tag, verb) = (words.next().unwrap_or("*"), words.next().unwrap_or(""));
        let answer = match verb.to_ascii_uppercase().as_str() {
            "SELECT" => format!(
                "* FLAGS (\\Seen)\r\n* 2 EXISTS\r\n* OK [UIDVALIDITY 5] v\r\n\
                 * OK [UIDNEXT 9] n\r\n{tag} OK [READ-WRITE] done\r\n"
            ),
            "UID" => format!("* SEARCH 1{searched}\r\n{tag} OK done\r\n"),
            "FETCH" => format!(
                "* 1 FETCH (UID 1 FLAGS ())\r\n* 2 FETCH (UID {second_uid} FLAGS ())\r\n\
                 {tag} OK done\r\n"
            ),
            _ => format!("{tag} OK done\r\n"),
        };
        if write.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A run that is not stopping (its sender kept alive for the test's length).
fn running() -> tokio::sync::watch::Receiver<bool> {
    let (stop, running) = tokio::sync::watch::channel(false);
    std::mem::forget(stop);
    running
}

/// A session that selected INBOX and fetched its UIDs and flags.
async fn session(second_uid: u32) -> ImapConnection<DuplexStream> {
    session_of(second_uid, false).await
}

/// [`session`], its server's UID SEARCH leaving out the second message if
/// `search_misses_it`.
async fn session_of(second_uid: u32, search_misses_it: bool) -> ImapConnection<DuplexStream> {
    let (client, server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(serve(server, second_uid, search_misses_it));
    let mut imap = ImapConnection::from_stream(client, Limits::default())
        .await
        .unwrap()
        .value;
    imap.record_wire(true);
    imap.select("INBOX").await.unwrap();
    let items = [FetchItem::Uid, FetchItem::Flags];
    imap.fetch("1:*", &items, false).await.unwrap();
    imap
}

#[tokio::test(start_paused = true)]
async fn issue_27_item_2_a_checkpoints_wait_is_kept_out_of_the_users_schedule() {
    let hub = StateCheckHub::new(Duration::from_secs(10), Duration::from_secs(30), 2);
    let (mut a_imap, mut b_imap) = (session(2).await, session(2).await);
    let mut a = hub.session(0, 0, "a".into(), false);
    let mut b = hub.session(1, 0, "b".into(), false);
    hub.request_checkpoint();
    // a is quiet at once; b finishes a 3-second action first.
    let early = tokio::spawn(async move {
        let held = hold(&mut a, &mut a_imap, &mut running()).await;
        (held, a)
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (b_pause, b_failed) = hold(&mut b, &mut b_imap, &mut running()).await;
    let ((a_pause, a_failed), a) = early.await.unwrap();
    assert!(a_failed.is_none() && b_failed.is_none());
    // a waited for b; b, the last to come, hardly waited at all.
    assert!(a_pause >= Duration::from_secs(3), "{a_pause:?}");
    assert!(b_pause < Duration::from_secs(1), "{b_pause:?}");
    // Each user's later intended starts move by its own pause, no more.
    assert_eq!(hub.shift(0), a_pause);
    assert_eq!(hub.shift(1), b_pause);
    drop((a, b));
    let report = hub.report();
    assert_eq!(report.checkpoints, 1);
    assert_eq!(report.checkpoints_missed, 0);
    assert_eq!(report.violations, 0, "{:?}", report.examples);
    assert!(report.by_kind["checkpoint_uid"].checks >= 2, "{report:?}");
    let paused = (a_pause + b_pause).as_secs_f64();
    assert!((report.checkpoint_pause_s - paused).abs() < 1e-9);
}

#[tokio::test(start_paused = true)]
async fn issue_27_item_2_sessions_of_one_account_told_different_uids_are_a_violation() {
    let hub = StateCheckHub::new(Duration::from_secs(10), Duration::from_secs(30), 2);
    let (mut a_imap, mut b_imap) = (session(2).await, session(7).await);
    let mut a = hub.session(0, 0, "a".into(), false);
    let mut b = hub.session(1, 0, "b".into(), false);
    hub.request_checkpoint();
    let early = tokio::spawn(async move {
        let held = hold(&mut a, &mut a_imap, &mut running()).await;
        (held, a)
    });
    hold(&mut b, &mut b_imap, &mut running()).await;
    let (_, a) = early.await.unwrap();
    drop((a, b));
    let report = hub.report();
    assert_eq!(report.violations, 1, "{:?}", report.examples);
    assert_eq!(report.by_kind["checkpoint_uid"].violations, 1);
    let first = report.examples[0].to_string();
    assert!(first.starts_with("checkpoint_uid: client "), "{first}");
    assert!(first.contains("seq 2"), "{first}");
}

#[tokio::test(start_paused = true)]
async fn issue_27_item_2_a_session_that_never_comes_makes_the_checkpoint_missed() {
    let hub = StateCheckHub::new(Duration::from_secs(10), Duration::from_secs(30), 2);
    let mut a_imap = session(2).await;
    let mut a = hub.session(0, 0, "a".into(), false);
    // b is logged on to the same account but stuck in a long action.
    let b = hub.session(1, 0, "b".into(), false);
    hub.request_checkpoint();
    let (pause, failed) = hold(&mut a, &mut a_imap, &mut running()).await;
    assert!(failed.is_none());
    assert!(pause >= Duration::from_secs(30), "{pause:?}");
    drop((a, b));
    let report = hub.report();
    assert_eq!((report.checkpoints, report.checkpoints_missed), (0, 1));
}

#[tokio::test(start_paused = true)]
async fn issue_27_item_6_a_checkpoints_search_leaving_out_a_message_is_named_with_its_raw_log() {
    let hub = StateCheckHub::new(Duration::from_secs(10), Duration::from_secs(30), 1);
    let mut imap = session_of(2, true).await;
    let mut alone = hub.session(0, 0, "a".into(), false);
    hub.request_checkpoint();
    let (_, failed) = hold(&mut alone, &mut imap, &mut running()).await;
    assert!(failed.is_none());
    drop(alone);
    let report = hub.report();
    assert_eq!(report.violations, 1, "{:?}", report.examples);
    assert_eq!(report.by_kind["search_missing"].violations, 1);
    let first = &report.examples[0];
    assert_eq!(
        (first.check.as_str(), first.seq, first.uid),
        ("search_missing", Some(2), Some(2))
    );
    assert!(first.expected.contains("UID SEARCH ALL"), "{first}");
    assert!(first.at_s.is_some());
    // The session's raw log: the exchange, then the violation marked.
    let log = &report.session_logs["a"];
    let search = log.find("UID SEARCH ALL").expect("the search sent");
    let answer = log.find("S: * SEARCH 1\n").expect("its answer");
    let mark = log.find("!! search_missing").expect("the violation marked");
    assert!(search < answer && answer < mark, "{log}");
}
