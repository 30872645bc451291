//! Issue 26 item 14: a POP3 server that closes connections silently at its
//! per-address limit. The run must count them as connections closed by the
//! server (not `protocol`), keep an example of each kind in summary.json and
//! errors.csv, and say it looks like a connection limit, as it does for IMAP.
//!
//! The server is the lab's Dovecot, behind a small proxy that lets one POP3
//! connection through at a time and closes any other at once without a
//! word, as the POP3 server met in issue 26 did at its limit (4 per address
//! there). The lab's Dovecot counts a limit per user and address
//! (`mail_max_userip_connections`), which one connection per user never
//! reaches, so the proxy plays the server that counts per address only.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{PEAKHOUR, peakhour, start_lab};

/// A proxy to `upstream` that lets `limit` connections through at once and
/// closes any more at once, silently. Serves at most 2,000: bounded.
fn silent_limit_proxy(upstream: String, limit: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let open = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for client in listener.incoming().take(2000) {
            let Ok(client) = client else { return };
            if open.load(Ordering::SeqCst) >= limit {
                drop(client);
                continue;
            }
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            open.fetch_add(1, Ordering::SeqCst);
            let open = open.clone();
            std::thread::spawn(move || {
                let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let up = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut s2);
                    let _ = s2.shutdown(std::net::Shutdown::Write);
                });
                let (mut server, mut client) = (server, client);
                let _ = std::io::copy(&mut server, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Both);
                let _ = up.join();
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    address
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn issue_26_item_14_a_pop3_server_closing_connections_at_its_limit_is_said_plainly() {
    let (_dir, lab) = start_lab(8);
    let status = lab.status.clone();
    let init = peakhour(&["init", "--profile", "pop3-user", "--lab-dir", &status.dir]);
    assert!(init.status.success());

    let proxy = silent_limit_proxy(status.endpoints.pop3.clone(), 1);
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("limited");
    let (imap, smtp, pop3) = (
        format!("imap://{}", status.endpoints.imap),
        format!("smtp://{}", status.endpoints.smtp_noauth.clone().unwrap()),
        format!("pop3://{proxy}"),
    );
    let args = [
        "run",
        "--profile",
        "pop3-user",
        "--target",
        "explicit",
        "--imap",
        &imap,
        "--smtp",
        &smtp,
        "--smtp-auth",
        "none",
        "--pop3",
        &pop3,
        "--users",
        "8",
        "--speed",
        "800",
        "--duration",
        "15s",
        "--ramp-up",
        "2s",
        "--drain",
        "5s",
        "--interval",
        "5s",
        "--seed",
        "26",
        "--out",
        run_dir.to_str().unwrap(),
    ];
    let run = Command::new(PEAKHOUR)
        .args(args)
        .env("PEAKHOUR_PASSWORD", &status.password)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&run.stderr));
    let summary = json(&run_dir.join("summary.json"));

    let groups = summary["error_groups"].as_array().unwrap();
    let closed: Vec<_> = groups
        .iter()
        .filter(|g| g["kind"] == "pop3:closed")
        .collect();
    assert!(!closed.is_empty(), "no pop3:closed group: {groups:?}");
    assert!(
        !groups.iter().any(|g| g["kind"] == "pop3:protocol"),
        "a closed connection counted as a protocol error: {groups:?}"
    );
    for group in &closed {
        let example = group["example"].as_str().unwrap_or_default();
        assert!(example.contains("closed the connection"), "{group}");
    }
    let errors = std::fs::read_to_string(run_dir.join("errors.csv")).unwrap();
    let rows: Vec<&str> = errors
        .lines()
        .filter(|l| l.contains("pop3:closed"))
        .collect();
    assert!(!rows.is_empty(), "{errors}");
    assert!(
        rows.iter().any(|r| r.contains("closed the connection")),
        "an example in errors.csv: {errors}"
    );
    let limit = &summary["connection_limit"];
    assert!(
        limit["note"]
            .as_str()
            .unwrap()
            .contains("POP3 server closed"),
        "{limit}"
    );
    assert!(stdout.contains("CONNECTION LIMIT?"), "{stdout}");
}
