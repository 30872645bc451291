//! Issue 12: the messages a user sees when a server that is not the lab
//! refuses something. Each names the command, the object (folder, login),
//! and quotes the server's own text once. The servers are small fakes on
//! loopback that answer one scripted way: faults the lab cannot be made to
//! show.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use common::PEAKHOUR;

/// A line server on a free loopback port: writes `greeting`, then for each
/// line read writes what `answer` returns (`None` closes). Serves at most
/// four connections, each at most 64 lines, then stops: bounded.
fn fake(greeting: &'static str, answer: fn(&str) -> Option<String>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { return };
            let _ = stream.write_all(greeting.as_bytes());
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            for _ in 0..64 {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                match answer(line.trim_end()) {
                    Some(reply) => {
                        let _ = stream.write_all(reply.as_bytes());
                    }
                    None => break,
                }
            }
        }
    });
    port
}

/// An IMAP server that lets users in (unless told otherwise by `refuse`) and
/// keeps its folders under `INBOX.`, with no NAMESPACE to say so.
fn imap_answer(line: &str, refuse: &[(&str, &str)]) -> Option<String> {
    let (tag, rest) = line.split_once(' ')?;
    let command = rest.split(' ').next()?.to_ascii_uppercase();
    if let Some((_, text)) = refuse.iter().find(|(c, _)| *c == command) {
        return Some(format!("{tag} NO {text}\r\n"));
    }
    Some(match command.as_str() {
        "CAPABILITY" => format!("* CAPABILITY IMAP4rev1 STARTTLS\r\n{tag} OK done\r\n"),
        "LIST" => format!("* LIST (\\HasChildren) \".\" INBOX\r\n{tag} OK done\r\n"),
        "STATUS" => format!("* STATUS INBOX (MESSAGES 0)\r\n{tag} OK done\r\n"),
        "LOGOUT" => format!("* BYE bye\r\n{tag} OK done\r\n"),
        _ => format!("{tag} OK done\r\n"),
    })
}

const IMAP_GREETING: &str = "* OK [CAPABILITY IMAP4rev1 STARTTLS] fake ready\r\n";

/// An SMTP server that offers AUTH only after STARTTLS.
fn smtp_starttls_first(line: &str) -> Option<String> {
    let verb = line.split(' ').next()?.to_ascii_uppercase();
    Some(match verb.as_str() {
        "EHLO" => "250-fake\r\n250-PIPELINING\r\n250 STARTTLS\r\n".into(),
        "QUIT" => "221 bye\r\n".into(),
        _ => "250 ok\r\n".into(),
    })
}

/// `peakhour ARGS` against `--imap imap[+starttls]://...` and `--smtp`, with
/// a users file whose login is not an address: its stderr.
fn explicit(dir: &Path, command: &str, imap: &str, smtp: &str, extra: &[&str]) -> String {
    let users = dir.join("users.csv");
    std::fs::write(&users, "alice,secret,alice@bench.test\n").unwrap();
    let mut args = vec![
        command,
        "--target",
        "explicit",
        "--imap",
        imap,
        "--smtp",
        smtp,
        "--users-file",
        users.to_str().unwrap(),
        "--users",
        "1",
        "--profile",
        "mmb-medium",
    ];
    args.extend(extra);
    let output = Command::new(PEAKHOUR)
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(!output.status.success(), "{command} should fail");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    eprintln!("$ peakhour {}\n{stderr}", args.join(" "));
    stderr
}

fn once(haystack: &str, needle: &str) {
    assert_eq!(
        haystack.matches(needle).count(),
        1,
        "{needle:?} should appear exactly once in:\n{haystack}"
    );
}

#[test]
fn issue_12_a_refused_create_names_the_folder_the_login_and_the_server_text_once() {
    let dir = tempfile::tempdir().unwrap();
    let port = fake(IMAP_GREETING, |line| {
        imap_answer(line, &[("CREATE", "Invalid mailbox name.")])
    });
    let imap = format!("imap://127.0.0.1:{port}");
    let stderr = explicit(dir.path(), "init", &imap, "smtp://127.0.0.1:9", &[]);
    once(&stderr, "CREATE refused: NO Invalid mailbox name.");
    assert!(stderr.contains("alice: "), "the login sent: {stderr}");
    assert!(!stderr.contains("alice@bench.test"), "{stderr}");
    assert!(stderr.contains("(folder \"Folder1\")"), "{stderr}");
}

#[test]
fn issue_12_a_refused_login_names_the_login_and_the_server_text_once() {
    let dir = tempfile::tempdir().unwrap();
    let port = fake(IMAP_GREETING, |line| {
        imap_answer(line, &[("LOGIN", "[AUTHENTICATIONFAILED] Login failed.")])
    });
    let imap = format!("imap://127.0.0.1:{port}");
    let stderr = explicit(dir.path(), "run", &imap, "smtp://127.0.0.1:9", &[]);
    once(&stderr, "Login failed.");
    assert!(
        stderr.contains("login as alice failed: LOGIN refused: NO"),
        "{stderr}"
    );
}

#[test]
fn issue_12_a_refused_starttls_is_reported_as_such_without_a_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let port = fake(IMAP_GREETING, |line| {
        imap_answer(line, &[("STARTTLS", "TLS is not configured.")])
    });
    let imap = format!("imap+starttls://127.0.0.1:{port}");
    let stderr = explicit(dir.path(), "run", &imap, "smtp://127.0.0.1:9", &[]);
    once(&stderr, "STARTTLS refused: NO TLS is not configured.");
    assert!(!stderr.contains("InvalidContentType"), "{stderr}");
    assert!(!stderr.contains("handshake"), "{stderr}");
}

#[test]
fn issue_12_auth_offered_only_after_starttls_says_which_url_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let imap_port = fake(IMAP_GREETING, |line| imap_answer(line, &[]));
    let smtp_port = fake("220 fake ESMTP\r\n", smtp_starttls_first);
    let imap = format!("imap://127.0.0.1:{imap_port}");
    let smtp = format!("submission://127.0.0.1:{smtp_port}");
    let stderr = explicit(dir.path(), "run", &imap, &smtp, &["--smtp-auth", "plain"]);
    once(&stderr, "AUTH as alice failed");
    assert!(stderr.contains("submission+starttls://"), "{stderr}");
}
