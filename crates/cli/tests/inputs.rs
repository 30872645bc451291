//! Issue 26, items 4 to 8 and part of 9, at the command line: careless or
//! hostile inputs are refused with exit code 2 and a message that names the
//! file and line (or the flag), before any connection. "Before any
//! connection" is shown by a listener that records every connection and
//! every line sent to it: the IMAP and SMTP URLs point at it, and the tests
//! assert it saw nothing.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use common::PEAKHOUR;

/// A loopback IMAP server that greets, records what it is sent and refuses
/// every LOGIN; it serves both the IMAP and the SMTP URL, so that any
/// connection at all is recorded.
struct Recorder {
    port: u16,
    connections: Arc<Mutex<usize>>,
    lines: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(Mutex::new(0));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (counted, recorded) = (connections.clone(), lines.clone());
        // The thread ends with the test process; a connection ends when peakhour hangs up.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                *counted.lock().unwrap() += 1;
                let recorded = recorded.clone();
                std::thread::spawn(move || {
                    let _ = stream.write_all(b"* OK [CAPABILITY IMAP4rev1] recorder\r\n");
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = Vec::new();
                    while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                        recorded.lock().unwrap().push(line.clone());
                        let tag = line.split(|&b| b == b' ').next().unwrap_or(b"*").to_vec();
                        let mut reply = tag;
                        reply.extend_from_slice(b" NO [AUTHENTICATIONFAILED] not here\r\n");
                        if stream.write_all(&reply).is_err() {
                            return;
                        }
                        line.clear();
                    }
                });
            }
        });
        Recorder {
            port,
            connections,
            lines,
        }
    }

    fn connections(&self) -> usize {
        *self.connections.lock().unwrap()
    }

    fn lines(&self) -> Vec<Vec<u8>> {
        self.lines.lock().unwrap().clone()
    }
}

/// `peakhour COMMAND` against the recorder as an explicit target, with
/// `extra` arguments and a shared password in the environment.
fn explicit(command: &str, server: &Recorder, extra: &[&str]) -> Output {
    let url = |scheme: &str| format!("{scheme}://127.0.0.1:{}", server.port);
    let (imap, smtp) = (url("imap"), url("smtp"));
    let mut args = vec![
        command, "--target", "explicit", "--imap", &imap, "--smtp", &smtp,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn run(args: &[&str]) -> Output {
    let output = Command::new(PEAKHOUR)
        .args(args)
        .env("PEAKHOUR_PASSWORD", "not-a-real-password")
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    eprintln!(
        "$ peakhour {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Asserts exit code 2, a message holding every one of `says`, and that the
/// recorder saw no connection.
fn refused_before_any_connection(output: &Output, server: &Recorder, says: &[&str]) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    for said in says {
        assert!(text.contains(said), "says {said:?}: {text}");
    }
    assert!(!text.contains("panicked"), "{text}");
    assert_eq!(server.connections(), 0, "nothing connects: {text}");
}

const ROUTING_FORMS: [&str; 5] = [
    "victim%gmail.com@bench.test",
    "victim@gmail.com@bench.test",
    "@gmail.com:victim@bench.test",
    "\"victim@gmail.com\"@bench.test",
    "gmail.com!victim@bench.test",
];

#[test]
fn issue_26_item_4_routing_addresses_in_a_users_file_are_refused_before_any_connection_naming_the_line()
 {
    let server = Recorder::start();
    let dir = tempfile::tempdir().unwrap();
    for (n, address) in ROUTING_FORMS.iter().enumerate() {
        let quoted = address.replace('"', "\"\"");
        // As the login (the address then), and as the third column.
        for (kind, line) in [
            ("login", format!("\"{quoted}\",pw\n")),
            ("address", format!("victim,pw,\"{quoted}\"\n")),
        ] {
            let text = format!("# test users\nuser1@bench.test,pw\n{line}");
            let users = write(
                dir.path(),
                &format!("users-{n}-{kind}.csv"),
                text.as_bytes(),
            );
            let users = users.to_str().unwrap();
            let expected = format!("{users}:3:");
            for command in ["run", "init"] {
                let out = dir.path().join(format!("run-{n}-{kind}-{command}"));
                let mut extra = vec!["--users-file", users];
                if command == "run" {
                    extra.extend(["--duration", "5s", "--out", out.to_str().unwrap()]);
                }
                let output = explicit(command, &server, &extra);
                let says = [expected.as_str(), "is not a plain mail address"];
                refused_before_any_connection(&output, &server, &says);
                assert!(!out.exists(), "no run directory for a refused run");
            }
        }
    }
}

#[test]
fn issue_26_item_4_a_name_pattern_that_routes_elsewhere_is_refused_before_any_connection() {
    let server = Recorder::start();
    let dir = tempfile::tempdir().unwrap();
    let shown = run(&["profiles", "show", "mmb-medium"]);
    let profile = String::from_utf8(shown.stdout).unwrap();
    assert!(profile.contains("name = \"user{n}\""), "{profile}");
    for pattern in [
        "user{n}%gmail.com",
        "@gmail.com:user{n}",
        "gmail.com!user{n}",
    ] {
        let text = profile.replace("name = \"user{n}\"", &format!("name = \"{pattern}\""));
        let path = write(dir.path(), "routing.toml", text.as_bytes());
        let path = path.to_str().unwrap();
        let line = text.lines().position(|l| l.contains(pattern)).unwrap() + 1;
        let place = format!("{path}:{line}:");
        for command in ["run", "init"] {
            let output = explicit(command, &server, &["--profile", path, "--users", "3"]);
            refused_before_any_connection(&output, &server, &[&place, "users.name", pattern]);
        }
    }
}

#[test]
fn issue_26_item_5_run_and_merge_refuse_an_out_directory_holding_other_files_and_leave_it_alone() {
    let server = Recorder::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    write(&out, "config.toml", b"# my own configuration\n");
    write(&out, "report.html", b"<p>my own report</p>");
    let shown = out.display().to_string();
    let output = explicit("run", &server, &["--duration", "5s", "--out", &shown]);
    let says = [
        shown.as_str(),
        "not a peakhour run directory",
        "config.toml",
        "--out",
    ];
    refused_before_any_connection(&output, &server, &says);
    let output = run(&[
        "merge",
        "no-such-shard-0",
        "no-such-shard-1",
        "--out",
        &shown,
    ]);
    refused_before_any_connection(&output, &server, &says);
    let config = std::fs::read_to_string(out.join("config.toml")).unwrap();
    assert_eq!(config, "# my own configuration\n");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(report, "<p>my own report</p>");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 2, "nothing added");
}

#[test]
fn issue_26_item_6_a_start_at_years_ahead_is_refused_quoting_the_time_and_the_bound() {
    let server = Recorder::start();
    let at = "9999-12-31T23:59:59Z";
    for shard in [&["--shard", "1/2"][..], &[]] {
        let mut extra = vec!["--start-at", at, "--duration", "5s"];
        extra.extend_from_slice(shard);
        let output = explicit("run", &server, &extra);
        refused_before_any_connection(&output, &server, &[at, "24h"]);
    }
}

#[test]
fn issue_26_item_7_bad_inputs_exit_with_code_2() {
    let server = Recorder::start();
    let dir = tempfile::tempdir().unwrap();
    let users_files: [(&str, &[u8], &str); 5] = [
        (
            "no-comma.csv",
            b"user1@bench.test\n",
            ":1: expected `login,password",
        ),
        (
            "not-utf8.csv",
            b"user1@bench.test,pw\nuser2@bench.test,p\xffw\n",
            ":2: is not UTF-8",
        ),
        ("empty.csv", b"", "holds no users"),
        ("comments.csv", b"# nobody\n\n", "holds no users"),
        (
            "empty-login.csv",
            b"user1@bench.test,pw\n ,pw,user2@bench.test\n",
            ":2: empty login",
        ),
    ];
    for (name, bytes, says) in users_files {
        let users = write(dir.path(), name, bytes);
        let output = explicit("run", &server, &["--users-file", users.to_str().unwrap()]);
        refused_before_any_connection(&output, &server, &[name, says]);
    }
    let start_not_rfc3339 = explicit("run", &server, &["--start-at", "tomorrow noon"]);
    refused_before_any_connection(&start_not_rfc3339, &server, &["RFC 3339", "tomorrow noon"]);
    let shard_without_start = explicit("run", &server, &["--shard", "1/2"]);
    refused_before_any_connection(&shard_without_start, &server, &["--start-at"]);
}

#[test]
fn issue_26_item_8_a_byte_order_mark_is_not_sent_and_an_extra_column_names_its_line() {
    let server = Recorder::start();
    let dir = tempfile::tempdir().unwrap();
    let extra_column = write(
        dir.path(),
        "extra.csv",
        b"user1@bench.test,pw\nuser2@bench.test,pw,user2@bench.test,user1@bench.test> NOTIFY=SUCCESS\n",
    );
    let output = explicit(
        "run",
        &server,
        &["--users-file", extra_column.to_str().unwrap()],
    );
    refused_before_any_connection(&output, &server, &["extra.csv:2:", "4 columns", "quotes"]);

    // With a byte-order mark, the check before the load logs in as the
    // first user: the server is sent the login without the mark.
    let bom = write(
        dir.path(),
        "bom.csv",
        "\u{feff}user1@bench.test,pw\nuser2@bench.test,pw\n".as_bytes(),
    );
    let out = dir.path().join("bom-run");
    let output = explicit(
        "run",
        &server,
        &[
            "--users-file",
            bom.to_str().unwrap(),
            "--duration",
            "5s",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "the refused login fails the check"
    );
    let logins: Vec<Vec<u8>> = server
        .lines()
        .into_iter()
        .filter(|l| l.windows(6).any(|w| w.eq_ignore_ascii_case(b"LOGIN ")))
        .collect();
    assert!(!logins.is_empty(), "a LOGIN was sent");
    for login in logins {
        let text = String::from_utf8_lossy(&login);
        assert!(text.contains("user1@bench.test"), "{text}");
        assert!(!text.contains('\u{feff}'), "the mark was sent: {text:?}");
    }
}

#[test]
fn issue_26_item_9_a_huge_per_day_names_its_place_and_reads_as_1e308() {
    let server = Recorder::start();
    let dir = tempfile::tempdir().unwrap();
    let shown = run(&["profiles", "show", "mmb-medium"]);
    let profile = String::from_utf8(shown.stdout).unwrap();
    let (line, original) = profile
        .lines()
        .enumerate()
        .find(|(_, l)| l.trim_start().starts_with("per_day ="))
        .unwrap();
    let text = profile.replacen(original, "per_day = 1e308", 1);
    let path = write(dir.path(), "huge.toml", text.as_bytes());
    let path = path.to_str().unwrap();
    let output = explicit("run", &server, &["--profile", path]);
    let place = format!("{path}:{}:", line + 1);
    refused_before_any_connection(&output, &server, &[&place, "per_day", "1e308"]);
    assert!(
        !stderr(&output).contains("0000000000"),
        "no 309-digit number"
    );
}
