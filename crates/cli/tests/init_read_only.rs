//! Issue 26 item 13: `init` against a server that keeps an EXAMINEd mailbox
//! read-only. Such a server (a Maildir++ IMAP server met in issue 26) answers
//! an APPEND to the mailbox the session has EXAMINEd with `NO Current box is
//! selected READ-ONLY.`; the lab's Dovecot accepts it, so this is a small
//! fake: one user, folders in memory, APPEND with synchronizing literals,
//! STATUS, EXAMINE and SEARCH HEADER. The normal path (resuming an init on
//! the real lab) is in init_lab.rs.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use common::PEAKHOUR;

/// Folder name -> the messages in it.
type Folders = Arc<Mutex<BTreeMap<String, Vec<Vec<u8>>>>>;

/// What the fake saw: APPENDs refused because their mailbox was EXAMINEd.
type Refusals = Arc<Mutex<Vec<String>>>;

/// One session of the fake. Returns at LOGOUT, EOF or a write error.
fn serve(stream: TcpStream, folders: &Folders, refusals: &Refusals) {
    let mut out = stream.try_clone().unwrap();
    let mut input = BufReader::new(stream);
    let mut examined: Option<String> = None;
    let _ = out.write_all(b"* OK [CAPABILITY IMAP4rev1] fake read-only-examine IMAP ready\r\n");
    let mut line = String::new();
    // Bounded: a session of init sends a few hundred commands at most.
    for _ in 0..10_000 {
        line.clear();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let text = line.trim_end();
        let (tag, rest) = text.split_once(' ').unwrap_or((text, ""));
        let (command, args) = rest.split_once(' ').unwrap_or((rest, ""));
        let mailbox = args.split(' ').next().unwrap_or("").trim_matches('"');
        let reply = match command.to_ascii_uppercase().as_str() {
            "CAPABILITY" => "* CAPABILITY IMAP4rev1\r\n".to_owned() + tag + " OK done\r\n",
            "LOGIN" => format!("{tag} OK [CAPABILITY IMAP4rev1] logged in\r\n"),
            "LIST" => {
                let mut reply = String::new();
                for name in folders.lock().unwrap().keys() {
                    reply += &format!("* LIST () \"/\" \"{name}\"\r\n");
                }
                reply + tag + " OK LIST done\r\n"
            }
            "CREATE" => {
                folders
                    .lock()
                    .unwrap()
                    .entry(mailbox.to_owned())
                    .or_default();
                format!("{tag} OK created\r\n")
            }
            "STATUS" => {
                let count = folders.lock().unwrap().get(mailbox).map_or(0, Vec::len);
                format!("* STATUS \"{mailbox}\" (MESSAGES {count})\r\n{tag} OK STATUS done\r\n")
            }
            "EXAMINE" | "SELECT" => {
                let count = folders.lock().unwrap().get(mailbox).map_or(0, Vec::len);
                examined = (command.eq_ignore_ascii_case("EXAMINE")).then(|| mailbox.to_owned());
                format!(
                    "* {count} EXISTS\r\n* FLAGS (\\Seen)\r\n* OK [UIDVALIDITY 1] ok\r\n{tag} OK [READ-ONLY] done\r\n"
                )
            }
            "SEARCH" | "UID" => {
                // SEARCH HEADER X-Peakhour-Run VALUE, with or without UID.
                let value = args.rsplit(' ').next().unwrap_or("").trim_matches('"');
                let wanted = format!("X-Peakhour-Run: {value}");
                let selected = examined.clone().unwrap_or_default();
                let found: Vec<String> = folders
                    .lock()
                    .unwrap()
                    .get(&selected)
                    .map(|messages| {
                        (1..=messages.len())
                            .filter(|&i| {
                                String::from_utf8_lossy(&messages[i - 1]).contains(&wanted)
                            })
                            .map(|i| i.to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                format!("* SEARCH {}\r\n{tag} OK SEARCH done\r\n", found.join(" "))
            }
            "APPEND" => {
                let size: usize = args
                    .rsplit('{')
                    .next()
                    .and_then(|s| s.trim_end_matches('}').parse().ok())
                    .unwrap();
                if examined.as_deref() == Some(mailbox) {
                    // The client waits for `+`; the tagged NO ends the command.
                    refusals.lock().unwrap().push(mailbox.to_owned());
                    format!(
                        "{tag} NO Current box is selected READ-ONLY. (folder \"{mailbox}\")\r\n"
                    )
                } else {
                    out.write_all(b"+ go ahead\r\n").unwrap();
                    let mut message = vec![0; size];
                    input.read_exact(&mut message).unwrap();
                    let mut end = String::new();
                    input.read_line(&mut end).unwrap();
                    folders
                        .lock()
                        .unwrap()
                        .entry(mailbox.to_owned())
                        .or_default()
                        .push(message);
                    format!("{tag} OK APPEND done\r\n")
                }
            }
            "LOGOUT" => {
                let _ = out.write_all(format!("* BYE bye\r\n{tag} OK bye\r\n").as_bytes());
                return;
            }
            _ => format!("{tag} BAD unknown command\r\n"),
        };
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// Starts the fake on a free port; serves at most 200 sessions, one at a time.
fn start_fake(folders: Folders, refusals: Refusals) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(200).flatten() {
            serve(stream, &folders, &refusals);
        }
    });
    address
}

#[test]
fn issue_26_item_13_init_does_not_append_to_a_mailbox_it_has_examined() {
    // The user's INBOX already holds a message of its own, so init EXAMINEs
    // it to count this init's messages, then must add the profile's four.
    let folders: Folders = Arc::default();
    folders.lock().unwrap().insert(
        "INBOX".into(),
        vec![b"Subject: the user's own mail\r\n\r\nhello\r\n".to_vec()],
    );
    let refusals: Refusals = Arc::default();
    let imap = format!("imap://{}", start_fake(folders.clone(), refusals.clone()));
    let args = [
        "init",
        "--profile",
        "mmb-medium",
        "--target",
        "explicit",
        "--imap",
        &imap,
        "--smtp",
        "smtp://127.0.0.1:9",
        "--users",
        "1",
        "--parallel",
        "1",
    ];
    let output = std::process::Command::new(PEAKHOUR)
        .args(args)
        .env("PEAKHOUR_PASSWORD", "secret")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(output.status.success(), "init failed: {stderr}");
    assert!(
        refusals.lock().unwrap().is_empty(),
        "init appended to an EXAMINEd mailbox: {:?}",
        refusals.lock().unwrap()
    );
    let stored = folders.lock().unwrap();
    // mmb-medium's starting state: 4 in INBOX (beside the user's own), 1 in Trash.
    assert_eq!(stored["INBOX"].len(), 1 + 4, "{:?}", stored.keys());
    assert_eq!(stored["Trash"].len(), 1);
    assert!(stdout.contains("0 already there, 205 added"), "{stdout}");

    // Resumed after the last folder lost a message: the second init
    // EXAMINEs every folder (Folder40 last) and then appends to Folder40.
    let filed = stored.keys().filter(|k| k.starts_with("Folder")).count();
    assert_eq!(filed, 40);
    drop(stored);
    folders.lock().unwrap().get_mut("Folder40").unwrap().pop();
    let again = std::process::Command::new(PEAKHOUR)
        .args(args)
        .env("PEAKHOUR_PASSWORD", "secret")
        .output()
        .unwrap();
    let again_out = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{again_out}");
    assert!(
        again_out.contains("204 already there, 1 added"),
        "{again_out}"
    );
    assert!(
        refusals.lock().unwrap().is_empty(),
        "{:?}",
        refusals.lock().unwrap()
    );
    assert_eq!(folders.lock().unwrap()["Folder40"].len(), 5);
}
