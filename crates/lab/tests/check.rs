//! `check_mail_path` (`peakhour lab check`) against a real lab: one message
//! through Postfix and Dovecot with peakhour's own clients, and the refusals
//! that come before any connection.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns panic on failure too

mod common;

use common::{config, scratch_dir};
use peakhour_lab::{CheckError, CheckLine, LabGuard, check_mail_path};

fn check(
    status: &peakhour_lab::LabStatus,
    user: u32,
    starttls: bool,
) -> (Result<usize, CheckError>, Vec<CheckLine>) {
    let mut lines = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime.block_on(check_mail_path(status, user, starttls, &mut |line| {
        lines.push(line)
    }));
    (result, lines)
}

fn steps(lines: &[CheckLine]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|line| match line {
            CheckLine::Step { what, .. } => Some(what.as_str()),
            CheckLine::Server(_) => None,
        })
        .collect()
}

#[test]
fn a_message_goes_through_smtp_with_starttls_and_comes_back_over_imap_and_pop3() {
    let dir = scratch_dir();
    let lab = LabGuard::start(&config(dir.path(), 3)).unwrap();
    let (bytes, lines) = check(&lab.status, 2, true);
    let bytes = bytes.unwrap();
    assert!(bytes > 200, "{bytes} bytes");
    let servers: Vec<&str> = lines
        .iter()
        .filter_map(|line| match line {
            CheckLine::Server(s) => Some(s.split(' ').next().unwrap()),
            CheckLine::Step { .. } => None,
        })
        .collect();
    assert_eq!(servers, ["SMTP", "IMAP", "POP3"]);
    let done = steps(&lines);
    for expected in [
        "STARTTLS + handshake",
        "AUTH",
        "MAIL + RCPT + DATA",
        "delivered: visible in INBOX after submission",
        "UID FETCH BODY.PEEK[]",
        "STLS + handshake",
        "USER + PASS",
        "UID EXPUNGE",
        "LOGOUT",
    ] {
        assert!(done.contains(&expected), "{expected} missing from {done:?}");
    }

    // Without --starttls there is no upgrade; either way the check leaves
    // the mailbox as it found it (empty), so that a later `init` finds what
    // it expects.
    let (again, lines) = check(&lab.status, 2, false);
    // Not the same size: the token and Postfix's Received header differ.
    assert!(again.unwrap() > 200);
    assert!(!steps(&lines).contains(&"STARTTLS + handshake"));
    assert_eq!(messages_in_inbox(&lab.status, 2), 0);
}

/// How many messages `user{n}`'s INBOX holds, by POP3 STAT.
fn messages_in_inbox(status: &peakhour_lab::LabStatus, n: u32) -> u32 {
    let port: u16 = status
        .endpoints
        .pop3
        .rsplit_once(':')
        .unwrap()
        .1
        .parse()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let timeout = std::time::Duration::from_secs(10);
        let security = peakhour_net::Security::Plain;
        let mut pop3 =
            peakhour_pop3::Pop3Connection::connect("127.0.0.1", port, security, None, timeout)
                .await
                .unwrap()
                .value;
        let password = peakhour_net::Secret::new(status.password.clone());
        pop3.login(&status.user(n), &password).await.unwrap();
        let count = pop3.stat().await.unwrap().value.count;
        pop3.quit().await.unwrap();
        count
    })
}

#[test]
fn a_user_the_lab_does_not_have_is_refused_before_any_connection() {
    let dir = scratch_dir();
    let lab = LabGuard::start(&config(dir.path(), 3)).unwrap();
    let (result, lines) = check(&lab.status, 4, false);
    assert!(
        matches!(result, Err(CheckError::NoSuchUser { user: 4, users: 3 })),
        "{result:?}"
    );
    assert!(lines.is_empty());
    let mut unhealthy = lab.status.clone();
    unhealthy.healthy = false;
    let (result, _) = check(&unhealthy, 1, false);
    assert!(
        matches!(result, Err(CheckError::NotHealthy(_))),
        "{result:?}"
    );
}
