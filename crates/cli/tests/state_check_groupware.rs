//! Issue 27 item 6 for JMAP and CalDAV: a small HTTP proxy between
//! peakhour and a real lab server (Cyrus's JMAP, Radicale's CalDAV)
//! corrupts one answer the way a server bug would, and `run --check-state`
//! must catch it, name its kind and give its evidence (the
//! `state-violations.csv` row, the terminal's line), and fail the run.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{PEAKHOUR, peakhour, run_bounded, start_cyrus_lab, start_lab_with};
use peakhour_lab::OptionalServer;

/// Far above what a short run takes: a hang, not a slow machine.
const HANG: Duration = Duration::from_secs(300);
const USERS: &str = "4";

/// One HTTP message as the proxy read it: its head (start line and header
/// lines, without the blank line) and its body, de-chunked.
struct Message {
    head: Vec<String>,
    body: Vec<u8>,
}

impl Message {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.iter().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then_some(value.trim())
        })
    }

    fn set_header(&mut self, name: &str, value: &str) {
        self.head
            .retain(|line| !line.to_ascii_lowercase().starts_with(&format!("{name}:")));
        self.head.push(format!("{name}: {value}"));
    }

    /// The message with its body's own length (no chunking).
    fn bytes(mut self) -> Vec<u8> {
        self.head.retain(|line| {
            let line = line.to_ascii_lowercase();
            !line.starts_with("transfer-encoding:") && !line.starts_with("content-length:")
        });
        let length = self.body.len().to_string();
        self.head.push(format!("Content-Length: {length}"));
        let mut out = self.head.join("\r\n").into_bytes();
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// Reads one HTTP message; a response to a request that has no body (204,
/// 304, HEAD) has none. `None` at the end of the stream.
fn read_message(reader: &mut BufReader<TcpStream>, response: bool) -> Option<Message> {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']).to_owned();
        if line.is_empty() {
            if head.is_empty() {
                continue;
            }
            break;
        }
        head.push(line);
    }
    let mut message = Message {
        head,
        body: Vec::new(),
    };
    let status = message.head[0].split(' ').nth(1).unwrap_or_default();
    if response && matches!(status, "204" | "304") {
        return Some(message);
    }
    let chunked = message
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            message.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = message.header("content-length") {
        let mut body = vec![0; length.parse().ok()?];
        reader.read_exact(&mut body).ok()?;
        message.body = body;
    } else if response {
        // HTTP/1.0 without a length: the body runs to the end.
        reader.read_to_end(&mut message.body).ok()?;
    }
    Some(message)
}

/// Rewrites one response, given the request it answers.
type Corrupt = Arc<dyn Fn(&Message, &mut Message) + Send + Sync>;

/// An HTTP proxy on a free loopback port in front of `upstream`: each
/// request goes to the server on a connection of its own, and its response
/// comes back through `corrupt`.
fn http_proxy(upstream: String, corrupt: Corrupt) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The threads end with the test process; a connection ends when the
    // client hangs up.
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let (upstream, corrupt) = (upstream.clone(), corrupt.clone());
            std::thread::spawn(move || {
                let mut to_client = client.try_clone().unwrap();
                let mut from_client = BufReader::new(client);
                while let Some(request) = read_message(&mut from_client, false) {
                    let Ok(mut server) = TcpStream::connect(&upstream) else {
                        return;
                    };
                    let mut forwarded = Message {
                        head: request.head.clone(),
                        body: request.body.clone(),
                    };
                    forwarded.set_header("connection", "close");
                    if server.write_all(&forwarded.bytes()).is_err() {
                        return;
                    }
                    let mut from_server = BufReader::new(server);
                    let Some(mut response) = read_message(&mut from_server, true) else {
                        return;
                    };
                    corrupt(&request, &mut response);
                    if to_client.write_all(&response.bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// The run's summary.json.
fn summary(run_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// What every caught fault shows: exit 1, the verdict failed by the state
/// checks naming `kind`, its count, its first example, its row in
/// `state-violations.csv` (returned) and the terminal's line.
fn assert_caught(done: &common::Bounded, run_dir: &Path, kind: &str) -> String {
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    let summary = summary(run_dir);
    assert_eq!(summary["verdict"], "fail");
    let checks = &summary["state_checks"];
    assert!(
        checks["by_kind"][kind]["violations"].as_u64().unwrap() >= 1,
        "{checks}"
    );
    assert_eq!(checks["examples"][0]["check"], kind, "{checks}");
    let failures = summary["qos"]["failures"].to_string();
    assert!(failures.contains(kind), "{failures}");
    assert!(
        done.stdout.contains("VIOLATION") && done.stdout.contains(&format!("first: {kind}: ")),
        "{}",
        done.stdout
    );
    let csv = std::fs::read_to_string(run_dir.join("state-violations.csv")).unwrap();
    let row = csv.lines().nth(1).unwrap_or_default().to_owned();
    eprintln!("evidence: {row}");
    assert!(row.starts_with(&format!("{kind},user")), "{csv}");
    row
}

/// In the first `Email/set` or `Email/import` answer that changed an
/// Email, `newState` is set to its `oldState`: the state did not change
/// after a change.
fn unchanged_state(done: &AtomicBool, response: &mut Message) {
    let Ok(mut body) = serde_json::from_slice::<serde_json::Value>(&response.body) else {
        return;
    };
    let Some(answers) = body["methodResponses"].as_array_mut() else {
        return;
    };
    for answer in answers {
        let name = answer[0].as_str().unwrap_or_default().to_owned();
        let args = &mut answer[1];
        let changed = ["created", "updated"]
            .iter()
            .any(|k| args[k].as_object().is_some_and(|o| !o.is_empty()));
        if matches!(name.as_str(), "Email/set" | "Email/import")
            && changed
            && args["oldState"].is_string()
            && !done.swap(true, Ordering::SeqCst)
        {
            args["newState"] = args["oldState"].clone();
            response.body = serde_json::to_vec(&body).unwrap();
            return;
        }
    }
}

#[test]
fn issue_27_item_6_a_jmap_state_that_does_not_change_after_a_change_is_caught() {
    let (dir, lab) = start_cyrus_lab(4);
    let status = &lab.status;
    let jmap = status.endpoints.jmap.clone().unwrap();
    let upstream = jmap
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let done = Arc::new(AtomicBool::new(false));
    let corrupted = done.clone();
    let port = http_proxy(
        upstream,
        Arc::new(move |_, response| unchanged_state(&corrupted, response)),
    );
    let run_dir = dir.path().join("run");
    let done_run = run_bounded(
        Command::new(PEAKHOUR)
            .args(["run", "--profile", "mmb-medium", "--target", "explicit"])
            .arg("--imap")
            .arg(format!("imap://{}", status.endpoints.imap))
            .arg("--smtp")
            .arg(format!(
                "smtp://{}",
                status.endpoints.smtp_noauth.as_deref().unwrap()
            ))
            .args(["--smtp-auth", "none", "--protocol", "jmap", "--jmap"])
            .arg(format!("http://127.0.0.1:{port}"))
            .args(["--users", USERS, "--speed", "400", "--duration", "12s"])
            .args(["--ramp-up", "1s", "--interval", "2s", "--drain", "3s"])
            .arg("--check-state")
            .arg("--out")
            .arg(&run_dir)
            .env("PEAKHOUR_PASSWORD", &status.password),
        HANG,
    );
    assert!(done.load(Ordering::SeqCst), "the proxy corrupted nothing");
    let row = assert_caught(&done_run, &run_dir, "jmap_state_unchanged");
    // check,client,object,seq,uid,expected,seen: the Email state, the new
    // state expected, the old one seen.
    assert!(row.contains(",Email state,,,"), "{row}");
    assert!(row.contains("a new state after"), "{row}");
    assert!(row.contains("= the state before them"), "{row}");
}

/// An `If-Match` PUT (a change) answered with the ETag it quoted, the one
/// from before the change: a stale ETag. Once.
fn stale_etag(done: &AtomicBool, request: &Message, response: &mut Message) {
    let is_put = request.head[0].starts_with("PUT ");
    let (Some(quoted), Some(_)) = (request.header("if-match"), response.header("etag")) else {
        return;
    };
    if is_put && response.head[0].contains(" 20") && !done.swap(true, Ordering::SeqCst) {
        let quoted = quoted.to_owned();
        response.set_header("etag", &quoted);
    }
}

#[test]
fn issue_27_item_6_a_stale_etag_after_a_caldav_put_is_caught() {
    let (dir, lab) = start_lab_with(4, &[OptionalServer::Caldav]);
    let status = &lab.status;
    let caldav = status.endpoints.caldav.clone().unwrap();
    let rest = caldav.trim_start_matches("http://");
    let (upstream, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let init = peakhour(&[
        "init",
        "--profile",
        "caldav-office",
        "--users",
        USERS,
        "--lab-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(init.status.success());
    let done = Arc::new(AtomicBool::new(false));
    let corrupted = done.clone();
    let port = http_proxy(
        upstream.to_owned(),
        Arc::new(move |request, response| stale_etag(&corrupted, request, response)),
    );
    let run_dir = dir.path().join("run");
    let done_run = run_bounded(
        Command::new(PEAKHOUR)
            .args(["run", "--profile", "caldav-office", "--target", "explicit"])
            .arg("--imap")
            .arg(format!("imap://{}", status.endpoints.imap))
            .arg("--smtp")
            .arg(format!("smtp://{}", status.endpoints.smtp))
            .arg("--caldav")
            .arg(format!("http://127.0.0.1:{port}{path}"))
            .args(["--users", USERS, "--speed", "400", "--duration", "12s"])
            .args(["--ramp-up", "1s", "--interval", "2s", "--drain", "3s"])
            .arg("--check-state")
            .arg("--out")
            .arg(&run_dir)
            .env("PEAKHOUR_PASSWORD", &status.password),
        HANG,
    );
    assert!(done.load(Ordering::SeqCst), "the proxy corrupted nothing");
    let row = assert_caught(&done_run, &run_dir, "caldav_etag_mismatch");
    // check,client,href,seq,uid,expected,seen: the event's href, the stale
    // ETag the PUT returned expected, the real one seen (CSV-quoted: an
    // ETag has quotes of its own).
    assert!(row.contains(".ics,,,\"ETag "), "{row}");
}
