//! Issue 14: a JMAP user on a server without push (Debian 12's Cyrus
//! answers the EventSource URL with 204) looks at its Inbox every 2 s
//! while it waits, notices new mail at the next look, and stops looking
//! when it logs off.
//!
//! The server is a small JMAP fake on a loopback port, in the test's own
//! runtime, on tokio's paused clock: each request is logged with the
//! paused clock's instant, so the intervals asserted are exact, not
//! wall-clock bands. Loopback data is readable as soon as it is written, so
//! the paused clock does not jump while a request is on its way.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use peakhour_engine::{Endpoint, MailProtocol, Target, run_with};
use serde_json::{Value, json};
use support::{Seen, fake_mail, plan, settings, target};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

/// What the fake JMAP server holds and saw.
#[derive(Default)]
struct FakeJmap {
    /// The Inbox: (email id, Message-ID), oldest first.
    inbox: Vec<(String, String)>,
    /// Every method called (or `session`, `eventsource`), with its instant
    /// and its arguments.
    log: Vec<(Instant, String, Value)>,
}

const SESSION: &str = r#"{"capabilities":{"urn:ietf:params:jmap:core":{},"urn:ietf:params:jmap:mail":{},"urn:ietf:params:jmap:submission":{}},"accounts":{"u1":{"name":"u1"}},"primaryAccounts":{"urn:ietf:params:jmap:mail":"u1","urn:ietf:params:jmap:submission":"u1"},"username":"u1","apiUrl":"/jmap/","uploadUrl":"/jmap/upload/{accountId}/","downloadUrl":"/jmap/download/{accountId}/{blobId}/{name}","eventSourceUrl":"/jmap/es/?types={types}&closeafter={closeafter}&ping={ping}","state":"1"}"#;

/// Reads one request: its request line and its body.
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
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
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.ok()?;
    Some((head.lines().next()?.to_owned(), body))
}

fn reply(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The answer to one method call.
fn answer(fake: &FakeJmap, method: &str, args: &Value, address: &str) -> Value {
    match method {
        "Mailbox/get" => json!({"state": "m", "list": [
            {"id": "inbox", "name": "Inbox", "role": "inbox"},
            {"id": "sent", "name": "Sent", "role": "sent"},
            {"id": "trash", "name": "Trash", "role": "trash"},
        ]}),
        "Identity/get" => json!({"state": "i", "list": [{"id": "id1", "email": address}]}),
        "Email/query" => {
            let ids: Vec<&str> = fake.inbox.iter().rev().map(|(id, _)| id.as_str()).collect();
            json!({"queryState": "q", "position": 0, "ids": ids})
        }
        "Email/get" => {
            let asked: Vec<&str> = args["ids"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let list: Vec<Value> = fake
                .inbox
                .iter()
                .filter(|(id, _)| asked.contains(&id.as_str()))
                .map(
                    |(id, message_id)| json!({"id": id, "keywords": {}, "messageId": [message_id]}),
                )
                .collect();
            json!({"state": "s", "list": list, "notFound": []})
        }
        _ => json!({"newState": "s", "updated": {}}),
    }
}

/// Serves one connection: the session, no push (204), and method calls.
async fn serve(mut stream: TcpStream, fake: Arc<Mutex<FakeJmap>>, address: String) {
    while let Some((line, body)) = read_request(&mut stream).await {
        let now = Instant::now();
        let response = if line.starts_with("GET /.well-known/jmap") {
            fake.lock()
                .unwrap()
                .log
                .push((now, "session".into(), Value::Null));
            reply("200 OK", SESSION)
        } else if line.starts_with("GET /jmap/es/") {
            fake.lock()
                .unwrap()
                .log
                .push((now, "eventsource".into(), Value::Null));
            "HTTP/1.1 204 No Content\r\n\r\n".to_owned()
        } else {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let call = &request["methodCalls"][0];
            let method = call[0].as_str().unwrap_or("").to_owned();
            let mut fake = fake.lock().unwrap();
            let result = answer(&fake, &method, &call[1], &address);
            fake.log.push((now, method.clone(), call[1].clone()));
            let body = json!({"methodResponses": [[method, result, call[2]]], "sessionState": "1"});
            reply("200 OK", &body.to_string())
        };
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A fake JMAP server on a free loopback port; serves at most 16
/// connections: bounded.
async fn start(fake: Arc<Mutex<FakeJmap>>, address: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        for _ in 0..16 {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(serve(stream, fake.clone(), address.clone()));
        }
    });
    port
}

/// When each `method` was called, in order.
fn calls(fake: &Mutex<FakeJmap>, method: &str) -> Vec<Instant> {
    let fake = fake.lock().unwrap();
    fake.log
        .iter()
        .filter(|(_, m, _)| m == method)
        .map(|(at, _, _)| *at)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn issue_14_without_push_a_jmap_user_polls_every_two_seconds_notices_mail_and_stops_with_the_user()
 {
    // A read that finds nothing to read sends no request: every
    // Email/query after logon is a poll.
    let plan = plan(1, "[actions.read]\nper_day = 1");
    let address = plan.address(0);
    let fake = Arc::new(Mutex::new(FakeJmap::default()));
    let port = start(fake.clone(), address.clone()).await;
    let jmap_target = Target {
        jmap: Some(Endpoint::parse(&format!("http://127.0.0.1:{port}"), &["http"]).unwrap()),
        ..(*target()).clone()
    };
    let mut settings = settings(1, 20, 2);
    settings.protocol = MailProtocol::Jmap;

    // New mail lands in the Inbox 9.5 s into the run.
    let t0 = Instant::now();
    let arrival = t0 + Duration::from_millis(9_500);
    let landing = fake.clone();
    tokio::spawn(async move {
        tokio::time::sleep_until(arrival).await;
        let mut fake = landing.lock().unwrap();
        fake.inbox.push(("e1".into(), "new@bench.test".into()));
    });

    let mut seen = Seen::default();
    let (_stop_tx, stop) = watch::channel(false);
    let mail = fake_mail(&plan);
    let result = run_with(
        Arc::new(mail),
        plan.clone(),
        Arc::new(jmap_target),
        settings,
        stop,
        &mut seen,
    )
    .await
    .unwrap();
    let clock = result.outcome.clock;

    // The logon: session, mailboxes, identities, no push, the Inbox.
    assert_eq!(calls(&fake, "eventsource").len(), 1, "push asked for once");
    let queries = calls(&fake, "Email/query");
    assert!(queries.len() >= 8, "{} queries", queries.len());
    let logon = queries[0];
    // Then one look every 2 s, exactly, on the paused clock.
    for (n, at) in queries.iter().enumerate() {
        assert_eq!(
            *at - logon,
            Duration::from_secs(2) * n as u32,
            "query {n} of {queries:?}"
        );
    }
    // The new mail is fetched at the first look after it landed.
    let gets: Vec<(Instant, Value)> = {
        let fake = fake.lock().unwrap();
        fake.log
            .iter()
            .filter(|(_, m, _)| m == "Email/get")
            .map(|(at, _, args)| (*at, args.clone()))
            .collect()
    };
    let first_look_after = *queries.iter().find(|at| **at >= arrival).unwrap();
    assert!(first_look_after - arrival < Duration::from_secs(2));
    assert_eq!(gets[0].0, first_look_after, "{gets:?}");
    assert_eq!(gets[0].1["ids"], json!(["e1"]));
    // No look after the user logged off at the end of the steady phase.
    let last = *queries.last().unwrap();
    assert!(
        last <= clock.steady_end,
        "{last:?} after {:?}",
        clock.steady_end
    );
    assert!(clock.steady_end - last < Duration::from_secs(2));
    // Well after the run: still no more.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(calls(&fake, "Email/query").len(), queries.len());
}
