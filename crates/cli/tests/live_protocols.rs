//! peakhour's own SMTP, LMTP, IMAP and POP3 clients against the real lab
//! (Postfix + Dovecot from Debian's packages, started on loopback).
//!
//! Needs root and the packages that `scripts/setup.sh` installs; without them
//! these tests fail with the lab's own message naming the setup command.

#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::start_lab;
use peakhour_imap::{BodySection, FetchItem, Idle, ImapConnection, MailboxUpdate, SearchKey};
use peakhour_lab::LabStatus;
use peakhour_net::{Secret, Security, TlsSettings};
use peakhour_pop3::Pop3Connection;
use peakhour_smtp::{Flavor, SmtpConnection};

const TIMEOUT: Duration = Duration::from_secs(10);

fn port(endpoint: &str) -> u16 {
    endpoint.rsplit(':').next().unwrap().parse().unwrap()
}

fn lab_tls(status: &LabStatus) -> Arc<rustls::ClientConfig> {
    TlsSettings {
        verify: true,
        extra_ca_file: Some(status.ca_file.clone().into()),
        use_system_roots: false,
    }
    .client_config()
    .unwrap()
}

/// A message whose body needs dot-stuffing and holds a unique token.
fn test_message(status: &LabStatus, to: &str, token: &str) -> Vec<u8> {
    format!(
        "From: {from}\r\nTo: {to}\r\nSubject: round trip {token}\r\nMessage-ID: <{token}@{domain}>\r\n\
         Date: Sat, 21 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n\
         First line of {token}.\r\n.A line that starts with a dot.\r\n..and one with two.\r\n\r\nLast line.\r\n",
        from = status.user(1),
        domain = status.domain,
    )
    .into_bytes()
}

fn body_of(message: &[u8]) -> &[u8] {
    let split = message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header/body separator");
    &message[split + 4..]
}

async fn submit(status: &LabStatus, starttls: bool, to: &str, message: &[u8]) {
    let password = Secret::new(status.password.clone());
    let mut smtp = SmtpConnection::connect(
        "127.0.0.1",
        port(&status.endpoints.smtp),
        Flavor::Smtp,
        Security::Plain,
        None,
        TIMEOUT,
    )
    .await
    .unwrap()
    .value;
    let extensions = smtp.ehlo("client.bench.test").await.unwrap().value;
    assert!(
        extensions.pipelining && extensions.starttls,
        "{extensions:?}"
    );
    if starttls {
        smtp.starttls("127.0.0.1", lab_tls(status)).await.unwrap();
        smtp.ehlo("client.bench.test").await.unwrap();
    }
    smtp.authenticate(&status.user(1), &password).await.unwrap();
    let outcome = smtp
        .send_mail(&status.user(1), &[to.to_owned()], message)
        .await
        .unwrap();
    assert!(outcome.value.all_delivered(), "{:?}", outcome.value);
    assert!(outcome.value.pipelined, "Postfix offers PIPELINING");
    smtp.quit().await.unwrap();
}

/// Waits until the message with `token` is in `user`'s INBOX; returns its bytes.
async fn imap_fetch(
    status: &LabStatus,
    security: Security,
    starttls: bool,
    user: &str,
    token: &str,
) -> Vec<u8> {
    let imap_port = match security {
        Security::Plain => port(&status.endpoints.imap),
        Security::ImplicitTls => port(&status.endpoints.imaps),
    };
    let mut imap = ImapConnection::connect(
        "127.0.0.1",
        imap_port,
        security,
        Some(lab_tls(status)),
        TIMEOUT,
    )
    .await
    .unwrap()
    .value;
    if starttls {
        imap.starttls("127.0.0.1", lab_tls(status)).await.unwrap();
    }
    imap.login(user, &Secret::new(status.password.clone()))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let uid = loop {
        imap.select("INBOX").await.unwrap();
        let found = imap
            .search(&SearchKey::Header("Message-ID".into(), token.into()), true)
            .await
            .unwrap()
            .value;
        if let Some(uid) = found.last() {
            break *uid;
        }
        assert!(
            Instant::now() < deadline,
            "message {token} not delivered within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let fetched = imap
        .fetch(
            &uid.to_string(),
            &[FetchItem::Body {
                section: BodySection::Full,
                peek: true,
            }],
            true,
        )
        .await
        .unwrap()
        .value;
    let bytes = fetched[0].section(&BodySection::Full).unwrap().to_vec();
    imap.logout().await.unwrap();
    bytes
}

async fn pop3_fetch(status: &LabStatus, stls: bool, user: &str, token: &str) -> Vec<u8> {
    let mut pop3 = Pop3Connection::connect(
        "127.0.0.1",
        port(&status.endpoints.pop3),
        Security::Plain,
        None,
        TIMEOUT,
    )
    .await
    .unwrap()
    .value;
    if stls {
        pop3.stls("127.0.0.1", lab_tls(status)).await.unwrap();
    }
    pop3.login(user, &Secret::new(status.password.clone()))
        .await
        .unwrap();
    let stat = pop3.stat().await.unwrap().value;
    let mut found = None;
    for n in (1..=stat.count).rev() {
        let message = pop3.retr(n).await.unwrap().value;
        if message.windows(token.len()).any(|w| w == token.as_bytes()) {
            found = Some(message);
            break;
        }
    }
    pop3.quit().await.unwrap();
    found.unwrap_or_else(|| {
        panic!(
            "message {token} not found over POP3 among {} messages",
            stat.count
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smtp_to_user42_reads_back_identically_over_imap_and_pop3() {
    let (_dir, lab) = start_lab(50);
    let status = &lab.status;
    let to = status.user(42);
    let token = "rt-plain-7f3a";
    let sent = test_message(status, &to, token);
    submit(status, false, &to, &sent).await;

    let over_imap = imap_fetch(status, Security::Plain, false, &to, token).await;
    let over_pop3 = pop3_fetch(status, false, &to, token).await;
    assert_eq!(over_imap, over_pop3, "IMAP BODY[] and POP3 RETR differ");
    // Delivery adds trace headers; the body must arrive byte for byte.
    assert_eq!(body_of(&over_imap), body_of(&sent));
    assert!(body_of(&over_imap).starts_with(b"First line of rt-plain-7f3a.\r\n.A line"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_everywhere_verifies_against_the_lab_ca() {
    let (_dir, lab) = start_lab(10);
    let status = &lab.status;
    let to = status.user(7);
    let token = "rt-tls-91c2";
    let sent = test_message(status, &to, token);
    submit(status, true, &to, &sent).await;

    let over_starttls = imap_fetch(status, Security::Plain, true, &to, token).await;
    let over_imaps = imap_fetch(status, Security::ImplicitTls, false, &to, token).await;
    let over_stls = pop3_fetch(status, true, &to, token).await;
    assert_eq!(over_starttls, over_imaps);
    assert_eq!(over_starttls, over_stls);
    assert_eq!(body_of(&over_starttls), body_of(&sent));

    // Verification is on by default: the system roots alone do not trust the lab.
    let untrusting = TlsSettings::default().client_config().unwrap();
    let refused = ImapConnection::connect(
        "127.0.0.1",
        port(&status.endpoints.imaps),
        Security::ImplicitTls,
        Some(untrusting),
        TIMEOUT,
    )
    .await;
    let error = match refused {
        Ok(_) => panic!("an untrusted certificate must be refused"),
        Err(error) => error.to_string(),
    };
    assert!(
        error.contains("TLS") || error.contains("certificate"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lmtp_answers_per_recipient_and_idle_sees_the_delivery() {
    let (_dir, lab) = start_lab(10);
    let status = &lab.status;
    let password = Secret::new(status.password.clone());

    // user3 idles on its INBOX while mail is delivered to it by LMTP.
    let mut idler = ImapConnection::connect(
        "127.0.0.1",
        port(&status.endpoints.imap),
        Security::Plain,
        None,
        TIMEOUT,
    )
    .await
    .unwrap()
    .value;
    idler.login(&status.user(3), &password).await.unwrap();
    let before = idler.select("INBOX").await.unwrap().value.exists;
    idler.idle_start().await.unwrap();

    let mut lmtp = SmtpConnection::connect(
        "127.0.0.1",
        port(&status.endpoints.lmtp),
        Flavor::Lmtp,
        Security::Plain,
        None,
        TIMEOUT,
    )
    .await
    .unwrap()
    .value;
    lmtp.ehlo("client.bench.test").await.unwrap();
    let recipients = vec![
        status.user(3),
        "nobody@bench.test".to_owned(),
        status.user(4),
    ];
    let message = test_message(status, &status.user(3), "lmtp-5d1e");
    let outcome = lmtp
        .send_mail(&status.user(1), &recipients, &message)
        .await
        .unwrap()
        .value;
    assert_eq!(outcome.recipients.len(), 3);
    assert!(outcome.recipients[0].delivered());
    assert!(
        !outcome.recipients[1].accepted(),
        "Dovecot refuses an unknown user at RCPT"
    );
    assert_eq!(outcome.recipients[1].rcpt.value.code().as_u16(), 550);
    assert!(outcome.recipients[2].delivered());
    assert_eq!(outcome.delivered_count(), 2);
    lmtp.quit().await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = false;
    while !seen && Instant::now() < deadline {
        if let Idle::Updates(updates) = idler.idle_wait(Duration::from_secs(2)).await.unwrap() {
            seen = updates
                .iter()
                .any(|u| matches!(u, MailboxUpdate::Exists(n) if *n > before));
        }
    }
    assert!(seen, "IDLE did not report the new message");
    idler.idle_done().await.unwrap();
    assert_eq!(idler.mailbox().unwrap().exists, before + 1);

    // The delivered message can be moved to Trash and the move is tracked.
    let uids = idler.search(&SearchKey::All, true).await.unwrap().value;
    let uid = uids.last().unwrap().to_string();
    idler.move_messages(&uid, "Trash", true).await.unwrap();
    assert_eq!(idler.mailbox().unwrap().exists, before);
    let trash = idler
        .status("Trash", &[peakhour_imap::StatusItem::Messages])
        .await
        .unwrap()
        .value;
    assert_eq!(trash.messages, Some(1));
    idler.logout().await.unwrap();
}
